//! The append-only, in-memory log, compacted as Kafka compacts `__consumer_offsets`. Records are
//! kept encoded, exactly as a durable log would hold them, so that replaying the log decodes the
//! very bytes that were written.
//!
//! # Storage
//!
//! A record is a 32-byte index entry (offset, type, version, where its bytes are) plus its key
//! and value bytes, copied back to back into shared chunks of up to [`MAX_CHUNK`] bytes (a
//! record of [`SOLO_RECORD`] bytes or more gets a chunk of its own). So a record costs no
//! allocation of its own. A compaction also stores each distinct key once: a member's
//! metadata, target and current assignment records (19, 21, 22) have the same key bytes (group
//! and member id), which would otherwise be more than half of what an idle member's records
//! hold. [`LogRecord`] is the owned form handed out; [`LogRecordRef`] the borrowed one.
//!
//! # Compaction
//!
//! Keyed records (the coordinator's: streams-group records, offset commits) are compacted:
//! only the latest record of each `(record_type, key)` is kept, and a key whose latest record is
//! a tombstone is dropped altogether. Kafka keeps such a tombstone for `delete.retention.ms` so
//! that a consumer part-way through the log still sees the delete; here nothing reads a keyed
//! log part-way (it is only replayed from the start, where nothing earlier of the key is left
//! for the tombstone to delete), so it goes at once. Keyless records (the controller's topics,
//! partitions, brokers, features) are never compacted. Survivors keep their offsets (so
//! offsets are not dense after a compaction) and their order.
//!
//! Compaction runs at the end of [`MetadataLog::append`] (and of `Store::append`), never inside
//! a batch, once the keyed records appended since the last one reach a quarter of the records
//! it left (and at least the floor, [`COMPACTION_FLOOR`] by default). A compaction visits every record, so each appended record
//! pays for at most five visits: amortized O(1) per append, never a scan per append. The log
//! then holds at most 1.25 times the records the last compaction left, plus the floor. (Kafka's
//! default `min.cleanable.dirty.ratio` of one half would let the log double between
//! compactions; a quarter keeps an idle member's share small.) A compaction stops its shard
//! for its duration: about 0.2 s for a 100,000-member shard's 370,000 records on a busy
//! 2-core machine. Old chunks are freed as they are copied, so memory does not double meanwhile.
//!
//! [`MetadataLog::heap_bytes`] tells what the log holds; 320 bytes or so per idle member of a
//! large shard (3.3 live records, its 51-byte key stored once).
//!
//! # Why replaying a compacted log gives the live state
//!
//! Each streams-group and offset record overwrites only the fields of its own key (a
//! current-assignment record all of the member's assignment fields, a group-metadata record all
//! of the group's own fields, and so on); no replay reads another key's fields. So the latest
//! record of each key decides that key's fields, whatever the order of the others. Two effects
//! do reach across keys, and compaction relies on the coordinator's record discipline (Kafka's
//! `StreamsCoordinatorRecordHelpers`, which kcoord's `records.rs` follows) for them:
//!
//! 1. **Implicit creation.** Any streams-group value record creates its group (and a member
//!    record its member) with default fields; a later tombstone of that record's key leaves the
//!    group (member) in place. Compaction may drop the creating record, so the group must be
//!    kept alive by a record that survives: the coordinator writes a group-metadata (17) value
//!    whenever it creates a group and a member-metadata (19) value whenever it creates a member,
//!    and removes them only with their tombstones.
//! 2. **Wipes.** A group-metadata tombstone removes the whole group and a member-metadata
//!    tombstone the whole member, including state other keys wrote. Compaction drops every
//!    such tombstone (superseded by the group's or member's return, or latest with nothing
//!    earlier of its key left), so a value of another key written before it that is still
//!    that key's latest record would come back. The coordinator never leaves one: a member is
//!    removed with the tombstones 22, 21, 19 (current assignment first), a group with 22*, 21*,
//!    20, 19*, 17, 23, so every key of the wiped scope has a tombstone as its latest record (or
//!    a newer value). The other tombstones only reset their own key's fields. These hold at
//!    the end of each batch, not inside one (the topology tombstone follows the group's), which
//!    is why compaction waits for the end of a batch.
//!
//! A sequence that breaks these rules (the metadata crate's arbitrary-record property test
//! writes such sequences, e.g. a member tombstone without the current-assignment tombstone)
//! replays the same uncompacted but not compacted; that test stays below the floor. If replay
//! ever reads another key's fields, this reasoning must be redone; the random-operation
//! property test in `crates/coordinator/tests/compaction.rs` checks it.
mod compaction;

