//! A partition log's settings: Kafka's topic configs (`TopicConfig` / `LogConfig`), each
//! defaulting to its broker-level key (`log.segment.bytes`, `log.retention.ms`, ...).
//!
//! [`LogConfig::with_topic_configs`] reads the configs a topic was created with over the
//! broker's defaults and refuses a bad value with Kafka's wording, so CreateTopics can answer
//! INVALID_CONFIG before anything is recorded.

use std::collections::BTreeMap;

pub use crate::validate::TopicCompression;
use kcoord_record_batches::Compression;
pub use kcoord_record_batches::TimestampType;

/// Kafka's defaults for a topic without overrides, on a broker without overrides.
pub mod defaults {
    pub const SEGMENT_BYTES: i64 = 1024 * 1024 * 1024;
    pub const SEGMENT_MS: i64 = 7 * 24 * 60 * 60 * 1000;
    pub const RETENTION_MS: i64 = 7 * 24 * 60 * 60 * 1000;
    pub const RETENTION_BYTES: i64 = -1;
    pub const DELETE_RETENTION_MS: i64 = 24 * 60 * 60 * 1000;
    pub const MIN_COMPACTION_LAG_MS: i64 = 0;
    pub const MAX_COMPACTION_LAG_MS: i64 = i64::MAX;
    pub const MIN_CLEANABLE_DIRTY_RATIO: f64 = 0.5;
    /// `message.max.bytes`: 1 MiB plus the batch overhead Kafka allows for.
    pub const MAX_MESSAGE_BYTES: i32 = 1024 * 1024 + 12;
    pub const TIMESTAMP_BEFORE_MAX_MS: i64 = i64::MAX;
    /// Kafka 4.x: an hour into the future.
    pub const TIMESTAMP_AFTER_MAX_MS: i64 = 60 * 60 * 1000;
    pub const FLUSH_MESSAGES: i64 = i64::MAX;
    pub const FLUSH_MS: i64 = i64::MAX;
    /// The smallest `segment.bytes` Kafka accepts for a topic.
    pub const MIN_SEGMENT_BYTES: i64 = 1024 * 1024;
}

/// The settings of one partition log.
#[derive(Debug, Clone, PartialEq)]
pub struct LogConfig {
    /// `segment.bytes`: the active segment rolls before it would grow past this.
    pub segment_bytes: i64,
    /// `segment.ms`: the active segment rolls once its first batch is this old.
    pub segment_ms: i64,
    /// `retention.ms`; -1 keeps segments forever.
    pub retention_ms: i64,
    /// `retention.bytes`; -1 has no size limit.
    pub retention_bytes: i64,
    /// `cleanup.policy` contains `delete`.
    pub cleanup_delete: bool,
    /// `cleanup.policy` contains `compact`.
    pub cleanup_compact: bool,
    /// `delete.retention.ms`: how long a compacted tombstone stays readable.
    pub delete_retention_ms: i64,
    /// `min.compaction.lag.ms`: records younger than this are never compacted.
    pub min_compaction_lag_ms: i64,
    /// `max.compaction.lag.ms`.
    pub max_compaction_lag_ms: i64,
    /// `min.cleanable.dirty.ratio`.
    pub min_cleanable_dirty_ratio: f64,
    /// `max.message.bytes`: the largest batch accepted.
    pub max_message_bytes: i32,
    /// `message.timestamp.type`.
    pub timestamp_type: TimestampType,
    /// `message.timestamp.before.max.ms`.
    pub timestamp_before_max_ms: i64,
    /// `message.timestamp.after.max.ms`.
    pub timestamp_after_max_ms: i64,
    /// `flush.messages`: fsync once this many messages are unflushed (1: before every
    /// acknowledgement).
    pub flush_messages: i64,
    /// `flush.ms`: fsync once the oldest unflushed append is this old.
    pub flush_ms: i64,
    /// `compression.type`: `producer` keeps the producer's codec, a codec recompresses.
    pub compression: TopicCompression,
}

