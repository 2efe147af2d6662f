use kcoord_controller::ControllerConfig;

use super::*;

fn credential(name: &str, mechanism: i8, iterations: i32) -> UserScramCredentialRecord {
    UserScramCredentialRecord {
        name: name.to_owned(),
        mechanism,
        salt: Bytes::from_static(b"salt"),
        stored_key: Bytes::from_static(b"stored"),
        server_key: Bytes::from_static(b"server"),
        iterations,
        ..Default::default()
    }
}

fn stored(record: Record) -> ProducedRecord {
    encode(&record.at_latest_version()).unwrap()
}

#[test]
fn a_credential_is_kept_under_its_user_and_mechanism_and_a_deletion_is_a_tombstone() {
    let alice = credential("alice", 1, 4096);
    let upsert = stored(Record::UserScramCredential(alice.clone()));
    let delete = stored(Record::RemoveUserScramCredential(
        RemoveUserScramCredentialRecord {
            name: "alice".to_owned(),
            mechanism: 1,
            ..Default::default()
        },
    ));
    assert_eq!(upsert.key, delete.key, "one key per user and mechanism");
    assert_eq!(upsert.key.as_deref().map(|k| &k[..2]), Some(&[0u8, 11][..]));
    assert_eq!(delete.value, None);
    assert_eq!(
        decode(upsert.key.clone(), upsert.value.clone()),
        Ok((("alice".to_owned(), 1), Some(alice)))
    );
    assert_eq!(
        decode(delete.key.clone(), None),
        Ok((("alice".to_owned(), 1), None))
    );
    let other = stored(Record::UserScramCredential(credential("alice", 2, 4096)));
    assert_ne!(other.key, upsert.key, "SHA-512 is another key than SHA-256");
}

#[test]
fn what_is_not_a_credential_is_refused_when_read() {
    let upsert = stored(Record::UserScramCredential(credential("alice", 1, 4096)));
    let bob = stored(Record::UserScramCredential(credential("bob", 1, 4096)));
    assert!(decode(None, upsert.value.clone()).is_err());
    assert!(decode(Some(Bytes::from_static(b"\x00\x11\x00")), None).is_err());
    assert!(decode(upsert.key.clone(), Some(Bytes::from_static(b"\x00"))).is_err());
    assert!(
        decode(upsert.key.clone(), bob.value).is_err(),
        "a value naming another user than its key"
    );
    assert!(decode(upsert.key, Some(Bytes::from_static(b"\x00\x00garbage"))).is_err());
    let topic = Record::Topic(Default::default()).at_latest_version();
    assert!(encode(&topic).is_err());
}

#[test]
fn the_controller_is_given_only_what_differs_and_a_whole_read_removes_the_rest() {
    let held = [credential("alice", 1, 4096), credential("bob", 1, 4096)];
    let records = held
        .iter()
        .map(|c| Record::UserScramCredential(c.clone()).at_latest_version())
        .collect();
    let mut store = kcoord_metadata::Store::new();
    store.append_versioned(records).unwrap();
    let controller =
        Controller::with_store(ControllerConfig::new("c".to_owned()), store, 0).unwrap();

    let mut latest = Latest::new();
    latest.insert(("alice".to_owned(), 1), Some(held[0].clone()));
    latest.insert(("carol".to_owned(), 1), Some(credential("carol", 1, 8192)));
    latest.insert(("dave".to_owned(), 1), None);
    let partial = changes(&controller, &latest, false);
    assert_eq!(
        partial,
        vec![Record::UserScramCredential(credential("carol", 1, 8192)).at_latest_version()],
        "alice unchanged, dave never held: only carol"
    );
    let whole = changes(&controller, &latest, true);
    assert_eq!(whole.len(), 2);
    assert_eq!(whole[1], removal("bob", 1), "bob is not in the topic");

    latest.insert(("alice".to_owned(), 1), None);
    assert_eq!(changes(&controller, &latest, false)[0], removal("alice", 1));
}
