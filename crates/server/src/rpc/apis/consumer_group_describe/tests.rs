use super::*;
use crate::config::ListenerKind;
use crate::rpc::testing::{
    consumer_heartbeat, create_topic, encodes, heartbeat, running, running_with_authorizer, Ctx,
    HidesTopic,
};

async fn describe(
    state: &crate::state::ServerState,
    ids: &[&str],
    version: i16,
) -> ConsumerGroupDescribeResponse {
    let c = Ctx::new(state, ListenerKind::Broker);
    let req = ConsumerGroupDescribeRequest {
        group_ids: ids.iter().map(|s| s.to_string()).collect(),
        include_authorized_operations: true,
        ..Default::default()
    };
    let r = handle(&c.ctx(state), req, version).await;
    encodes(&r, version);
    r
}

#[tokio::test]
async fn a_group_is_described_with_members_assignments_and_operations() {
    let node = running("");
    let s = &node.state;
    let t = create_topic(s, "orders", 2).await;
    consumer_heartbeat(s, "g", "a", 0, &["orders"], &[]).await;
    heartbeat(s, "streams", "m", 0, "orders").await;
    let r = describe(s, &["g", "missing", "streams", ""], 1).await;
    let g = &r.groups[0];
    assert_eq!(
        (
            g.error_code,
            g.group_state.as_str(),
            g.group_epoch,
            g.assignment_epoch
        ),
        (0, "Stable", 2, 2)
    );
    assert_eq!(g.assignor_name, "uniform");
    let m = &g.members[0];
    assert_eq!(
        (m.member_id.as_str(), m.member_epoch, m.member_type),
        ("a", 2, 1)
    );
    assert_eq!(m.subscribed_topic_names, vec!["orders".to_string()]);
    let owned = &m.assignment.topic_partitions[0];
    assert_eq!(
        (
            owned.topic_id,
            owned.topic_name.as_str(),
            owned.partitions.clone()
        ),
        (t, "orders", vec![0, 1])
    );
    assert_eq!(
        m.target_assignment.topic_partitions[0].partitions,
        vec![0, 1]
    );
    assert!(g.authorized_operations > 0);
    assert_eq!(r.groups[1].error_code, ErrorCode::GROUP_ID_NOT_FOUND.code());
    assert_eq!(
        r.groups[1].error_message.as_deref(),
        Some("Group missing not found.")
    );
    assert_eq!(
        r.groups[2].error_message.as_deref(),
        Some("Group streams is not a consumer group.")
    );
    assert_eq!(r.groups[3].error_code, ErrorCode::INVALID_GROUP_ID.code());
}

#[tokio::test]
async fn a_group_assigned_a_hidden_topic_is_topic_authorization_failed() {
    let hides = std::sync::Arc::new(HidesTopic::default());
    let node = running_with_authorizer("", hides.clone());
    let s = &node.state;
    create_topic(s, "input", 1).await;
    create_topic(s, "secret", 1).await;
    consumer_heartbeat(s, "open", "a", 0, &["input"], &[]).await;
    consumer_heartbeat(s, "closed", "a", 0, &["secret"], &[]).await;
    *hides.0.lock().unwrap() = Some("secret".into());
    let r = describe(s, &["open", "closed"], 1).await;
    assert_eq!(
        (r.groups[0].group_id.as_str(), r.groups[0].error_code),
        ("open", 0)
    );
    assert_eq!(r.groups[0].members.len(), 1);
    let closed = &r.groups[1];
    assert_eq!(
        (closed.group_id.as_str(), closed.error_code),
        ("closed", ErrorCode::TOPIC_AUTHORIZATION_FAILED.code())
    );
    assert_eq!(
        closed.error_message.as_deref(),
        Some("The group has described topic(s) that the client is not authorized to describe.")
    );
    assert!(closed.members.is_empty());
}
