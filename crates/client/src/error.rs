//! The one error type of the client.

use std::time::Duration;

use kcoord_wire::api::ApiKey;
use kcoord_wire::{ErrorCode, VersionRange};

/// Everything that can go wrong talking to a Kafka-protocol server.
///
/// Errors that a dead connection hands to every request still waiting on it carry strings,
/// not `io::Error`, because one cause has to be cloned to many waiters.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("I/O error with {addr}: {source}")]
    Io {
        addr: String,
        #[source]
        source: std::io::Error,
    },

    #[error("timed out after {after:?} waiting for {operation} ({addr})")]
    Timeout {
        addr: String,
        operation: String,
        after: Duration,
    },

    #[error("connection to {addr} closed: {reason}")]
    ConnectionClosed { addr: String, reason: String },

    /// The server sent bytes that do not decode as the expected response.
    #[error("protocol error: {0}")]
    Protocol(String),

    /// The request could not be encoded at the chosen version (a client-side bug or a field
    /// the version cannot carry).
    #[error("cannot encode {} v{version} request: {reason}", api_name(*api))]
    Encode {
        api: i16,
        version: i16,
        reason: String,
    },

    /// Client and server share no version of the API, or the caller asked for a version the
    /// client cannot encode.
    #[error(
        "{} has no usable version: requested {}, client supports {client}, server supports {}",
        api_name(*api),
        requested.map_or_else(|| "the highest common one".to_string(), |v| format!("v{v}")),
        server.map_or_else(|| "none".to_string(), |r| r.to_string())
    )]
    UnsupportedVersion {
        api: i16,
        requested: Option<i16>,
        client: VersionRange,
        server: Option<VersionRange>,
    },

    /// The server answered with a non-zero Kafka error code.
    #[error("{} failed: {}", api_name(*api), kafka_error_text(*code, message.as_deref()))]
    Kafka {
        api: i16,
        code: i16,
        message: Option<String>,
    },

    #[error("no broker in {bootstrap:?} could be reached: {}", errors.join("; "))]
    NoBrokerAvailable {
        bootstrap: String,
        errors: Vec<String>,
    },

    /// A streams member was asked to do something after it left, failed or was stopped.
    #[error("streams member {member_id} is not active: {reason}")]
    MemberNotActive { member_id: String, reason: String },

    /// A bounded wait (e.g. for a streams member to reach a state) ran out.
    #[error("timed out after {after:?} waiting for {what}")]
    WaitTimeout { what: String, after: Duration },

    /// The caller asked for something the negotiated version cannot express.
    #[error("{}: {reason}", api_name(*api))]
    Unsupported { api: i16, reason: String },

    /// SASL authentication failed: the server refused the credentials or the mechanism, or
    /// the server did not prove itself (SCRAM). Not retriable: the same credentials fail again.
    #[error("SASL authentication with {addr} failed ({mechanism}): {message}")]
    Authentication {
        addr: String,
        mechanism: &'static str,
        message: String,
    },

    /// The TLS handshake failed: most often a certificate the trust store does not vouch for,
    /// or one that does not name the host (`ssl.endpoint.identification.algorithm`).
    #[error("SSL handshake with {addr} failed: {reason}")]
    Tls { addr: String, reason: String },

    /// The caller asked for something the client refuses before sending anything (an empty
    /// batch, idempotence without acks=-1, a record the batch format cannot hold).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

/// Many callers may need the same failure (one request failing for every group it carried);
/// an I/O error is copied as its kind and text.
impl Clone for ClientError {
    fn clone(&self) -> Self {
        match self {
            ClientError::Io { addr, source } => ClientError::Io {
                addr: addr.clone(),
                source: std::io::Error::new(source.kind(), source.to_string()),
            },
            ClientError::Timeout {
                addr,
                operation,
                after,
            } => ClientError::Timeout {
                addr: addr.clone(),
                operation: operation.clone(),
                after: *after,
            },
            ClientError::ConnectionClosed { addr, reason } => ClientError::ConnectionClosed {
                addr: addr.clone(),
                reason: reason.clone(),
            },
            ClientError::Protocol(reason) => ClientError::Protocol(reason.clone()),
            ClientError::Encode {
                api,
                version,
                reason,
            } => ClientError::Encode {
                api: *api,
                version: *version,
                reason: reason.clone(),
            },
            ClientError::UnsupportedVersion {
                api,
                requested,
                client,
                server,
            } => ClientError::UnsupportedVersion {
                api: *api,
                requested: *requested,
                client: *client,
                server: *server,
            },
            ClientError::Kafka { api, code, message } => ClientError::Kafka {
                api: *api,
                code: *code,
                message: message.clone(),
            },
            ClientError::NoBrokerAvailable { bootstrap, errors } => {
                ClientError::NoBrokerAvailable {
                    bootstrap: bootstrap.clone(),
                    errors: errors.clone(),
                }
            }
            ClientError::MemberNotActive { member_id, reason } => ClientError::MemberNotActive {
                member_id: member_id.clone(),
                reason: reason.clone(),
            },
            ClientError::WaitTimeout { what, after } => ClientError::WaitTimeout {
                what: what.clone(),
                after: *after,
            },
            ClientError::Unsupported { api, reason } => ClientError::Unsupported {
                api: *api,
                reason: reason.clone(),
            },
            ClientError::Authentication {
                addr,
                mechanism,
                message,
            } => ClientError::Authentication {
                addr: addr.clone(),
                mechanism,
                message: message.clone(),
            },
            ClientError::Tls { addr, reason } => ClientError::Tls {
                addr: addr.clone(),
                reason: reason.clone(),
            },
            ClientError::InvalidArgument(reason) => ClientError::InvalidArgument(reason.clone()),
        }
    }
}

