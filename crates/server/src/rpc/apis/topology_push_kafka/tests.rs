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

async fn call(state: &ServerState, group: &str, member: &str) -> i16 {
    let c = Ctx::new(state, ListenerKind::Broker);
    let req = StreamsGroupTopologyDescriptionUpdateRequest {
        group_id: group.into(),
        member_id: member.into(),
        topology_epoch: 1,
        ..Default::default()
    };
    let resp = handle(&c.ctx(state), req, 0).await;
    encodes(&resp, 0);
    resp.error_code
}

#[tokio::test]
async fn r67_checks_in_order_authorization_plugin_ids_loading() {
    let mut denied = with_plugin(server());
    denied.authorizer = Some(Arc::new(DenyAll));
    assert_eq!(
        call(&denied, "g", "m").await,
        ErrorCode::GROUP_AUTHORIZATION_FAILED.code()
    );
    assert_eq!(
        call(&server(), "g", "m").await,
        ErrorCode::UNSUPPORTED_VERSION.code()
    );
    let state = with_plugin(loading_server());
    assert_eq!(
        call(&state, "g", "").await,
        ErrorCode::INVALID_REQUEST.code()
    );
    assert_eq!(
        call(&state, "", "m").await,
        ErrorCode::INVALID_REQUEST.code()
    );
    assert_eq!(
        call(&state, "g", "m").await,
        ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.code()
    );
}

async fn message(state: &ServerState, group: &str, member: &str) -> Option<String> {
    let c = Ctx::new(state, ListenerKind::Broker);
    let req = StreamsGroupTopologyDescriptionUpdateRequest {
        group_id: group.into(),
        member_id: member.into(),
        topology_epoch: 1,
        ..Default::default()
    };
    handle(&c.ctx(state), req, 0).await.error_message
}

#[tokio::test]
async fn blank_member_then_group_ids_are_refused_in_kafkas_words() {
    assert_eq!(
        message(&server(), "g", "m").await.as_deref(),
        Some("The broker has no streams group topology description plugin configured.")
    );
    let state = with_plugin(server());
    assert_eq!(
        message(&state, " ", " \t").await.as_deref(),
        Some("MemberId can't be empty.")
    );
    assert_eq!(
        message(&state, "\n", "m").await.as_deref(),
        Some("GroupId can't be empty.")
    );
}
