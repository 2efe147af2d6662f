//! The data plane's broker keys (config/README.md): where partitions are stored (`log.dirs`;
//! unset keeps them in memory), the broker-level defaults of every topic config
//! (`log.segment.bytes`, `log.retention.ms`, `message.max.bytes`, ...), the background
//! intervals, idempotent producers and fetch sessions.

use std::path::PathBuf;

use kcoord_storage::log_config::TOPIC_CONFIGS;
use kcoord_storage::LogConfig;

use super::values::{int_in, optional_string};
use super::{ConfigError, Reader};

/// Kafka's `log.retention.check.interval.ms` default (five minutes).
pub const DEFAULT_RETENTION_CHECK_INTERVAL_MS: i64 = 300_000;
/// Kafka's `log.cleaner.backoff.ms` default.
pub const DEFAULT_CLEANER_BACKOFF_MS: i64 = 15_000;
/// Kafka's `producer.id.expiration.check.interval.ms` default (ten minutes).
pub const DEFAULT_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS: i64 = 600_000;
/// Kafka's `max.incremental.fetch.session.cache.slots` default.
pub const DEFAULT_FETCH_SESSION_CACHE_SLOTS: i32 = 1000;
/// Kafka's `fetch.max.bytes` default (55 MiB): the most one Fetch response carries.
pub const DEFAULT_FETCH_MAX_BYTES: i32 = 57_671_680;

#[derive(Debug, Clone, PartialEq)]
pub struct LogSettings {
    /// `log.dirs` (or `log.dir`); empty keeps every partition in memory.
    pub log_dirs: Vec<PathBuf>,
    /// Every topic's settings before its own configs apply.
    pub defaults: LogConfig,
    /// `log.flush.scheduler.interval.ms`: how often `flush.ms` is checked; `i64::MAX` never.
    pub flush_scheduler_interval_ms: i64,
    /// `log.retention.check.interval.ms`.
    pub retention_check_interval_ms: i64,
    /// `log.cleaner.enable`.
    pub cleaner_enable: bool,
    /// `log.cleaner.backoff.ms`: how often compacted topics are checked.
    pub cleaner_backoff_ms: i64,
    /// `producer.id.expiration.ms`.
    pub producer_id_expiration_ms: i64,
    /// `producer.id.expiration.check.interval.ms`.
    pub producer_id_expiration_check_interval_ms: i64,
    /// `max.incremental.fetch.session.cache.slots`.
    pub fetch_session_cache_slots: usize,
    /// `fetch.max.bytes`.
    pub fetch_max_bytes: i32,
}

impl Default for LogSettings {
    fn default() -> Self {
        LogSettings {
            log_dirs: Vec::new(),
            defaults: LogConfig::default(),
            flush_scheduler_interval_ms: i64::MAX,
            retention_check_interval_ms: DEFAULT_RETENTION_CHECK_INTERVAL_MS,
            cleaner_enable: true,
            cleaner_backoff_ms: DEFAULT_CLEANER_BACKOFF_MS,
            producer_id_expiration_ms:
                kcoord_storage::producer_state::DEFAULT_PRODUCER_ID_EXPIRATION_MS,
            producer_id_expiration_check_interval_ms:
                DEFAULT_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS,
            fetch_session_cache_slots: DEFAULT_FETCH_SESSION_CACHE_SLOTS as usize,
            fetch_max_bytes: DEFAULT_FETCH_MAX_BYTES,
        }
    }
}

impl LogSettings {
    pub fn in_memory(&self) -> bool {
        self.log_dirs.is_empty()
    }
}

/// Broker keys Kafka spells with a coarser unit too, finest first: the first one set wins.
const WITH_UNITS: &[(&str, &[(&str, i64)])] = &[
    (
        "retention.ms",
        &[
            ("log.retention.ms", 1),
            ("log.retention.minutes", 60_000),
            ("log.retention.hours", 3_600_000),
        ],
    ),
    (
        "segment.ms",
        &[("log.roll.ms", 1), ("log.roll.hours", 3_600_000)],
    ),
];

