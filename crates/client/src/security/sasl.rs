//! Kafka's SASL exchange on a fresh connection, as its `SaslClientAuthenticator` runs it:
//! ApiVersions, SaslHandshake (v1: tokens then travel in SaslAuthenticate), then one
//! SaslAuthenticate per token until the mechanism completes.

use kcoord_sasl::{ClientStep, SaslClient, SaslMechanism};
use kcoord_wire::messages::{SaslAuthenticateRequest, SaslHandshakeRequest};
use kcoord_wire::{ErrorCode, Message, Request};
use tracing::debug;

use super::SaslCredentials;
use crate::connection::Connection;
use crate::error::ClientError;

/// The first SaslHandshake version after which tokens go in SaslAuthenticate requests (v0
/// sends them as raw frames, which this client does not speak).
const HANDSHAKE_WITH_AUTHENTICATE: i16 = 1;

/// Authenticates `conn` with `credentials`; on failure the connection is of no further use
/// (the server closes it).
pub(crate) async fn authenticate(
    conn: &Connection,
    credentials: &SaslCredentials,
) -> Result<(), ClientError> {
    let exchange = Exchange { conn, credentials };
    let handshake_version = exchange.handshake_version().await?;
    let authenticate_version = conn.negotiated_version::<SaslAuthenticateRequest>().await?;
    exchange.handshake(handshake_version).await?;
    exchange.authenticate(authenticate_version).await
}

/// One connection's SASL exchange.
struct Exchange<'a> {
    conn: &'a Connection,
    credentials: &'a SaslCredentials,
}

impl Exchange<'_> {
    fn failed(&self, message: String) -> ClientError {
        ClientError::Authentication {
            addr: self.conn.addr().to_string(),
            mechanism: self.credentials.mechanism.name(),
            message,
        }
    }

    /// The SaslHandshake version both sides know, one whose tokens go in SaslAuthenticate.
    async fn handshake_version(&self) -> Result<i16, ClientError> {
        let versions = match self.conn.server_versions() {
            Some(versions) => versions,
            None => self.conn.negotiate().await?,
        };
        versions
            .common_version(SaslHandshakeRequest::KEY, SaslHandshakeRequest::VERSIONS)
            .filter(|v| *v >= HANDSHAKE_WITH_AUTHENTICATE)
            .ok_or_else(|| {
                self.failed(format!(
                    "the server offers no SaslHandshake v{HANDSHAKE_WITH_AUTHENTICATE}+ (it advertises {}): it is not a SASL listener of a current Kafka",
                    versions
                        .range(SaslHandshakeRequest::KEY)
                        .map_or_else(|| "none".to_string(), |r| r.to_string())
                ))
            })
    }

    /// SaslHandshake: the server must have the mechanism enabled.
    async fn handshake(&self, version: i16) -> Result<(), ClientError> {
        let mechanism = self.credentials.mechanism;
        let handshake = self
            .conn
            .send(
                SaslHandshakeRequest {
                    mechanism: mechanism.name().to_string(),
                    ..Default::default()
                },
                version,
            )
            .await?;
        match ErrorCode::from_code(handshake.error_code) {
            Some(ErrorCode::NONE) => Ok(()),
            // Kafka's client text for this (SaslClientAuthenticator).
            Some(ErrorCode::UNSUPPORTED_SASL_MECHANISM) => Err(self.failed(format!(
                "Client SASL mechanism '{}' not enabled in the server, enabled mechanisms are [{}]",
                mechanism.name(),
                handshake.mechanisms.join(", ")
            ))),
            _ => Err(self.failed(format!(
                "SaslHandshake failed: {}",
                code_text(handshake.error_code, None)
            ))),
        }
    }

    /// One SaslAuthenticate per token until the mechanism completes.
    async fn authenticate(&self, version: i16) -> Result<(), ClientError> {
        let mut client = new_client(self.credentials);
        let mut token = client
            .first_message()
            .map_err(|e| self.failed(e.to_string()))?;
        loop {
            let response = self
                .conn
                .send(
                    SaslAuthenticateRequest {
                        auth_bytes: token.into(),
                        ..Default::default()
                    },
                    version,
                )
                .await?;
            if response.error_code != ErrorCode::NONE.code() {
                return Err(self.failed(code_text(
                    response.error_code,
                    response.error_message.as_deref(),
                )));
            }
            match client
                .step(&response.auth_bytes)
                .map_err(|e| self.failed(e.to_string()))?
            {
                ClientStep::Respond(next) => token = next,
                ClientStep::Complete => {
                    // Re-authentication (KIP-368) is not done: a server with a session lifetime
                    // closes the connection when it ends, and the client opens a new one.
                    let addr = self.conn.addr();
                    let mechanism = self.credentials.mechanism;
                    debug!(addr, mechanism = %mechanism, session_lifetime_ms = response.session_lifetime_ms, "authenticated");
                    return Ok(());
                }
            }
        }
    }
}

fn new_client(credentials: &SaslCredentials) -> SaslClient {
    let client = SaslClient::new(
        credentials.mechanism,
        &credentials.username,
        &credentials.password,
    );
    match (client, credentials.mechanism) {
        (SaslClient::Scram(scram), SaslMechanism::Scram(_)) if credentials.token_authentication => {
            SaslClient::Scram(scram.with_token_authentication())
        }
        (client, _) => client,
    }
}

/// `NAME: message`, the server's message or Kafka's default text for the code.
fn code_text(code: i16, message: Option<&str>) -> String {
    let known = ErrorCode::from_code(code);
    let name = known.map_or("UNKNOWN_ERROR_CODE", ErrorCode::name);
    let message = match message {
        Some(m) if !m.is_empty() => m,
        _ => known.map_or("", ErrorCode::message),
    };
    format!("{name}: {message}")
}
