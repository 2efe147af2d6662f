//! BrokerHeartbeat (key 63), v0-2, on controller listeners only, as Kafka's
//! `ControllerApis.handleBrokerHeartbeatRequest`: CLUSTER_ACTION on the cluster is required,
//! then the controller task renews the broker's session and moves it between fenced, unfenced
//! and shut down (`kcoord_controller`'s rules). The response body is the same in every
//! version; an error keeps Kafka's defaults (IsFenced true, IsCaughtUp false).

use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::{BrokerHeartbeatRequest, BrokerHeartbeatResponse};
use kcoord_wire::ErrorCode;
use tracing::info;

use super::broker_registration::KAFKA_CLUSTER;
use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Listeners, Rpc};
use crate::state::RequestContext;

/// BrokerHeartbeat as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::BrokerHeartbeat, 0, 2)
    .served_on(Listeners::Controller)
    .asks(&[Check::new(
        AclOperation::ClusterAction,
        ResourceType::Cluster,
    )]);

serve!(async handle);

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: BrokerHeartbeatRequest,
    version: i16,
) -> BrokerHeartbeatResponse {
    if !authorize(
        ctx,
        AclOperation::ClusterAction,
        ResourceType::Cluster,
        KAFKA_CLUSTER,
    ) {
        info!(peer = %ctx.peer, broker_id = req.broker_id, "BrokerHeartbeat denied: no CLUSTER_ACTION on the cluster");
        return error(ErrorCode::CLUSTER_AUTHORIZATION_FAILED);
    }
    match ctx.server.controller.broker_heartbeat(req, version).await {
        Ok(response) => response,
        Err(_) => error(ErrorCode::NOT_CONTROLLER),
    }
}

fn error(code: ErrorCode) -> BrokerHeartbeatResponse {
    BrokerHeartbeatResponse {
        error_code: code.code(),
        ..Default::default()
    }
}

/// The authorization matrix's rows of BrokerHeartbeat ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        // Allowed, a broker that never registered has a stale epoch, as Kafka's
        // `ClusterControlManager.checkBrokerEpoch` says ("No broker registration found").
        row!(BrokerHeartbeat 1 on Controller, BrokerHeartbeatRequest {
                broker_id: 2,
                broker_epoch: -1,
                ..Default::default()
            },
            needs [(ClusterAction, Cluster, CLUSTER)],
            BrokerHeartbeatResponse => |r| code(r.error_code),
            allowed "STALE_BROKER_EPOCH", denied "CLUSTER_AUTHORIZATION_FAILED"),
    ]
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::config::ListenerKind;
    use crate::rpc::testing::{encodes, running, server, Ctx};
    use crate::state::ServerState;

    async fn call(
        state: &ServerState,
        req: BrokerHeartbeatRequest,
        version: i16,
    ) -> BrokerHeartbeatResponse {
        let c = Ctx::new(state, ListenerKind::Controller);
        let resp = handle(&c.ctx(state), req, version).await;
        encodes(&resp, version);
        resp
    }

    async fn register(state: &ServerState, broker_id: i32) -> i64 {
        let c = Ctx::new(state, ListenerKind::Controller);
        let req = crate::rpc::apis::broker_registration::tests_support::request(broker_id, 1);
        let resp = crate::rpc::apis::broker_registration::handle(&c.ctx(state), req, 6).await;
        assert_eq!(resp.error_code, 0);
        resp.broker_epoch
    }

    fn heartbeat(broker_id: i32, epoch: i64, offset: i64) -> BrokerHeartbeatRequest {
        BrokerHeartbeatRequest {
            broker_id,
            broker_epoch: epoch,
            current_metadata_offset: offset,
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn r76_every_version_unfences_a_caught_up_broker_and_shuts_it_down() {
        let node = running("");
        for version in 0..=2i16 {
            let broker_id = 10 + i32::from(version);
            let epoch = register(&node.state, broker_id).await;
            let behind = call(&node.state, heartbeat(broker_id, epoch, epoch - 1), version).await;
            assert_eq!(
                (behind.error_code, behind.is_fenced, behind.is_caught_up),
                (0, true, false),
                "v{version}"
            );
            let caught_up = call(&node.state, heartbeat(broker_id, epoch, epoch), version).await;
            assert_eq!(
                (
                    caught_up.error_code,
                    caught_up.is_fenced,
                    caught_up.is_caught_up
                ),
                (0, false, true),
                "v{version}"
            );
            assert!(
                !node
                    .state
                    .cluster
                    .snapshot()
                    .brokers
                    .get(broker_id)
                    .unwrap()
                    .fenced,
                "published"
            );
            let stop = BrokerHeartbeatRequest {
                want_shut_down: true,
                ..heartbeat(broker_id, epoch, epoch)
            };
            let resp = call(&node.state, stop, version).await;
            assert!(resp.should_shut_down && resp.is_fenced, "v{version}");
        }
    }

    #[tokio::test]
    async fn a_wrong_epoch_is_stale() {
        let node = running("");
        let epoch = register(&node.state, 1).await;
        let resp = call(&node.state, heartbeat(1, epoch + 1, epoch), 2).await;
        assert_eq!(
            (resp.error_code, resp.is_fenced),
            (ErrorCode::STALE_BROKER_EPOCH.code(), true)
        );
        let resp = call(&node.state, heartbeat(2, 0, 0), 2).await;
        assert_eq!(
            resp.error_code,
            ErrorCode::STALE_BROKER_EPOCH.code(),
            "never registered"
        );
    }

    #[tokio::test]
    async fn denied_and_unavailable() {
        let (mut state, _) = ServerState::build(
            Arc::clone(&server().config),
            server().listeners.iter().map(|l| (**l).clone()).collect(),
        );
        state.authorizer = Some(Arc::new(crate::security::DenyAll));
        assert_eq!(
            call(&state, heartbeat(1, 0, 0), 2).await.error_code,
            ErrorCode::CLUSTER_AUTHORIZATION_FAILED.code()
        );
        assert_eq!(
            call(&server(), heartbeat(1, 0, 0), 2).await.error_code,
            ErrorCode::NOT_CONTROLLER.code()
        );
    }
}
