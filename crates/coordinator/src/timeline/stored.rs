//! How a group's timeline keeps its events: far smaller than [`TimelineEvent`], what only some
//! kinds carry in one box, a process id that is a UUID's text as its 16 bytes; and, once
//! settled, packed into a few bytes ([`packed`]).

use std::sync::Arc;

use kcoord_metadata::{Id, ProcessId};
use thin_vec::ThinVec;

use super::{EventKind, TaskList, TaskRef, TimelineEvent};
use crate::record_builders::Removal;

pub(super) mod packed;

/// An event as a group's timeline keeps it whole while a later record may still change it, and
/// as it reads a packed one back: 40 bytes, a fraction of a [`TimelineEvent`]. What only some
/// kinds carry (a joining member's ids, the tasks a target moved) is boxed, and the one epoch an
/// event names is kept once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Stored {
    pub(super) time_ms: i64,
    pub(super) group_epoch: i32,
    /// The member epoch of a reconciliation, the assignment epoch of a computed target, the
    /// topology epoch of an update; [`NO_EPOCH`] otherwise.
    pub(super) epoch: i32,
    /// For [`EventKind::MemberReconciled`]: -1 none, and at most `i32::MAX` (24 days): a
    /// reconciliation that took longer shows that.
    took_ms: i32,
    pub(super) kind: EventKind,
    pub(super) reason: Option<Removal>,
    /// Shared with the group's other events and maps naming the member.
    pub(super) member_id: Option<SharedId>,
    detail: Option<Box<Detail>>,
}

/// A member id as the timeline keeps it: one allocation per member however often named, behind
/// a thin pointer (an `Arc<str>` would take 16 bytes in every event and map entry). Ordered and
/// looked up as its text.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct SharedId(Arc<Id>);

impl From<&str> for SharedId {
    fn from(id: &str) -> Self {
        SharedId(Arc::new(Id::from(id)))
    }
}

impl std::ops::Deref for SharedId {
    type Target = str;

    fn deref(&self) -> &str {
        self.0.as_str()
    }
}

impl std::borrow::Borrow<str> for SharedId {
    fn borrow(&self) -> &str {
        self.0.as_str()
    }
}

impl std::fmt::Debug for SharedId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.as_str().fmt(f)
    }
}

/// No epoch in [`Stored::epoch`] (epochs are never negative).
const NO_EPOCH: i32 = i32::MIN;

/// What only some kinds of events carry, boxed. A joining member's process id and a target's
/// moves are variants of their own, not nested types, so that the variant's tag shares their
/// padding and the box takes 32 bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Detail {
    /// A joining member's process id that is a UUID's text (a member without an instance id).
    ProcessUuid([u8; 16]),
    /// Any other process id of such a member.
    ProcessText(Box<str>),
    /// The active tasks a member's target gained and lost ([`TaskMoves`]).
    Tasks {
        listed: Box<[KeptTask]>,
        gained_listed: u32,
        gained: u32,
        lost: u32,
    },
    /// A static member's ids, or ids and tasks together (no kind of event carries both today,
    /// but one that did would keep them all).
    Full(Box<(Option<ProcessId>, Option<Box<str>>, TaskMoves)>),
}

/// A task as a group's timeline keeps it: where its sub-topology id is in the group's
/// [`Subtopologies`], and its partition (8 bytes, where a [`TaskRef`] takes 32).
pub(super) type KeptTask = (u32, i32);

/// Ids kept once each, in the order first named, and their places in id order: an event or a
/// task keeps an id's place (a small number) and finds the id again by it, or a place by a binary
/// search (so a group naming many ids costs a search per lookup, not a scan).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Interned<T> {
    ids: ThinVec<T>,
    by_id: ThinVec<u32>,
}

impl<T> Default for Interned<T> {
    fn default() -> Self {
        Interned {
            ids: ThinVec::new(),
            by_id: ThinVec::new(),
        }
    }
}

impl<T: std::ops::Deref<Target = str>> Interned<T> {
    pub(super) fn len(&self) -> usize {
        self.ids.len()
    }

    /// Where `id` is kept, kept now (as `keep` makes it) if it was not.
    pub(super) fn place(&mut self, id: &str, keep: impl FnOnce() -> T) -> u32 {
        match self.slot(id) {
            Ok(found) => self.by_id[found],
            Err(slot) => {
                let at = u32::try_from(self.ids.len()).unwrap_or(u32::MAX);
                self.ids.push(keep());
                self.by_id.insert(slot, at);
                at
            }
        }
    }

    /// The id kept as `id`, if it is.
    pub(super) fn find(&self, id: &str) -> Option<&T> {
        let found = self.slot(id).ok()?;
        self.at(*self.by_id.get(found)?)
    }

