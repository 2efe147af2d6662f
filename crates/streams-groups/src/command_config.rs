//! `--command-config`: the client properties Kafka's tool passes to its Admin client.
//!
//! Read here through [`ClientConfig::from_properties`]: `client.id`, `request.timeout.ms`,
//! `socket.connection.setup.timeout.ms`, and `security.protocol` (`PLAINTEXT`,
//! `SASL_PLAINTEXT`, `SSL`, `SASL_SSL`) with its `sasl.*` and `ssl.*` keys (PLAIN and
//! SCRAM-SHA-256/512, PEM stores; see the README). Other keys are ignored, as Kafka ignores
//! keys its Admin client does not define; `bootstrap.servers` is ignored because
//! `--bootstrap-server` wins, as in Kafka.

use std::path::Path;

use kcoord_client::ClientConfig;

use crate::error::CliError;
use crate::properties::parse_properties;

/// The client id used when the config file sets none.
pub const DEFAULT_CLIENT_ID: &str = "kafka-streams-groups";

/// What `--help` says about the file, after the options.
pub const PROPERTIES_HELP: &str = "\
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

/// The client config for a `--command-config` file, or the defaults without one.
pub fn client_config(path: Option<&Path>) -> Result<ClientConfig, CliError> {
    let Some(path) = path else {
        return Ok(ClientConfig::new(DEFAULT_CLIENT_ID));
    };
    let shown = path.display();
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::Config(format!("cannot read command config file {shown}: {e}")))?;
    let properties = parse_properties(&text)
        .map_err(|e| CliError::Config(format!("command config file {shown}: {e}")))?;
    ClientConfig::from_properties(DEFAULT_CLIENT_ID, &properties)
        .map_err(|e| CliError::Config(format!("command config file {shown}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcoord_client::SecurityProtocol;
    use std::time::Duration;

    fn write(name: &str, text: &str) -> std::path::PathBuf {
        let path = std::env::temp_dir().join(format!(
            "kcoord-streams-groups-{}-{name}.properties",
            std::process::id()
        ));
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn reads_client_id_and_timeouts() {
        let path = write(
            "ok",
            "client.id=ops\nrequest.timeout.ms=1500\nssl.truststore.location=/ignored\nretries=3\n",
        );
        let config = client_config(Some(&path)).unwrap();
        assert_eq!(config.client_id, "ops");
        assert_eq!(config.request_timeout, Duration::from_millis(1500));
        assert_eq!(config.security.protocol, SecurityProtocol::Plaintext);
        std::fs::remove_file(path).ok();
        assert_eq!(client_config(None).unwrap().client_id, DEFAULT_CLIENT_ID);
    }

    #[test]
    fn reads_sasl_settings() {
        let path = write(
            "sasl",
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n\
             sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n    username=\"ops\" password=\"ops-secret\";\n",
        );
        let config = client_config(Some(&path)).unwrap();
        std::fs::remove_file(path).ok();
        assert_eq!(config.security.protocol, SecurityProtocol::SaslPlaintext);
        let sasl = config.security.sasl.unwrap();
        assert_eq!(
            (sasl.username.as_str(), sasl.password.as_str()),
            ("ops", "ops-secret")
        );
    }

    #[test]
    fn security_and_bad_values_are_clear_errors() {
        let path = write("ssl", "security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n");
        let err = client_config(Some(&path)).unwrap_err().to_string();
        assert!(
            err.contains("Invalid value GSSAPI for configuration sasl.mechanism: kcoord's client supports PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512"),
            "{err}"
        );
        std::fs::remove_file(path).ok();

        let path = write("bad", "request.timeout.ms=soon\n");
        let err = client_config(Some(&path)).unwrap_err().to_string();
        assert!(
            err.ends_with("Invalid value soon for configuration request.timeout.ms: Not a number of type LONG"),
            "{err}"
        );
        std::fs::remove_file(path).ok();

        let err = client_config(Some(Path::new("/nonexistent/kcoord.properties")))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("cannot read command config file /nonexistent/kcoord.properties: "),
            "{err}"
        );
    }
}
