//! DescribeCluster (key 60), v0-2, after Kafka's `AuthHelper.computeDescribeClusterResponse`.
//!
//! A broker listener answers EndpointType 1 (BROKER) with this node and the registered,
//! unfenced brokers at their endpoint of the same listener name; from v2, IncludeFencedBrokers
//! adds the fenced ones with IsFenced = true (`cluster.rs`). A controller listener answers
//! EndpointType 2 (CONTROLLER) with this node as the only controller (KIP-919), at the address
//! of the listener asked: registered brokers are not controllers. The wrong kind is
//! MISMATCHED_ENDPOINT_TYPE, an unknown type UNSUPPORTED_ENDPOINT_TYPE; v0 has neither code
//! and gets INVALID_REQUEST instead, as in Kafka.
//!
//! Authorization: a controller listener requires ALTER on the cluster first (Kafka's
//! `ControllerApis.handleDescribeCluster`); ClusterAuthorizedOperations lists the operations
//! allowed on the cluster, 0 without DESCRIBE.

use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::describe_cluster_response::DescribeClusterBroker;
use kcoord_wire::messages::{DescribeClusterRequest, DescribeClusterResponse};
use kcoord_wire::ErrorCode;

use super::broker_registration::KAFKA_CLUSTER;
use crate::config::ListenerKind;
use crate::rpc::authorize::AUTHORIZED_OPERATIONS_OMITTED;
use crate::rpc::authorize::{
    authorize, authorized_operations, require_cluster, AclOperation, ResourceType,
};
use crate::rpc::{serve, Check, Listeners, Rpc};
use crate::runtime::cluster::BrokerNode;
use crate::state::RequestContext;

/// DescribeCluster as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::DescribeCluster, 0, 2)
    .served_on(Listeners::BrokerAndController)
    .asks(&[
        Check::new(AclOperation::Describe, ResourceType::Cluster),
        Check::new(AclOperation::Alter, ResourceType::Cluster),
    ])
    .rewritten_in_gateway();

serve!(sync handle);

const BROKER: i8 = 1;
const CONTROLLER: i8 = 2;

fn endpoint_type_name(t: i8) -> &'static str {
    match t {
        BROKER => "BROKER",
        CONTROLLER => "CONTROLLER",
        _ => "UNKNOWN",
    }
}

pub fn handle(
    ctx: &RequestContext<'_>,
    req: DescribeClusterRequest,
    version: i16,
) -> DescribeClusterResponse {
    let expected = match ctx.listener.kind {
        ListenerKind::Broker => BROKER,
        ListenerKind::Controller => CONTROLLER,
    };
    // Kafka's controller asks for ALTER on the cluster before anything else.
    if expected == CONTROLLER {
        if let Err(message) = require_cluster(ctx, "DescribeCluster", AclOperation::Alter) {
            return error_response(ErrorCode::CLUSTER_AUTHORIZATION_FAILED, message);
        }
    }
    let requested = req.endpoint_type;
    if requested != BROKER && requested != CONTROLLER {
        let error = if version == 0 {
            ErrorCode::INVALID_REQUEST
        } else {
            ErrorCode::UNSUPPORTED_ENDPOINT_TYPE
        };
        return error_response(error, format!("Unsupported endpoint type {requested}"));
    }
    if requested != expected {
        let error = if version == 0 {
            ErrorCode::INVALID_REQUEST
        } else {
            ErrorCode::MISMATCHED_ENDPOINT_TYPE
        };
        return error_response(
            error,
            format!(
                "The request was sent to an endpoint of type {}, but we wanted an endpoint of type {}",
                endpoint_type_name(expected),
                endpoint_type_name(requested)
            ),
        );
    }

    let brokers = if expected == BROKER {
        ctx.server.cluster.snapshot().broker_nodes(
            ctx.this_node(),
            ctx.listener,
            version >= 2 && req.include_fenced_brokers,
        )
    } else {
        vec![BrokerNode {
            node: ctx.this_node(),
            rack: None,
            fenced: false,
        }]
    };
    DescribeClusterResponse {
        throttle_time_ms: 0,
        error_code: ErrorCode::NONE.code(),
        error_message: None,
        endpoint_type: expected,
        cluster_id: ctx.cluster_id().to_owned(),
        controller_id: ctx.node_id(),
        brokers: brokers
            .into_iter()
            .map(|b| DescribeClusterBroker {
                broker_id: b.node.id,
                host: b.node.host,
                port: b.node.port,
                rack: b.rack,
                is_fenced: b.fenced,
                ..Default::default()
            })
            .collect(),
        cluster_authorized_operations: cluster_operations(
            ctx,
            req.include_cluster_authorized_operations,
        ),
        ..Default::default()
    }
}

