//! ApiVersions (key 18), v0-5, as Kafka's `KafkaApis.handleApiVersionsRequest`:
//! 1. a version the server does not know → UNSUPPORTED_VERSION with a v0 body listing
//!    ApiVersions' own range (KIP-511; built by [`unsupported_version_response`] from dispatch);
//! 2. v5 with only one of ClusterId / NodeId, or v3+ with a ClientSoftwareName/Version that
//!    does not match Kafka's pattern → INVALID_REQUEST;
//! 3. v5 with a ClusterId and NodeId that are not ours → REBOOTSTRAP_REQUIRED (KIP-1242);
//! 4. otherwise every API this listener serves, plus features from v3. The KIP-1331 push RPCs
//!    (keys 93 and 95) are listed only when a topology description plugin is configured.

use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::api_versions_response::{
    ApiVersion, FinalizedFeatureKey, SupportedFeatureKey,
};
use kcoord_wire::messages::{ApiVersionsRequest, ApiVersionsResponse};
use kcoord_wire::ErrorCode;

use kcoord_wire::VersionRange;

use crate::config::ListenerKind;
use crate::rpc::versions::{advertised_apis, in_gateway, supported_versions, Mode};
use crate::rpc::{serve, Listeners, Rpc};
use crate::runtime::features::{
    GROUP_VERSION, GROUP_VERSION_LEVEL, STREAMS_VERSION, STREAMS_VERSION_LEVEL, TRANSACTION_VERSION,
};
use crate::state::RequestContext;

/// ApiVersions as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::ApiVersions, 0, 5)
    .served_on(Listeners::BrokerAndController)
    .local_in_gateway();

serve!(sync handle);

pub fn handle(
    ctx: &RequestContext<'_>,
    req: ApiVersionsRequest,
    version: i16,
) -> ApiVersionsResponse {
    if !is_valid(&req, version) {
        return error_response(ErrorCode::INVALID_REQUEST);
    }
    if version >= 5 {
        if let Some(cluster_id) = &req.cluster_id {
            if !is_this_node(ctx, cluster_id, req.node_id) {
                tracing::debug!(
                    peer = %ctx.peer,
                    requested_cluster_id = %cluster_id,
                    requested_node_id = req.node_id,
                    "ApiVersions for another cluster or node; answering REBOOTSTRAP_REQUIRED"
                );
                return error_response(ErrorCode::REBOOTSTRAP_REQUIRED);
            }
        }
    }

    let mut response = ApiVersionsResponse {
        error_code: ErrorCode::NONE.code(),
        // The KIP-1331 push RPCs only when a topology description plugin is configured.
        api_keys: advertised(ctx)
            .iter()
            .map(|(api, range)| ApiVersion {
                api_key: api.key(),
                min_version: range.min,
                max_version: range.max,
                ..Default::default()
            })
            .collect(),
        throttle_time_ms: 0,
        ..Default::default()
    };
    match &ctx.server.gateway {
        Some(gateway) if ctx.listener.kind == ListenerKind::Broker => {
            upstream_features(&mut response, ctx, &gateway.view(), version)
        }
        _ => own_features(&mut response, ctx, version),
    }
    response
}

/// This node's features: those it supports, and the levels its controller finalized.
fn own_features(response: &mut ApiVersionsResponse, ctx: &RequestContext<'_>, version: i16) {
    // Before v4, clients choke on a feature whose minimum is 0 (KAFKA-17492).
    response.supported_features = ctx
        .server
        .features
        .supported
        .iter()
        .filter(|f| version >= 4 || f.min_version != 0)
        .map(|f| SupportedFeatureKey {
            name: f.name.to_owned(),
            min_version: f.min_version,
            max_version: f.max_version,
            ..Default::default()
        })
        .collect();
    // The controller's finalized levels as of its last publication.
    let cluster = ctx.server.cluster.snapshot();
    response.finalized_features_epoch = cluster.finalized_features_epoch;
    // Level 0 means "disabled" and is not listed, as in Kafka.
    response.finalized_features = cluster
        .finalized_features
        .iter()
        .map(|(name, level)| (name.as_str(), *level))
        .chain([
            (STREAMS_VERSION, STREAMS_VERSION_LEVEL),
            (GROUP_VERSION, GROUP_VERSION_LEVEL),
            (
                TRANSACTION_VERSION,
                ctx.server.config.transactions.transaction_version,
            ),
        ])
        .filter(|(_, level)| *level != 0)
        .map(|(name, level)| finalized(name, level))
        .collect();
}

