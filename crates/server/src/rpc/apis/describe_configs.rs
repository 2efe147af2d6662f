//! DescribeConfigs (key 32), v1-4, on broker listeners, after Kafka's
//! `KafkaApis.handleDescribeConfigsRequest` and `ConfigHelper.describeConfigs`.
//!
//! - **BROKER (4)**, DESCRIBE_CONFIGS on the cluster (else CLUSTER_AUTHORIZATION_FAILED):
//!   - this node's id: every broker config kcoord takes dynamically (`crate::rpc::configs`)
//!     with its effective value and source (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
//!     STATIC_BROKER_CONFIG, DEFAULT_CONFIG) and Kafka's synonyms; Kafka lists every broker
//!     config it has (README, "Differences");
//!   - the empty name: the cluster-wide dynamic defaults that are set, each with source
//!     DYNAMIC_DEFAULT_BROKER_CONFIG, as Kafka lists them;
//!   - a registered broker's id: the static configs it registered with (KIP-1326), each with
//!     source STATIC_BROKER_CONFIG, its value as stored (null stays null), IsSensitive false
//!     (sensitive configs never reach the controller) and ReadOnly true;
//!   - a name that is not a number, or the id of no broker, is INVALID_REQUEST with Kafka's
//!     messages (for the latter Kafka names its own id; kcoord names the registered ones).
//! - **TOPIC (2)**: every topic config Kafka 4.4 lists, with its effective value and source:
//!   DYNAMIC_TOPIC_CONFIG where the topic sets it, else the broker key's DYNAMIC_BROKER_CONFIG
//!   or DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG where the config file changed
//!   Kafka's default, else DEFAULT_CONFIG. DESCRIBE_CONFIGS on the topic is needed
//!   (else TOPIC_AUTHORIZATION_FAILED); an illegal name is INVALID_TOPIC_EXCEPTION, an unknown
//!   one UNKNOWN_TOPIC_OR_PARTITION.
//! - **GROUP (32)**: every group config Kafka 4.4 lists
//!   (`kcoord_coordinator::group_config_rules`), whether or not the group exists: the group's
//!   own value (source GROUP_CONFIG) where it set one with IncrementalAlterConfigs, else the
//!   broker's. DESCRIBE_CONFIGS on the group is needed (else GROUP_AUTHORIZATION_FAILED); an
//!   empty name is INVALID_REQUEST "Group name must not be empty".
//! - Other types (BROKER_LOGGER, CLIENT_METRICS) are not kept by kcoord:
//!   INVALID_REQUEST `Unsupported resource type: <TYPE>`, Kafka's answer for a type its
//!   ConfigHelper does not describe.
//!
//! As in Kafka (`ConfigHelper.handleDescribeConfigsRequest`), the results of the resources the
//! principal may describe come first, in request order, then those refused by authorization.
//!
//! ConfigurationKeys (non-null) restricts the answer to those names. With IncludeSynonyms a
//! broker's static config carries itself as its one synonym; a topic's or a group's config
//! carries its synonyms in Kafka's order (the topic's or group's own value first, then the
//! broker key's).

use kcoord_coordinator::GroupConfigRules;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::describe_configs_request::DescribeConfigsResource;
use kcoord_wire::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kcoord_wire::messages::{DescribeConfigsRequest, DescribeConfigsResponse};
use kcoord_wire::ErrorCode;

use super::broker_registration::KAFKA_CLUSTER;
use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::runtime::catalog::invalid_topic_name;
use crate::state::RequestContext;

/// DescribeConfigs as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::DescribeConfigs, 1, 4).asks(&[
    Check::new(AclOperation::DescribeConfigs, ResourceType::Topic),
    Check::new(AclOperation::DescribeConfigs, ResourceType::Group),
    Check::new(AclOperation::DescribeConfigs, ResourceType::Cluster),
]);

serve!(sync handle);

/// `ConfigResource.Type` ids.
pub const TOPIC: i8 = 2;
pub const BROKER: i8 = 4;
pub const BROKER_LOGGER: i8 = 8;
pub const CLIENT_METRICS: i8 = 16;
pub const GROUP: i8 = 32;

