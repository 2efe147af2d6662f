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
    let addr = conn.addr();
    let mechanism = credentials.mechanism;
    let failed = |message: String| ClientError::Authentication {
        addr: addr.to_string(),
        mechanism: mechanism.name(),
        message,
    };
    let versions = match conn.server_versions() {
        Some(versions) => versions,
        None => conn.negotiate().await?,
    };
    let handshake_version = versions
        .common_version(SaslHandshakeRequest::KEY, SaslHandshakeRequest::VERSIONS)
        .filter(|v| *v >= HANDSHAKE_WITH_AUTHENTICATE)
        .ok_or_else(|| {
            failed(format!(
                "the server offers no SaslHandshake v{HANDSHAKE_WITH_AUTHENTICATE}+ (it advertises {}): it is not a SASL listener of a current Kafka",
                versions
                    .range(SaslHandshakeRequest::KEY)
                    .map_or_else(|| "none".to_string(), |r| r.to_string())
            ))
        })?;
    let authenticate_version = conn.negotiated_version::<SaslAuthenticateRequest>().await?;

    let handshake = conn
        .send(
            SaslHandshakeRequest {
                mechanism: mechanism.name().to_string(),
                ..Default::default()
            },
            handshake_version,
        )
        .await?;
    match ErrorCode::from_code(handshake.error_code) {
        Some(ErrorCode::NONE) => {}
        Some(ErrorCode::UNSUPPORTED_SASL_MECHANISM) => {
            // Kafka's client text for this (SaslClientAuthenticator).
            return Err(failed(format!(
                "Client SASL mechanism '{}' not enabled in the server, enabled mechanisms are [{}]",
                mechanism.name(),
                handshake.mechanisms.join(", ")
            )));
        }
        _ => {
            return Err(failed(format!(
                "SaslHandshake failed: {}",
                code_text(handshake.error_code, None)
            )))
        }
    }

    let mut client = new_client(credentials);
    let mut token = client.first_message().map_err(|e| failed(e.to_string()))?;
    loop {
        let response = conn
            .send(
                SaslAuthenticateRequest {
                    auth_bytes: token.into(),
                    ..Default::default()
                },
                authenticate_version,
            )
            .await?;
        if response.error_code != ErrorCode::NONE.code() {
            return Err(failed(code_text(
                response.error_code,
                response.error_message.as_deref(),
            )));
        }
        match client
            .step(&response.auth_bytes)
            .map_err(|e| failed(e.to_string()))?
        {
            ClientStep::Respond(next) => token = next,
            ClientStep::Complete => {
                // Re-authentication (KIP-368) is not done: a server with a session lifetime
                // closes the connection when it ends, and the client opens a new one.
                debug!(addr, mechanism = %mechanism, session_lifetime_ms = response.session_lifetime_ms, "authenticated");
                return Ok(());
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