use std::fmt;

use bytes::Bytes;

/// An offset below the log's next offset: offsets are never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("offset {offset} is below the log's next offset {next_offset}")]
pub struct OffsetBehind {
    pub offset: u64,
    pub next_offset: u64,
}

/// One encoded record, owned. A tombstone has a null value.
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

/// One record, borrowed from the log.
#[derive(Clone, Copy)]
pub struct LogRecordRef<'a> {
    pub offset: u64,
    pub record_type: i16,
    pub version: i16,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    /// The shared chunks holding value and key, when sealed: [`LogRecordRef::to_record`] then
    /// slices them instead of copying.
    chunk: Option<&'a Bytes>,
    key_chunk: Option<&'a Bytes>,
}

impl LogRecordRef<'_> {
    /// The owned form: slices of the log's shared chunk when it can, copies otherwise.
    pub fn to_record(&self) -> LogRecord {
        let bytes = |part: Option<&[u8]>, chunk: Option<&Bytes>| {
            part.map(|p| match chunk {
                Some(chunk) if !p.is_empty() => chunk.slice_ref(p),
                _ => Bytes::copy_from_slice(p),
            })
        };
        LogRecord {
            offset: self.offset,
            record_type: self.record_type,
            version: self.version,
            key: bytes(self.key, self.key_chunk),
            value: bytes(self.value, self.chunk),
        }
    }

    pub fn is_tombstone(&self) -> bool {
        self.key.is_some() && self.value.is_none()
    }
}

impl fmt::Debug for LogRecordRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LogRecordRef")
            .field("offset", &self.offset)
            .field("record_type", &self.record_type)
            .field("version", &self.version)
            .field("key", &self.key)
            .field("value", &self.value)
            .finish()
    }
}

impl PartialEq for LogRecordRef<'_> {
    fn eq(&self, other: &Self) -> bool {
        (
            self.offset,
            self.record_type,
            self.version,
            self.key,
            self.value,
        ) == (
            other.offset,
            other.record_type,
            other.version,
            other.key,
            other.value,
        )
    }
}

/// Keyed records appended since the last compaction below which the log never compacts: small
/// logs (tests, a shard with few groups) keep everything, and a compaction always has at least
/// this many records to pay for it.
pub const COMPACTION_FLOOR: usize = 1024;
/// A compaction runs once the keyed records appended since the last one reach this fraction
/// (1/n) of the records it left.
const COMPACT_AFTER_FRACTION: usize = 4;
/// The largest shared chunk.
pub const MAX_CHUNK: usize = 64 * 1024;
/// The first chunk; later ones grow with the log up to [`MAX_CHUNK`].
const MIN_CHUNK: usize = 1024;
/// Records at least this large get a chunk of their own, so that a chunk never wastes more than
/// this at its end.
pub const SOLO_RECORD: usize = 4 * 1024;
/// An absent key (keyless record) or value (tombstone) in an [`Entry`].
const ABSENT: u32 = u32::MAX;
/// [`Entry::key_at`] of an entry whose key bytes are its own.
const INLINE: u32 = u32::MAX;

/// Where one record is. `packed(4)` keeps it at 32 bytes (an aligned `u64` would pad it to
/// 36); fields are only ever read by value.
#[derive(Clone, Copy)]
#[repr(C, packed(4))]
struct Entry {
    offset: u64,
    chunk: u32,
    /// The record's bytes start here in the chunk: its key (when inline), then its value.
    start: u32,
    key_len: u32,
    value_len: u32,
    /// [`INLINE`], or the index of the (earlier) entry whose inline key bytes are this
    /// record's key too: set by compaction, which stores each distinct key once.
    key_at: u32,
    record_type: i16,
    version: i16,
}

impl Entry {
    fn inline_key_len(&self) -> usize {
        if self.key_len != ABSENT && self.key_at == INLINE {
            self.key_len as usize
        } else {
            0
        }
    }
}

