//! Each streams group's rebalance timeline, derived from its records as they replay (live, and
//! again from the log when the shard loads), so a restart shows the same history the log still
//! holds. Times come from the records: whoever runs a job stamps its streams records with the
//! job's `now` ([`stamped`]); the shard itself reads no clock.
//!
//! An event takes the time of the next stamped record of its group (the batch it came in:
//! tombstones carry no value to stamp). A log compacted after a restart keeps only the latest
//! record of each key, so the timeline rebuilt from it starts at what the compaction kept.
use kcoord_metadata::{Id, MemberState, Record, RecordAndVersion, VecMap};
use kcoord_wire::records::{
    StreamsGroupMetadataValue, StreamsGroupTargetAssignmentMemberValue,
    StreamsGroupTargetAssignmentMetadataValue,
};

use crate::record_builders::Removal;
use events::EventLog;
use stored::{KeptTask, SharedId, Stored, Subtopologies};

mod events;
mod stored;

/// Events kept per group, newest last: a fixed cap, the oldest dropped first.
pub const MAX_TIMELINE_EVENTS: usize = 256;

/// Events a shard's timelines keep together: with more groups than
/// `SHARD_TIMELINE_EVENTS / MAX_TIMELINE_EVENTS` each keeps its share, at least
/// [`MIN_TIMELINE_EVENTS`], so a node's timelines stay bounded however many groups it serves
/// (packed, an event takes about 8 bytes: with 50 shards, a few tens of MiB).
pub const SHARD_TIMELINE_EVENTS: usize = 65_536;

/// Events every group keeps, however many groups share the shard: its last rebalance or so.
pub const MIN_TIMELINE_EVENTS: usize = 16;

/// What happened, named after the records that say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    GroupEpochBumped,
    MemberJoined,
    MemberLeft,
    /// Removed by its session or rebalance timing out ([`TimelineEvent::reason`]).
    MemberFenced,
    /// Removed for a reason the log does not say: a static member replaced under a new member
    /// id, or a log written before reasons were kept.
    MemberRemoved,
    TargetAssignmentComputed,
    /// A member's target gained or lost active tasks ([`TimelineEvent::gained`], `lost`).
    TargetAssignmentChanged,
    /// The member's epoch reached the group epoch with nothing left to revoke.
    MemberReconciled,
    TopologyUpdated,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimelineEvent {
    /// Milliseconds since the Unix epoch; -1 when no record of the group said it yet.
    pub time_ms: i64,
    pub kind: EventKind,
    /// The group epoch once the event happened.
    pub group_epoch: i32,
    pub member_id: Option<Id>,
    pub process_id: Option<String>,
    pub instance_id: Option<String>,
    pub member_epoch: Option<i32>,
    pub assignment_epoch: Option<i32>,
    pub topology_epoch: Option<i32>,
    pub reason: Option<Removal>,
    /// For [`EventKind::MemberReconciled`]: from the group epoch bump to this reconciliation.
    pub took_ms: Option<i64>,
    /// For [`EventKind::TargetAssignmentChanged`]: the active tasks the member's target gained
    /// and lost.
    pub gained: TaskList,
    pub lost: TaskList,
}

/// (sub-topology id, partition). Sub-topology ids are short ("0", "1", ...): kept inline.
pub type TaskRef = (Id, i32);

/// Tasks an event names: the first [`TaskList::MAX`] of them (in order) and how many there were,
/// so that an event stays small whatever the group's size.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskList {
    pub tasks: Vec<TaskRef>,
    pub count: usize,
}

impl TaskList {
    pub const MAX: usize = 16;
}

impl TimelineEvent {
    fn new(kind: EventKind, group_epoch: i32, time_ms: i64) -> Self {
        TimelineEvent {
            time_ms,
            kind,
            group_epoch,
            member_id: None,
            process_id: None,
            instance_id: None,
            member_epoch: None,
            assignment_epoch: None,
            topology_epoch: None,
            reason: None,
            took_ms: None,
            gained: TaskList::default(),
            lost: TaskList::default(),
        }
    }

    fn member(mut self, member_id: &str) -> Self {
        self.member_id = Some(member_id.into());
        self
    }
}

/// One member as the timeline follows it: its last epoch and whether it had reconciled to it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Followed {
    epoch: i32,
    reconciled: bool,
}