impl Default for LogConfig {
    fn default() -> Self {
        use defaults::*;
        LogConfig {
            segment_bytes: SEGMENT_BYTES,
            segment_ms: SEGMENT_MS,
            retention_ms: RETENTION_MS,
            retention_bytes: RETENTION_BYTES,
            cleanup_delete: true,
            cleanup_compact: false,
            delete_retention_ms: DELETE_RETENTION_MS,
            min_compaction_lag_ms: MIN_COMPACTION_LAG_MS,
            max_compaction_lag_ms: MAX_COMPACTION_LAG_MS,
            min_cleanable_dirty_ratio: MIN_CLEANABLE_DIRTY_RATIO,
            max_message_bytes: MAX_MESSAGE_BYTES,
            timestamp_type: TimestampType::CreateTime,
            timestamp_before_max_ms: TIMESTAMP_BEFORE_MAX_MS,
            timestamp_after_max_ms: TIMESTAMP_AFTER_MAX_MS,
            flush_messages: FLUSH_MESSAGES,
            flush_ms: FLUSH_MS,
            compression: TopicCompression::Producer,
        }
    }
}

/// A topic config Kafka would refuse: INVALID_CONFIG with this message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Invalid value {value} for configuration {key}: {reason}")]
pub struct InvalidConfig {
    pub key: String,
    pub value: String,
    pub reason: String,
}

/// A topic config's value as `LogConfig::set` reads it, refused with Kafka's wording.
struct ConfigValue<'a> {
    key: &'a str,
    value: &'a str,
}

impl ConfigValue<'_> {
    fn bad(&self, reason: &str) -> InvalidConfig {
        InvalidConfig {
            key: self.key.to_owned(),
            value: self.value.to_owned(),
            reason: reason.to_owned(),
        }
    }

    /// A LONG of at least `min`.
    fn long(&self, min: i64) -> Result<i64, InvalidConfig> {
        self.number_at_least("LONG", min)
    }

    /// An INT of at least `min`.
    fn int(&self, min: i64) -> Result<i32, InvalidConfig> {
        self.number_at_least("INT", min)
    }

    /// A number of Kafka's type `type_name` (`T`), at least `min`.
    fn number_at_least<T>(&self, type_name: &str, min: i64) -> Result<T, InvalidConfig>
    where
        T: std::str::FromStr + Copy + Into<i64>,
    {
        let v: T = self
            .value
            .trim()
            .parse()
            .map_err(|_| self.bad(&format!("Not a number of type {type_name}")))?;
        if v.into() < min {
            return Err(self.bad(&format!("Value must be at least {min}")));
        }
        Ok(v)
    }

    /// A DOUBLE from 0 to 1.
    fn ratio(&self) -> Result<f64, InvalidConfig> {
        let v: f64 = self
            .value
            .trim()
            .parse()
            .map_err(|_| self.bad("Not a number of type DOUBLE"))?;
        if !(0.0..=1.0).contains(&v) {
            return Err(self.bad("Value must be between 0 and 1"));
        }
        Ok(v)
    }

    fn timestamp_type(&self) -> Result<TimestampType, InvalidConfig> {
        match self.value.trim() {
            "CreateTime" => Ok(TimestampType::CreateTime),
            "LogAppendTime" => Ok(TimestampType::LogAppendTime),
            _ => Err(self.bad("String must be one of: CreateTime, LogAppendTime")),
        }
    }

    fn compression(&self) -> Result<TopicCompression, InvalidConfig> {
        match self.value.trim() {
            "producer" => Ok(TopicCompression::Producer),
            "uncompressed" => Ok(TopicCompression::Codec {
                codec: Compression::None,
                level: None,
            }),
            name => match Compression::from_name(name).filter(|c| *c != Compression::None) {
                Some(codec) => Ok(TopicCompression::Codec { codec, level: None }),
                None => Err(self
                    .bad("String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer")),
            },
        }
    }

    /// `cleanup.policy` as (`delete`, `compact`).
    fn cleanup_policy(&self) -> Result<(bool, bool), InvalidConfig> {
        let (mut delete, mut compact) = (false, false);
        for policy in self
            .value
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            match policy {
                "delete" => delete = true,
                "compact" => compact = true,
                _ => return Err(self.bad("String must be one of: compact, delete")),
            }
        }
        Ok((delete, compact))
    }
}

