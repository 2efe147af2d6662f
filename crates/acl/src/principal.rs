//! Kafka's `KafkaPrincipal`: a principal type and a name, written `Type:name`.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

/// The principal type of users (`KafkaPrincipal.USER_TYPE`).
pub const USER_TYPE: &str = "User";

/// The ACL principal that matches every session principal. Only the `User` type has a wildcard.
pub const WILDCARD_PRINCIPAL: &str = "User:*";

/// An authenticated identity. Equality is by type and name, as Kafka's `equals`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KafkaPrincipal {
    pub principal_type: String,
    pub name: String,
}

/// A principal string that is not `type:name`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("expected a string in format principalType:principalName but got {0}")]
pub struct MalformedPrincipal(pub String);

impl KafkaPrincipal {
    pub fn new(principal_type: impl Into<String>, name: impl Into<String>) -> Self {
        KafkaPrincipal {
            principal_type: principal_type.into(),
            name: name.into(),
        }
    }

    /// `User:<name>`.
    pub fn user(name: impl Into<String>) -> Self {
        KafkaPrincipal::new(USER_TYPE, name)
    }

    /// `User:ANONYMOUS`, the principal of an unauthenticated connection.
    pub fn anonymous() -> Self {
        KafkaPrincipal::user("ANONYMOUS")
    }

    /// Kafka's `SecurityUtils.parseKafkaPrincipal`: split at the first `:`. Either side may be
    /// empty (`User:` and `:bob` parse); only a string without `:` is refused.
    pub fn parse(text: &str) -> Result<KafkaPrincipal, MalformedPrincipal> {
        split_principal(text)
            .map(|(principal_type, name)| KafkaPrincipal::new(principal_type, name))
            .ok_or_else(|| MalformedPrincipal(text.to_owned()))
    }

    /// Whether `text` equals this principal's string form, without building that string.
    pub fn is_written_as(&self, text: &str) -> bool {
        text.len() == self.principal_type.len() + 1 + self.name.len()
            && text
                .strip_prefix(self.principal_type.as_str())
                .and_then(|rest| rest.strip_prefix(':'))
                .is_some_and(|name| name == self.name)
    }
}

/// `text` split at its first `:`, as Kafka splits principal strings.
pub(crate) fn split_principal(text: &str) -> Option<(&str, &str)> {
    text.split_once(':')
}

impl FromStr for KafkaPrincipal {
    type Err = MalformedPrincipal;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        KafkaPrincipal::parse(text)
    }
}

impl fmt::Display for KafkaPrincipal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.principal_type, self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_principal_string_splits_at_the_first_colon() {
        let principal = KafkaPrincipal::parse("User:CN=a:b,O=c").unwrap();
        assert_eq!(principal.principal_type, "User");
        assert_eq!(principal.name, "CN=a:b,O=c");
    }

    #[test]
    fn empty_type_or_empty_name_still_parse() {
        assert_eq!(
            KafkaPrincipal::parse("User:").unwrap(),
            KafkaPrincipal::user("")
        );
        assert_eq!(
            KafkaPrincipal::parse(":bob").unwrap(),
            KafkaPrincipal::new("", "bob")
        );
        assert_eq!(
            KafkaPrincipal::parse("Group:x").unwrap(),
            KafkaPrincipal::new("Group", "x")
        );
    }

    #[test]
    fn a_string_without_a_colon_is_refused_with_kafkas_message() {
        let error = KafkaPrincipal::parse("alice").unwrap_err();
        assert_eq!(
            error.to_string(),
            "expected a string in format principalType:principalName but got alice"
        );
        assert!(KafkaPrincipal::parse("").is_err());
    }

    #[test]
    fn the_string_form_is_type_colon_name() {
        assert_eq!(KafkaPrincipal::user("alice").to_string(), "User:alice");
        assert_eq!(KafkaPrincipal::anonymous().to_string(), "User:ANONYMOUS");
        assert!(KafkaPrincipal::user("alice").is_written_as("User:alice"));
        assert!(!KafkaPrincipal::user("alice").is_written_as("User:alice "));
        assert!(!KafkaPrincipal::user("alice").is_written_as("user:alice"));
        assert!(!KafkaPrincipal::user("alice").is_written_as("Useralice"));
        assert!(KafkaPrincipal::new("a:b", "c").is_written_as("a:b:c"));
    }
}
