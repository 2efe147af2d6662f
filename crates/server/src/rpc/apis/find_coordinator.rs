//! FindCoordinator (key 10), v0-6, after Kafka's `KafkaApis.handleFindCoordinatorRequest`.
//!
//! This node coordinates every group (KeyType 0, which streams groups use too) and every
//! transactional id (KeyType 1). Share (2) coordinators do not exist:
//! COORDINATOR_NOT_AVAILABLE per key. A share key before v6 is INVALID_REQUEST per key, and an
//! unknown key type fails the whole request with INVALID_REQUEST, as in Kafka. v0-3 carry one
//! key and a top-level answer whose ErrorMessage is Kafka's `Errors.message()` ("NONE" on
//! success); v4+ batch the keys.
//!
//! Authorization first, per key: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) or on the
//! transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).

use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::find_coordinator_response::Coordinator;
use kcoord_wire::messages::{FindCoordinatorRequest, FindCoordinatorResponse};
use kcoord_wire::ErrorCode;

use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::runtime::cluster::Node;
use crate::state::RequestContext;

/// FindCoordinator as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::FindCoordinator, 0, 6)
    .asks(&[
        Check::new(AclOperation::Describe, ResourceType::Group),
        Check::new(AclOperation::Describe, ResourceType::TransactionalId),
    ])
    .rewritten_in_gateway();

serve!(sync handle);

const GROUP: i8 = 0;
const TRANSACTION: i8 = 1;
const SHARE: i8 = 2;

/// The first version with `CoordinatorKeys`.
const MIN_BATCHED_VERSION: i16 = 4;

pub fn handle(
    ctx: &RequestContext<'_>,
    req: FindCoordinatorRequest,
    version: i16,
) -> FindCoordinatorResponse {
    if version < MIN_BATCHED_VERSION {
        let (error, node) = match coordinator(ctx, req.key_type, &req.key, version) {
            Ok(node) => (ErrorCode::NONE, node),
            Err(error) => (error, Node::none()),
        };
        return FindCoordinatorResponse {
            throttle_time_ms: 0,
            error_code: error.code(),
            error_message: Some(message(error, &req.key)),
            node_id: node.id,
            host: node.host,
            port: node.port,
            ..Default::default()
        };
    }

    let unknown_type = !matches!(req.key_type, GROUP | TRANSACTION | SHARE);
    let coordinators = req
        .coordinator_keys
        .into_iter()
        .map(|key| {
            let (error, node) = match coordinator(ctx, req.key_type, &key, version) {
                Ok(node) => (ErrorCode::NONE, node),
                Err(error) => (error, Node::none()),
            };
            let error_message = if unknown_type {
                message(error, &key)
            } else {
                String::new()
            };
            Coordinator {
                key,
                node_id: node.id,
                host: node.host,
                port: node.port,
                error_code: error.code(),
                // Kafka's batched path leaves the message at its default, "" (not null),
                // except when the whole request failed (`prepareErrorResponse`).
                error_message: Some(error_message),
                ..Default::default()
            }
        })
        .collect();
    FindCoordinatorResponse {
        throttle_time_ms: 0,
        coordinators,
        ..Default::default()
    }
}

/// Kafka's `getCoordinator`: DESCRIBE on the group or the transactional id comes first.
fn coordinator(
    ctx: &RequestContext<'_>,
    key_type: i8,
    key: &str,
    version: i16,
) -> Result<Node, ErrorCode> {
    match key_type {
        GROUP if !authorize(ctx, AclOperation::Describe, ResourceType::Group, key) => {
            Err(ErrorCode::GROUP_AUTHORIZATION_FAILED)
        }
        TRANSACTION
            if !authorize(
                ctx,
                AclOperation::Describe,
                ResourceType::TransactionalId,
                key,
            ) =>
        {
            Err(ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        }
        GROUP | TRANSACTION => Ok(ctx.this_node()),
        SHARE if version < 6 => Err(ErrorCode::INVALID_REQUEST),
        SHARE => Err(ErrorCode::COORDINATOR_NOT_AVAILABLE),
        _ => Err(ErrorCode::INVALID_REQUEST),
    }
}

/// The answer's ErrorMessage: Kafka's.
fn message(error: ErrorCode, _key: &str) -> String {
    kafka_message(error).to_owned()
}

/// Kafka's `Errors.message()`: the exception's default message, or the enum name for NONE.
fn kafka_message(error: ErrorCode) -> &'static str {
    if error == ErrorCode::NONE {
        "NONE"
    } else {
        error.message()
    }
}

