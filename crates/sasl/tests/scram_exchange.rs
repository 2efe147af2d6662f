//! Whole SCRAM exchanges between `ScramServer` and a small client written here from RFC 5802
//! section 3 (using the RustCrypto primitives directly, not the crate's derivation).

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use kcoord_sasl::{
    Authenticated, DelegationTokenCredential, SaslError, ScramCredential, ScramCredentialLookup,
    ScramCredentials, ScramMechanism, ScramServer, Step,
};
use sha2::{Digest, Sha256, Sha512};

const SHA256: ScramMechanism = ScramMechanism::ScramSha256;
const SHA512: ScramMechanism = ScramMechanism::ScramSha512;

/// The client side of RFC 5802.
struct Client {
    mechanism: ScramMechanism,
    username: String,
    password: String,
    nonce: String,
    gs2_header: String,
    extensions: String,
}

impl Client {
    fn new(mechanism: ScramMechanism, username: &str, password: &str) -> Client {
        Client {
            mechanism,
            username: username.into(),
            password: password.into(),
            nonce: kcoord_sasl::secure_random_string(),
            gs2_header: "n,,".into(),
            extensions: String::new(),
        }
    }

    fn bare(&self) -> String {
        let name = self.username.replace('=', "=3D").replace(',', "=2C");
        format!("n={name},r={}{}", self.nonce, self.extensions)
    }

    fn first(&self) -> Vec<u8> {
        format!("{}{}", self.gs2_header, self.bare()).into_bytes()
    }

    /// The client-final message for a server-first message, and the server signature the
    /// client expects back.
    fn last(&self, server_first: &[u8]) -> (Vec<u8>, String) {
        let server_first = std::str::from_utf8(server_first).unwrap();
        let fields: Vec<&str> = server_first.split(',').collect();
        let nonce = fields[0].strip_prefix("r=").unwrap();
        let salt = STANDARD
            .decode(fields[1].strip_prefix("s=").unwrap())
            .unwrap();
        let iterations: u32 = fields[2].strip_prefix("i=").unwrap().parse().unwrap();
        assert!(
            nonce.starts_with(&self.nonce),
            "the server kept the client's nonce"
        );
        let salted_password = self.hi(&salt, iterations);
        let client_key = self.hmac(&salted_password, b"Client Key");
        let stored_key = self.hash(&client_key);
        let without_proof = format!(
            "c={},r={nonce}",
            STANDARD.encode(self.gs2_header.as_bytes())
        );
        let auth_message = format!("{},{server_first},{without_proof}", self.bare());
        let client_signature = self.hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&client_signature)
            .map(|(a, b)| a ^ b)
            .collect();
        let server_key = self.hmac(&salted_password, b"Server Key");
        let server_signature = self.hmac(&server_key, auth_message.as_bytes());
        let message = format!("{without_proof},p={}", STANDARD.encode(proof));
        (
            message.into_bytes(),
            format!("v={}", STANDARD.encode(server_signature)),
        )
    }

    fn hi(&self, salt: &[u8], iterations: u32) -> Vec<u8> {
        let mut out = vec![0u8; self.mechanism.hash_len()];
        match self.mechanism {
            SHA256 => {
                pbkdf2::pbkdf2_hmac::<Sha256>(self.password.as_bytes(), salt, iterations, &mut out)
            }
            SHA512 => {
                pbkdf2::pbkdf2_hmac::<Sha512>(self.password.as_bytes(), salt, iterations, &mut out)
            }
        }
        out
    }

    fn hmac(&self, key: &[u8], data: &[u8]) -> Vec<u8> {
        match self.mechanism {
            SHA256 => {
                let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).unwrap();
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
            SHA512 => {
                let mut mac = <Hmac<Sha512> as KeyInit>::new_from_slice(key).unwrap();
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
        }
    }

    fn hash(&self, data: &[u8]) -> Vec<u8> {
        match self.mechanism {
            SHA256 => Sha256::digest(data).to_vec(),
            SHA512 => Sha512::digest(data).to_vec(),
        }
    }
}

fn users() -> ScramCredentials {
    let mut users = ScramCredentials::new();
    for mechanism in ScramMechanism::ALL {
        users.insert(
            mechanism,
            "alice",
            ScramCredential::generate(mechanism, "alice-secret", 4096),
        );
        users.insert(
            mechanism,
            "bob,=x",
            ScramCredential::generate(mechanism, "b\u{f6}b", 8192),
        );
    }
    users
}

