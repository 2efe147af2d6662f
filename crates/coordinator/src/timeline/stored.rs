//! How a group's timeline keeps its events: far smaller than [`TimelineEvent`], what only some
//! kinds carry in one box, a process id that is a UUID's text as its 16 bytes.

use std::sync::Arc;

use kcoord_metadata::Id;

use super::{EventKind, TaskList, TaskRef, TimelineEvent};
use crate::record_builders::Removal;

/// An event as a group's timeline keeps it: a fraction of [`TimelineEvent`]'s size, since a
/// group keeps up to [`MAX_TIMELINE_EVENTS`](super::MAX_TIMELINE_EVENTS) of them; what only some kinds carry (a joining
/// member's ids, the tasks a target moved) is boxed, and the one epoch an event names is kept
/// once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Stored {
    pub(super) time_ms: i64,
    /// For [`EventKind::MemberReconciled`]; -1 none.
    pub(super) took_ms: i64,
    pub(super) group_epoch: i32,
    /// The member epoch of a reconciliation, the assignment epoch of a computed target, the
    /// topology epoch of an update; [`NO_EPOCH`] otherwise.
    pub(super) epoch: i32,
    pub(super) kind: EventKind,
    pub(super) reason: Option<Removal>,
    /// Shared with the group's other events and maps naming the member: an id longer than an
    /// [`Id`] holds inline (24 bytes; Kafka Streams' are 22, a UUID's text 36) is then
    /// allocated once per group, however many events name it.
    pub(super) member_id: Option<SharedId>,
    detail: Option<Box<Detail>>,
}

/// A member id as the timeline keeps it: one allocation per member, however often named.
pub(super) type SharedId = Arc<str>;

/// No epoch in [`Stored::epoch`] (epochs are never negative).
const NO_EPOCH: i32 = i32::MIN;

/// What only some kinds of events carry, in one box whose size is that of the larger kind.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Detail {
    /// A joining member's ids.
    Member {
        process_id: ProcessId,
        instance_id: Option<Box<str>>,
    },
    /// The active tasks a member's target gained and lost.
    Tasks {
        gained: StoredTasks,
        lost: StoredTasks,
    },
    /// Ids and tasks: no kind of event carries both, but one that did would keep them all.
    Both(Box<(ProcessId, Option<Box<str>>, StoredTasks, StoredTasks)>),
}

/// A process id, which Kafka Streams makes a UUID's text: its 16 bytes when the text is
/// exactly what they print as, the text otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ProcessId {
    None,
    Uuid([u8; 16]),
    Text(Box<str>),
}

impl ProcessId {
    fn of(id: Option<String>) -> ProcessId {
        let Some(text) = id else {
            return ProcessId::None;
        };
        match uuid::Uuid::try_parse(&text) {
            Ok(uuid) if uuid.hyphenated().to_string() == text => ProcessId::Uuid(uuid.into_bytes()),
            _ => ProcessId::Text(text.into_boxed_str()),
        }
    }

    fn view(&self) -> Option<String> {
        match self {
            ProcessId::None => None,
            ProcessId::Uuid(bytes) => Some(uuid::Uuid::from_bytes(*bytes).hyphenated().to_string()),
            ProcessId::Text(text) => Some(text.to_string()),
        }
    }
}

/// A task as a group's timeline keeps it: where its sub-topology id is in the group's
/// [`Subtopologies`], and its partition (8 bytes, where a [`TaskRef`] takes 32).
pub(super) type KeptTask = (u32, i32);

/// The sub-topology ids a group's timeline has named, each kept once, and their places in id
/// order (so a topology of many sub-topologies costs a binary search per task, not a scan).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Subtopologies {
    ids: Vec<Id>,
    by_id: Vec<u32>,
}

impl Subtopologies {
    /// Where `id` is kept, kept now if it was not.
    pub(super) fn intern(&mut self, id: &str) -> u32 {
        match self.by_id.binary_search_by(|at| self.id(*at).cmp(id)) {
            Ok(found) => self.by_id[found],
            Err(slot) => {
                let at = u32::try_from(self.ids.len()).unwrap_or(u32::MAX);
                self.ids.push(Id::from(id));
                self.by_id.insert(slot, at);
                at
            }
        }
    }

    fn id(&self, at: u32) -> &str {
        self.ids.get(at as usize).map_or("", Id::as_str)
    }

    pub(super) fn task(&self, (at, partition): KeptTask) -> TaskRef {
        (Id::from(self.id(at)), partition)
    }

    /// Tasks in [`TaskRef`]'s order: by sub-topology id, then partition.
    pub(super) fn order(&self, a: &KeptTask, b: &KeptTask) -> std::cmp::Ordering {
        (self.id(a.0), a.1).cmp(&(self.id(b.0), b.1))
    }
}

/// A [`TaskList`] as an event keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct StoredTasks {
    tasks: Box<[KeptTask]>,
    count: u32,
}

impl StoredTasks {
    fn of(list: TaskList, subtopologies: &mut Subtopologies) -> StoredTasks {
        StoredTasks {
            tasks: list
                .tasks
                .iter()
                .map(|(id, partition)| (subtopologies.intern(id), *partition))
                .collect(),
            count: u32::try_from(list.count).unwrap_or(u32::MAX),
        }
    }

