//! AddPartitionsToTxn (key 24), v0-5, after Kafka's `KafkaApis.handleAddPartitionsToTxnRequest`.
//! v0-3 come from producers: one transaction, WRITE on its transactional id
//! (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition) and on each topic (an internal
//! topic is TOPIC_AUTHORIZATION_FAILED). v4-5 are the batched form brokers send (KIP-890; v5
//! from transaction version 2 brokers, served the same here), CLUSTER_ACTION on the cluster, with `VerifyOnly` asking
//! only whether the partitions are in the transaction. A partition refused before the
//! coordinator (TOPIC_AUTHORIZATION_FAILED, UNKNOWN_TOPIC_OR_PARTITION) fails its whole
//! transaction: the others answer OPERATION_NOT_ATTEMPTED. Otherwise the transactional id's
//! shard answers one code for all of them.

use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kcoord_wire::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kcoord_wire::messages::{AddPartitionsToTxnRequest, AddPartitionsToTxnResponse};
use kcoord_wire::ErrorCode;

use crate::rpc::apis::end_txn::older_clients;
use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;

/// AddPartitionsToTxn as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::AddPartitionsToTxn, 0, 5).asks(&[
    Check::new(AclOperation::Write, ResourceType::TransactionalId),
    Check::new(AclOperation::Write, ResourceType::Topic),
    Check::new(AclOperation::ClusterAction, ResourceType::Cluster),
]);

serve!(async handle);

/// The first version of the batched form.
const BATCHED_VERSION: i16 = 4;

/// One transaction of the request.
struct Transaction<'a> {
    id: &'a str,
    producer_id: i64,
    producer_epoch: i16,
    verify_only: bool,
    topics: &'a [AddPartitionsToTxnTopic],
    /// The client's transaction version: 2 from v5 (Kafka's
    /// `transactionVersionForAddPartitionsToTxn`), else 0.
    version: i16,
}

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: AddPartitionsToTxnRequest,
    version: i16,
) -> AddPartitionsToTxnResponse {
    if version < BATCHED_VERSION {
        let txn = Transaction {
            id: &req.v3_and_below_transactional_id,
            producer_id: req.v3_and_below_producer_id,
            producer_epoch: req.v3_and_below_producer_epoch,
            verify_only: false,
            topics: &req.v3_and_below_topics,
            version: 0,
        };
        return AddPartitionsToTxnResponse {
            results_by_topic_v3_and_below: add(ctx, &txn, version).await,
            ..Default::default()
        };
    }
    let cluster = crate::rpc::apis::broker_registration::KAFKA_CLUSTER;
    if !authorize(
        ctx,
        AclOperation::ClusterAction,
        ResourceType::Cluster,
        cluster,
    ) {
        return AddPartitionsToTxnResponse {
            error_code: ErrorCode::CLUSTER_AUTHORIZATION_FAILED.code(),
            ..Default::default()
        };
    }
    let mut results = Vec::with_capacity(req.transactions.len());
    for t in &req.transactions {
        let txn = Transaction {
            id: &t.transactional_id,
            producer_id: t.producer_id,
            producer_epoch: t.producer_epoch,
            verify_only: t.verify_only,
            topics: &t.topics,
            version: if version >= 5 {
                kcoord_coordinator::transactions::TV_2
            } else {
                0
            },
        };
        results.push(AddPartitionsToTxnResult {
            transactional_id: t.transactional_id.clone(),
            topic_results: add(ctx, &txn, version).await,
            ..Default::default()
        });
    }
    AddPartitionsToTxnResponse {
        results_by_transaction: results,
        ..Default::default()
    }
}

