//! SASL authentication of one connection on a SASL_PLAINTEXT or SASL_SSL listener, as Kafka's
//! `SaslServerAuthenticator` runs it (docs/kafka-security-facts.md §3):
//!
//! 1. Until the connection is authenticated, only ApiVersions (once), SaslHandshake and then
//!    SaslAuthenticate are served; any other request closes the connection at once, without a
//!    response, as Kafka does.
//! 2. SaslHandshake names a mechanism of the listener's `sasl.enabled.mechanisms`, else
//!    UNSUPPORTED_SASL_MECHANISM (with the enabled list) and the connection is closed.
//! 3. The tokens of the exchange come in SaslAuthenticate requests (handshake v1), or raw,
//!    each as a size-prefixed frame without a header (handshake v0), and the server's tokens go
//!    back the same way. PLAIN checks the listener's JAAS users; SCRAM the credentials of the
//!    metadata log as last published (`ClusterImage::security`).
//! 4. A failed exchange is answered SASL_AUTHENTICATION_FAILED with Kafka's text (never why a
//!    SCRAM exchange failed; PLAIN's "Invalid username or password" whether the user is unknown
//!    or the password wrong) after `connection.failed.authentication.delay.ms`, logged once per
//!    peer at WARN, and the connection is closed. A v0 exchange gets no answer, as in Kafka.
//! 5. Once authenticated, the connection's principal is `User:<name>` for every later
//!    request; SaslHandshake and SaslAuthenticate are then answered ILLEGAL_SASL_STATE (kcoord
//!    does not re-authenticate: `connections.max.reauth.ms` is 0, Kafka's default).

use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kcoord_acl::KafkaPrincipal;
use kcoord_metadata::SecurityImage;
use kcoord_sasl::{
    PlainUsers, RelayedExchange, SaslError, SaslMechanism, SaslServer, ScramCredential,
    ScramCredentialLookup, ScramMechanism, Step,
};
use kcoord_wire::api::ApiKey;
use kcoord_wire::frame::OutFrame;
use kcoord_wire::messages::{
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kcoord_wire::ErrorCode;

use crate::config::sasl::SaslListener;
use crate::gateway::forward::{Forwarder, LoginRefused, UpstreamLogin};
use crate::rpc::dispatch::{self, Connection, Reply};
use crate::state::RequestContext;
use crate::support::logging::log_per_peer;

/// Where a connection is in its authentication.
enum State {
    /// Nothing yet, or ApiVersions answered.
    Handshake { versions_answered: bool },
    /// The handshake chose a mechanism; the exchange runs.
    Exchange {
        checker: Checker,
        /// Handshake v0: raw tokens, no SaslAuthenticate.
        raw: bool,
    },
    /// Failed: the connection is closing.
    Failed,
}

/// Who checks an exchange's tokens.
enum Checker {
    /// kcoord: the listener's JAAS users, the metadata log's SCRAM credentials.
    Local(Box<SaslServer<Arc<PlainUsers>, ImageCredentials>>),
    /// The upstream cluster, each token relayed to it (`gateway.authentication=upstream`).
    Upstream {
        exchange: RelayedExchange,
        login: UpstreamLogin,
    },
}

/// Why a step of the exchange failed.
enum Failure {
    /// kcoord refused the token.
    Sasl(SaslError),
    /// The cluster refused the relayed token: its code and message go to the client as is.
    Cluster { code: i16, message: Option<String> },
    /// The cluster could not be asked (logged): the connection closes, as if a broker went away.
    Gone,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Sasl(e) => e.fmt(f),
            Failure::Cluster { code, message } => {
                let name =
                    ErrorCode::from_code(*code).map_or("UNKNOWN_ERROR_CODE", ErrorCode::name);
                write!(
                    f,
                    "the upstream cluster refused: {name}: {}",
                    message.as_deref().unwrap_or("")
                )
            }
            Failure::Gone => f.write_str("the upstream cluster could not be asked"),
        }
    }
}

/// The authentication of one connection on a SASL listener.
pub struct SaslSession {
    listener: SaslListener,
    state: Mutex<State>,
    /// Set once, when the exchange completes.
    principal: OnceLock<KafkaPrincipal>,
}

impl std::fmt::Debug for SaslSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslSession")
            .field("mechanisms", &self.listener.mechanisms)
            .field("principal", &self.principal.get())
            .finish_non_exhaustive()
    }
}

impl SaslSession {
    pub fn new(listener: SaslListener) -> SaslSession {
        SaslSession {
            listener,
            state: Mutex::new(State::Handshake {
                versions_answered: false,
            }),
            principal: OnceLock::new(),
        }
    }

