//! The transaction coordinator's settings: Kafka's `transaction.*` broker configs, with its
//! defaults and bounds (config/README.md, "Transactions").

use kcoord_coordinator::TransactionConfig;

use super::values::{boolean, int_in};
use super::{ConfigError, Reader};

pub(super) fn read(r: &Reader<'_>) -> Result<TransactionConfig, ConfigError> {
    let kafka = TransactionConfig::default();
    let positive = |v: &str| int_in(v, 1, i32::MAX);
    Ok(TransactionConfig {
        max_timeout_ms: r.get("transaction.max.timeout.ms", kafka.max_timeout_ms, positive)?,
        id_expiration_ms: i64::from(r.get(
            "transactional.id.expiration.ms",
            kafka.id_expiration_ms as i32,
            positive,
        )?),
        abort_timed_out_interval_ms: i64::from(r.get(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            kafka.abort_timed_out_interval_ms as i32,
            positive,
        )?),
        remove_expired_interval_ms: i64::from(r.get(
            "transaction.remove.expired.transaction.cleanup.interval.ms",
            kafka.remove_expired_interval_ms as i32,
            positive,
        )?),
        // Finalized at Kafka 4.4's level, as `streams.version` is (runtime/features.rs).
        transaction_version: kafka.transaction_version,
    })
}

/// `transaction.partition.verification.enable` (KIP-890 part 1): whether a transaction's first
/// batch in a partition is checked with the transaction coordinator. Kafka's default, true;
/// false lets a producer write outside its transaction (what Kafka's own tests do to make a
/// hanging transaction).
pub(super) fn read_partition_verification(r: &Reader<'_>) -> Result<bool, ConfigError> {
    r.get("transaction.partition.verification.enable", true, boolean)
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    #[test]
    fn transaction_settings_default_to_kafkas_and_are_read() {
        let c = Config::parse("t.properties", "node.id=1\n").unwrap();
        assert_eq!(
            c.transactions,
            kcoord_coordinator::TransactionConfig::default()
        );
        let c = Config::parse(
            "t.properties",
            "node.id=1\ntransaction.max.timeout.ms=5000\ntransaction.abort.timed.out.transaction.cleanup.interval.ms=200\n",
        )
        .unwrap();
        assert_eq!(c.transactions.max_timeout_ms, 5000);
        assert_eq!(c.transactions.abort_timed_out_interval_ms, 200);
        assert!(
            Config::parse("t.properties", "node.id=1\ntransaction.max.timeout.ms=0\n").is_err()
        );
        assert!(c.transaction_partition_verification);
        let c = Config::parse(
            "t.properties",
            "node.id=1\ntransaction.partition.verification.enable=false\n",
        )
        .unwrap();
        assert!(!c.transaction_partition_verification);
    }
}
