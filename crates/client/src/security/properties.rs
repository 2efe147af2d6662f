//! Kafka's client security properties (and librdkafka's names for the same settings), read
//! into a [`SecurityConfig`]. Files named by the properties are read here, once.

use std::collections::HashMap;

use kcoord_sasl::{JaasConfig, SaslMechanism, PLAIN_LOGIN_MODULE, SCRAM_LOGIN_MODULE};

use super::tls::{self, KeySource, TrustSource};
use super::{SaslCredentials, SecurityConfig, SecurityProtocol, TlsSettings};

/// Why client properties were refused. The texts follow Kafka's `ConfigException` where it
/// has one; secrets (`sasl.jaas.config`, passwords) are never quoted.
#[derive(Debug, thiserror::Error)]
pub enum SecurityConfigError {
    #[error("Invalid value {value} for configuration {key}: {reason}")]
    InvalidValue {
        key: String,
        value: String,
        reason: String,
    },
    /// A setting the protocol needs is missing, or two settings contradict each other.
    #[error("{0}")]
    Invalid(String),
    /// A file a property names cannot be read.
    #[error("{key}: cannot read {path}: {source}")]
    Read {
        key: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A PEM store that does not hold what it must.
    #[error("{key}: {reason}")]
    Pem { key: &'static str, reason: String },
}

/// The properties, by key, with Kafka's trimming of non-secret values.
pub(crate) struct Properties {
    entries: HashMap<String, String>,
}

/// Keys whose values are secrets: shown as `[hidden]`, never trimmed (Kafka's PASSWORD type).
const SECRETS: &[&str] = &[
    "sasl.jaas.config",
    "sasl.password",
    "ssl.key.password",
    "ssl.keystore.password",
    "ssl.truststore.password",
    "ssl.keystore.key",
];

impl Properties {
    pub fn new<K: AsRef<str>, V: AsRef<str>>(
        properties: impl IntoIterator<Item = (K, V)>,
    ) -> Properties {
        Properties {
            entries: properties
                .into_iter()
                .map(|(k, v)| (k.as_ref().to_string(), v.as_ref().to_string()))
                .collect(),
        }
    }

    /// A value, trimmed unless it is a secret; an empty (or blank) value counts as unset, as
    /// Kafka reads an empty string for these keys.
    pub fn get(&self, key: &str) -> Option<&str> {
        let raw = self.entries.get(key)?;
        let value = if SECRETS.contains(&key) {
            raw.as_str()
        } else {
            raw.trim()
        };
        (!value.is_empty()).then_some(value)
    }

    /// The value as written (trimmed unless secret), empty included.
    pub fn get_raw(&self, key: &str) -> Option<&str> {
        let raw = self.entries.get(key)?;
        Some(if SECRETS.contains(&key) {
            raw.as_str()
        } else {
            raw.trim()
        })
    }

    /// The first of `keys` that is set, with its key.
    pub fn first(&self, keys: &[&'static str]) -> Option<(&'static str, &str)> {
        keys.iter()
            .find_map(|key| self.get(key).map(|value| (*key, value)))
    }
}

pub(crate) fn invalid(key: &str, value: &str, reason: impl Into<String>) -> SecurityConfigError {
    let shown = if SECRETS.contains(&key) {
        "[hidden]"
    } else {
        value
    };
    SecurityConfigError::InvalidValue {
        key: key.to_string(),
        value: shown.to_string(),
        reason: reason.into(),
    }
}

impl SecurityConfig {
    /// Reads `security.protocol` and the `sasl.*` / `ssl.*` settings it needs; other keys are
    /// ignored, and so are the SASL settings under `PLAINTEXT`/`SSL` and the TLS settings under
    /// `PLAINTEXT`/`SASL_PLAINTEXT`, as Kafka ignores them.
    ///
    /// | key | meaning |
    /// | --- | --- |
    /// | `security.protocol` | `PLAINTEXT` (default), `SASL_PLAINTEXT`, `SSL`, `SASL_SSL`, any case |
    /// | `sasl.mechanism` (librdkafka: `sasl.mechanisms`) | `PLAIN`, `SCRAM-SHA-256`, `SCRAM-SHA-512`; Kafka's default `GSSAPI` is refused |
    /// | `sasl.jaas.config` | `…PlainLoginModule required username="u" password="p";` or `…ScramLoginModule …` (with `tokenauth="true"` for a delegation token) |
    /// | `sasl.username`, `sasl.password` | librdkafka's form, used when there is no `sasl.jaas.config` |
    /// | `ssl.truststore.type` | `PEM` (absent means PEM; JKS and PKCS12 are refused) |
    /// | `ssl.truststore.location` (librdkafka: `ssl.ca.location`) | PEM file of CA certificates |
    /// | `ssl.truststore.certificates` | the same PEM inline |
    /// | `ssl.keystore.type` | `PEM` (absent means PEM) |
    /// | `ssl.keystore.location` | PEM file with the client's private key and certificate chain |
    /// | `ssl.keystore.key`, `ssl.keystore.certificate.chain` | the same inline |
    /// | `ssl.certificate.location`, `ssl.key.location` | librdkafka's: chain and key in two files |
    /// | `ssl.endpoint.identification.algorithm` | `https` (default): the server's certificate must name the host connected to; empty (or librdkafka's `none`): it need not |
    ///
    /// Without a trust store the system's CA certificates are trusted, as Kafka trusts the
    /// JVM's and librdkafka the system's.
    pub fn from_properties<K: AsRef<str>, V: AsRef<str>>(
        properties: impl IntoIterator<Item = (K, V)>,
    ) -> Result<SecurityConfig, SecurityConfigError> {
        let properties = Properties::new(properties);
        let protocol = match properties.get("security.protocol") {
            None => SecurityProtocol::Plaintext,
            Some(name) => SecurityProtocol::from_name(name).ok_or_else(|| {
                invalid(
                    "security.protocol",
                    name,
                    "String must be one of (case insensitive): PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL",
                )
            })?,
        };
        let sasl = if protocol.uses_sasl() {
            Some(sasl_credentials(&properties, protocol)?)
        } else {
            None
        };
        let tls = if protocol.uses_tls() {
            Some(tls_settings(&properties)?)
        } else {
            None
        };
        Ok(SecurityConfig {
            protocol,
            sasl,
            tls,
        })
    }
}

fn sasl_credentials(
    properties: &Properties,
    protocol: SecurityProtocol,
) -> Result<SaslCredentials, SecurityConfigError> {
    let (key, name) = properties
        .first(&["sasl.mechanism", "sasl.mechanisms"])
        .unwrap_or(("sasl.mechanism", "GSSAPI"));
    let mechanism = SaslMechanism::from_name(name).map_err(|_| {
        invalid(
            key,
            name,
            "kcoord's client supports PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 (Kafka's default is GSSAPI, so set sasl.mechanism)",
        )
    })?;
    if let Some(jaas) = properties.get("sasl.jaas.config") {
        return jaas_credentials(mechanism, jaas);
    }
    match (
        properties.get("sasl.username"),
        properties.get_raw("sasl.password"),
    ) {
        (Some(username), Some(password)) => Ok(SaslCredentials::new(mechanism, username, password)),
        _ => Err(SecurityConfigError::Invalid(format!(
            "security.protocol={protocol} needs credentials: sasl.jaas.config (Kafka's form, e.g. \
             {PLAIN_LOGIN_MODULE} required username=\"alice\" password=\"secret\";) or \
             sasl.username and sasl.password"
        ))),
    }
}

/// `username` and `password` (and `tokenauth`) of a PLAIN or SCRAM login module. Kafka's
/// client reads the credentials whatever the module (both put them in the JAAS subject), so
/// either module serves either mechanism; any other module is refused.
fn jaas_credentials(
    mechanism: SaslMechanism,
    jaas: &str,
) -> Result<SaslCredentials, SecurityConfigError> {
    let key = "sasl.jaas.config";
    let entry = JaasConfig::parse_single(jaas).map_err(|e| invalid(key, jaas, e.to_string()))?;
    if entry.login_module != PLAIN_LOGIN_MODULE && entry.login_module != SCRAM_LOGIN_MODULE {
        return Err(invalid(
            key,
            jaas,
            format!(
                "login module {} is not supported by kcoord's client: use {PLAIN_LOGIN_MODULE} or {SCRAM_LOGIN_MODULE}",
                entry.login_module
            ),
        ));
    }
    let option = |name: &str| {
        entry
            .option(name)
            .ok_or_else(|| invalid(key, jaas, format!("the login module has no {name} option")))
    };
    let mut credentials = SaslCredentials::new(mechanism, option("username")?, option("password")?);
    credentials.token_authentication = matches!(mechanism, SaslMechanism::Scram(_))
        && entry
            .option("tokenauth")
            .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    Ok(credentials)
}

fn tls_settings(properties: &Properties) -> Result<TlsSettings, SecurityConfigError> {
    for key in ["ssl.truststore.type", "ssl.keystore.type"] {
        if let Some(kind) = properties.get(key) {
            if !kind.eq_ignore_ascii_case("PEM") {
                return Err(invalid(
                    key,
                    kind,
                    "kcoord's client reads PEM stores only (convert a JKS or PKCS12 store with keytool and openssl)",
                ));
            }
        }
    }
    if properties.get("ssl.truststore.password").is_some() {
        return Err(SecurityConfigError::Invalid(
            "SSL trust store password cannot be specified for PEM format.".into(),
        ));
    }
    if properties.get("ssl.keystore.password").is_some() {
        return Err(SecurityConfigError::Invalid(
            "SSL key store password cannot be specified with PEM format, only key password may be specified".into(),
        ));
    }
    let trust = trust_source(properties)?;
    let key = key_source(properties)?;
    let verify_hostname = match properties.get_raw("ssl.endpoint.identification.algorithm") {
        None => true,
        Some(v) if v.eq_ignore_ascii_case("https") => true,
        Some(v) if v.is_empty() || v.eq_ignore_ascii_case("none") => false,
        Some(v) => {
            return Err(invalid(
                "ssl.endpoint.identification.algorithm",
                v,
                "use https (check the server's host name) or an empty value (do not)",
            ))
        }
    };
    let config = tls::client_config(trust, key, verify_hostname)?;
    Ok(TlsSettings { config })
}

fn trust_source(properties: &Properties) -> Result<TrustSource, SecurityConfigError> {
    let location = properties.first(&["ssl.truststore.location", "ssl.ca.location"]);
    match (location, properties.get("ssl.truststore.certificates")) {
        (Some(_), Some(_)) => Err(SecurityConfigError::Invalid(
            "Invalid PEM truststore configs: ssl.truststore.location and ssl.truststore.certificates cannot both be set".into(),
        )),
        (Some((key, path)), None) => Ok(TrustSource::File {
            key,
            path: path.to_string(),
        }),
        (None, Some(pem)) => Ok(TrustSource::Inline {
            key: "ssl.truststore.certificates",
            pem: pem.to_string(),
        }),
        (None, None) => Ok(TrustSource::System),
    }
}

fn key_source(properties: &Properties) -> Result<Option<KeySource>, SecurityConfigError> {
    let store = properties.get("ssl.keystore.location");
    let inline_key = properties.get("ssl.keystore.key");
    let inline_chain = properties.get("ssl.keystore.certificate.chain");
    let split = (
        properties.get("ssl.certificate.location"),
        properties.get("ssl.key.location"),
    );
    let given = [
        store.is_some(),
        inline_key.is_some() || inline_chain.is_some(),
        split.0.is_some() || split.1.is_some(),
    ];
    if given.iter().filter(|g| **g).count() > 1 {
        return Err(SecurityConfigError::Invalid(
            "Invalid PEM keystore configs: give the client's key and certificates one way only: \
             ssl.keystore.location, or ssl.keystore.key with ssl.keystore.certificate.chain, or \
             ssl.certificate.location with ssl.key.location"
                .into(),
        ));
    }
    if let Some(path) = store {
        return Ok(Some(KeySource::File {
            key: "ssl.keystore.location",
            path: path.to_string(),
        }));
    }
    match (inline_key, inline_chain) {
        (Some(key_pem), Some(chain_pem)) => {
            return Ok(Some(KeySource::Inline {
                key_pem: key_pem.to_string(),
                chain_pem: chain_pem.to_string(),
            }))
        }
        (None, None) => {}
        _ => {
            return Err(SecurityConfigError::Invalid(
                "Invalid PEM keystore configs: ssl.keystore.key and ssl.keystore.certificate.chain must be set together".into(),
            ))
        }
    }
    match split {
        (Some(chain), Some(key)) => Ok(Some(KeySource::Split {
            chain_path: chain.to_string(),
            key_path: key.to_string(),
        })),
        (None, None) => Ok(None),
        _ => Err(SecurityConfigError::Invalid(
            "ssl.certificate.location and ssl.key.location must be set together".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcoord_sasl::ScramMechanism;

    fn parse(pairs: &[(&str, &str)]) -> Result<SecurityConfig, SecurityConfigError> {
        SecurityConfig::from_properties(pairs.iter().copied())
    }

    #[test]
    fn plaintext_is_the_default_and_ignores_sasl_and_ssl_settings() {
        let config =
            parse(&[("sasl.mechanism", "GSSAPI"), ("ssl.truststore.type", "JKS")]).unwrap();
        assert_eq!(config.protocol, SecurityProtocol::Plaintext);
        assert!(config.sasl.is_none() && config.tls.is_none());
        let config = parse(&[("security.protocol", " plaintext ")]).unwrap();
        assert_eq!(config.protocol, SecurityProtocol::Plaintext);
    }

    #[test]
    fn an_unknown_protocol_is_kafkas_config_error() {
        let err = parse(&[("security.protocol", "TLS")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Invalid value TLS for configuration security.protocol: String must be one of (case insensitive): PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"
        );
    }

    #[test]
    fn jaas_configs_give_the_credentials_of_either_login_module() {
        let config = parse(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "PLAIN"),
            (
                "sasl.jaas.config",
                "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"alice\" password=\"p@ss word\";",
            ),
        ])
        .unwrap();
        assert_eq!(config.protocol, SecurityProtocol::SaslPlaintext);
        assert_eq!(
            config.sasl,
            Some(SaslCredentials::new(
                SaslMechanism::Plain,
                "alice",
                "p@ss word"
            ))
        );
        let config = parse(&[
            ("security.protocol", "sasl_plaintext"),
            ("sasl.mechanism", "SCRAM-SHA-512"),
            (
                "sasl.jaas.config",
                "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"tok\" password=\"hmac\" tokenauth=\"true\";",
            ),
        ])
        .unwrap();
        let sasl = config.sasl.unwrap();
        assert_eq!(
            sasl.mechanism,
            SaslMechanism::Scram(ScramMechanism::ScramSha512)
        );
        assert!(sasl.token_authentication);
    }

    #[test]
    fn librdkafkas_username_and_password_are_read_when_there_is_no_jaas_config() {
        let config = parse(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanisms", "SCRAM-SHA-256"),
            ("sasl.username", "bob"),
            ("sasl.password", " spaced "),
        ])
        .unwrap();
        assert_eq!(
            config.sasl,
            Some(SaslCredentials::new(
                SaslMechanism::Scram(ScramMechanism::ScramSha256),
                "bob",
                " spaced "
            ))
        );
    }

    #[test]
    fn sasl_errors_are_clear_and_never_show_the_jaas_config() {
        let sasl = ("security.protocol", "SASL_PLAINTEXT");
        let err = parse(&[sasl]).unwrap_err().to_string();
        assert!(err.starts_with("Invalid value GSSAPI for configuration sasl.mechanism: kcoord's client supports PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512"), "{err}");
        let err = parse(&[sasl, ("sasl.mechanism", "PLAIN")])
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("security.protocol=SASL_PLAINTEXT needs credentials: sasl.jaas.config"),
            "{err}"
        );
        let err = parse(&[
            sasl,
            ("sasl.mechanism", "PLAIN"),
            (
                "sasl.jaas.config",
                "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"a\" password=\"topsecret\"",
            ),
        ])
        .unwrap_err()
        .to_string();
        assert_eq!(err, "Invalid value [hidden] for configuration sasl.jaas.config: JAAS config entry not terminated by semi-colon");
        let err = parse(&[
            sasl,
            ("sasl.mechanism", "PLAIN"),
            (
                "sasl.jaas.config",
                "com.sun.security.auth.module.Krb5LoginModule required password=\"topsecret\";",
            ),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            err.contains(
                "login module com.sun.security.auth.module.Krb5LoginModule is not supported"
            ),
            "{err}"
        );
        assert!(!err.contains("topsecret"));
        let err = parse(&[
            sasl,
            ("sasl.mechanism", "PLAIN"),
            (
                "sasl.jaas.config",
                "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"a\";",
            ),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            err.ends_with("the login module has no password option"),
            "{err}"
        );
    }

    #[test]
    fn only_pem_stores_are_read() {
        let err = parse(&[
            ("security.protocol", "SSL"),
            ("ssl.truststore.type", "JKS"),
            ("ssl.truststore.location", "/x.jks"),
        ])
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("Invalid value JKS for configuration ssl.truststore.type: kcoord's client reads PEM stores only"), "{err}");
        let err = parse(&[
            ("security.protocol", "SSL"),
            ("ssl.truststore.location", "/nonexistent/ca.pem"),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("ssl.truststore.location: cannot read /nonexistent/ca.pem: "),
            "{err}"
        );
        let err = parse(&[
            ("security.protocol", "SSL"),
            ("ssl.endpoint.identification.algorithm", "ldaps"),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with(
                "Invalid value ldaps for configuration ssl.endpoint.identification.algorithm"
            ),
            "{err}"
        );
        let err = parse(&[
            ("security.protocol", "SSL"),
            ("ssl.certificate.location", "/c.pem"),
        ])
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "ssl.certificate.location and ssl.key.location must be set together"
        );
    }
}
