//! AlterConfigs (key 33), v0-2, on broker listeners: the legacy form of IncrementalAlterConfigs,
//! whose resources name every dynamic config they keep (the others are deleted), after Kafka
//! 4.4's `KafkaApis.handleAlterConfigsRequest`: the broker's preprocessing
//! (`ConfigAdminManager.preprocess` for AlterConfigsRequest), then the controller
//! (`ControllerApis.handleLegacyAlterConfigs`: ALTER_CONFIGS authorization, then
//! `ConfigurationControlManager.legacyAlterConfigs`), answered in the request's order
//! (`reassembleLegacyResponse`).
//!
//! - A resource named twice: INVALID_REQUEST "Each resource must appear at most once." for
//!   each; a key named twice: "Error due to duplicate config keys"; a null value: "Null value
//!   not supported for : k1, k2"; a type other than TOPIC, BROKER, CLIENT_METRICS and GROUP
//!   (BROKER_LOGGER included): "Unknown resource type N".
//! - BROKER: named "" or this node's id, with configs kcoord takes dynamically
//!   (`crate::rpc::configs`), then ALTER_CONFIGS on the cluster.
//! - TOPIC: ALTER_CONFIGS on the topic, then the controller, as IncrementalAlterConfigs.
//! - GROUP: ALTER_CONFIGS on the group, then the group's configs become the ones given (the
//!   controller's group config rules, as IncrementalAlterConfigs).
//! - CLIENT_METRICS: ALTER_CONFIGS on the cluster, then INVALID_REQUEST: kcoord keeps none.

use std::collections::{BTreeSet, HashMap};

use kcoord_controller::configs::{ConfigChange, ConfigOps};
use kcoord_controller::group_configs::{GroupConfigChange, DELETE, SET};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::alter_configs_request::AlterConfigsResource;
use kcoord_wire::messages::alter_configs_response::AlterConfigsResourceResponse;
use kcoord_wire::messages::{AlterConfigsRequest, AlterConfigsResponse};
use kcoord_wire::ErrorCode;

use super::describe_configs::{BROKER, CLIENT_METRICS, GROUP, TOPIC};
use crate::rpc::authorize::{AclOperation, ResourceType};
use crate::rpc::configs::{alter_refused, check_broker_name, check_broker_props, not_kept, Answer};
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;

/// AlterConfigs as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::AlterConfigs, 0, 2)
    .asks(&[
        Check::new(AclOperation::AlterConfigs, ResourceType::Topic),
        Check::new(AclOperation::AlterConfigs, ResourceType::Group),
        Check::new(AclOperation::AlterConfigs, ResourceType::Cluster),
    ])
    .mirrored_in_gateway();

serve!(async handle);

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: AlterConfigsRequest,
    _version: i16,
) -> AlterConfigsResponse {
    let mut answers = preprocess(ctx, &req.resources);
    let mut configs = Vec::new();
    let mut config_index = Vec::new();
    let mut groups = Vec::new();
    let mut group_index = Vec::new();
    for (i, resource) in req.resources.iter().enumerate() {
        if answers[i].is_some() {
            continue;
        }
        if let Some(refused) = refusal(ctx, resource) {
            answers[i] = Some(refused);
            continue;
        }
        let given: Vec<(String, String)> = resource
            .configs
            .iter()
            .map(|c| (c.name.clone(), c.value.clone().unwrap_or_default()))
            .collect();
        if resource.resource_type == GROUP {
            groups.push(group_change(ctx, &resource.resource_name, given));
            group_index.push(i);
        } else {
            configs.push(ConfigChange {
                resource_type: resource.resource_type,
                name: resource.resource_name.clone(),
                ops: ConfigOps::Replace(given),
            });
            config_index.push(i);
        }
    }
    if !configs.is_empty() {
        let results = crate::rpc::configs::alter(ctx, configs, req.validate_only).await;
        for (i, result) in config_index.into_iter().zip(results) {
            answers[i] = Some(result);
        }
    }
    if !groups.is_empty() {
        let results = alter_groups(ctx, groups, req.validate_only).await;
        for (i, result) in group_index.into_iter().zip(results) {
            answers[i] = Some(result);
        }
    }
    response(&req.resources, answers)
}

/// A group's configs replaced by `given`: each given key set, each other key it has deleted.
fn group_change(
    ctx: &RequestContext<'_>,
    group: &str,
    given: Vec<(String, String)>,
) -> GroupConfigChange {
    let image = ctx.server.cluster.snapshot();
    let mut ops: Vec<(String, i8, Option<String>)> = image
        .group_configs
        .get(group)
        .into_iter()
        .flat_map(|current| current.keys())
        .filter(|k| !given.iter().any(|(name, _)| name == *k))
        .map(|k| (k.clone(), DELETE, None))
        .collect();
    ops.extend(given.into_iter().map(|(k, v)| (k, SET, Some(v))));
    GroupConfigChange {
        group: group.to_owned(),
        ops,
    }
}

