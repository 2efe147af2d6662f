//! The server side of one SCRAM exchange, sans IO: tokens in, tokens out.

use subtle::{Choice, ConstantTimeEq};

use super::crypto::{hash, hmac, xor};
use super::lookup::{decoy_credential, ScramCredentialLookup};
use super::messages::{server_final, server_first, ClientFinal, ClientFirst};
use super::ScramCredential;
use crate::random::secure_random_string;
use crate::{Authenticated, SaslError, ScramMechanism, Step};

/// One SCRAM-SHA-256 or SCRAM-SHA-512 exchange (RFC 5802, RFC 7677) on the server side, as
/// Kafka's `ScramSaslServer` runs it: client-first in, server-first out, client-final in,
/// server-final out. Feed it each token the client sends with [`ScramServer::step`]; the
/// first error ends the exchange.
///
/// # Unknown users: where this differs from Kafka
///
/// Kafka fails an unknown user at the client-first message, and a wrong password only at the
/// proof, one round trip later, so a prober learns which user names exist from *when* the
/// failure comes (the text is the same). kcoord is required to give no such difference: for
/// an unknown user (or unknown delegation token) the exchange goes on with a decoy credential
/// (its salt derived from the name with an HMAC keyed by a per-process secret, so a repeated
/// probe sees the same salt; [`ScramServer::with_unknown_user_iterations`] iterations) and
/// fails at the proof with [`SaslError::InvalidClientCredentials`], the very error a wrong
/// password gets, after the same computations.
///
/// A stored credential with fewer iterations than the mechanism's minimum fails at the first
/// message, as in Kafka; such a credential cannot be stored through AlterUserScramCredentials.
///
/// Other differences, on input no Kafka client sends: a proof of the wrong length fails as a
/// wrong proof (Kafka's server throws an unchecked exception and closes the connection without
/// a response); extensions are signed in the order sent (Kafka re-serialises them from a map).
pub struct ScramServer<L> {
    mechanism: ScramMechanism,
    lookup: L,
    unknown_user_iterations: u32,
    state: State,
    fixed_server_nonce: Option<String>,
}

enum State {
    ReceiveClientFirst,
    ReceiveClientFinal(Box<Exchange>),
    Complete,
    Failed,
}

/// What the server remembers between its two steps.
struct Exchange {
    client_first: ClientFirst,
    server_first: String,
    nonce: String,
    credential: ScramCredential,
    /// False for a decoy: no proof is accepted.
    genuine: bool,
    authenticated: Authenticated,
}

impl<L: ScramCredentialLookup> ScramServer<L> {
    /// A server that finds credentials through `lookup`; unknown users' decoys get the
    /// mechanism's minimum iterations (4096, what `kafka-configs` uses when none are given).
    pub fn new(mechanism: ScramMechanism, lookup: L) -> ScramServer<L> {
        ScramServer {
            mechanism,
            lookup,
            unknown_user_iterations: mechanism.min_iterations(),
            state: State::ReceiveClientFirst,
            fixed_server_nonce: None,
        }
    }

    /// The iterations an unknown user's decoy shows: set it to what the real credentials use
    /// so that the count tells nothing. Kept within the mechanism's bounds.
    pub fn with_unknown_user_iterations(mut self, iterations: u32) -> ScramServer<L> {
        self.unknown_user_iterations = iterations.clamp(
            self.mechanism.min_iterations(),
            self.mechanism.max_iterations(),
        );
        self
    }

    pub fn mechanism(&self) -> ScramMechanism {
        self.mechanism
    }

    pub fn is_complete(&self) -> bool {
        matches!(self.state, State::Complete)
    }

    /// Takes the client's next token. Any error leaves the exchange failed; a token after
    /// the exchange ended is [`SaslError::IllegalSaslState`].
    pub fn step(&mut self, client_token: &[u8]) -> Result<Step, SaslError> {
        let state = std::mem::replace(&mut self.state, State::Failed);
        match state {
            State::ReceiveClientFirst => {
                let exchange = self.receive_client_first(client_token)?;
                let reply = exchange.server_first.clone().into_bytes();
                self.state = State::ReceiveClientFinal(exchange);
                Ok(Step::Challenge(reply))
            }
            State::ReceiveClientFinal(exchange) => {
                let step = self.receive_client_final(*exchange, client_token)?;
                self.state = State::Complete;
                Ok(step)
            }
            State::Complete => Err(SaslError::unexpected_challenge("COMPLETE")),
            State::Failed => Err(SaslError::unexpected_challenge("FAILED")),
        }
    }

