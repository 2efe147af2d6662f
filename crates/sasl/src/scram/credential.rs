//! What a server stores for a SCRAM user, and how it is derived (Kafka's `ScramFormatter`).

use std::fmt;

use super::crypto::{hash, hi, hmac};
use crate::random::secure_random_string;
use crate::ScramMechanism;

/// The stored form of a SCRAM password (RFC 5802 section 3), as Kafka's
/// `UserScramCredentialRecord` carries it: never the password, nor the salted password.
#[derive(Clone, PartialEq, Eq)]
pub struct ScramCredential {
    pub salt: Vec<u8>,
    /// H(HMAC(SaltedPassword, "Client Key")): verifies a client's proof.
    pub stored_key: Vec<u8>,
    /// HMAC(SaltedPassword, "Server Key"): signs the server's final message.
    pub server_key: Vec<u8>,
    pub iterations: u32,
}

impl ScramCredential {
    /// The credential for a password with a given salt: Hi() over the password's UTF-8 bytes,
    /// with no SASLprep, as Kafka's `ScramFormatter` does (so a non-ASCII password works with
    /// Kafka's clients, which do not normalise either).
    pub fn from_password(
        mechanism: ScramMechanism,
        password: &str,
        salt: &[u8],
        iterations: u32,
    ) -> ScramCredential {
        let salted_password = salted_password(mechanism, password, salt, iterations);
        ScramCredential::from_salted_password(mechanism, salt, &salted_password, iterations)
    }

    /// The credential for a password with a fresh salt in Kafka's form (the UTF-8 bytes of
    /// [`secure_random_string`]), as `kafka-configs --add-config 'SCRAM-SHA-256=[password=…]'`
    /// makes one.
    pub fn generate(mechanism: ScramMechanism, password: &str, iterations: u32) -> ScramCredential {
        let salt = secure_random_string().into_bytes();
        ScramCredential::from_password(mechanism, password, &salt, iterations)
    }

    /// The credential for what an AlterUserScramCredentials upsertion carries: the salt, the
    /// salted password and the iterations; the controller derives the keys from them. Any
    /// length of either is accepted, as Kafka accepts it.
    pub fn from_salted_password(
        mechanism: ScramMechanism,
        salt: &[u8],
        salted_password: &[u8],
        iterations: u32,
    ) -> ScramCredential {
        ScramCredential {
            salt: salt.to_vec(),
            stored_key: hash(mechanism, &client_key(mechanism, salted_password)),
            server_key: hmac(mechanism, salted_password, b"Server Key"),
            iterations,
        }
    }
}

/// Salt, keys and iterations are not the password, but the keys let whoever holds them pose as
/// the server, so they stay out of logs.
impl fmt::Debug for ScramCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScramCredential")
            .field("salt", &format_args!("[{} bytes]", self.salt.len()))
            .field("stored_key", &format_args!("[hidden]"))
            .field("server_key", &format_args!("[hidden]"))
            .field("iterations", &self.iterations)
            .finish()
    }
}

/// SaltedPassword = Hi(Normalize(password), salt, i), Normalize being UTF-8 encoding only.
pub fn salted_password(
    mechanism: ScramMechanism,
    password: &str,
    salt: &[u8],
    iterations: u32,
) -> Vec<u8> {
    hi(mechanism, password.as_bytes(), salt, iterations)
}