/// Key and value bytes of every record, in chunks. Chunk ids index `chunks`; the open chunk's
/// slot there is an empty placeholder until it is sealed.
#[derive(Clone, Default)]
struct Arena {
    chunks: Vec<Bytes>,
    open: Vec<u8>,
    /// `None` until the first record that needs one.
    open_id: Option<u32>,
    /// Capacity of the sealed chunks (for [`MetadataLog::heap_bytes`]).
    sealed_bytes: usize,
}

/// A record's key or value length (or a record or chunk index) as stored. No record comes near
/// 4 GiB: the durable log refuses entries over 64 MiB when it reads them back and requests are
/// bounded by the server's frame limit; nor does a log hold 4 billion records (128 GiB of
/// index). So this is an invariant, not input validation.
fn len32(n: usize) -> u32 {
    match u32::try_from(n) {
        Ok(n) if n != ABSENT => n,
        _ => panic!("{n} is more than the metadata log can index (key and value bytes, records and chunks are counted in u32)"),
    }
}

impl Arena {
    /// Copies key (when given) and value back to back; returns (chunk, start).
    fn push(&mut self, key: Option<&[u8]>, value: Option<&[u8]>) -> (u32, u32) {
        let need = key.map_or(0, <[u8]>::len) + value.map_or(0, <[u8]>::len);
        if need == 0 {
            return (0, 0);
        }
        if need >= SOLO_RECORD {
            let mut solo = Vec::with_capacity(need);
            solo.extend_from_slice(key.unwrap_or_default());
            solo.extend_from_slice(value.unwrap_or_default());
            self.sealed_bytes += solo.capacity();
            self.chunks.push(Bytes::from(solo));
            return (len32(self.chunks.len() - 1), 0);
        }
        let open_id = match self.open_id {
            Some(id) if self.open.capacity() - self.open.len() >= need => id,
            _ => self.open_new_chunk(),
        };
        let start = len32(self.open.len());
        self.open.extend_from_slice(key.unwrap_or_default());
        self.open.extend_from_slice(value.unwrap_or_default());
        (open_id, start)
    }

    /// Seals the open chunk (if any) and opens one sized for a log of this many stored bytes.
    fn open_new_chunk(&mut self) -> u32 {
        let stored = self.sealed_bytes + self.open.len();
        if let Some(id) = self.open_id {
            let full = std::mem::take(&mut self.open);
            self.sealed_bytes += full.capacity();
            self.chunks[id as usize] = Bytes::from(full);
        }
        self.open = Vec::with_capacity((stored / 4).clamp(MIN_CHUNK, MAX_CHUNK));
        self.chunks.push(Bytes::new());
        let id = len32(self.chunks.len() - 1);
        self.open_id = Some(id);
        id
    }

    /// The chunk's bytes, and the shared buffer when it is sealed.
    fn chunk(&self, id: u32) -> (&[u8], Option<&Bytes>) {
        if self.open_id == Some(id) {
            (&self.open, None)
        } else {
            match self.chunks.get(id as usize) {
                Some(chunk) => (chunk, Some(chunk)),
                None => (&[], None),
            }
        }
    }

    /// Frees a chunk nothing will read again (during a compaction).
    fn release(&mut self, id: u32) {
        if self.open_id == Some(id) {
            self.open = Vec::new();
        } else if let Some(chunk) = self.chunks.get_mut(id as usize) {
            *chunk = Bytes::new();
        }
    }

    fn heap_bytes(&self) -> usize {
        self.sealed_bytes
            + self.open.capacity()
            + self.chunks.capacity() * std::mem::size_of::<Bytes>()
    }
}

/// The log: entries in offset order and the arena their bytes live in.
#[derive(Clone)]
pub struct MetadataLog {
    entries: Vec<Entry>,
    arena: Arena,
    next_offset: u64,
    /// Keyed records appended since the last compaction.
    keyed_since_compaction: usize,
    /// Records the last compaction left.
    len_after_compaction: usize,
    floor: usize,
    /// False for a log whose records are durable elsewhere ([`MetadataLog::offsets_only`]):
    /// appending then only hands out offsets.
    keeps_records: bool,
}

impl Default for MetadataLog {
    fn default() -> Self {
        Self::with_compaction_floor(COMPACTION_FLOOR)
    }
}