/// One group's timeline and what deriving it needs to remember.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupTimeline {
    events: EventLog,
    group_epoch: i32,
    assignment_epoch: i32,
    topology_epoch: i32,
    /// When the group epoch last went up; -1 unknown.
    epoch_since_ms: i64,
    last_ms: i64,
    /// How many of the newest events wait for a stamped record to give them their time.
    unstamped: usize,
    members: VecMap<SharedId, Followed>,
    /// Each member's target active tasks, sorted, to tell what a new target moved.
    targets: VecMap<SharedId, Box<[KeptTask]>>,
    /// The sub-topology ids its tasks name.
    subtopologies: Subtopologies,
    /// How many events this group keeps now ([`Timelines::observe`] sets it).
    cap: usize,
}

impl GroupTimeline {
    fn new() -> Self {
        GroupTimeline {
            epoch_since_ms: -1,
            last_ms: -1,
            topology_epoch: -1,
            cap: MAX_TIMELINE_EVENTS,
            ..Default::default()
        }
    }

    /// The events, oldest first.
    pub fn events(
        &self,
    ) -> impl DoubleEndedIterator<Item = TimelineEvent> + ExactSizeIterator + '_ {
        self.events.views(&self.subtopologies).into_iter()
    }

    /// The bytes its events take, and the bytes it holds for them: what its history costs in
    /// memory.
    pub fn event_bytes(&self) -> (usize, usize) {
        self.events.bytes()
    }

    /// When the group epoch last went up (-1 unknown): what a member still reconciling has
    /// been holding the rebalance up since.
    pub fn epoch_since_ms(&self) -> i64 {
        self.epoch_since_ms
    }

    fn push(&mut self, event: TimelineEvent) {
        while self.events.len() >= self.cap.max(1) {
            self.events.pop_front();
            self.unstamped = self.unstamped.min(self.events.len());
        }
        // A group whose share shrank gives back what its longer history had taken.
        self.events.trim_room();
        let member_id = event.member_id.as_deref().map(|m| self.shared(m));
        let kept = Stored::of(event, member_id, &mut self.subtopologies);
        self.events.push(kept);
        self.unstamped += 1;
    }

    /// The copy of `member_id` the group's maps or newest events already hold, or a new one.
    fn shared(&self, member_id: &str) -> SharedId {
        let held = self
            .members
            .get_key_value(member_id)
            .map(|(id, _)| id)
            .or_else(|| self.targets.get_key_value(member_id).map(|(id, _)| id))
            .cloned();
        held.or_else(|| self.events.named(member_id))
            .unwrap_or_else(|| member_id.into())
    }

    fn event(&self, kind: EventKind) -> TimelineEvent {
        TimelineEvent::new(kind, self.group_epoch, self.last_ms)
    }

    /// A stamped record's time: that of the events waiting for one, and of those to come.
    fn stamp(&mut self, ms: i64) {
        if ms < 0 {
            return;
        }
        self.last_ms = ms;
        for event in self.events.newest_mut(self.unstamped) {
            event.time_ms = ms;
        }
        self.unstamped = 0;
    }

    fn observe(&mut self, record: &Record) {
        let stamped = self.observe_record(record);
        if stamped {
            // What this record's own events are, they are at its time.
            self.unstamped = 0;
        }
        // An event with its time is settled (but for a removal, which packed events still
        // explain): packed, it takes a fifth of the bytes.
        self.events.seal(self.unstamped);
    }

    /// Follows one record; whether it carried a time.
    fn observe_record(&mut self, record: &Record) -> bool {
        match record {
            Record::StreamsGroupMetadata(_, Some(v)) => self.group_metadata(v),
            Record::StreamsGroupMemberMetadata(k, Some(v)) => {
                if !self.members.contains_key(k.member_id.as_str()) {
                    let id = self.shared(&k.member_id);
                    self.members.insert(id, Followed::default());
                    let mut joined = self.event(EventKind::MemberJoined).member(&k.member_id);
                    joined.process_id = Some(v.process_id.clone());
                    joined.instance_id = v.instance_id.clone();
                    self.push(joined);
                }
                false
            }
            Record::StreamsGroupMemberMetadata(k, None) => {
                if self.members.remove(k.member_id.as_str()).is_some() {
                    let removed = self.event(EventKind::MemberRemoved).member(&k.member_id);
                    self.push(removed);
                }
                false
            }
            Record::StreamsGroupTargetAssignmentMetadata(_, Some(v)) => self.target_metadata(v),
            Record::StreamsGroupTargetAssignmentMember(k, v) => {
                self.target_member(&k.member_id, v.as_ref());
                false
            }
            Record::StreamsGroupCurrentMemberAssignment(k, Some(v)) => {
                self.stamp(v.recorded_ms);
                let reconciled = v.member_epoch == self.group_epoch
                    && MemberState::from_code(v.state) == MemberState::Stable;
                self.follow_member(&k.member_id, v.member_epoch, reconciled);
                v.recorded_ms >= 0
            }
            Record::StreamsGroupTopology(_, Some(v)) if v.epoch != self.topology_epoch => {
                self.topology_epoch = v.epoch;
                let mut updated = self.event(EventKind::TopologyUpdated);
                updated.topology_epoch = Some(v.epoch);
                self.push(updated);
                false
            }
            _ => false,
        }
    }

    fn group_metadata(&mut self, v: &StreamsGroupMetadataValue) -> bool {
        // Kafka writes a member's records before the group's: those that caused this bump
        // wait for its stamp, and belong to its epoch.
        let caused = self.unstamped;
        self.stamp(v.recorded_ms);
        if let Some(member) = &v.removed_member_id {
            self.explain_removal(member, v.removal_reason);
        }
        if v.epoch != self.group_epoch {
            for event in self.events.newest_mut(caused) {
                event.group_epoch = v.epoch;
            }
            self.group_epoch = v.epoch;
            self.epoch_since_ms = self.last_ms;
            self.push(self.event(EventKind::GroupEpochBumped));
        }
        v.recorded_ms >= 0
    }

    fn target_metadata(&mut self, v: &StreamsGroupTargetAssignmentMetadataValue) -> bool {
        // Fencing the last member writes timestamp 0: no time to take from it.
        if v.assignment_timestamp > 0 {
            self.stamp(v.assignment_timestamp);
        }
        if v.assignment_epoch != self.assignment_epoch {
            self.assignment_epoch = v.assignment_epoch;
            let mut computed = self.event(EventKind::TargetAssignmentComputed);
            computed.assignment_epoch = Some(v.assignment_epoch);
            self.push(computed);
        }
        v.assignment_timestamp > 0
    }

    /// A member's new target: the active tasks it gains and loses, which is how a task moves
    /// (a removed member's tasks are lost with it, and gained by others).
    fn target_member(
        &mut self,
        member_id: &str,
        v: Option<&StreamsGroupTargetAssignmentMemberValue>,
    ) {
        let Some(v) = v else {
            self.targets.remove(member_id);
            return;
        };
        let subtopologies = &mut self.subtopologies;
        let mut now: Vec<KeptTask> = v
            .active_tasks
            .iter()
            .flat_map(|t| {
                let subtopology = subtopologies.intern(&t.subtopology_id);
                t.partitions.iter().map(move |p| (subtopology, *p))
            })
            .collect();
        let order = |a: &KeptTask, b: &KeptTask| self.subtopologies.order(a, b);
        now.sort_unstable_by(order);
        now.dedup();
        let now = now.into_boxed_slice();
        let before = match self.targets.get(member_id) {
            Some(target) => &target[..],
            None => &[],
        };
        let subtopologies = &self.subtopologies;
        let missing = |tasks: &[KeptTask], t: &KeptTask| {
            tasks
                .binary_search_by(|x| subtopologies.order(x, t))
                .is_err()
        };
        let gained: Vec<&KeptTask> = now.iter().filter(|t| missing(before, t)).collect();
        let lost: Vec<&KeptTask> = before.iter().filter(|t| missing(&now, t)).collect();
        let list = |tasks: &[&KeptTask]| TaskList {
            tasks: tasks
                .iter()
                .take(TaskList::MAX)
                .map(|t| subtopologies.task(**t))
                .collect(),
            count: tasks.len(),
        };
        let moved = (!gained.is_empty() || !lost.is_empty()).then(|| (list(&gained), list(&lost)));
        match self.targets.get_mut(member_id) {
            Some(target) => *target = now,
            None => {
                let id = self.shared(member_id);
                self.targets.insert(id, now);
            }
        }
        let Some((gained, lost)) = moved else {
            return;
        };
        let mut event = self
            .event(EventKind::TargetAssignmentChanged)
            .member(member_id);
        event.gained = gained;
        event.lost = lost;
        self.push(event);
    }

    fn follow_member(&mut self, member_id: &str, epoch: i32, reconciled: bool) {
        let now = Followed { epoch, reconciled };
        let before = match self.members.get_mut(member_id) {
            Some(followed) => Some(std::mem::replace(followed, now)),
            None => {
                let id = self.shared(member_id);
                self.members.insert(id, now)
            }
        };
        if !reconciled || before == Some(now) {
            return;
        }
        let mut event = self.event(EventKind::MemberReconciled).member(member_id);
        event.member_epoch = Some(epoch);
        event.took_ms = (self.epoch_since_ms >= 0 && self.last_ms >= 0)
            .then(|| (self.last_ms - self.epoch_since_ms).max(0));
        self.push(event);
    }

    /// The removal the metadata record explains: the member's latest `MemberRemoved`.
    fn explain_removal(&mut self, member_id: &str, reason: i8) {
        let (kind, why) = match reason {
            1 => (EventKind::MemberLeft, Removal::Left),
            2 => (EventKind::MemberFenced, Removal::SessionTimeout),
            3 => (EventKind::MemberFenced, Removal::RebalanceTimeout),
            _ => return,
        };
        self.events.explain_removal(member_id, kind, why);
    }
}