impl ClientError {
    /// The Kafka error code, for [`ClientError::Kafka`].
    pub fn error_code(&self) -> Option<ErrorCode> {
        match self {
            ClientError::Kafka { code, .. } => ErrorCode::from_code(*code),
            _ => None,
        }
    }

    /// Kafka's constant name for the error code, e.g. `NON_EMPTY_GROUP`, for
    /// [`ClientError::Kafka`]; `UNKNOWN_ERROR_CODE` for a code this client does not know.
    pub fn error_name(&self) -> Option<&'static str> {
        match self {
            ClientError::Kafka { code, .. } => {
                Some(ErrorCode::from_code(*code).map_or("UNKNOWN_ERROR_CODE", ErrorCode::name))
            }
            _ => None,
        }
    }

    /// True for the errors after which a group-scoped request should go to a freshly looked-up
    /// coordinator: NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE.
    pub fn is_coordinator_moved(&self) -> bool {
        matches!(
            self.error_code(),
            Some(ErrorCode::NOT_COORDINATOR | ErrorCode::COORDINATOR_NOT_AVAILABLE)
        )
    }

    /// True when the connection could not be secured: SASL or TLS refused it. Trying again,
    /// or another bootstrap address, gives the same answer.
    pub fn is_authentication(&self) -> bool {
        matches!(
            self,
            ClientError::Authentication { .. } | ClientError::Tls { .. }
        )
    }

    /// True when the request never got an answer: the connection failed, closed or timed out.
    pub fn is_transport(&self) -> bool {
        matches!(
            self,
            ClientError::Io { .. }
                | ClientError::Timeout { .. }
                | ClientError::ConnectionClosed { .. }
        )
    }

    /// True for the errors after which the same request may succeed when sent again: a
    /// transport failure, or a Kafka code of one of Kafka's `RetriableException`s that a
    /// Produce, Fetch or ListOffsets can return (leadership, metadata, loading, timeouts).
    pub fn is_retriable(&self) -> bool {
        if self.is_transport() {
            return true;
        }
        matches!(
            self.error_code(),
            Some(
                ErrorCode::CORRUPT_MESSAGE
                    | ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
                    | ErrorCode::LEADER_NOT_AVAILABLE
                    | ErrorCode::NOT_LEADER_OR_FOLLOWER
                    | ErrorCode::REQUEST_TIMED_OUT
                    | ErrorCode::REPLICA_NOT_AVAILABLE
                    | ErrorCode::NETWORK_EXCEPTION
                    | ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
                    | ErrorCode::COORDINATOR_NOT_AVAILABLE
                    | ErrorCode::NOT_COORDINATOR
                    | ErrorCode::NOT_ENOUGH_REPLICAS
                    | ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND
                    | ErrorCode::KAFKA_STORAGE_ERROR
                    | ErrorCode::FENCED_LEADER_EPOCH
                    | ErrorCode::UNKNOWN_LEADER_EPOCH
                    | ErrorCode::UNKNOWN_TOPIC_ID
                    | ErrorCode::THROTTLING_QUOTA_EXCEEDED
            )
        )
    }

    /// `Ok(())` for code 0, else a [`ClientError::Kafka`].
    pub fn check(api: i16, code: i16, message: Option<&str>) -> Result<(), ClientError> {
        if code == ErrorCode::NONE.code() {
            Ok(())
        } else {
            Err(ClientError::Kafka {
                api,
                code,
                message: message.map(str::to_string),
            })
        }
    }
}

/// Kafka's name for an API key, or the number when the key is not ours.
pub fn api_name(key: i16) -> String {
    match ApiKey::from_i16(key) {
        Some(api) => api.name().to_string(),
        None => format!("ApiKey({key})"),
    }
}

/// `NAME (code): message`, using Kafka's default message when the server sent none.
fn kafka_error_text(code: i16, message: Option<&str>) -> String {
    let known = ErrorCode::from_code(code);
    let name = known.map_or("UNKNOWN_ERROR_CODE", ErrorCode::name);
    let message = match message {
        Some(m) if !m.is_empty() => m,
        _ => known.map_or("", ErrorCode::message),
    };
    format!("{name} ({code}): {message}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_errors_name_the_api_and_code() {
        let e = ClientError::check(ApiKey::FindCoordinator.key(), 15, None).unwrap_err();
        assert_eq!(e.error_code(), Some(ErrorCode::COORDINATOR_NOT_AVAILABLE));
        assert_eq!(
            e.to_string(),
            "FindCoordinator failed: COORDINATOR_NOT_AVAILABLE (15): The coordinator is not available."
        );
        let e = ClientError::check(1234, -77, Some("odd")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "ApiKey(1234) failed: UNKNOWN_ERROR_CODE (-77): odd"
        );
        assert!(ClientError::check(3, 0, Some("ignored")).is_ok());
    }

    #[test]
    fn unsupported_version_explains_both_sides() {
        let e = ClientError::UnsupportedVersion {
            api: ApiKey::Metadata.key(),
            requested: None,
            client: VersionRange { min: 0, max: 13 },
            server: None,
        };
        assert_eq!(
            e.to_string(),
            "Metadata has no usable version: requested the highest common one, client supports 0..13, server supports none"
        );
    }
}
