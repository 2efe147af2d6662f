//! IncrementalAlterConfigs (key 44), v0-1, on broker listeners, after Kafka 4.4's
//! `KafkaApis.handleIncrementalAlterConfigsRequest`: the broker's preprocessing
//! (`ConfigAdminManager.preprocess`), then what the controller does with the rest
//! (`ControllerApis.handleIncrementalAlterConfigs`: ALTER_CONFIGS authorization, then
//! `ConfigurationControlManager`), answered in the request's order
//! (`ConfigAdminManager.reassembleIncrementalResponse`).
//!
//! - A resource named twice: INVALID_REQUEST "Each resource must appear at most once." for
//!   each; a key named twice in one resource: INVALID_REQUEST "Error due to duplicate config
//!   keys"; a null value for anything but DELETE: INVALID_REQUEST "Null value not supported for
//!   : k1, k2"; an unknown resource type: INVALID_REQUEST "Unknown resource type N".
//! - GROUP (32): ALTER_CONFIGS on the group (else GROUP_AUTHORIZATION_FAILED), then the
//!   controller applies and validates the group's configs (`kcoord_controller::group_configs`,
//!   with the rules of `kcoord_coordinator::group_config_rules`); they are kept as
//!   ConfigRecords in the metadata log, so they survive a restart with `metadata.log.dir`, and
//!   the coordinator runs the group with them.
//! - TOPIC (2): ALTER_CONFIGS on the topic (else TOPIC_AUTHORIZATION_FAILED), then the
//!   controller (`kcoord_controller::configs`, Kafka's `ConfigurationControlManager`): SET,
//!   DELETE, APPEND and SUBTRACT (the last two on LIST configs only), every config of the topic
//!   afterwards checked as Kafka's `LogConfig.validate` (INVALID_CONFIG with Kafka's message),
//!   UNKNOWN_TOPIC_OR_PARTITION for a topic that does not exist. The ConfigRecords go to the
//!   metadata log and the topic's partitions take the new settings before the answer.
//! - BROKER (4): first the broker's own checks (`ConfigAdminManager.preprocess`): the name is ""
//!   (cluster-wide) or this node's id, and the configs afterwards are ones kcoord takes
//!   dynamically (`crate::rpc::configs`); then ALTER_CONFIGS on the cluster (else
//!   CLUSTER_AUTHORIZATION_FAILED) and the controller, as for a topic.
//! - BROKER_LOGGER and CLIENT_METRICS: authorized as Kafka does (ALTER_CONFIGS on the cluster),
//!   then refused with INVALID_REQUEST: kcoord keeps neither (README, "Differences from Apache
//!   Kafka 4.4").

use std::collections::{BTreeSet, HashMap};

use kcoord_controller::configs::{ConfigChange, ConfigOps};
use kcoord_controller::group_configs::{GroupConfigChange, DELETE};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::incremental_alter_configs_request::AlterConfigsResource;
use kcoord_wire::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
use kcoord_wire::messages::{IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse};
use kcoord_wire::ErrorCode;

use super::describe_configs::{BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP, TOPIC};
use crate::rpc::authorize::{AclOperation, ResourceType};
use crate::rpc::configs::{
    alter_refused, check_broker_name, check_broker_props, incremental_broker_props, not_kept,
};
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;

/// IncrementalAlterConfigs as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::IncrementalAlterConfigs, 0, 1)
    .asks(&[
        Check::new(AclOperation::AlterConfigs, ResourceType::Group),
        Check::new(AclOperation::AlterConfigs, ResourceType::Topic),
        Check::new(AclOperation::AlterConfigs, ResourceType::Cluster),
    ])
    .mirrored_in_gateway();

serve!(async handle);