/// The timelines of a shard's streams groups; a group's goes with the group.
#[derive(Debug, Clone, Default)]
pub struct Timelines {
    /// Boxed: a map holds room for more groups than it has, and a timeline takes 184 bytes.
    groups: crate::shard::FastMap<Id, Box<GroupTimeline>>,
}

impl Timelines {
    pub fn get(&self, group_id: &str) -> Option<&GroupTimeline> {
        self.groups.get(group_id).map(|t| &**t)
    }

    /// Follows one replayed record (records of other kinds are ignored).
    pub fn observe(&mut self, record: &Record) {
        let group_id = match record {
            Record::StreamsGroupMetadata(k, None) => {
                self.groups.remove(k.group_id.as_str());
                return;
            }
            Record::StreamsGroupMetadata(k, _) => &k.group_id,
            Record::StreamsGroupMemberMetadata(k, _) => &k.group_id,
            Record::StreamsGroupTargetAssignmentMetadata(k, _) => &k.group_id,
            Record::StreamsGroupTargetAssignmentMember(k, _) => &k.group_id,
            Record::StreamsGroupCurrentMemberAssignment(k, _) => &k.group_id,
            Record::StreamsGroupTopology(k, _) => &k.group_id,
            _ => return,
        };
        let groups = self.groups.len().max(1);
        let cap = (SHARD_TIMELINE_EVENTS / groups).clamp(MIN_TIMELINE_EVENTS, MAX_TIMELINE_EVENTS);
        let timeline = kcoord_metadata::entry_by_str(&mut self.groups, group_id, || {
            Box::new(GroupTimeline::new())
        });
        timeline.cap = cap;
        timeline.observe(record);
    }

