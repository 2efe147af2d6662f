//! EndTxn (key 26), v0-5, after Kafka's `KafkaApis.handleEndTxnRequest`: WRITE on the
//! transactional id, then the transactional id's shard decides commit or abort
//! (`kcoord_coordinator::transactions`) and the marker task writes the markers. The answer
//! comes once the decision is in the shard's log, as Kafka answers once PrepareCommit or
//! PrepareAbort is written. v5 is transaction version 2: the epoch is bumped at every EndTxn
//! and the answer carries the producer id and epoch to go on with.

use kcoord_coordinator::transactions::{EndTxn, EndTxnResult, TV_2};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::{EndTxnRequest, EndTxnResponse};
use kcoord_wire::ErrorCode;
use tracing::warn;

use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;

/// EndTxn as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::EndTxn, 0, 5).asks(&[Check::new(
    AclOperation::Write,
    ResourceType::TransactionalId,
)]);

serve!(async handle);

/// The first version of transaction version 2.
const TV2_VERSION: i16 = 5;

pub async fn handle(ctx: &RequestContext<'_>, req: EndTxnRequest, version: i16) -> EndTxnResponse {
    let (error, producer_id, producer_epoch) = end(ctx, &req, version).await;
    EndTxnResponse {
        throttle_time_ms: 0,
        error_code: older_clients(error, version).code(),
        producer_id,
        producer_epoch,
        ..Default::default()
    }
}

async fn end(ctx: &RequestContext<'_>, req: &EndTxnRequest, version: i16) -> (ErrorCode, i64, i16) {
    let id = req.transactional_id.as_str();
    if !authorize(ctx, AclOperation::Write, ResourceType::TransactionalId, id) {
        return (ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, -1);
    }
    let mut end = EndTxn {
        transactional_id: id,
        producer_id: req.producer_id,
        producer_epoch: req.producer_epoch,
        commit: req.committed,
        transaction_version: if version >= TV2_VERSION { TV_2 } else { 0 },
        fresh_producer_id: None,
    };
    let shard = ctx.server.coordinators.for_transactional_id(id);
    // At most twice: an exhausted epoch needs one fresh producer id.
    for _ in 0..2 {
        match shard.call(|s, now| s.end_txn(&end, now)).await {
            Ok(EndTxnResult::Ended {
                error,
                producer_id,
                producer_epoch,
            }) => {
                if error == ErrorCode::NONE {
                    ctx.server.coordinators.wake_markers();
                }
                return (error, producer_id, producer_epoch);
            }
            Ok(EndTxnResult::NeedsProducerId) => {
                match ctx.server.producer_ids.next(&ctx.server.controller).await {
                    Ok(fresh) => end.fresh_producer_id = Some(fresh),
                    Err(e) => {
                        warn!(error = %e, "EndTxn could not allocate a producer id");
                        return (ErrorCode::COORDINATOR_LOAD_IN_PROGRESS, -1, -1);
                    }
                }
            }
            Err(e) => return (e.error_code(), -1, -1),
        }
    }
    (ErrorCode::CONCURRENT_TRANSACTIONS, -1, -1)
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
