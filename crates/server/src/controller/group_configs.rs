//! IncrementalAlterConfigs of GROUP resources as the controller decides it, sans-IO, after
//! Kafka's `ConfigurationControlManager.incrementalAlterConfigResource` and
//! `validateAlterConfig`: each resource's operations are applied to its current configs, a
//! ConfigRecord is written for every key whose value changes, and the group's configs as they
//! would be afterwards are validated as a whole (`ControllerConfigurationValidator` →
//! `GroupConfig.validate`). A resource that fails writes nothing; the others still apply.

use std::collections::BTreeMap;

use kcoord_metadata::{GroupConfigsImage, Record, GROUP_RESOURCE};
use kcoord_wire::records::ConfigRecord;
use kcoord_wire::ErrorCode;

use super::topics::Decision;
use crate::group_configs::GroupConfigRules;

/// `AlterConfigOp.OpType` ids.
pub const SET: i8 = 0;
pub const DELETE: i8 = 1;
pub const APPEND: i8 = 2;
pub const SUBTRACT: i8 = 3;

/// Kafka stores a config value in a ConfigRecord only up to `Short.MAX_VALUE` bytes.
const MAX_VALUE_SIZE: usize = i16::MAX as usize;

/// One group resource of the request: its name and its (key, operation, value) triples.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupConfigChange {
    pub group: String,
    pub ops: Vec<(String, i8, Option<String>)>,
}

pub type ResourceError = (ErrorCode, Option<String>);

