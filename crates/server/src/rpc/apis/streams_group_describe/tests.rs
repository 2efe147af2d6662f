use super::*;
use crate::config::ListenerKind;
use crate::rpc::testing::{
    create_topic, encodes, heartbeat, running, server, Ctx, HidesTopic, FAST_GROUPS,
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

/// A group named again and again is described once, on one shard job, and answered at every
/// position: in full while the repeat budget lasts, then INVALID_REQUEST (before: described
/// and answered in full at every position, so a few bytes per repeat cost a whole group's
/// description each).
#[tokio::test]
async fn repeated_groups_are_described_once_and_copied_within_the_budget() {
    use crate::rpc::groups::MAX_REPEATED_ANSWER_BYTES;
    let r = running(&format!("{FAST_GROUPS}offsets.topic.num.partitions=1\n"));
    create_topic(&r.state, "input", 2).await;
    heartbeat(&r.state, "g", "m", 0, "input").await;
    let repeats = 50_000;
    let mut ids = vec!["g"; repeats];
    ids[1] = "nope";
    ids[2] = "";
    let shard = r.state.coordinators.for_group("g");
    let jobs_before = shard.jobs_run();
    let resp = call(&r.state, request(&ids, true, false), 0).await;
    // "g" and "nope" together: one job ("" is answered without the shard).
    assert_eq!(shard.jobs_run() - jobs_before, 1);
    assert_eq!(resp.groups.len(), repeats);
    let first = resp.groups[0].clone();
    assert_eq!((first.error_code, first.members.len()), (0, 1));
    assert_eq!(
        (resp.groups[1].group_id.as_str(), resp.groups[1].error_code),
        ("nope", ErrorCode::GROUP_ID_NOT_FOUND.code())
    );
    assert_eq!(
        resp.groups[2].error_code,
        ErrorCode::INVALID_GROUP_ID.code()
    );
    let size = first.compute_size(0).unwrap();
    let copies = MAX_REPEATED_ANSWER_BYTES / size;
    let g: Vec<&DescribedGroup> = resp.groups.iter().filter(|d| d.group_id == "g").collect();
    assert_eq!(g.len(), repeats - 2);
    assert!(g[..=copies].iter().all(|d| **d == first));
    assert!(g[copies + 1..]
        .iter()
        .all(|d| d.error_code == ErrorCode::INVALID_REQUEST.code()
            && d.members.is_empty()
            && d.authorized_operations == i32::MIN));
}

#[tokio::test]
async fn a_group_whose_topology_names_a_hidden_topic_is_topic_authorization_failed() {
    let hides = std::sync::Arc::new(HidesTopic::default());
    let r = crate::rpc::testing::running_with_authorizer(FAST_GROUPS, hides.clone());
    create_topic(&r.state, "input", 1).await;
    create_topic(&r.state, "secret", 1).await;
    heartbeat(&r.state, "open", "m", 0, "input").await;
    heartbeat(&r.state, "closed", "m", 0, "secret").await;
    *hides.0.lock().unwrap() = Some("secret".into());
    let resp = call(&r.state, request(&["open", "closed"], true, false), 0).await;
    let open = &resp.groups[0];
    assert_eq!((open.group_id.as_str(), open.error_code), ("open", 0));
    let closed = &resp.groups[1];
    assert_eq!(
        closed.error_code,
        ErrorCode::TOPIC_AUTHORIZATION_FAILED.code()
    );
    assert_eq!(
        closed.error_message.as_deref(),
        Some("The described group uses topics that the client is not authorized to describe.")
    );
    assert!(closed.topology.is_none() && closed.members.is_empty());
    assert_eq!(closed.authorized_operations, i32::MIN);
}