impl fmt::Debug for MetadataLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetadataLog")
            .field("records", &self.len())
            .field("next_offset", &self.next_offset)
            .finish()
    }
}

impl MetadataLog {
    pub fn new() -> Self {
        Self::default()
    }

    /// A log that compacts once at least `floor` keyed records were appended since the last
    /// compaction (and a quarter of the records it left). Tests use a small floor to compact
    /// often.
    pub fn with_compaction_floor(floor: usize) -> Self {
        MetadataLog {
            entries: Vec::new(),
            arena: Arena::default(),
            next_offset: 0,
            keyed_since_compaction: 0,
            len_after_compaction: 0,
            floor: floor.max(1),
            keeps_records: true,
        }
    }

    /// A log that keeps no records, only the offset the next one gets: the in-memory side of a
    /// log whose records are durable elsewhere (a coordinator shard's file or upstream
    /// partition, read back whenever they are needed), so that memory holds them once, as
    /// state, rather than twice.
    pub fn offsets_only(next_offset: u64) -> Self {
        MetadataLog {
            next_offset,
            keeps_records: false,
            ..Self::default()
        }
    }

    /// False for a log made by [`MetadataLog::offsets_only`].
    pub fn keeps_records(&self) -> bool {
        self.keeps_records
    }

    /// The offset the next appended record will get.
    pub fn next_offset(&self) -> u64 {
        self.next_offset
    }

    /// Appends a batch; returns the offset of its first record (Kafka's broker epoch rule uses
    /// it). Then compacts the log if it is due (see the module docs), never inside the batch:
    /// the coordinator's records are compaction-safe at batch boundaries only (deleting a
    /// group writes the topology tombstone after the group tombstone; a compaction between the
    /// two would keep the topology, which would bring the group back).
    pub fn append(
        &mut self,
        batch: impl IntoIterator<Item = (i16, i16, Option<Bytes>, Option<Bytes>)>,
    ) -> u64 {
        let first = self.next_offset;
        for (record_type, version, key, value) in batch {
            self.push(record_type, version, key, value);
        }
        self.compact_if_due();
        first
    }

    /// Appends one record without compacting: for a batch appended record by record, which
    /// calls [`MetadataLog::compact_if_due`] at its end.
    pub(crate) fn push(
        &mut self,
        record_type: i16,
        version: i16,
        key: Option<Bytes>,
        value: Option<Bytes>,
    ) {
        if !self.keeps_records {
            self.next_offset += 1;
            return;
        }
        let (chunk, start) = self.arena.push(key.as_deref(), value.as_deref());
        self.entries.push(Entry {
            offset: self.next_offset,
            chunk,
            start,
            key_len: key.as_ref().map_or(ABSENT, |k| len32(k.len())),
            value_len: value.as_ref().map_or(ABSENT, |v| len32(v.len())),
            key_at: INLINE,
            record_type,
            version,
        });
        self.next_offset += 1;
        if key.is_some() {
            self.keyed_since_compaction += 1;
        }
    }

    /// Appends one record at `offset` instead of at [`MetadataLog::next_offset`], leaving a gap
    /// of unused offsets: how a compacted log (whose surviving offsets are not dense) is read
    /// back from a file or built from a snapshot. No compaction runs; the next
    /// [`MetadataLog::append`] does it when due. Offsets only move forward, so an `offset`
    /// below `next_offset` is refused and nothing changes.
    pub fn push_at(
        &mut self,
        offset: u64,
        record_type: i16,
        version: i16,
        key: Option<Bytes>,
        value: Option<Bytes>,
    ) -> Result<(), OffsetBehind> {
        self.advance_next_offset(offset)?;
        self.push(record_type, version, key, value);
        Ok(())
    }

    /// Moves [`MetadataLog::next_offset`] forward to `next_offset` without a record: a
    /// compacted log's next offset can lie past its last record (a compaction dropped the
    /// newest records, e.g. tombstones), and a restored log must keep handing out offsets
    /// from there, never reusing one. Moving it back is refused.
    pub fn advance_next_offset(&mut self, next_offset: u64) -> Result<(), OffsetBehind> {
        if next_offset < self.next_offset {
            return Err(OffsetBehind {
                offset: next_offset,
                next_offset: self.next_offset,
            });
        }
        self.next_offset = next_offset;
        Ok(())
    }

