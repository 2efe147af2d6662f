//! Why an exchange failed, with the error code and the text Kafka sends for it.

use crate::ScramMechanism;

/// Kafka's `SASL_AUTHENTICATION_FAILED`.
pub const SASL_AUTHENTICATION_FAILED: i16 = 58;
/// Kafka's `ILLEGAL_SASL_STATE`.
pub const ILLEGAL_SASL_STATE: i16 = 34;
/// Kafka's `UNSUPPORTED_SASL_MECHANISM`.
pub const UNSUPPORTED_SASL_MECHANISM: i16 = 33;

/// A failed SASL step. `Display` is the text for the server's own log; what the client may
/// see is [`SaslError::client_message`], because Kafka sends the reason only for the failures
/// its servers raise as `SaslAuthenticationException` and a generic text for the others.
///
/// An unknown user and a wrong password are the same value on purpose
/// ([`SaslError::InvalidUsernameOrPassword`] for PLAIN, [`SaslError::InvalidClientCredentials`]
/// for SCRAM), so not even the server's log tells a probe for user names from a typo.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SaslError {
    /// PLAIN: the message did not split into authzid, username and password.
    #[error("Invalid SASL/PLAIN response: expected 3 tokens, got {0}")]
    PlainTokenCount(usize),
    /// PLAIN: empty username.
    #[error("Authentication failed: username not specified")]
    UsernameNotSpecified,
    /// PLAIN: empty password.
    #[error("Authentication failed: password not specified")]
    PasswordNotSpecified,
    /// PLAIN: unknown user or wrong password.
    #[error("Authentication failed: Invalid username or password")]
    InvalidUsernameOrPassword,
    /// PLAIN and SCRAM: a non-empty authorization id that is not the username.
    #[error("Authentication failed: Client requested an authorization id that is different from username")]
    AuthorizationIdMismatch,
    /// SCRAM: the client-first message does not match RFC 5802's grammar as Kafka reads it.
    /// Holds the message, escaped so that it cannot forge log lines.
    #[error("Invalid SCRAM client first message format: {0}")]
    InvalidClientFirstMessage(String),
    /// SCRAM: the stored credential has fewer iterations than the mechanism allows.
    #[error("Iterations {iterations} is less than the minimum {minimum} for {mechanism}")]
    TooFewIterations {
        mechanism: ScramMechanism,
        iterations: u32,
        minimum: u32,
    },
    /// SCRAM: the client-final message does not match the grammar. Holds the escaped message.
    #[error("Invalid SCRAM client final message format: {0}")]
    InvalidClientFinalMessage(String),
    /// SCRAM: the client-final nonce is not the one the server sent.
    #[error("Invalid client nonce in the final client message.")]
    InvalidClientNonce,
    /// SCRAM: the proof does not verify: wrong password, unknown user or unknown token.
    #[error("Invalid client credentials")]
    InvalidClientCredentials,
    /// A token arrived when the exchange expects none (it has completed or failed), or a
    /// request the SASL state does not allow; holds Kafka's text.
    #[error("{0}")]
    IllegalSaslState(String),
    /// The client asked for a mechanism that is not enabled; holds the name it asked for.
    #[error("Unsupported SASL mechanism {0}")]
    UnsupportedSaslMechanism(String),
    /// A relayed SCRAM exchange ([`crate::RelayedExchange`]) with a delegation token: who the
    /// client would be (the token's owner) is known only to the server that checks it.
    #[error(
        "Authentication failed: delegation tokens are not accepted here; authenticate as the user"
    )]
    TokenAuthenticationNotRelayed,
}

impl SaslError {
    /// The error code of the response that reports this failure.
    pub fn error_code(&self) -> i16 {
        match self {
            SaslError::IllegalSaslState(_) => ILLEGAL_SASL_STATE,
            SaslError::UnsupportedSaslMechanism(_) => UNSUPPORTED_SASL_MECHANISM,
            _ => SASL_AUTHENTICATION_FAILED,
        }
    }