/// The topic-level config names this log reads, with the broker key each defaults from.
pub const TOPIC_CONFIGS: &[(&str, &str)] = &[
    ("cleanup.policy", "log.cleanup.policy"),
    ("compression.type", "compression.type"),
    ("delete.retention.ms", "log.cleaner.delete.retention.ms"),
    ("flush.messages", "log.flush.interval.messages"),
    ("flush.ms", "log.flush.interval.ms"),
    ("max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms"),
    ("max.message.bytes", "message.max.bytes"),
    (
        "message.timestamp.after.max.ms",
        "log.message.timestamp.after.max.ms",
    ),
    (
        "message.timestamp.before.max.ms",
        "log.message.timestamp.before.max.ms",
    ),
    ("message.timestamp.type", "log.message.timestamp.type"),
    (
        "min.cleanable.dirty.ratio",
        "log.cleaner.min.cleanable.ratio",
    ),
    ("min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms"),
    ("retention.bytes", "log.retention.bytes"),
    ("retention.ms", "log.retention.ms"),
    ("segment.bytes", "log.segment.bytes"),
    ("segment.ms", "log.roll.ms"),
];

/// Kafka 4.4's other topic configs: accepted at CreateTopics and listed by DescribeConfigs,
/// with no effect on a single node without tiered storage (config/README.md, "Partitions").
pub const OTHER_TOPIC_CONFIGS: &[(&str, &str)] = &[
    ("compression.gzip.level", "-1"),
    ("compression.lz4.level", "9"),
    ("compression.zstd.level", "3"),
    ("errors.deadletterqueue.group.enable", "false"),
    ("file.delete.delay.ms", "60000"),
    ("follower.replication.throttled.replicas", ""),
    ("index.interval.bytes", "4096"),
    ("leader.replication.throttled.replicas", ""),
    ("local.retention.bytes", "-2"),
    ("local.retention.ms", "-2"),
    ("max.decompressed.message.bytes", "2147483639"),
    ("min.insync.replicas", "1"),
    ("preallocate", "false"),
    ("remote.copy.lag.bytes", "-1"),
    ("remote.copy.lag.ms", "0"),
    ("remote.log.copy.disable", "false"),
    ("remote.log.delete.on.disable", "false"),
    ("remote.storage.enable", "false"),
    ("segment.index.bytes", "10485760"),
    ("segment.jitter.ms", "0"),
    ("unclean.leader.election.enable", "false"),
];

/// Whether Kafka knows `name` as a topic config.
pub fn is_topic_config(name: &str) -> bool {
    TOPIC_CONFIGS
        .iter()
        .chain(OTHER_TOPIC_CONFIGS)
        .any(|(k, _)| *k == name)
}

/// Kafka's check of one topic config at CreateTopics: a known name and a value of its type.
pub fn validate_topic_config(name: &str, value: &str) -> Result<(), String> {
    if !is_topic_config(name) {
        return Err(format!("Unknown topic config name: {name}"));
    }
    LogConfig::default()
        .set(name, value)
        .map_err(|e| e.to_string())
}

/// The topic config a broker-level key (`log.retention.ms`, `message.max.bytes`, ...) is the
/// default of, for the broker keys this log reads (the dynamic broker configs kcoord honours).
pub fn topic_config_of_broker_key(broker_key: &str) -> Option<&'static str> {
    TOPIC_CONFIGS
        .iter()
        .find(|(_, b)| *b == broker_key)
        .map(|(topic, _)| *topic)
}

/// Kafka's check of a broker-level log config's value (KafkaConfig's definition), with the
/// broker key in the message; `Ok(false)` for a key this log does not read.
pub fn validate_broker_log_config(broker_key: &str, value: &str) -> Result<bool, InvalidConfig> {
    let Some(topic_key) = topic_config_of_broker_key(broker_key) else {
        return Ok(false);
    };
    LogConfig::default()
        .set(topic_key, value)
        .map_err(|e| InvalidConfig {
            key: broker_key.to_owned(),
            ..e
        })?;
    Ok(true)
}

