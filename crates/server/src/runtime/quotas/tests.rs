use kcoord_metadata::{LogState, Record};
use kcoord_wire::records::client_quota_record::EntityData;
use kcoord_wire::records::ClientQuotaRecord;

use super::*;

/// One part of an entity: `None` leaves it out, `Some(None)` is the default.
type Part<'a> = Option<Option<&'a str>>;

/// An image with `producer_byte_rate` set on each `(user, client-id)` entity.
fn image(quotas: &[(Part, Part, f64)]) -> ClientQuotasImage {
    let mut state = LogState::default();
    for (offset, (user, client, value)) in quotas.iter().enumerate() {
        let mut entity = Vec::new();
        for (entity_type, part) in [(USER, user), (CLIENT_ID, client)] {
            if let Some(name) = part {
                entity.push(EntityData {
                    entity_type: entity_type.into(),
                    entity_name: name.map(str::to_owned),
                    ..Default::default()
                });
            }
        }
        let record = Record::ClientQuota(ClientQuotaRecord {
            entity,
            key: PRODUCER_BYTE_RATE.into(),
            value: *value,
            ..Default::default()
        });
        state.replay(&record, offset as u64).unwrap();
    }
    state.client_quotas
}

fn resolved(image: &ClientQuotasImage, user: &str, client: &str) -> Option<(String, String, f64)> {
    resolve(image, PRODUCER_BYTE_RATE, user, client).map(|((u, c), limit)| (u, c, limit))
}

#[test]
fn kafkas_precedence_picks_the_most_specific_quota_and_whom_it_is_shared_by() {
    let all = image(&[
        (Some(Some("alice")), Some(Some("app")), 1.0),
        (Some(Some("alice")), Some(None), 2.0),
        (Some(Some("alice")), None, 3.0),
        (Some(None), Some(Some("app")), 4.0),
        (Some(None), Some(None), 5.0),
        (Some(None), None, 6.0),
        (None, Some(Some("app")), 7.0),
        (None, Some(None), 8.0),
    ]);
    let t = |u: &str, c: &str, l: f64| Some((u.to_owned(), c.to_owned(), l));
    assert_eq!(resolved(&all, "alice", "app"), t("alice", "app", 1.0));
    assert_eq!(resolved(&all, "alice", "other"), t("alice", "other", 2.0));
    assert_eq!(resolved(&all, "bob", "app"), t("bob", "app", 4.0));
    assert_eq!(resolved(&all, "bob", "other"), t("bob", "other", 5.0));

    let users = image(&[(Some(Some("alice")), None, 3.0), (Some(None), None, 6.0)]);
    // A user's quota is shared by all of its client-ids.
    assert_eq!(resolved(&users, "alice", "app"), t("alice", "", 3.0));
    assert_eq!(resolved(&users, "bob", "app"), t("bob", "", 6.0));

    let clients = image(&[(None, Some(Some("app")), 7.0), (None, Some(None), 8.0)]);
    assert_eq!(resolved(&clients, "alice", "app"), t("", "app", 7.0));
    assert_eq!(resolved(&clients, "bob", "x"), t("", "x", 8.0));

    let only_alice = image(&[(Some(Some("alice")), None, 3.0)]);
    assert_eq!(resolved(&only_alice, "bob", "app"), None);
}

#[test]
fn clients_sharing_a_quota_share_its_usage_and_others_are_not_counted() {
    let quotas = ClientQuotas::new(Window::default());
    let users = image(&[(Some(Some("alice")), None, 100.0)]);
    let produce = |client: (&str, &str), bytes: f64| {
        quotas.record(&users, QuotaType::Produce, client, bytes, 0)
    };
    // 900 bytes from one client of alice and 100 from another: 1,000 over 10 s, the limit;
    // 100 more from either is over it by a tenth: a tenth of the 10 s.
    assert_eq!(produce(("alice", "a"), 900.0), 0);
    assert_eq!(produce(("alice", "b"), 100.0), 0);
    assert_eq!(produce(("alice", "a"), 100.0), 1000);
    assert_eq!(produce(("bob", "b"), 1e9), 0);
    // The consumer quota is another key: not set, not counted.
    assert_eq!(
        quotas.record(&users, QuotaType::Fetch, ("alice", "a"), 1e9, 0),
        0
    );
}

#[test]
fn connections_over_an_addresss_creation_rate_are_throttled_for_at_most_a_window() {
    let mut state = LogState::default();
    for (offset, (name, rate)) in [(Some("127.0.0.9"), 1.0), (None, 100.0)]
        .into_iter()
        .enumerate()
    {
        let record = Record::ClientQuota(ClientQuotaRecord {
            entity: vec![EntityData {
                entity_type: IP.into(),
                entity_name: name.map(str::to_owned),
                ..Default::default()
            }],
            key: CONNECTION_CREATION_RATE.into(),
            value: rate,
            ..Default::default()
        });
        state.replay(&record, offset as u64).unwrap();
    }
    let quotas = ClientQuotas::new(Window::default());
    let ip = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
    // 1/s is 10 connections over the padded 10 s: the eleventh is throttled, at most 1 s.
    for _ in 0..10 {
        assert_eq!(
            quotas.connection_throttle(&state.client_quotas, ip("127.0.0.9"), 0),
            0
        );
    }
    assert_eq!(
        quotas.connection_throttle(&state.client_quotas, ip("127.0.0.9"), 0),
        1000
    );
    // Other addresses have the default ip's 100/s.
    for _ in 0..100 {
        assert_eq!(
            quotas.connection_throttle(&state.client_quotas, ip("127.0.0.10"), 0),
            0
        );
    }
}
