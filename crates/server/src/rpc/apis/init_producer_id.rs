//! InitProducerId (key 22), v0-5, after Kafka's `KafkaApis.handleInitProducerIdRequest` and
//! `TransactionCoordinator.handleInitProducerId`. Without a transactional id: a new producer id
//! with epoch 0 every time (ids from blocks the controller recorded, `producer_ids.rs`, so none
//! repeats across restarts); the timeout and any producer id or epoch sent are ignored, as
//! Kafka ignores them on this path. With one: the transactional id's shard decides
//! (`kcoord_coordinator::transactions`), asking for a fresh producer id when it needs one.

use kcoord_coordinator::transactions::{InitProducerId, InitProducerIdResult};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::{InitProducerIdRequest, InitProducerIdResponse};
use kcoord_wire::ErrorCode;
use tracing::{info, warn};

use crate::rpc::authorize::{authorize, authorize_any, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;

/// InitProducerId as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::InitProducerId, 0, 5).asks(&[
    Check::new(AclOperation::IdempotentWrite, ResourceType::Cluster),
    Check::new(AclOperation::Write, ResourceType::Topic),
    Check::new(AclOperation::Write, ResourceType::TransactionalId),
]);

serve!(async handle);

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: InitProducerIdRequest,
    version: i16,
) -> InitProducerIdResponse {
    let refuse = |code: ErrorCode| InitProducerIdResponse {
        throttle_time_ms: 0,
        error_code: code.code(),
        producer_id: -1,
        producer_epoch: -1,
        ..Default::default()
    };
    // Authorization comes first, as in Kafka: WRITE on the transactional id, or for an
    // idempotent producer IDEMPOTENT_WRITE on the cluster or WRITE on some topic.
    match req.transactional_id.as_deref() {
        Some(id)
            if !id.is_empty()
                && !authorize(ctx, AclOperation::Write, ResourceType::TransactionalId, id) =>
        {
            return refuse(ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
        }
        Some(_) => {}
        None => {
            let cluster = authorize(
                ctx,
                AclOperation::IdempotentWrite,
                ResourceType::Cluster,
                crate::rpc::apis::broker_registration::KAFKA_CLUSTER,
            );
            if !cluster && !authorize_any(ctx, AclOperation::Write, ResourceType::Topic) {
                return refuse(ErrorCode::CLUSTER_AUTHORIZATION_FAILED);
            }
        }
    }
    if (req.producer_id == -1) != (req.producer_epoch == -1) {
        return refuse(ErrorCode::INVALID_REQUEST);
    }
    let expected = (req.producer_id != -1).then_some((req.producer_id, req.producer_epoch));
    match req.transactional_id.as_deref() {
        Some(id) => {
            let (error, producer_id, producer_epoch) =
                transactional(ctx, id, req.transaction_timeout_ms, expected).await;
            // Clients before v4 know no PRODUCER_FENCED.
            let error = if version < 4 && error == ErrorCode::PRODUCER_FENCED {
                ErrorCode::INVALID_PRODUCER_EPOCH
            } else {
                error
            };
            InitProducerIdResponse {
                throttle_time_ms: 0,
                error_code: error.code(),
                producer_id,
                producer_epoch,
                ..Default::default()
            }
        }
        None => match ctx.server.producer_ids.next(&ctx.server.controller).await {
            Ok(producer_id) => {
                info!(peer = %ctx.peer, producer_id, "InitProducerId");
                InitProducerIdResponse {
                    throttle_time_ms: 0,
                    error_code: 0,
                    producer_id,
                    producer_epoch: 0,
                    ..Default::default()
                }
            }
            // Kafka answers a missing block with COORDINATOR_LOAD_IN_PROGRESS; clients retry.
            Err(e) => {
                warn!(error = %e, "InitProducerId could not allocate an id");
                refuse(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS)
            }
        },
    }
}

/// The transactional path: (error, producer id, epoch).
async fn transactional(
    ctx: &RequestContext<'_>,
    id: &str,
    timeout_ms: i32,
    expected: Option<(i64, i16)>,
) -> (ErrorCode, i64, i16) {
    let shard = ctx.server.coordinators.for_transactional_id(id);
    let mut req = InitProducerId {
        transactional_id: id,
        transaction_timeout_ms: timeout_ms,
        expected,
        fresh_producer_id: None,
    };
    // At most twice: a new id or a rotation needs one fresh producer id.
    for _ in 0..3 {
        let decided = shard.call(|s, now| s.init_producer_id(&req, now)).await;
        match decided {
            Ok(InitProducerIdResult::Granted {
                producer_id,
                producer_epoch,
            }) => {
                info!(peer = %ctx.peer, transactional_id = id, producer_id, producer_epoch, "InitProducerId");
                return (ErrorCode::NONE, producer_id, producer_epoch);
            }
            Ok(InitProducerIdResult::Refused(code)) => {
                if code == ErrorCode::CONCURRENT_TRANSACTIONS {
                    // An ongoing transaction was aborted to fence its producer.
                    ctx.server.coordinators.wake_markers();
                }
                return (code, -1, -1);
            }
            Ok(InitProducerIdResult::NeedsProducerId) => {
                match ctx.server.producer_ids.next(&ctx.server.controller).await {
                    Ok(fresh) => req.fresh_producer_id = Some(fresh),
                    Err(e) => {
                        warn!(error = %e, "InitProducerId could not allocate an id");
                        return (ErrorCode::COORDINATOR_LOAD_IN_PROGRESS, -1, -1);
                    }
                }
            }
            Err(e) => return (e.error_code(), -1, -1),
        }
    }
    (ErrorCode::CONCURRENT_TRANSACTIONS, -1, -1)
}

/// The authorization matrix's rows of InitProducerId ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        row!(InitProducerId ("idempotent, cluster") 4 on Broker, init_producer_id(None),
            needs [(IdempotentWrite, Cluster, CLUSTER)],
            InitProducerIdResponse => |r| code(r.error_code),
            allowed "NONE", denied "CLUSTER_AUTHORIZATION_FAILED"),
        row!(InitProducerId ("idempotent, a topic") 4 on Broker, init_producer_id(None),
            needs [(Write, Topic, TOPIC)],
            InitProducerIdResponse => |r| code(r.error_code),
            allowed "NONE", denied "CLUSTER_AUTHORIZATION_FAILED"),
        row!(InitProducerId ("transactional") 4 on Broker, init_producer_id(Some(TRANSACTIONAL_ID)),
            needs [(Write, TransactionalId, TRANSACTIONAL_ID)],
            InitProducerIdResponse => |r| code(r.error_code),
            allowed "NONE", denied "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
    ]
}