fn challenge(step: Result<Step, SaslError>) -> Vec<u8> {
    match step {
        Ok(Step::Challenge(token)) => token,
        other => panic!("expected a challenge, got {other:?}"),
    }
}

fn complete(step: Result<Step, SaslError>) -> (Vec<u8>, Authenticated) {
    match step {
        Ok(Step::Complete {
            token,
            authenticated,
        }) => (token, authenticated),
        other => panic!("expected completion, got {other:?}"),
    }
}

/// Runs a whole exchange; the result of the final step.
fn exchange(
    server: &mut ScramServer<impl ScramCredentialLookup>,
    client: &Client,
) -> Result<Step, SaslError> {
    let server_first = challenge(server.step(&client.first()));
    let (client_final, _) = client.last(&server_first);
    server.step(&client_final)
}

#[test]
fn a_full_scram_sha_256_exchange_authenticates_and_the_client_verifies_the_server() {
    let users = users();
    let client = Client::new(SHA256, "alice", "alice-secret");
    let mut server = ScramServer::new(SHA256, &users);
    let server_first = challenge(server.step(&client.first()));
    let (client_final, expected_signature) = client.last(&server_first);
    let (token, authenticated) = complete(server.step(&client_final));
    assert_eq!(String::from_utf8(token).unwrap(), expected_signature);
    assert_eq!(authenticated.authorization_id, "alice");
    assert!(server.is_complete());
}

#[test]
fn a_full_scram_sha_512_exchange_authenticates_and_the_client_verifies_the_server() {
    let users = users();
    let client = Client::new(SHA512, "alice", "alice-secret");
    let mut server = ScramServer::new(SHA512, &users);
    let server_first = challenge(server.step(&client.first()));
    let (client_final, expected_signature) = client.last(&server_first);
    let (token, authenticated) = complete(server.step(&client_final));
    assert_eq!(String::from_utf8(token).unwrap(), expected_signature);
    assert_eq!(authenticated.authorization_id, "alice");
}

#[test]
fn the_server_nonce_is_fresh_and_appended_to_the_clients() {
    let users = users();
    let client = Client::new(SHA256, "alice", "alice-secret");
    let first = String::from_utf8(challenge(
        ScramServer::new(SHA256, &users).step(&client.first()),
    ))
    .unwrap();
    let second = String::from_utf8(challenge(
        ScramServer::new(SHA256, &users).step(&client.first()),
    ))
    .unwrap();
    assert_ne!(first, second);
    let server_part = first
        .split(',')
        .next()
        .unwrap()
        .strip_prefix(&format!("r={}", client.nonce))
        .unwrap();
    assert!(server_part.len() >= 20, "{server_part}");
}

#[test]
fn a_name_with_a_comma_and_an_equals_sign_and_a_non_ascii_password_authenticate() {
    let users = users();
    for mechanism in ScramMechanism::ALL {
        let client = Client::new(mechanism, "bob,=x", "b\u{f6}b");
        let (_, authenticated) =
            complete(exchange(&mut ScramServer::new(mechanism, &users), &client));
        assert_eq!(authenticated.authorization_id, "bob,=x");
    }
}

#[test]
fn a_credential_for_the_other_mechanism_does_not_count() {
    let mut users = ScramCredentials::new();
    users.insert(
        SHA512,
        "carol",
        ScramCredential::generate(SHA512, "pw", 4096),
    );
    let client = Client::new(SHA256, "carol", "pw");
    assert_eq!(
        exchange(&mut ScramServer::new(SHA256, &users), &client),
        Err(SaslError::InvalidClientCredentials)
    );
}

#[test]
fn a_wrong_password_fails_at_the_proof_with_the_generic_message() {
    let users = users();
    for mechanism in ScramMechanism::ALL {
        let client = Client::new(mechanism, "alice", "alice-secreT");
        let mut server = ScramServer::new(mechanism, &users);
        let error = exchange(&mut server, &client).unwrap_err();
        assert_eq!(error, SaslError::InvalidClientCredentials);
        assert_eq!(error.error_code(), 58);
        assert_eq!(
            error.client_message(mechanism.mechanism_name(), false),
            format!(
                "Authentication failed during authentication due to invalid credentials with SASL mechanism {}",
                mechanism.mechanism_name()
            )
        );
        assert!(!server.is_complete());
    }
}

