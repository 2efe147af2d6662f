//! Finding records by timestamp (ListOffsets): Kafka's `fetchOffsetByTimestamp` and
//! MAX_TIMESTAMP.

use super::{Log, TimestampOffset};
use crate::error::StorageError;
use crate::format;

impl Log {
    /// The first record at or after the log start whose timestamp is at least `timestamp`
    /// (Kafka's `fetchOffsetByTimestamp`); `None` when there is none.
    pub fn offset_for_timestamp(
        &self,
        timestamp: i64,
    ) -> Result<Option<TimestampOffset>, StorageError> {
        for s in &self.segments {
            for (i, e) in s.entries.iter().enumerate() {
                if e.max_timestamp < timestamp || e.last_offset < self.log_start_offset {
                    continue;
                }
                let bytes = s.batch_bytes(i).map_err(|err| self.io_error(err))?;
                let found =
                    format::first_record_at_or_after(&bytes, timestamp, self.log_start_offset)
                        .map_err(|reason| StorageError::Corrupt {
                            log: self.name.clone(),
                            reason,
                        })?;
                if found.is_some() {
                    return Ok(found);
                }
            }
        }
        Ok(None)
    }

    /// The record with the largest timestamp (the first of them), Kafka's MAX_TIMESTAMP.
    pub fn max_timestamp_offset(&self) -> Result<Option<TimestampOffset>, StorageError> {
        let mut best: Option<(usize, usize, i64)> = None;
        for (si, s) in self.segments.iter().enumerate() {
            for (i, e) in s.entries.iter().enumerate() {
                if e.last_offset >= self.log_start_offset
                    && best.is_none_or(|(_, _, ts)| e.max_timestamp > ts)
                {
                    best = Some((si, i, e.max_timestamp));
                }
            }
        }
        let Some((si, i, ts)) = best else {
            return Ok(None);
        };
        let bytes = self.segments[si]
            .batch_bytes(i)
            .map_err(|err| self.io_error(err))?;
        format::first_record_at_or_after(&bytes, ts, self.log_start_offset).map_err(|reason| {
            StorageError::Corrupt {
                log: self.name.clone(),
                reason,
            }
        })
    }
}