/// ClientKey = HMAC(SaltedPassword, "Client Key").
pub(crate) fn client_key(mechanism: ScramMechanism, salted_password: &[u8]) -> Vec<u8> {
    hmac(mechanism, salted_password, b"Client Key")
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn sha256_credential_matches_the_rfc_7677_example() {
        // RFC 7677 section 3: user "user", password "pencil", these salt and iterations. The
        // RFC gives no keys; they come from its proof and signature, which the exchange test
        // in server.rs checks. These were computed by Kafka 4.4's ScramFormatter.
        let salt = STANDARD.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let credential =
            ScramCredential::from_password(ScramMechanism::ScramSha256, "pencil", &salt, 4096);
        assert_eq!(
            STANDARD.encode(&credential.stored_key),
            "WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY="
        );
        assert_eq!(
            STANDARD.encode(&credential.server_key),
            "wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU="
        );
        assert_eq!((credential.salt, credential.iterations), (salt, 4096));
    }

    #[test]
    fn sha512_credential_matches_kafkas_scram_formatter() {
        // Kafka 4.4's ScramFormatter(SCRAM_SHA_512).generateCredential(salt, saltedPassword(...)).
        let credential = ScramCredential::from_password(
            ScramMechanism::ScramSha512,
            "alice-secret",
            b"1omfro7zwmumr3umxudzyj6scf",
            8192,
        );
        assert_eq!(
            hex(&credential.stored_key),
            "9eb99b892d2e4d181e1d2104eb7fa304e2c99a8e42908deb97de1f8d83b6550f747cbbc8f97236e75c7d974a8d7b46fda0ffa0e614341c316a2f9897e972e1e3"
        );
        assert_eq!(
            hex(&credential.server_key),
            "ab8ff581ea5ce1564b19c3cf636e325c5a055deb241666c7d3ac8ef01f246c710177ac95db37caccd26628bca58af3eb6db21f2ee639b159459431cd6846b36e"
        );
    }

    #[test]
    fn salted_password_is_pbkdf2_hmac_as_rfc_7914_lists_it() {
        // RFC 7914 section 11, PBKDF2-HMAC-SHA256 with P="passwd", S="salt", c=1: the first 32
        // of its 64 bytes are the first block, which is SCRAM's Hi().
        assert_eq!(
            hex(&salted_password(
                ScramMechanism::ScramSha256,
                "passwd",
                b"salt",
                1
            )),
            "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc"
        );
    }

    #[test]
    fn a_credential_from_the_salted_password_equals_one_from_the_password() {
        for mechanism in ScramMechanism::ALL {
            let salted = salted_password(mechanism, "pw", b"salt", 4096);
            assert_eq!(salted.len(), mechanism.hash_len());
            assert_eq!(
                ScramCredential::from_salted_password(mechanism, b"salt", &salted, 4096),
                ScramCredential::from_password(mechanism, "pw", b"salt", 4096)
            );
        }
    }

    #[test]
    fn zero_iterations_derive_what_one_iteration_does_as_kafkas_hi() {
        assert_eq!(
            salted_password(ScramMechanism::ScramSha256, "pw", b"s", 0),
            salted_password(ScramMechanism::ScramSha256, "pw", b"s", 1)
        );
    }

    #[test]
    fn non_ascii_passwords_are_used_as_utf8_without_normalisation() {
        let composed = salted_password(ScramMechanism::ScramSha256, "\u{e9}", b"s", 4096);
        let decomposed = salted_password(ScramMechanism::ScramSha256, "e\u{301}", b"s", 4096);
        assert_ne!(composed, decomposed);
    }

    #[test]
    fn generated_credentials_have_kafka_shaped_fresh_salts() {
        let a = ScramCredential::generate(ScramMechanism::ScramSha512, "pw", 4096);
        let b = ScramCredential::generate(ScramMechanism::ScramSha512, "pw", 4096);
        assert_ne!(a.salt, b.salt);
        assert_ne!(a.stored_key, b.stored_key);
        assert!(a.salt.iter().all(|c| c.is_ascii_alphanumeric()));
        assert_eq!(a.stored_key.len(), 64);
        assert_eq!(a.iterations, 4096);
    }

    #[test]
    fn debug_output_hides_the_keys() {
        let credential =
            ScramCredential::from_password(ScramMechanism::ScramSha256, "pw", b"s", 4096);
        let shown = format!("{credential:?}");
        assert!(
            shown.contains("[hidden]") && shown.contains("4096"),
            "{shown}"
        );
        assert!(!shown.contains(&format!("{:?}", credential.stored_key)));
    }
}