pub(super) fn read(r: &Reader<'_>) -> Result<LogSettings, ConfigError> {
    let d = LogSettings::default();
    let dirs = |v: &str| -> Result<Option<Vec<PathBuf>>, String> {
        Ok(optional_string(v).map(|s| {
            s.split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(PathBuf::from)
                .collect()
        }))
    };
    let mut log_dirs = r.get("log.dirs", None, dirs)?;
    if log_dirs.is_none() {
        log_dirs = r.get("log.dir", None, dirs)?;
    }
    let mut defaults = LogConfig::default();
    for (topic_key, broker_key) in TOPIC_CONFIGS {
        if let Some((_, units)) = WITH_UNITS.iter().find(|(k, _)| k == topic_key) {
            read_with_units(r, &mut defaults, topic_key, units)?;
        } else {
            r.get(broker_key, (), |v| {
                defaults.set(topic_key, v).map_err(|e| e.reason)
            })?;
        }
    }
    let ms = |key: &str, default: i64, min: i64| r.get(key, default, |v| int_in(v, min, i64::MAX));
    Ok(LogSettings {
        log_dirs: log_dirs.unwrap_or_default(),
        defaults,
        flush_scheduler_interval_ms: ms(
            "log.flush.scheduler.interval.ms",
            d.flush_scheduler_interval_ms,
            1,
        )?,
        retention_check_interval_ms: ms(
            "log.retention.check.interval.ms",
            d.retention_check_interval_ms,
            1,
        )?,
        cleaner_enable: r.get(
            "log.cleaner.enable",
            d.cleaner_enable,
            super::values::boolean,
        )?,
        cleaner_backoff_ms: ms("log.cleaner.backoff.ms", d.cleaner_backoff_ms, 0)?,
        producer_id_expiration_ms: ms("producer.id.expiration.ms", d.producer_id_expiration_ms, 1)?,
        producer_id_expiration_check_interval_ms: ms(
            "producer.id.expiration.check.interval.ms",
            d.producer_id_expiration_check_interval_ms,
            1,
        )?,
        fetch_session_cache_slots: r.get(
            "max.incremental.fetch.session.cache.slots",
            d.fetch_session_cache_slots,
            |v| int_in(v, 0, i32::MAX).map(|n| n as usize),
        )?,
        fetch_max_bytes: r.get("fetch.max.bytes", d.fetch_max_bytes, |v| {
            int_in(v, 1024, i32::MAX)
        })?,
    })
}

fn read_with_units(
    r: &Reader<'_>,
    defaults: &mut LogConfig,
    topic_key: &str,
    units: &[(&str, i64)],
) -> Result<(), ConfigError> {
    for (key, unit) in units {
        let set = r.get(key, None, |v| {
            let n: i64 = v
                .trim()
                .parse()
                .map_err(|_| format!("expected an integer, got \"{v}\""))?;
            let value = if n < 0 { -1 } else { n.saturating_mul(*unit) };
            defaults
                .set(topic_key, &value.to_string())
                .map_err(|e| e.reason)?;
            Ok(Some(()))
        })?;
        if set.is_some() {
            return Ok(());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use kcoord_storage::TimestampType;

    fn parse(extra: &str) -> Config {
        Config::parse("test", &format!("node.id=1\n{extra}")).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn defaults_are_kafkas_and_in_memory() {
        let c = parse("");
        assert!(c.log.in_memory());
        assert_eq!(c.log.defaults.segment_bytes, 1 << 30);
        assert_eq!(c.log.defaults.retention_ms, 604_800_000);
        assert_eq!(c.log.defaults.max_message_bytes, 1_048_588);
        assert_eq!(c.log.fetch_session_cache_slots, 1000);
    }

    #[test]
    fn broker_keys_set_the_topic_defaults() {
        let c = parse(
            "log.dirs=/a, /b\nlog.segment.bytes=2097152\nlog.retention.hours=1\nlog.roll.ms=5000\nmessage.max.bytes=500\nlog.message.timestamp.type=LogAppendTime\nlog.flush.interval.messages=1\nlog.cleanup.policy=compact\n",
        );
        assert_eq!(
            c.log.log_dirs,
            vec![std::path::PathBuf::from("/a"), "/b".into()]
        );
        let d = &c.log.defaults;
        assert_eq!(
            (d.segment_bytes, d.retention_ms, d.segment_ms),
            (2_097_152, 3_600_000, 5000)
        );
        assert_eq!(d.max_message_bytes, 500);
        assert_eq!(d.timestamp_type, TimestampType::LogAppendTime);
        assert_eq!(d.flush_messages, 1);
        assert!(d.cleanup_compact && !d.cleanup_delete);
        // The finest unit wins, whatever the order in the file.
        assert_eq!(
            parse("log.retention.hours=1\nlog.retention.ms=42\n")
                .log
                .defaults
                .retention_ms,
            42
        );
        assert_eq!(
            parse("log.dir=/x\n").log.log_dirs,
            vec![std::path::PathBuf::from("/x")]
        );
    }

    #[test]
    fn bad_values_name_the_key() {
        let e = Config::parse("test", "node.id=1\nlog.segment.bytes=12\n").unwrap_err();
        assert!(e.to_string().contains("log.segment.bytes"), "{e}");
    }
}
