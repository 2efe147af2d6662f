//! SASL PLAIN (RFC 4616) as Kafka's `PlainSaslServer` and `PlainServerCallbackHandler` do it.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use subtle::{Choice, ConstantTimeEq};

use crate::jaas::{JaasConfig, PLAIN_LOGIN_MODULE};
use crate::random::process_secret;
use crate::{Authenticated, SaslError, Step};

/// Checks a PLAIN user name and password.
pub trait PlainAuthenticator {
    /// Whether `password` is `username`'s. An unknown user is simply false, so that the
    /// caller cannot tell it from a wrong password.
    fn authenticate(&self, username: &str, password: &str) -> bool;
}

impl<T: PlainAuthenticator + ?Sized> PlainAuthenticator for &T {
    fn authenticate(&self, username: &str, password: &str) -> bool {
        (**self).authenticate(username, password)
    }
}

impl<T: PlainAuthenticator + ?Sized> PlainAuthenticator for Arc<T> {
    fn authenticate(&self, username: &str, password: &str) -> bool {
        (**self).authenticate(username, password)
    }
}

/// The PLAIN users of a listener, from its JAAS config's `user_<name>="<password>"` options.
///
/// Passwords are kept as HMAC-SHA256 fingerprints keyed by the per-process secret and compared
/// in constant time; comparing fixed-length fingerprints means neither a password's length
/// nor where it first differs shows in the time taken, and an unknown user is compared with a
/// decoy fingerprint so that it costs what a known one does (Kafka's callback handler returns
/// at once for an unknown user). Two tables are equal when they hold the same users with the
/// same passwords (a configuration reloaded from the same file).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct PlainUsers {
    fingerprints: HashMap<String, [u8; 32]>,
}

impl PlainUsers {
    pub fn new() -> PlainUsers {
        PlainUsers::default()
    }

    /// Adds or replaces a user.
    pub fn insert(&mut self, username: &str, password: &str) {
        self.fingerprints
            .insert(username.to_string(), fingerprint(password.as_bytes()));
    }

    /// The users of a JAAS config as Kafka's `PlainServerCallbackHandler` finds them: the
    /// `user_<name>` options of the `PlainLoginModule` entries, the first entry that has a
    /// name winning. Other login modules' options are not users.
    pub fn from_jaas(config: &JaasConfig) -> PlainUsers {
        let mut users = PlainUsers::new();
        let entries = config
            .entries()
            .iter()
            .filter(|entry| entry.login_module == PLAIN_LOGIN_MODULE);
        for entry in entries {
            for (key, password) in &entry.options {
                if let Some(name) = key.strip_prefix("user_") {
                    if !users.fingerprints.contains_key(name) {
                        users.insert(name, password);
                    }
                }
            }
        }
        users
    }

    pub fn len(&self) -> usize {
        self.fingerprints.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fingerprints.is_empty()
    }
}

impl PlainAuthenticator for PlainUsers {
    fn authenticate(&self, username: &str, password: &str) -> bool {
        let offered = fingerprint(password.as_bytes());
        let known = self.fingerprints.get(username);
        let expected = known.copied().unwrap_or_else(decoy_fingerprint);
        bool::from(offered.ct_eq(&expected) & Choice::from(u8::from(known.is_some())))
    }
}

/// The names only: the fingerprints stay out of logs.
impl fmt::Debug for PlainUsers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&String> = self.fingerprints.keys().collect();
        names.sort();
        f.debug_struct("PlainUsers").field("users", &names).finish()
    }
}

fn fingerprint(password: &[u8]) -> [u8; 32] {
    let Ok(mut mac) = <Hmac<Sha256> as KeyInit>::new_from_slice(process_secret()) else {
        unreachable!("HMAC accepts keys of every length")
    };
    mac.update(b"PLAIN password\0");
    mac.update(password);
    mac.finalize().into_bytes().into()
}

fn decoy_fingerprint() -> [u8; 32] {
    fingerprint(b"\0no such user")
}

/// One PLAIN exchange on the server side: a single client token, an empty final token.
pub struct PlainServer<A> {
    authenticator: A,
    state: PlainState,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PlainState {
    Receive,
    Complete,
    Failed,
}

impl<A: PlainAuthenticator> PlainServer<A> {
    pub fn new(authenticator: A) -> PlainServer<A> {
        PlainServer {
            authenticator,
            state: PlainState::Receive,
        }
    }