    /// Who the connection authenticated as; `None` until then.
    pub fn principal(&self) -> Option<&KafkaPrincipal> {
        self.principal.get()
    }

    /// Whether the next frame is a raw SASL token (after SaslHandshake v0), not a request.
    pub fn expects_raw_token(&self) -> bool {
        self.principal.get().is_none()
            && matches!(
                *self.state.lock().unwrap_or_else(PoisonError::into_inner),
                State::Exchange { raw: true, .. }
            )
    }

    /// A session that has already authenticated as `principal`, as [`complete`] leaves it:
    /// for tests of what an authenticated connection may do, without an exchange.
    #[cfg(test)]
    pub(crate) fn authenticated(principal: KafkaPrincipal) -> SaslSession {
        let session = SaslSession::new(SaslListener {
            mechanisms: Vec::new(),
            plain_users: Arc::default(),
            relayed: false,
        });
        let _ = session.principal.set(principal);
        *session.state.lock().unwrap_or_else(PoisonError::into_inner) = State::Handshake {
            versions_answered: true,
        };
        session
    }
}

/// SCRAM credentials as the metadata log holds them, as of the handshake.
pub struct ImageCredentials(Arc<SecurityImage>);

impl ScramCredentialLookup for ImageCredentials {
    fn scram_credential(
        &self,
        mechanism: ScramMechanism,
        username: &str,
    ) -> Option<ScramCredential> {
        let record = self.0.credential(username, mechanism.kafka_type())?;
        Some(ScramCredential {
            salt: record.salt.to_vec(),
            stored_key: record.stored_key.to_vec(),
            server_key: record.server_key.to_vec(),
            iterations: u32::try_from(record.iterations).unwrap_or(0),
        })
    }
}

/// Serves one frame of a connection that has not authenticated yet.
pub async fn serve(conn: &Connection, session: &SaslSession, frame: Bytes) -> Reply {
    let raw = matches!(
        *session.state.lock().unwrap_or_else(PoisonError::into_inner),
        State::Exchange { raw: true, .. }
    );
    if raw {
        return raw_token(conn, session, frame).await;
    }
    let (api, version, header, body) = match dispatch::parse(conn, frame) {
        Ok(parsed) => parsed,
        Err(reply) => return reply,
    };
    let ctx = conn.context(&header);
    match api {
        ApiKey::ApiVersions => api_versions(&ctx, session, version, body),
        ApiKey::SaslHandshake => {
            handshake(&ctx, session, conn.upstream.as_deref(), version, body).await
        }
        ApiKey::SaslAuthenticate => authenticate(&ctx, session, version, body).await,
        other => {
            let peer = conn.peer;
            log_per_peer!(warn, peer, "request before authentication", %peer, listener = %conn.listener.name, api = other.name(), "request before SASL authentication completed; closing connection");
            Reply::Close
        }
    }
}

/// ApiVersions is answered once before the handshake (a second one closes the connection);
/// an unsupported version is answered without counting.
fn api_versions(
    ctx: &RequestContext<'_>,
    session: &SaslSession,
    version: i16,
    body: Bytes,
) -> Reply {
    {
        let state = session.state.lock().unwrap_or_else(PoisonError::into_inner);
        if !matches!(
            *state,
            State::Handshake {
                versions_answered: false
            }
        ) {
            drop(state);
            return unexpected(ctx, ApiKey::ApiVersions);
        }
    }
    let request = match dispatch::decode(ctx, ApiKey::ApiVersions, version, body) {
        Ok(request) => request,
        Err(reply) => return reply,
    };
    let response = crate::rpc::apis::api_versions::handle(ctx, request, version);
    if response.error_code == 0 {
        *session.state.lock().unwrap_or_else(PoisonError::into_inner) = State::Handshake {
            versions_answered: true,
        };
    }
    dispatch::respond(ctx, ApiKey::ApiVersions, version, &response)
}