    /// The id kept at `place`.
    pub(super) fn at(&self, place: u32) -> Option<&T> {
        self.ids.get(place as usize)
    }

    fn slot(&self, id: &str) -> Result<usize, usize> {
        self.by_id.binary_search_by(|at| self.text(*at).cmp(id))
    }

    fn text(&self, place: u32) -> &str {
        self.at(place).map_or("", |id| &**id)
    }
}

/// The sub-topology ids a group's timeline has named.
pub(super) type Subtopologies = Interned<Id>;

impl Subtopologies {
    /// Where `id` is kept, kept now if it was not.
    pub(super) fn intern(&mut self, id: &str) -> u32 {
        self.place(id, || Id::from(id))
    }

    pub(super) fn task(&self, (at, partition): KeptTask) -> TaskRef {
        (Id::from(self.text(at)), partition)
    }

    /// Tasks in [`TaskRef`]'s order: by sub-topology id, then partition.
    pub(super) fn order(&self, a: &KeptTask, b: &KeptTask) -> std::cmp::Ordering {
        (self.text(a.0), a.1).cmp(&(self.text(b.0), b.1))
    }
}

/// The tasks a target gained and lost ([`TaskList`]s) as an event keeps them: the listed ones
/// in one allocation, gained first, and how many there were of each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct TaskMoves {
    listed: Box<[KeptTask]>,
    gained_listed: u32,
    gained: u32,
    lost: u32,
}

/// `n` as kept in a [`TaskMoves`] count (far more tasks than any group has saturate).
fn count32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl TaskMoves {
    fn of(gained: TaskList, lost: TaskList, subtopologies: &mut Subtopologies) -> TaskMoves {
        let listed = gained
            .tasks
            .iter()
            .chain(&lost.tasks)
            .map(|(id, partition)| (subtopologies.intern(id), *partition))
            .collect();
        TaskMoves {
            listed,
            gained_listed: count32(gained.tasks.len()),
            gained: count32(gained.count),
            lost: count32(lost.count),
        }
    }

    fn is_empty(&self) -> bool {
        self == &TaskMoves::default()
    }

    fn view(&self, subtopologies: &Subtopologies) -> (TaskList, TaskList) {
        moves_view(
            &self.listed,
            [self.gained_listed, self.gained, self.lost],
            subtopologies,
        )
    }
}

/// The gained and lost [`TaskList`]s of `listed` (gained first) and `[gained_listed, gained,
/// lost]` ([`TaskMoves`]).
fn moves_view(
    listed: &[KeptTask],
    [gained_listed, gained, lost]: [u32; 3],
    subtopologies: &Subtopologies,
) -> (TaskList, TaskList) {
    let (gained_tasks, lost_tasks) = listed.split_at((gained_listed as usize).min(listed.len()));
    let list = |tasks: &[KeptTask], count: u32| TaskList {
        tasks: tasks.iter().map(|t| subtopologies.task(*t)).collect(),
        count: count as usize,
    };
    (list(gained_tasks, gained), list(lost_tasks, lost))
}

impl Detail {
    /// What `e` carries beyond the common fields, if anything.
    fn of(e: &mut TimelineEvent, subtopologies: &mut Subtopologies) -> Option<Detail> {
        let process_id = e.process_id.take().map(|id| ProcessId::new(&id));
        let instance_id = e.instance_id.take().map(String::into_boxed_str);
        let moves = TaskMoves::of(
            std::mem::take(&mut e.gained),
            std::mem::take(&mut e.lost),
            subtopologies,
        );
        match (process_id, instance_id, moves.is_empty()) {
            (None, None, true) => None,
            (Some(ProcessId::Uuid(bytes)), None, true) => Some(Detail::ProcessUuid(bytes)),
            (Some(ProcessId::Text(text)), None, true) => Some(Detail::ProcessText(text)),
            (None, None, false) => Some(Detail::Tasks {
                listed: moves.listed,
                gained_listed: moves.gained_listed,
                gained: moves.gained,
                lost: moves.lost,
            }),
            (process_id, instance_id, _) => {
                Some(Detail::Full(Box::new((process_id, instance_id, moves))))
            }
        }
    }

