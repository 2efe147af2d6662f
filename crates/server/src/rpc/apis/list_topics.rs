//! ListTopics (key 96, KIP-142), v0-1, on broker listeners. v0 is exactly the proposal's
//! non-flexible layout (request `list_internal`; response `error_code`, `[name, internal]`);
//! v1 is its flexible encoding with ThrottleTimeMs first (docs/decisions.md).
//!
//! Every topic of the controller's published catalog with its internal flag, by name;
//! internal topics only when ListInternal is true (R80, R81); topics the principal may not
//! DESCRIBE are left out, without an error, as Metadata leaves them out of an all-topics
//! answer (R82).
//!
//! In gateway mode the topics are the upstream cluster's, from its Metadata for all topics
//! (docs/gateway.md); an upstream that does not answer is UNKNOWN_SERVER_ERROR, logged.

use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::list_topics_response::TopicListing;
use kcoord_wire::messages::{ListTopicsRequest, ListTopicsResponse};
use kcoord_wire::ErrorCode;

use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;

/// ListTopics as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::ListTopics, 0, 1)
    .asks(&[Check::new(AclOperation::Describe, ResourceType::Topic)])
    .local_in_gateway();

serve!(async handle);

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: ListTopicsRequest,
    _version: i16,
) -> ListTopicsResponse {
    let all: Vec<(String, bool)> = match &ctx.server.gateway {
        Some(gateway) => match gateway.topics().await {
            Ok(topics) => topics,
            Err(e) => {
                gateway.log_failure("any", "cannot list the upstream topics", &e);
                return response(ErrorCode::UNKNOWN_SERVER_ERROR, Vec::new());
            }
        },
        None => ctx
            .server
            .topics
            .snapshot()
            .iter()
            .map(|t| (t.name.clone(), t.is_internal()))
            .collect(),
    };
    let topics = all
        .into_iter()
        .filter(|(_, internal)| req.list_internal || !internal)
        .filter(|(name, _)| authorize(ctx, AclOperation::Describe, ResourceType::Topic, name))
        .map(|(name, internal)| TopicListing {
            name,
            internal,
            ..Default::default()
        })
        .collect();
    response(ErrorCode::NONE, topics)
}

fn response(error: ErrorCode, topics: Vec<TopicListing>) -> ListTopicsResponse {
    ListTopicsResponse {
        throttle_time_ms: 0,
        error_code: error.code(),
        topics,
        ..Default::default()
    }
}

/// The authorization matrix's rows of ListTopics ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![row!(ListTopics 1 on Broker, ListTopicsRequest::default(),
            needs [(Describe, Topic, TOPIC)],
            ListTopicsResponse => |r| listed(r.error_code, r.topics.iter().map(|t| t.name.as_str()), TOPIC),
            allowed "t listed", denied "t left out")]
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bytes::BytesMut;
    use kcoord_wire::{Decodable, Encodable};

    use super::*;
    use crate::config::ListenerKind;
    use crate::rpc::testing::{create_topic, running, Ctx};
    use crate::security::Authorizer;
    use crate::state::ServerState;

    /// DESCRIBE denied on topics whose name starts with `secret`; everything else allowed.
    #[derive(Debug)]
    struct DenySecretTopics;

    impl Authorizer for DenySecretTopics {
        fn authorize(
            &self,
            _: &crate::security::Requester<'_>,
            op: AclOperation,
            resource: ResourceType,
            name: &str,
        ) -> bool {
            !(op == AclOperation::Describe
                && resource == ResourceType::Topic
                && name.starts_with("secret"))
        }
    }

    async fn call(state: &ServerState, list_internal: bool, version: i16) -> Vec<(String, bool)> {
        let req = ListTopicsRequest {
            list_internal,
            ..Default::default()
        };
        let ctx = Ctx::new(state, ListenerKind::Broker);
        let resp = handle(&ctx.ctx(state), req, version).await;
        assert_eq!(resp.error_code, 0);
        resp.topics
            .into_iter()
            .map(|t| (t.name, t.internal))
            .collect()
    }

    async fn seeded() -> crate::rpc::testing::Running {
        let node = running("");
        for name in ["orders", "__consumer_offsets", "secret-payroll", "audit"] {
            create_topic(&node.state, name, 1).await;
        }
        node
    }

    #[tokio::test]
    async fn r80_list_topics_returns_names_and_internal_flags() {
        let node = seeded().await;
        for version in 0..=1 {
            assert_eq!(
                call(&node.state, true, version).await,
                vec![
                    ("__consumer_offsets".to_string(), true),
                    ("audit".to_string(), false),
                    ("orders".to_string(), false),
                    ("secret-payroll".to_string(), false)
                ]
            );
        }
    }

    #[tokio::test]
    async fn r81_list_internal_false_omits_internal_topics() {
        let node = seeded().await;
        let names: Vec<String> = call(&node.state, false, 1)
            .await
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(names, vec!["audit", "orders", "secret-payroll"]);
    }

    #[tokio::test]
    async fn r82_topics_without_describe_are_omitted() {
        let node = seeded().await;
        // The same catalog seen through a deny-DESCRIBE authorizer.
        let (mut state, _) = ServerState::build(
            Arc::clone(&node.state.config),
            node.state.listeners.iter().map(|l| (**l).clone()).collect(),
        );
        state.topics = Arc::clone(&node.state.topics);
        state.authorizer = Some(Arc::new(DenySecretTopics));
        let names: Vec<String> = call(&state, true, 0)
            .await
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(names, vec!["__consumer_offsets", "audit", "orders"]);
    }

    #[test]
    fn v0_is_the_proposals_non_flexible_layout_and_v1_is_flexible_with_throttle_time() {
        let response = ListTopicsResponse {
            throttle_time_ms: 7,
            error_code: 0,
            topics: vec![TopicListing {
                name: "ab".into(),
                internal: true,
                ..Default::default()
            }],
            ..Default::default()
        };
        let mut v0 = BytesMut::new();
        response.encode(&mut v0, 0).unwrap();
        // error_code int16, [name string, internal bool] with an int32 count and an int16
        // string length.
        assert_eq!(&v0[..], &[0, 0, 0, 0, 0, 1, 0, 2, b'a', b'b', 1]);
        let mut v1 = BytesMut::new();
        response.encode(&mut v1, 1).unwrap();
        // throttle int32, error_code int16, compact array (n+1), compact string (len+1), bool,
        // the topic's tagged fields, the response's tagged fields.
        assert_eq!(&v1[..], &[0, 0, 0, 7, 0, 0, 2, 3, b'a', b'b', 1, 0, 0]);
        let mut request = BytesMut::new();
        ListTopicsRequest {
            list_internal: true,
            ..Default::default()
        }
        .encode(&mut request, 0)
        .unwrap();
        assert_eq!(&request[..], &[1]);
        let mut flexible = BytesMut::new();
        ListTopicsRequest {
            list_internal: false,
            ..Default::default()
        }
        .encode(&mut flexible, 1)
        .unwrap();
        assert_eq!(&flexible[..], &[0, 0]);
        let decoded = ListTopicsResponse::decode(&mut v0.freeze(), 0).unwrap();
        assert_eq!((decoded.throttle_time_ms, decoded.topics.len()), (0, 1));
    }
}