async fn handshake(
    ctx: &RequestContext<'_>,
    session: &SaslSession,
    upstream: Option<&Forwarder>,
    version: i16,
    body: Bytes,
) -> Reply {
    if !matches!(
        *session.state.lock().unwrap_or_else(PoisonError::into_inner),
        State::Handshake { .. }
    ) {
        return unexpected(ctx, ApiKey::SaslHandshake);
    }
    let request: SaslHandshakeRequest =
        match dispatch::decode(ctx, ApiKey::SaslHandshake, version, body) {
            Ok(request) => request,
            Err(reply) => return reply,
        };
    let mut response = SaslHandshakeResponse {
        error_code: 0,
        mechanisms: session.listener.mechanism_names(),
        ..Default::default()
    };
    let Some(mechanism) = session.listener.mechanism(&request.mechanism) else {
        response.error_code = ErrorCode::UNSUPPORTED_SASL_MECHANISM.code();
        let error = Failure::Sasl(SaslError::UnsupportedSaslMechanism(request.mechanism));
        return fail(ctx, session, &error, None, || {
            dispatch::respond(ctx, ApiKey::SaslHandshake, version, &response)
        })
        .await;
    };
    let checker = match (session.listener.relayed, upstream) {
        (false, _) => {
            let credentials = ImageCredentials(Arc::clone(&ctx.server.cluster.snapshot().security));
            Checker::Local(Box::new(SaslServer::new(
                mechanism,
                Arc::clone(&session.listener.plain_users),
                credentials,
            )))
        }
        (true, Some(upstream)) => match upstream.login(mechanism).await {
            Ok(login) => Checker::Upstream {
                exchange: RelayedExchange::new(mechanism),
                login,
            },
            Err(LoginRefused::Mechanism(enabled)) => {
                // What the client may use: enabled both here and in the cluster.
                response.mechanisms.retain(|m| enabled.contains(m));
                response.error_code = ErrorCode::UNSUPPORTED_SASL_MECHANISM.code();
                let error = Failure::Sasl(SaslError::UnsupportedSaslMechanism(request.mechanism));
                return fail(ctx, session, &error, None, || {
                    dispatch::respond(ctx, ApiKey::SaslHandshake, version, &response)
                })
                .await;
            }
            Err(LoginRefused::Unreachable) => return Reply::Close,
        },
        // A relayed listener is a broker listener in gateway mode, which has a forwarder.
        (true, None) => return Reply::Close,
    };
    *session.state.lock().unwrap_or_else(PoisonError::into_inner) = State::Exchange {
        checker,
        raw: version == 0,
    };
    dispatch::respond(ctx, ApiKey::SaslHandshake, version, &response)
}

async fn authenticate(
    ctx: &RequestContext<'_>,
    session: &SaslSession,
    version: i16,
    body: Bytes,
) -> Reply {
    let request: SaslAuthenticateRequest =
        match dispatch::decode(ctx, ApiKey::SaslAuthenticate, version, body) {
            Ok(request) => request,
            Err(reply) => return reply,
        };
    let Some((mechanism, step)) = step(ctx, session, false, request.auth_bytes).await else {
        return unexpected(ctx, ApiKey::SaslAuthenticate);
    };
    match step {
        Ok(Step::Challenge(token)) => respond_token(ctx, version, token),
        Ok(Step::Complete {
            token,
            authenticated,
        }) => {
            complete(ctx, session, mechanism, &authenticated.authorization_id);
            respond_token(ctx, version, token)
        }
        Err(failure) => {
            let (error_code, error_message) = match &failure {
                Failure::Sasl(e) => (
                    e.error_code(),
                    Some(e.client_message(mechanism.name(), false)),
                ),
                Failure::Cluster { code, message } => (*code, message.clone()),
                Failure::Gone => return Reply::Close,
            };
            let response = SaslAuthenticateResponse {
                error_code,
                error_message,
                auth_bytes: Bytes::new(),
                ..Default::default()
            };
            fail(ctx, session, &failure, Some(mechanism), || {
                dispatch::respond(ctx, ApiKey::SaslAuthenticate, version, &response)
            })
            .await
        }
    }
}