    /// `(process_id, instance_id, gained, lost)` as [`TimelineEvent`] has them.
    fn view(
        detail: Option<&Detail>,
        subtopologies: &Subtopologies,
    ) -> (Option<String>, Option<String>, TaskList, TaskList) {
        let none = || (TaskList::default(), TaskList::default());
        let (process_id, instance_id, (gained, lost)) = match detail {
            None => (None, None, none()),
            Some(Detail::ProcessUuid(bytes)) => {
                (Some(ProcessId::Uuid(*bytes).to_string()), None, none())
            }
            Some(Detail::ProcessText(text)) => (Some(text.to_string()), None, none()),
            Some(Detail::Tasks {
                listed,
                gained_listed,
                gained,
                lost,
            }) => (
                None,
                None,
                moves_view(listed, [*gained_listed, *gained, *lost], subtopologies),
            ),
            Some(Detail::Full(full)) => {
                let (process_id, instance_id, moves) = &**full;
                let instance_id = instance_id.as_deref().map(str::to_owned);
                (
                    process_id.as_ref().map(ProcessId::to_string),
                    instance_id,
                    moves.view(subtopologies),
                )
            }
        };
        (process_id, instance_id, gained, lost)
    }
}

/// A target that gained or lost exactly one task (the common change: a member joining takes one
/// task from each of several others) is kept without a box, in the two fields a
/// [`EventKind::TargetAssignmentChanged`] event leaves unused: [`Stored::epoch`] holds the
/// task's sub-topology place and [`Stored::took_ms`] its partition when gained, `-2 - partition`
/// when lost (so -1 still means none). Returns those two values, when `detail` is such a move.
fn one_move(kind: EventKind, took_ms: Option<i64>, detail: &Detail) -> Option<(i32, i32)> {
    let Detail::Tasks {
        listed,
        gained_listed,
        gained,
        lost,
    } = detail
    else {
        return None;
    };
    if kind != EventKind::TargetAssignmentChanged || took_ms.is_some() || listed.len() != 1 {
        return None;
    }
    let (at, partition) = listed[0];
    let at = i32::try_from(at).ok()?;
    match (*gained_listed, *gained, *lost) {
        (1, 1, 0) if partition >= 0 => Some((at, partition)),
        (0, 0, 1) if partition >= 0 => Some((at, (-2i32).checked_sub(partition)?)),
        _ => None,
    }
}

impl Stored {
    /// `e` as kept, naming its member by `member_id` (the shared copy of `e.member_id`).
    pub(super) fn of(
        mut e: TimelineEvent,
        member_id: Option<SharedId>,
        subtopologies: &mut Subtopologies,
    ) -> Stored {
        let epoch = match e.kind {
            EventKind::MemberReconciled => e.member_epoch,
            EventKind::TargetAssignmentComputed => e.assignment_epoch,
            EventKind::TopologyUpdated => e.topology_epoch,
            _ => None,
        };
        let took_ms = e.took_ms;
        let mut stored = Stored {
            time_ms: e.time_ms,
            took_ms: took_ms.map_or(-1, |ms| i32::try_from(ms).unwrap_or(i32::MAX)),
            group_epoch: e.group_epoch,
            epoch: epoch.unwrap_or(NO_EPOCH),
            kind: e.kind,
            reason: e.reason,
            member_id,
            detail: None,
        };
        let detail = Detail::of(&mut e, subtopologies);
        match detail.as_ref().and_then(|d| one_move(e.kind, took_ms, d)) {
            Some((at, partition)) => (stored.epoch, stored.took_ms) = (at, partition),
            None => stored.detail = detail.map(Box::new),
        }
        stored
    }

    /// The one task a target gained or lost, when kept without a box ([`one_move`]).
    fn moved_task(&self) -> Option<(bool, KeptTask)> {
        if self.kind != EventKind::TargetAssignmentChanged || self.epoch == NO_EPOCH {
            return None;
        }
        let at = u32::try_from(self.epoch).ok()?;
        Some(match self.took_ms {
            gained @ 0.. => (true, (at, gained)),
            lost => (false, (at, -2 - lost)),
        })
    }