type Answer = crate::rpc::configs::Answer;

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: IncrementalAlterConfigsRequest,
    _version: i16,
) -> IncrementalAlterConfigsResponse {
    let mut answers: Vec<Option<Answer>> = preprocess(&req.resources);
    for (i, resource) in req.resources.iter().enumerate() {
        if answers[i].is_none() && resource.resource_type == BROKER {
            answers[i] = check_broker(ctx, resource).err();
        }
    }
    // What the controller does with the resources left: authorization, then the change.
    let mut groups = Vec::new();
    let mut group_index = Vec::new();
    let mut configs = Vec::new();
    let mut config_index = Vec::new();
    for (i, resource) in req.resources.iter().enumerate() {
        if answers[i].is_some() {
            continue;
        }
        if let Some(answer) = refusal(ctx, resource) {
            answers[i] = Some(answer);
            continue;
        }
        let ops: Vec<(String, i8, Option<String>)> = resource
            .configs
            .iter()
            .map(|c| (c.name.clone(), c.config_operation, c.value.clone()))
            .collect();
        if resource.resource_type == GROUP {
            groups.push(GroupConfigChange {
                group: resource.resource_name.clone(),
                ops,
            });
            group_index.push(i);
        } else {
            configs.push(ConfigChange {
                resource_type: resource.resource_type,
                name: resource.resource_name.clone(),
                ops: ConfigOps::Incremental(ops),
            });
            config_index.push(i);
        }
    }
    if !groups.is_empty() {
        let results = alter(ctx, groups, group_index.len(), req.validate_only).await;
        for (i, result) in group_index.into_iter().zip(results) {
            answers[i] = Some(result);
        }
    }
    if !configs.is_empty() {
        let results = crate::rpc::configs::alter(ctx, configs, req.validate_only).await;
        for (i, result) in config_index.into_iter().zip(results) {
            answers[i] = Some(result);
        }
    }
    response(&req.resources, answers)
}

/// The broker's checks of a BROKER resource before it forwards the change: its name, then its
/// configs as the operations would leave them.
fn check_broker(ctx: &RequestContext<'_>, resource: &AlterConfigsResource) -> Result<(), Answer> {
    check_broker_name(ctx.server.config.node_id, &resource.resource_name)?;
    let current = ctx
        .server
        .cluster
        .snapshot()
        .broker_configs
        .get(&resource.resource_name)
        .cloned()
        .unwrap_or_default();
    let ops: Vec<(String, i8, Option<String>)> = resource
        .configs
        .iter()
        .map(|c| (c.name.clone(), c.config_operation, c.value.clone()))
        .collect();
    check_broker_props(&incremental_broker_props(current, &ops)?)
}

/// Why the controller refuses to change this resource: not authorized (ALTER_CONFIGS on the
/// group, the topic, else the cluster), or a type kcoord keeps no configs of; `None` when the
/// controller decides it.
fn refusal(ctx: &RequestContext<'_>, resource: &AlterConfigsResource) -> Option<Answer> {
    let kind = resource.resource_type;
    alter_refused(ctx, kind, &resource.resource_name)
        .or_else(|| (![GROUP, TOPIC, BROKER].contains(&kind)).then(|| not_kept(kind)))
}

/// The controller's answer for each group change, in order (NOT_CONTROLLER for each when the
/// controller did not answer).
async fn alter(
    ctx: &RequestContext<'_>,
    changes: Vec<GroupConfigChange>,
    count: usize,
    validate_only: bool,
) -> Vec<Answer> {
    match ctx
        .server
        .controller
        .alter_group_configs(changes, validate_only)
        .await
    {
        Ok(results) => results
            .into_iter()
            .map(|result| result.map_or_else(|e| e, |()| (ErrorCode::NONE, None)))
            .collect(),
        Err(e) => vec![(ErrorCode::NOT_CONTROLLER, Some(e.to_string())); count],
    }
}