/// `ConfigEntry.ConfigSource` ids.
pub const DYNAMIC_TOPIC_CONFIG: i8 = 1;
pub const DYNAMIC_BROKER_CONFIG: i8 = 2;
pub const DYNAMIC_DEFAULT_BROKER_CONFIG: i8 = 3;
pub const STATIC_BROKER_CONFIG: i8 = 4;
pub const DEFAULT_CONFIG: i8 = 5;

pub fn handle(
    ctx: &RequestContext<'_>,
    req: DescribeConfigsRequest,
    _version: i16,
) -> DescribeConfigsResponse {
    let mut results: Vec<(bool, DescribeConfigsResult)> = req
        .resources
        .iter()
        .map(|resource| {
            let outcome = match resource.resource_type {
                BROKER => broker(ctx, resource, req.include_synonyms),
                TOPIC => topic(ctx, resource, req.include_synonyms),
                GROUP => group(ctx, resource, req.include_synonyms),
                other => Err(unsupported(other, &resource.resource_name)),
            };
            let refused = matches!(
                &outcome,
                Err((code, _)) if [
                    ErrorCode::CLUSTER_AUTHORIZATION_FAILED,
                    ErrorCode::TOPIC_AUTHORIZATION_FAILED,
                    ErrorCode::GROUP_AUTHORIZATION_FAILED,
                ].contains(code)
            );
            let (error_code, error_message, configs) = match outcome {
                // Kafka's generated default: an empty message, not null.
                Ok(configs) => (ErrorCode::NONE.code(), Some(String::new()), configs),
                Err((code, message)) => (code.code(), message, Vec::new()),
            };
            let result = DescribeConfigsResult {
                error_code,
                error_message,
                resource_type: resource.resource_type,
                resource_name: resource.resource_name.clone(),
                configs,
                ..Default::default()
            };
            (refused, result)
        })
        .collect();
    // Stable: each part keeps the request's order.
    results.sort_by_key(|(refused, _)| *refused);
    DescribeConfigsResponse {
        throttle_time_ms: 0,
        results: results.into_iter().map(|(_, r)| r).collect(),
        ..Default::default()
    }
}

type Described = Result<Vec<DescribeConfigsResourceResult>, (ErrorCode, Option<String>)>;

/// DESCRIBE_CONFIGS on the resource, or `denied` with Kafka's message for that code.
fn may_describe(
    ctx: &RequestContext<'_>,
    resource_type: ResourceType,
    name: &str,
    denied: ErrorCode,
) -> Result<(), (ErrorCode, Option<String>)> {
    if authorize(ctx, AclOperation::DescribeConfigs, resource_type, name) {
        Ok(())
    } else {
        Err((denied, Some(denied.message().to_owned())))
    }
}

fn broker(
    ctx: &RequestContext<'_>,
    resource: &DescribeConfigsResource,
    synonyms: bool,
) -> Described {
    may_describe(
        ctx,
        ResourceType::Cluster,
        KAFKA_CLUSTER,
        ErrorCode::CLUSTER_AUTHORIZATION_FAILED,
    )?;
    let name = resource.resource_name.as_str();
    if name.is_empty() {
        return Ok(this_node_configs(ctx, resource, true, synonyms));
    }
    if name == ctx.server.config.node_id.to_string() {
        return Ok(this_node_configs(ctx, resource, false, synonyms));
    }
    let Ok(id) = name.parse::<i32>() else {
        return Err((
            ErrorCode::INVALID_REQUEST,
            Some(format!("Broker id must be an integer, but it is: {name}")),
        ));
    };
    let cluster = ctx.server.cluster.snapshot();
    let Some(registration) = cluster.brokers.get(id) else {
        let known: Vec<String> = cluster.brokers.iter().map(|b| b.id.to_string()).collect();
        return Err((
            ErrorCode::INVALID_REQUEST,
            Some(format!(
                "Unexpected broker id, expected one of the registered broker ids [{}] or empty string, but received {name}",
                known.join(", ")
            )),
        ));
    };
    Ok(registration
        .static_configs
        .iter()
        .filter(|(key, _)| is_requested(resource, key))
        .map(|(key, value)| entry(key, value.clone(), STATIC_BROKER_CONFIG, true, synonyms))
        .collect())
}

