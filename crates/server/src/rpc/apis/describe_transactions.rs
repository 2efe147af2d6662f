//! DescribeTransactions (key 65), v0, after Kafka's `KafkaApis.handleDescribeTransactionsRequest`
//! and `TransactionCoordinator.handleDescribeTransactions`: for each transactional id, in
//! request order, DESCRIBE on it (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then its shard
//! describes it (`CoordinatorShard::describe_transaction`: INVALID_REQUEST for an empty id,
//! TRANSACTIONAL_ID_NOT_FOUND, COORDINATOR_LOAD_IN_PROGRESS while the shard loads). Only the
//! topics the principal may DESCRIBE are kept in the answer, as Kafka filters them.

use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::describe_transactions_response::TransactionState;
use kcoord_wire::messages::{DescribeTransactionsRequest, DescribeTransactionsResponse};
use kcoord_wire::ErrorCode;

use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;

/// DescribeTransactions as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::DescribeTransactions, 0, 0).asks(&[
    Check::new(AclOperation::Describe, ResourceType::TransactionalId),
    Check::new(AclOperation::Describe, ResourceType::Topic),
]);

serve!(async handle);

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: DescribeTransactionsRequest,
    _version: i16,
) -> DescribeTransactionsResponse {
    let mut transaction_states = Vec::with_capacity(req.transactional_ids.len());
    for id in &req.transactional_ids {
        let mut described = describe(ctx, id).await;
        described
            .topics
            .retain(|t| authorize(ctx, AclOperation::Describe, ResourceType::Topic, &t.topic));
        transaction_states.push(described);
    }
    DescribeTransactionsResponse {
        throttle_time_ms: 0,
        transaction_states,
        ..Default::default()
    }
}

async fn describe(ctx: &RequestContext<'_>, id: &str) -> TransactionState {
    let refused = |code: ErrorCode| TransactionState {
        transactional_id: id.to_owned(),
        error_code: code.code(),
        ..Default::default()
    };
    if !authorize(
        ctx,
        AclOperation::Describe,
        ResourceType::TransactionalId,
        id,
    ) {
        return refused(ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
    }
    let shard = ctx.server.coordinators.for_transactional_id(id);
    match shard.read(|s| s.describe_transaction(id)).await {
        Ok(described) => described,
        Err(e) => refused(e.error_code()),
    }
}

/// The authorization matrix's rows of DescribeTransactions: the transactional id decides the
/// error; the topics of a described transaction are kept or left out by DESCRIBE on each.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    let request = |id: &str| DescribeTransactionsRequest {
        transactional_ids: vec![id.into()],
        ..Default::default()
    };
    vec![
        row!(DescribeTransactions ("transactional id") 0 on Broker, request(OPEN_TRANSACTION),
            needs [(Describe, TransactionalId, OPEN_TRANSACTION)],
            DescribeTransactionsResponse => |r| code(r.transaction_states[0].error_code),
            allowed "NONE", denied "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
        row!(DescribeTransactions ("topics") 0 on Broker, request(OPEN_TRANSACTION),
            also [(Describe, TransactionalId, OPEN_TRANSACTION)],
            needs [(Describe, Topic, TOPIC)],
            DescribeTransactionsResponse => |r| {
                let t = &r.transaction_states[0];
                listed(t.error_code, t.topics.iter().map(|t| t.topic.as_str()), TOPIC)
            },
            allowed "t listed", denied "t left out"),
    ]
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::config::ListenerKind;
    use crate::rpc::testing::{create_topic, encodes, running, Ctx};
    use crate::state::ServerState;

    /// "tx" with producer 1 and a transaction holding `t`-0 and `t`-1.
    async fn open(state: &ServerState) {
        use kcoord_coordinator::transactions::{InitProducerId, InitProducerIdResult};
        create_topic(state, "t", 2).await;
        let shard = state.coordinators.for_transactional_id("tx");
        let init = InitProducerId {
            transactional_id: "tx",
            transaction_timeout_ms: 60_000,
            expected: None,
            fresh_producer_id: Some(1),
        };
        let granted = shard.call(|s, now| s.init_producer_id(&init, now)).await;
        assert!(matches!(granted, Ok(InitProducerIdResult::Granted { .. })));
        let tps = [("t".to_owned(), 1), ("t".to_owned(), 0)];
        let added = shard
            .call(|s, now| s.add_partitions_to_transaction("tx", 1, 0, &tps, 0, now))
            .await;
        assert_eq!(added, Ok(ErrorCode::NONE));
    }

    async fn describe_all(state: &ServerState, ids: &[&str]) -> DescribeTransactionsResponse {
        let c = Ctx::new(state, ListenerKind::Broker);
        let req = DescribeTransactionsRequest {
            transactional_ids: ids.iter().map(|id| (*id).to_owned()).collect(),
            ..Default::default()
        };
        let resp = handle(&c.ctx(state), req, 0).await;
        encodes(&resp, 0);
        resp
    }

    #[tokio::test]
    async fn each_id_is_described_in_request_order() {
        let node = running("");
        open(&node.state).await;
        let resp = describe_all(&node.state, &["nope", "tx", ""]).await;
        let codes: Vec<(&str, i16)> = resp
            .transaction_states
            .iter()
            .map(|t| (t.transactional_id.as_str(), t.error_code))
            .collect();
        assert_eq!(codes, [("nope", 105), ("tx", 0), ("", 42)]);
        let tx = &resp.transaction_states[1];
        assert_eq!(
            (
                tx.producer_id,
                tx.producer_epoch,
                tx.transaction_state.as_str()
            ),
            (1, 0, "Ongoing")
        );
        assert_eq!(tx.transaction_timeout_ms, 60_000);
        assert!(tx.transaction_start_time_ms > 0);
        assert_eq!(tx.topics.len(), 1);
        assert_eq!(
            (tx.topics[0].topic.as_str(), &tx.topics[0].partitions[..]),
            ("t", &[0, 1][..])
        );
    }

    #[tokio::test]
    async fn refused_ids_are_not_looked_up() {
        let node = running("");
        open(&node.state).await;
        let (mut denied, _) = ServerState::build(
            Arc::clone(&node.state.config),
            node.state.listeners.iter().map(|l| (**l).clone()).collect(),
        );
        denied.authorizer = Some(Arc::new(crate::security::DenyAll));
        // Its shards are not running: an id looked up would answer COORDINATOR_NOT_AVAILABLE.
        let resp = describe_all(&denied, &["tx"]).await;
        assert_eq!(resp.transaction_states[0].error_code, 53);
        assert_eq!(resp.transaction_states[0].producer_id, 0);
    }

    #[tokio::test]
    async fn a_loading_shard_answers_load_in_progress() {
        let node = crate::rpc::testing::running_loading();
        let resp = describe_all(&node.state, &["tx"]).await;
        assert_eq!(resp.transaction_states[0].error_code, 14);
    }
}
