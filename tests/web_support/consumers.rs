//! Classic and consumer groups for the JSON API's tests and the web page's: a topic with
//! records, a classic group whose leader assigned both partitions in Kafka's consumer protocol
//! and committed behind the end of one (lag 3), and a KIP-848 consumer group of one member.
use bytes::Bytes;
use kcoord_client::Connection;
use kcoord_record_batches::{BatchBuilder, BatchOptions};
use kcoord_wire::messages::create_topics_request::CreatableTopic;
use kcoord_wire::messages::join_group_request::JoinGroupRequestProtocol;
use kcoord_wire::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kcoord_wire::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kcoord_wire::messages::sync_group_request::SyncGroupRequestAssignment;
use kcoord_wire::messages::{
    ConsumerGroupHeartbeatRequest, CreateTopicsRequest, JoinGroupRequest, OffsetCommitRequest,
    ProduceRequest, SyncGroupRequest,
};

use super::WAIT;
use crate::common::Daemon;

pub const TOPIC: &str = "payments";
pub const CLASSIC: &str = "payments-readers";
pub const CONSUMER: &str = "payments-auditors";

/// Kafka's consumer-protocol assignment (version 0) of `partitions` of [`TOPIC`].
fn assignment(partitions: &[i32]) -> Bytes {
    let mut bytes = vec![0u8, 0];
    bytes.extend(1i32.to_be_bytes());
    bytes.extend((TOPIC.len() as i16).to_be_bytes());
    bytes.extend(TOPIC.as_bytes());
    bytes.extend((partitions.len() as i32).to_be_bytes());
    for p in partitions {
        bytes.extend(p.to_be_bytes());
    }
    bytes.extend((-1i32).to_be_bytes());
    Bytes::from(bytes)
}

/// The groups and records above, on `daemon`.
pub fn start(daemon: &Daemon) {
    let (runtime, conn) = connected(daemon, "web-consumers");
    runtime.block_on(async {
        create_topic_with_records(&conn, TOPIC, 2, 5).await;
        classic_group(&conn).await;
        let join = ConsumerGroupHeartbeatRequest {
            group_id: CONSUMER.into(),
            member_id: "auditor-1".into(),
            rebalance_timeout_ms: 30_000,
            subscribed_topic_names: Some(vec![TOPIC.into()]),
            topic_partitions: Some(Vec::new()),
            ..Default::default()
        };
        let joined = conn.send(join, 1).await.expect("ConsumerGroupHeartbeat");
        assert_eq!(joined.error_code, 0, "{:?}", joined.error_message);
    });
}

/// Creates `name` with `partitions` and writes `records` records to its partition 0.
pub async fn create_topic_with_records(
    conn: &Connection,
    name: &str,
    partitions: i32,
    records: usize,
) {
    let topic = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: name.into(),
            num_partitions: partitions,
            replication_factor: -1,
            ..Default::default()
        }],
        timeout_ms: 10_000,
        ..Default::default()
    };
    assert_eq!(
        conn.send(topic, 7).await.expect("CreateTopics").topics[0].error_code,
        0
    );
    produce(conn, name, records).await;
}

/// Writes `records` records to partition 0 of `name`.
pub async fn produce(conn: &Connection, name: &str, records: usize) {
    let mut batch = BatchBuilder::new(BatchOptions::default());
    for value in 0..records {
        batch
            .push(1, None, Some(value.to_string().as_bytes()), &[])
            .unwrap();
    }
    let produce = ProduceRequest {
        acks: 1,
        timeout_ms: 5000,
        topic_data: vec![TopicProduceData {
            name: name.into(),
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(batch.build().unwrap().into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let produced = conn.send(produce, 9).await.expect("Produce");
    assert_eq!(produced.responses[0].partition_responses[0].error_code, 0);
}

/// One member (v3 JoinGroup, admitted at once) that assigns itself both partitions and
/// commits offset 2 of partition 0.
async fn classic_group(conn: &Connection) {
    let join = JoinGroupRequest {
        group_id: CLASSIC.into(),
        session_timeout_ms: 30_000,
        rebalance_timeout_ms: 30_000,
        protocol_type: "consumer".into(),
        protocols: vec![JoinGroupRequestProtocol {
            name: "range".into(),
            metadata: Bytes::new(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let joined = conn.send(join, 3).await.expect("JoinGroup");
    assert_eq!(joined.error_code, 0);
    let sync = SyncGroupRequest {
        group_id: CLASSIC.into(),
        generation_id: joined.generation_id,
        member_id: joined.member_id.clone(),
        assignments: vec![SyncGroupRequestAssignment {
            member_id: joined.member_id.clone(),
            assignment: assignment(&[1, 0]),
            ..Default::default()
        }],
        ..Default::default()
    };
    assert_eq!(conn.send(sync, 3).await.expect("SyncGroup").error_code, 0);
    let member = (joined.member_id.as_str(), joined.generation_id);
    commit(conn, CLASSIC, member, (TOPIC, 0), 2).await;
}

/// Commits `offset` of `partition` for `group` as `member` (id, generation or member epoch;
/// `("", -1)` commits as an admin, which an empty group accepts).
pub async fn commit(
    conn: &Connection,
    group: &str,
    member: (&str, i32),
    partition: (&str, i32),
    offset: i64,
) {
    let commit = OffsetCommitRequest {
        group_id: group.into(),
        member_id: member.0.into(),
        generation_id_or_member_epoch: member.1,
        topics: vec![OffsetCommitRequestTopic {
            name: partition.0.into(),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: partition.1,
                committed_offset: offset,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let committed = conn.send(commit, 8).await.expect("OffsetCommit");
    assert_eq!(committed.topics[0].partitions[0].error_code, 0);
}

/// `topic` with `records` records on partition 0, and `group`'s offset `committed` there
/// (committed as an admin: before the group has members).
pub fn lagging_source(
    daemon: &Daemon,
    topic: &str,
    partitions: i32,
    records: usize,
    group: &str,
    committed: i64,
) {
    let (runtime, conn) = connected(daemon, "web-lag");
    runtime.block_on(async {
        create_topic_with_records(&conn, topic, partitions, records).await;
        commit(&conn, group, ("", -1), (topic, 0), committed).await;
    });
}

/// A runtime of its own and a connection to `daemon` on it.
fn connected(daemon: &Daemon, client_id: &str) -> (tokio::runtime::Runtime, Connection) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let conn = runtime.block_on(daemon.client_connection(client_id, WAIT));
    (runtime, conn)
}

/// Writes `records` more records to partition 0 of `topic`.
pub fn produce_more(daemon: &Daemon, topic: &str, records: usize) {
    let (runtime, conn) = connected(daemon, "web-lag");
    runtime.block_on(produce(&conn, topic, records));
}

/// Commits `offset` of `partition` for `group` as an admin (the group must be empty).
pub fn commit_as_admin(daemon: &Daemon, group: &str, partition: (&str, i32), offset: i64) {
    let (runtime, conn) = connected(daemon, "web-lag");
    runtime.block_on(commit(&conn, group, ("", -1), partition, offset));
}
