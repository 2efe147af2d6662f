//! Dynamic broker configs (ConfigRecord, resource type BROKER = 4), as Kafka's controller keeps
//! them in `ConfigurationControlManager.configData`: the cluster-wide defaults under the empty
//! name, a broker's own under its id.
use std::collections::BTreeMap;

use kcoord_wire::records::ConfigRecord;

/// DescribeConfigs / ConfigRecord resource type of a broker.
pub const BROKER_RESOURCE: i8 = 4;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct BrokerConfigsImage {
    /// resource name ("" or a broker id) -> key -> value; a name is present only while it has
    /// at least one config.
    brokers: BTreeMap<String, BTreeMap<String, String>>,
}

impl BrokerConfigsImage {
    /// The configs of `name` ("" for the cluster-wide defaults), if it has any.
    pub fn get(&self, name: &str) -> Option<&BTreeMap<String, String>> {
        self.brokers.get(name)
    }

    /// The cluster-wide dynamic defaults.
    pub fn cluster_defaults(&self) -> Option<&BTreeMap<String, String>> {
        self.get("")
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &BTreeMap<String, String>)> {
        self.brokers.iter().map(|(n, c)| (n.as_str(), c))
    }

    pub fn is_empty(&self) -> bool {
        self.brokers.is_empty()
    }

    /// Applies a ConfigRecord; records about other resource types are ignored. A null value
    /// removes the key, and a name left without keys is forgotten.
    pub(crate) fn replay_config(&mut self, r: &ConfigRecord) {
        if r.resource_type != BROKER_RESOURCE {
            return;
        }
        match &r.value {
            Some(v) => {
                self.brokers
                    .entry(r.resource_name.clone())
                    .or_default()
                    .insert(r.name.clone(), v.clone());
            }
            None => {
                if let Some(configs) = self.brokers.get_mut(&r.resource_name) {
                    configs.remove(&r.name);
                    if configs.is_empty() {
                        self.brokers.remove(&r.resource_name);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(resource_type: i8, name: &str, key: &str, value: Option<&str>) -> ConfigRecord {
        ConfigRecord {
            resource_type,
            resource_name: name.into(),
            name: key.into(),
            value: value.map(str::to_owned),
            ..Default::default()
        }
    }

    #[test]
    fn broker_records_set_and_remove_keys_and_other_types_are_ignored() {
        let mut image = BrokerConfigsImage::default();
        image.replay_config(&record(4, "", "log.retention.ms", Some("1000")));
        image.replay_config(&record(4, "1", "log.retention.ms", Some("2000")));
        image.replay_config(&record(2, "t", "retention.ms", Some("1")));
        assert_eq!(
            image
                .cluster_defaults()
                .and_then(|c| c.get("log.retention.ms")),
            Some(&"1000".to_owned())
        );
        assert_eq!(image.iter().count(), 2);
        image.replay_config(&record(4, "", "log.retention.ms", None));
        assert!(image.cluster_defaults().is_none());
        assert!(image.get("1").is_some());
    }
}