/// Kafka's ClusterAuthorizedOperations: every operation allowed on the cluster, 0 when even
/// DESCRIBE is denied, "omitted" when not asked for.
pub fn cluster_operations(ctx: &RequestContext<'_>, requested: bool) -> i32 {
    if !requested {
        AUTHORIZED_OPERATIONS_OMITTED
    } else if authorize(
        ctx,
        AclOperation::Describe,
        ResourceType::Cluster,
        KAFKA_CLUSTER,
    ) {
        authorized_operations(ctx, ResourceType::Cluster, KAFKA_CLUSTER)
    } else {
        0
    }
}

fn error_response(error: ErrorCode, message: String) -> DescribeClusterResponse {
    DescribeClusterResponse {
        error_code: error.code(),
        error_message: Some(message),
        ..Default::default()
    }
}

/// The authorization matrix's rows of DescribeCluster ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        // No access check on a broker listener; the operations need DESCRIBE.
        row!(DescribeCluster 1 on Broker, DescribeClusterRequest {
                include_cluster_authorized_operations: true,
                endpoint_type: 1,
                ..Default::default()
            },
            needs [(Describe, Cluster, CLUSTER)],
            DescribeClusterResponse => |r| format!("{} {}", code(r.error_code), operations(r.cluster_authorized_operations)),
            allowed "NONE operations with DESCRIBE", denied "NONE operations 0"),
        row!(DescribeCluster 1 on Controller, DescribeClusterRequest {
                endpoint_type: 2,
                ..Default::default()
            },
            needs [(Alter, Cluster, CLUSTER)],
            DescribeClusterResponse => |r| refusal(r.error_code, r.error_message.as_deref()),
            allowed "NONE",
            denied "CLUSTER_AUTHORIZATION_FAILED: Request DescribeCluster needs ALTER permission."),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::authorize::CLUSTER_AUTHORIZED_OPERATIONS;
    use crate::rpc::testing::{server, with_ctx, CLUSTER_ID, NODE_ID};
    use kcoord_wire::Encodable;

    fn call(kind: ListenerKind, endpoint_type: i8, version: i16) -> DescribeClusterResponse {
        let req = DescribeClusterRequest {
            endpoint_type,
            include_cluster_authorized_operations: true,
            ..Default::default()
        };
        let resp = with_ctx(&server(), kind, |ctx| handle(ctx, req, version));
        let mut buf = bytes::BytesMut::new();
        resp.encode(&mut buf, version)
            .unwrap_or_else(|e| panic!("v{version}: {e}"));
        resp
    }

    #[test]
    fn broker_listener_describes_the_broker() {
        for version in 0..=2 {
            let resp = call(ListenerKind::Broker, BROKER, version);
            assert_eq!(resp.error_code, 0);
            assert_eq!(
                (
                    resp.cluster_id.as_str(),
                    resp.controller_id,
                    resp.endpoint_type
                ),
                (CLUSTER_ID, NODE_ID, BROKER)
            );
            let b = &resp.brokers[0];
            assert_eq!(
                (b.broker_id, b.host.as_str(), b.port, b.is_fenced),
                (NODE_ID, "broker.example", 9092, false)
            );
            assert_eq!(
                resp.cluster_authorized_operations,
                CLUSTER_AUTHORIZED_OPERATIONS
            );
        }
    }

    #[test]
    fn controller_listener_describes_the_controller() {
        for version in 1..=2 {
            let resp = call(ListenerKind::Controller, CONTROLLER, version);
            assert_eq!(
                (resp.error_code, resp.endpoint_type, resp.controller_id),
                (0, CONTROLLER, NODE_ID)
            );
            assert_eq!(
                (resp.brokers[0].host.as_str(), resp.brokers[0].port),
                ("controller.example", 9093)
            );
        }
    }

    #[tokio::test]
    async fn registered_brokers_are_listed_and_fenced_ones_on_request() {
        use crate::rpc::apis::broker_registration::tests_support::request;
        use crate::rpc::testing::{running, Ctx};
        let node = running("");
        let state = &node.state;
        let c = Ctx::new(state, ListenerKind::Controller);
        let mut epochs = Vec::new();
        for id in [3, 2] {
            let mut req = request(id, 1);
            req.rack = Some(format!("rack-{id}"));
            let resp = crate::rpc::apis::broker_registration::handle(&c.ctx(state), req, 6).await;
            epochs.push(resp.broker_epoch);
        }
        // Broker 2 catches up and is unfenced; broker 3 stays fenced.
        let heartbeat = kcoord_wire::messages::BrokerHeartbeatRequest {
            broker_id: 2,
            broker_epoch: epochs[1],
            current_metadata_offset: epochs[1],
            ..Default::default()
        };
        let resp = crate::rpc::apis::broker_heartbeat::handle(&c.ctx(state), heartbeat, 2).await;
        assert!(!resp.is_fenced);
        let list = |include_fenced, version| {
            let req = DescribeClusterRequest {
                endpoint_type: BROKER,
                include_fenced_brokers: include_fenced,
                ..Default::default()
            };
            let resp = with_ctx(state, ListenerKind::Broker, |ctx| handle(ctx, req, version));
            resp.brokers
                .into_iter()
                .map(|b| (b.broker_id, b.host, b.port, b.rack, b.is_fenced))
                .collect::<Vec<_>>()
        };
        let this = (NODE_ID, "broker.example".to_string(), 9092, None, false);
        let two = (
            2,
            "b.example".to_string(),
            19092,
            Some("rack-2".to_string()),
            false,
        );
        let three = (
            3,
            "b.example".to_string(),
            19092,
            Some("rack-3".to_string()),
            true,
        );
        assert_eq!(list(false, 2), vec![two.clone(), this.clone()]);
        assert_eq!(list(true, 2), vec![two.clone(), three, this.clone()]);
        assert_eq!(
            list(true, 1),
            vec![two, this],
            "IncludeFencedBrokers is v2+"
        );
        // The controller endpoint lists controllers only.
        let req = DescribeClusterRequest {
            endpoint_type: CONTROLLER,
            include_fenced_brokers: true,
            ..Default::default()
        };
        let resp = with_ctx(state, ListenerKind::Controller, |ctx| handle(ctx, req, 2));
        assert_eq!(
            resp.brokers.iter().map(|b| b.broker_id).collect::<Vec<_>>(),
            vec![NODE_ID]
        );
    }

    #[test]
    fn wrong_or_unknown_endpoint_types() {
        let resp = call(ListenerKind::Broker, CONTROLLER, 1);
        assert_eq!(resp.error_code, ErrorCode::MISMATCHED_ENDPOINT_TYPE.code());
        assert!(resp.brokers.is_empty());
        assert_eq!(
            resp.error_message.as_deref(),
            Some("The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER")
        );
        assert_eq!(
            call(ListenerKind::Controller, BROKER, 2).error_code,
            ErrorCode::MISMATCHED_ENDPOINT_TYPE.code()
        );
        // v0 cannot say which endpoint it wants (the field defaults to BROKER).
        assert_eq!(
            call(ListenerKind::Controller, BROKER, 0).error_code,
            ErrorCode::INVALID_REQUEST.code()
        );
        assert_eq!(
            call(ListenerKind::Broker, 3, 1).error_code,
            ErrorCode::UNSUPPORTED_ENDPOINT_TYPE.code()
        );
        assert_eq!(
            call(ListenerKind::Broker, 0, 2).error_code,
            ErrorCode::UNSUPPORTED_ENDPOINT_TYPE.code()
        );
    }
}
