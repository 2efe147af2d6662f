//! Undoing appends: a runtime that applies a handler's records at once (as Kafka's coordinator
//! runtime replays them before they are committed) must be able to take them back when the
//! handler fails half-way or the durable log refuses them.
use crate::{ReplayError, Store};

impl Store {
    /// Stops appends from compacting the log until [`Store::release_compaction`], so that every
    /// record appended meanwhile can still be undone with [`Store::rollback_to`].
    pub fn hold_compaction(&mut self) {
        self.compaction_held = true;
    }

    /// Lets appends compact again, and compacts now if it is due.
    pub fn release_compaction(&mut self) {
        self.compaction_held = false;
        self.log.compact_if_due();
    }

    /// Compacts the log now (before it is written out whole as a durable snapshot).
    pub fn compact_log(&mut self) {
        self.log.compact();
    }

    /// Forgets every record at or after `offset` and rebuilds the state from the rest, as a
    /// restart from a log that ends there would. Records before `offset` must not have been
    /// compacted away by records after it (hold compaction meanwhile).
    pub fn rollback_to(&mut self, offset: u64) -> Result<(), ReplayError> {
        if offset >= self.log.next_offset() {
            return Ok(());
        }
        let held = self.compaction_held;
        *self = Store::replay_log(&self.log.truncated(offset))?;
        self.compaction_held = held;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use kcoord_wire::records::{OffsetCommitKey, OffsetCommitValue};

    use crate::{Record, Store};

    fn commit(group: &str, offset: i64) -> Record {
        Record::OffsetCommit(
            OffsetCommitKey {
                group: group.into(),
                topic: "t".into(),
                partition: 0,
                ..Default::default()
            },
            Some(OffsetCommitValue {
                offset,
                ..Default::default()
            }),
        )
    }

    #[test]
    fn a_rollback_gives_the_state_and_log_of_the_records_before_it() {
        let mut store = Store::new();
        store.append(vec![commit("a", 1)]).unwrap();
        let before = store.state().clone();
        let mark = store.log().next_offset();
        store.hold_compaction();
        for i in 0..1000 {
            store.append(vec![commit("a", i), commit("b", i)]).unwrap();
        }
        assert_eq!(store.log().len(), 2001, "no compaction while held");
        store.rollback_to(mark).unwrap();
        assert_eq!(store.state(), &before);
        assert_eq!(store.log().next_offset(), mark);
        store.append(vec![commit("c", 7)]).unwrap();
        assert_eq!(
            Store::replay_log(store.log()).unwrap().state(),
            store.state()
        );
        store.release_compaction();
        assert_eq!(store.log().len(), 2, "the first commit and the last");
    }
}
