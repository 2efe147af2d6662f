//! WriteTxnMarkers (key 27), v1-2, after Kafka's `KafkaApis.handleWriteTxnMarkersRequest`:
//! what a transaction coordinator sends a partition leader, and what `Admin.abortTransaction`
//! (`kafka-transactions abort`) sends to close a hanging transaction. ALTER on the cluster, else
//! CLUSTER_ACTION (refused: CLUSTER_AUTHORIZATION_FAILED on every partition, Kafka's error
//! response). Then each marker's partitions, in request order: a `__consumer_offsets-<n>`
//! partition is group shard `n` (UNKNOWN_TOPIC_OR_PARTITION if there is no such shard), whose
//! pending transactional offsets of the producer are committed or dropped (a shard that cannot
//! answer is NOT_LEADER_OR_FOLLOWER, as Kafka translates its coordinator errors); any other
//! partition takes a COMMIT or ABORT control batch (`Partitions::write_txn_marker_with`:
//! UNKNOWN_TOPIC_OR_PARTITION without a log here, INVALID_PRODUCER_EPOCH,
//! TRANSACTION_COORDINATOR_FENCED, KAFKA_STORAGE_ERROR). The answer groups the partitions by
//! producer id, as Kafka's does (markers of the same producer share one entry).
//!
//! Kafka writes a group's marker into its `__consumer_offsets` log, which checks the producer
//! epoch; kcoord's group shards keep no producer epochs, so such a marker always settles them.

use kcoord_coordinator::transactions::CONSUMER_OFFSETS;
use kcoord_storage::TxnMarker;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::write_txn_markers_request::WritableTxnMarker;
use kcoord_wire::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kcoord_wire::messages::{WriteTxnMarkersRequest, WriteTxnMarkersResponse};
use kcoord_wire::ErrorCode;
use tracing::info;

use crate::rpc::apis::broker_registration::KAFKA_CLUSTER;
use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;

/// WriteTxnMarkers as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::WriteTxnMarkers, 1, 2).asks(&[
    Check::new(AclOperation::Alter, ResourceType::Cluster),
    Check::new(AclOperation::ClusterAction, ResourceType::Cluster),
]);

serve!(async handle);

/// The first version whose markers carry their transaction version.
const TRANSACTION_VERSION_VERSION: i16 = 2;

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: WriteTxnMarkersRequest,
    version: i16,
) -> WriteTxnMarkersResponse {
    let allowed = authorize(
        ctx,
        AclOperation::Alter,
        ResourceType::Cluster,
        KAFKA_CLUSTER,
    ) || authorize(
        ctx,
        AclOperation::ClusterAction,
        ResourceType::Cluster,
        KAFKA_CLUSTER,
    );
    let mut markers: Vec<WritableTxnMarkerResult> = Vec::new();
    for marker in &req.markers {
        for topic in &marker.topics {
            for partition in &topic.partition_indexes {
                let code = if allowed {
                    write(ctx, marker, &topic.name, *partition, version).await
                } else {
                    ErrorCode::CLUSTER_AUTHORIZATION_FAILED
                };
                record(
                    &mut markers,
                    marker.producer_id,
                    &topic.name,
                    *partition,
                    code,
                );
            }
        }
    }
    WriteTxnMarkersResponse {
        markers,
        ..Default::default()
    }
}

