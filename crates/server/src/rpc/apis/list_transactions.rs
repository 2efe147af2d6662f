//! ListTransactions (key 66), v0-2, after Kafka's `KafkaApis.handleListTransactionsRequest` and
//! `TransactionStateManager.listTransactionStates`, over every shard: COORDINATOR_LOAD_IN_PROGRESS
//! while a shard loads; then TransactionalIdPattern (v2+) must compile, else
//! INVALID_REGULAR_EXPRESSION; then the transactions that pass every filter (producer ids,
//! states by Kafka's names, DurationFilter (v1+): running for longer than it), sorted by
//! transactional id. State filters that name no state are listed in UnknownStateFilters and
//! match nothing. Transactional ids the principal may not DESCRIBE are left out, without an
//! error.
//!
//! Kafka compiles the pattern with `java.util.regex` and matches the whole id; kcoord uses the
//! `regex` crate anchored at both ends, which has no look-around and no back-references: such a
//! pattern is INVALID_REGULAR_EXPRESSION here.

use kcoord_coordinator::transactions::{unknown_state_filters, TransactionFilter};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::{ListTransactionsRequest, ListTransactionsResponse};
use kcoord_wire::ErrorCode;
use tracing::debug;

use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;

/// ListTransactions as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::ListTransactions, 0, 2).asks(&[Check::new(
    AclOperation::Describe,
    ResourceType::TransactionalId,
)]);

serve!(async handle);

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: ListTransactionsRequest,
    _version: i16,
) -> ListTransactionsResponse {
    let refused = |code: ErrorCode| ListTransactionsResponse {
        error_code: code.code(),
        ..Default::default()
    };
    let coordinators = &ctx.server.coordinators;
    if coordinators.all().any(|s| s.is_loading()) {
        return refused(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS);
    }
    let pattern = match id_pattern(req.transactional_id_pattern.as_deref()) {
        Ok(pattern) => pattern,
        Err(e) => {
            debug!(peer = %ctx.peer, error = %e, "ListTransactions pattern refused");
            return refused(ErrorCode::INVALID_REGULAR_EXPRESSION);
        }
    };
    let filter = TransactionFilter {
        producer_ids: &req.producer_id_filters,
        states: &req.state_filters,
        duration_ms: req.duration_filter,
    };
    let matches = |id: &str| pattern.as_ref().is_none_or(|p| p.is_match(id));
    let mut transaction_states = Vec::new();
    for shard in coordinators.all() {
        let listed = shard
            .call(|s, now| {
                kcoord_coordinator::Outcome::answer(s.list_transactions(&filter, matches, now))
            })
            .await;
        match listed {
            Ok(listed) => transaction_states.extend(listed),
            Err(e) => return refused(e.error_code()),
        }
    }
    transaction_states.retain(|t| {
        authorize(
            ctx,
            AclOperation::Describe,
            ResourceType::TransactionalId,
            &t.transactional_id,
        )
    });
    transaction_states.sort_by(|a, b| a.transactional_id.cmp(&b.transactional_id));
    ListTransactionsResponse {
        throttle_time_ms: 0,
        error_code: ErrorCode::NONE.code(),
        unknown_state_filters: unknown_state_filters(&req.state_filters),
        transaction_states,
        ..Default::default()
    }
}

/// The compiled TransactionalIdPattern; none (every id) when absent or empty, as in Kafka.
/// Matched against the whole id, as Java's `Matcher.matches`.
fn id_pattern(pattern: Option<&str>) -> Result<Option<regex::Regex>, regex::Error> {
    match pattern {
        None | Some("") => Ok(None),
        Some(p) => regex::Regex::new(&format!("^(?:{p})$")).map(Some),
    }
}