/// One transaction's answer, per topic and partition.
async fn add(
    ctx: &RequestContext<'_>,
    txn: &Transaction<'_>,
    version: i16,
) -> Vec<AddPartitionsToTxnTopicResult> {
    let partitions: Vec<(String, i32)> = txn
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| (t.name.clone(), *p)))
        .collect();
    let from_client = version < BATCHED_VERSION;
    if from_client
        && !authorize(
            ctx,
            AclOperation::Write,
            ResourceType::TransactionalId,
            txn.id,
        )
    {
        let refused = vec![ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED; partitions.len()];
        return results(&partitions, &refused);
    }
    let checked = check_partitions(ctx, &partitions, from_client);
    if checked.iter().any(|c| *c != ErrorCode::NONE) {
        let codes: Vec<ErrorCode> = checked
            .iter()
            .map(|c| match c {
                ErrorCode::NONE => ErrorCode::OPERATION_NOT_ATTEMPTED,
                refused => *refused,
            })
            .collect();
        return results(&partitions, &codes);
    }
    let shard = ctx.server.coordinators.for_transactional_id(txn.id);
    let (id, pid, epoch) = (txn.id, txn.producer_id, txn.producer_epoch);
    let codes = if txn.verify_only {
        match shard
            .read(|s| s.verify_partitions_in_transaction(id, pid, epoch, &partitions))
            .await
        {
            Ok(codes) => codes,
            Err(e) => vec![e.error_code(); partitions.len()],
        }
    } else {
        let code = match shard
            .call(|s, now| {
                s.add_partitions_to_transaction(id, pid, epoch, &partitions, txn.version, now)
            })
            .await
        {
            Ok(code) => older_clients(code, version),
            Err(e) => e.error_code(),
        };
        vec![code; partitions.len()]
    };
    results(&partitions, &codes)
}

/// Kafka's checks before the coordinator: WRITE on each topic (from clients; internal topics
/// are not checked), then whether the partition exists.
fn check_partitions(
    ctx: &RequestContext<'_>,
    partitions: &[(String, i32)],
    from_client: bool,
) -> Vec<ErrorCode> {
    let image = ctx.server.topics.snapshot();
    partitions
        .iter()
        .map(|(topic, partition)| {
            // Kafka leaves internal topics out of the topics it authorizes, so a producer
            // naming one is refused as unauthorized.
            let internal = topic == kcoord_coordinator::transactions::CONSUMER_OFFSETS;
            if from_client
                && (internal || !authorize(ctx, AclOperation::Write, ResourceType::Topic, topic))
            {
                return ErrorCode::TOPIC_AUTHORIZATION_FAILED;
            }
            let exists = image
                .get(topic)
                .is_some_and(|t| *partition >= 0 && *partition < t.partition_count());
            if exists {
                ErrorCode::NONE
            } else {
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
            }
        })
        .collect()
}

/// `codes` (one per partition) grouped by topic, in the order of the request.
fn results(
    partitions: &[(String, i32)],
    codes: &[ErrorCode],
) -> Vec<AddPartitionsToTxnTopicResult> {
    let mut topics: Vec<AddPartitionsToTxnTopicResult> = Vec::new();
    for ((topic, partition), code) in partitions.iter().zip(codes) {
        let result = AddPartitionsToTxnPartitionResult {
            partition_index: *partition,
            partition_error_code: code.code(),
            ..Default::default()
        };
        match topics.iter_mut().find(|t| t.name == *topic) {
            Some(t) => t.results_by_partition.push(result),
            None => topics.push(AddPartitionsToTxnTopicResult {
                name: topic.clone(),
                results_by_partition: vec![result],
                ..Default::default()
            }),
        }
    }
    topics
}

/// The authorization matrix's rows of AddPartitionsToTxn.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    let client = AddPartitionsToTxnRequest {
        v3_and_below_transactional_id: TRANSACTIONAL_ID.into(),
        v3_and_below_producer_id: 1,
        v3_and_below_producer_epoch: 0,
        v3_and_below_topics: vec![AddPartitionsToTxnTopic {
            name: TOPIC.into(),
            partitions: vec![0],
            ..Default::default()
        }],
        ..Default::default()
    };
    vec![
        row!(AddPartitionsToTxn ("producer") 3 on Broker, client,
            needs [(Write, TransactionalId, TRANSACTIONAL_ID), (Write, Topic, TOPIC)],
            AddPartitionsToTxnResponse => |r| code(r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code),
            allowed "INVALID_PRODUCER_ID_MAPPING", denied "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
        row!(AddPartitionsToTxn ("broker") 4 on Broker, AddPartitionsToTxnRequest {
                transactions: vec![kcoord_wire::messages::add_partitions_to_txn_request::AddPartitionsToTxnTransaction {
                    transactional_id: TRANSACTIONAL_ID.into(),
                    producer_id: 1,
                    producer_epoch: 0,
                    verify_only: true,
                    topics: vec![AddPartitionsToTxnTopic { name: TOPIC.into(), partitions: vec![0], ..Default::default() }],
                    ..Default::default()
                }],
                ..Default::default()
            },
            needs [(ClusterAction, Cluster, CLUSTER)],
            AddPartitionsToTxnResponse => |r| code(r.error_code),
            allowed "NONE", denied "CLUSTER_AUTHORIZATION_FAILED"),
    ]
}