/// The records (none when `validate_only`) and one result per change, in order.
pub fn alter_group_configs(
    image: &GroupConfigsImage,
    rules: &GroupConfigRules,
    changes: &[GroupConfigChange],
    validate_only: bool,
) -> Decision<Result<(), ResourceError>> {
    let mut records = Vec::new();
    let mut results = Vec::with_capacity(changes.len());
    for change in changes {
        match alter_one(image, rules, change) {
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
    image: &GroupConfigsImage,
    rules: &GroupConfigRules,
    change: &GroupConfigChange,
) -> Result<Vec<Record>, ResourceError> {
    let current = image.get(&change.group).cloned().unwrap_or_default();
    let mut after: BTreeMap<String, String> = current.clone();
    let mut records = Vec::new();
    for (key, op, value) in &change.ops {
        let new_value = match *op {
            SET => value.clone(),
            DELETE => None,
            APPEND | SUBTRACT => {
                // Kafka's controller has no config schema for GROUP resources
                // (`KafkaConfigSchema.isSplittable` is false), so even the LIST key
                // `streams.rack.aware.assignment.tags` cannot be appended to.
                let op_name = if *op == APPEND { "APPEND" } else { "SUBTRACT" };
                return Err((
                    ErrorCode::INVALID_CONFIG,
                    Some(format!(
                        "Can't {op_name} to key {key} because its type is not LIST."
                    )),
                ));
            }
            // Kafka's controller fails on an operation id it does not know (a null OpType) and
            // answers the whole request with UNKNOWN_SERVER_ERROR; kcoord answers the resource.
            _ => return Err((ErrorCode::UNKNOWN_SERVER_ERROR, None)),
        };
        if current.get(key) != new_value.as_ref() {
            records.push(Record::Config(ConfigRecord {
                resource_type: GROUP_RESOURCE,
                resource_name: change.group.clone(),
                name: key.clone(),
                value: new_value.clone(),
                ..Default::default()
            }));
        }
        match new_value {
            Some(v) if v.len() > MAX_VALUE_SIZE => {
                return Err((
                    ErrorCode::INVALID_CONFIG,
                    Some(format!(
                        "The configuration value cannot be added because it exceeds the maximum value size of {MAX_VALUE_SIZE} bytes."
                    )),
                ))
            }
            Some(v) => {
                after.insert(key.clone(), v);
            }
            None => {
                after.remove(key);
            }
        }
    }
    // `ControllerConfigurationValidator.validate` for GROUP.
    if change.group.is_empty() {
        return Err((
            ErrorCode::INVALID_REQUEST,
            Some("Default group resources are not allowed.".to_owned()),
        ));
    }
    rules
        .validate(&after)
        .map_err(|message| (ErrorCode::INVALID_CONFIG, Some(message)))?;
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StreamsGroupConfig;
    use kcoord_metadata::Store;

    fn change(group: &str, ops: &[(&str, i8, Option<&str>)]) -> GroupConfigChange {
        GroupConfigChange {
            group: group.into(),
            ops: ops
                .iter()
                .map(|(k, o, v)| ((*k).to_owned(), *o, v.map(str::to_owned)))
                .collect(),
        }
    }

    fn rules() -> GroupConfigRules {
        GroupConfigRules::new(StreamsGroupConfig::default())
    }

    #[test]
    fn sets_and_deletes_write_records_for_changed_keys_only_and_validate_the_whole_group() {
        let mut store = Store::new();
        let d = alter_group_configs(
            &store.state().group_configs,
            &rules(),
            &[change(
                "g",
                &[
                    ("streams.session.timeout.ms", SET, Some("50000")),
                    ("streams.num.standby.replicas", SET, Some("1")),
                ],
            )],
            false,
        );
        assert_eq!(d.results, vec![Ok(())]);
        assert_eq!(d.records.len(), 2);
        store.append(d.records).unwrap();
        // Setting the same value again writes nothing; deleting writes a null value.
        let d = alter_group_configs(
            &store.state().group_configs,
            &rules(),
            &[change(
                "g",
                &[
                    ("streams.session.timeout.ms", SET, Some("50000")),
                    ("streams.num.standby.replicas", DELETE, None),
                    ("streams.heartbeat.interval.ms", DELETE, None),
                ],
            )],
            false,
        );
        assert_eq!(d.results, vec![Ok(())]);
        assert_eq!(d.records.len(), 1);
        assert!(matches!(&d.records[0], Record::Config(r) if r.value.is_none()));
        store.append(d.records).unwrap();
        assert_eq!(
            store.state().group_configs.get("g").map(|c| c.len()),
            Some(1)
        );
        // The stored session timeout is checked with the new heartbeat interval.
        let mut broker = StreamsGroupConfig {
            max_heartbeat_interval_ms: 60_000,
            ..Default::default()
        };
        broker.max_session_timeout_ms = 60_000;
        let d = alter_group_configs(
            &store.state().group_configs,
            &GroupConfigRules::new(broker),
            &[change(
                "g",
                &[("streams.heartbeat.interval.ms", SET, Some("50000"))],
            )],
            false,
        );
        assert_eq!(
            d.results,
            vec![Err((
                ErrorCode::INVALID_CONFIG,
                Some(
                    "streams.session.timeout.ms must be greater than streams.heartbeat.interval.ms"
                        .to_owned()
                )
            ))]
        );
        assert!(d.records.is_empty());
    }

    #[test]
    fn failures_leave_other_resources_and_validate_only_writes_nothing() {
        let store = Store::new();
        let image = &store.state().group_configs;
        let d = alter_group_configs(
            image,
            &rules(),
            &[
                change(
                    "a",
                    &[("streams.rack.aware.assignment.tags", APPEND, Some("x"))],
                ),
                change("b", &[("streams.num.standby.replicas", SET, Some("1"))]),
                change("", &[("streams.num.standby.replicas", SET, Some("1"))]),
                change("c", &[("nope", SET, Some("1"))]),
                change("d", &[("streams.num.standby.replicas", 9, Some("1"))]),
            ],
            false,
        );
        assert_eq!(
            d.results,
            vec![
                Err((
                    ErrorCode::INVALID_CONFIG,
                    Some("Can't APPEND to key streams.rack.aware.assignment.tags because its type is not LIST.".to_owned())
                )),
                Ok(()),
                Err((
                    ErrorCode::INVALID_REQUEST,
                    Some("Default group resources are not allowed.".to_owned())
                )),
                Err((
                    ErrorCode::INVALID_CONFIG,
                    Some("Unknown group config name: nope".to_owned())
                )),
                Err((ErrorCode::UNKNOWN_SERVER_ERROR, None)),
            ]
        );
        assert_eq!(d.records.len(), 1);
        let d = alter_group_configs(
            image,
            &rules(),
            &[change(
                "b",
                &[("streams.num.standby.replicas", SET, Some("1"))],
            )],
            true,
        );
        assert_eq!((d.results, d.records.len()), (vec![Ok(())], 0));
    }
}
