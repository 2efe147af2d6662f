use kcoord_controller::group_configs::SET;
use kcoord_wire::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kcoord_wire::messages::IncrementalAlterConfigsRequest;

use super::*;
use crate::config::ListenerKind;
use crate::rpc::testing::{create_topic, encodes, running, Ctx};
use crate::state::ServerState;

fn list(state: &ServerState, version: i16, resource_types: Vec<i8>) -> (i16, Vec<(i8, String)>) {
    let c = Ctx::new(state, ListenerKind::Broker);
    let req = ListConfigResourcesRequest {
        resource_types,
        ..Default::default()
    };
    let resp = handle(&c.ctx(state), req, version);
    encodes(&resp, version);
    let listed = resp
        .config_resources
        .into_iter()
        .map(|r| (r.resource_type, r.resource_name))
        .collect();
    (resp.error_code, listed)
}

async fn set_group_config(state: &ServerState, group: &str) {
    let req = IncrementalAlterConfigsRequest {
        resources: vec![AlterConfigsResource {
            resource_type: GROUP,
            resource_name: group.into(),
            configs: vec![AlterableConfig {
                name: "consumer.session.timeout.ms".into(),
                config_operation: SET,
                value: Some("50000".into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let c = Ctx::new(state, ListenerKind::Broker);
    let resp = super::super::incremental_alter_configs::handle(&c.ctx(state), req, 1).await;
    assert_eq!(resp.responses[0].error_code, 0, "{resp:?}");
}

#[tokio::test]
async fn every_type_is_listed_in_kafkas_order_and_v0_lists_client_metrics_only() {
    let node = running("");
    let state = &node.state;
    create_topic(state, "orders", 1).await;
    create_topic(state, "audit", 1).await;
    set_group_config(state, "configured-group").await;
    let id = state.config.node_id.to_string();

    let (code, listed) = list(state, 1, Vec::new());
    assert_eq!(code, 0);
    assert_eq!(
        listed,
        vec![
            (GROUP, "configured-group".to_owned()),
            (BROKER_LOGGER, id.clone()),
            (BROKER, id.clone()),
            (TOPIC, "audit".to_owned()),
            (TOPIC, "orders".to_owned()),
        ],
        "groups with configs, no client metrics, the brokers, the topics"
    );
    assert_eq!(
        list(state, 1, vec![TOPIC, GROUP]).1,
        vec![
            (GROUP, "configured-group".to_owned()),
            (TOPIC, "audit".to_owned()),
            (TOPIC, "orders".to_owned()),
        ]
    );
    assert_eq!(
        list(state, 0, Vec::new()),
        (0, Vec::new()),
        "v0: client metrics only"
    );
    assert_eq!(list(state, 1, vec![CLIENT_METRICS]), (0, Vec::new()));
    let unsupported = ErrorCode::UNSUPPORTED_VERSION.code();
    assert_eq!(list(state, 1, vec![GROUP, 3]), (unsupported, Vec::new()));
}
