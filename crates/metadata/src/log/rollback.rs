//! Cutting a log back to an earlier offset, for a runtime that must undo records it applied but
//! could not make durable (or that a failing handler left behind).
use super::MetadataLog;

impl MetadataLog {
    /// A copy of this log without the records at or after `offset`, whose next offset is
    /// `offset` (or this log's, if that is lower). The copy keeps the compaction settings.
    /// O(records): meant for the rare undo, not the hot path.
    pub fn truncated(&self, offset: u64) -> MetadataLog {
        let mut copy = MetadataLog::with_compaction_floor(self.floor);
        for record in self.iter().take_while(|r| r.offset < offset) {
            copy.next_offset = record.offset;
            copy.push(
                record.record_type,
                record.version,
                record.key.map(bytes::Bytes::copy_from_slice),
                record.value.map(bytes::Bytes::copy_from_slice),
            );
        }
        copy.next_offset = offset.min(self.next_offset).max(copy.next_offset);
        copy.keyed_since_compaction = 0;
        copy.len_after_compaction = copy.len();
        copy
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    #[test]
    fn a_truncated_log_keeps_the_offsets_before_the_cut_and_continues_from_it() {
        let mut log = MetadataLog::with_compaction_floor(2);
        let key = |k: &'static [u8]| Some(Bytes::from_static(k));
        log.append([(17, 0, key(b"a"), key(b"1")), (17, 0, key(b"a"), key(b"2"))]);
        // Compacted: offset 0 is gone, offset 1 stays.
        assert_eq!(log.iter().map(|r| r.offset).collect::<Vec<_>>(), vec![1]);
        log.append([(17, 0, key(b"b"), key(b"3"))]);
        let cut = log.truncated(2);
        assert_eq!(cut.records(), log.records()[..1].to_vec());
        assert_eq!(cut.next_offset(), 2);
        let mut cut = cut;
        cut.append([(17, 0, key(b"c"), key(b"4"))]);
        assert_eq!(cut.last().map(|r| r.offset), Some(2));
        assert_eq!(log.truncated(99).records(), log.records());
        assert_eq!(log.truncated(99).next_offset(), log.next_offset());
    }
}