    fn view(&self, subtopologies: &Subtopologies) -> TaskList {
        TaskList {
            tasks: self.tasks.iter().map(|t| subtopologies.task(*t)).collect(),
            count: self.count as usize,
        }
    }
}

impl Detail {
    /// What `e` carries beyond the common fields, if anything.
    fn of(e: &mut TimelineEvent, subtopologies: &mut Subtopologies) -> Option<Detail> {
        let ids = e.process_id.is_some() || e.instance_id.is_some();
        let moved = e.gained != TaskList::default() || e.lost != TaskList::default();
        let process_id = ProcessId::of(e.process_id.take());
        let instance_id = e.instance_id.take().map(String::into_boxed_str);
        let gained = StoredTasks::of(std::mem::take(&mut e.gained), subtopologies);
        let lost = StoredTasks::of(std::mem::take(&mut e.lost), subtopologies);
        match (ids, moved) {
            (false, false) => None,
            (true, false) => Some(Detail::Member {
                process_id,
                instance_id,
            }),
            (false, true) => Some(Detail::Tasks { gained, lost }),
            (true, true) => Some(Detail::Both(Box::new((
                process_id,
                instance_id,
                gained,
                lost,
            )))),
        }
    }

    /// `(process_id, instance_id, gained, lost)` as [`TimelineEvent`] has them.
    fn view(
        detail: Option<&Detail>,
        subtopologies: &Subtopologies,
    ) -> (Option<String>, Option<String>, TaskList, TaskList) {
        let instance = |id: &Option<Box<str>>| id.as_deref().map(str::to_owned);
        match detail {
            None => (None, None, TaskList::default(), TaskList::default()),
            Some(Detail::Member {
                process_id,
                instance_id,
            }) => (
                process_id.view(),
                instance(instance_id),
                TaskList::default(),
                TaskList::default(),
            ),
            Some(Detail::Tasks { gained, lost }) => (
                None,
                None,
                gained.view(subtopologies),
                lost.view(subtopologies),
            ),
            Some(Detail::Both(all)) => (
                all.0.view(),
                instance(&all.1),
                all.2.view(subtopologies),
                all.3.view(subtopologies),
            ),
        }
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
        let detail = Detail::of(&mut e, subtopologies).map(Box::new);
        Stored {
            time_ms: e.time_ms,
            took_ms: e.took_ms.unwrap_or(-1),
            group_epoch: e.group_epoch,
            epoch: epoch.unwrap_or(NO_EPOCH),
            kind: e.kind,
            reason: e.reason,
            member_id,
            detail,
        }
    }

    pub(super) fn view(&self, subtopologies: &Subtopologies) -> TimelineEvent {
        let epoch = (self.epoch != NO_EPOCH).then_some(self.epoch);
        let of_kind = |kind: EventKind| epoch.filter(|_| self.kind == kind);
        let (process_id, instance_id, gained, lost) =
            Detail::view(self.detail.as_deref(), subtopologies);
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
            took_ms: (self.took_ms >= 0).then_some(self.took_ms),
            gained,
            lost,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A join naming `process_id`, with `gained` tasks (no kind of event carries both today).
    fn event(process_id: &str, gained: i32) -> TimelineEvent {
        let mut e = TimelineEvent::new(EventKind::MemberJoined, 3, 1_000).member("m-1");
        e.process_id = Some(process_id.to_owned());
        e.instance_id = Some("instance-a".to_owned());
        let tasks: Vec<TaskRef> = (0..gained).map(|p| (Id::from("0"), p)).collect();
        e.gained = TaskList {
            count: tasks.len() + 5,
            tasks,
        };
        e
    }

    #[test]
    fn an_event_reads_back_as_it_was_kept_whatever_its_process_id() {
        for process_id in [
            "8f0c2a34-5b7e-4d1a-9c3f-0e2b6a7d9c11",
            // Not what the 16 bytes print as: kept as text, never normalised.
            "8F0C2A34-5B7E-4D1A-9C3F-0E2B6A7D9C11",
            "8f0c2a345b7e4d1a9c3f0e2b6a7d9c11",
            "app-process-1",
            "",
        ] {
            for gained in [0, 2] {
                let e = event(process_id, gained);
                let mut subtopologies = Subtopologies::default();
                let kept = Stored::of(e.clone(), Some(Arc::from("m-1")), &mut subtopologies);
                assert_eq!(
                    kept.view(&subtopologies),
                    e,
                    "{process_id:?}, {gained} tasks"
                );
            }
        }
    }

    #[test]
    fn a_uuid_process_id_is_kept_as_its_bytes() {
        let id = "8f0c2a34-5b7e-4d1a-9c3f-0e2b6a7d9c11";
        assert!(matches!(
            ProcessId::of(Some(id.to_owned())),
            ProcessId::Uuid(_)
        ));
        assert!(matches!(
            ProcessId::of(Some(id.to_uppercase())),
            ProcessId::Text(_)
        ));
        assert_eq!(ProcessId::of(None), ProcessId::None);
    }
}
