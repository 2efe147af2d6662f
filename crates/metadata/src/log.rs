//! The append-only, in-memory log. Records are kept encoded, exactly as a durable log would
//! hold them, so that replaying the log decodes the very bytes that were written.
use bytes::Bytes;

/// One encoded record. A tombstone has a null value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    pub offset: u64,
    /// Kafka's record type: the metadata record api key, or the coordinator record type.
    pub record_type: i16,
    /// The version the value (or, for keyless metadata records, the body) was encoded with.
    pub version: i16,
    /// The encoded key struct; `None` for metadata records, which have no key.
    pub key: Option<Bytes>,
    /// The encoded value; `None` is a tombstone.
    pub value: Option<Bytes>,
}

#[derive(Debug, Default, Clone)]
pub struct MetadataLog {
    records: Vec<LogRecord>,
}

impl MetadataLog {
    pub fn new() -> Self {
        Self::default()
    }

    /// The offset the next appended record will get.
    pub fn next_offset(&self) -> u64 {
        self.records.len() as u64
    }

    /// Appends a batch; returns the offset of its first record (Kafka's broker epoch rule uses it).
    pub fn append(&mut self, batch: impl IntoIterator<Item = (i16, i16, Option<Bytes>, Option<Bytes>)>) -> u64 {
        let first = self.next_offset();
        for (record_type, version, key, value) in batch {
            let offset = self.next_offset();
            self.records.push(LogRecord { offset, record_type, version, key, value });
        }
        first
    }

    pub fn records(&self) -> &[LogRecord] {
        &self.records
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_dense_and_batches_report_their_first_offset() {
        let mut log = MetadataLog::new();
        let first = log.append([(2, 0, None, Some(Bytes::from_static(b"a"))), (3, 0, None, Some(Bytes::from_static(b"b")))]);
        assert_eq!(first, 0);
        let second = log.append([(9, 0, None, None)]);
        assert_eq!(second, 2);
        assert_eq!(log.records().iter().map(|r| r.offset).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!(log.records()[2].value, None);
    }
}
