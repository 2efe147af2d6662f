//! Broker registrations (metadata records 0 RegisterBroker, 1 UnregisterBroker, 7 FenceBroker,
//! 8 UnfenceBroker, 17 BrokerRegistrationChange), as Kafka's `ClusterControlManager.replay`
//! builds its `BrokerRegistration`s, plus KIP-1326's static configs.
use std::collections::BTreeMap;

use kcoord_wire::records::{
    BrokerRegistrationChangeRecord, FenceBrokerRecord, RegisterBrokerRecord, UnfenceBrokerRecord,
    UnregisterBrokerRecord,
};
use uuid::Uuid;

/// One advertised listener of a broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerListener {
    pub name: String,
    pub host: String,
    pub port: u16,
    /// Kafka's `SecurityProtocol` id: 0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL.
    pub security_protocol: i16,
}

/// A supported feature range, inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeatureRange {
    pub min: i16,
    pub max: i16,
}

impl FeatureRange {
    pub fn contains(&self, level: i16) -> bool {
        self.min <= level && level <= self.max
    }
}

/// What the controller knows about a registered broker.
#[derive(Debug, Clone, PartialEq)]
pub struct BrokerRegistration {
    pub id: i32,
    /// The broker epoch the controller assigned to this incarnation.
    pub epoch: i64,
    pub incarnation_id: Uuid,
    /// In the order of the record.
    pub listeners: Vec<BrokerListener>,
    pub supported_features: BTreeMap<String, FeatureRange>,
    pub rack: Option<String>,
    pub fenced: bool,
    pub in_controlled_shutdown: bool,
    pub is_migrating_zk_broker: bool,
    /// Online log directories, sorted (Kafka sorts them too).
    pub directories: Vec<Uuid>,
    /// Cordoned log directories; `None` until the broker reported them.
    pub cordoned_directories: Option<Vec<Uuid>>,
    /// KIP-1326: the non-sensitive static configs from RegisterBrokerRecord v5 (empty when the
    /// record was written at an older version). A null value stays `None`.
    pub static_configs: BTreeMap<String, Option<String>>,
    /// The log offset of the RegisterBrokerRecord this registration came from. The broker is
    /// unfenced only once its metadata offset reaches it.
    pub registration_offset: u64,
}

impl BrokerRegistration {
    pub fn listener(&self, name: &str) -> Option<&BrokerListener> {
        self.listeners.iter().find(|l| l.name == name)
    }

