use std::sync::Arc;

use kcoord_wire::messages::describe_topic_partitions_request::{
    Cursor as RequestCursor, TopicRequest,
};

use super::*;
use crate::config::ListenerKind;
use crate::rpc::testing::{create_topic, encodes, running, running_with_authorizer, with_ctx};
use crate::state::ServerState;

fn request(
    topics: &[&str],
    limit: i32,
    cursor: Option<(&str, i32)>,
) -> DescribeTopicPartitionsRequest {
    DescribeTopicPartitionsRequest {
        topics: topics
            .iter()
            .map(|t| TopicRequest {
                name: (*t).into(),
                ..Default::default()
            })
            .collect(),
        response_partition_limit: limit,
        cursor: cursor.map(|(topic, partition)| RequestCursor {
            topic_name: topic.into(),
            partition_index: partition,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn describe(
    state: &ServerState,
    req: DescribeTopicPartitionsRequest,
) -> DescribeTopicPartitionsResponse {
    let resp = with_ctx(state, ListenerKind::Broker, |ctx| handle(ctx, req, 0));
    encodes(&resp, 0);
    resp
}

/// (topic, code, [partition]) per topic, and the next cursor.
type Shape = (Vec<(String, i16, Vec<i32>)>, Option<(String, i32)>);

fn shape(resp: &DescribeTopicPartitionsResponse) -> Shape {
    let topics = resp
        .topics
        .iter()
        .map(|t| {
            let partitions = t.partitions.iter().map(|p| p.partition_index).collect();
            (t.name.clone().unwrap_or_default(), t.error_code, partitions)
        })
        .collect();
    let next = resp
        .next_cursor
        .as_ref()
        .map(|c| (c.topic_name.clone(), c.partition_index));
    (topics, next)
}

fn owned(topics: &[(&str, i16, &[i32])], next: Option<(&str, i32)>) -> Shape {
    let topics = topics
        .iter()
        .map(|(t, code, p)| ((*t).to_owned(), *code, p.to_vec()))
        .collect();
    (topics, next.map(|(t, p)| (t.to_owned(), p)))
}

#[tokio::test]
async fn every_topic_in_name_order_with_this_node_leading_each_partition() {
    let node = running("");
    let id = create_topic(&node.state, "b", 2).await;
    create_topic(&node.state, "a", 1).await;
    let resp = describe(&node.state, request(&[], 2000, None));
    assert_eq!(
        shape(&resp),
        owned(&[("a", 0, &[0]), ("b", 0, &[0, 1])], None)
    );
    let b = &resp.topics[1];
    assert_eq!((b.topic_id, b.is_internal), (id, false));
    let p = &b.partitions[1];
    let node_id = node.state.config.node_id;
    assert_eq!(
        (p.leader_id, &p.replica_nodes, &p.isr_nodes),
        (node_id, &vec![node_id], &vec![node_id])
    );
    assert_eq!(
        (
            p.eligible_leader_replicas.as_deref(),
            p.last_known_elr.as_deref()
        ),
        (Some(&[][..]), Some(&[][..]))
    );
    assert!(p.offline_replicas.is_empty());
    // No authorizer: every operation is allowed (Kafka's bit field without an authorizer).
    assert_ne!(b.topic_authorized_operations, i32::MIN);
}

#[tokio::test]
async fn a_limit_cuts_the_answer_and_the_cursor_goes_on_from_there() {
    let node = running("");
    create_topic(&node.state, "a", 3).await;
    create_topic(&node.state, "b", 2).await;
    create_topic(&node.state, "c", 1).await;
    let first = describe(&node.state, request(&[], 2, None));
    assert_eq!(shape(&first), owned(&[("a", 0, &[0, 1])], Some(("a", 2))));
    let second = describe(&node.state, request(&[], 3, Some(("a", 2))));
    assert_eq!(
        shape(&second),
        owned(&[("a", 0, &[2]), ("b", 0, &[0, 1])], Some(("c", 0)))
    );
    let last = describe(&node.state, request(&[], 3, Some(("c", 0))));
    assert_eq!(shape(&last), owned(&[("c", 0, &[0])], None));
    // A limit below 1 is 1; above Kafka's cap, the cap.
    let one = describe(&node.state, request(&["b"], 0, None));
    assert_eq!(shape(&one), owned(&[("b", 0, &[0])], Some(("b", 1))));
}

#[tokio::test]
async fn named_topics_unknown_invalid_and_a_bad_cursor() {
    let node = running("");
    create_topic(&node.state, "t", 1).await;
    let resp = describe(
        &node.state,
        request(&["t", "ghost", "a b", "t"], 2000, None),
    );
    assert_eq!(
        shape(&resp),
        owned(&[("a b", 17, &[]), ("ghost", 3, &[]), ("t", 0, &[0])], None)
    );
    // The cursor's topic must be among those named; its partition not negative.
    let bad = describe(
        &node.state,
        request(&["t", "ghost"], 2000, Some(("other", 0))),
    );
    assert_eq!(
        shape(&bad),
        owned(&[("t", 42, &[]), ("ghost", 42, &[])], None)
    );
    let bad = describe(&node.state, request(&["t"], 2000, Some(("t", -1))));
    assert_eq!(shape(&bad), owned(&[("t", 42, &[])], None));
    // Topics before the cursor's are left out.
    let resp = describe(&node.state, request(&["ghost", "t"], 2000, Some(("t", 0))));
    assert_eq!(shape(&resp), owned(&[("t", 0, &[0])], None));
}

#[tokio::test]
async fn topics_the_principal_may_not_describe_are_refused_when_named_and_hidden_otherwise() {
    let node = running_with_authorizer("", Arc::new(crate::security::DenyAll));
    create_topic(&node.state, "t", 1).await;
    let denied = &node.state;
    let named = describe(denied, request(&["t", "ghost"], 2000, None));
    let refused = ErrorCode::TOPIC_AUTHORIZATION_FAILED.code();
    assert_eq!(
        shape(&named),
        owned(&[("ghost", refused, &[]), ("t", refused, &[])], None)
    );
    assert!(named.topics.iter().all(|t| t.topic_id.is_nil()));
    let all = describe(denied, request(&[], 2000, None));
    assert_eq!(shape(&all), owned(&[], None));
}