    pub(super) fn view(&self, subtopologies: &Subtopologies) -> TimelineEvent {
        let epoch = (self.epoch != NO_EPOCH).then_some(self.epoch);
        let (process_id, instance_id, mut gained, mut lost) =
            Detail::view(self.detail.as_deref(), subtopologies);
        let moved = self.moved_task();
        if let Some((was_gained, task)) = moved {
            let one = TaskList {
                tasks: vec![subtopologies.task(task)],
                count: 1,
            };
            *(if was_gained { &mut gained } else { &mut lost }) = one;
        }
        let epoch = epoch.filter(|_| moved.is_none());
        let of_kind = |kind: EventKind| epoch.filter(|_| self.kind == kind);
        TimelineEvent {
            time_ms: self.time_ms,
            kind: self.kind,
            group_epoch: self.group_epoch,
            member_id: self.member_id.as_deref().map(Id::from),
            process_id,
            instance_id,
            member_epoch: of_kind(EventKind::MemberReconciled),
            assignment_epoch: of_kind(EventKind::TargetAssignmentComputed),
            topology_epoch: of_kind(EventKind::TopologyUpdated),
            reason: self.reason,
            took_ms: (self.took_ms >= 0 && moved.is_none()).then_some(i64::from(self.took_ms)),
            gained,
            lost,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tasks(n: i32, extra: usize) -> TaskList {
        let tasks: Vec<TaskRef> = (0..n)
            .map(|p| (Id::from(["0", "10", "9"][p as usize % 3]), p))
            .collect();
        TaskList {
            count: tasks.len() + extra,
            tasks,
        }
    }

    #[test]
    fn an_event_reads_back_as_it_was_kept_whatever_it_carries() {
        let process_ids = [
            None,
            Some("8f0c2a34-5b7e-4d1a-9c3f-0e2b6a7d9c11"),
            // Not what the 16 bytes print as: kept as text, never normalised.
            Some("8F0C2A34-5B7E-4D1A-9C3F-0E2B6A7D9C11"),
            Some("8f0c2a345b7e4d1a9c3f0e2b6a7d9c11"),
            Some("app-process-1"),
            Some(""),
        ];
        for process_id in process_ids {
            for instance_id in [None, Some("instance-a")] {
                for (gained, lost) in [(0, 0), (2, 0), (0, 3), (1, 4)] {
                    let mut e = TimelineEvent::new(EventKind::MemberJoined, 3, 1_000).member("m-1");
                    e.process_id = process_id.map(str::to_owned);
                    e.instance_id = instance_id.map(str::to_owned);
                    e.gained = tasks(gained, 5);
                    e.lost = tasks(lost, usize::from(lost > 0));
                    let mut subtopologies = Subtopologies::default();
                    let kept =
                        Stored::of(e.clone(), Some(SharedId::from("m-1")), &mut subtopologies);
                    let case = format!("{process_id:?} {instance_id:?} {gained}/{lost}");
                    assert_eq!(kept.view(&subtopologies), e, "{case}");
                }
            }
        }
    }

    #[test]
    fn a_target_that_moved_one_task_is_kept_without_a_box_and_reads_back_as_it_was() {
        let one = |partition: i32| TaskList {
            tasks: vec![(Id::from("10"), partition)],
            count: 1,
        };
        let none = TaskList::default;
        let cases = [
            (one(0), none(), true),
            (none(), one(0), true),
            (one(7), none(), true),
            (none(), one(i32::MAX - 1), true),
            // What the two fields cannot hold, or more than one task: boxed as before.
            (none(), one(i32::MAX), false),
            (one(-1), none(), false),
            (one(3), one(4), false),
            (TaskList { count: 2, ..one(3) }, none(), false),
        ];
        for (gained, lost, unboxed) in cases {
            let mut e =
                TimelineEvent::new(EventKind::TargetAssignmentChanged, 5, 2_000).member("m-2");
            e.gained = gained;
            e.lost = lost;
            let mut subtopologies = Subtopologies::default();
            subtopologies.intern("0");
            let kept = Stored::of(e.clone(), Some(SharedId::from("m-2")), &mut subtopologies);
            let case = format!("{:?} / {:?}", e.gained, e.lost);
            assert_eq!(kept.detail.is_none(), unboxed, "{case}");
            assert_eq!(kept.view(&subtopologies), e, "{case}");
        }
    }

    #[test]
    fn a_reconciliation_keeps_how_long_it_took_up_to_24_days() {
        for (took, read_back) in [
            (None, None),
            (Some(0), Some(0)),
            (Some(61_000), Some(61_000)),
            (Some(i64::from(i32::MAX)), Some(i64::from(i32::MAX))),
            (Some(i64::from(i32::MAX) + 1), Some(i64::from(i32::MAX))),
        ] {
            let mut e = TimelineEvent::new(EventKind::MemberReconciled, 3, 1_000).member("m-1");
            e.member_epoch = Some(3);
            e.took_ms = took;
            let mut subtopologies = Subtopologies::default();
            let kept = Stored::of(e.clone(), Some(SharedId::from("m-1")), &mut subtopologies);
            e.took_ms = read_back;
            assert_eq!(kept.view(&subtopologies), e, "{took:?}");
        }
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn an_event_and_its_detail_stay_small() {
        // What a group's timeline costs per event: the box is only for kinds with a detail.
        assert_eq!(std::mem::size_of::<Stored>(), 40);
        assert_eq!(std::mem::size_of::<Detail>(), 32);
    }
}
