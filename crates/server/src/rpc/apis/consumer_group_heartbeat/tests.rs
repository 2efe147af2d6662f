use super::*;
use crate::config::ListenerKind;
use crate::rpc::testing::{consumer_heartbeat, create_topic, encodes, heartbeat, running, Ctx};

#[tokio::test]
async fn consumers_join_share_the_partitions_and_leave() {
    // Every target assignment at once (Kafka's default interval would hold b's back for 1 s).
    let node = running("group.consumer.assignment.interval.ms=0\n");
    let s = &node.state;
    let t = create_topic(s, "orders", 4).await;
    let a = consumer_heartbeat(s, "g", "a", 0, &["orders"], &[]).await;
    assert_eq!((a.error_code, a.member_epoch), (0, 2));
    let owned_a = &a.assignment.as_ref().unwrap().topic_partitions[0];
    assert_eq!((owned_a.topic_id, owned_a.partitions.len()), (t, 4));
    let b = consumer_heartbeat(s, "g", "b", 0, &["orders"], &[]).await;
    assert_eq!(b.member_epoch, 3);
    assert!(
        b.assignment.unwrap().topic_partitions.is_empty(),
        "a still owns them"
    );
    let a = consumer_heartbeat(s, "g", "a", 2, &[], &[(t, vec![0, 1, 2, 3])]).await;
    let kept = a.assignment.unwrap().topic_partitions[0].partitions.clone();
    assert_eq!(kept.len(), 2, "a is asked to revoke two");
    let a = consumer_heartbeat(s, "g", "a", 2, &[], &[(t, kept.clone())]).await;
    assert_eq!(a.member_epoch, 3);
    let b = consumer_heartbeat(s, "g", "b", 3, &[], &[]).await;
    let given = b.assignment.unwrap().topic_partitions[0].partitions.clone();
    assert!(given.iter().all(|p| !kept.contains(p)) && given.len() == 2);
    let left = consumer_heartbeat(s, "g", "b", -1, &[], &[]).await;
    assert_eq!((left.error_code, left.member_epoch), (0, -1));
    let gone = consumer_heartbeat(s, "g", "b", 3, &[], &[]).await;
    assert_eq!(gone.error_code, ErrorCode::UNKNOWN_MEMBER_ID.code());
}

#[tokio::test]
async fn errors_carry_kafkas_codes_and_messages() {
    let node = running("");
    let s = &node.state;
    create_topic(s, "orders", 1).await;
    let r = consumer_heartbeat(s, "nowhere", "a", 3, &[], &[]).await;
    assert_eq!(r.error_code, ErrorCode::GROUP_ID_NOT_FOUND.code());
    assert_eq!(
        r.error_message.as_deref(),
        Some("Consumer group nowhere not found.")
    );
    heartbeat(s, "streams", "m", 0, "orders").await;
    let r = consumer_heartbeat(s, "streams", "a", 0, &["orders"], &[]).await;
    assert_eq!(
        r.error_message.as_deref(),
        Some("Group streams is not a consumer group.")
    );
    let req = ConsumerGroupHeartbeatRequest {
        group_id: "g".into(),
        member_id: String::new(),
        member_epoch: 0,
        ..Default::default()
    };
    let c = Ctx::new(s, ListenerKind::Broker);
    let r = handle(&c.ctx(s), req, 1).await;
    encodes(&r, 1);
    assert_eq!(r.error_code, ErrorCode::INVALID_REQUEST.code());
    assert_eq!(r.error_message.as_deref(), Some("MemberId can't be empty."));
}

#[tokio::test]
async fn the_session_timeout_and_interval_come_from_the_config() {
    let node =
        running("group.consumer.session.timeout.ms=100\ngroup.consumer.heartbeat.interval.ms=50\n");
    let s = &node.state;
    create_topic(s, "orders", 1).await;
    let r = consumer_heartbeat(s, "g", "a", 0, &["orders"], &[]).await;
    assert_eq!(r.heartbeat_interval_ms, 50);
    // The shard's timer task fences the silent member once its 100 ms session is over.
    let mut answer = r;
    for _ in 0..200 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        answer = consumer_heartbeat(s, "g", "a", 2, &[], &[]).await;
        if answer.error_code != 0 {
            break;
        }
        // Keep silent after the first poll: only polls that fail count.
        tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    }
    assert_eq!(answer.error_code, ErrorCode::UNKNOWN_MEMBER_ID.code());
}
