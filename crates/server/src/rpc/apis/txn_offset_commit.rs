//! TxnOffsetCommit (key 28), v0-5, after Kafka's `KafkaApis.handleTxnOffsetCommitRequest` and
//! `OffsetMetadataManager.commitTransactionalOffset`: WRITE on the transactional id
//! (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition), READ on the group
//! (GROUP_AUTHORIZATION_FAILED), READ on each topic (TOPIC_AUTHORIZATION_FAILED), then unknown
//! topics or partitions (UNKNOWN_TOPIC_OR_PARTITION). Up to v4 the transaction must hold the
//! group's `__consumer_offsets` partition (AddOffsetsToTxn; Kafka's KIP-890 verification), else
//! INVALID_TXN_STATE; from v5 (transaction version 2) the commit adds it, as Kafka's does. The group's
//! shard applies KIP-447's member checks for streams groups (a zombie's offsets are refused)
//! and keeps the offsets pending until the transaction's marker.

use kcoord_coordinator::commits::OffsetToCommit;
use kcoord_coordinator::transactions::{CONSUMER_OFFSETS, TV_2};
use kcoord_coordinator::txn_offsets::TxnOffsetCommit;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kcoord_wire::messages::{TxnOffsetCommitRequest, TxnOffsetCommitResponse};
use kcoord_wire::ErrorCode;

use crate::rpc::apis::end_txn::older_clients;
use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;

/// TxnOffsetCommit as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::TxnOffsetCommit, 0, 5).asks(&[
    Check::new(AclOperation::Write, ResourceType::TransactionalId),
    Check::new(AclOperation::Read, ResourceType::Group),
    Check::new(AclOperation::Read, ResourceType::Topic),
]);

serve!(async handle);

