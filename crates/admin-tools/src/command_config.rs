//! `--command-config FILE` (and `--command-property KEY=VALUE`): the client properties every
//! tool takes, as Kafka's tools pass them to their Admin, producer or consumer client.
//!
//! Read here: `client.id`, `request.timeout.ms`, `socket.connection.setup.timeout.ms`, and
//! `security.protocol` with its `sasl.*` and `ssl.*` keys (see
//! [`kcoord_client::SecurityConfig::from_properties`]); each tool may read a few more of its
//! own (`default.api.timeout.ms`). Other keys are ignored, as Kafka ignores keys its client
//! does not define.

use std::collections::BTreeMap;

use kcoord_client::broker::BrokerProperties;
use kcoord_client::ClientConfig;

/// The properties block of each tool's `--help`.
pub const HELP: &str = "\
Client properties (--command-config FILE, a Java .properties file):
  client.id, request.timeout.ms, socket.connection.setup.timeout.ms
  security.protocol=PLAINTEXT|SASL_PLAINTEXT|SSL|SASL_SSL
  sasl.mechanism=PLAIN|SCRAM-SHA-256|SCRAM-SHA-512
  sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\
      username=\"alice\" password=\"alice-secret\";   (or ...scram.ScramLoginModule)
  sasl.username / sasl.password                     (librdkafka's form of the same)
  ssl.truststore.type=PEM, ssl.truststore.location=CA.pem (or ssl.ca.location)
  ssl.keystore.type=PEM, ssl.keystore.location=KEY_AND_CHAIN.pem
      (or ssl.certificate.location + ssl.key.location)
  ssl.endpoint.identification.algorithm=https (default) or empty (no host name check)";

/// The properties of `file` (if any) with `overrides` (`key=value`, later ones winning) on
/// top, as Kafka's console tools let `--command-property` win over `--command-config`.
pub fn load_properties(
    file: Option<&str>,
    overrides: &[String],
) -> Result<BTreeMap<String, String>, String> {
    let mut properties = BTreeMap::new();
    if let Some(path) = file {
        let loaded = BrokerProperties::load(path).map_err(|e| e.to_string())?;
        properties.extend(loaded.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    }
    for pair in overrides {
        let (key, value) = pair.split_once('=').unwrap_or((pair.as_str(), ""));
        properties.insert(key.to_string(), value.to_string());
    }
    Ok(properties)
}

/// The client settings of `properties`, with `client_id` unless `client.id` is set.
pub fn client_config(
    client_id: &str,
    properties: &BTreeMap<String, String>,
) -> Result<ClientConfig, String> {
    ClientConfig::from_properties(client_id, properties).map_err(|e| e.to_string())
}

/// [`load_properties`] then [`client_config`].
pub fn load(
    client_id: &str,
    file: Option<&str>,
    overrides: &[String],
) -> Result<(ClientConfig, BTreeMap<String, String>), String> {
    let properties = load_properties(file, overrides)?;
    Ok((client_config(client_id, &properties)?, properties))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcoord_client::SecurityProtocol;

    #[test]
    fn a_file_and_overrides_make_one_client_config() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("client.properties");
        std::fs::write(
            &path,
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n\
             sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n  username=\"alice\" password=\"alice-secret\";\nclient.id=from-file\n",
        )
        .unwrap();
        let (config, properties) = load(
            "tool",
            Some(path.to_str().unwrap()),
            &["client.id=from-override".into()],
        )
        .unwrap();
        assert_eq!(config.security.protocol, SecurityProtocol::SaslPlaintext);
        assert_eq!(
            config.security.sasl.as_ref().map(|s| s.username.as_str()),
            Some("alice")
        );
        assert_eq!(config.client_id, "from-override");
        assert_eq!(properties["sasl.mechanism"], "PLAIN");

        let err = load("tool", Some("/nonexistent/client.properties"), &[]).unwrap_err();
        assert!(
            err.starts_with("cannot read /nonexistent/client.properties"),
            "{err}"
        );
        let err = load("tool", None, &["security.protocol=TLS".into()]).unwrap_err();
        assert!(
            err.starts_with("Invalid value TLS for configuration security.protocol"),
            "{err}"
        );
    }
}
