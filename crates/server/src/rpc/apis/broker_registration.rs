//! BrokerRegistration (key 62), v0-6, on controller listeners only, as Kafka's
//! `ControllerApis.handleBrokerRegistration`: CLUSTER_ACTION on the cluster is required, then
//! the controller task decides (the rules and their order are `kcoord_controller`'s, see its
//! README) with the request version passed through, since v6's StaticConfigs and the v3+
//! PreviousBrokerEpoch matter to the decision. The response body is the same in every version.

use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::{BrokerRegistrationRequest, BrokerRegistrationResponse};
use kcoord_wire::ErrorCode;
use tracing::info;

use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Listeners, Rpc};
use crate::state::RequestContext;

/// BrokerRegistration as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::BrokerRegistration, 0, 6)
    .served_on(Listeners::Controller)
    .asks(&[Check::new(
        AclOperation::ClusterAction,
        ResourceType::Cluster,
    )]);

serve!(async handle);

/// Kafka's `Resource.CLUSTER_NAME`: the one CLUSTER resource.
pub(crate) const KAFKA_CLUSTER: &str = "kafka-cluster";

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: BrokerRegistrationRequest,
    version: i16,
) -> BrokerRegistrationResponse {
    if !authorize(
        ctx,
        AclOperation::ClusterAction,
        ResourceType::Cluster,
        KAFKA_CLUSTER,
    ) {
        info!(peer = %ctx.peer, broker_id = req.broker_id, "BrokerRegistration denied: no CLUSTER_ACTION on the cluster");
        return error(ErrorCode::CLUSTER_AUTHORIZATION_FAILED);
    }
    match ctx.server.controller.register_broker(req, version).await {
        Ok(response) => response,
        // Only while shutting down; a broker then looks for another controller.
        Err(_) => error(ErrorCode::NOT_CONTROLLER),
    }
}

fn error(code: ErrorCode) -> BrokerRegistrationResponse {
    BrokerRegistrationResponse {
        error_code: code.code(),
        broker_epoch: -1,
        ..Default::default()
    }
}

/// A v6 registration of `broker_id` for the handler tests.
#[cfg(test)]
pub(crate) mod tests_support {
    use kcoord_wire::messages::broker_registration_request::{Feature, Listener, StaticConfig};
    use kcoord_wire::messages::BrokerRegistrationRequest;
    use uuid::Uuid;

    use crate::rpc::testing::CLUSTER_ID;

    pub(crate) fn request(broker_id: i32, incarnation: u128) -> BrokerRegistrationRequest {
        BrokerRegistrationRequest {
            broker_id,
            cluster_id: CLUSTER_ID.into(),
            incarnation_id: Uuid::from_u128(incarnation),
            listeners: vec![Listener {
                name: "PLAINTEXT".into(),
                host: "b.example".into(),
                port: 19092,
                ..Default::default()
            }],
            features: vec![Feature {
                name: "metadata.version".into(),
                min_supported_version: 7,
                max_supported_version: 34,
                ..Default::default()
            }],
            log_dirs: vec![Uuid::from_u128(
                (u128::from(broker_id as u32) << 64) | incarnation << 8 | 200,
            )],
            static_configs: vec![StaticConfig {
                name: "num.io.threads".into(),
                value: Some("8".into()),
                ..Default::default()
            }],
            ..Default::default()
        }
    }
}

/// The authorization matrix's rows of BrokerRegistration ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![row!(BrokerRegistration 6 on Controller,
            crate::rpc::apis::broker_registration::tests_support::request(2, 1),
            needs [(ClusterAction, Cluster, CLUSTER)],
            BrokerRegistrationResponse => |r| code(r.error_code),
            allowed "NONE", denied "CLUSTER_AUTHORIZATION_FAILED")]
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::tests_support::request;
    use super::*;
    use crate::config::ListenerKind;
    use crate::rpc::testing::{encodes, running, server, Ctx};
    use crate::state::ServerState;

    async fn call(
        state: &ServerState,
        req: BrokerRegistrationRequest,
        version: i16,
    ) -> BrokerRegistrationResponse {
        let c = Ctx::new(state, ListenerKind::Controller);
        let resp = handle(&c.ctx(state), req, version).await;
        encodes(&resp, version);
        resp
    }

    #[tokio::test]
    async fn r70_r76_every_version_registers_and_v6_keeps_static_configs() {
        let node = running("");
        for version in 0..=6i16 {
            let broker_id = 100 + i32::from(version);
            let mut req = request(broker_id, 1);
            if version < 6 {
                req.static_configs.clear();
            }
            let resp = call(&node.state, req, version).await;
            assert_eq!(resp.error_code, 0, "v{version}");
            assert!(resp.broker_epoch >= 0, "v{version}");
            let image = node.state.cluster.snapshot();
            let b = image
                .brokers
                .get(broker_id)
                .unwrap_or_else(|| panic!("v{version} published"));
            assert_eq!(
                (b.epoch, b.fenced),
                (resp.broker_epoch, true),
                "a new incarnation registers fenced"
            );
            assert_eq!(
                b.static_configs.len(),
                usize::from(version == 6),
                "v{version}"
            );
        }
    }

    #[tokio::test]
    async fn the_controllers_errors_come_back() {
        let node = running("");
        let mut req = request(1, 1);
        req.cluster_id = "MkU3OEVBNTcwNTJENDM2Qk".into();
        assert_eq!(
            call(&node.state, req, 6).await.error_code,
            ErrorCode::INCONSISTENT_CLUSTER_ID.code()
        );
    }

    #[tokio::test]
    async fn without_cluster_action_the_registration_is_refused() {
        let (mut state, _) = ServerState::build(
            Arc::clone(&server().config),
            server().listeners.iter().map(|l| (**l).clone()).collect(),
        );
        state.authorizer = Some(Arc::new(crate::security::DenyAll));
        let resp = call(&state, request(1, 1), 6).await;
        assert_eq!(
            (resp.error_code, resp.broker_epoch),
            (ErrorCode::CLUSTER_AUTHORIZATION_FAILED.code(), -1)
        );
        assert!(state.cluster.snapshot().brokers.is_empty());
    }

    #[tokio::test]
    async fn a_stopped_controller_is_not_controller() {
        let resp = call(&server(), request(1, 1), 6).await;
        assert_eq!(
            (resp.error_code, resp.broker_epoch),
            (ErrorCode::NOT_CONTROLLER.code(), -1)
        );
    }
}
