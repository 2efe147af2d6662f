//! The client side of one SCRAM exchange, sans IO: tokens in, tokens out.

use std::fmt;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use subtle::ConstantTimeEq;

use super::credential::{client_key, salted_password};
use super::crypto::{hash, hmac, xor};
use super::messages::{escape_sasl_name, ServerFinal, ServerFirst};
use crate::client::{ClientStep, SaslClientError};
use crate::error::escaped;
use crate::random::secure_random_string;
use crate::ScramMechanism;

/// One SCRAM-SHA-256 or SCRAM-SHA-512 exchange (RFC 5802, RFC 7677) on the client side, as
/// Kafka's `ScramSaslClient` runs it: [`ScramClient::first_message`] gives the client-first
/// message; [`ScramClient::step`] takes the server-first message and gives the client-final
/// one, then takes the server-final message and checks the server's signature, which proves
/// the server knows the credential (a server that does not is refused even when it says
/// the client authenticated).
///
/// Like Kafka's client: the gs2 header is `n,,` (no channel binding, no authorization id),
/// the password is used as UTF-8 without SASLprep, a server nonce that does not extend the
/// client's is refused, and so is an iteration count below the mechanism's minimum (4096),
/// which would make a stolen exchange cheap to brute-force.
pub struct ScramClient {
    mechanism: ScramMechanism,
    /// The user name as RFC 5802 writes it (`=2C`, `=3D`).
    sasl_name: String,
    password: String,
    nonce: String,
    /// `,name=value` parts after the nonce (`tokenauth=true` for a delegation token).
    extensions: String,
    state: State,
}

enum State {
    SendClientFirst,
    ReceiveServerFirst,
    ReceiveServerFinal { server_signature: Vec<u8> },
    Complete,
    Failed,
}

impl State {
    /// Kafka's name for the state, for the error of a token that comes at the wrong time.
    fn name(&self) -> &'static str {
        match self {
            State::SendClientFirst => "SEND_CLIENT_FIRST_MESSAGE",
            State::ReceiveServerFirst => "RECEIVE_SERVER_FIRST_MESSAGE",
            State::ReceiveServerFinal { .. } => "RECEIVE_SERVER_FINAL_MESSAGE",
            State::Complete => "COMPLETE",
            State::Failed => "FAILED",
        }
    }
}

/// The password stays out of logs.
impl fmt::Debug for ScramClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScramClient")
            .field("mechanism", &self.mechanism)
            .field("sasl_name", &self.sasl_name)
            .field("state", &self.state.name())
            .finish_non_exhaustive()
    }
}

impl ScramClient {
    /// An exchange for `username` with a fresh nonce (Kafka's: 130 random bits in base 36).
    pub fn new(mechanism: ScramMechanism, username: &str, password: &str) -> ScramClient {
        ScramClient {
            mechanism,
            sasl_name: escape_sasl_name(username),
            password: password.to_string(),
            nonce: secure_random_string(),
            extensions: String::new(),
            state: State::SendClientFirst,
        }
    }

    /// Authenticates with a delegation token (`username` is the token id, `password` its
    /// HMAC): the `tokenauth=true` extension, as Kafka's `ScramLoginModule` sends it for
    /// `tokenauth="true"`.
    pub fn with_token_authentication(mut self) -> ScramClient {
        self.extensions = ",tokenauth=true".to_string();
        self
    }

    /// Fixes the client nonce, for test vectors. The nonce must be printable ASCII without
    /// `,`; anything else is replaced by a fresh one.
    pub fn with_nonce(mut self, nonce: &str) -> ScramClient {
        let printable = |c: char| ('\x21'..='\x7e').contains(&c) && c != ',';
        if !nonce.is_empty() && nonce.chars().all(printable) {
            self.nonce = nonce.to_string();
        }
        self
    }

    pub fn mechanism(&self) -> ScramMechanism {
        self.mechanism
    }

    pub fn is_complete(&self) -> bool {
        matches!(self.state, State::Complete)
    }

    /// The client-first message, `n,,n=<name>,r=<nonce>[,extensions]`. Only the first call
    /// starts the exchange; a later one is [`SaslClientError::IllegalState`].
    pub fn first_message(&mut self) -> Result<Vec<u8>, SaslClientError> {
        match self.state {
            State::SendClientFirst => {
                self.state = State::ReceiveServerFirst;
                Ok(format!("n,,{}", self.first_bare()).into_bytes())
            }
            ref other => Err(SaslClientError::IllegalState(other.name())),
        }
    }

