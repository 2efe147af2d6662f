//! AlterUserScramCredentials on the controller, as Kafka's `ScramControlManager.alterCredentials`
//! decides it: per user, at most one alteration per request; deletions must name a stored
//! credential; upsertions carry the salt and salted password the client derived, and the
//! controller stores the keys derived from them (never the salted password).
//!
//! Kafka lists the results from hash maps (accepted deletions, accepted upsertions, then the
//! errors); kcoord keeps the same three groups, each in the order the users first appear in
//! the request.

use std::collections::HashMap;

use kcoord_metadata::{MetadataVersion, Record, RecordAndVersion, SecurityImage};
use kcoord_sasl::{ScramCredential, ScramMechanism};
use kcoord_wire::messages::alter_user_scram_credentials_request::{
    ScramCredentialDeletion, ScramCredentialUpsertion,
};
use kcoord_wire::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kcoord_wire::messages::AlterUserScramCredentialsRequest;
use kcoord_wire::records::{RemoveUserScramCredentialRecord, UserScramCredentialRecord};
use kcoord_wire::ErrorCode;

/// What the request does to one user.
enum Alteration<'a> {
    Delete(&'a ScramCredentialDeletion),
    Upsert(&'a ScramCredentialUpsertion),
    Refused(ErrorCode, &'static str),
    /// Accepted, but Kafka's `finishUpsertion` cannot derive its keys: an empty salted
    /// password is an empty HMAC key, which Java's `SecretKeySpec` refuses ("Empty key"), so
    /// Kafka answers UNKNOWN_SERVER_ERROR with no message and writes nothing for the user.
    /// Decided after the duplicate checks, as in Kafka.
    Underivable,
}

/// The records of the accepted alterations (all or none are written) and one result per user.
pub fn alter_credentials(
    image: &SecurityImage,
    metadata_version: MetadataVersion,
    request: &AlterUserScramCredentialsRequest,
) -> (Vec<RecordAndVersion>, Vec<AlterUserScramCredentialsResult>) {
    let mut users: Vec<&str> = Vec::new();
    let mut by_user: HashMap<&str, Alteration> = HashMap::new();
    let deletions = request
        .deletions
        .iter()
        .map(|d| (d.name.as_str(), Alteration::Delete(d)));
    let upsertions = request
        .upsertions
        .iter()
        .map(|u| (u.name.as_str(), Alteration::Upsert(u)));
    for (user, alteration) in deletions.chain(upsertions) {
        let decided = match by_user.get(user) {
            None => check(image, metadata_version, alteration),
            Some(Alteration::Refused(..)) => continue,
            Some(_) => Alteration::Refused(
                ErrorCode::DUPLICATE_RESOURCE,
                "A user credential cannot be altered twice in the same request",
            ),
        };
        if by_user.insert(user, decided).is_none() {
            users.push(user);
        }
    }
    for user in &users {
        if let Some(Alteration::Upsert(u)) = by_user.get(user) {
            if u.salted_password.is_empty() {
                by_user.insert(user, Alteration::Underivable);
            }
        }
    }
    let mut records = Vec::new();
    let mut results = Vec::with_capacity(users.len());
    for want_deletions in [true, false] {
        for user in &users {
            match by_user.get(user) {
                Some(Alteration::Delete(d)) if want_deletions => {
                    records.push(removal(d));
                    results.push(result(user, None));
                }
                Some(Alteration::Upsert(u)) if !want_deletions => {
                    records.push(credential(u));
                    results.push(result(user, None));
                }
                _ => {}
            }
        }
    }
    for user in &users {
        match by_user.get(user) {
            Some(Alteration::Refused(code, message)) => {
                results.push(result(user, Some((*code, message))));
            }
            Some(Alteration::Underivable) => results.push(AlterUserScramCredentialsResult {
                user: (*user).to_owned(),
                error_code: ErrorCode::UNKNOWN_SERVER_ERROR.code(),
                error_message: None,
                ..Default::default()
            }),
            _ => {}
        }
    }
    (records, results)
}

/// Kafka's `validateDeletion` / `validateUpsertion`, after the metadata.version check.
fn check<'a>(
    image: &SecurityImage,
    metadata_version: MetadataVersion,
    alteration: Alteration<'a>,
) -> Alteration<'a> {
    if !metadata_version.is_scram_supported() {
        return Alteration::Refused(
            ErrorCode::UNSUPPORTED_VERSION,
            "The current metadata.version does not support SCRAM",
        );
    }
    let (name, mechanism) = match &alteration {
        Alteration::Delete(d) => (d.name.as_str(), d.mechanism),
        Alteration::Upsert(u) => (u.name.as_str(), u.mechanism),
        Alteration::Refused(..) | Alteration::Underivable => return alteration,
    };
    if name.is_empty() {
        return Alteration::Refused(
            ErrorCode::UNACCEPTABLE_CREDENTIAL,
            "Username must not be empty",
        );
    }
    let Some(scram) = ScramMechanism::from_kafka_type(mechanism) else {
        return Alteration::Refused(
            ErrorCode::UNSUPPORTED_SASL_MECHANISM,
            "Unknown SCRAM mechanism",
        );
    };
    match &alteration {
        Alteration::Delete(_) if image.credential(name, mechanism).is_none() => {
            Alteration::Refused(
                ErrorCode::RESOURCE_NOT_FOUND,
                "Attempt to delete a user credential that does not exist",
            )
        }
        Alteration::Upsert(u) if i64::from(u.iterations) < i64::from(scram.min_iterations()) => {
            Alteration::Refused(ErrorCode::UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        }
        Alteration::Upsert(u) if i64::from(u.iterations) > i64::from(scram.max_iterations()) => {
            Alteration::Refused(ErrorCode::UNACCEPTABLE_CREDENTIAL, "Too many iterations")
        }
        _ => alteration,
    }
}

fn removal(deletion: &ScramCredentialDeletion) -> RecordAndVersion {
    Record::RemoveUserScramCredential(RemoveUserScramCredentialRecord {
        name: deletion.name.clone(),
        mechanism: deletion.mechanism,
        ..Default::default()
    })
    .at_version(0)
}

/// The stored keys derived from the upsertion's salted password (`finishUpsertion`).
fn credential(upsertion: &ScramCredentialUpsertion) -> RecordAndVersion {
    // `check` accepted only known mechanisms and iterations within bounds.
    let mechanism =
        ScramMechanism::from_kafka_type(upsertion.mechanism).unwrap_or(ScramMechanism::ScramSha256);
    let derived = ScramCredential::from_salted_password(
        mechanism,
        &upsertion.salt,
        &upsertion.salted_password,
        upsertion.iterations.unsigned_abs(),
    );
    Record::UserScramCredential(UserScramCredentialRecord {
        name: upsertion.name.clone(),
        mechanism: upsertion.mechanism,
        salt: derived.salt.into(),
        stored_key: derived.stored_key.into(),
        server_key: derived.server_key.into(),
        iterations: upsertion.iterations,
        ..Default::default()
    })
    .at_version(0)
}

fn result(user: &str, error: Option<(ErrorCode, &str)>) -> AlterUserScramCredentialsResult {
    AlterUserScramCredentialsResult {
        user: user.to_owned(),
        error_code: error.map_or(0, |(code, _)| code.code()),
        error_message: error.map(|(_, message)| message.to_owned()),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upsert(name: &str, mechanism: i8, iterations: i32) -> ScramCredentialUpsertion {
        ScramCredentialUpsertion {
            name: name.into(),
            mechanism,
            iterations,
            salt: b"salt".to_vec().into(),
            salted_password: vec![7; 32].into(),
            ..Default::default()
        }
    }

    fn delete(name: &str, mechanism: i8) -> ScramCredentialDeletion {
        ScramCredentialDeletion {
            name: name.into(),
            mechanism,
            ..Default::default()
        }
    }

    /// (user, error code, error message)
    type Summary = (String, i16, Option<String>);

    fn alter(
        image: &SecurityImage,
        deletions: Vec<ScramCredentialDeletion>,
        upsertions: Vec<ScramCredentialUpsertion>,
    ) -> (Vec<RecordAndVersion>, Vec<Summary>) {
        let request = AlterUserScramCredentialsRequest {
            deletions,
            upsertions,
            ..Default::default()
        };
        let (records, results) = alter_credentials(image, MetadataVersion::LATEST, &request);
        let results = results
            .into_iter()
            .map(|r| (r.user, r.error_code, r.error_message))
            .collect();
        (records, results)
    }

    fn image_with(records: &[RecordAndVersion]) -> SecurityImage {
        let mut state = kcoord_metadata::LogState::default();
        for (offset, r) in records.iter().enumerate() {
            state.replay(&r.record, offset as u64).unwrap();
        }
        state.security
    }

    #[test]
    fn an_upsertion_stores_the_keys_derived_from_the_salted_password_never_the_password() {
        let (records, results) = alter(
            &SecurityImage::default(),
            vec![],
            vec![upsert("alice", 2, 4096)],
        );
        assert_eq!(results, vec![("alice".to_owned(), 0, None)]);
        let Record::UserScramCredential(stored) = &records[0].record else {
            panic!("{:?}", records[0]);
        };
        let expected = ScramCredential::from_salted_password(
            ScramMechanism::ScramSha512,
            b"salt",
            &[7; 32],
            4096,
        );
        assert_eq!(stored.stored_key.as_ref(), expected.stored_key.as_slice());
        assert_eq!(stored.server_key.as_ref(), expected.server_key.as_slice());
        assert_eq!(stored.salt.as_ref(), b"salt");
        assert_eq!(stored.iterations, 4096);
        assert_ne!(stored.stored_key.as_ref(), &[7; 32][..]);
    }

    #[test]
    fn a_user_altered_twice_is_refused_and_none_of_its_alterations_is_written() {
        let image = image_with(
            &alter(
                &SecurityImage::default(),
                vec![],
                vec![upsert("bob", 1, 4096)],
            )
            .0,
        );
        let (records, results) = alter(
            &image,
            vec![delete("bob", 1)],
            vec![upsert("bob", 2, 4096), upsert("carol", 1, 4096)],
        );
        assert_eq!(records.len(), 1, "only carol's");
        assert_eq!(
            results,
            vec![
                ("carol".to_owned(), 0, None),
                (
                    "bob".to_owned(),
                    ErrorCode::DUPLICATE_RESOURCE.code(),
                    Some("A user credential cannot be altered twice in the same request".into())
                ),
            ]
        );
    }

    #[test]
    fn each_refusal_has_kafkas_code_and_message() {
        let cases: Vec<(
            Vec<ScramCredentialDeletion>,
            Vec<ScramCredentialUpsertion>,
            ErrorCode,
            &str,
        )> = vec![
            (
                vec![delete("", 1)],
                vec![],
                ErrorCode::UNACCEPTABLE_CREDENTIAL,
                "Username must not be empty",
            ),
            (
                vec![delete("a", 3)],
                vec![],
                ErrorCode::UNSUPPORTED_SASL_MECHANISM,
                "Unknown SCRAM mechanism",
            ),
            (
                vec![delete("a", 1)],
                vec![],
                ErrorCode::RESOURCE_NOT_FOUND,
                "Attempt to delete a user credential that does not exist",
            ),
            (
                vec![],
                vec![upsert("a", 0, 4096)],
                ErrorCode::UNSUPPORTED_SASL_MECHANISM,
                "Unknown SCRAM mechanism",
            ),
            (
                vec![],
                vec![upsert("a", 1, 4095)],
                ErrorCode::UNACCEPTABLE_CREDENTIAL,
                "Too few iterations",
            ),
            (
                vec![],
                vec![upsert("a", 1, 16385)],
                ErrorCode::UNACCEPTABLE_CREDENTIAL,
                "Too many iterations",
            ),
            (
                vec![],
                vec![upsert("a", 2, -1)],
                ErrorCode::UNACCEPTABLE_CREDENTIAL,
                "Too few iterations",
            ),
        ];
        for (deletions, upsertions, code, message) in cases {
            let (records, results) = alter(&SecurityImage::default(), deletions, upsertions);
            assert!(records.is_empty());
            assert_eq!(results.len(), 1);
            assert_eq!(
                (results[0].1, results[0].2.as_deref()),
                (code.code(), Some(message))
            );
        }
    }

    #[test]
    fn an_empty_salted_password_is_an_unknown_server_error_after_the_duplicate_checks() {
        let mut empty = upsert("empty", 1, 4096);
        empty.salted_password = Vec::new().into();
        let mut twice = upsert("twice", 1, 4096);
        twice.salted_password = Vec::new().into();
        let mut no_salt = upsert("no-salt", 2, 4096);
        no_salt.salt = Vec::new().into();
        let (records, results) = alter(
            &SecurityImage::default(),
            vec![],
            vec![empty, twice, upsert("twice", 2, 4096), no_salt],
        );
        assert_eq!(records.len(), 1, "only no-salt's: an empty salt is fine");
        assert_eq!(
            results,
            vec![
                ("no-salt".to_owned(), 0, None),
                (
                    "empty".to_owned(),
                    ErrorCode::UNKNOWN_SERVER_ERROR.code(),
                    None
                ),
                (
                    "twice".to_owned(),
                    ErrorCode::DUPLICATE_RESOURCE.code(),
                    Some("A user credential cannot be altered twice in the same request".into())
                ),
            ]
        );
    }

    #[test]
    fn an_old_metadata_version_refuses_scram() {
        let request = AlterUserScramCredentialsRequest {
            upsertions: vec![upsert("a", 1, 4096)],
            ..Default::default()
        };
        let (records, results) = alter_credentials(
            &SecurityImage::default(),
            MetadataVersion::IBP_3_4_IV0,
            &request,
        );
        assert!(records.is_empty());
        assert_eq!(results[0].error_code, ErrorCode::UNSUPPORTED_VERSION.code());
    }

    #[test]
    fn results_list_deletions_then_upsertions_then_errors_in_request_order() {
        let seeded = alter(
            &SecurityImage::default(),
            vec![],
            vec![upsert("d1", 1, 4096), upsert("d2", 1, 4096)],
        );
        let image = image_with(&seeded.0);
        let (records, results) = alter(
            &image,
            vec![delete("d2", 1), delete("x", 1), delete("d1", 1)],
            vec![upsert("u2", 1, 4096), upsert("u1", 1, 4096)],
        );
        assert_eq!(records.len(), 4);
        let users: Vec<&str> = results.iter().map(|r| r.0.as_str()).collect();
        assert_eq!(users, vec!["d2", "d1", "u2", "u1", "x"]);
    }
}
