use kcoord_metadata::LogState;
use kcoord_wire::messages::alter_client_quotas_request::{EntityData, OpData};

use super::*;

/// An entity's parts, `(type, name)`.
type Parts<'a> = &'a [(&'a str, Option<&'a str>)];

fn entry(parts: &[(&str, Option<&str>)], ops: &[(&str, f64, bool)]) -> EntryData {
    EntryData {
        entity: parts
            .iter()
            .map(|(t, n)| EntityData {
                entity_type: (*t).into(),
                entity_name: n.map(str::to_owned),
                ..Default::default()
            })
            .collect(),
        ops: ops
            .iter()
            .map(|(key, value, remove)| OpData {
                key: (*key).into(),
                value: *value,
                remove: *remove,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

fn alter(
    image: &ClientQuotasImage,
    entries: Vec<EntryData>,
) -> (Vec<RecordAndVersion>, Vec<EntityError>) {
    let request = AlterClientQuotasRequest {
        entries,
        ..Default::default()
    };
    let (records, results) = alter_client_quotas(image, &request);
    (records, results.into_iter().map(|(_, e)| e).collect())
}

fn message(result: &EntityError) -> &str {
    result.as_ref().map_or("", |(_, m)| m.as_str())
}

fn applied(records: Vec<RecordAndVersion>) -> ClientQuotasImage {
    let mut state = LogState::default();
    for (offset, r) in records.iter().enumerate() {
        state.replay(&r.record, offset as u64).unwrap();
    }
    state.client_quotas
}

#[test]
fn user_client_and_default_entities_take_the_user_and_client_keys() {
    let (records, results) = alter(
        &ClientQuotasImage::default(),
        vec![
            entry(
                &[(USER, Some("alice")), (CLIENT_ID, Some("app"))],
                &[(PRODUCER_BYTE_RATE, 1024.0, false)],
            ),
            entry(
                &[(USER, None)],
                &[
                    (REQUEST_PERCENTAGE, 12.5, false),
                    (CONSUMER_BYTE_RATE, 2048.0, false),
                ],
            ),
            entry(
                &[(IP, Some("10.0.0.1"))],
                &[(CONNECTION_CREATION_RATE, 5.0, false)],
            ),
        ],
    );
    assert_eq!(results, vec![None, None, None]);
    let image = applied(records);
    assert_eq!(
        image.value(
            &[(CLIENT_ID, Some("app")), (USER, Some("alice"))],
            PRODUCER_BYTE_RATE
        ),
        Some(1024.0)
    );
    assert_eq!(image.value(&[(USER, None)], REQUEST_PERCENTAGE), Some(12.5));
    assert_eq!(
        image.value(&[(IP, Some("10.0.0.1"))], CONNECTION_CREATION_RATE),
        Some(5.0)
    );
}

#[test]
fn refused_values_and_keys_carry_kafkas_messages_and_write_nothing_for_their_entity() {
    let user = [(USER, Some("u"))];
    let cases: [(Parts, (&str, f64, bool), &str); 7] = [
        (
            &user,
            ("nope", 1.0, false),
            "Invalid configuration key nope",
        ),
        (
            &user,
            (PRODUCER_BYTE_RATE, 0.0, false),
            "Quota producer_byte_rate must be greater than 0",
        ),
        (
            &user,
            (PRODUCER_BYTE_RATE, -5.0, false),
            "Quota producer_byte_rate must be greater than 0",
        ),
        (
            &user,
            (PRODUCER_BYTE_RATE, 1.5, false),
            "producer_byte_rate cannot be a fractional value.",
        ),
        (
            &user,
            (CONNECTION_CREATION_RATE, 1.0, false),
            "Invalid configuration key connection_creation_rate",
        ),
        (
            &[(IP, Some("1.2.3.4"))],
            (CONNECTION_CREATION_RATE, 3e9, false),
            "Proposed value for connection_creation_rate is too large for an INT.",
        ),
        (
            &[(IP, None)],
            (PRODUCER_BYTE_RATE, 1.0, false),
            "Invalid configuration key producer_byte_rate",
        ),
    ];
    for (parts, op, expected) in cases {
        let (records, results) = alter(
            &ClientQuotasImage::default(),
            vec![entry(parts, &[(REQUEST_PERCENTAGE, 50.0, false), op])],
        );
        // The ip entity refuses request_percentage before it gets to `op`.
        if parts[0].0 == IP {
            assert_eq!(
                message(&results[0]),
                "Invalid configuration key request_percentage"
            );
        } else {
            assert_eq!(message(&results[0]), expected, "{op:?}");
        }
        assert!(records.is_empty(), "{op:?}");
    }
}

#[test]
fn wrong_entities_are_refused_as_kafka_refuses_them() {
    let op = [(PRODUCER_BYTE_RATE, 1.0, false)];
    let cases: [(Parts, &str); 5] = [
        (&[], "Invalid empty client quota entity"),
        (&[("group", Some("g"))], "Unhandled client quota entity type: group"),
        (&[(USER, Some(""))], "Empty user not supported"),
        (&[(IP, Some("1.2.3.4")), (USER, Some("u"))], "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"),
        (&[(IP, Some("not an ip"))], "not an ip is not a valid IP or resolvable host."),
    ];
    for (parts, expected) in cases {
        let (records, results) = alter(&ClientQuotasImage::default(), vec![entry(parts, &op)]);
        assert_eq!(
            results[0].as_ref().map(|(c, _)| *c),
            Some(ErrorCode::INVALID_REQUEST)
        );
        assert_eq!(message(&results[0]), expected);
        assert!(records.is_empty());
    }
}

#[test]
fn removals_write_only_what_exists_and_unchanged_values_write_nothing() {
    let user = [(USER, Some("u"))];
    let (records, _) = alter(
        &ClientQuotasImage::default(),
        vec![entry(&user, &[(PRODUCER_BYTE_RATE, 10.0, false)])],
    );
    let image = applied(records);
    let (records, results) = alter(
        &image,
        vec![entry(
            &user,
            &[
                (PRODUCER_BYTE_RATE, 10.0, false),
                (CONSUMER_BYTE_RATE, 0.0, true),
                ("unknown", 0.0, true),
            ],
        )],
    );
    assert_eq!(results, vec![None]);
    assert!(records.is_empty());
    let (records, _) = alter(
        &image,
        vec![entry(&user, &[(PRODUCER_BYTE_RATE, 0.0, true)])],
    );
    assert!(applied_onto(&image, records).is_empty());
}

fn applied_onto(image: &ClientQuotasImage, records: Vec<RecordAndVersion>) -> ClientQuotasImage {
    let mut state = LogState::default();
    state.client_quotas = image.clone();
    for (offset, r) in records.iter().enumerate() {
        state.replay(&r.record, offset as u64).unwrap();
    }
    state.client_quotas
}

#[test]
fn a_repeated_key_or_entity_is_answered_ignoring_duplicate_entity_once() {
    let user = [(USER, Some("u"))];
    let (records, results) = alter(
        &ClientQuotasImage::default(),
        vec![
            entry(&user, &[(PRODUCER_BYTE_RATE, 10.0, false)]),
            entry(
                &[(CLIENT_ID, Some("c"))],
                &[
                    (PRODUCER_BYTE_RATE, 1.0, false),
                    (PRODUCER_BYTE_RATE, 2.0, false),
                ],
            ),
            entry(&user, &[(PRODUCER_BYTE_RATE, 20.0, false)]),
        ],
    );
    assert_eq!(results.len(), 2);
    assert_eq!(
        message(&results[0]),
        "Ignoring duplicate entity ClientQuotaEntity(entries={user=u})"
    );
    assert_eq!(
        message(&results[1]),
        "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=c})"
    );
    // As in Kafka, the first occurrence's changes are still written.
    assert_eq!(
        applied(records).value(&user, PRODUCER_BYTE_RATE),
        Some(10.0)
    );
}