    fn receive_client_first(&self, token: &[u8]) -> Result<Box<Exchange>, SaslError> {
        let client_first = ClientFirst::parse(token)?;
        let server_nonce = self.server_nonce();
        // Computed for every user, so that known and unknown users cost the same.
        let decoy = decoy_credential(
            self.mechanism,
            &client_first.username,
            self.unknown_user_iterations,
        );
        let (credential, authenticated, genuine) = match self.find_credential(&client_first) {
            Some((credential, authenticated)) => (credential, authenticated, true),
            None => (decoy, self.user_principal(&client_first), false),
        };
        let authorization_id = &client_first.authorization_id;
        if !authorization_id.is_empty() && *authorization_id != client_first.username {
            return Err(SaslError::AuthorizationIdMismatch);
        }
        if genuine && credential.iterations < self.mechanism.min_iterations() {
            return Err(SaslError::TooFewIterations {
                mechanism: self.mechanism,
                iterations: credential.iterations,
                minimum: self.mechanism.min_iterations(),
            });
        }
        let nonce = format!("{}{server_nonce}", client_first.nonce);
        Ok(Box::new(Exchange {
            server_first: server_first(&nonce, &credential.salt, credential.iterations),
            nonce,
            client_first,
            credential,
            genuine,
            authenticated,
        }))
    }

    /// The credential and the identity it proves: a user's, or with `tokenauth=true` a
    /// delegation token's (the connection is then its owner's).
    fn find_credential(
        &self,
        client_first: &ClientFirst,
    ) -> Option<(ScramCredential, Authenticated)> {
        if !client_first.token_authentication() {
            let credential = self
                .lookup
                .scram_credential(self.mechanism, &client_first.username)?;
            return Some((credential, self.user_principal(client_first)));
        }
        let token = self
            .lookup
            .delegation_token(self.mechanism, &client_first.username)?;
        let authenticated = Authenticated {
            authorization_id: token.owner,
            token_authenticated: true,
            token_expiry_timestamp_ms: Some(token.expiry_timestamp_ms),
        };
        Some((token.credential, authenticated))
    }

    fn user_principal(&self, client_first: &ClientFirst) -> Authenticated {
        Authenticated {
            authorization_id: client_first.username.clone(),
            token_authenticated: false,
            token_expiry_timestamp_ms: None,
        }
    }

    fn server_nonce(&self) -> String {
        self.fixed_server_nonce
            .clone()
            .unwrap_or_else(secure_random_string)
    }

    fn receive_client_final(&self, exchange: Exchange, token: &[u8]) -> Result<Step, SaslError> {
        let client_final = ClientFinal::parse(token)?;
        if client_final.nonce != exchange.nonce {
            return Err(SaslError::InvalidClientNonce);
        }
        let auth_message = format!(
            "{},{},{}",
            exchange.client_first.bare(),
            exchange.server_first,
            client_final.without_proof()
        );
        self.verify_proof(&exchange, &client_final.proof, auth_message.as_bytes())?;
        let signature = hmac(
            self.mechanism,
            &exchange.credential.server_key,
            auth_message.as_bytes(),
        );
        Ok(Step::Complete {
            token: server_final(&signature).into_bytes(),
            authenticated: exchange.authenticated,
        })
    }

    /// ClientKey = ClientSignature XOR proof must hash to StoredKey (compared in constant
    /// time), and the credential must be a real one.
    fn verify_proof(
        &self,
        exchange: &Exchange,
        proof: &[u8],
        auth_message: &[u8],
    ) -> Result<(), SaslError> {
        let stored_key = &exchange.credential.stored_key;
        let client_signature = hmac(self.mechanism, stored_key, auth_message);
        if proof.len() != client_signature.len() {
            return Err(SaslError::InvalidClientCredentials);
        }
        let computed = hash(self.mechanism, &xor(&client_signature, proof));
        let valid =
            computed.as_slice().ct_eq(stored_key) & Choice::from(u8::from(exchange.genuine));
        if bool::from(valid) {
            Ok(())
        } else {
            Err(SaslError::InvalidClientCredentials)
        }
    }