/// In gateway mode, the upstream cluster's features (clients pick how to talk to the cluster
/// by them, `transaction.version` for one), except `streams.version`: kcoord serves the
/// streams groups, so that one is its own.
fn upstream_features(
    response: &mut ApiVersionsResponse,
    ctx: &RequestContext<'_>,
    upstream: &crate::gateway::upstream::UpstreamView,
    version: i16,
) {
    let ours = ctx
        .server
        .features
        .supported
        .iter()
        .find(|f| f.name == STREAMS_VERSION)
        .map(|f| SupportedFeatureKey {
            name: f.name.to_owned(),
            min_version: f.min_version,
            max_version: f.max_version,
            ..Default::default()
        });
    response.supported_features = upstream
        .supported_features
        .iter()
        .filter(|f| f.name != STREAMS_VERSION)
        .cloned()
        .chain(ours)
        .filter(|f| version >= 4 || f.min_version != 0)
        .collect();
    response.finalized_features_epoch = upstream.finalized_features_epoch;
    response.finalized_features = upstream
        .finalized_features
        .iter()
        .filter(|f| f.name != STREAMS_VERSION)
        .cloned()
        .chain([finalized(STREAMS_VERSION, STREAMS_VERSION_LEVEL)])
        .collect();
}

fn finalized(name: &str, level: i16) -> FinalizedFeatureKey {
    FinalizedFeatureKey {
        name: name.to_owned(),
        max_version_level: level,
        min_version_level: level,
        ..Default::default()
    }
}

/// What this listener advertises; in gateway mode on a broker listener, with the forwarded
/// APIs narrowed to what the upstream cluster serves ([`in_gateway`]).
fn advertised(ctx: &RequestContext<'_>) -> std::borrow::Cow<'static, [(ApiKey, VersionRange)]> {
    let (kind, plugin) = (ctx.listener.kind, ctx.server.topology.is_enabled());
    match &ctx.server.gateway {
        Some(gateway) if kind == ListenerKind::Broker => {
            let ours = advertised_apis(Mode::Gateway, kind, plugin);
            let upstream_authenticates = gateway.settings().upstream_authenticates;
            let upstream = &gateway.view().versions;
            std::borrow::Cow::Owned(in_gateway(ours, upstream, upstream_authenticates))
        }
        _ => std::borrow::Cow::Borrowed(advertised_apis(Mode::Standalone, kind, plugin)),
    }
}

/// Whether KIP-1242's ClusterId and NodeId name this node. Through a gateway's broker port a
/// client knows the node as the upstream broker the port stands for, in the upstream cluster
/// (the Metadata it was given is the upstream's); on the bootstrap port any broker is right.
fn is_this_node(ctx: &RequestContext<'_>, cluster_id: &str, node_id: i32) -> bool {
    match &ctx.server.gateway {
        Some(gateway) if ctx.listener.kind == ListenerKind::Broker => {
            gateway.view().cluster_id.as_deref() == Some(cluster_id)
                && ctx.listener.upstream_broker.is_none_or(|id| id == node_id)
        }
        _ => cluster_id == ctx.cluster_id() && node_id == ctx.node_id(),
    }
}

/// Kafka's `ApiVersionsRequest.isValid`.
fn is_valid(req: &ApiVersionsRequest, version: i16) -> bool {
    if version >= 5 && req.cluster_id.is_some() != (req.node_id != -1) {
        return false;
    }
    version < 3
        || (is_valid_software_token(&req.client_software_name)
            && is_valid_software_token(&req.client_software_version))
}

/// Kafka's `[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?`, matched against the whole string.
fn is_valid_software_token(s: &str) -> bool {
    let bytes = s.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'.')
        }
        _ => false,
    }
}