    /// The timelines the records of `log` make, decoding only the streams group records.
    pub fn from_log(log: &kcoord_metadata::MetadataLog) -> Timelines {
        let mut timelines = Timelines::default();
        for entry in log
            .iter()
            .filter(|e| is_timeline_record(e.record_type, e.key))
        {
            // The store replayed this very log: a record that does not decode is not there.
            if let Ok(record) = Record::decode(&entry.to_record()) {
                timelines.observe(&record);
            }
        }
        timelines
    }
}

fn is_timeline_record(record_type: i16, key: Option<&[u8]>) -> bool {
    use kcoord_wire::records as r;
    // Coordinator records always have a key; metadata records of the same numbers never do.
    key.is_some()
        && [
            r::StreamsGroupMetadataKey::API_KEY,
            r::StreamsGroupMemberMetadataKey::API_KEY,
            r::StreamsGroupTargetAssignmentMetadataKey::API_KEY,
            r::StreamsGroupTargetAssignmentMemberKey::API_KEY,
            r::StreamsGroupCurrentMemberAssignmentKey::API_KEY,
            r::StreamsGroupTopologyKey::API_KEY,
        ]
        .contains(&record_type)
}

/// `outcome` with its streams group records stamped with the job's time: whoever runs a job
/// at `now` passes the outcome through here before committing it.
pub fn stamped<R>(mut outcome: crate::Outcome<R>, now: i64) -> crate::Outcome<R> {
    stamp_records(&mut outcome.records, now);
    outcome
}

fn stamp_records(records: &mut [RecordAndVersion], now: i64) {
    for record in records {
        match &mut record.record {
            Record::StreamsGroupMetadata(_, Some(v)) => v.recorded_ms = now,
            Record::StreamsGroupCurrentMemberAssignment(_, Some(v)) => v.recorded_ms = now,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
