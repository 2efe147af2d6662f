//! `authorizer.class.name`, `super.users` and `allow.everyone.if.no.acl.found`: whether
//! requests are authorized, and by what (config/README.md, "Authorization").

use kcoord_acl::{AuthorizerConfig, ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG, SUPER_USERS_CONFIG};

use super::{ConfigError, Reader};

/// Kafka's name of its ACL authorizer (KRaft), which names kcoord's built-in one too.
pub const STANDARD_AUTHORIZER: &str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

/// The authorizers `authorizer.class.name` may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthorizerKind {
    /// Kafka's StandardAuthorizer semantics over the ACLs of the metadata log.
    Standard,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorizerSettings {
    /// `None` (the key unset or empty, as in Kafka): every request is allowed.
    pub kind: Option<AuthorizerKind>,
    /// `super.users` and `allow.everyone.if.no.acl.found`, read (and validated) whether or not
    /// an authorizer is configured, as a file written for Kafka may set them either way.
    pub config: AuthorizerConfig,
}

pub(super) fn read(r: &Reader<'_>) -> Result<AuthorizerSettings, ConfigError> {
    let kind = r.get("authorizer.class.name", None, kind)?;
    let super_users = r.get(SUPER_USERS_CONFIG, None, |v| Ok(Some(v.to_owned())))?;
    let allow_everyone = r.get(ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG, None, |v| {
        Ok(Some(v.to_owned()))
    })?;
    let config = AuthorizerConfig::from_config(super_users.as_deref(), allow_everyone.as_deref())
        .map_err(|e| r.blame(&[SUPER_USERS_CONFIG], e.to_string()))?;
    Ok(AuthorizerSettings { kind, config })
}

fn kind(raw: &str) -> Result<Option<AuthorizerKind>, String> {
    match raw.trim() {
        "" => Ok(None),
        STANDARD_AUTHORIZER => Ok(Some(AuthorizerKind::Standard)),
        other => Err(format!(
            "unknown authorizer \"{other}\": kcoord has one, {STANDARD_AUTHORIZER} (Kafka's ACL \
             authorizer, with its semantics); leave the key unset or empty for none"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn parse(extra: &str) -> Result<Config, ConfigError> {
        Config::parse(
            "a.properties",
            &format!(
                "node.id=1\nlisteners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n{extra}"
            ),
        )
    }

    #[test]
    fn no_authorizer_by_default_or_when_the_key_is_empty() {
        for extra in ["", "authorizer.class.name=\n", "authorizer.class.name=  \n"] {
            let c = parse(extra).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(c.authorizer.kind, None, "{extra:?}");
        }
    }

    #[test]
    fn kafkas_standard_authorizer_name_selects_the_built_in_one_with_its_settings() {
        let c = parse(&format!(
            "authorizer.class.name={STANDARD_AUTHORIZER}\nsuper.users=User:admin;User:broker\n\
             allow.everyone.if.no.acl.found=true\n"
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.authorizer.kind, Some(AuthorizerKind::Standard));
        let mut supers: Vec<_> = c.authorizer.config.super_users.iter().cloned().collect();
        supers.sort();
        assert_eq!(supers, ["User:admin", "User:broker"]);
        assert!(c.authorizer.config.allow_everyone_if_no_acl_found);
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    }

    #[test]
    fn an_unknown_authorizer_is_a_configuration_error_naming_the_key_and_the_known_one() {
        let e = parse("authorizer.class.name=kafka.security.authorizer.AclAuthorizer\n")
            .expect_err("refused")
            .to_string();
        assert!(e.contains("authorizer.class.name"), "{e}");
        assert!(e.contains(STANDARD_AUTHORIZER), "{e}");
    }

    #[test]
    fn a_malformed_super_user_is_a_configuration_error() {
        let e = parse("super.users=admin\n")
            .expect_err("refused")
            .to_string();
        assert!(e.contains("super.users"), "{e}");
    }
}
