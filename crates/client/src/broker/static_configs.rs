//! The static configs a broker reports in BrokerRegistration v6 (KIP-1326): every key of its
//! `server.properties`, plus Kafka's default for each key of [`DEFAULT_CONFIGS`] the file
//! leaves out, minus every sensitive config.
//!
//! # What counts as sensitive
//!
//! A config is dropped when [`is_sensitive_config`] says so, which is when its name:
//!
//! 1. is, or ends with `.` followed by, one of [`PASSWORD_CONFIGS`]: every config Apache Kafka
//!    (trunk `d79bd502`) defines with `ConfigDef.Type.PASSWORD` for a broker, plus the
//!    password-typed configs that older Kafka releases defined and that an old
//!    `server.properties` may still carry. The suffix rule covers the listener-prefixed and
//!    mechanism-prefixed forms Kafka accepts (`listener.name.<listener>.ssl.key.password`,
//!    `listener.name.<listener>.<mechanism>.sasl.jaas.config`) and any other prefix
//!    (`zookeeper.ssl.keystore.password`, remote storage `rsm.config.` plugins);
//! 2. has a last segment ending in `password` (`*.password`, `*password`);
//! 3. has a segment containing `secret` (`*.secret*`, `*secret*.*`);
//! 4. has a segment containing `passphrase`;
//! 5. ends with `jaas.config`.
//!
//! Matching ignores case. Kafka itself treats a config whose type it cannot find as maybe
//! sensitive; kcoord does not carry Kafka's whole `ConfigDef`, so instead it sends the keys it
//! does not know unless a rule above matches (KIP-1326 asks for every non-sensitive static
//! config). Secrets named against these conventions would be sent: name them `*.password` or
//! `*secret*`, or keep them out of the file (config providers, `${file:...}`).
use std::collections::BTreeMap;

use super::properties::BrokerProperties;

/// The broker configs Kafka types as PASSWORD: `SslConfigs`, `BrokerSecurityConfigs`,
/// `SaslConfigs` and `DelegationTokenManagerConfigs` in trunk, then the ones removed in 4.0
/// (`delegation.token.master.key`, `password.encoder.secret`, `password.encoder.old.secret`,
/// and the ZooKeeper client's `zookeeper.ssl.*.password`).
pub const PASSWORD_CONFIGS: &[&str] = &[
    "ssl.key.password",
    "ssl.keystore.password",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
    "sasl.jaas.config",
    "sasl.oauthbearer.client.credentials.client.secret",
    "sasl.oauthbearer.assertion.private.key.passphrase",
    "delegation.token.secret.key",
    // Removed in Kafka 4.0, still sensitive where an old file has them.
    "delegation.token.master.key",
    "password.encoder.secret",
    "password.encoder.old.secret",
    "zookeeper.ssl.keystore.password",
    "zookeeper.ssl.truststore.password",
];

/// Whether a config must never leave the broker (see the module documentation for the rules).
pub fn is_sensitive_config(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    if PASSWORD_CONFIGS
        .iter()
        .any(|p| name == *p || name.ends_with(&format!(".{p}")))
    {
        return true;
    }
    let last = name.rsplit('.').next().unwrap_or(&name);
    last.ends_with("password")
        || name
            .split('.')
            .any(|segment| segment.contains("secret") || segment.contains("passphrase"))
        || name.ends_with("jaas.config")
}

/// Kafka's defaults (trunk `d79bd502`) for the broker configs reported even when the file
/// leaves them out, as Kafka's `KafkaConfig` would hold them. `None` is a null default.
pub const DEFAULT_CONFIGS: &[(&str, Option<&str>)] = &[
    ("advertised.listeners", None),
    ("auto.create.topics.enable", Some("true")),
    ("auto.leader.rebalance.enable", Some("true")),
    ("background.threads", Some("10")),
    ("broker.heartbeat.interval.ms", Some("2000")),
    ("broker.rack", None),
    ("broker.session.timeout.ms", Some("9000")),
    ("compression.type", Some("producer")),
    ("connections.max.idle.ms", Some("600000")),
    ("controlled.shutdown.enable", Some("true")),
    ("controller.listener.names", None),
    ("default.replication.factor", Some("1")),
    ("delete.topic.enable", Some("true")),
    ("group.initial.rebalance.delay.ms", Some("3000")),
    ("group.max.session.timeout.ms", Some("1800000")),
    ("group.min.session.timeout.ms", Some("6000")),
    ("inter.broker.listener.name", None),
    (
        "listener.security.protocol.map",
        Some("PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"),
    ),
    ("listeners", Some("PLAINTEXT://:9092")),
    ("log.cleaner.enable", Some("true")),
    ("log.cleanup.policy", Some("delete")),
    ("log.dir", Some("/tmp/kafka-logs")),
    ("log.dirs", None),
    ("log.message.timestamp.type", Some("CreateTime")),
    ("log.retention.bytes", Some("-1")),
    ("log.retention.check.interval.ms", Some("300000")),
    ("log.retention.hours", Some("168")),
    ("log.segment.bytes", Some("1073741824")),
    ("max.connections.per.ip", Some("2147483647")),
    ("message.max.bytes", Some("1048588")),
    ("metadata.log.dir", None),
    ("min.insync.replicas", Some("1")),
    ("num.io.threads", Some("8")),
    ("num.network.threads", Some("3")),
    ("num.partitions", Some("1")),
    ("num.recovery.threads.per.data.dir", Some("2")),
    ("num.replica.fetchers", Some("1")),
    ("offsets.retention.minutes", Some("10080")),
    ("offsets.topic.num.partitions", Some("50")),
    ("offsets.topic.replication.factor", Some("3")),
    ("queued.max.requests", Some("500")),
    ("replica.fetch.max.bytes", Some("1048576")),
    ("replica.lag.time.max.ms", Some("30000")),
    ("sasl.enabled.mechanisms", Some("GSSAPI")),
    ("socket.receive.buffer.bytes", Some("102400")),
    ("socket.request.max.bytes", Some("104857600")),
    ("socket.send.buffer.bytes", Some("102400")),
    ("ssl.client.auth", Some("none")),
    ("ssl.keystore.type", Some("JKS")),
    ("ssl.protocol", Some("TLSv1.3")),
    ("ssl.truststore.type", Some("JKS")),
    ("transaction.state.log.min.isr", Some("2")),
    ("transaction.state.log.replication.factor", Some("3")),
    ("unclean.leader.election.enable", Some("false")),
];

