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

use crate::topics::Decision;

/// The rules a group's configs must satisfy after a change (Kafka's `GroupConfig.validate`,
/// which `ControllerConfigurationValidator` calls). The daemon implements it with the
/// coordinator's `GroupConfigRules` (the broker's `group.streams.*` bounds); the error is the
/// message answered with INVALID_CONFIG.
pub trait GroupConfigValidator {
    fn validate(&self, configs: &BTreeMap<String, String>) -> Result<(), String>;
}

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
    rules: &dyn GroupConfigValidator,
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
    rules: &dyn GroupConfigValidator,
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
    use kcoord_metadata::Store;
    use std::cell::RefCell;

    fn change(group: &str, ops: &[(&str, i8, Option<&str>)]) -> GroupConfigChange {
        GroupConfigChange {
            group: group.into(),
            ops: ops
                .iter()
                .map(|(k, o, v)| ((*k).to_owned(), *o, v.map(str::to_owned)))
                .collect(),
        }
    }

    /// Knows two keys, wants the session above the heartbeat (as `GroupConfig.validate` does)
    /// and remembers every config map it was asked about.
    #[derive(Default)]
    struct Rules {
        seen: RefCell<Vec<BTreeMap<String, String>>>,
    }

    const SESSION: &str = "streams.session.timeout.ms";
    const HEARTBEAT: &str = "streams.heartbeat.interval.ms";
    const STANDBYS: &str = "streams.num.standby.replicas";

    impl GroupConfigValidator for Rules {
        fn validate(&self, configs: &BTreeMap<String, String>) -> Result<(), String> {
            self.seen.borrow_mut().push(configs.clone());
            if let Some(name) = configs
                .keys()
                .find(|k| ![SESSION, HEARTBEAT, STANDBYS].contains(&k.as_str()))
            {
                return Err(format!("Unknown group config name: {name}"));
            }
            let int = |k: &str, default: i32| configs.get(k).map_or(Ok(default), |v| v.parse());
            let (Ok(session), Ok(heartbeat)) = (int(SESSION, 45_000), int(HEARTBEAT, 5_000)) else {
                return Err("not a number".to_owned());
            };
            if session <= heartbeat {
                return Err(format!("{SESSION} must be greater than {HEARTBEAT}"));
            }
            Ok(())
        }
    }

    #[test]
    fn sets_and_deletes_write_records_for_changed_keys_only_and_validate_the_whole_group() {
        let mut store = Store::new();
        let rules = Rules::default();
        let d = alter_group_configs(
            &store.state().group_configs,
            &rules,
            &[change(
                "g",
                &[(SESSION, SET, Some("50000")), (STANDBYS, SET, Some("1"))],
            )],
            false,
        );
        assert_eq!(d.results, vec![Ok(())]);
        assert_eq!(d.records.len(), 2);
        store.append(d.records).unwrap();
        // Setting the same value again writes nothing; deleting writes a null value.
        let d = alter_group_configs(
            &store.state().group_configs,
            &rules,
            &[change(
                "g",
                &[
                    (SESSION, SET, Some("50000")),
                    (STANDBYS, DELETE, None),
                    (HEARTBEAT, DELETE, None),
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
        // The stored session timeout is checked with the new heartbeat interval: the rules see
        // the group's configs as they would be after the change, not only the changed key.
        let d = alter_group_configs(
            &store.state().group_configs,
            &rules,
            &[change("g", &[(HEARTBEAT, SET, Some("50000"))])],
            false,
        );
        assert_eq!(
            d.results,
            vec![Err((
                ErrorCode::INVALID_CONFIG,
                Some(format!("{SESSION} must be greater than {HEARTBEAT}"))
            ))]
        );
        assert!(d.records.is_empty());
        let last = rules.seen.borrow().last().cloned().unwrap();
        assert_eq!(
            last,
            BTreeMap::from([
                (SESSION.to_owned(), "50000".to_owned()),
                (HEARTBEAT.to_owned(), "50000".to_owned())
            ])
        );
    }

    #[test]
    fn failures_leave_other_resources_and_validate_only_writes_nothing() {
        let store = Store::new();
        let image = &store.state().group_configs;
        let rules = Rules::default();
        let d = alter_group_configs(
            image,
            &rules,
            &[
                change(
                    "a",
                    &[("streams.rack.aware.assignment.tags", APPEND, Some("x"))],
                ),
                change("b", &[(STANDBYS, SET, Some("1"))]),
                change("", &[(STANDBYS, SET, Some("1"))]),
                change("c", &[("nope", SET, Some("1"))]),
                change("d", &[(STANDBYS, 9, Some("1"))]),
                change("e", &[(STANDBYS, SET, Some(&"9".repeat(40_000)))]),
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
                Err((
                    ErrorCode::INVALID_CONFIG,
                    Some("The configuration value cannot be added because it exceeds the maximum value size of 32767 bytes.".to_owned())
                )),
            ]
        );
        assert_eq!(d.records.len(), 1);
        let d = alter_group_configs(
            image,
            &rules,
            &[change("b", &[(STANDBYS, SET, Some("1"))])],
            true,
        );
        assert_eq!((d.results, d.records.len()), (vec![Ok(())], 0));
    }
}
