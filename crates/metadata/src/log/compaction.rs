//! Compacting the log (module docs of `log.rs`): the latest record of each key, each distinct
//! key's bytes once.

use std::collections::{HashMap, HashSet};

use super::{len32, Arena, Entry, MetadataLog, COMPACT_AFTER_FRACTION, INLINE};

/// What a compaction keeps: the surviving entries, oldest first, each with its key's holder.
struct CompactionPlan {
    survivors: Vec<(u32, Option<u32>)>,
    holders: Vec<KeyHolder>,
}

/// One distinct key's bytes during a compaction.
struct KeyHolder {
    /// Bit `t`: a record of type `t` (< 64) with these key bytes was seen (from the newest).
    types: u64,
    /// The oldest surviving entry with these key bytes: it stores them.
    first: u32,
    /// Its index in the compacted log.
    new_index: u32,
}

impl MetadataLog {
    /// Compacts once enough keyed records were appended since the last compaction. Call it at
    /// batch boundaries only.
    pub(crate) fn compact_if_due(&mut self) {
        if self.keyed_since_compaction
            >= self
                .floor
                .max(self.len_after_compaction / COMPACT_AFTER_FRACTION)
        {
            self.compact();
        }
    }

    /// Keeps the latest record of each key (none when it is a tombstone) and every keyless
    /// record, in order, and packs their bytes into fresh chunks, each distinct key once (so
    /// chunks that held only dead records are freed, once no [`LogRecord`](super::LogRecord) handed out still
    /// shares them).
    pub fn compact(&mut self) {
        let plan = self.plan_compaction();
        let kept = plan.survivors.len();
        // Old chunks in the order the copy below is done with them: each is freed as soon as
        // it has been copied, so the old and the new bytes are never both whole in memory (the
        // allocator reuses the freed chunks for the new ones).
        let mut last_use: Vec<Option<usize>> = vec![None; self.arena.chunks.len()];
        for &(i, _) in &plan.survivors {
            let e = self.entries[i as usize];
            let key_holder = self
                .entries
                .get(e.key_at as usize)
                .filter(|_| e.key_at != INLINE);
            for chunk in [Some(e.chunk), key_holder.map(|h| h.chunk)]
                .into_iter()
                .flatten()
            {
                if let Some(last) = last_use.get_mut(chunk as usize) {
                    *last = Some(i as usize);
                }
            }
        }
        for (chunk, _) in last_use
            .iter()
            .enumerate()
            .filter(|(_, last)| last.is_none())
        {
            self.arena.release(len32(chunk));
        }
        let mut release: Vec<(usize, u32)> = last_use
            .iter()
            .enumerate()
            .filter_map(|(chunk, last)| Some(((*last)?, len32(chunk))))
            .collect();
        release.sort_unstable();
        let mut release = release.into_iter().peekable();

        // Room for the records until the next compaction (unless the floor is further off), so
        // the index is not grown, and doubled, meanwhile.
        let mut entries: Vec<Entry> = Vec::with_capacity(kept + kept / COMPACT_AFTER_FRACTION + 1);
        let mut arena = Arena::default();
        let mut holders = plan.holders;
        for (i, key) in plan.survivors {
            let entry = self.entries[i as usize];
            let view = self.view(i as usize);
            // The key's first survivor stores it; the later ones point at that one.
            let shared = key
                .and_then(|k| holders.get(k as usize))
                .and_then(|h| (h.first != i).then_some(h.new_index));
            let (chunk, start) =
                arena.push(if shared.is_some() { None } else { view.key }, view.value);
            if let (Some(holder), None) = (key.and_then(|k| holders.get_mut(k as usize)), shared) {
                holder.new_index = len32(entries.len());
            }
            entries.push(Entry {
                chunk,
                start,
                key_at: shared.unwrap_or(INLINE),
                ..entry
            });
            while let Some((_, chunk)) = release.next_if(|(last, _)| *last == i as usize) {
                self.arena.release(chunk);
            }
        }
        self.entries = entries;
        self.arena = arena;
        self.keyed_since_compaction = 0;
        self.len_after_compaction = kept;
    }

    /// Which records a compaction keeps, by one pass from the newest to the oldest that looks
    /// each key up once: its distinct key bytes (shared by several record types) and, per key,
    /// the types already seen.
    fn plan_compaction(&self) -> CompactionPlan {
        let mut keys: HashMap<&[u8], u32> = HashMap::with_capacity(self.len_after_compaction);
        let mut holders: Vec<KeyHolder> = Vec::with_capacity(self.len_after_compaction);
        // (type, key) pairs seen, for types a `KeyHolder::types` bit cannot stand for.
        let mut other_types: HashSet<(i16, u32)> = HashSet::new();
        let mut survivors: Vec<(u32, Option<u32>)> = Vec::new();
        for i in (0..self.entries.len()).rev() {
            let view = self.view(i);
            let i = len32(i);
            let Some(key) = view.key else {
                survivors.push((i, None));
                continue;
            };
            let k = *keys.entry(key).or_insert_with(|| {
                holders.push(KeyHolder {
                    types: 0,
                    first: INLINE,
                    new_index: INLINE,
                });
                len32(holders.len() - 1)
            });
            let holder = &mut holders[k as usize];
            let first_of_type = match u32::try_from(view.record_type).ok().filter(|t| *t < 64) {
                Some(bit) => {
                    let new = holder.types & (1 << bit) == 0;
                    holder.types |= 1 << bit;
                    new
                }
                None => other_types.insert((view.record_type, k)),
            };
            if first_of_type && view.value.is_some() {
                // Going backwards, the last survivor seen is the key's first in the log.
                holder.first = i;
                survivors.push((i, Some(k)));
            }
        }
        survivors.reverse();
        CompactionPlan { survivors, holders }
    }
}
