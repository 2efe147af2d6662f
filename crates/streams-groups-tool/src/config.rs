//! `--command-config`: the client properties Kafka's tool passes to its Admin client.
//!
//! Only what this client can honour is read: `client.id`, `request.timeout.ms` and
//! `socket.connection.setup.timeout.ms`. `security.protocol` other than PLAINTEXT is refused
//! with a clear error, since TLS and SASL are not supported yet; other keys (including `ssl.*`
//! and `sasl.*`, which Kafka also ignores under PLAINTEXT) are ignored. `bootstrap.servers` is
//! ignored because `--bootstrap-server` wins, as in Kafka.

use std::path::Path;
use std::time::Duration;

use kcoord_client::ClientConfig;

use crate::error::CliError;
use crate::properties::parse_properties;

/// The client id used when the config file sets none.
pub const DEFAULT_CLIENT_ID: &str = "kafka-streams-groups";

/// The client config for a `--command-config` file, or the defaults without one.
pub fn client_config(path: Option<&Path>) -> Result<ClientConfig, CliError> {
    let mut config = ClientConfig::new(DEFAULT_CLIENT_ID);
    let Some(path) = path else {
        return Ok(config);
    };
    let shown = path.display();
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::Config(format!("cannot read command config file {shown}: {e}")))?;
    let properties = parse_properties(&text)
        .map_err(|e| CliError::Config(format!("command config file {shown}: {e}")))?;
    let millis = |key: &str, value: &str| {
        value
            .trim()
            .parse::<u64>()
            .map(Duration::from_millis)
            .map_err(|_| CliError::Config(format!("command config file {shown}: {key} must be a non-negative number of milliseconds, got {value:?}")))
    };
    for (key, value) in &properties {
        match key.as_str() {
            "client.id" => config.client_id = value.clone(),
            "request.timeout.ms" => config.request_timeout = millis(key, value)?,
            "socket.connection.setup.timeout.ms" => config.connect_timeout = millis(key, value)?,
            "security.protocol" if !value.trim().eq_ignore_ascii_case("PLAINTEXT") => {
                return Err(CliError::Config(format!(
                    "command config file {shown}: security.protocol={} is not supported yet (only PLAINTEXT)",
                    value.trim()
                )));
            }
            _ => {}
        }
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        std::fs::remove_file(path).ok();
        assert_eq!(client_config(None).unwrap().client_id, DEFAULT_CLIENT_ID);
    }

    #[test]
    fn security_and_bad_values_are_clear_errors() {
        let path = write("ssl", "security.protocol=SASL_SSL\n");
        let err = client_config(Some(&path)).unwrap_err().to_string();
        assert!(
            err.ends_with("security.protocol=SASL_SSL is not supported yet (only PLAINTEXT)"),
            "{err}"
        );
        std::fs::remove_file(path).ok();

        let path = write("bad", "request.timeout.ms=soon\n");
        let err = client_config(Some(&path)).unwrap_err().to_string();
        assert!(
            err.contains("request.timeout.ms must be a non-negative number of milliseconds"),
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