    /// Takes the server's next token: the server-first message gives
    /// [`ClientStep::Respond`] with the client-final message, the server-final message gives
    /// [`ClientStep::Complete`] once its signature verifies. Any error leaves the exchange
    /// failed.
    pub fn step(&mut self, server_token: &[u8]) -> Result<ClientStep, SaslClientError> {
        let state = std::mem::replace(&mut self.state, State::Failed);
        match state {
            State::ReceiveServerFirst => {
                let (client_final, server_signature) = self.client_final(server_token)?;
                self.state = State::ReceiveServerFinal { server_signature };
                Ok(ClientStep::Respond(client_final))
            }
            State::ReceiveServerFinal { server_signature } => {
                self.verify_server_final(server_token, &server_signature)?;
                self.state = State::Complete;
                Ok(ClientStep::Complete)
            }
            other => {
                let name = other.name();
                self.state = other;
                Err(SaslClientError::IllegalState(name))
            }
        }
    }

    fn first_bare(&self) -> String {
        format!("n={},r={}{}", self.sasl_name, self.nonce, self.extensions)
    }

    /// The client-final message and the server signature to expect.
    fn client_final(&self, server_token: &[u8]) -> Result<(Vec<u8>, Vec<u8>), SaslClientError> {
        let server_first = ServerFirst::parse(server_token)
            .map_err(|_| SaslClientError::InvalidServerFirstMessage(escaped(server_token)))?;
        if !server_first.nonce.starts_with(&self.nonce) {
            return Err(SaslClientError::InvalidServerNonce);
        }
        let minimum = self.mechanism.min_iterations();
        if server_first.iterations < minimum {
            return Err(SaslClientError::TooFewIterations {
                mechanism: self.mechanism,
                iterations: server_first.iterations,
                minimum,
            });
        }
        let mechanism = self.mechanism;
        let salted = salted_password(
            mechanism,
            &self.password,
            &server_first.salt,
            server_first.iterations,
        );
        let client_key = client_key(mechanism, &salted);
        let stored_key = hash(mechanism, &client_key);
        // c= is the gs2 header "n,," in base64: no channel binding.
        let without_proof = format!("c={},r={}", STANDARD.encode("n,,"), server_first.nonce);
        // Signed as Kafka's client signs it: the server-first message rebuilt from its nonce,
        // salt and count (what every server sends; an `m=` part or extensions are dropped).
        let server_first_text = format!(
            "r={},s={},i={}",
            server_first.nonce,
            STANDARD.encode(&server_first.salt),
            server_first.iterations
        );
        let auth_message = format!("{},{server_first_text},{without_proof}", self.first_bare());
        let client_signature = hmac(mechanism, &stored_key, auth_message.as_bytes());
        let proof = xor(&client_key, &client_signature);
        let server_key = hmac(mechanism, &salted, b"Server Key");
        let server_signature = hmac(mechanism, &server_key, auth_message.as_bytes());
        let message = format!("{without_proof},p={}", STANDARD.encode(proof));
        Ok((message.into_bytes(), server_signature))
    }