/// The authorization matrix's rows of ListTransactions.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        row!(ListTransactions 2 on Broker, ListTransactionsRequest { duration_filter: -1, ..Default::default() },
            needs [(Describe, TransactionalId, OPEN_TRANSACTION)],
            ListTransactionsResponse => |r| listed(r.error_code, r.transaction_states.iter().map(|t| t.transactional_id.as_str()), OPEN_TRANSACTION),
            allowed "open listed", denied "open left out"),
    ]
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::config::ListenerKind;
    use crate::rpc::testing::{encodes, running, Ctx};
    use crate::state::ServerState;

    /// Producer `pid` for `id` (an Empty transaction).
    async fn init(state: &ServerState, id: &str, pid: i64) {
        use kcoord_coordinator::transactions::{InitProducerId, InitProducerIdResult};
        let init = InitProducerId {
            transactional_id: id,
            transaction_timeout_ms: 60_000,
            expected: None,
            fresh_producer_id: Some(pid),
        };
        let shard = state.coordinators.for_transactional_id(id);
        let granted = shard.call(|s, now| s.init_producer_id(&init, now)).await;
        assert!(
            matches!(granted, Ok(InitProducerIdResult::Granted { .. })),
            "{granted:?}"
        );
    }

    async fn list(
        state: &ServerState,
        req: ListTransactionsRequest,
        version: i16,
    ) -> ListTransactionsResponse {
        let c = Ctx::new(state, ListenerKind::Broker);
        let resp = handle(&c.ctx(state), req, version).await;
        encodes(&resp, version);
        resp
    }

    fn ids(resp: &ListTransactionsResponse) -> Vec<(&str, i64, &str)> {
        resp.transaction_states
            .iter()
            .map(|t| {
                (
                    t.transactional_id.as_str(),
                    t.producer_id,
                    t.transaction_state.as_str(),
                )
            })
            .collect()
    }

    #[tokio::test]
    async fn every_shard_is_listed_and_the_filters_apply() {
        // Several shards, so that the ids land on more than one.
        let node = running("offsets.topic.num.partitions=4\n");
        for (id, pid) in [
            ("orders-2", 12),
            ("orders-1", 11),
            ("billing", 20),
            ("audit", 30),
        ] {
            init(&node.state, id, pid).await;
        }
        let all = ListTransactionsRequest {
            duration_filter: -1,
            ..Default::default()
        };
        let resp = list(&node.state, all.clone(), 2).await;
        assert_eq!(resp.error_code, 0);
        assert_eq!(
            ids(&resp),
            [
                ("audit", 30, "Empty"),
                ("billing", 20, "Empty"),
                ("orders-1", 11, "Empty"),
                ("orders-2", 12, "Empty")
            ]
        );
        let by_producer = ListTransactionsRequest {
            producer_id_filters: vec![20, 99],
            ..all.clone()
        };
        assert_eq!(
            ids(&list(&node.state, by_producer, 0).await),
            [("billing", 20, "Empty")]
        );
        let by_state = ListTransactionsRequest {
            state_filters: vec!["Ongoing".into(), "Frozen".into()],
            ..all.clone()
        };
        let resp = list(&node.state, by_state, 1).await;
        assert!(resp.transaction_states.is_empty());
        assert_eq!(resp.unknown_state_filters, ["Frozen"]);
        // The whole id must match, as Java's `matches`.
        let by_pattern = ListTransactionsRequest {
            transactional_id_pattern: Some("orders-\\d".into()),
            ..all.clone()
        };
        assert_eq!(ids(&list(&node.state, by_pattern, 2).await).len(), 2);
        let partial = ListTransactionsRequest {
            transactional_id_pattern: Some("orders".into()),
            ..all.clone()
        };
        assert!(list(&node.state, partial, 2)
            .await
            .transaction_states
            .is_empty());
        let invalid = ListTransactionsRequest {
            transactional_id_pattern: Some("orders-[".into()),
            ..all
        };
        let resp = list(&node.state, invalid, 2).await;
        assert_eq!(
            resp.error_code,
            ErrorCode::INVALID_REGULAR_EXPRESSION.code()
        );
        assert!(resp.transaction_states.is_empty());
    }

    #[tokio::test]
    async fn ids_the_principal_may_not_describe_are_left_out() {
        let node = running("");
        init(&node.state, "tx", 1).await;
        let (mut denied, _) = ServerState::build(
            Arc::clone(&node.state.config),
            node.state.listeners.iter().map(|l| (**l).clone()).collect(),
        );
        denied.authorizer = Some(Arc::new(crate::security::DenyAll));
        denied.coordinators = node.state.coordinators.clone();
        let resp = list(&denied, ListTransactionsRequest::default(), 0).await;
        assert_eq!((resp.error_code, resp.transaction_states.len()), (0, 0));
        assert_eq!(
            list(&node.state, ListTransactionsRequest::default(), 0)
                .await
                .transaction_states
                .len(),
            1
        );
    }

    #[tokio::test]
    async fn a_loading_shard_answers_load_in_progress() {
        let node = crate::rpc::testing::running_loading();
        let resp = list(&node.state, ListTransactionsRequest::default(), 2).await;
        assert_eq!(
            resp.error_code,
            ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.code()
        );
    }
}
