//! IncrementalAlterConfigs and AlterConfigs of TOPIC and BROKER resources as the controller
//! decides them, sans-IO, after Kafka 4.4's `ConfigurationControlManager`
//! (`incrementalAlterConfigResource`, `legacyAlterConfigResource`, `validateAlterConfig`) with
//! `ControllerConfigurationValidator` and the controller's existence check: each resource's
//! operations are applied to its current dynamic configs, a ConfigRecord is written for every
//! key whose value changes (for a BROKER resource for every key named, as Kafka writes them to
//! make brokers reload), and the configs as they would be afterwards are validated as a whole.
//! A resource that fails writes nothing; the others still apply.
//!
//! The broker already refused what Kafka's broker refuses before forwarding (a BROKER resource
//! not named "" or this node's id, a broker key that cannot change dynamically); the controller
//! checks names, values, and that the resource exists.

use std::collections::BTreeMap;

use kcoord_metadata::{invalid_topic_name, LogState, Record, BROKER_RESOURCE};
use kcoord_wire::records::ConfigRecord;
use kcoord_wire::ErrorCode;

use crate::group_configs::{ResourceError, APPEND, DELETE, SET, SUBTRACT};
use crate::topics::Decision;

/// DescribeConfigs / ConfigRecord resource type of a topic.
pub const TOPIC_RESOURCE: i8 = 2;

/// Kafka stores a config value in a ConfigRecord only up to `Short.MAX_VALUE` bytes.
const MAX_VALUE_SIZE: usize = i16::MAX as usize;

/// How a resource's configs change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigOps {
    /// IncrementalAlterConfigs: (key, `AlterConfigOp.OpType` id, value) triples.
    Incremental(Vec<(String, i8, Option<String>)>),
    /// AlterConfigs: every dynamic config the resource keeps; the others are deleted.
    Replace(Vec<(String, String)>),
}

/// One TOPIC or BROKER resource of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigChange {
    pub resource_type: i8,
    pub name: String,
    pub ops: ConfigOps,
}

/// The records (none when `validate_only`) and one result per change, in order. `node_id` is
/// this node, the one broker whose id names a BROKER resource besides the registered ones.
pub fn alter_configs(
    state: &LogState,
    node_id: i32,
    changes: &[ConfigChange],
    validate_only: bool,
) -> Decision<Result<(), ResourceError>> {
    let mut records = Vec::new();
    let mut results = Vec::with_capacity(changes.len());
    for change in changes {
        match alter_one(state, node_id, change) {
            Ok(mut r) => {
                if !validate_only {
                    records.append(&mut r);
                }
                results.push(Ok(()));
            }
            Err(e) => results.push(Err(e)),
        }
    }
    Decision { records, results }
}

fn alter_one(
    state: &LogState,
    node_id: i32,
    change: &ConfigChange,
) -> Result<Vec<Record>, ResourceError> {
    let current = current_configs(state, change);
    let always = change.resource_type == BROKER_RESOURCE;
    let mut altered: Vec<(String, Option<String>)> = Vec::new();
    match &change.ops {
        ConfigOps::Incremental(ops) => {
            for (key, op, value) in ops {
                let before = current.get(key).cloned();
                let after = incremental_value(change.resource_type, key, *op, value, &before)?;
                if always || before != after {
                    altered.push((key.clone(), after));
                }
            }
        }
        ConfigOps::Replace(configs) => {
            for (key, value) in configs {
                if always || current.get(key) != Some(value) {
                    altered.push((key.clone(), Some(value.clone())));
                }
            }
            // Kafka's implicit deletions: the keys the request leaves out.
            altered.extend(
                current
                    .keys()
                    .filter(|k| !configs.iter().any(|(name, _)| name == *k))
                    .map(|k| (k.clone(), None)),
            );
        }
    }
    let mut after = current.clone();
    for (key, value) in &altered {
        match value {
            Some(v) if v.len() > MAX_VALUE_SIZE => {
                return Err((
                    ErrorCode::INVALID_CONFIG,
                    Some(format!("The configuration value cannot be added because it exceeds the maximum value size of {MAX_VALUE_SIZE} bytes.")),
                ))
            }
            Some(v) => after.insert(key.clone(), v.clone()),
            None => after.remove(key),
        };
    }
    validate(change, &after)?;
    exists(state, node_id, change)?;
    Ok(altered
        .into_iter()
        .map(|(name, value)| {
            Record::Config(ConfigRecord {
                resource_type: change.resource_type,
                resource_name: change.name.clone(),
                name,
                value,
                ..Default::default()
            })
        })
        .collect())
}