/// Kafka's `ApiVersionsRequest.getErrorResponse` for errors other than UNSUPPORTED_VERSION:
/// just the code, no APIs.
fn error_response(error: ErrorCode) -> ApiVersionsResponse {
    ApiVersionsResponse {
        error_code: error.code(),
        ..Default::default()
    }
}

/// The answer to an ApiVersions request of a version this server does not know. It must be
/// encoded as v0 with response header v0, whatever version was asked for.
pub fn unsupported_version_response() -> ApiVersionsResponse {
    let own = supported_versions(ApiKey::ApiVersions, crate::config::ListenerKind::Broker)
        .unwrap_or_else(|| ApiKey::ApiVersions.valid_versions());
    ApiVersionsResponse {
        error_code: ErrorCode::UNSUPPORTED_VERSION.code(),
        api_keys: vec![ApiVersion {
            api_key: ApiKey::ApiVersions.key(),
            min_version: own.min,
            max_version: own.max,
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// The authorization matrix's rows of ApiVersions ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        row!(ApiVersions 3 on Broker, api_versions(),
            needs [],
            ApiVersionsResponse => |r| code(r.error_code),
            allowed "NONE", denied "NONE"),
        row!(ApiVersions 3 on Controller, api_versions(),
            needs [],
            ApiVersionsResponse => |r| code(r.error_code),
            allowed "NONE", denied "NONE"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ListenerKind;
    use crate::rpc::testing::{server, with_ctx, CLUSTER_ID, NODE_ID};

    #[test]
    fn a_gateway_lists_the_upstreams_features_with_its_own_streams_version() {
        let upstream = crate::gateway::upstream::UpstreamView {
            supported_features: vec![SupportedFeatureKey {
                name: TRANSACTION_VERSION.to_owned(),
                min_version: 0,
                max_version: 1,
                ..Default::default()
            }],
            finalized_features: vec![
                finalized(TRANSACTION_VERSION, 1),
                finalized("metadata.version", 21),
            ],
            finalized_features_epoch: 42,
            ..Default::default()
        };
        let state = server();
        let response = with_ctx(&state, ListenerKind::Broker, |ctx| {
            let mut response = ApiVersionsResponse::default();
            upstream_features(&mut response, ctx, &upstream, 4);
            response
        });
        let levels: Vec<(&str, i16)> = response
            .finalized_features
            .iter()
            .map(|f| (f.name.as_str(), f.max_version_level))
            .collect();
        assert_eq!(
            levels,
            [
                (TRANSACTION_VERSION, 1),
                ("metadata.version", 21),
                (STREAMS_VERSION, STREAMS_VERSION_LEVEL)
            ]
        );
        assert_eq!(response.finalized_features_epoch, 42);
        let supported: Vec<&str> = response
            .supported_features
            .iter()
            .map(|f| f.name.as_str())
            .collect();
        assert_eq!(supported, [TRANSACTION_VERSION, STREAMS_VERSION]);
        // Before v4 a feature with minimum 0 is left out (KAFKA-17492).
        let old = with_ctx(&state, ListenerKind::Broker, |ctx| {
            let mut response = ApiVersionsResponse::default();
            upstream_features(&mut response, ctx, &upstream, 3);
            response
        });
        assert!(old.supported_features.iter().all(|f| f.min_version != 0));
    }

    fn request(name: &str, version: &str) -> ApiVersionsRequest {
        ApiVersionsRequest {
            client_software_name: name.to_owned(),
            client_software_version: version.to_owned(),
            ..Default::default()
        }
    }

    fn call(kind: ListenerKind, req: ApiVersionsRequest, version: i16) -> ApiVersionsResponse {
        with_ctx(&server(), kind, |ctx| handle(ctx, req, version))
    }

    fn keys(resp: &ApiVersionsResponse) -> Vec<(i16, i16, i16)> {
        resp.api_keys
            .iter()
            .map(|k| (k.api_key, k.min_version, k.max_version))
            .collect()
    }

    #[test]
    fn lists_the_apis_of_the_listener() {
        for version in 0..=5 {
            let resp = call(
                ListenerKind::Broker,
                request("apache-kafka-java", "4.1.0"),
                version,
            );
            assert_eq!(resp.error_code, 0);
            // The declarations, Produce listed from v0 (KAFKA-18659).
            let expected: Vec<(i16, i16, i16)> = crate::rpc::versions::advertised_apis(
                Mode::Standalone,
                ListenerKind::Broker,
                false,
            )
            .iter()
            .map(|(api, r)| (api.key(), r.min, r.max))
            .collect();
            assert_eq!(keys(&resp), expected);
            assert_eq!(keys(&resp)[0], (0, 0, 13));
        }
        let resp = call(ListenerKind::Controller, request("librdkafka", "2.12.1"), 3);
        let expected: Vec<(i16, i16, i16)> = crate::rpc::versions::advertised_apis(
            Mode::Standalone,
            ListenerKind::Controller,
            false,
        )
        .iter()
        .map(|(api, r)| (api.key(), r.min, r.max))
        .collect();
        assert_eq!(keys(&resp), expected);
        let listed: Vec<i16> = expected.iter().map(|(key, _, _)| *key).collect();
        assert_eq!(
            listed,
            vec![17, 18, 19, 29, 30, 31, 36, 37, 49, 51, 60, 62, 63]
        );
    }

    #[test]
    fn v3_and_later_carry_features() {
        let resp = call(
            ListenerKind::Broker,
            request("apache-kafka-java", "4.1.0"),
            4,
        );
        let supported: Vec<(&str, i16, i16)> = resp
            .supported_features
            .iter()
            .map(|f| (f.name.as_str(), f.min_version, f.max_version))
            .collect();
        assert_eq!(
            supported,
            vec![
                ("metadata.version", 7, 34),
                ("streams.version", 0, 1),
                ("group.version", 0, 1),
                ("transaction.version", 0, 2)
            ]
        );
        let finalized: Vec<(&str, i16, i16)> = resp
            .finalized_features
            .iter()
            .map(|f| (f.name.as_str(), f.min_version_level, f.max_version_level))
            .collect();
        assert_eq!(
            finalized,
            vec![
                ("metadata.version", 34, 34),
                ("streams.version", 1, 1),
                ("group.version", 1, 1),
                ("transaction.version", 2, 2)
            ]
        );
        assert!(resp.finalized_features_epoch >= 0);
    }

    #[test]
    fn finalized_metadata_version_comes_from_the_config_through_the_log() {
        let config = crate::config::Config::parse(
            "test",
            "node.id=1\nlisteners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\nmetadata.version=4.4-IV2\n",
        )
        .unwrap();
        let listeners = server().listeners.iter().map(|l| (**l).clone()).collect();
        let (state, _) = crate::state::ServerState::build(std::sync::Arc::new(config), listeners);
        let resp = with_ctx(&state, ListenerKind::Controller, |ctx| {
            handle(ctx, request("kcoord-test", "1"), 3)
        });
        let finalized: Vec<(&str, i16, i16)> = resp
            .finalized_features
            .iter()
            .map(|f| (f.name.as_str(), f.min_version_level, f.max_version_level))
            .collect();
        assert_eq!(
            finalized,
            vec![
                ("metadata.version", 33, 33),
                ("streams.version", 1, 1),
                ("group.version", 1, 1),
                ("transaction.version", 2, 2)
            ]
        );
        // The bootstrap FeatureLevelRecord is the first record of the log.
        assert_eq!(resp.finalized_features_epoch, 0);
        // What the build supports does not move with the finalized level.
        assert_eq!(resp.supported_features[0].max_version, 34);
    }

    #[test]
    fn features_with_minimum_zero_are_hidden_before_v4() {
        let mut state = server();
        state
            .features
            .supported
            .push(crate::runtime::features::SupportedFeature {
                name: "share.version",
                min_version: 0,
                max_version: 1,
            });
        let names = |version| {
            with_ctx(&state, ListenerKind::Broker, |ctx| {
                handle(ctx, request("a", "1"), version)
            })
            .supported_features
            .into_iter()
            .map(|f| f.name)
            .collect::<Vec<_>>()
        };
        assert_eq!(names(3), vec!["metadata.version"]);
        assert_eq!(
            names(4),
            vec![
                "metadata.version",
                "streams.version",
                "group.version",
                "transaction.version",
                "share.version"
            ]
        );
    }

    #[test]
    fn software_name_and_version_are_validated_from_v3() {
        for (name, version) in [
            ("", "1.0"),
            ("a", ""),
            ("-lib", "1"),
            ("lib-", "1"),
            ("lib", "1.0 beta"),
            ("lib_x", "1"),
            ("lib", "1."),
        ] {
            let resp = call(ListenerKind::Broker, request(name, version), 3);
            assert_eq!(
                resp.error_code,
                ErrorCode::INVALID_REQUEST.code(),
                "{name:?} {version:?}"
            );
            assert!(resp.api_keys.is_empty());
        }
        for (name, version) in [
            ("a", "1"),
            ("apache-kafka-java", "4.2.0-SNAPSHOT"),
            ("confluent-kafka-python", "2.6.1-rdkafka-2.6.1"),
        ] {
            assert_eq!(
                call(ListenerKind::Broker, request(name, version), 3).error_code,
                0,
                "{name:?} {version:?}"
            );
        }
        // Before v3 the fields do not exist, so nothing is checked.
        assert_eq!(call(ListenerKind::Broker, request("", ""), 2).error_code, 0);
    }

    #[test]
    fn v5_cluster_and_node_ids() {
        let v5 = |cluster_id: Option<&str>, node_id: i32| ApiVersionsRequest {
            cluster_id: cluster_id.map(str::to_owned),
            node_id,
            ..request("apache-kafka-java", "4.2.0")
        };
        assert_eq!(call(ListenerKind::Broker, v5(None, -1), 5).error_code, 0);
        assert_eq!(
            call(ListenerKind::Broker, v5(Some(CLUSTER_ID), NODE_ID), 5).error_code,
            0
        );
        assert_eq!(
            call(ListenerKind::Broker, v5(Some(CLUSTER_ID), -1), 5).error_code,
            ErrorCode::INVALID_REQUEST.code()
        );
        assert_eq!(
            call(ListenerKind::Broker, v5(None, NODE_ID), 5).error_code,
            ErrorCode::INVALID_REQUEST.code()
        );
        assert_eq!(
            call(ListenerKind::Broker, v5(Some("other"), NODE_ID), 5).error_code,
            ErrorCode::REBOOTSTRAP_REQUIRED.code()
        );
        assert_eq!(
            call(ListenerKind::Broker, v5(Some(CLUSTER_ID), NODE_ID + 1), 5).error_code,
            ErrorCode::REBOOTSTRAP_REQUIRED.code()
        );
        let resp = call(ListenerKind::Broker, v5(Some("other"), 3), 5);
        assert!(resp.api_keys.is_empty());
    }

    #[test]
    fn unsupported_version_answer_lists_only_api_versions() {
        let resp = unsupported_version_response();
        assert_eq!(resp.error_code, 35);
        assert_eq!(keys(&resp), vec![(18, 0, 5)]);
    }

    #[test]
    fn responses_encode_at_their_version() {
        use kcoord_wire::Encodable;
        for version in 0..=5 {
            let resp = call(
                ListenerKind::Broker,
                request("apache-kafka-java", "4.1.0"),
                version,
            );
            let mut buf = bytes::BytesMut::new();
            resp.encode(&mut buf, version)
                .unwrap_or_else(|e| panic!("v{version}: {e}"));
        }
    }
}
