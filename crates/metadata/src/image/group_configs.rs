//! Per-group config overrides (ConfigRecord, resource type GROUP = 32), as Kafka's controller
//! keeps them in `ConfigurationControlManager.configData` and brokers hand them to the group
//! coordinator's `GroupConfigManager`.
use std::collections::BTreeMap;

use kcoord_wire::records::ConfigRecord;

/// DescribeConfigs / ConfigRecord resource type of a group.
pub const GROUP_RESOURCE: i8 = 32;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct GroupConfigsImage {
    /// group -> key -> value; a group is present only while it has at least one override.
    groups: BTreeMap<String, BTreeMap<String, String>>,
}

impl From<BTreeMap<String, BTreeMap<String, String>>> for GroupConfigsImage {
    /// The overrides of each group (a gateway's copy of a cluster's group configs); groups
    /// without any are left out.
    fn from(mut groups: BTreeMap<String, BTreeMap<String, String>>) -> Self {
        groups.retain(|_, configs| !configs.is_empty());
        GroupConfigsImage { groups }
    }
}

impl GroupConfigsImage {
    /// The group's overrides, if it has any.
    pub fn get(&self, group: &str) -> Option<&BTreeMap<String, String>> {
        self.groups.get(group)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &BTreeMap<String, String>)> {
        self.groups.iter().map(|(g, c)| (g.as_str(), c))
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Applies a ConfigRecord; records about other resource types are ignored. A null value
    /// removes the key, and a group left without keys is forgotten (Kafka's `replay`).
    pub(crate) fn replay_config(&mut self, r: &ConfigRecord) {
        if r.resource_type != GROUP_RESOURCE {
            return;
        }
        match &r.value {
            Some(v) => {
                self.groups
                    .entry(r.resource_name.clone())
                    .or_default()
                    .insert(r.name.clone(), v.clone());
            }
            None => {
                if let Some(configs) = self.groups.get_mut(&r.resource_name) {
                    configs.remove(&r.name);
                    if configs.is_empty() {
                        self.groups.remove(&r.resource_name);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(resource_type: i8, group: &str, name: &str, value: Option<&str>) -> ConfigRecord {
        ConfigRecord {
            resource_type,
            resource_name: group.into(),
            name: name.into(),
            value: value.map(str::to_owned),
            ..Default::default()
        }
    }

    #[test]
    fn group_records_set_and_remove_keys_and_other_types_are_ignored() {
        let mut image = GroupConfigsImage::default();
        image.replay_config(&record(
            32,
            "g",
            "streams.session.timeout.ms",
            Some("50000"),
        ));
        image.replay_config(&record(32, "g", "streams.num.standby.replicas", Some("1")));
        image.replay_config(&record(2, "g", "retention.ms", Some("1")));
        assert_eq!(image.get("g").map(BTreeMap::len), Some(2));
        image.replay_config(&record(32, "g", "streams.session.timeout.ms", None));
        assert_eq!(
            image
                .get("g")
                .and_then(|c| c.get("streams.num.standby.replicas")),
            Some(&"1".to_owned())
        );
        image.replay_config(&record(32, "g", "streams.num.standby.replicas", None));
        assert!(
            image.get("g").is_none(),
            "a group without overrides is forgotten"
        );
        assert!(image.is_empty());
        // Removing what was never set changes nothing.
        image.replay_config(&record(32, "h", "x", None));
        assert!(image.is_empty());
    }
}
