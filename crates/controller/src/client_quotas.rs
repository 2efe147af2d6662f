//! AlterClientQuotas on the controller, as Kafka's `ClientQuotaControlManager.alterClientQuotas`
//! decides it: per entity, its types must be known (user, client-id, ip) and combined as Kafka
//! allows (ip alone; user, client-id or both), each key must be one of the entity's quota keys
//! with a positive value (an integral one for the byte and connection rates), and only the keys
//! whose value changes are written. An entity with one refused key writes nothing; the other
//! entities of the request are written (Kafka's `atomicOf` batch holds what was accepted).
//!
//! Kafka answers from a hash map, one result per distinct entity; kcoord answers in the order
//! the entities first appear in the request.

use std::collections::BTreeMap;
use std::net::IpAddr;

use kcoord_metadata::image::client_quotas::{entity_data, entity_from, CLIENT_ID, IP, USER};
use kcoord_metadata::{ClientQuotasImage, QuotaEntity, Record, RecordAndVersion};
use kcoord_wire::messages::alter_client_quotas_request::EntryData;
use kcoord_wire::messages::AlterClientQuotasRequest;
use kcoord_wire::records::ClientQuotaRecord;
use kcoord_wire::ErrorCode;

/// Kafka's quota keys.
pub const PRODUCER_BYTE_RATE: &str = "producer_byte_rate";
pub const CONSUMER_BYTE_RATE: &str = "consumer_byte_rate";
pub const REQUEST_PERCENTAGE: &str = "request_percentage";
pub const CONTROLLER_MUTATION_RATE: &str = "controller_mutation_rate";
pub const CONNECTION_CREATION_RATE: &str = "connection_creation_rate";

/// A quota key's config type in Kafka's `QuotaConfig`, which bounds its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyType {
    Long,
    Int,
    Double,
}

/// The keys of a user and/or client-id entity.
const USER_AND_CLIENT_KEYS: [(&str, KeyType); 4] = [
    (PRODUCER_BYTE_RATE, KeyType::Long),
    (CONSUMER_BYTE_RATE, KeyType::Long),
    (REQUEST_PERCENTAGE, KeyType::Double),
    (CONTROLLER_MUTATION_RATE, KeyType::Double),
];
/// The keys of an ip entity.
const IP_KEYS: [(&str, KeyType); 1] = [(CONNECTION_CREATION_RATE, KeyType::Int)];

/// An entity's outcome: `None` accepted, else Kafka's error and message.
pub type EntityError = Option<(ErrorCode, String)>;

/// The records of the accepted entities and one result per distinct entity, in first-appearance
/// order.
pub fn alter_client_quotas(
    image: &ClientQuotasImage,
    request: &AlterClientQuotasRequest,
) -> (Vec<RecordAndVersion>, Vec<(QuotaEntity, EntityError)>) {
    let mut records = Vec::new();
    let mut results: Vec<(QuotaEntity, EntityError)> = Vec::new();
    let mut seen: BTreeMap<QuotaEntity, usize> = BTreeMap::new();
    for entry in &request.entries {
        let entity = entity_from(
            entry
                .entity
                .iter()
                .map(|p| (p.entity_type.as_str(), p.entity_name.as_deref())),
        );
        if let Some(&at) = seen.get(&entity) {
            // Kafka's result map keeps one result per entity: the repeat's.
            let message = format!("Ignoring duplicate entity {}", display(&entity));
            results[at].1 = Some((ErrorCode::INVALID_REQUEST, message));
            continue;
        }
        let decided = match ops(entry) {
            Ok(ops) => alter_entity(image, &entity, &ops, &mut records).err(),
            // A key named twice: Kafka records that, then overwrites it at once with this.
            Err(()) => Some((
                ErrorCode::INVALID_REQUEST,
                format!("Ignoring duplicate entity {}", display(&entity)),
            )),
        };
        seen.insert(entity.clone(), results.len());
        results.push((entity, decided));
    }
    (records, results)
}

/// The entry's changes by key, in request order (`None` removes); `Err` when a key repeats.
fn ops(entry: &EntryData) -> Result<Vec<(&str, Option<f64>)>, ()> {
    let mut ops: Vec<(&str, Option<f64>)> = Vec::with_capacity(entry.ops.len());
    for op in &entry.ops {
        if ops.iter().any(|(key, _)| *key == op.key) {
            return Err(());
        }
        ops.push((op.key.as_str(), (!op.remove).then_some(op.value)));
    }
    Ok(ops)
}

