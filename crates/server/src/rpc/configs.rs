//! What IncrementalAlterConfigs and AlterConfigs share: the broker's checks of a BROKER
//! resource before it forwards the change (Kafka 4.4's `ConfigAdminManager.preprocess` with
//! `DynamicBrokerConfig.validateConfigs`), and handing TOPIC and BROKER changes to the
//! controller (`kcoord_controller::configs`).
//!
//! The dynamic broker configs kcoord takes are the broker-level defaults of the topic configs
//! its partitions read ([`kcoord_storage::log_config::TOPIC_CONFIGS`]: `log.retention.ms`,
//! `log.segment.bytes`, `log.cleanup.policy`, `message.max.bytes`, ...), per broker (this
//! node's id) or cluster-wide (""): all of them are dynamic in Kafka too, and all take effect
//! on live partitions. Any other key is refused as Kafka refuses a broker config that cannot
//! change dynamically.

use std::collections::BTreeMap;

use kcoord_controller::configs::ConfigChange;
use kcoord_controller::group_configs::{APPEND, DELETE, SET, SUBTRACT};
use kcoord_storage::log_config::validate_broker_log_config;
use kcoord_wire::ErrorCode;

use crate::rpc::apis::broker_registration::KAFKA_CLUSTER;
use crate::rpc::apis::describe_configs::{GROUP, TOPIC};
use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::lists::{java_hash_set_order, java_table_size};
use crate::state::RequestContext;

/// An answer for one resource: its error code and message.
pub type Answer = (ErrorCode, Option<String>);

/// ALTER_CONFIGS on the resource (`ControllerApis.authorizeAlterResource`: on the group, the
/// topic, else the cluster): the refusal when the principal may not alter it.
pub fn alter_refused(ctx: &RequestContext<'_>, resource_type: i8, name: &str) -> Option<Answer> {
    let (allowed, denied) = match resource_type {
        GROUP => (
            authorize(ctx, AclOperation::AlterConfigs, ResourceType::Group, name),
            ErrorCode::GROUP_AUTHORIZATION_FAILED,
        ),
        TOPIC => (
            authorize(ctx, AclOperation::AlterConfigs, ResourceType::Topic, name),
            ErrorCode::TOPIC_AUTHORIZATION_FAILED,
        ),
        _ => (
            authorize(
                ctx,
                AclOperation::AlterConfigs,
                ResourceType::Cluster,
                KAFKA_CLUSTER,
            ),
            ErrorCode::CLUSTER_AUTHORIZATION_FAILED,
        ),
    };
    (!allowed).then(|| (denied, Some(denied.message().to_owned())))
}

/// The answer for a resource type kcoord keeps no configs of.
pub fn not_kept(resource_type: i8) -> Answer {
    invalid_request(format!(
        "kcoord keeps no configs of resource type {resource_type} (it alters topic, broker and group configs)."
    ))
}

fn invalid_request(message: String) -> Answer {
    (ErrorCode::INVALID_REQUEST, Some(message))
}

/// `validateResourceNameIsCurrentNodeId`: a BROKER resource other than the cluster-wide one
/// must name this node.
pub fn check_broker_name(node_id: i32, name: &str) -> Result<(), Answer> {
    if name.is_empty() {
        return Ok(());
    }
    let Ok(id) = name.parse::<i32>() else {
        return Err(invalid_request(format!(
            "Node id must be an integer, but it is: {name}"
        )));
    };
    if id != node_id {
        return Err(invalid_request(format!(
            "Unexpected broker id, expected {node_id}, but received {name}"
        )));
    }
    Ok(())
}

/// A BROKER resource's configs after `ops` (`prepareIncrementalConfigs`), from what the
/// metadata log holds for it.
pub fn incremental_broker_props(
    current: BTreeMap<String, String>,
    ops: &[(String, i8, Option<String>)],
) -> Result<BTreeMap<String, String>, Answer> {
    let mut props = current;
    for (key, op, value) in ops {
        match *op {
            SET => {
                props.insert(key.clone(), value.clone().unwrap_or_default());
            }
            DELETE => {
                props.remove(key);
            }
            APPEND | SUBTRACT => {
                let verb = if *op == APPEND { "append" } else { "subtract" };
                // Only `log.cleanup.policy` is a LIST among the keys kcoord takes; any other
                // key is refused below as one that cannot change dynamically.
                if key != "log.cleanup.policy" {
                    if kcoord_storage::log_config::topic_config_of_broker_key(key).is_some() {
                        return Err((
                            ErrorCode::INVALID_CONFIG,
                            Some(format!(
                                "Config value {verb} is not allowed for config key: {key}"
                            )),
                        ));
                    }
                    props.insert(key.clone(), value.clone().unwrap_or_default());
                    continue;
                }
                let old = props
                    .get(key)
                    .cloned()
                    .unwrap_or_else(|| "delete".to_owned());
                let mut parts: Vec<String> = old
                    .split(',')
                    .filter(|p| !p.is_empty())
                    .map(str::to_owned)
                    .collect();
                let given: Vec<&str> = value.as_deref().unwrap_or_default().split(',').collect();
                if *op == APPEND {
                    for v in given {
                        if !parts.iter().any(|p| p == v) {
                            parts.push(v.to_owned());
                        }
                    }
                } else {
                    parts.retain(|p| !given.contains(&p.as_str()));
                }
                props.insert(key.clone(), parts.join(","));
            }
            other => {
                return Err(invalid_request(format!("Unknown operations type {other}")));
            }
        }
    }
    Ok(props)
}

