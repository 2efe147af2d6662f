//! AddOffsetsToTxn (key 25), v0-4, after Kafka's `KafkaApis.handleAddOffsetsToTxnRequest`:
//! WRITE on the transactional id, READ on the group, then the group joins the transaction as the
//! `__consumer_offsets` partition Kafka would keep it on, so the transaction's marker settles
//! the offsets TxnOffsetCommit wrote on the group's shard.

use kcoord_coordinator::transactions::CONSUMER_OFFSETS;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::{AddOffsetsToTxnRequest, AddOffsetsToTxnResponse};
use kcoord_wire::ErrorCode;

use crate::rpc::apis::end_txn::older_clients;
use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;

/// AddOffsetsToTxn as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::AddOffsetsToTxn, 0, 4).asks(&[
    Check::new(AclOperation::Write, ResourceType::TransactionalId),
    Check::new(AclOperation::Read, ResourceType::Group),
]);

serve!(async handle);

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: AddOffsetsToTxnRequest,
    version: i16,
) -> AddOffsetsToTxnResponse {
    let error = add(ctx, &req).await;
    AddOffsetsToTxnResponse {
        throttle_time_ms: 0,
        error_code: older_clients(error, version).code(),
        ..Default::default()
    }
}

async fn add(ctx: &RequestContext<'_>, req: &AddOffsetsToTxnRequest) -> ErrorCode {
    let id = req.transactional_id.as_str();
    if !authorize(ctx, AclOperation::Write, ResourceType::TransactionalId, id) {
        return ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
    }
    if !authorize(ctx, AclOperation::Read, ResourceType::Group, &req.group_id) {
        return ErrorCode::GROUP_AUTHORIZATION_FAILED;
    }
    let coordinators = &ctx.server.coordinators;
    let partition = [(
        CONSUMER_OFFSETS.to_owned(),
        coordinators.offsets_partition(&req.group_id),
    )];
    let (producer_id, epoch) = (req.producer_id, req.producer_epoch);
    match coordinators
        .for_transactional_id(id)
        .call(|s, now| s.add_partitions_to_transaction(id, producer_id, epoch, &partition, 0, now))
        .await
    {
        Ok(code) => code,
        Err(e) => e.error_code(),
    }
}

/// The authorization matrix's rows of AddOffsetsToTxn.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![row!(AddOffsetsToTxn 3 on Broker, AddOffsetsToTxnRequest {
                transactional_id: TRANSACTIONAL_ID.into(),
                producer_id: 1,
                producer_epoch: 0,
                group_id: GROUP.into(),
                ..Default::default()
            },
            needs [(Write, TransactionalId, TRANSACTIONAL_ID), (Read, Group, GROUP)],
            AddOffsetsToTxnResponse => |r| code(r.error_code),
            allowed "INVALID_PRODUCER_ID_MAPPING", denied "TRANSACTIONAL_ID_AUTHORIZATION_FAILED")]
}
