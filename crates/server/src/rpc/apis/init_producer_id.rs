//! InitProducerId (key 22), v0-5, for idempotent producers, after Kafka's
//! `KafkaApis.handleInitProducerIdRequest` and `TransactionCoordinator.handleInitProducerId`
//! without a transactional id: a new producer id with epoch 0 every time (ids from blocks the
//! controller recorded, `producer_ids.rs`, so none repeats across restarts). The timeout and
//! any producer id or epoch sent are ignored, as Kafka ignores them on this path.
//!
//! Transactions are not supported: a transactional id is answered UNSUPPORTED_VERSION (the
//! response has no message field; a Java producer reaches this only without FindCoordinator,
//! which explains the refusal, see `find_coordinator.rs`).

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
    _version: i16,
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
    match req.transactional_id.as_deref() {
        Some("") => return refuse(ErrorCode::INVALID_REQUEST),
        Some(id) => {
            warn!(peer = %ctx.peer, transactional_id = id, "transactional InitProducerId refused: {}", crate::rpc::apis::find_coordinator::transactions_unsupported(id));
            return refuse(ErrorCode::UNSUPPORTED_VERSION);
        }
        None => {}
    }
    match ctx.server.producer_ids.next(&ctx.server.controller).await {
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
    }
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
        // Allowed, a transactional id is refused: kcoord has no transactions (README).
        row!(InitProducerId ("transactional") 4 on Broker, init_producer_id(Some(TRANSACTIONAL_ID)),
            needs [(Write, TransactionalId, TRANSACTIONAL_ID)],
            InitProducerIdResponse => |r| code(r.error_code),
            allowed "UNSUPPORTED_VERSION", denied "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
    ]
}