#[test]
fn an_unknown_user_reaches_the_proof_step_and_fails_exactly_as_a_wrong_password() {
    let users = users();
    for mechanism in ScramMechanism::ALL {
        let mut server = ScramServer::new(mechanism, &users);
        let client = Client::new(mechanism, "mallory", "anything");
        let server_first = String::from_utf8(challenge(server.step(&client.first()))).unwrap();
        // The server-first message has the shape a real user's has.
        let fields: Vec<&str> = server_first.split(',').collect();
        assert_eq!(fields.len(), 3);
        let salt = STANDARD
            .decode(fields[1].strip_prefix("s=").unwrap())
            .unwrap();
        assert!(!salt.is_empty() && salt.len() <= 26 && salt.iter().all(u8::is_ascii_alphanumeric));
        assert_eq!(fields[2], "i=4096");
        let (client_final, _) = client.last(server_first.as_bytes());
        let unknown = server.step(&client_final).unwrap_err();

        let wrong_password = exchange(
            &mut ScramServer::new(mechanism, &users),
            &Client::new(mechanism, "alice", "anything"),
        )
        .unwrap_err();
        assert_eq!(unknown, wrong_password);
        assert_eq!(
            unknown.client_message(mechanism.mechanism_name(), false),
            wrong_password.client_message(mechanism.mechanism_name(), false)
        );
    }
}

