//! ListConfigResources (key 74), v0-1, after Kafka 4.4's `KafkaApis.handleListConfigResources`
//! (KIP-1142; v0 was ListClientMetricsResources): DESCRIBE_CONFIGS on the cluster, else
//! CLUSTER_AUTHORIZATION_FAILED and nothing listed. ResourceTypes empty means every type the
//! version covers (v0: client metrics only; v1: topics, brokers, broker loggers, client
//! metrics and groups); a type outside those is UNSUPPORTED_VERSION for the whole request.
//! Listed, type by type in Kafka's order (groups, client metrics, broker loggers, brokers,
//! topics): the groups with dynamic configs (whether or not the group exists), no client
//! metrics resources (kcoord keeps none), the brokers Metadata lists on the request's listener
//! (by id, for both broker types), every topic. Kafka lists each type in hash order; kcoord in
//! name (or id) order. In gateway mode the request is forwarded: the cluster's resources are
//! the ones `kafka-configs` describes through kcoord.

use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::list_config_resources_response::ConfigResource;
use kcoord_wire::messages::{ListConfigResourcesRequest, ListConfigResourcesResponse};
use kcoord_wire::ErrorCode;

use super::broker_registration::KAFKA_CLUSTER;
use super::describe_configs::{BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP, TOPIC};
use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;

/// ListConfigResources as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::ListConfigResources, 0, 1).asks(&[Check::new(
    AclOperation::DescribeConfigs,
    ResourceType::Cluster,
)]);

serve!(sync handle);

/// The types a version lists (Kafka's `ListConfigResourcesRequest.supportedResourceTypes`).
fn supported(version: i16) -> &'static [i8] {
    match version {
        0 => &[CLIENT_METRICS],
        _ => &[TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP],
    }
}

pub fn handle(
    ctx: &RequestContext<'_>,
    req: ListConfigResourcesRequest,
    version: i16,
) -> ListConfigResourcesResponse {
    let refused = |code: ErrorCode| ListConfigResourcesResponse {
        error_code: code.code(),
        ..Default::default()
    };
    if !authorize(
        ctx,
        AclOperation::DescribeConfigs,
        ResourceType::Cluster,
        KAFKA_CLUSTER,
    ) {
        return refused(ErrorCode::CLUSTER_AUTHORIZATION_FAILED);
    }
    let supported = supported(version);
    let asked: &[i8] = match req.resource_types.is_empty() {
        true => supported,
        false => &req.resource_types,
    };
    if asked.iter().any(|t| !supported.contains(t)) {
        return refused(ErrorCode::UNSUPPORTED_VERSION);
    }
    let listed = |resource_type: i8, names: Vec<String>| {
        names.into_iter().map(move |resource_name| ConfigResource {
            resource_name,
            resource_type,
            ..Default::default()
        })
    };
    let mut config_resources = Vec::new();
    for resource_type in [GROUP, CLIENT_METRICS, BROKER_LOGGER, BROKER, TOPIC] {
        if asked.contains(&resource_type) {
            config_resources.extend(listed(resource_type, names(ctx, resource_type)));
        }
    }
    ListConfigResourcesResponse {
        config_resources,
        ..Default::default()
    }
}

/// The resources of one type, in name (or id) order.
fn names(ctx: &RequestContext<'_>, resource_type: i8) -> Vec<String> {
    match resource_type {
        GROUP => {
            let cluster = ctx.server.cluster.snapshot();
            cluster
                .group_configs
                .iter()
                .map(|(g, _)| g.to_owned())
                .collect()
        }
        BROKER | BROKER_LOGGER => {
            let brokers =
                ctx.server
                    .cluster
                    .snapshot()
                    .broker_nodes(ctx.this_node(), ctx.listener, false);
            let mut ids: Vec<i32> = brokers.iter().map(|b| b.node.id).collect();
            ids.sort_unstable();
            ids.into_iter().map(|id| id.to_string()).collect()
        }
        TOPIC => {
            let mut topics: Vec<String> = ctx
                .server
                .topics
                .snapshot()
                .iter()
                .map(|t| t.name.clone())
                .collect();
            topics.sort_unstable();
            topics
        }
        _ => Vec::new(),
    }
}

/// The authorization matrix's rows of ListConfigResources ([`crate::rpc::authorize`]'s matrix
/// tests): each request with the ACLs that allow it and what an allowed and a refused principal
/// get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        row!(ListConfigResources 1 on Broker, ListConfigResourcesRequest::default(),
        needs [(DescribeConfigs, Cluster, CLUSTER)],
        ListConfigResourcesResponse => |r| code(r.error_code),
        allowed "NONE", denied "CLUSTER_AUTHORIZATION_FAILED"),
    ]
}

#[cfg(test)]
mod tests;
