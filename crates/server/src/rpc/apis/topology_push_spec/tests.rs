//! The order of the checks, without sockets (the end-to-end tests in tests/kip1331_*.rs cover
//! every outcome against the running daemon).
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::config::ListenerKind;
use crate::rpc::testing::{encodes, loading_server, server, Ctx};
use crate::runtime::topology_plugin::TopologyDescriptions;
use crate::security::DenyAll;
use crate::state::ServerState;

fn with_plugin(mut state: ServerState) -> ServerState {
    let plugin = Arc::new(kcoord_plugins::MemoryPlugin::default());
    state.topology =
        TopologyDescriptions::new(plugin, "memory", Duration::from_secs(5)).expect("threads");
    state
}

async fn call(state: &ServerState, group: &str, id: u128) -> (i16, Option<String>) {
    let c = Ctx::new(state, ListenerKind::Broker);
    let req = UpdateStreamsGroupTopologyDescriptionRequest {
        group_id: group.into(),
        topology_description_id: kcoord_plugin_api::Uuid::from_u128(id),
        ..Default::default()
    };
    let resp = handle(&c.ctx(state), req, 0).await;
    encodes(&resp, 0);
    assert_eq!(resp.throttle_time_ms, 0);
    (resp.error_code, resp.error_message)
}

#[tokio::test]
async fn r10_without_a_plugin_the_answer_is_unsupported_version() {
    let (code, message) = call(&server(), "g", 1).await;
    assert_eq!(code, ErrorCode::UNSUPPORTED_VERSION.code());
    assert!(message.is_some_and(|m| m.contains("No topology description plugin")));
}

#[tokio::test]
async fn r11_authorization_comes_first() {
    let mut state = with_plugin(server());
    state.authorizer = Some(Arc::new(DenyAll));
    assert_eq!(
        call(&state, "g", 1).await.0,
        ErrorCode::GROUP_AUTHORIZATION_FAILED.code()
    );
    let mut state = server();
    state.authorizer = Some(Arc::new(DenyAll));
    assert_eq!(
        call(&state, "g", 1).await.0,
        ErrorCode::GROUP_AUTHORIZATION_FAILED.code()
    );
}

#[tokio::test]
async fn r13_shards_that_have_not_loaded_answer_load_in_progress() {
    let state = with_plugin(loading_server());
    assert_eq!(
        call(&state, "g", 1).await.0,
        ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.code()
    );
    // A request that is malformed in itself is refused before the coordinator is consulted.
    assert_eq!(
        call(&state, "", 1).await.0,
        ErrorCode::INVALID_REQUEST.code()
    );
}
