//! SASL as Apache Kafka 4.4 implements it, sans IO: bytes of a peer's token in, the reply
//! token or an error out. The caller (the connection) carries tokens in SaslAuthenticate
//! requests or raw frames, turns errors into responses and closes.
//!
//! The server side:
//!
//! * [`PlainServer`] with [`PlainUsers`]: PLAIN (RFC 4616), users from a JAAS config's
//!   `user_<name>` options, passwords compared in constant time.
//! * [`ScramServer`]: SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), credentials through
//!   a [`ScramCredentialLookup`]; [`ScramCredential`] derives them from a password (as
//!   `kafka-configs` does) or from a salted password (as AlterUserScramCredentials carries).
//! * [`SaslServer`]: either, as the SaslHandshake's [`SaslMechanism`] chose.
//! * [`RelayedExchange`]: an exchange another server checks (the tokens relayed to it), followed
//!   to learn when it completes and who the client is.
//! * [`JaasConfig`]: Kafka's `sasl.jaas.config` syntax.
//! * [`SaslError`]: each failure with Kafka's error code and the text Kafka lets the client
//!   see.
//!
//! The client side, as Kafka's `PlainSaslClient` and `ScramSaslClient`:
//!
//! * [`PlainClient`], [`ScramClient`] (which verifies the server's signature), and
//!   [`SaslClient`] for either; [`SaslClientError`] with Kafka's texts.
//!
//! Where kcoord differs from Kafka on purpose: an unknown SCRAM user is not refused at the
//! first message but carried to the proof with a decoy credential, so that it fails exactly as
//! a wrong password does (see [`ScramServer`]).

mod client;
mod error;
mod jaas;
mod mechanism;
mod plain;
mod random;
mod relay;
mod scram;
mod server;

pub use client::{ClientStep, PlainClient, SaslClient, SaslClientError};
pub use error::{
    SaslError, ILLEGAL_SASL_STATE, SASL_AUTHENTICATION_FAILED, UNSUPPORTED_SASL_MECHANISM,
};
pub use jaas::{
    ControlFlag, JaasConfig, JaasConfigError, LoginModuleEntry, PLAIN_LOGIN_MODULE,
    SCRAM_LOGIN_MODULE,
};
pub use mechanism::{SaslMechanism, ScramMechanism};
pub use plain::{PlainAuthenticator, PlainServer, PlainUsers};
pub use random::secure_random_string;
pub use relay::RelayedExchange;
pub use scram::{
    salted_password, DelegationTokenCredential, ScramClient, ScramCredential,
    ScramCredentialLookup, ScramCredentials, ScramServer,
};
pub use server::SaslServer;

/// What a successful step gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Send this token to the client and wait for its next one.
    Challenge(Vec<u8>),
    /// The client is authenticated; send this final token (empty for PLAIN, which Kafka still
    /// sends: an empty SaslAuthenticate AuthBytes, or a zero-length frame after handshake v0).
    Complete {
        token: Vec<u8>,
        authenticated: Authenticated,
    },
}

/// Who the client proved to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticated {
    /// The principal's name: the connection is `User:<authorization_id>`.
    pub authorization_id: String,
    /// Whether a SCRAM delegation token (`tokenauth=true`) was used; the authorization id is
    /// then the token's owner.
    pub token_authenticated: bool,
    /// The token's expiry, which bounds SessionLifetimeMs.
    pub token_expiry_timestamp_ms: Option<i64>,
}