/// The response, in the request's order (`ConfigAdminManager.reassembleIncrementalResponse`).
fn response(
    resources: &[AlterConfigsResource],
    answers: Vec<Option<Answer>>,
) -> IncrementalAlterConfigsResponse {
    let responses = resources
        .iter()
        .zip(answers)
        .map(|(resource, answer)| {
            let (code, message) = answer.unwrap_or((ErrorCode::UNKNOWN_SERVER_ERROR, None));
            AlterConfigsResourceResponse {
                error_code: code.code(),
                error_message: message,
                resource_type: resource.resource_type,
                resource_name: resource.resource_name.clone(),
                ..Default::default()
            }
        })
        .collect();
    IncrementalAlterConfigsResponse {
        throttle_time_ms: 0,
        responses,
        ..Default::default()
    }
}

/// `ConfigAdminManager.preprocess`: the answers of the resources the broker settles itself.
fn preprocess(resources: &[AlterConfigsResource]) -> Vec<Option<Answer>> {
    let mut answers: Vec<Option<Answer>> = vec![None; resources.len()];
    let mut seen: HashMap<(i8, &str), usize> = HashMap::new();
    for (i, r) in resources.iter().enumerate() {
        if let Some(previous) = seen.insert((r.resource_type, r.resource_name.as_str()), i) {
            let twice = || {
                Some((
                    ErrorCode::INVALID_REQUEST,
                    Some("Each resource must appear at most once.".to_owned()),
                ))
            };
            answers[previous] = twice();
            answers[i] = twice();
        }
    }
    for (i, r) in resources.iter().enumerate() {
        if answers[i].is_some() {
            continue;
        }
        let mut keys = BTreeSet::new();
        if !r.configs.iter().all(|c| keys.insert(c.name.as_str())) {
            answers[i] = Some((
                ErrorCode::INVALID_REQUEST,
                Some("Error due to duplicate config keys".to_owned()),
            ));
            continue;
        }
        let nulls: Vec<&str> = r
            .configs
            .iter()
            .filter(|c| c.config_operation != DELETE && c.value.is_none())
            .map(|c| c.name.as_str())
            .collect();
        if !nulls.is_empty() {
            answers[i] = Some((
                ErrorCode::INVALID_REQUEST,
                Some(format!(
                    "Null value not supported for : {}",
                    nulls.join(", ")
                )),
            ));
            continue;
        }
        if ![TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP].contains(&r.resource_type) {
            answers[i] = Some((
                ErrorCode::INVALID_REQUEST,
                Some(format!("Unknown resource type {}", r.resource_type)),
            ));
        }
    }
    answers
}

/// The authorization matrix's rows of IncrementalAlterConfigs ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        row!(IncrementalAlterConfigs ("group") 1 on Broker,
            alter_configs(GROUP_RESOURCE, GROUP, "streams.session.timeout.ms", "50000"),
            needs [(AlterConfigs, Group, GROUP)],
            IncrementalAlterConfigsResponse => |r| refusal(r.responses[0].error_code, r.responses[0].error_message.as_deref()),
            allowed "NONE", denied "GROUP_AUTHORIZATION_FAILED: Group authorization failed."),
        row!(IncrementalAlterConfigs ("topic") 1 on Broker,
            alter_configs(TOPIC_RESOURCE, TOPIC, "retention.ms", "1000"),
            needs [(AlterConfigs, Topic, TOPIC)],
            IncrementalAlterConfigsResponse => |r| refusal(r.responses[0].error_code, r.responses[0].error_message.as_deref()),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED: Topic authorization failed."),
        row!(IncrementalAlterConfigs ("broker") 1 on Broker,
            alter_configs(BROKER_RESOURCE, "7", "log.retention.ms", "1000"),
            needs [(AlterConfigs, Cluster, CLUSTER)],
            IncrementalAlterConfigsResponse => |r| refusal(r.responses[0].error_code, r.responses[0].error_message.as_deref()),
            allowed "NONE", denied "CLUSTER_AUTHORIZATION_FAILED: Cluster authorization failed."),
    ]
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod topic_broker_tests;