    /// Not fenced and not in controlled shutdown.
    pub fn is_active(&self) -> bool {
        !self.fenced && !self.in_controlled_shutdown
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct BrokersImage {
    by_id: BTreeMap<i32, BrokerRegistration>,
}

impl BrokersImage {
    pub fn get(&self, id: i32) -> Option<&BrokerRegistration> {
        self.by_id.get(&id)
    }

    /// Every registration, fenced or not, by broker id.
    pub fn iter(&self) -> impl Iterator<Item = &BrokerRegistration> {
        self.by_id.values()
    }

    /// The registrations that are not fenced, by broker id.
    pub fn unfenced(&self) -> impl Iterator<Item = &BrokerRegistration> {
        self.by_id.values().filter(|b| !b.fenced)
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// The broker that registered `directory`, if any.
    pub fn directory_owner(&self, directory: &Uuid) -> Option<i32> {
        self.by_id
            .values()
            .find(|b| b.directories.contains(directory))
            .map(|b| b.id)
    }

    /// Kafka's `updateDirectories` invariant: a directory belongs to at most one broker.
    fn check_directories(&self, broker_id: i32, directories: &[Uuid]) -> Result<(), String> {
        for dir in directories {
            if let Some(owner) = self
                .directory_owner(dir)
                .filter(|owner| *owner != broker_id)
            {
                return Err(format!(
                    "directory {dir} already assigned to broker {owner}"
                ));
            }
        }
        Ok(())
    }

    pub(crate) fn replay_register(
        &mut self,
        r: &RegisterBrokerRecord,
        offset: u64,
    ) -> Result<(), String> {
        self.check_directories(r.broker_id, &r.log_dirs)?;
        let mut directories = r.log_dirs.clone();
        directories.sort();
        let registration = BrokerRegistration {
            id: r.broker_id,
            epoch: r.broker_epoch,
            incarnation_id: r.incarnation_id,
            listeners: r
                .end_points
                .iter()
                .map(|e| BrokerListener {
                    name: e.name.clone(),
                    host: e.host.clone(),
                    port: e.port,
                    security_protocol: e.security_protocol,
                })
                .collect(),
            supported_features: r
                .features
                .iter()
                .map(|f| {
                    (
                        f.name.clone(),
                        FeatureRange {
                            min: f.min_supported_version,
                            max: f.max_supported_version,
                        },
                    )
                })
                .collect(),
            rack: r.rack.clone(),
            fenced: r.fenced,
            in_controlled_shutdown: r.in_controlled_shutdown,
            is_migrating_zk_broker: r.is_migrating_zk_broker,
            directories,
            cordoned_directories: r.cordoned_log_dirs.clone(),
            static_configs: r
                .static_configs
                .iter()
                .map(|c| (c.name.clone(), c.value.clone()))
                .collect(),
            registration_offset: offset,
        };
        self.by_id.insert(r.broker_id, registration);
        Ok(())
    }

    /// The registration `record` changes: it must exist with that epoch.
    fn registration_mut(
        &mut self,
        id: i32,
        epoch: i64,
        record: &str,
    ) -> Result<&mut BrokerRegistration, String> {
        let registration = self
            .by_id
            .get_mut(&id)
            .ok_or_else(|| format!("Unable to replay {record} of broker {id}: no broker registration found for that id"))?;
        if registration.epoch != epoch {
            return Err(format!("Unable to replay {record} of broker {id}: no broker registration with epoch {epoch} found"));
        }
        Ok(registration)
    }

    pub(crate) fn replay_unregister(&mut self, r: &UnregisterBrokerRecord) -> Result<(), String> {
        self.registration_mut(r.broker_id, r.broker_epoch, "UnregisterBrokerRecord")?;
        self.by_id.remove(&r.broker_id);
        Ok(())
    }

    pub(crate) fn replay_fence(&mut self, r: &FenceBrokerRecord) -> Result<(), String> {
        self.registration_mut(r.id, r.epoch, "FenceBrokerRecord")?
            .fenced = true;
        Ok(())
    }

    pub(crate) fn replay_unfence(&mut self, r: &UnfenceBrokerRecord) -> Result<(), String> {
        self.registration_mut(r.id, r.epoch, "UnfenceBrokerRecord")?
            .fenced = false;
        Ok(())
    }

    pub(crate) fn replay_change(
        &mut self,
        r: &BrokerRegistrationChangeRecord,
    ) -> Result<(), String> {
        // BrokerRegistrationFencingChange: 1 fence, 0 none, -1 unfence.
        let fenced = match r.fenced {
            1 => Some(true),
            0 => None,
            -1 => Some(false),
            other => return Err(format!("Unable to replay BrokerRegistrationChangeRecord: unknown value for fenced field: {other}")),
        };
        // BrokerRegistrationInControlledShutdownChange: 0 none, 1 entered.
        let in_controlled_shutdown = match r.in_controlled_shutdown {
            0 => None,
            1 => Some(true),
            other => {
                return Err(format!(
                    "Unable to replay BrokerRegistrationChangeRecord: unknown value for inControlledShutdown field: {other}"
                ))
            }
        };
        // An empty LogDirs means "unchanged", as in Kafka.
        if !r.log_dirs.is_empty() {
            self.check_directories(r.broker_id, &r.log_dirs)?;
        }
        let registration = self.registration_mut(
            r.broker_id,
            r.broker_epoch,
            "BrokerRegistrationChangeRecord",
        )?;
        if let Some(fenced) = fenced {
            registration.fenced = fenced;
        }
        if let Some(ics) = in_controlled_shutdown {
            registration.in_controlled_shutdown = ics;
        }
        if !r.log_dirs.is_empty() {
            let mut dirs = r.log_dirs.clone();
            dirs.sort();
            registration.directories = dirs;
        }
        if let Some(cordoned) = &r.cordoned_log_dirs {
            registration.cordoned_directories = Some(cordoned.clone());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcoord_wire::records::register_broker_record::BrokerStaticConfig;

    fn register(id: i32, epoch: i64, dirs: Vec<Uuid>) -> RegisterBrokerRecord {
        RegisterBrokerRecord {
            broker_id: id,
            broker_epoch: epoch,
            log_dirs: dirs,
            ..Default::default()
        }
    }

    #[test]
    fn registration_keeps_static_configs_as_a_map_with_nulls() {
        let mut image = BrokersImage::default();
        let mut r = register(1, 5, vec![]);
        r.static_configs = vec![
            BrokerStaticConfig {
                name: "num.io.threads".into(),
                value: Some("8".into()),
                ..Default::default()
            },
            BrokerStaticConfig {
                name: "broker.rack".into(),
                value: None,
                ..Default::default()
            },
        ];
        image.replay_register(&r, 5).unwrap();
        let b = image.get(1).unwrap();
        assert_eq!(
            b.static_configs.get("num.io.threads"),
            Some(&Some("8".to_string()))
        );
        assert_eq!(b.static_configs.get("broker.rack"), Some(&None));
        assert_eq!(b.registration_offset, 5);
        assert!(b.fenced, "RegisterBrokerRecord.Fenced defaults to true");
    }

    #[test]
    fn changes_need_the_registered_epoch_and_known_values() {
        let mut image = BrokersImage::default();
        image.replay_register(&register(1, 5, vec![]), 5).unwrap();
        let change = |fenced, ics, epoch| BrokerRegistrationChangeRecord {
            broker_id: 1,
            broker_epoch: epoch,
            fenced,
            in_controlled_shutdown: ics,
            ..Default::default()
        };
        assert!(
            image.replay_change(&change(-1, 0, 4)).is_err(),
            "wrong epoch"
        );
        assert!(
            image.replay_change(&change(2, 0, 5)).is_err(),
            "unknown fencing value"
        );
        assert!(
            image.replay_change(&change(0, 2, 5)).is_err(),
            "unknown controlled shutdown value"
        );
        image.replay_change(&change(-1, 0, 5)).unwrap();
        assert!(!image.get(1).unwrap().fenced);
        image.replay_change(&change(0, 1, 5)).unwrap();
        assert!(image.get(1).unwrap().in_controlled_shutdown);
        image
            .replay_fence(&FenceBrokerRecord {
                id: 1,
                epoch: 5,
                ..Default::default()
            })
            .unwrap();
        assert!(image.get(1).unwrap().fenced);
        image
            .replay_unfence(&UnfenceBrokerRecord {
                id: 1,
                epoch: 5,
                ..Default::default()
            })
            .unwrap();
        assert!(!image.get(1).unwrap().fenced);
        assert!(
            image
                .replay_fence(&FenceBrokerRecord {
                    id: 2,
                    epoch: 5,
                    ..Default::default()
                })
                .is_err(),
            "unknown broker"
        );
        assert!(image
            .replay_unregister(&UnregisterBrokerRecord {
                broker_id: 1,
                broker_epoch: 4,
                ..Default::default()
            })
            .is_err());
        image
            .replay_unregister(&UnregisterBrokerRecord {
                broker_id: 1,
                broker_epoch: 5,
                ..Default::default()
            })
            .unwrap();
        assert!(image.is_empty());
    }

    #[test]
    fn a_directory_belongs_to_one_broker() {
        let mut image = BrokersImage::default();
        let (a, b) = (Uuid::from_u128(1000), Uuid::from_u128(2000));
        image
            .replay_register(&register(1, 0, vec![b, a]), 0)
            .unwrap();
        assert_eq!(image.get(1).unwrap().directories, vec![a, b], "sorted");
        assert_eq!(image.directory_owner(&a), Some(1));
        assert!(image.replay_register(&register(2, 1, vec![a]), 1).is_err());
        // The same broker may register its own directories again.
        image.replay_register(&register(1, 2, vec![a]), 2).unwrap();
        assert_eq!(image.directory_owner(&b), None);
    }
}