async fn alter_groups(
    ctx: &RequestContext<'_>,
    changes: Vec<GroupConfigChange>,
    validate_only: bool,
) -> Vec<Answer> {
    let count = changes.len();
    match ctx
        .server
        .controller
        .alter_group_configs(changes, validate_only)
        .await
    {
        Ok(results) => results
            .into_iter()
            .map(|r| r.map_or_else(|e| e, |()| (ErrorCode::NONE, None)))
            .collect(),
        Err(e) => vec![(ErrorCode::NOT_CONTROLLER, Some(e.to_string())); count],
    }
}

/// ALTER_CONFIGS on the resource (`ControllerApis.authorizeAlterResource`), then what kcoord
/// keeps no configs of.
fn refusal(ctx: &RequestContext<'_>, resource: &AlterConfigsResource) -> Option<Answer> {
    let kind = resource.resource_type;
    alter_refused(ctx, kind, &resource.resource_name)
        .or_else(|| (kind == CLIENT_METRICS).then(|| not_kept(kind)))
}

/// `ConfigAdminManager.preprocess` (AlterConfigs): the answers the broker gives itself.
fn preprocess(ctx: &RequestContext<'_>, resources: &[AlterConfigsResource]) -> Vec<Option<Answer>> {
    let mut answers: Vec<Option<Answer>> = vec![None; resources.len()];
    let mut seen: HashMap<(i8, &str), usize> = HashMap::new();
    let twice = || {
        Some((
            ErrorCode::INVALID_REQUEST,
            Some("Each resource must appear at most once.".to_owned()),
        ))
    };
    for (i, r) in resources.iter().enumerate() {
        if let Some(previous) = seen.insert((r.resource_type, r.resource_name.as_str()), i) {
            answers[previous] = twice();
            answers[i] = twice();
        }
    }
    for (i, r) in resources.iter().enumerate() {
        if answers[i].is_none() {
            answers[i] = check(ctx, r).err();
        }
    }
    answers
}

fn check(ctx: &RequestContext<'_>, r: &AlterConfigsResource) -> Result<(), Answer> {
    let invalid = |m: String| (ErrorCode::INVALID_REQUEST, Some(m));
    let mut keys = BTreeSet::new();
    if !r.configs.iter().all(|c| keys.insert(c.name.as_str())) {
        return Err(invalid("Error due to duplicate config keys".to_owned()));
    }
    let nulls: Vec<&str> = r
        .configs
        .iter()
        .filter(|c| c.value.is_none())
        .map(|c| c.name.as_str())
        .collect();
    if !nulls.is_empty() {
        return Err(invalid(format!(
            "Null value not supported for : {}",
            nulls.join(", ")
        )));
    }
    match r.resource_type {
        BROKER => {
            check_broker_name(ctx.server.config.node_id, &r.resource_name)?;
            let props = r
                .configs
                .iter()
                .map(|c| (c.name.clone(), c.value.clone().unwrap_or_default()))
                .collect();
            check_broker_props(&props)
        }
        TOPIC | CLIENT_METRICS | GROUP => Ok(()),
        other => Err(invalid(format!("Unknown resource type {other}"))),
    }
}

fn response(
    resources: &[AlterConfigsResource],
    answers: Vec<Option<Answer>>,
) -> AlterConfigsResponse {
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
    AlterConfigsResponse {
        throttle_time_ms: 0,
        responses,
        ..Default::default()
    }
}

/// The authorization matrix's rows of AlterConfigs ([`crate::rpc::authorize`]'s matrix tests):
/// each request with the ACLs that allow it and what an allowed and a refused principal get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        row!(AlterConfigs ("topic") 2 on Broker,
            legacy_alter_configs(TOPIC_RESOURCE, TOPIC, "retention.ms", "1000"),
            needs [(AlterConfigs, Topic, TOPIC)],
            AlterConfigsResponse => |r| refusal(r.responses[0].error_code, r.responses[0].error_message.as_deref()),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED: Topic authorization failed."),
        row!(AlterConfigs ("broker") 2 on Broker,
            legacy_alter_configs(BROKER_RESOURCE, "", "log.retention.ms", "1000"),
            needs [(AlterConfigs, Cluster, CLUSTER)],
            AlterConfigsResponse => |r| refusal(r.responses[0].error_code, r.responses[0].error_message.as_deref()),
            allowed "NONE", denied "CLUSTER_AUTHORIZATION_FAILED: Cluster authorization failed."),
        row!(AlterConfigs ("group") 2 on Broker,
            legacy_alter_configs(GROUP_RESOURCE, GROUP, "streams.session.timeout.ms", "50000"),
            needs [(AlterConfigs, Group, GROUP)],
            AlterConfigsResponse => |r| refusal(r.responses[0].error_code, r.responses[0].error_message.as_deref()),
            allowed "NONE", denied "GROUP_AUTHORIZATION_FAILED: Group authorization failed."),
    ]
}

#[cfg(test)]
pub(crate) mod tests;
