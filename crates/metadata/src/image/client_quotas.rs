//! Client quotas (metadata record 14), as Kafka's `ClientQuotaControlManager` and
//! `ClientQuotasImage` replay them: per entity (its user, client-id or ip parts, each a name or
//! the type's default), the quota keys set and their values. A removal of the last key forgets
//! the entity.
use std::collections::BTreeMap;

use kcoord_wire::records::client_quota_record::EntityData;
use kcoord_wire::records::ClientQuotaRecord;

/// Kafka's entity types.
pub const USER: &str = "user";
pub const CLIENT_ID: &str = "client-id";
pub const IP: &str = "ip";

/// A quota entity: each part's type with its name, `None` for the type's default.
pub type QuotaEntity = BTreeMap<String, Option<String>>;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientQuotasImage {
    entities: BTreeMap<QuotaEntity, BTreeMap<String, f64>>,
}

impl ClientQuotasImage {
    /// Every entity with a quota, with its quotas by key.
    pub fn entities(&self) -> impl Iterator<Item = (&QuotaEntity, &BTreeMap<String, f64>)> {
        self.entities.iter()
    }

    /// The quotas of `entity`, if it has any.
    pub fn quotas(&self, entity: &QuotaEntity) -> Option<&BTreeMap<String, f64>> {
        self.entities.get(entity)
    }

    /// The value of `key` for the entity with these parts (`(type, name)`, `None` for the
    /// default).
    pub fn value(&self, parts: &[(&str, Option<&str>)], key: &str) -> Option<f64> {
        let entity = entity_from(parts.iter().copied());
        self.entities.get(&entity)?.get(key).copied()
    }

    pub fn is_empty(&self) -> bool {
        self.entities.is_empty()
    }

    /// Sets or removes one key. Kafka's replay takes any record, so this cannot fail.
    pub(crate) fn replay(&mut self, r: &ClientQuotaRecord) {
        let entity = entity_of(&r.entity);
        if r.remove {
            if let Some(quotas) = self.entities.get_mut(&entity) {
                quotas.remove(&r.key);
                if quotas.is_empty() {
                    self.entities.remove(&entity);
                }
            }
        } else {
            self.entities
                .entry(entity)
                .or_default()
                .insert(r.key.clone(), r.value);
        }
    }

    /// One record per quota, as a snapshot holds them.
    pub(crate) fn records(&self) -> Vec<ClientQuotaRecord> {
        let mut records = Vec::new();
        for (entity, quotas) in &self.entities {
            for (key, value) in quotas {
                records.push(ClientQuotaRecord {
                    entity: entity_data(entity),
                    key: key.clone(),
                    value: *value,
                    remove: false,
                    ..Default::default()
                });
            }
        }
        records
    }
}

/// The entity a record's parts name (a type named twice keeps its last name, as Kafka's map).
pub fn entity_of(parts: &[EntityData]) -> QuotaEntity {
    entity_from(
        parts
            .iter()
            .map(|p| (p.entity_type.as_str(), p.entity_name.as_deref())),
    )
}

/// The entity of `(type, name)` parts, `None` for a type's default.
pub fn entity_from<'a>(parts: impl IntoIterator<Item = (&'a str, Option<&'a str>)>) -> QuotaEntity {
    parts
        .into_iter()
        .map(|(t, n)| (t.to_owned(), n.map(str::to_owned)))
        .collect()
}

/// The record parts of `entity`.
pub fn entity_data(entity: &QuotaEntity) -> Vec<EntityData> {
    entity
        .iter()
        .map(|(t, n)| EntityData {
            entity_type: t.clone(),
            entity_name: n.clone(),
            ..Default::default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(user: Option<&str>, key: &str, value: f64, remove: bool) -> ClientQuotaRecord {
        ClientQuotaRecord {
            entity: vec![EntityData {
                entity_type: USER.into(),
                entity_name: user.map(str::to_owned),
                ..Default::default()
            }],
            key: key.into(),
            value,
            remove,
            ..Default::default()
        }
    }

    #[test]
    fn a_set_replaces_the_value_and_removing_the_last_key_forgets_the_entity() {
        let mut image = ClientQuotasImage::default();
        image.replay(&record(Some("alice"), "producer_byte_rate", 1024.0, false));
        image.replay(&record(Some("alice"), "producer_byte_rate", 2048.0, false));
        image.replay(&record(None, "consumer_byte_rate", 10.0, false));
        assert_eq!(
            image.value(&[(USER, Some("alice"))], "producer_byte_rate"),
            Some(2048.0)
        );
        assert_eq!(
            image.value(&[(USER, None)], "consumer_byte_rate"),
            Some(10.0)
        );
        image.replay(&record(Some("alice"), "producer_byte_rate", 0.0, true));
        assert_eq!(image.entities().count(), 1);
        assert_eq!(image.records().len(), 1);
    }
}