    /// Fixes the server nonce, for test vectors.
    #[cfg(test)]
    pub(crate) fn with_server_nonce(mut self, nonce: &str) -> ScramServer<L> {
        self.fixed_server_nonce = Some(nonce.to_string());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scram::ScramCredentials;
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine;

    fn rfc7677_users() -> ScramCredentials {
        let salt = STANDARD.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let mut users = ScramCredentials::new();
        users.insert(
            ScramMechanism::ScramSha256,
            "user",
            ScramCredential::from_password(ScramMechanism::ScramSha256, "pencil", &salt, 4096),
        );
        users
    }

    #[test]
    fn the_rfc_7677_exchange_gives_the_rfc_messages() {
        let users = rfc7677_users();
        let mut server = ScramServer::new(ScramMechanism::ScramSha256, &users)
            .with_server_nonce("%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0");
        let Step::Challenge(server_first) =
            server.step(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO").unwrap()
        else {
            panic!("expected a challenge")
        };
        assert_eq!(
            String::from_utf8(server_first).unwrap(),
            "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
        );
        let client_final = b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
        let Step::Complete {
            token,
            authenticated,
        } = server.step(client_final).unwrap()
        else {
            panic!("expected completion")
        };
        assert_eq!(
            String::from_utf8(token).unwrap(),
            "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
        );
        assert_eq!(authenticated.authorization_id, "user");
        assert!(!authenticated.token_authenticated);
        assert!(server.is_complete());
    }

    #[test]
    fn a_sha512_exchange_gives_the_messages_kafkas_scram_formatter_computes() {
        // Client proof and server signature computed by Kafka 4.4's ScramFormatter for these
        // nonces, salt, iterations and password.
        let mechanism = ScramMechanism::ScramSha512;
        let mut users = ScramCredentials::new();
        let credential = ScramCredential::from_password(
            mechanism,
            "alice-secret",
            b"1omfro7zwmumr3umxudzyj6scf",
            8192,
        );
        users.insert(mechanism, "alice", credential);
        let mut server =
            ScramServer::new(mechanism, &users).with_server_nonce("3rfcNHYJY1ZVvWVs7j");
        let challenge = server
            .step(b"n,,n=alice,r=fyko+d2lbbFgONRv9qkxdawL")
            .unwrap();
        assert_eq!(
            challenge,
            Step::Challenge(
                b"r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=MW9tZnJvN3p3bXVtcjN1bXh1ZHp5ajZzY2Y=,i=8192".to_vec()
            )
        );
        let client_final = b"c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=7gIuEq/9rh881BYar0JZ1U5hwVG7BBNabdgmWsQqvDiKHiPkbMTzXYCNAqUPj7GDk468VnHMAQKCJe4hXMG7OQ==";
        let Step::Complete {
            token,
            authenticated,
        } = server.step(client_final).unwrap()
        else {
            panic!("expected completion")
        };
        assert_eq!(
            String::from_utf8(token).unwrap(),
            "v=8YrxOXOQlf0/yAdxjOmC1MyNkLmwj3uIs+E+FX12C050ghyVTJywM5+v3we5AeNPX6YPcYVUzNV583z2tvaAmg=="
        );
        assert_eq!(authenticated.authorization_id, "alice");
    }

    #[test]
    fn the_rfc_7677_exchange_with_one_flipped_proof_bit_fails_as_invalid_credentials() {
        let users = rfc7677_users();
        let mut server = ScramServer::new(ScramMechanism::ScramSha256, &users)
            .with_server_nonce("%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0");
        server.step(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO").unwrap();
        let client_final = b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVU=";
        assert_eq!(
            server.step(client_final),
            Err(SaslError::InvalidClientCredentials)
        );
        assert!(!server.is_complete());
        assert_eq!(
            server.step(b"n,,n=user,r=abc"),
            Err(SaslError::IllegalSaslState(
                "Unexpected challenge in Sasl server state FAILED".into()
            ))
        );
    }
}
