use std::sync::Arc;

use kcoord_coordinator::commits::OffsetToCommit;
use kcoord_coordinator::txn_offsets::TxnOffsetCommit;
use kcoord_record_batches::{BatchBuilder, BatchOptions};
use kcoord_wire::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kcoord_wire::messages::write_txn_markers_request::WritableTxnMarkerTopic;
use kcoord_wire::messages::ProduceRequest;

use super::*;
use crate::config::ListenerKind;
use crate::rpc::testing::{create_topic, encodes, running, with_ctx, Ctx};
use crate::state::ServerState;

/// Producer 1 at `epoch` writes a transactional batch into `t`-0, whose transaction the
/// coordinator holds (as `kafka-transactions` finds a hanging one: the partition's side).
async fn open_transaction(state: &ServerState) -> i16 {
    use kcoord_coordinator::transactions::{InitProducerId, InitProducerIdResult};
    create_topic(state, "t", 1).await;
    let shard = state.coordinators.for_transactional_id("tx");
    let init = InitProducerId {
        transactional_id: "tx",
        transaction_timeout_ms: 60_000,
        expected: None,
        fresh_producer_id: Some(1),
    };
    let Ok(InitProducerIdResult::Granted { producer_epoch, .. }) =
        shard.call(|s, now| s.init_producer_id(&init, now)).await
    else {
        panic!("InitProducerId refused");
    };
    let tp = [("t".to_owned(), 0)];
    let added = shard
        .call(|s, now| s.add_partitions_to_transaction("tx", 1, producer_epoch, &tp, 0, now))
        .await;
    assert_eq!(added, Ok(ErrorCode::NONE));
    let mut b = BatchBuilder::new(BatchOptions {
        producer_id: 1,
        producer_epoch,
        base_sequence: 0,
        transactional: true,
        ..BatchOptions::default()
    });
    b.push(0, Some(b"k"), Some(b"v"), &[]).unwrap();
    let req = ProduceRequest {
        transactional_id: Some("tx".into()),
        acks: -1,
        timeout_ms: 1000,
        topic_data: vec![TopicProduceData {
            name: "t".into(),
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(b.build().unwrap().into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let resp = with_ctx(state, ListenerKind::Broker, |ctx| {
        crate::rpc::apis::produce::produce(ctx, req, 9, 1_700_000_000_000)
    });
    assert_eq!(resp.responses[0].partition_responses[0].error_code, 0);
    producer_epoch
}

fn marker(
    producer_id: i64,
    epoch: i16,
    commit: bool,
    topics: &[(&str, &[i32])],
) -> WritableTxnMarker {
    WritableTxnMarker {
        producer_id,
        producer_epoch: epoch,
        transaction_result: commit,
        topics: topics
            .iter()
            .map(|(name, partitions)| WritableTxnMarkerTopic {
                name: (*name).into(),
                partition_indexes: partitions.to_vec(),
                ..Default::default()
            })
            .collect(),
        coordinator_epoch: 0,
        ..Default::default()
    }
}

async fn write_all(
    state: &ServerState,
    markers: Vec<WritableTxnMarker>,
    version: i16,
) -> WriteTxnMarkersResponse {
    let c = Ctx::new(state, ListenerKind::Broker);
    let req = WriteTxnMarkersRequest {
        markers,
        ..Default::default()
    };
    let resp = handle(&c.ctx(state), req, version).await;
    encodes(&resp, version);
    resp
}

/// (producer id, topic, partition, code) of every partition of the answer, in order.
fn codes(resp: &WriteTxnMarkersResponse) -> Vec<(i64, String, i32, i16)> {
    resp.markers
        .iter()
        .flat_map(|m| {
            m.topics.iter().flat_map(move |t| {
                t.partitions.iter().map(move |p| {
                    (
                        m.producer_id,
                        t.name.clone(),
                        p.partition_index,
                        p.error_code,
                    )
                })
            })
        })
        .collect()
}

#[tokio::test]
async fn an_abort_marker_closes_the_partitions_open_transaction() {
    let node = running("");
    let epoch = open_transaction(&node.state).await;
    let partition = node.state.partitions.by_name("t", 0).unwrap();
    assert_eq!(partition.log().last_stable_offset(), 0);
    let resp = write_all(
        &node.state,
        vec![marker(1, epoch, false, &[("t", &[0])])],
        1,
    )
    .await;
    assert_eq!(codes(&resp), [(1, "t".to_owned(), 0, 0)]);
    let log = partition.log();
    assert_eq!(log.last_stable_offset(), 2, "the batch and the marker");
    assert_eq!(log.aborted_transactions().len(), 1);
    drop(log);
    assert_eq!(partition.active_producers()[0].current_txn_start_offset, -1);
    assert_eq!(partition.active_producers()[0].coordinator_epoch, 0);
}

#[tokio::test]
async fn each_partition_gets_kafkas_error() {
    let node = running("");
    let epoch = open_transaction(&node.state).await;
    let resp = write_all(
        &node.state,
        vec![
            // An older epoch; a partition and a topic this node does not have.
            marker(1, epoch - 1, true, &[("t", &[0, 5]), ("ghost", &[0])]),
            marker(2, 0, true, &[(CONSUMER_OFFSETS, &[99])]),
            // The same producer again: its partitions join its first entry.
            marker(1, epoch, false, &[("t", &[0])]),
        ],
        2,
    )
    .await;
    let t = |p, c| (1, "t".to_owned(), p, c);
    assert_eq!(
        codes(&resp),
        [
            t(0, 0),
            t(5, 3),
            (1, "ghost".to_owned(), 0, 3),
            (2, CONSUMER_OFFSETS.to_owned(), 99, 3),
        ]
    );
    // The stale COMMIT was refused (47), then the ABORT taken: the first code was replaced.
    let partition = node.state.partitions.by_name("t", 0).unwrap();
    assert_eq!(partition.log().aborted_transactions().len(), 1);
    let stale = write_all(
        &node.state,
        vec![marker(1, epoch - 1, true, &[("t", &[0])])],
        2,
    )
    .await;
    assert_eq!(codes(&stale)[0].3, ErrorCode::INVALID_PRODUCER_EPOCH.code());
}

#[tokio::test]
async fn a_group_shards_marker_settles_its_pending_offsets() {
    let node = running("");
    create_topic(&node.state, "t", 1).await;
    let shard = node.state.coordinators.for_group("g");
    let offsets = [OffsetToCommit {
        topic: "t".into(),
        topic_id: uuid::Uuid::nil(),
        partition: 0,
        offset: 42,
        leader_epoch: -1,
        metadata: None,
    }];
    let commit = TxnOffsetCommit {
        group_id: "g",
        producer_id: 7,
        member_id: "",
        group_instance_id: None,
        generation_id_or_member_epoch: -1,
        api_version: 3,
        offsets: &offsets,
    };
    let pending = shard
        .call(|s, now| s.commit_transactional_offsets(&commit, now))
        .await;
    assert_eq!(pending, Ok(Ok(vec![ErrorCode::NONE])));
    let committed = |s: &kcoord_coordinator::CoordinatorShard| {
        s.state().offsets.get("g", "t", 0).map(|o| o.offset)
    };
    assert_eq!(shard.read(committed).await, Ok(None));
    let index = node.state.coordinators.offsets_partition("g");
    let resp = write_all(
        &node.state,
        vec![marker(7, 0, true, &[(CONSUMER_OFFSETS, &[index])])],
        1,
    )
    .await;
    assert_eq!(codes(&resp), [(7, CONSUMER_OFFSETS.to_owned(), index, 0)]);
    assert_eq!(shard.read(committed).await, Ok(Some(42)));
}

#[tokio::test]
async fn without_cluster_permission_nothing_is_written() {
    let node = running("");
    let epoch = open_transaction(&node.state).await;
    let (mut denied, _) = ServerState::build(
        Arc::clone(&node.state.config),
        node.state.listeners.iter().map(|l| (**l).clone()).collect(),
    );
    denied.authorizer = Some(Arc::new(crate::security::DenyAll));
    denied.partitions = Arc::clone(&node.state.partitions);
    let resp = write_all(&denied, vec![marker(1, epoch, false, &[("t", &[0, 1])])], 1).await;
    assert_eq!(
        codes(&resp).iter().map(|c| c.3).collect::<Vec<_>>(),
        [31, 31]
    );
    let partition = node.state.partitions.by_name("t", 0).unwrap();
    assert_eq!(partition.log().last_stable_offset(), 0, "still open");
    assert!(write_all(&node.state, vec![], 1).await.markers.is_empty());
}