    fn verify_server_final(
        &self,
        server_token: &[u8],
        expected: &[u8],
    ) -> Result<(), SaslClientError> {
        match ServerFinal::parse(server_token) {
            Err(_) => Err(SaslClientError::InvalidServerFinalMessage(escaped(
                server_token,
            ))),
            Ok(ServerFinal::Error(error)) => Err(SaslClientError::ServerError {
                mechanism: self.mechanism.mechanism_name(),
                error,
            }),
            Ok(ServerFinal::Verifier(signature)) => {
                if bool::from(signature.as_slice().ct_eq(expected)) {
                    Ok(())
                } else {
                    Err(SaslClientError::InvalidServerSignature)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ScramCredential, ScramCredentials, ScramServer, Step};

    const RFC_CLIENT_NONCE: &str = "rOprNGfwEbeRWgbNEkqO";
    const RFC_SERVER_FIRST: &[u8] =
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";

    fn respond(step: Result<ClientStep, SaslClientError>) -> Vec<u8> {
        match step {
            Ok(ClientStep::Respond(token)) => token,
            other => panic!("expected a response, got {other:?}"),
        }
    }

    #[test]
    fn the_rfc_7677_exchange_gives_the_rfc_client_messages_and_verifies_the_server() {
        let mut client = ScramClient::new(ScramMechanism::ScramSha256, "user", "pencil")
            .with_nonce(RFC_CLIENT_NONCE);
        assert_eq!(
            client.first_message().unwrap(),
            b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
        );
        let client_final = respond(client.step(RFC_SERVER_FIRST));
        assert_eq!(
            String::from_utf8(client_final).unwrap(),
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        assert!(!client.is_complete());
        assert_eq!(
            client.step(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="),
            Ok(ClientStep::Complete)
        );
        assert!(client.is_complete());
        assert_eq!(
            client.step(b"v=x"),
            Err(SaslClientError::IllegalState("COMPLETE"))
        );
    }

    #[test]
    fn a_wrong_server_signature_is_refused() {
        let mut client = ScramClient::new(ScramMechanism::ScramSha256, "user", "pencil")
            .with_nonce(RFC_CLIENT_NONCE);
        client.first_message().unwrap();
        respond(client.step(RFC_SERVER_FIRST));
        // The RFC's signature with one bit of its first byte flipped.
        assert_eq!(
            client.step(b"v=7rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="),
            Err(SaslClientError::InvalidServerSignature)
        );
        assert!(!client.is_complete());
    }

    #[test]
    fn a_server_nonce_that_does_not_extend_the_clients_is_refused() {
        let mut client =
            ScramClient::new(ScramMechanism::ScramSha256, "user", "pencil").with_nonce("abc");
        client.first_message().unwrap();
        assert_eq!(
            client.step(b"r=xyzabc,s=c2FsdA==,i=4096"),
            Err(SaslClientError::InvalidServerNonce)
        );
    }

    #[test]
    fn fewer_iterations_than_the_minimum_are_refused_before_any_proof_is_sent() {
        for mechanism in ScramMechanism::ALL {
            let mut client = ScramClient::new(mechanism, "user", "pw").with_nonce("abc");
            client.first_message().unwrap();
            let error = client.step(b"r=abcdef,s=c2FsdA==,i=4095").unwrap_err();
            assert_eq!(
                error.to_string(),
                format!("Requested iterations 4095 is less than the minimum 4096 for {mechanism}")
            );
        }
    }

    #[test]
    fn malformed_server_messages_and_server_errors_are_errors() {
        for bad in [
            &b""[..],
            b"r=abc",
            b"r=abc,s=c2FsdA==",
            b"r=abc,s=c2FsdA==,i=0",
            b"r=abc,s=c2FsdA==,i=-1",
            b"r=abc,s=c2FsdA==,i=99999999999",
            b"r=abc,s=c2Fsd,i=4096",
            b"r=abc,s=c2FsdA==,i=4096,",
            b"s=c2FsdA==,r=abc,i=4096",
            b"r=ab c,s=c2FsdA==,i=4096",
            b"r=abc,s=c2FsdA==,i=4096\xff",
        ] {
            let mut client =
                ScramClient::new(ScramMechanism::ScramSha512, "u", "p").with_nonce("abc");
            client.first_message().unwrap();
            assert!(
                matches!(
                    client.step(bad),
                    Err(SaslClientError::InvalidServerFirstMessage(_))
                ),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        let mut client = ScramClient::new(ScramMechanism::ScramSha512, "u", "p").with_nonce("abc");
        client.first_message().unwrap();
        respond(client.step(b"m=x,r=abcdef,s=c2FsdA==,i=4096,ext=1"));
        assert_eq!(
            client.step(b"e=invalid-proof").unwrap_err().to_string(),
            "Sasl authentication using SCRAM-SHA-512 failed with error: invalid-proof"
        );
        let mut client = ScramClient::new(ScramMechanism::ScramSha512, "u", "p").with_nonce("abc");
        client.first_message().unwrap();
        respond(client.step(b"r=abcdef,s=c2FsdA==,i=4096"));
        assert!(matches!(
            client.step(b"x=1"),
            Err(SaslClientError::InvalidServerFinalMessage(_))
        ));
    }

    #[test]
    fn tokens_out_of_order_are_state_errors() {
        let mut client = ScramClient::new(ScramMechanism::ScramSha256, "u", "p");
        assert_eq!(
            client.step(RFC_SERVER_FIRST),
            Err(SaslClientError::IllegalState("SEND_CLIENT_FIRST_MESSAGE"))
        );
        client.first_message().unwrap();
        assert_eq!(
            client.first_message(),
            Err(SaslClientError::IllegalState(
                "RECEIVE_SERVER_FIRST_MESSAGE"
            ))
        );
    }

    #[test]
    fn names_are_escaped_and_token_authentication_sends_the_extension() {
        let mut client = ScramClient::new(ScramMechanism::ScramSha256, "a,b=c", "p")
            .with_nonce("n0")
            .with_token_authentication();
        assert_eq!(
            client.first_message().unwrap(),
            b"n,,n=a=2Cb=3Dc,r=n0,tokenauth=true"
        );
    }

    #[test]
    fn exchanges_with_the_crates_server_authenticate_both_ways() {
        for mechanism in ScramMechanism::ALL {
            let mut users = ScramCredentials::new();
            users.insert(
                mechanism,
                "bob,=x",
                ScramCredential::generate(mechanism, "b\u{f6}b", 8192),
            );
            let mut server = ScramServer::new(mechanism, &users);
            let mut client = ScramClient::new(mechanism, "bob,=x", "b\u{f6}b");
            let Ok(Step::Challenge(server_first)) = server.step(&client.first_message().unwrap())
            else {
                panic!("expected the server-first message")
            };
            let client_final = respond(client.step(&server_first));
            let Ok(Step::Complete {
                token,
                authenticated,
            }) = server.step(&client_final)
            else {
                panic!("expected the server to complete")
            };
            assert_eq!(authenticated.authorization_id, "bob,=x");
            assert_eq!(client.step(&token), Ok(ClientStep::Complete));
        }
    }

    #[test]
    fn debug_output_hides_the_password() {
        let client = ScramClient::new(ScramMechanism::ScramSha256, "u", "hunter2");
        let shown = format!("{client:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
    }
}