    /// The text a SaslAuthenticate error response carries: the reason itself where Kafka sends
    /// it (every PLAIN failure, the authorization id check, state and mechanism errors), else
    /// Kafka's generic `Authentication failed during authentication due to invalid credentials
    /// with SASL mechanism <mechanism>` (`re-authentication` while re-authenticating), which
    /// tells a prober nothing about why.
    pub fn client_message(&self, mechanism: &str, reauthenticating: bool) -> String {
        if self.is_sent_verbatim() {
            return self.to_string();
        }
        let phase = if reauthenticating {
            "re-authentication"
        } else {
            "authentication"
        };
        format!(
            "Authentication failed during {phase} due to invalid credentials with SASL mechanism {mechanism}"
        )
    }

    /// Kafka's servers raise these as `SaslAuthenticationException` (or another
    /// `AuthenticationException`), whose message reaches the client; the SCRAM server raises
    /// the rest as plain `SaslException`, whose message stays on the server.
    fn is_sent_verbatim(&self) -> bool {
        matches!(
            self,
            SaslError::PlainTokenCount(_)
                | SaslError::UsernameNotSpecified
                | SaslError::PasswordNotSpecified
                | SaslError::InvalidUsernameOrPassword
                | SaslError::AuthorizationIdMismatch
                | SaslError::IllegalSaslState(_)
                | SaslError::UnsupportedSaslMechanism(_)
                | SaslError::TokenAuthenticationNotRelayed
        )
    }

    /// The state error for a token that arrives after the exchange ended; `state` is Kafka's
    /// name for the state (`COMPLETE`, `FAILED`).
    pub(crate) fn unexpected_challenge(state: &str) -> SaslError {
        SaslError::IllegalSaslState(format!("Unexpected challenge in Sasl server state {state}"))
    }
}

/// A client message made safe for one log line: non-UTF-8 bytes replaced, control characters
/// escaped.
pub(crate) fn escaped(message: &[u8]) -> String {
    String::from_utf8_lossy(message).escape_debug().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scram_failures_reach_the_client_only_as_kafkas_generic_text() {
        for error in [
            SaslError::InvalidClientCredentials,
            SaslError::InvalidClientNonce,
            SaslError::InvalidClientFirstMessage("x".into()),
            SaslError::InvalidClientFinalMessage("x".into()),
            SaslError::TooFewIterations {
                mechanism: ScramMechanism::ScramSha256,
                iterations: 1,
                minimum: 4096,
            },
        ] {
            assert_eq!(error.error_code(), 58);
            assert_eq!(
                error.client_message("SCRAM-SHA-256", false),
                "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
            );
            assert_eq!(
                error.client_message("SCRAM-SHA-512", true),
                "Authentication failed during re-authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
            );
        }
    }

    #[test]
    fn plain_failures_and_the_authorization_id_check_reach_the_client_verbatim() {
        let cases = [
            (
                SaslError::PlainTokenCount(2),
                "Invalid SASL/PLAIN response: expected 3 tokens, got 2",
            ),
            (
                SaslError::UsernameNotSpecified,
                "Authentication failed: username not specified",
            ),
            (
                SaslError::PasswordNotSpecified,
                "Authentication failed: password not specified",
            ),
            (
                SaslError::InvalidUsernameOrPassword,
                "Authentication failed: Invalid username or password",
            ),
            (
                SaslError::AuthorizationIdMismatch,
                "Authentication failed: Client requested an authorization id that is different from username",
            ),
        ];
        for (error, text) in cases {
            assert_eq!(error.error_code(), 58);
            assert_eq!(error.client_message("PLAIN", false), text);
        }
    }

    #[test]
    fn state_and_mechanism_errors_carry_their_own_codes() {
        let state = SaslError::unexpected_challenge("COMPLETE");
        assert_eq!(state.error_code(), 34);
        assert_eq!(
            state.client_message("PLAIN", false),
            "Unexpected challenge in Sasl server state COMPLETE"
        );
        let mechanism = SaslError::UnsupportedSaslMechanism("GSSAPI".into());
        assert_eq!(mechanism.error_code(), 33);
        assert_eq!(
            mechanism.client_message("GSSAPI", false),
            "Unsupported SASL mechanism GSSAPI"
        );
    }

    #[test]
    fn escaping_keeps_a_hostile_message_on_one_log_line() {
        assert_eq!(escaped(b"n,,n=a\nFAKE\xff"), "n,,n=a\\nFAKE\u{fffd}");
    }
}