    pub fn is_complete(&self) -> bool {
        self.state == PlainState::Complete
    }

    /// Takes `[authzid] NUL authcid NUL passwd` (UTF-8, invalid sequences replaced as Java
    /// decodes them) and checks it in Kafka's order: token count, empty username, empty
    /// password, the password, then the authorization id, which must be empty or the
    /// username. A second token is [`SaslError::IllegalSaslState`].
    pub fn step(&mut self, client_token: &[u8]) -> Result<Step, SaslError> {
        match self.state {
            PlainState::Receive => {}
            PlainState::Complete => return Err(SaslError::unexpected_challenge("COMPLETE")),
            PlainState::Failed => return Err(SaslError::unexpected_challenge("FAILED")),
        }
        self.state = PlainState::Failed;
        let authenticated = self.check(client_token)?;
        self.state = PlainState::Complete;
        Ok(Step::Complete {
            token: Vec::new(),
            authenticated,
        })
    }

    fn check(&self, client_token: &[u8]) -> Result<Authenticated, SaslError> {
        let message = String::from_utf8_lossy(client_token);
        let [authorization_id, username, password] = split_plain_message(&message)?;
        if username.is_empty() {
            return Err(SaslError::UsernameNotSpecified);
        }
        if password.is_empty() {
            return Err(SaslError::PasswordNotSpecified);
        }
        if !self.authenticator.authenticate(username, password) {
            return Err(SaslError::InvalidUsernameOrPassword);
        }
        if !authorization_id.is_empty() && authorization_id != username {
            return Err(SaslError::AuthorizationIdMismatch);
        }
        Ok(Authenticated {
            authorization_id: username.to_string(),
            token_authenticated: false,
            token_expiry_timestamp_ms: None,
        })
    }
}

/// Splits at NUL at most three times, as Kafka does, so the count it reports for a wrong
/// message is 1, 2 or 4.
pub(crate) fn split_plain_message(message: &str) -> Result<[&str; 3], SaslError> {
    let tokens: Vec<&str> = message.splitn(4, '\0').collect();
    match tokens.as_slice() {
        [authorization_id, username, password] => Ok([authorization_id, username, password]),
        _ => Err(SaslError::PlainTokenCount(tokens.len())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn users() -> PlainUsers {
        let mut users = PlainUsers::new();
        users.insert("alice", "alice-secret");
        users.insert("admin", "admin-secret");
        users
    }

    fn run(token: &[u8]) -> Result<Step, SaslError> {
        PlainServer::new(users()).step(token)
    }

    #[test]
    fn a_known_user_with_the_right_password_is_authenticated_with_an_empty_reply() {
        let mut server = PlainServer::new(users());
        let step = server.step(b"\0alice\0alice-secret").unwrap();
        assert_eq!(
            step,
            Step::Complete {
                token: Vec::new(),
                authenticated: Authenticated {
                    authorization_id: "alice".into(),
                    token_authenticated: false,
                    token_expiry_timestamp_ms: None,
                }
            }
        );
        assert!(server.is_complete());
    }

    #[test]
    fn an_authorization_id_equal_to_the_username_is_accepted() {
        assert!(run(b"alice\0alice\0alice-secret").is_ok());
    }

    #[test]
    fn an_unknown_user_and_a_wrong_password_get_the_same_error() {
        let wrong_password = run(b"\0alice\0admin-secret").unwrap_err();
        let unknown_user = run(b"\0mallory\0alice-secret").unwrap_err();
        assert_eq!(wrong_password, SaslError::InvalidUsernameOrPassword);
        assert_eq!(unknown_user, wrong_password);
        assert_eq!(
            unknown_user.client_message("PLAIN", false),
            "Authentication failed: Invalid username or password"
        );
    }

    #[test]
    fn passwords_differing_in_length_prefix_or_case_are_wrong() {
        for password in [
            "alice-secre",
            "alice-secret!",
            "Alice-secret",
            "alice-secret\u{0}",
        ] {
            let token = format!("\0alice\0{password}");
            assert!(run(token.as_bytes()).is_err(), "{password:?}");
        }
        assert!(run(b"\0ALICE\0alice-secret").is_err());
    }

    #[test]
    fn the_token_count_is_reported_as_kafka_counts_it() {
        assert_eq!(run(b"alice"), Err(SaslError::PlainTokenCount(1)));
        assert_eq!(run(b""), Err(SaslError::PlainTokenCount(1)));
        assert_eq!(
            run(b"alice\0alice-secret"),
            Err(SaslError::PlainTokenCount(2))
        );
        assert_eq!(
            run(b"\0alice\0alice-secret\0"),
            Err(SaslError::PlainTokenCount(4))
        );
        assert_eq!(run(b"\0\0\0\0\0"), Err(SaslError::PlainTokenCount(4)));
    }

    #[test]
    fn empty_username_and_password_are_named_before_any_lookup() {
        assert_eq!(run(b"\0\0pw"), Err(SaslError::UsernameNotSpecified));
        assert_eq!(run(b"\0alice\0"), Err(SaslError::PasswordNotSpecified));
        assert_eq!(run(b"\0\0"), Err(SaslError::UsernameNotSpecified));
    }

    #[test]
    fn a_different_authorization_id_is_refused_only_after_the_password_checks() {
        assert_eq!(
            run(b"admin\0alice\0alice-secret"),
            Err(SaslError::AuthorizationIdMismatch)
        );
        // With a wrong password the password error comes first, telling nothing more.
        assert_eq!(
            run(b"admin\0alice\0wrong"),
            Err(SaslError::InvalidUsernameOrPassword)
        );
    }

    #[test]
    fn non_ascii_names_and_passwords_work_and_bad_utf8_never_matches() {
        let mut users = PlainUsers::new();
        users.insert("j\u{f6}rg", "p\u{e4}ss");
        let mut server = PlainServer::new(&users);
        assert!(server.step("\0j\u{f6}rg\0p\u{e4}ss".as_bytes()).is_ok());
        let mut server = PlainServer::new(&users);
        assert_eq!(
            server.step(b"\0j\xf6rg\0p\xe4ss"),
            Err(SaslError::InvalidUsernameOrPassword)
        );
    }

    #[test]
    fn a_second_token_is_an_illegal_state_whatever_the_first_gave() {
        let mut server = PlainServer::new(users());
        server.step(b"\0alice\0alice-secret").unwrap();
        let error = server.step(b"\0alice\0alice-secret").unwrap_err();
        assert_eq!(error.error_code(), 34);
        let mut server = PlainServer::new(users());
        server.step(b"\0alice\0nope").unwrap_err();
        assert_eq!(
            server.step(b"\0alice\0alice-secret"),
            Err(SaslError::unexpected_challenge("FAILED"))
        );
        assert!(!server.is_complete());
    }

    #[test]
    fn users_come_from_plain_login_module_options_only() {
        let config = JaasConfig::parse(
            "org.apache.kafka.common.security.plain.PlainLoginModule required \
             username=\"admin\" password=\"admin-secret\" \
             user_admin=\"admin-secret\" user_alice=\"alice-secret\"; \
             org.apache.kafka.common.security.scram.ScramLoginModule required user_eve=\"x\";",
        )
        .unwrap();
        let users = PlainUsers::from_jaas(&config);
        assert_eq!(users.len(), 2);
        assert!(users.authenticate("admin", "admin-secret"));
        assert!(users.authenticate("alice", "alice-secret"));
        assert!(!users.authenticate("eve", "x"));
        // The broker's own username/password options are not a user of their own.
        assert!(!users.authenticate("username", "admin"));
    }

    #[test]
    fn the_first_plain_entry_naming_a_user_wins() {
        let config = JaasConfig::parse(
            "org.apache.kafka.common.security.plain.PlainLoginModule required user_a=\"first\"; \
             org.apache.kafka.common.security.plain.PlainLoginModule optional user_a=\"second\" user_b=\"b\";",
        )
        .unwrap();
        let users = PlainUsers::from_jaas(&config);
        assert!(users.authenticate("a", "first"));
        assert!(!users.authenticate("a", "second"));
        assert!(users.authenticate("b", "b"));
    }

    #[test]
    fn debug_output_lists_names_but_no_passwords() {
        let shown = format!("{:?}", users());
        assert_eq!(shown, "PlainUsers { users: [\"admin\", \"alice\"] }");
    }
}