/// One marker into one partition.
async fn write(
    ctx: &RequestContext<'_>,
    m: &WritableTxnMarker,
    topic: &str,
    partition: i32,
    version: i16,
) -> ErrorCode {
    let (producer_id, commit) = (m.producer_id, m.transaction_result);
    if topic == CONSUMER_OFFSETS {
        let coordinators = &ctx.server.coordinators;
        if coordinators
            .shards_of_offsets_partition(partition)
            .is_empty()
        {
            return ErrorCode::UNKNOWN_TOPIC_OR_PARTITION;
        }
        let settled = crate::runtime::transactions::settle_offsets(
            coordinators,
            partition,
            producer_id,
            commit,
        )
        .await;
        return match settled {
            Ok(committed) => {
                info!(peer = %ctx.peer, producer_id, commit, shard = partition, committed, "transactional offsets settled by WriteTxnMarkers");
                ErrorCode::NONE
            }
            // The transaction coordinator expects a leader's errors, not a group coordinator's.
            Err(e) => match e.error_code() {
                ErrorCode::COORDINATOR_NOT_AVAILABLE
                | ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
                | ErrorCode::NOT_COORDINATOR => ErrorCode::NOT_LEADER_OR_FOLLOWER,
                other => other,
            },
        };
    }
    let marker = TxnMarker {
        producer_id,
        producer_epoch: m.producer_epoch,
        coordinator_epoch: m.coordinator_epoch,
        commit,
        transaction_version: if version >= TRANSACTION_VERSION_VERSION {
            i16::from(m.transaction_version)
        } else {
            0
        },
    };
    let now = crate::support::clock::now_ms();
    match ctx
        .server
        .partitions
        .write_txn_marker_with(topic, partition, &marker, now)
    {
        Ok(offset) => {
            info!(peer = %ctx.peer, topic, partition, producer_id, commit, offset, "transaction marker written by WriteTxnMarkers");
            ErrorCode::NONE
        }
        Err(e) => ErrorCode::from_code(e.error_code()).unwrap_or(ErrorCode::UNKNOWN_SERVER_ERROR),
    }
}

/// Adds one partition's code to the answer: under its producer id's entry and its topic, in
/// the order first seen; a partition named twice keeps its last code, as Kafka's map does.
fn record(
    markers: &mut Vec<WritableTxnMarkerResult>,
    producer_id: i64,
    topic: &str,
    partition: i32,
    code: ErrorCode,
) {
    let index = match markers.iter().position(|m| m.producer_id == producer_id) {
        Some(i) => i,
        None => {
            markers.push(WritableTxnMarkerResult {
                producer_id,
                ..Default::default()
            });
            markers.len() - 1
        }
    };
    let topics = &mut markers[index].topics;
    let index = match topics.iter().position(|t| t.name == topic) {
        Some(i) => i,
        None => {
            topics.push(WritableTxnMarkerTopicResult {
                name: topic.to_owned(),
                ..Default::default()
            });
            topics.len() - 1
        }
    };
    let partitions = &mut topics[index].partitions;
    match partitions
        .iter_mut()
        .find(|p| p.partition_index == partition)
    {
        Some(p) => p.error_code = code.code(),
        None => partitions.push(WritableTxnMarkerPartitionResult {
            partition_index: partition,
            error_code: code.code(),
            ..Default::default()
        }),
    }
}

/// The authorization matrix's rows of WriteTxnMarkers: an ABORT marker for a producer the
/// partition does not know, which it takes.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    use kcoord_wire::messages::write_txn_markers_request::WritableTxnMarkerTopic;
    let request = WriteTxnMarkersRequest {
        markers: vec![WritableTxnMarker {
            producer_id: 1,
            producer_epoch: 0,
            transaction_result: false,
            topics: vec![WritableTxnMarkerTopic {
                name: TOPIC.into(),
                partition_indexes: vec![0],
                ..Default::default()
            }],
            coordinator_epoch: 0,
            ..Default::default()
        }],
        ..Default::default()
    };
    fn seen(r: &WriteTxnMarkersResponse) -> String {
        code(r.markers[0].topics[0].partitions[0].error_code)
    }
    vec![
        row!(WriteTxnMarkers ("alter") 1 on Broker, request.clone(),
            needs [(Alter, Cluster, CLUSTER)],
            WriteTxnMarkersResponse => |r| seen(&r),
            allowed "NONE", denied "CLUSTER_AUTHORIZATION_FAILED"),
        row!(WriteTxnMarkers ("cluster action") 2 on Broker, request,
            needs [(ClusterAction, Cluster, CLUSTER)],
            WriteTxnMarkersResponse => |r| seen(&r),
            allowed "NONE", denied "CLUSTER_AUTHORIZATION_FAILED"),
    ]
}

#[cfg(test)]
mod tests;
