//! EndTxn (key 26), v0-4, after Kafka's `KafkaApis.handleEndTxnRequest`: WRITE on the
//! transactional id, then the transactional id's shard decides commit or abort
//! (`kcoord_coordinator::transactions`) and the marker task writes the markers. The answer
//! comes once the decision is in the shard's log, as Kafka answers once PrepareCommit or
//! PrepareAbort is written. v5 (transaction version 2) is not served: `transaction.version`
//! is not finalized here.

use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::{EndTxnRequest, EndTxnResponse};
use kcoord_wire::ErrorCode;

use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;

/// EndTxn as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::EndTxn, 0, 4).asks(&[Check::new(
    AclOperation::Write,
    ResourceType::TransactionalId,
)]);

serve!(async handle);

pub async fn handle(ctx: &RequestContext<'_>, req: EndTxnRequest, version: i16) -> EndTxnResponse {
    let error = end(ctx, &req).await;
    EndTxnResponse {
        throttle_time_ms: 0,
        error_code: older_clients(error, version).code(),
        producer_id: -1,
        producer_epoch: -1,
        ..Default::default()
    }
}

async fn end(ctx: &RequestContext<'_>, req: &EndTxnRequest) -> ErrorCode {
    let id = req.transactional_id.as_str();
    if !authorize(ctx, AclOperation::Write, ResourceType::TransactionalId, id) {
        return ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
    }
    let (producer_id, epoch, commit) = (req.producer_id, req.producer_epoch, req.committed);
    let shard = ctx.server.coordinators.for_transactional_id(id);
    match shard
        .call(|s, now| s.end_transaction(id, producer_id, epoch, commit, now))
        .await
    {
        Ok(code) => {
            if code == ErrorCode::NONE {
                ctx.server.coordinators.wake_markers();
            }
            code
        }
        Err(e) => e.error_code(),
    }
}

/// Clients before v2 of the transaction APIs know INVALID_PRODUCER_EPOCH, not PRODUCER_FENCED
/// (Kafka maps it the same way).
pub(crate) fn older_clients(error: ErrorCode, version: i16) -> ErrorCode {
    if version < 2 && error == ErrorCode::PRODUCER_FENCED {
        ErrorCode::INVALID_PRODUCER_EPOCH
    } else {
        error
    }
}

/// The authorization matrix's rows of EndTxn.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        // No producer has this transactional id: allowed, the coordinator says so.
        row!(EndTxn 3 on Broker, EndTxnRequest {
                transactional_id: TRANSACTIONAL_ID.into(),
                producer_id: 1,
                producer_epoch: 0,
                committed: true,
                ..Default::default()
            },
            needs [(Write, TransactionalId, TRANSACTIONAL_ID)],
            EndTxnResponse => |r| code(r.error_code),
            allowed "INVALID_PRODUCER_ID_MAPPING", denied "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
    ]
}