fn topic(
    ctx: &RequestContext<'_>,
    resource: &DescribeConfigsResource,
    synonyms: bool,
) -> Described {
    let name = resource.resource_name.as_str();
    may_describe(
        ctx,
        ResourceType::Topic,
        name,
        ErrorCode::TOPIC_AUTHORIZATION_FAILED,
    )?;
    if let Some(message) = invalid_topic_name(name) {
        return Err((ErrorCode::INVALID_TOPIC_EXCEPTION, Some(message)));
    }
    let topics = ctx.server.topics.snapshot();
    let Some(topic) = topics.get(name) else {
        return Err((ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, Some(String::new())));
    };
    Ok(topic_configs(ctx, &topic.configs)
        .into_iter()
        .filter(|c| is_requested(resource, &c.name))
        .map(|c| {
            let mut e = entry(&c.name, Some(c.value), c.source, false, false);
            e.config_type = c.config_type;
            if synonyms {
                e.synonyms = c
                    .synonyms
                    .into_iter()
                    .map(|(name, value, source)| DescribeConfigsSynonym {
                        name,
                        value: Some(value),
                        source,
                        ..Default::default()
                    })
                    .collect();
            }
            e
        })
        .collect())
}

fn group(
    ctx: &RequestContext<'_>,
    resource: &DescribeConfigsResource,
    synonyms: bool,
) -> Described {
    let name = resource.resource_name.as_str();
    may_describe(
        ctx,
        ResourceType::Group,
        name,
        ErrorCode::GROUP_AUTHORIZATION_FAILED,
    )?;
    if name.is_empty() {
        return Err((
            ErrorCode::INVALID_REQUEST,
            Some("Group name must not be empty".to_owned()),
        ));
    }
    let cluster = ctx.server.cluster.snapshot();
    let rules = GroupConfigRules::new(ctx.server.config.streams.group_config_broker_settings());
    Ok(rules
        .describe(cluster.group_configs.get(name))
        .into_iter()
        .filter(|c| is_requested(resource, &c.name))
        .map(|c| {
            let mut e = entry(&c.name, c.value, c.source, false, false);
            e.config_type = c.config_type;
            if synonyms {
                e.synonyms = c
                    .synonyms
                    .into_iter()
                    .map(|(name, value, source)| DescribeConfigsSynonym {
                        name,
                        value,
                        source,
                        ..Default::default()
                    })
                    .collect();
            }
            e
        })
        .collect())
}

/// One topic config as DescribeConfigs shows it.
pub(crate) struct TopicConfigEntry {
    pub name: String,
    pub value: String,
    pub source: i8,
    config_type: i8,
    synonyms: Vec<(String, String, i8)>,
}