impl LogConfig {
    /// `self` (the static broker settings) overridden by dynamic broker configs, by broker key
    /// (`log.retention.ms`, ...); keys this log does not read, or values it refuses, are left
    /// alone (the controller checked them).
    pub fn with_broker_configs(&self, configs: &BTreeMap<String, String>) -> LogConfig {
        let mut c = self.clone();
        for (key, value) in configs {
            if let Some(topic_key) = topic_config_of_broker_key(key) {
                let _ = c.set(topic_key, value);
            }
        }
        c
    }

    /// `self` (the broker's defaults) overridden by a topic's configs. Keys this log does not
    /// read are left alone: the controller decides which names are legal.
    pub fn with_topic_configs(
        &self,
        configs: &BTreeMap<String, String>,
    ) -> Result<LogConfig, InvalidConfig> {
        let mut c = self.clone();
        for (key, value) in configs {
            c.set(key, value)?;
        }
        Ok(c)
    }

    /// Applies one topic-level config (`segment.bytes`, ...). Unknown keys are ignored.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), InvalidConfig> {
        let v = ConfigValue { key, value };
        match key {
            "segment.bytes" => self.segment_bytes = i64::from(v.int(defaults::MIN_SEGMENT_BYTES)?),
            "segment.ms" => self.segment_ms = v.long(1)?,
            "retention.ms" => self.retention_ms = v.long(-1)?,
            "retention.bytes" => self.retention_bytes = v.long(i64::MIN)?,
            "delete.retention.ms" => self.delete_retention_ms = v.long(0)?,
            "min.compaction.lag.ms" => self.min_compaction_lag_ms = v.long(0)?,
            "max.compaction.lag.ms" => self.max_compaction_lag_ms = v.long(1)?,
            "message.timestamp.before.max.ms" => self.timestamp_before_max_ms = v.long(0)?,
            "message.timestamp.after.max.ms" => self.timestamp_after_max_ms = v.long(0)?,
            "flush.messages" => self.flush_messages = v.long(1)?,
            "flush.ms" => self.flush_ms = v.long(0)?,
            "max.message.bytes" => self.max_message_bytes = v.int(0)?,
            "min.cleanable.dirty.ratio" => self.min_cleanable_dirty_ratio = v.ratio()?,
            "message.timestamp.type" => self.timestamp_type = v.timestamp_type()?,
            "compression.type" => self.compression = v.compression()?,
            "cleanup.policy" => (self.cleanup_delete, self.cleanup_compact) = v.cleanup_policy()?,
            _ => {}
        }
        Ok(())
    }

    /// The value of a topic-level config as DescribeConfigs shows it.
    pub fn value_of(&self, key: &str) -> Option<String> {
        Some(match key {
            "segment.bytes" => self.segment_bytes.to_string(),
            "segment.ms" => self.segment_ms.to_string(),
            "retention.ms" => self.retention_ms.to_string(),
            "retention.bytes" => self.retention_bytes.to_string(),
            "delete.retention.ms" => self.delete_retention_ms.to_string(),
            "min.compaction.lag.ms" => self.min_compaction_lag_ms.to_string(),
            "max.compaction.lag.ms" => self.max_compaction_lag_ms.to_string(),
            "message.timestamp.before.max.ms" => self.timestamp_before_max_ms.to_string(),
            "message.timestamp.after.max.ms" => self.timestamp_after_max_ms.to_string(),
            "flush.messages" => self.flush_messages.to_string(),
            "flush.ms" => self.flush_ms.to_string(),
            "max.message.bytes" => self.max_message_bytes.to_string(),
            "min.cleanable.dirty.ratio" => self.min_cleanable_dirty_ratio.to_string(),
            "message.timestamp.type" => self.timestamp_type.name().to_owned(),
            "compression.type" => match self.compression {
                TopicCompression::Producer => "producer".to_owned(),
                TopicCompression::Codec {
                    codec: Compression::None,
                    ..
                } => "uncompressed".to_owned(),
                TopicCompression::Codec { codec, .. } => codec.name().to_owned(),
            },
            "cleanup.policy" => match (self.cleanup_delete, self.cleanup_compact) {
                (true, true) => "compact,delete".to_owned(),
                (false, true) => "compact".to_owned(),
                (true, false) => "delete".to_owned(),
                (false, false) => String::new(),
            },
            _ => return None,
        })
    }

    /// What a produced batch is checked against.
    pub fn validation(&self) -> crate::validate::ValidationConfig {
        crate::validate::ValidationConfig {
            max_message_bytes: self.max_message_bytes,
            timestamp_type: self.timestamp_type,
            timestamp_before_max_ms: self.timestamp_before_max_ms,
            timestamp_after_max_ms: self.timestamp_after_max_ms,
            compacted: self.cleanup_compact,
            compression: self.compression,
            segment_bytes: i32::try_from(self.segment_bytes).unwrap_or(i32::MAX),
            ..crate::validate::ValidationConfig::default()
        }
    }

    /// `retention.ms` in effect: Kafka applies time retention only with the delete policy.
    pub fn time_retention(&self) -> Option<i64> {
        (self.cleanup_delete && self.retention_ms >= 0).then_some(self.retention_ms)
    }

    /// `retention.bytes` in effect.
    pub fn size_retention(&self) -> Option<i64> {
        (self.cleanup_delete && self.retention_bytes >= 0).then_some(self.retention_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn topic_configs_override_the_broker_defaults() {
        let broker = LogConfig {
            retention_ms: 1000,
            ..LogConfig::default()
        };
        let c = broker
            .with_topic_configs(&configs(&[
                ("cleanup.policy", "compact"),
                ("segment.bytes", "1048576"),
                ("message.timestamp.type", "LogAppendTime"),
                ("unknown.key", "x"),
            ]))
            .unwrap();
        assert!(c.cleanup_compact && !c.cleanup_delete);
        assert_eq!(c.segment_bytes, 1_048_576);
        assert_eq!(c.retention_ms, 1000);
        assert_eq!(c.timestamp_type, TimestampType::LogAppendTime);
        assert_eq!(
            c.time_retention(),
            None,
            "no time retention without the delete policy"
        );
        assert_eq!(c.value_of("cleanup.policy").as_deref(), Some("compact"));
        assert_eq!(LogConfig::default().max_message_bytes, 1_048_588);
    }

    #[test]
    fn broker_keys_map_to_their_topic_configs() {
        assert_eq!(
            topic_config_of_broker_key("log.retention.ms"),
            Some("retention.ms")
        );
        assert_eq!(
            topic_config_of_broker_key("log.roll.ms"),
            Some("segment.ms")
        );
        assert_eq!(topic_config_of_broker_key("log.retention.hours"), None);
        assert_eq!(validate_broker_log_config("num.io.threads", "8"), Ok(false));
        assert_eq!(
            validate_broker_log_config("log.retention.ms", "soon")
                .unwrap_err()
                .to_string(),
            "Invalid value soon for configuration log.retention.ms: Not a number of type LONG"
        );
        let c = LogConfig::default().with_broker_configs(&configs(&[
            ("log.retention.ms", "5"),
            ("log.cleanup.policy", "compact"),
            ("num.io.threads", "8"),
        ]));
        assert_eq!((c.retention_ms, c.cleanup_compact), (5, true));
    }

    #[test]
    fn create_topics_checks_names_and_values() {
        assert_eq!(validate_topic_config("retention.ms", "-1"), Ok(()));
        assert_eq!(
            validate_topic_config("min.insync.replicas", "2"),
            Ok(()),
            "known, without effect here"
        );
        assert_eq!(
            validate_topic_config("retention.mss", "1").unwrap_err(),
            "Unknown topic config name: retention.mss"
        );
        assert!(validate_topic_config("segment.ms", "0").is_err());
    }

    #[test]
    fn bad_values_are_refused_with_kafka_wording() {
        let e = LogConfig::default()
            .with_topic_configs(&configs(&[("segment.bytes", "10")]))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Invalid value 10 for configuration segment.bytes: Value must be at least 1048576"
        );
        let e = LogConfig::default()
            .with_topic_configs(&configs(&[("cleanup.policy", "keep")]))
            .unwrap_err();
        assert_eq!(e.key, "cleanup.policy");
        assert!(LogConfig::default()
            .with_topic_configs(&configs(&[("retention.ms", "soon")]))
            .is_err());
    }
}