/// The authorization matrix's rows of FindCoordinator ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        row!(FindCoordinator ("group") 4 on Broker, find_coordinator(0, GROUP),
            needs [(Describe, Group, GROUP)],
            FindCoordinatorResponse => |r| format!("{} node {}", code(r.coordinators[0].error_code), r.coordinators[0].node_id),
            allowed "NONE node 7", denied "GROUP_AUTHORIZATION_FAILED node -1"),
        row!(FindCoordinator ("transaction") 4 on Broker, find_coordinator(1, TRANSACTIONAL_ID),
            needs [(Describe, TransactionalId, TRANSACTIONAL_ID)],
            FindCoordinatorResponse => |r| format!("{} node {}", code(r.coordinators[0].error_code), r.coordinators[0].node_id),
            allowed "NONE node 7", denied "TRANSACTIONAL_ID_AUTHORIZATION_FAILED node -1"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ListenerKind;
    use crate::rpc::testing::{server, with_ctx, NODE_ID};
    use kcoord_wire::Encodable;

    fn call(req: FindCoordinatorRequest, version: i16) -> FindCoordinatorResponse {
        let resp = with_ctx(&server(), ListenerKind::Broker, |ctx| {
            handle(ctx, req, version)
        });
        let mut buf = bytes::BytesMut::new();
        resp.encode(&mut buf, version)
            .unwrap_or_else(|e| panic!("v{version}: {e}"));
        resp
    }

    fn single(key_type: i8) -> FindCoordinatorRequest {
        FindCoordinatorRequest {
            key: "orders-app".to_owned(),
            key_type,
            ..Default::default()
        }
    }

    fn batched(key_type: i8, keys: &[&str]) -> FindCoordinatorRequest {
        FindCoordinatorRequest {
            key_type,
            coordinator_keys: keys.iter().map(|k| (*k).to_owned()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn groups_are_coordinated_here_v0_to_v3() {
        for version in 0..=3 {
            let resp = call(single(GROUP), version);
            assert_eq!(
                (resp.error_code, resp.node_id, resp.host.as_str(), resp.port),
                (0, NODE_ID, "broker.example", 9092)
            );
            assert_eq!(resp.error_message.as_deref(), Some("NONE"));
            assert!(resp.coordinators.is_empty());
        }
    }

    #[test]
    fn groups_are_coordinated_here_batched() {
        for version in 4..=6 {
            let resp = call(batched(GROUP, &["a", "b", "c"]), version);
            let got: Vec<(&str, i32, &str, i32, i16)> = resp
                .coordinators
                .iter()
                .map(|c| {
                    (
                        c.key.as_str(),
                        c.node_id,
                        c.host.as_str(),
                        c.port,
                        c.error_code,
                    )
                })
                .collect();
            assert_eq!(
                got,
                vec![
                    ("a", NODE_ID, "broker.example", 9092, 0),
                    ("b", NODE_ID, "broker.example", 9092, 0),
                    ("c", NODE_ID, "broker.example", 9092, 0)
                ]
            );
            assert!(resp
                .coordinators
                .iter()
                .all(|c| c.error_message.as_deref() == Some("")));
        }
    }

    #[test]
    fn transactions_are_coordinated_here() {
        let resp = call(single(TRANSACTION), 3);
        assert_eq!(
            (resp.error_code, resp.node_id, resp.host.as_str(), resp.port),
            (0, NODE_ID, "broker.example", 9092)
        );
        let resp = call(batched(TRANSACTION, &["tx"]), 4);
        let c = &resp.coordinators[0];
        assert_eq!(
            (c.error_code, c.node_id, c.error_message.as_deref()),
            (0, NODE_ID, Some(""))
        );
    }

    #[test]
    fn share_coordinators_are_not_available() {
        let resp = call(batched(SHARE, &["g:topic:0"]), 6);
        assert_eq!(resp.coordinators[0].error_code, 15);
        // Share keys need v6.
        let resp = call(batched(SHARE, &["g:topic:0"]), 5);
        assert_eq!(
            resp.coordinators[0].error_code,
            ErrorCode::INVALID_REQUEST.code()
        );
    }

    #[test]
    fn unknown_key_types_are_invalid_requests() {
        let resp = call(single(9), 2);
        assert_eq!((resp.error_code, resp.node_id, resp.port), (42, -1, -1));
        let resp = call(batched(-1, &["a", "b"]), 6);
        assert_eq!(resp.coordinators.len(), 2);
        assert!(resp
            .coordinators
            .iter()
            .all(|c| c.error_code == 42 && c.error_message.is_some() && c.port == -1));
    }
}