/// The first version of transaction version 2 (the commit adds the group's partition).
const TV2_VERSION: i16 = 5;

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: TxnOffsetCommitRequest,
    version: i16,
) -> TxnOffsetCommitResponse {
    let mut codes = vec![ErrorCode::NONE; req.topics.iter().map(|t| t.partitions.len()).sum()];
    let request_error = if !authorize(
        ctx,
        AclOperation::Write,
        ResourceType::TransactionalId,
        &req.transactional_id,
    ) {
        Some(ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    } else if !authorize(ctx, AclOperation::Read, ResourceType::Group, &req.group_id) {
        Some(ErrorCode::GROUP_AUTHORIZATION_FAILED)
    } else {
        None
    };
    match request_error {
        Some(code) => codes.fill(code),
        None => commit(ctx, &req, version, &mut codes).await,
    }
    let mut codes = codes.into_iter();
    let topics = req
        .topics
        .iter()
        .map(|t| TxnOffsetCommitResponseTopic {
            name: t.name.clone(),
            partitions: t
                .partitions
                .iter()
                .map(|p| TxnOffsetCommitResponsePartition {
                    partition_index: p.partition_index,
                    error_code: codes.next().unwrap_or(ErrorCode::NONE).code(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    TxnOffsetCommitResponse {
        throttle_time_ms: 0,
        topics,
        ..Default::default()
    }
}

/// Sorts out the partitions refused before the shards, then commits the others; `codes` has
/// one slot per requested partition, in order.
async fn commit(
    ctx: &RequestContext<'_>,
    req: &TxnOffsetCommitRequest,
    version: i16,
    codes: &mut [ErrorCode],
) {
    let image = ctx.server.topics.snapshot();
    let mut pending = Vec::new();
    let mut offsets = Vec::new();
    let mut slot = 0;
    for t in &req.topics {
        let readable = authorize(ctx, AclOperation::Read, ResourceType::Topic, &t.name);
        let topic = image.get(&t.name);
        for p in &t.partitions {
            let known = topic
                .is_some_and(|i| p.partition_index >= 0 && p.partition_index < i.partition_count());
            codes[slot] = if !readable {
                ErrorCode::TOPIC_AUTHORIZATION_FAILED
            } else if !known {
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
            } else {
                pending.push(slot);
                offsets.push(OffsetToCommit {
                    topic: t.name.clone(),
                    topic_id: topic.map(|i| i.id).unwrap_or_default(),
                    partition: p.partition_index,
                    offset: p.committed_offset,
                    leader_epoch: p.committed_leader_epoch,
                    metadata: p.committed_metadata.clone(),
                });
                ErrorCode::NONE
            };
            slot += 1;
        }
    }
    if offsets.is_empty() {
        return;
    }
    let decided = match verify(ctx, req, version).await {
        Err(code) => vec![older_clients(code, version); offsets.len()],
        Ok(()) => {
            let commit = TxnOffsetCommit {
                group_id: &req.group_id,
                producer_id: req.producer_id,
                member_id: &req.member_id,
                group_instance_id: req.group_instance_id.as_deref(),
                generation_id_or_member_epoch: req.generation_id_or_member_epoch,
                api_version: version,
                offsets: &offsets,
            };
            let shard = ctx.server.coordinators.for_group(&req.group_id);
            match shard
                .call(|s, now| s.commit_transactional_offsets(&commit, now))
                .await
            {
                Ok(Ok(codes)) => codes,
                Ok(Err(e)) => vec![e.code; offsets.len()],
                Err(e) => vec![e.error_code(); offsets.len()],
            }
        }
    };
    for (slot, code) in pending.into_iter().zip(decided) {
        codes[slot] = code;
    }
}

/// The producer's transaction holds the group's `__consumer_offsets` partition (from v5: is
/// made to hold it).
async fn verify(
    ctx: &RequestContext<'_>,
    req: &TxnOffsetCommitRequest,
    version: i16,
) -> Result<(), ErrorCode> {
    let coordinators = &ctx.server.coordinators;
    let partition = [(
        CONSUMER_OFFSETS.to_owned(),
        coordinators.offsets_partition(&req.group_id),
    )];
    let id = req.transactional_id.as_str();
    let (pid, epoch) = (req.producer_id, req.producer_epoch);
    if version >= TV2_VERSION {
        let added = coordinators
            .for_transactional_id(id)
            .call(|s, now| s.add_partitions_to_transaction(id, pid, epoch, &partition, TV_2, now))
            .await
            .map_err(|e| e.error_code())?;
        return match added {
            ErrorCode::NONE => Ok(()),
            ErrorCode::PRODUCER_FENCED => Err(ErrorCode::INVALID_PRODUCER_EPOCH),
            other => Err(other),
        };
    }
    let codes = coordinators
        .for_transactional_id(id)
        .read(|s| s.verify_partitions_in_transaction(id, pid, epoch, &partition))
        .await
        .map_err(|e| e.error_code())?;
    match codes.first().copied().unwrap_or(ErrorCode::NONE) {
        ErrorCode::NONE => Ok(()),
        ErrorCode::TRANSACTION_ABORTABLE => Err(ErrorCode::INVALID_TXN_STATE),
        // As Kafka's verification answers a producer.
        ErrorCode::PRODUCER_FENCED => Err(ErrorCode::INVALID_PRODUCER_EPOCH),
        other => Err(other),
    }
}

/// The authorization matrix's rows of TxnOffsetCommit.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    use kcoord_wire::messages::txn_offset_commit_request::{
        TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
    };
    let request = TxnOffsetCommitRequest {
        transactional_id: TRANSACTIONAL_ID.into(),
        group_id: GROUP.into(),
        producer_id: 1,
        producer_epoch: 0,
        topics: vec![TxnOffsetCommitRequestTopic {
            name: TOPIC.into(),
            partitions: vec![TxnOffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: 5,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    vec![row!(TxnOffsetCommit 3 on Broker, request,
            needs [(Write, TransactionalId, TRANSACTIONAL_ID), (Read, Group, GROUP), (Read, Topic, TOPIC)],
            TxnOffsetCommitResponse => |r| code(r.topics[0].partitions[0].error_code),
            allowed "INVALID_PRODUCER_ID_MAPPING", denied "TRANSACTIONAL_ID_AUTHORIZATION_FAILED")]
}
