//! A group's events, oldest first: packed into bytes once no later record can change them, the
//! newest few kept whole while they wait for a record's time or epoch.

use std::collections::VecDeque;

use thin_vec::ThinVec;

use super::stored::packed::{self, Mark, Names, Reader};
use super::stored::{SharedId, Stored, Subtopologies};
use super::{EventKind, TimelineEvent};
use crate::record_builders::Removal;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct EventLog {
    packed: VecDeque<u8>,
    /// Events in `packed`.
    packed_events: usize,
    /// What the first packed event counts its time and epoch from.
    first: Mark,
    /// The last packed event's time and epoch, which the next one counts from.
    last: Mark,
    /// The newest events, not packed yet.
    open: ThinVec<Stored>,
    names: Names,
    /// Names the packed events named when they were last repacked: past twice that, the names
    /// of members whose events are gone are dropped by repacking.
    named_at_repack: usize,
}

impl EventLog {
    pub(super) fn len(&self) -> usize {
        self.packed_events + self.open.len()
    }

    pub(super) fn push(&mut self, event: Stored) {
        if self.open.len() == self.open.capacity() {
            // Events of a log without times stay open: grown as the packed bytes grow.
            self.open.reserve_exact(self.open.len() / 4 + 1);
        }
        self.open.push(event);
    }

    pub(super) fn pop_front(&mut self) {
        if self.packed_events == 0 {
            if !self.open.is_empty() {
                self.open.remove(0);
            }
            return;
        }
        let mut reader = Reader::new(&self.packed);
        let Some(oldest) = reader.next(self.first, &self.names) else {
            // Bytes packing never leaves: forget them all rather than read them wrong.
            self.packed.clear();
            self.packed_events = 0;
            self.first = self.last;
            return;
        };
        let read = reader.at;
        self.packed.drain(..read);
        self.packed_events -= 1;
        self.first = Mark::of(&oldest);
    }

    /// The newest `n` events, still whole.
    pub(super) fn newest_mut(&mut self, n: usize) -> &mut [Stored] {
        let from = self.open.len().saturating_sub(n);
        &mut self.open[from..]
    }

    /// Packs every event but the newest `keep`.
    pub(super) fn seal(&mut self, keep: usize) {
        let sealed = self.open.len().saturating_sub(keep);
        if sealed == 0 {
            return;
        }
        if self.names.len() > 2 * self.named_at_repack + 8 {
            self.repack();
        }
        let mut bytes = Vec::with_capacity(16 * sealed);
        let open = std::mem::take(&mut self.open);
        let mut open = open.into_iter();
        for event in open.by_ref().take(sealed) {
            self.pack(&event, &mut bytes);
        }
        self.open = open.collect();
        if self.open.is_empty() {
            // Events are open only while a batch replays: a group at rest holds no room for them.
            self.open = ThinVec::new();
        }
        let room = self.packed.capacity() - self.packed.len();
        if room < bytes.len() {
            // A quarter more at a time: doubling would leave a settled group half its bytes unused.
            self.packed
                .reserve_exact(bytes.len().max(self.packed.len() / 4));
        }
        self.packed.extend(bytes);
    }

    /// Gives back room a shorter history no longer needs.
    pub(super) fn trim_room(&mut self) {
        let len = self.packed.len();
        if self.packed.capacity() > len + len / 2 + 64 {
            self.packed.shrink_to(len + len / 4);
        }
        let open = self.open.len();
        if self.open.capacity() > open + open / 2 + 1 {
            self.open.shrink_to_fit();
        }
    }

    /// Packs the packed events again, naming only the members they still name.
    fn repack(&mut self) {
        let whole = self.unpacked();
        self.packed = VecDeque::new();
        self.packed_events = 0;
        self.names = Names::default();
        self.last = self.first;
        let mut bytes = Vec::new();
        for event in &whole {
            self.pack(event, &mut bytes);
        }
        self.packed.extend(bytes);
        self.named_at_repack = self.names.len();
    }

    /// Packs `event`, the next after those packed, onto `bytes`.
    fn pack(&mut self, event: &Stored, bytes: &mut Vec<u8>) {
        packed::pack(event, self.last, &mut self.names, bytes);
        self.last = Mark::of(event);
        self.packed_events += 1;
    }

    fn unpacked(&self) -> Vec<Stored> {
        let mut reader = Reader::new(&self.packed);
        let mut before = self.first;
        let mut events = Vec::with_capacity(self.packed_events);
        while let Some(event) = reader.next(before, &self.names) {
            before = Mark::of(&event);
            events.push(event);
        }
        events
    }

    /// The copy of `member_id` the events hold, if they name it.
    pub(super) fn named(&self, member_id: &str) -> Option<SharedId> {
        self.open
            .iter()
            .rev()
            .find_map(|e| e.member_id.clone().filter(|id| **id == *member_id))
            .or_else(|| self.names.find(member_id).cloned())
    }

    /// Names the newest `MemberRemoved` of `member_id` by what removed it.
    pub(super) fn explain_removal(&mut self, member_id: &str, kind: EventKind, why: Removal) {
        let removed = |e: &Stored| {
            e.kind == EventKind::MemberRemoved && e.member_id.as_deref() == Some(member_id)
        };
        if let Some(event) = self.open.iter_mut().rev().find(|e| removed(e)) {
            event.kind = kind;
            event.reason = Some(why);
            return;
        }
        let mut reader = Reader::new(&self.packed);
        let mut before = self.first;
        let mut newest = None;
        loop {
            let at = reader.at;
            let Some(event) = reader.next(before, &self.names) else {
                break;
            };
            if removed(&event) {
                newest = Some(at);
            }
            before = Mark::of(&event);
        }
        if let Some(first) = newest.and_then(|at| self.packed.get_mut(at)) {
            *first = packed::relabel(*first, kind, Some(why));
        }
    }

    /// The events as the API shows them, oldest first.
    pub(super) fn views(&self, subtopologies: &Subtopologies) -> Vec<TimelineEvent> {
        let mut views = Vec::with_capacity(self.len());
        let whole = self.unpacked();
        views.extend(
            whole
                .iter()
                .chain(&self.open)
                .map(|e| e.view(subtopologies)),
        );
        views
    }

    /// Bytes the events take, and bytes held for them.
    pub(super) fn bytes(&self) -> (usize, usize) {
        let whole = std::mem::size_of::<Stored>();
        (
            self.packed.len() + whole * self.open.len(),
            self.packed.capacity() + whole * self.open.capacity(),
        )
    }
}

#[cfg(test)]
mod tests;
