//! Where the SCRAM server finds credentials, and the decoys it uses when there are none.

use std::collections::HashMap;
use std::sync::Arc;

use super::crypto::hmac;
use super::ScramCredential;
use crate::random::{base36_of_130_bits, process_secret};
use crate::ScramMechanism;

/// The server's view of the credential store (in kcoord, the image built from
/// `UserScramCredentialRecord`s).
pub trait ScramCredentialLookup {
    /// The credential of `username` for `mechanism`, if it has one.
    fn scram_credential(
        &self,
        mechanism: ScramMechanism,
        username: &str,
    ) -> Option<ScramCredential>;

    /// The delegation token `token_id`, for a client that sends the `tokenauth=true`
    /// extension. None by default: a store without delegation tokens.
    fn delegation_token(
        &self,
        _mechanism: ScramMechanism,
        _token_id: &str,
    ) -> Option<DelegationTokenCredential> {
        None
    }
}

/// A delegation token's SCRAM credential (its HMAC as the password) and whose it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelegationTokenCredential {
    /// The principal name the connection authenticates as.
    pub owner: String,
    pub credential: ScramCredential,
    pub expiry_timestamp_ms: i64,
}

impl<T: ScramCredentialLookup + ?Sized> ScramCredentialLookup for &T {
    fn scram_credential(
        &self,
        mechanism: ScramMechanism,
        username: &str,
    ) -> Option<ScramCredential> {
        (**self).scram_credential(mechanism, username)
    }

    fn delegation_token(
        &self,
        mechanism: ScramMechanism,
        token_id: &str,
    ) -> Option<DelegationTokenCredential> {
        (**self).delegation_token(mechanism, token_id)
    }
}

impl<T: ScramCredentialLookup + ?Sized> ScramCredentialLookup for Arc<T> {
    fn scram_credential(
        &self,
        mechanism: ScramMechanism,
        username: &str,
    ) -> Option<ScramCredential> {
        (**self).scram_credential(mechanism, username)
    }

    fn delegation_token(
        &self,
        mechanism: ScramMechanism,
        token_id: &str,
    ) -> Option<DelegationTokenCredential> {
        (**self).delegation_token(mechanism, token_id)
    }
}

/// An in-memory credential table keyed by (mechanism, user name), as Kafka's credential cache
/// is.
#[derive(Debug, Clone, Default)]
pub struct ScramCredentials {
    credentials: HashMap<(ScramMechanism, String), ScramCredential>,
}

impl ScramCredentials {
    pub fn new() -> ScramCredentials {
        ScramCredentials::default()
    }

    /// Adds or replaces a user's credential for a mechanism.
    pub fn insert(
        &mut self,
        mechanism: ScramMechanism,
        username: &str,
        credential: ScramCredential,
    ) {
        self.credentials
            .insert((mechanism, username.to_string()), credential);
    }

    pub fn remove(&mut self, mechanism: ScramMechanism, username: &str) -> Option<ScramCredential> {
        self.credentials.remove(&(mechanism, username.to_string()))
    }
}

impl ScramCredentialLookup for ScramCredentials {
    fn scram_credential(
        &self,
        mechanism: ScramMechanism,
        username: &str,
    ) -> Option<ScramCredential> {
        self.credentials
            .get(&(mechanism, username.to_string()))
            .cloned()
    }
}

/// The credential the server pretends an unknown user has, so that the exchange goes on to
/// the proof and fails there exactly as a wrong password does.
///
/// Its salt is derived from the name with an HMAC keyed by the per-process secret, so asking
/// twice for the same unknown name shows the same salt (a random salt each time would give the
/// game away), and it has the shape of a salt `kafka-configs` makes (a 130-bit number in base
/// 36). Its keys come from the same HMAC, so nobody without the secret can produce a proof
/// for it; the exchange also refuses every proof for a decoy whatever the comparison says.
pub(crate) fn decoy_credential(
    mechanism: ScramMechanism,
    username: &str,
    iterations: u32,
) -> ScramCredential {
    let derive = |purpose: &str| {
        let input = format!("{purpose}\0{}\0{username}", mechanism.mechanism_name());
        hmac(mechanism, process_secret(), input.as_bytes())
    };
    let mut salt_bits = [0u8; 17];
    salt_bits.copy_from_slice(&derive("salt")[..17]);
    ScramCredential {
        salt: base36_of_130_bits(salt_bits).into_bytes(),
        stored_key: derive("stored key"),
        server_key: derive("server key"),
        iterations,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decoy_is_the_same_for_the_same_name_and_differs_between_names() {
        let mechanism = ScramMechanism::ScramSha512;
        let alice = decoy_credential(mechanism, "alice", 4096);
        assert_eq!(alice, decoy_credential(mechanism, "alice", 4096));
        let bob = decoy_credential(mechanism, "bob", 4096);
        assert_ne!(alice.salt, bob.salt);
        assert_ne!(alice.stored_key, bob.stored_key);
        assert_ne!(
            alice.salt,
            decoy_credential(ScramMechanism::ScramSha256, "alice", 4096).salt
        );
    }

    #[test]
    fn a_decoy_looks_like_a_kafka_credential() {
        let decoy = decoy_credential(ScramMechanism::ScramSha512, "mallory", 8192);
        assert!(!decoy.salt.is_empty() && decoy.salt.len() <= 26);
        assert!(decoy
            .salt
            .iter()
            .all(|c| c.is_ascii_digit() || c.is_ascii_lowercase()));
        assert_eq!(decoy.stored_key.len(), 64);
        assert_eq!(decoy.server_key.len(), 64);
        assert_ne!(decoy.stored_key, decoy.server_key);
        assert_eq!(decoy.iterations, 8192);
    }

    #[test]
    fn the_table_finds_credentials_by_mechanism_and_name() {
        let credential =
            ScramCredential::from_password(ScramMechanism::ScramSha256, "pw", b"s", 4096);
        let mut table = ScramCredentials::new();
        table.insert(ScramMechanism::ScramSha256, "alice", credential.clone());
        assert_eq!(
            table.scram_credential(ScramMechanism::ScramSha256, "alice"),
            Some(credential.clone())
        );
        assert_eq!(
            table.scram_credential(ScramMechanism::ScramSha512, "alice"),
            None
        );
        assert_eq!(
            table.scram_credential(ScramMechanism::ScramSha256, "Alice"),
            None
        );
        let shared = Arc::new(table.clone());
        assert!(shared
            .scram_credential(ScramMechanism::ScramSha256, "alice")
            .is_some());
        assert_eq!(
            shared.delegation_token(ScramMechanism::ScramSha256, "alice"),
            None
        );
        assert_eq!(
            table.remove(ScramMechanism::ScramSha256, "alice"),
            Some(credential)
        );
        assert_eq!(
            table.scram_credential(ScramMechanism::ScramSha256, "alice"),
            None
        );
    }
}