#[test]
fn an_unknown_user_sees_the_same_salt_each_time_and_the_configured_iterations() {
    let users = users();
    let salt_and_iterations = |iterations: u32| {
        let mut server = ScramServer::new(SHA512, &users).with_unknown_user_iterations(iterations);
        let first = String::from_utf8(challenge(
            server.step(&Client::new(SHA512, "mallory", "x").first()),
        ))
        .unwrap();
        first
            .split(',')
            .skip(1)
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let once = salt_and_iterations(8192);
    assert_eq!(once, salt_and_iterations(8192));
    assert_eq!(once[1], "i=8192");
    // Out-of-bounds settings are brought within the mechanism's bounds.
    assert_eq!(salt_and_iterations(10)[1], "i=4096");
    assert_eq!(salt_and_iterations(1_000_000)[1], "i=16384");
    let other = {
        let mut server = ScramServer::new(SHA512, &users);
        String::from_utf8(challenge(
            server.step(&Client::new(SHA512, "trudy", "x").first()),
        ))
        .unwrap()
    };
    assert!(
        !other.contains(&once[0]),
        "different names get different salts"
    );
}

#[test]
fn even_the_right_proof_for_a_decoy_salt_is_refused() {
    // A client that somehow knew the decoy's salt and iterations still proves nothing: the
    // decoy's keys come from no password.
    let users = ScramCredentials::new();
    let client = Client::new(SHA256, "ghost", "");
    assert_eq!(
        exchange(&mut ScramServer::new(SHA256, &users), &client),
        Err(SaslError::InvalidClientCredentials)
    );
}

#[test]
fn an_altered_nonce_in_the_final_message_is_refused() {
    let users = users();
    let client = Client::new(SHA256, "alice", "alice-secret");
    let mut server = ScramServer::new(SHA256, &users);
    let server_first = challenge(server.step(&client.first()));
    let (client_final, _) = client.last(&server_first);
    let altered = String::from_utf8(client_final)
        .unwrap()
        .replacen(",r=", ",r=X", 1);
    assert_eq!(
        server.step(altered.as_bytes()),
        Err(SaslError::InvalidClientNonce)
    );
    assert_eq!(
        SaslError::InvalidClientNonce.client_message("SCRAM-SHA-256", false),
        "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
    );
}

#[test]
fn a_final_message_with_only_the_client_nonce_is_refused() {
    let users = users();
    let client = Client::new(SHA256, "alice", "alice-secret");
    let mut server = ScramServer::new(SHA256, &users);
    challenge(server.step(&client.first()));
    let only_client_nonce = format!("c=biws,r={},p=AAAA", client.nonce);
    assert_eq!(
        server.step(only_client_nonce.as_bytes()),
        Err(SaslError::InvalidClientNonce)
    );
}

#[test]
fn a_replayed_final_message_from_an_earlier_exchange_is_refused() {
    let users = users();
    let client = Client::new(SHA256, "alice", "alice-secret");
    let mut first_server = ScramServer::new(SHA256, &users);
    let server_first = challenge(first_server.step(&client.first()));
    let (recorded_final, _) = client.last(&server_first);
    complete(first_server.step(&recorded_final));

    // The same client-first again: the server's new nonce makes the old proof worthless.
    let mut replay_server = ScramServer::new(SHA256, &users);
    challenge(replay_server.step(&client.first()));
    assert_eq!(
        replay_server.step(&recorded_final),
        Err(SaslError::InvalidClientNonce)
    );
}

#[test]
fn a_proof_for_another_exchange_with_the_right_nonce_is_refused() {
    // The nonce is right but the proof signs a different AuthMessage (an altered channel
    // binding field), so it does not verify.
    let users = users();
    let client = Client::new(SHA256, "alice", "alice-secret");
    let mut server = ScramServer::new(SHA256, &users);
    let server_first = challenge(server.step(&client.first()));
    let (client_final, _) = client.last(&server_first);
    let altered = String::from_utf8(client_final)
        .unwrap()
        .replacen("c=biws", "c=eSws", 1);
    assert_eq!(
        server.step(altered.as_bytes()),
        Err(SaslError::InvalidClientCredentials)
    );
}

#[test]
fn a_proof_of_the_wrong_length_is_refused_as_a_wrong_proof() {
    let users = users();
    let client = Client::new(SHA512, "alice", "alice-secret");
    let mut server = ScramServer::new(SHA512, &users);
    let server_first = String::from_utf8(challenge(server.step(&client.first()))).unwrap();
    let nonce = server_first
        .split(',')
        .next()
        .unwrap()
        .strip_prefix("r=")
        .unwrap();
    let short = format!("c=biws,r={nonce},p={}", STANDARD.encode([0u8; 32]));
    assert_eq!(
        server.step(short.as_bytes()),
        Err(SaslError::InvalidClientCredentials)
    );
}

#[test]
fn bad_gs2_headers_are_refused_at_the_first_message() {
    let users = users();
    for header in [
        "y,,",
        "p=tls-unique,,",
        "p=tls-server-end-point,,",
        "n,a=,",
        "",
        "n",
    ] {
        let mut client = Client::new(SHA256, "alice", "alice-secret");
        client.gs2_header = header.into();
        let mut server = ScramServer::new(SHA256, &users);
        let error = server.step(&client.first()).unwrap_err();
        assert!(
            matches!(error, SaslError::InvalidClientFirstMessage(_)),
            "{header}: {error:?}"
        );
        assert_eq!(error.error_code(), 58);
        assert!(error
            .client_message("SCRAM-SHA-256", false)
            .starts_with("Authentication failed during authentication"));
    }
}

#[test]
fn an_authorization_id_equal_to_the_username_is_accepted() {
    let users = users();
    let mut client = Client::new(SHA256, "alice", "alice-secret");
    client.gs2_header = "n,a=alice,".into();
    let (_, authenticated) = complete(exchange(&mut ScramServer::new(SHA256, &users), &client));
    assert_eq!(authenticated.authorization_id, "alice");
}

#[test]
fn a_different_authorization_id_is_refused_with_kafkas_verbatim_text_known_user_or_not() {
    let users = users();
    for username in ["alice", "mallory"] {
        let mut client = Client::new(SHA256, username, "alice-secret");
        client.gs2_header = "n,a=admin,".into();
        let error = ScramServer::new(SHA256, &users)
            .step(&client.first())
            .unwrap_err();
        assert_eq!(error, SaslError::AuthorizationIdMismatch);
        assert_eq!(
            error.client_message("SCRAM-SHA-256", false),
            "Authentication failed: Client requested an authorization id that is different from username"
        );
    }
}

#[test]
fn a_stored_credential_with_too_few_iterations_is_refused() {
    let mut users = ScramCredentials::new();
    users.insert(
        SHA256,
        "old",
        ScramCredential::from_password(SHA256, "pw", b"salt", 4095),
    );
    let client = Client::new(SHA256, "old", "pw");
    let error = ScramServer::new(SHA256, &users)
        .step(&client.first())
        .unwrap_err();
    assert_eq!(
        error,
        SaslError::TooFewIterations {
            mechanism: SHA256,
            iterations: 4095,
            minimum: 4096
        }
    );
    assert_eq!(
        error.to_string(),
        "Iterations 4095 is less than the minimum 4096 for SCRAM-SHA-256"
    );
    assert!(error
        .client_message("SCRAM-SHA-256", false)
        .starts_with("Authentication failed during"));
}

#[test]
fn the_minimum_and_maximum_iterations_authenticate() {
    for iterations in [4096, 16384] {
        let mut users = ScramCredentials::new();
        users.insert(
            SHA256,
            "u",
            ScramCredential::from_password(SHA256, "pw", b"salt", iterations),
        );
        complete(exchange(
            &mut ScramServer::new(SHA256, &users),
            &Client::new(SHA256, "u", "pw"),
        ));
    }
}

#[test]
fn unknown_extensions_are_ignored_but_signed() {
    let users = users();
    let mut client = Client::new(SHA256, "alice", "alice-secret");
    client.extensions = ",foo=bar=baz,tokenauth=false".into();
    let (_, authenticated) = complete(exchange(&mut ScramServer::new(SHA256, &users), &client));
    assert!(!authenticated.token_authenticated);
}

#[test]
fn a_malformed_final_message_fails_the_exchange() {
    let users = users();
    let client = Client::new(SHA256, "alice", "alice-secret");
    let mut server = ScramServer::new(SHA256, &users);
    challenge(server.step(&client.first()));
    let error = server.step(b"c=biws,p=AAAA").unwrap_err();
    assert!(
        matches!(error, SaslError::InvalidClientFinalMessage(_)),
        "{error:?}"
    );
    assert_eq!(
        server.step(b"anything"),
        Err(SaslError::IllegalSaslState(
            "Unexpected challenge in Sasl server state FAILED".into()
        ))
    );
}

#[test]
fn a_token_after_completion_is_an_illegal_sasl_state() {
    let users = users();
    let mut server = ScramServer::new(SHA256, &users);
    complete(exchange(
        &mut server,
        &Client::new(SHA256, "alice", "alice-secret"),
    ));
    let error = server.step(b"n,,n=alice,r=abc").unwrap_err();
    assert_eq!(
        error,
        SaslError::IllegalSaslState("Unexpected challenge in Sasl server state COMPLETE".into())
    );
    assert_eq!(error.error_code(), 34);
}

/// Users and one delegation token, whose HMAC is its password.
struct WithTokens {
    users: ScramCredentials,
}

impl ScramCredentialLookup for WithTokens {
    fn scram_credential(
        &self,
        mechanism: ScramMechanism,
        username: &str,
    ) -> Option<ScramCredential> {
        self.users.scram_credential(mechanism, username)
    }

    fn delegation_token(
        &self,
        mechanism: ScramMechanism,
        token_id: &str,
    ) -> Option<DelegationTokenCredential> {
        (token_id == "token-1").then(|| DelegationTokenCredential {
            owner: "alice".into(),
            credential: ScramCredential::from_password(mechanism, "token-hmac", b"tsalt", 4096),
            expiry_timestamp_ms: 1_700_000_000_000,
        })
    }
}

#[test]
fn tokenauth_authenticates_as_the_tokens_owner_with_its_expiry() {
    let lookup = WithTokens { users: users() };
    let mut client = Client::new(SHA512, "token-1", "token-hmac");
    client.extensions = ",tokenauth=true".into();
    let (_, authenticated) = complete(exchange(&mut ScramServer::new(SHA512, &lookup), &client));
    assert_eq!(
        authenticated,
        Authenticated {
            authorization_id: "alice".into(),
            token_authenticated: true,
            token_expiry_timestamp_ms: Some(1_700_000_000_000),
        }
    );
}

#[test]
fn an_unknown_token_fails_at_the_proof_like_an_unknown_user() {
    let lookup = WithTokens { users: users() };
    let mut client = Client::new(SHA512, "token-2", "token-hmac");
    client.extensions = ",tokenauth=true".into();
    assert_eq!(
        exchange(&mut ScramServer::new(SHA512, &lookup), &client),
        Err(SaslError::InvalidClientCredentials)
    );
    // A user's password is no good for a token of the same name, nor the reverse.
    let mut as_token = Client::new(SHA512, "alice", "alice-secret");
    as_token.extensions = ",tokenauth=true".into();
    assert_eq!(
        exchange(&mut ScramServer::new(SHA512, &lookup), &as_token),
        Err(SaslError::InvalidClientCredentials)
    );
    assert_eq!(
        exchange(
            &mut ScramServer::new(SHA512, &lookup),
            &Client::new(SHA512, "token-1", "token-hmac")
        ),
        Err(SaslError::InvalidClientCredentials)
    );
}