fn current_configs(state: &LogState, change: &ConfigChange) -> BTreeMap<String, String> {
    let found = if change.resource_type == TOPIC_RESOURCE {
        state.topics.get(&change.name).map(|t| &t.configs)
    } else {
        state.broker_configs.get(&change.name)
    };
    found.cloned().unwrap_or_default()
}

/// One incremental operation's new value (`None`: deleted).
fn incremental_value(
    resource_type: i8,
    key: &str,
    op: i8,
    value: &Option<String>,
    before: &Option<String>,
) -> Result<Option<String>, ResourceError> {
    match op {
        SET => Ok(value.clone()),
        DELETE => Ok(None),
        APPEND | SUBTRACT => {
            let Some(default) = list_default(resource_type, key) else {
                let op_name = if op == APPEND { "APPEND" } else { "SUBTRACT" };
                return Err((
                    ErrorCode::INVALID_CONFIG,
                    Some(format!(
                        "Can't {op_name} to key {key} because its type is not LIST."
                    )),
                ));
            };
            let old = before.as_deref().unwrap_or(default);
            let mut parts: Vec<&str> = old.split(',').filter(|p| !p.is_empty()).collect();
            let given = value.as_deref().unwrap_or_default();
            if op == APPEND {
                for v in given.split(',') {
                    if !parts.contains(&v) {
                        parts.push(v);
                    }
                }
            } else {
                for v in given.split(',') {
                    // Java's `List.remove(Object)`: the first occurrence only.
                    if let Some(i) = parts.iter().position(|p| *p == v) {
                        parts.remove(i);
                    }
                }
            }
            Ok(Some(parts.join(",")))
        }
        // Kafka's controller fails on an operation id it does not know (a null OpType).
        _ => Err((ErrorCode::UNKNOWN_SERVER_ERROR, None)),
    }
}

/// The default of a LIST config (`KafkaConfigSchema.isSplittable`), `None` for other keys.
fn list_default(resource_type: i8, key: &str) -> Option<&'static str> {
    match (resource_type, key) {
        (TOPIC_RESOURCE, "cleanup.policy") | (BROKER_RESOURCE, "log.cleanup.policy") => {
            Some("delete")
        }
        (
            TOPIC_RESOURCE,
            "follower.replication.throttled.replicas" | "leader.replication.throttled.replicas",
        ) => Some(""),
        _ => None,
    }
}

/// `ControllerConfigurationValidator.validate` with the resource's configs afterwards.
fn validate(change: &ConfigChange, after: &BTreeMap<String, String>) -> Result<(), ResourceError> {
    let name = change.name.as_str();
    if change.resource_type == TOPIC_RESOURCE {
        if name.is_empty() {
            return Err((
                ErrorCode::INVALID_REQUEST,
                Some("Default topic resources are not allowed.".to_owned()),
            ));
        }
        if let Some(message) = invalid_topic_name(name) {
            return Err((ErrorCode::INVALID_TOPIC_EXCEPTION, Some(message)));
        }
        for (key, value) in after {
            kcoord_storage::log_config::validate_topic_config(key, value)
                .map_err(|m| (ErrorCode::INVALID_CONFIG, Some(m)))?;
        }
        return Ok(());
    }
    if !name.is_empty() {
        let id: i32 = name.parse().map_err(|_| {
            (
                ErrorCode::INVALID_REQUEST,
                Some("Unable to parse broker name as a base 10 number.".to_owned()),
            )
        })?;
        if id < 0 {
            return Err((
                ErrorCode::INVALID_REQUEST,
                Some("Invalid negative broker ID.".to_owned()),
            ));
        }
    }
    Ok(())
}

/// The controller's existence check (`ConfigResourceExistenceChecker`).
fn exists(state: &LogState, node_id: i32, change: &ConfigChange) -> Result<(), ResourceError> {
    let name = change.name.as_str();
    if change.resource_type == TOPIC_RESOURCE {
        if state.topics.get(name).is_none() {
            return Err((
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                Some(format!("The topic '{name}' does not exist.")),
            ));
        }
        return Ok(());
    }
    if name.is_empty() {
        return Ok(());
    }
    let id: i32 = name.parse().map_err(|_| {
        (
            ErrorCode::INVALID_REQUEST,
            Some(format!("Invalid broker name {name}")),
        )
    })?;
    if id != node_id && state.brokers.get(id).is_none() {
        return Err((
            ErrorCode::BROKER_ID_NOT_REGISTERED,
            Some(format!("No node with id {id} found.")),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