    /// The record at index `i` of `entries` (which must be in range).
    fn view(&self, i: usize) -> LogRecordRef<'_> {
        // In range by construction; an empty slice would only ever hide a bug in this file.
        fn part(bytes: &[u8], from: usize, len: u32) -> Option<&[u8]> {
            (len != ABSENT).then(|| bytes.get(from..from + len as usize).unwrap_or_default())
        }
        let e = self.entries[i];
        let (bytes, shared) = self.arena.chunk(e.chunk);
        let start = e.start as usize;
        let (key, key_chunk) = match self.entries.get(e.key_at as usize) {
            Some(holder) if e.key_at != INLINE => {
                let (key_bytes, key_shared) = self.arena.chunk(holder.chunk);
                (
                    part(key_bytes, holder.start as usize, e.key_len),
                    key_shared,
                )
            }
            _ => (part(bytes, start, e.key_len), shared),
        };
        LogRecordRef {
            offset: e.offset,
            record_type: e.record_type,
            version: e.version,
            key,
            value: part(bytes, start + e.inline_key_len(), e.value_len),
            chunk: shared,
            key_chunk,
        }
    }

    /// Every record, oldest first.
    pub fn iter(
        &self,
    ) -> impl DoubleEndedIterator<Item = LogRecordRef<'_>> + ExactSizeIterator + '_ {
        (0..self.entries.len()).map(|i| self.view(i))
    }

    /// The records from `offset` on (all of them from the first one at or after it).
    pub fn records_from(
        &self,
        offset: u64,
    ) -> impl DoubleEndedIterator<Item = LogRecordRef<'_>> + ExactSizeIterator + '_ {
        let at = self.entries.partition_point(|e| e.offset < offset);
        (at..self.entries.len()).map(|i| self.view(i))
    }

    pub fn last(&self) -> Option<LogRecordRef<'_>> {
        self.len().checked_sub(1).map(|i| self.view(i))
    }

    /// Every record, copied out (key and value bytes are shared, not copied, except for the
    /// newest chunk's). O(records): prefer [`MetadataLog::iter`] or
    /// [`MetadataLog::records_from`].
    pub fn records(&self) -> Vec<LogRecord> {
        self.iter().map(|r| r.to_record()).collect()
    }

    /// Records held (fewer than [`MetadataLog::next_offset`] once compacted).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Heap bytes the log holds: index capacity, chunk capacities and the chunk table (not the
    /// allocator's own overhead).
    pub fn heap_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<Entry>() + self.arena.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn b(s: &'static [u8]) -> Option<Bytes> {
        Some(Bytes::from_static(s))
    }

    fn offsets(log: &MetadataLog) -> Vec<u64> {
        log.iter().map(|r| r.offset).collect()
    }

    #[test]
    fn offsets_are_dense_and_batches_report_their_first_offset() {
        let mut log = MetadataLog::new();
        let first = log.append([(2, 0, None, b(b"a")), (3, 0, None, b(b"b"))]);
        assert_eq!(first, 0);
        let second = log.append([(9, 0, None, None)]);
        assert_eq!(second, 2);
        assert_eq!(offsets(&log), vec![0, 1, 2]);
        assert_eq!(log.records()[2].value, None);
    }

    #[test]
    fn records_read_back_as_appended_in_every_form() {
        let mut log = MetadataLog::new();
        let big = Bytes::from(vec![7u8; SOLO_RECORD + 1]);
        log.append([
            (2, 1, None, b(b"topic")),
            (1, 3, b(b"key"), b(b"value")),
            (1, 3, b(b"gone"), None),
            (17, 0, b(b""), b(b"")),
            (23, 0, b(b"big"), Some(big.clone())),
        ]);
        let expected = vec![
            LogRecord {
                offset: 0,
                record_type: 2,
                version: 1,
                key: None,
                value: b(b"topic"),
            },
            LogRecord {
                offset: 1,
                record_type: 1,
                version: 3,
                key: b(b"key"),
                value: b(b"value"),
            },
            LogRecord {
                offset: 2,
                record_type: 1,
                version: 3,
                key: b(b"gone"),
                value: None,
            },
            LogRecord {
                offset: 3,
                record_type: 17,
                version: 0,
                key: b(b""),
                value: b(b""),
            },
            LogRecord {
                offset: 4,
                record_type: 23,
                version: 0,
                key: b(b"big"),
                value: Some(big),
            },
        ];
        assert_eq!(log.records(), expected);
        assert_eq!(log.last().map(|r| r.to_record()), expected.last().cloned());
        assert_eq!(
            log.records_from(3).map(|r| r.offset).collect::<Vec<_>>(),
            vec![3, 4]
        );
        assert_eq!(log.records_from(9).count(), 0);
        // Many records over many chunks, sealed ones shared, the open one copied.
        let mut many = MetadataLog::new();
        let values: Vec<Bytes> = (0..5_000u32)
            .map(|i| Bytes::from(format!("value-{i}").repeat(1 + i as usize % 7)))
            .collect();
        many.append(values.iter().map(|v| (2, 0, None, Some(v.clone()))));
        assert!(many.arena.chunks.len() > 3);
        assert_eq!(
            many.iter()
                .map(|r| r.value.map(<[u8]>::to_vec))
                .collect::<Vec<_>>(),
            values.iter().map(|v| Some(v.to_vec())).collect::<Vec<_>>()
        );
        assert_eq!(
            many.records()
                .into_iter()
                .map(|r| r.value)
                .collect::<Vec<_>>(),
            values.into_iter().map(Some).collect::<Vec<_>>()
        );
    }

    #[test]
    fn compaction_keeps_the_latest_record_of_each_key_in_order_with_its_offset() {
        let mut log = MetadataLog::new();
        log.append([
            (22, 1, b(b"g/m1"), b(b"a1")), // 0: superseded by 3
            (22, 1, b(b"g/m2"), b(b"b1")), // 1: superseded by 5
            (17, 0, b(b"g"), b(b"e1")),    // 2: superseded by 6
            (22, 1, b(b"g/m1"), b(b"a2")), // 3: latest of g/m1
            (21, 0, b(b"g/m1"), b(b"t1")), // 4: another type, same key bytes: its own key
            (22, 2, b(b"g/m2"), b(b"b2")), // 5: latest of g/m2
            (17, 0, b(b"g"), b(b"e2")),    // 6: latest of g
        ]);
        log.compact();
        assert_eq!(
            log.records(),
            vec![
                LogRecord {
                    offset: 3,
                    record_type: 22,
                    version: 1,
                    key: b(b"g/m1"),
                    value: b(b"a2")
                },
                LogRecord {
                    offset: 4,
                    record_type: 21,
                    version: 0,
                    key: b(b"g/m1"),
                    value: b(b"t1")
                },
                LogRecord {
                    offset: 5,
                    record_type: 22,
                    version: 2,
                    key: b(b"g/m2"),
                    value: b(b"b2")
                },
                LogRecord {
                    offset: 6,
                    record_type: 17,
                    version: 0,
                    key: b(b"g"),
                    value: b(b"e2")
                },
            ]
        );
        assert_eq!(log.next_offset(), 7, "offsets stay as assigned");
        assert_eq!(log.append([(17, 0, b(b"g"), b(b"e3"))]), 7);
        assert_eq!(offsets(&log), vec![3, 4, 5, 6, 7]);
    }

    #[test]
    fn a_tombstone_drops_its_key_and_itself() {
        let mut log = MetadataLog::new();
        log.append([
            (1, 3, b(b"g/t/0"), b(b"o1")),
            (1, 3, b(b"g/t/1"), b(b"o1")),
            (1, 3, b(b"g/t/0"), None),
            (1, 3, b(b"g/t/1"), None),
            (1, 3, b(b"g/t/1"), b(b"o2")), // written again after its tombstone
        ]);
        log.compact();
        assert_eq!(
            log.records(),
            vec![LogRecord {
                offset: 4,
                record_type: 1,
                version: 3,
                key: b(b"g/t/1"),
                value: b(b"o2")
            }]
        );
        log.append([(1, 3, b(b"g/t/1"), None)]);
        log.compact();
        assert!(log.is_empty());
        assert_eq!(log.next_offset(), 6);
    }

    #[test]
    fn keyless_records_are_never_compacted() {
        let mut log = MetadataLog::with_compaction_floor(2);
        for i in 0..100u8 {
            // The same type and body every time: still never "superseded".
            log.append([
                (2, 0, None, b(b"topic")),
                (3, 0, None, None),
                (17, 0, b(b"g"), Some(Bytes::from(vec![i]))),
            ]);
        }
        log.compact();
        let kept: Vec<(u64, i16)> = log.iter().map(|r| (r.offset, r.record_type)).collect();
        let mut expected: Vec<(u64, i16)> = (0..100u64)
            .flat_map(|i| [(3 * i, 2), (3 * i + 1, 3)])
            .collect();
        expected.push((299, 17));
        assert_eq!(kept, expected);
        assert_eq!(log.last().and_then(|r| r.value), Some(&[99u8][..]));
    }

    #[test]
    fn appends_compact_once_dead_records_pass_the_floor_and_stay_bounded() {
        let mut log = MetadataLog::with_compaction_floor(8);
        let keys: Vec<Bytes> = (0..100u32)
            .map(|i| Bytes::from(format!("g/member-{i}")))
            .collect();
        for round in 0..50u32 {
            for key in &keys {
                log.append([(
                    22,
                    0,
                    Some(key.clone()),
                    Some(Bytes::from(round.to_be_bytes().to_vec())),
                )]);
                // At most 1.25 times the 100 live records (plus the floor), never all 5,000.
                assert!(log.len() <= 125 + 8, "{} records held", log.len());
            }
        }
        assert_eq!(log.next_offset(), 5_000);
        log.compact();
        assert_eq!(log.len(), 100);
        assert!(log
            .iter()
            .all(|r| r.value == Some(&49u32.to_be_bytes()[..])));
        assert_eq!(offsets(&log), (4_900..5_000).collect::<Vec<_>>());
    }

    #[test]
    fn the_default_floor_leaves_small_logs_whole() {
        let mut log = MetadataLog::new();
        for _ in 0..COMPACTION_FLOOR - 1 {
            log.append([(17, 0, b(b"g"), b(b"e"))]);
        }
        assert_eq!(log.len(), COMPACTION_FLOOR - 1);
        log.append([(17, 0, b(b"g"), b(b"e"))]);
        assert_eq!(log.len(), 1);
    }

    #[test]
    fn records_handed_out_outlive_a_compaction() {
        let mut log = MetadataLog::with_compaction_floor(1);
        let values: Vec<Bytes> = (0..2_000u32)
            .map(|i| Bytes::from(format!("{i:0>40}")))
            .collect();
        log.append(values.iter().map(|v| (2, 0, None, Some(v.clone()))));
        let before = log.records();
        log.append([(17, 0, b(b"g"), b(b"e")), (17, 0, b(b"g"), b(b"f"))]);
        assert_eq!(log.len(), 2_001);
        assert_eq!(
            before.into_iter().map(|r| r.value).collect::<Vec<_>>(),
            values.into_iter().map(Some).collect::<Vec<_>>()
        );
    }

    /// What compaction must leave of `records`, computed the obvious way.
    fn naive_compaction(records: &[LogRecord]) -> Vec<LogRecord> {
        let latest: HashMap<(i16, Option<Bytes>), u64> = records
            .iter()
            .map(|r| ((r.record_type, r.key.clone()), r.offset))
            .collect();
        records
            .iter()
            .filter(|r| {
                r.key.is_none()
                    || (r.value.is_some() && latest[&(r.record_type, r.key.clone())] == r.offset)
            })
            .cloned()
            .collect()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// Random keyed and keyless records, tombstones, empty and chunk-sized payloads, with
        /// compactions (a small floor, and explicit ones): the log always holds a subsequence of
        /// what was appended, unchanged, that compacts to what the naive rule keeps.
        #[test]
        fn the_log_always_agrees_with_naive_compaction_of_everything_appended(
            ops in proptest::collection::vec((0u8..8, 0u8..6, 0u8..6, proptest::option::of(0usize..6_000), proptest::bool::weighted(0.05)), 1..300),
            floor in 1usize..40,
        ) {
            let mut log = MetadataLog::with_compaction_floor(floor);
            let mut all: Vec<LogRecord> = Vec::new();
            for (n, (kind, type_pick, key_pick, size, compact_now)) in ops.into_iter().enumerate() {
                let record_type = [17i16, 19, 21, 22, 1, 2][type_pick as usize];
                // The same key bytes under several types, as members' 19, 21 and 22 records.
                let key = (kind < 6).then(|| Bytes::from(format!("group/member-{key_pick}")));
                let value = size.map(|len| Bytes::from((0..len).map(|i| (i + n) as u8).collect::<Vec<_>>()));
                let value = if key.is_none() && value.is_none() { Some(Bytes::new()) } else { value };
                let offset = log.append([(record_type, 0, key.clone(), value.clone())]);
                all.push(LogRecord { offset, record_type, version: 0, key, value });
                if compact_now {
                    log.compact();
                }
                let held = log.records();
                for r in &held {
                    proptest::prop_assert_eq!(r, &all[r.offset as usize]);
                }
                proptest::prop_assert!(held.windows(2).all(|w| w[0].offset < w[1].offset));
                proptest::prop_assert_eq!(naive_compaction(&held), naive_compaction(&all));
                proptest::prop_assert_eq!(log.next_offset(), all.len() as u64);
            }
            log.compact();
            proptest::prop_assert_eq!(log.records(), naive_compaction(&all));
        }
    }

    #[test]
    fn records_pushed_at_offsets_keep_their_gaps_and_the_next_offset() {
        let mut log = MetadataLog::new();
        log.push_at(3, 17, 0, b(b"g"), b(b"e")).unwrap();
        log.push_at(7, 19, 0, b(b"g/m"), b(b"m")).unwrap();
        assert_eq!(
            log.push_at(7, 19, 0, b(b"g/m"), b(b"again")),
            Err(OffsetBehind {
                offset: 7,
                next_offset: 8
            })
        );
        log.advance_next_offset(12).unwrap();
        assert!(log.advance_next_offset(11).is_err(), "never back");
        assert_eq!(offsets(&log), vec![3, 7]);
        assert_eq!(log.next_offset(), 12);
        assert_eq!(log.append([(17, 0, b(b"g"), b(b"f"))]), 12);
        assert_eq!(offsets(&log), vec![3, 7, 12]);
    }

    #[test]
    fn an_entry_is_32_bytes() {
        assert_eq!(std::mem::size_of::<Entry>(), 32);
    }

    #[test]
    fn compaction_stores_a_key_shared_by_several_record_types_once() {
        let mut log = MetadataLog::new();
        let key = b"\0\x01g\0\x24member-with-a-long-id-0000000000000000";
        for round in 0..3u8 {
            log.append([
                (
                    19,
                    0,
                    Some(Bytes::from_static(key)),
                    Some(Bytes::from(vec![19, round])),
                ),
                (
                    21,
                    0,
                    Some(Bytes::from_static(key)),
                    Some(Bytes::from(vec![21, round])),
                ),
                (
                    22,
                    0,
                    Some(Bytes::from_static(key)),
                    Some(Bytes::from(vec![22, round])),
                ),
                (22, 0, Some(Bytes::from_static(b"other")), None),
            ]);
        }
        log.compact();
        let kept: Vec<LogRecord> = log.records();
        let expected: Vec<LogRecord> = [19i16, 21, 22]
            .iter()
            .enumerate()
            .map(|(i, t)| LogRecord {
                offset: 8 + i as u64,
                record_type: *t,
                version: 0,
                key: Some(Bytes::from_static(key)),
                value: Some(Bytes::from(vec![*t as u8, 2])),
            })
            .collect();
        assert_eq!(kept, expected);
        assert_eq!(
            log.arena.sealed_bytes + log.arena.open.len(),
            key.len() + 3 * 2,
            "the key is stored once"
        );
        // Borrowed and owned forms agree, and later appends and compactions keep working.
        assert_eq!(
            log.iter().map(|r| r.key).collect::<Vec<_>>(),
            vec![Some(&key[..]); 3]
        );
        log.append([(21, 0, Some(Bytes::from_static(key)), None)]);
        log.compact();
        assert_eq!(
            log.iter()
                .map(|r| (r.offset, r.record_type))
                .collect::<Vec<_>>(),
            vec![(8, 19), (10, 22)]
        );
        assert_eq!(log.records()[1].key.as_deref(), Some(&key[..]));
    }
}