/// Every topic config Kafka 4.4 lists, by name: the topic's own value (DYNAMIC_TOPIC_CONFIG),
/// else the broker's: this node's dynamic config (DYNAMIC_BROKER_CONFIG), the cluster-wide one
/// (DYNAMIC_DEFAULT_BROKER_CONFIG), the config file's (STATIC_BROKER_CONFIG when it changed
/// Kafka's default), else Kafka's default (DEFAULT_CONFIG); synonyms as Kafka orders them,
/// topic first.
pub(crate) fn topic_configs(
    ctx: &RequestContext<'_>,
    set: &std::collections::BTreeMap<String, String>,
) -> Vec<TopicConfigEntry> {
    use kcoord_storage::log_config::{OTHER_TOPIC_CONFIGS, TOPIC_CONFIGS};
    let dynamic = BrokerLayers::of(ctx);
    let ours = TOPIC_CONFIGS
        .iter()
        .map(|(name, broker_key)| (*name, dynamic.synonyms(ctx, name, broker_key)));
    let others = OTHER_TOPIC_CONFIGS.iter().map(|(name, default)| {
        (
            *name,
            vec![((*name).to_owned(), (*default).to_owned(), DEFAULT_CONFIG)],
        )
    });
    let mut out: Vec<TopicConfigEntry> = ours
        .chain(others)
        .map(|(name, broker_synonyms)| {
            let mut synonyms = Vec::new();
            if let Some(v) = set.get(name) {
                synonyms.push((name.to_owned(), v.clone(), DYNAMIC_TOPIC_CONFIG));
            }
            synonyms.extend(broker_synonyms);
            let (value, source) = synonyms
                .first()
                .map(|(_, v, source)| (v.clone(), *source))
                .unwrap_or_else(|| (default_value(name), DEFAULT_CONFIG));
            TopicConfigEntry {
                name: name.to_owned(),
                value,
                source,
                config_type: config_type(name),
                synonyms,
            }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The value of a topic config nothing sets: the config file's, or Kafka's default.
fn default_value(name: &str) -> String {
    kcoord_storage::LogConfig::default()
        .value_of(name)
        .unwrap_or_default()
}

/// The dynamic broker configs of this node and of the cluster, as DescribeConfigs reads them.
struct BrokerLayers {
    own: std::collections::BTreeMap<String, String>,
    cluster: std::collections::BTreeMap<String, String>,
}

impl BrokerLayers {
    fn of(ctx: &RequestContext<'_>) -> BrokerLayers {
        let image = ctx.server.cluster.snapshot();
        let get = |name: &str| image.broker_configs.get(name).cloned().unwrap_or_default();
        BrokerLayers {
            own: get(&ctx.server.config.node_id.to_string()),
            cluster: get(""),
        }
    }

    /// The broker key's synonyms in Kafka's order (`ConfigHelper.configSynonyms`): this node's
    /// dynamic value, the cluster-wide one, then the config file's or Kafka's default.
    fn synonyms(
        &self,
        ctx: &RequestContext<'_>,
        topic_key: &str,
        broker_key: &str,
    ) -> Vec<(String, String, i8)> {
        let mut out = Vec::new();
        if let Some(v) = self.own.get(broker_key) {
            out.push((broker_key.to_owned(), v.clone(), DYNAMIC_BROKER_CONFIG));
        }
        if let Some(v) = self.cluster.get(broker_key) {
            out.push((
                broker_key.to_owned(),
                v.clone(),
                DYNAMIC_DEFAULT_BROKER_CONFIG,
            ));
        }
        let file = ctx.server.config.log.defaults.value_of(topic_key);
        let kafka = kcoord_storage::LogConfig::default().value_of(topic_key);
        let source = if file == kafka {
            DEFAULT_CONFIG
        } else {
            STATIC_BROKER_CONFIG
        };
        // Kafka's primary keys without a default of their own (they default through
        // `log.retention.hours`, `log.roll.hours`, ...) have no DEFAULT_CONFIG synonym.
        let no_default = ["log.retention.ms", "log.roll.ms", "log.flush.interval.ms"];
        if source == STATIC_BROKER_CONFIG || !no_default.contains(&broker_key) {
            out.push((broker_key.to_owned(), file.unwrap_or_default(), source));
        }
        out
    }
}

/// This node's broker configs (DescribeConfigs BROKER with this node's id): every broker config
/// kcoord takes dynamically, with its effective value and source; or, for the cluster-wide
/// resource (""), only the dynamic defaults set, as Kafka lists them.
fn this_node_configs(
    ctx: &RequestContext<'_>,
    resource: &DescribeConfigsResource,
    cluster_wide: bool,
    with_synonyms: bool,
) -> Vec<DescribeConfigsResourceResult> {
    let layers = BrokerLayers::of(ctx);
    kcoord_storage::log_config::TOPIC_CONFIGS
        .iter()
        .filter(|(_, broker_key)| is_requested(resource, broker_key))
        .filter(|(_, broker_key)| !cluster_wide || layers.cluster.contains_key(*broker_key))
        .map(|(topic_key, broker_key)| {
            let mut synonyms = layers.synonyms(ctx, topic_key, broker_key);
            if cluster_wide {
                synonyms.retain(|(_, _, source)| *source == DYNAMIC_DEFAULT_BROKER_CONFIG);
            }
            let (_, value, source) = synonyms
                .first()
                .cloned()
                .unwrap_or_else(|| (String::new(), default_value(topic_key), DEFAULT_CONFIG));
            let mut e = entry(broker_key, Some(value), source, false, false);
            e.config_type = config_type(topic_key);
            if with_synonyms {
                e.synonyms = synonyms
                    .into_iter()
                    .map(|(name, value, source)| DescribeConfigsSynonym {
                        name,
                        value: Some(value),
                        source,
                        ..Default::default()
                    })
                    .collect();
            }
            e
        })
        .collect()
}

/// Kafka's `ConfigDef.Type` ids: BOOLEAN 1, STRING 2, INT 3, LONG 5, DOUBLE 6, LIST 7.
fn config_type(name: &str) -> i8 {
    match name {
        "preallocate"
        | "unclean.leader.election.enable"
        | "remote.storage.enable"
        | "remote.log.copy.disable"
        | "remote.log.delete.on.disable"
        | "errors.deadletterqueue.group.enable" => 1,
        "compression.type" | "message.timestamp.type" => 2,
        "segment.bytes"
        | "max.message.bytes"
        | "index.interval.bytes"
        | "segment.index.bytes"
        | "min.insync.replicas"
        | "max.decompressed.message.bytes"
        | "compression.gzip.level"
        | "compression.lz4.level"
        | "compression.zstd.level" => 3,
        "min.cleanable.dirty.ratio" => 6,
        "cleanup.policy"
        | "follower.replication.throttled.replicas"
        | "leader.replication.throttled.replicas" => 7,
        _ => 5,
    }
}

/// ConfigurationKeys: null or empty asks for every config (`ConfigHelperUtils`).
fn is_requested(resource: &DescribeConfigsResource, key: &str) -> bool {
    resource
        .configuration_keys
        .as_ref()
        .is_none_or(|keys| keys.is_empty() || keys.iter().any(|k| k == key))
}

fn entry(
    name: &str,
    value: Option<String>,
    source: i8,
    read_only: bool,
    with_synonyms: bool,
) -> DescribeConfigsResourceResult {
    DescribeConfigsResourceResult {
        name: name.to_owned(),
        synonyms: if with_synonyms {
            vec![DescribeConfigsSynonym {
                name: name.to_owned(),
                value: value.clone(),
                source,
                ..Default::default()
            }]
        } else {
            Vec::new()
        },
        value,
        read_only,
        config_source: source,
        is_sensitive: false,
        config_type: 0,
        documentation: None,
        ..Default::default()
    }
}

fn unsupported(resource_type: i8, name: &str) -> (ErrorCode, Option<String>) {
    let known = match resource_type {
        BROKER_LOGGER => "BROKER_LOGGER",
        CLIENT_METRICS => "CLIENT_METRICS",
        _ => {
            return (
                ErrorCode::INVALID_REQUEST,
                Some(format!(
                    "Unexpected resource type UNKNOWN for resource {name}"
                )),
            )
        }
    };
    (
        ErrorCode::INVALID_REQUEST,
        Some(format!("Unsupported resource type: {known}")),
    )
}

/// The authorization matrix's rows of DescribeConfigs ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        row!(DescribeConfigs ("topic") 4 on Broker, describe_configs(TOPIC_RESOURCE, TOPIC),
            needs [(DescribeConfigs, Topic, TOPIC)],
            DescribeConfigsResponse => |r| refusal(r.results[0].error_code, r.results[0].error_message.as_deref()),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED: Topic authorization failed."),
        row!(DescribeConfigs ("group") 4 on Broker, describe_configs(GROUP_RESOURCE, GROUP),
            needs [(DescribeConfigs, Group, GROUP)],
            DescribeConfigsResponse => |r| refusal(r.results[0].error_code, r.results[0].error_message.as_deref()),
            allowed "NONE", denied "GROUP_AUTHORIZATION_FAILED: Group authorization failed."),
        // The empty name: the cluster-wide defaults.
        row!(DescribeConfigs ("broker") 4 on Broker, describe_configs(BROKER_RESOURCE, ""),
            needs [(DescribeConfigs, Cluster, CLUSTER)],
            DescribeConfigsResponse => |r| refusal(r.results[0].error_code, r.results[0].error_message.as_deref()),
            allowed "NONE", denied "CLUSTER_AUTHORIZATION_FAILED: Cluster authorization failed."),
    ]
}

#[cfg(test)]
mod tests;
