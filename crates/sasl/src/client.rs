//! The client side of SASL, sans IO: what Kafka's `PlainSaslClient` and `ScramSaslClient`
//! send, for a client that carries the tokens in SaslAuthenticate requests.

use std::fmt;

use crate::{SaslMechanism, ScramClient, ScramMechanism};

/// What the client does after a server token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientStep {
    /// Send this token and wait for the server's next one.
    Respond(Vec<u8>),
    /// The exchange is over on the client's side: the server has proved itself (SCRAM) or
    /// accepted the credentials (PLAIN).
    Complete,
}

/// Why the client gave up an exchange. The texts are those of Kafka's `SaslException`s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SaslClientError {
    /// Holds the message, escaped for one log line.
    #[error("Invalid SCRAM server first message format: {0}")]
    InvalidServerFirstMessage(String),
    #[error("Invalid server nonce: does not start with client nonce")]
    InvalidServerNonce,
    #[error(
        "Requested iterations {iterations} is less than the minimum {minimum} for {mechanism}"
    )]
    TooFewIterations {
        mechanism: ScramMechanism,
        iterations: u32,
        minimum: u32,
    },
    /// Holds the message, escaped.
    #[error("Invalid SCRAM server final message format: {0}")]
    InvalidServerFinalMessage(String),
    /// The server-final message was `e=<error>`.
    #[error("Sasl authentication using {mechanism} failed with error: {error}")]
    ServerError {
        mechanism: &'static str,
        error: String,
    },
    /// The server's signature does not match: it does not hold the credential, so it is not
    /// the server the credential was made for.
    #[error("Invalid server signature in server final message")]
    InvalidServerSignature,
    /// A token (or a first message) at the wrong time; holds Kafka's name of the state.
    #[error("Unexpected challenge in Sasl client state {0}")]
    IllegalState(&'static str),
}

/// SASL PLAIN (RFC 4616) as Kafka's `PlainSaslClient`: one message, `\0<user>\0<password>`
/// (no authorization id), after which the exchange is complete whatever the server answers
/// (a failure comes back as the SaslAuthenticate error, not as a token).
pub struct PlainClient {
    username: String,
    password: String,
    sent: bool,
}

impl fmt::Debug for PlainClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PlainClient")
            .field("username", &self.username)
            .field("sent", &self.sent)
            .finish_non_exhaustive()
    }
}

impl PlainClient {
    pub fn new(username: &str, password: &str) -> PlainClient {
        PlainClient {
            username: username.to_string(),
            password: password.to_string(),
            sent: false,
        }
    }

    /// The one message; a second call is [`SaslClientError::IllegalState`].
    pub fn first_message(&mut self) -> Result<Vec<u8>, SaslClientError> {
        if self.sent {
            return Err(SaslClientError::IllegalState("COMPLETE"));
        }
        self.sent = true;
        let mut message = Vec::with_capacity(self.username.len() + self.password.len() + 2);
        message.push(0);
        message.extend_from_slice(self.username.as_bytes());
        message.push(0);
        message.extend_from_slice(self.password.as_bytes());
        Ok(message)
    }

    /// The server's answer to the message (empty from Kafka's server): complete.
    pub fn step(&mut self, _server_token: &[u8]) -> Result<ClientStep, SaslClientError> {
        if self.sent {
            Ok(ClientStep::Complete)
        } else {
            Err(SaslClientError::IllegalState("INITIAL"))
        }
    }

    pub fn is_complete(&self) -> bool {
        self.sent
    }
}

/// The client side of one exchange, PLAIN or SCRAM: [`SaslClient::first_message`] gives the
/// token of the first SaslAuthenticate, then [`SaslClient::step`] takes each server token
/// until it says [`ClientStep::Complete`].
#[derive(Debug)]
pub enum SaslClient {
    Plain(PlainClient),
    Scram(ScramClient),
}

impl SaslClient {
    /// The exchange for `mechanism` with a user name and password.
    pub fn new(mechanism: SaslMechanism, username: &str, password: &str) -> SaslClient {
        match mechanism {
            SaslMechanism::Plain => SaslClient::Plain(PlainClient::new(username, password)),
            SaslMechanism::Scram(scram) => {
                SaslClient::Scram(ScramClient::new(scram, username, password))
            }
        }
    }

    pub fn mechanism(&self) -> SaslMechanism {
        match self {
            SaslClient::Plain(_) => SaslMechanism::Plain,
            SaslClient::Scram(client) => SaslMechanism::Scram(client.mechanism()),
        }
    }

    pub fn first_message(&mut self) -> Result<Vec<u8>, SaslClientError> {
        match self {
            SaslClient::Plain(client) => client.first_message(),
            SaslClient::Scram(client) => client.first_message(),
        }
    }

    pub fn step(&mut self, server_token: &[u8]) -> Result<ClientStep, SaslClientError> {
        match self {
            SaslClient::Plain(client) => client.step(server_token),
            SaslClient::Scram(client) => client.step(server_token),
        }
    }

    pub fn is_complete(&self) -> bool {
        match self {
            SaslClient::Plain(client) => client.is_complete(),
            SaslClient::Scram(client) => client.is_complete(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PlainServer, PlainUsers, SaslError, Step};

    #[test]
    fn plain_sends_one_message_the_server_accepts() {
        let mut users = PlainUsers::new();
        users.insert("alice", "alice-secret");
        let mut client = SaslClient::new(SaslMechanism::Plain, "alice", "alice-secret");
        let message = client.first_message().unwrap();
        assert_eq!(message, b"\0alice\0alice-secret");
        let mut server = PlainServer::new(&users);
        let Ok(Step::Complete {
            token,
            authenticated,
        }) = server.step(&message)
        else {
            panic!("the server refused the client's message")
        };
        assert_eq!(authenticated.authorization_id, "alice");
        assert_eq!(client.step(&token), Ok(ClientStep::Complete));
        assert!(client.is_complete());
        assert_eq!(
            client.first_message(),
            Err(SaslClientError::IllegalState("COMPLETE"))
        );
    }

    #[test]
    fn a_wrong_plain_password_is_refused_by_the_server() {
        let mut users = PlainUsers::new();
        users.insert("alice", "alice-secret");
        let mut client = PlainClient::new("alice", "nope");
        assert_eq!(
            PlainServer::new(&users).step(&client.first_message().unwrap()),
            Err(SaslError::InvalidUsernameOrPassword)
        );
    }

    #[test]
    fn the_mechanism_picks_the_exchange_and_debug_hides_passwords() {
        let sha512 = SaslMechanism::Scram(ScramMechanism::ScramSha512);
        let mut scram = SaslClient::new(sha512, "bob", "hunter2");
        assert_eq!(scram.mechanism(), sha512);
        assert!(scram.first_message().unwrap().starts_with(b"n,,n=bob,r="));
        let plain = SaslClient::new(SaslMechanism::Plain, "bob", "hunter2");
        for shown in [format!("{scram:?}"), format!("{plain:?}")] {
            assert!(!shown.contains("hunter2"), "{shown}");
        }
    }
}