/// Kafka's `alterClientQuotaEntity`: the entity's records, pushed only when all its changes
/// are valid.
fn alter_entity(
    image: &ClientQuotasImage,
    entity: &QuotaEntity,
    ops: &[(&str, Option<f64>)],
    records: &mut Vec<RecordAndVersion>,
) -> Result<(), (ErrorCode, String)> {
    validate_entity(entity)?;
    let keys = keys_for(entity)?;
    let current = image.quotas(entity);
    let mut changed = Vec::new();
    for (key, value) in ops {
        let now = current.and_then(|q| q.get(*key)).copied();
        match value {
            None if now.is_some() => changed.push(record(entity, key, 0.0, true)),
            None => {}
            Some(value) => {
                if let Some(error) = validate_value(keys, key, *value) {
                    return Err((ErrorCode::INVALID_REQUEST, error));
                }
                if now != Some(*value) {
                    changed.push(record(entity, key, *value, false));
                }
            }
        }
    }
    records.extend(changed);
    Ok(())
}

fn record(entity: &QuotaEntity, key: &str, value: f64, remove: bool) -> RecordAndVersion {
    Record::ClientQuota(ClientQuotaRecord {
        entity: entity_data(entity),
        key: key.to_owned(),
        value,
        remove,
        ..Default::default()
    })
    .at_version(0)
}

/// Kafka's `validateEntity`: known types, no empty name.
fn validate_entity(entity: &QuotaEntity) -> Result<(), (ErrorCode, String)> {
    let invalid = |message: String| Err((ErrorCode::INVALID_REQUEST, message));
    if entity.is_empty() {
        return invalid("Invalid empty client quota entity".to_owned());
    }
    for (entity_type, name) in entity {
        if ![USER, CLIENT_ID, IP].contains(&entity_type.as_str()) {
            return invalid(format!("Unhandled client quota entity type: {entity_type}"));
        }
        if name.as_deref() == Some("") {
            return invalid(format!("Empty {entity_type} not supported"));
        }
    }
    Ok(())
}

/// Kafka's `configKeysForEntityType`: the keys of the entity's combination of types.
fn keys_for(
    entity: &QuotaEntity,
) -> Result<&'static [(&'static str, KeyType)], (ErrorCode, String)> {
    let has = |t: &str| entity.contains_key(t);
    if has(IP) {
        if has(USER) || has(CLIENT_ID) {
            // Kafka's message lacks the space between "should" and "not".
            return Err((
                ErrorCode::INVALID_REQUEST,
                "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
                    .to_owned(),
            ));
        }
        return match entity.get(IP).and_then(|n| n.as_deref()) {
            Some(ip) if ip.parse::<IpAddr>().is_err() => Err((
                ErrorCode::INVALID_REQUEST,
                format!("{ip} is not a valid IP or resolvable host."),
            )),
            _ => Ok(&IP_KEYS),
        };
    }
    if has(USER) || has(CLIENT_ID) {
        return Ok(&USER_AND_CLIENT_KEYS);
    }
    Err((
        ErrorCode::INVALID_REQUEST,
        "Invalid empty client quota entity".to_owned(),
    ))
}

/// Kafka's `validateQuotaKeyValue`: the message of a refused value.
fn validate_value(keys: &[(&str, KeyType)], key: &str, value: f64) -> Option<String> {
    let Some((_, key_type)) = keys.iter().find(|(k, _)| *k == key) else {
        return Some(format!("Invalid configuration key {key}"));
    };
    // A NaN fails no comparison in Kafka either: it passes as a double and as an integer.
    if value <= 0.0 {
        return Some(format!("Quota {key} must be greater than 0"));
    }
    let too_large = match key_type {
        KeyType::Double => return None,
        KeyType::Int => (value > f64::from(i32::MAX)).then_some("an INT"),
        KeyType::Long => (value > i64::MAX as f64).then_some("a LONG"),
    };
    if let Some(kind) = too_large {
        return Some(format!("Proposed value for {key} is too large for {kind}."));
    }
    ((value % 1.0).abs() > 1e-6).then(|| format!("{key} cannot be a fractional value."))
}

/// An entity as Kafka prints it in messages: `ClientQuotaEntity(entries={client-id=c, user=u})`
/// (Java's hash order for these types is the sorted order for any two of them).
pub fn display(entity: &QuotaEntity) -> String {
    let parts: Vec<String> = entity
        .iter()
        .map(|(t, n)| format!("{t}={}", n.as_deref().unwrap_or("null")))
        .collect();
    format!("ClientQuotaEntity(entries={{{}}})", parts.join(", "))
}

impl crate::Controller {
    /// AlterClientQuotas (see [`alter_client_quotas`]): one result per distinct entity;
    /// `validate_only` decides without writing, as Kafka's `withoutRecords`.
    pub fn alter_client_quotas(
        &self,
        request: &AlterClientQuotasRequest,
    ) -> crate::Outcome<Vec<(QuotaEntity, EntityError)>> {
        let (records, results) = alter_client_quotas(&self.state().client_quotas, request);
        crate::Outcome {
            records: if request.validate_only {
                Vec::new()
            } else {
                records
            },
            response: results,
            effects: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests;