/// The broker's static configs as KIP-1326 reports them: the file's keys and values, Kafka's
/// defaults for the [`DEFAULT_CONFIGS`] it leaves out, and nothing sensitive.
pub fn collect_static_configs(properties: &BrokerProperties) -> BTreeMap<String, Option<String>> {
    let mut configs: BTreeMap<String, Option<String>> = DEFAULT_CONFIGS
        .iter()
        .map(|(name, value)| (name.to_string(), value.map(str::to_string)))
        .collect();
    for (name, value) in properties.iter() {
        configs.insert(name.to_string(), Some(value.to_string()));
    }
    configs.retain(|name, _| !is_sensitive_config(name));
    configs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_password_typed_config_is_sensitive_with_any_prefix() {
        for name in PASSWORD_CONFIGS {
            assert!(is_sensitive_config(name), "{name}");
            assert!(
                is_sensitive_config(&format!("listener.name.internal.{name}")),
                "listener-prefixed {name}"
            );
            assert!(
                is_sensitive_config(&format!("listener.name.sasl_ssl.plain.{name}")),
                "mechanism-prefixed {name}"
            );
            assert!(
                is_sensitive_config(&name.to_ascii_uppercase()),
                "upper-case {name}"
            );
        }
    }

    #[test]
    fn naming_conventions_of_secrets_are_sensitive() {
        for name in [
            "my.plugin.password",
            "rsm.config.storage.adminpassword",
            "rsm.config.s3.secret.access.key",
            "rsm.config.client.secretkey",
            "authorizer.ldap.bind.secret",
            "custom.key.passphrase",
            "listener.name.client.scram-sha-256.sasl.jaas.config",
            "kafkaserver.jaas.config",
        ] {
            assert!(is_sensitive_config(name), "{name}");
        }
    }

    #[test]
    fn ordinary_configs_including_store_locations_are_not_sensitive() {
        for name in [
            "ssl.keystore.location",
            "ssl.keystore.type",
            "ssl.truststore.location",
            "listener.name.internal.ssl.keystore.location",
            "sasl.oauthbearer.client.credentials.client.id",
            "sasl.oauthbearer.assertion.private.key.file",
            "sasl.enabled.mechanisms",
            "delegation.token.max.lifetime.ms",
            "password.encoder.iterations",
            "log.dirs",
            "node.id",
        ] {
            assert!(!is_sensitive_config(name), "{name}");
        }
    }

    #[test]
    fn the_file_overrides_defaults_and_sensitive_keys_never_appear() {
        let props: BrokerProperties = [
            ("num.io.threads", "16"),
            ("node.id", "1"),
            ("my.custom.setting", "x"),
            ("ssl.keystore.password", "hunter2"),
            ("listener.name.internal.ssl.key.password", "hunter2"),
            (
                "listener.name.client.plain.sasl.jaas.config",
                "org.apache.kafka.common.security.plain.PlainLoginModule required;",
            ),
            ("password.encoder.secret", "hunter2"),
        ]
        .into_iter()
        .collect();
        let configs = collect_static_configs(&props);
        assert_eq!(configs.get("num.io.threads"), Some(&Some("16".to_string())));
        assert_eq!(
            configs.get("num.network.threads"),
            Some(&Some("3".to_string())),
            "a default"
        );
        assert_eq!(configs.get("broker.rack"), Some(&None), "a null default");
        assert_eq!(
            configs.get("my.custom.setting"),
            Some(&Some("x".to_string()))
        );
        assert!(configs.keys().all(|k| !is_sensitive_config(k)));
        assert!(configs.values().flatten().all(|v| !v.contains("hunter2")));
        assert_eq!(configs.len(), DEFAULT_CONFIGS.len() + 2);
    }
}