/// One step of the exchange with the client's `token`, checked here or by the cluster; `None`
/// when no exchange of this framing (`raw` or SaslAuthenticate) runs.
async fn step(
    ctx: &RequestContext<'_>,
    session: &SaslSession,
    raw: bool,
    token: Bytes,
) -> Option<(SaslMechanism, Result<Step, Failure>)> {
    let (mechanism, login) = {
        let mut state = session.state.lock().unwrap_or_else(PoisonError::into_inner);
        let State::Exchange { checker, raw: r } = &mut *state else {
            return None;
        };
        if *r != raw {
            return None;
        }
        match checker {
            Checker::Local(server) => {
                return Some((
                    server.mechanism(),
                    server.step(&token).map_err(Failure::Sasl),
                ))
            }
            Checker::Upstream { exchange, login } => {
                let mechanism = exchange.mechanism();
                if let Err(e) = exchange.client_token(&token) {
                    return Some((mechanism, Err(Failure::Sasl(e))));
                }
                (mechanism, login.clone())
            }
        }
    };
    let answer = login.authenticate(token).await;
    let mut state = session.state.lock().unwrap_or_else(PoisonError::into_inner);
    let State::Exchange {
        checker: Checker::Upstream { exchange, .. },
        ..
    } = &mut *state
    else {
        return None;
    };
    let result = match answer {
        Ok(answer) if answer.error_code == ErrorCode::NONE.code() => exchange
            .server_token(answer.auth_bytes.to_vec())
            .map_err(Failure::Sasl),
        Ok(answer) => Err(Failure::Cluster {
            code: answer.error_code,
            message: answer.error_message,
        }),
        Err(e) => {
            let peer = ctx.peer;
            log_per_peer!(warn, peer, "sasl relay failed", %peer, upstream = login.address(), error = %e, "the upstream cluster did not answer a relayed SASL token; closing connection");
            Err(Failure::Gone)
        }
    };
    if result.is_err() {
        exchange.refused();
    }
    Some((mechanism, result))
}

/// A token of a handshake-v0 exchange: the whole frame, answered by a raw frame.
async fn raw_token(conn: &Connection, session: &SaslSession, token: Bytes) -> Reply {
    let header = kcoord_wire::messages::RequestHeader::default();
    let ctx = conn.context(&header);
    let Some((mechanism, step)) = step(&ctx, session, true, token).await else {
        return Reply::Close;
    };
    match step {
        Ok(Step::Challenge(reply)) => raw_frame(reply),
        Ok(Step::Complete {
            token: reply,
            authenticated,
        }) => {
            complete(&ctx, session, mechanism, &authenticated.authorization_id);
            raw_frame(reply)
        }
        Err(Failure::Gone) => Reply::Close,
        // Kafka answers a failed v0 exchange with nothing.
        Err(failure) => fail(&ctx, session, &failure, Some(mechanism), || Reply::Close).await,
    }
}

fn raw_frame(token: Vec<u8>) -> Reply {
    let mut frame = BytesMut::with_capacity(4 + token.len());
    frame.extend_from_slice(&(token.len() as u32).to_be_bytes());
    frame.extend_from_slice(&token);
    Reply::Respond(OutFrame::One(frame.freeze()))
}

fn respond_token(ctx: &RequestContext<'_>, version: i16, token: Vec<u8>) -> Reply {
    let response = SaslAuthenticateResponse {
        error_code: 0,
        error_message: None,
        auth_bytes: token.into(),
        session_lifetime_ms: 0,
        ..Default::default()
    };
    dispatch::respond(ctx, ApiKey::SaslAuthenticate, version, &response)
}

fn complete(ctx: &RequestContext<'_>, session: &SaslSession, mechanism: SaslMechanism, name: &str) {
    let principal = KafkaPrincipal::user(name);
    tracing::info!(peer = %ctx.peer, listener = %ctx.listener.name, mechanism = %mechanism, principal = %principal, "SASL authentication succeeded");
    let _ = session.principal.set(principal);
    *session.state.lock().unwrap_or_else(PoisonError::into_inner) = State::Handshake {
        versions_answered: true,
    };
}

/// A failed authentication: logged once per peer, answered after the failure delay (as Kafka
/// delays it, so that guessing passwords is slow), then the connection closes.
async fn fail(
    ctx: &RequestContext<'_>,
    session: &SaslSession,
    error: &Failure,
    mechanism: Option<SaslMechanism>,
    answer: impl FnOnce() -> Reply,
) -> Reply {
    *session.state.lock().unwrap_or_else(PoisonError::into_inner) = State::Failed;
    let peer = ctx.peer;
    let mechanism = mechanism.map_or("none", SaslMechanism::name);
    log_per_peer!(warn, peer, "sasl authentication failed", %peer, listener = %ctx.listener.name, mechanism, reason = %error, "SASL authentication failed; closing connection");
    let delay = ctx.server.config.sasl.failed_authentication_delay_ms;
    tokio::time::sleep(Duration::from_millis(delay)).await;
    match answer() {
        Reply::Respond(frame) => Reply::Last(frame),
        other => other,
    }
}

/// A request out of place in the exchange: closed at once, without a response.
fn unexpected(ctx: &RequestContext<'_>, api: ApiKey) -> Reply {
    let peer = ctx.peer;
    log_per_peer!(warn, peer, "unexpected sasl request", %peer, listener = %ctx.listener.name, api = api.name(), "request out of place in the SASL exchange; closing connection");
    Reply::Close
}
