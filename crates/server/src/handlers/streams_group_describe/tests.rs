use super::*;
use crate::config::ListenerKind;
use crate::handlers::testing::{
    create_topic, encodes, heartbeat, running, server, Ctx, FAST_GROUPS,
};
use crate::state::ServerState;

async fn call(
    state: &ServerState,
    req: StreamsGroupDescribeRequest,
    version: i16,
) -> StreamsGroupDescribeResponse {
    let c = Ctx::new(state, ListenerKind::Broker);
    let resp = handle(&c.ctx(state), req, version).await;
    encodes(&resp, version);
    resp
}

fn request(ids: &[&str], ops: bool, description: bool) -> StreamsGroupDescribeRequest {
    StreamsGroupDescribeRequest {
        group_ids: ids.iter().map(|s| (*s).to_owned()).collect(),
        include_authorized_operations: ops,
        include_topology_description: description,
        ..Default::default()
    }
}

#[tokio::test]
async fn describes_groups_from_their_shards_in_request_order() {
    let r = running(&format!("{FAST_GROUPS}offsets.topic.num.partitions=4\n"));
    create_topic(&r.state, "input", 2).await;
    for g in ["g1", "g2", "g3"] {
        heartbeat(&r.state, g, "m", 0, "input").await;
    }
    let resp = call(
        &r.state,
        request(&["g3", "nope", "g1", "", "g2"], false, false),
        0,
    )
    .await;
    let got: Vec<(&str, i16, &str)> = resp
        .groups
        .iter()
        .map(|g| (g.group_id.as_str(), g.error_code, g.group_state.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("g3", 0, "Stable"),
            ("nope", ErrorCode::GROUP_ID_NOT_FOUND.code(), ""),
            ("g1", 0, "Stable"),
            ("", ErrorCode::INVALID_GROUP_ID.code(), ""),
            ("g2", 0, "Stable"),
        ]
    );
    let g1 = &resp.groups[2];
    assert_eq!(g1.members.len(), 1);
    assert_eq!(g1.members[0].client_host, "/127.0.0.1");
    assert_eq!(g1.members[0].client_id, "test-client");
    assert_eq!(g1.authorized_operations, i32::MIN);
    assert_eq!(g1.topology_description_status, 0);
}

#[tokio::test]
async fn authorized_operations_and_topology_description_status() {
    let r = running(FAST_GROUPS);
    create_topic(&r.state, "input", 1).await;
    heartbeat(&r.state, "g", "m", 0, "input").await;
    for version in 0..=1 {
        let resp = call(
            &r.state,
            request(&["g", "nope"], true, version == 1),
            version,
        )
        .await;
        // READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS.
        assert_eq!(resp.groups[0].authorized_operations, 0xd48);
        assert_eq!(resp.groups[1].authorized_operations, i32::MIN);
        let expected = if version == 1 {
            TOPOLOGY_DESCRIPTION_NOT_STORED
        } else {
            0
        };
        assert_eq!(resp.groups[0].topology_description_status, expected);
        // Only groups described without error get a status.
        assert_eq!(resp.groups[1].topology_description_status, 0);
        assert!(resp.groups[0].topology_description.is_none());
    }
    let resp = call(&r.state, request(&["g"], false, false), 1).await;
    assert_eq!(resp.groups[0].topology_description_status, 0);
    assert_eq!(resp.groups[0].assignor_name.as_deref(), Some("sticky"));
}

#[tokio::test]
async fn unavailable_shards_answer_per_group() {
    let resp = call(&server(), request(&["a", "b"], true, true), 1).await;
    assert!(resp.groups.iter().all(|g| g.error_code
        == ErrorCode::COORDINATOR_NOT_AVAILABLE.code()
        && g.authorized_operations == i32::MIN));
}