/// `DynamicBrokerConfig.validateConfigs` on a BROKER resource's configs as they would be: a
/// key kcoord does not take dynamically is refused, listed as Kafka lists a Java set, then
/// each value is checked as Kafka's broker config definition does (INVALID_REQUEST: Kafka
/// wraps the broker's ConfigException so).
pub fn check_broker_props(props: &BTreeMap<String, String>) -> Result<(), Answer> {
    let fixed: Vec<&str> = props
        .keys()
        .map(String::as_str)
        .filter(|k| kcoord_storage::log_config::topic_config_of_broker_key(k).is_none())
        .collect();
    if !fixed.is_empty() {
        let table = java_table_size(fixed.len());
        return Err(invalid_request(format!(
            "Cannot update these configs dynamically: [{}]",
            java_hash_set_order(fixed, table).join(", ")
        )));
    }
    for (key, value) in props {
        validate_broker_log_config(key, value).map_err(|e| invalid_request(e.to_string()))?;
    }
    Ok(())
}

/// The controller's answer for each TOPIC or BROKER change, in order (NOT_CONTROLLER for each
/// when the controller did not answer, the batch's error for the accepted ones when it was not
/// written).
pub async fn alter(
    ctx: &RequestContext<'_>,
    changes: Vec<ConfigChange>,
    validate_only: bool,
) -> Vec<Answer> {
    let count = changes.len();
    let ran = ctx
        .server
        .controller
        .run("AlterConfigs", move |c, _now| {
            Ok(c.alter_configs(&changes, validate_only))
        })
        .await;
    match ran {
        Ok(Ok(results)) => results
            .into_iter()
            .map(|r| r.map_or_else(|e| e, |()| (ErrorCode::NONE, None)))
            .collect(),
        Ok(Err(refused)) => {
            let failed = (refused.error.code, Some(refused.error.message.clone()));
            match refused.decided {
                Some(results) => results
                    .into_iter()
                    .map(|r| r.map_or_else(|e| e, |()| failed.clone()))
                    .collect(),
                None => vec![failed; count],
            }
        }
        Err(e) => vec![(ErrorCode::NOT_CONTROLLER, Some(e.to_string())); count],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn broker_names_and_keys_are_checked_as_kafkas_broker_does() {
        assert_eq!(check_broker_name(1, ""), Ok(()));
        assert_eq!(check_broker_name(1, "1"), Ok(()));
        assert_eq!(
            check_broker_name(1, "2").unwrap_err().1.as_deref(),
            Some("Unexpected broker id, expected 1, but received 2")
        );
        assert_eq!(
            check_broker_name(1, "b").unwrap_err().1.as_deref(),
            Some("Node id must be an integer, but it is: b")
        );
        assert_eq!(
            check_broker_props(&props(&[("log.retention.ms", "5")])),
            Ok(())
        );
        assert_eq!(
            check_broker_props(&props(&[("log.dirs", "/x"), ("num.io.threads", "8")]))
                .unwrap_err()
                .1
                .as_deref(),
            Some("Cannot update these configs dynamically: [num.io.threads, log.dirs]")
        );
        assert_eq!(
            check_broker_props(&props(&[("log.retention.ms", "x")])).unwrap_err(),
            (
                ErrorCode::INVALID_REQUEST,
                Some(
                    "Invalid value x for configuration log.retention.ms: Not a number of type LONG"
                        .into()
                )
            )
        );
    }

    #[test]
    fn incremental_operations_on_broker_configs() {
        let ops = vec![
            (
                "log.cleanup.policy".to_owned(),
                APPEND,
                Some("compact".to_owned()),
            ),
            ("log.retention.ms".to_owned(), SET, Some("10".to_owned())),
            ("message.max.bytes".to_owned(), DELETE, None),
        ];
        let after = incremental_broker_props(props(&[("message.max.bytes", "100")]), &ops).unwrap();
        assert_eq!(
            after,
            props(&[
                ("log.cleanup.policy", "delete,compact"),
                ("log.retention.ms", "10")
            ])
        );
        let append = vec![("log.retention.ms".to_owned(), APPEND, Some("1".to_owned()))];
        assert_eq!(
            incremental_broker_props(BTreeMap::new(), &append).unwrap_err(),
            (
                ErrorCode::INVALID_CONFIG,
                Some("Config value append is not allowed for config key: log.retention.ms".into())
            )
        );
    }
}
