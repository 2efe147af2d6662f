//! An event packed into a few bytes, for the part of a group's history nothing changes any more:
//! times and epochs as the difference from the event before (the same batch shares a time, an
//! epoch rarely moves), the member as its place in the timeline's [`Names`], what a kind carries
//! only when it carries it. A 10-member group's join takes about 8 bytes per event this way,
//! where a [`Stored`] takes 40 and its box 32.

use std::collections::VecDeque;

use kcoord_metadata::ProcessId;

use super::{Detail, Interned, KeptTask, SharedId, Stored, TaskMoves, NO_EPOCH};
use crate::record_builders::Removal;
use crate::timeline::EventKind;

/// The time and group epoch an event's differences count from: the event packed before it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(in crate::timeline) struct Mark {
    pub(in crate::timeline) time_ms: i64,
    pub(in crate::timeline) group_epoch: i32,
}

impl Mark {
    pub(in crate::timeline) fn of(stored: &Stored) -> Mark {
        Mark {
            time_ms: stored.time_ms,
            group_epoch: stored.group_epoch,
        }
    }
}

/// The member ids packed events name, each once.
pub(in crate::timeline) type Names = Interned<SharedId>;

const HAS_MEMBER: u8 = 1 << 6;
const HAS_EPOCH: u8 = 1 << 7;
const HAS_TOOK: u8 = 1;

/// A packed event's first byte: its kind, its removal reason and two flags. Rewritten in place
/// when a later record explains a removal ([`relabel`]).
fn head(kind: EventKind, reason: Option<Removal>) -> u8 {
    kind_code(kind) | reason.map_or(0, |r| r as u8) << 4
}

/// `first` (a packed event's first byte) naming `kind` and `reason` instead, its flags kept.
pub(in crate::timeline) fn relabel(first: u8, kind: EventKind, reason: Option<Removal>) -> u8 {
    first & (HAS_MEMBER | HAS_EPOCH) | head(kind, reason)
}

fn kind_code(kind: EventKind) -> u8 {
    match kind {
        EventKind::GroupEpochBumped => 0,
        EventKind::MemberJoined => 1,
        EventKind::MemberLeft => 2,
        EventKind::MemberFenced => 3,
        EventKind::MemberRemoved => 4,
        EventKind::TargetAssignmentComputed => 5,
        EventKind::TargetAssignmentChanged => 6,
        EventKind::MemberReconciled => 7,
        EventKind::TopologyUpdated => 8,
    }
}

fn kind_of(code: u8) -> Option<EventKind> {
    Some(match code {
        0 => EventKind::GroupEpochBumped,
        1 => EventKind::MemberJoined,
        2 => EventKind::MemberLeft,
        3 => EventKind::MemberFenced,
        4 => EventKind::MemberRemoved,
        5 => EventKind::TargetAssignmentComputed,
        6 => EventKind::TargetAssignmentChanged,
        7 => EventKind::MemberReconciled,
        8 => EventKind::TopologyUpdated,
        _ => return None,
    })
}

fn reason_of(code: u8) -> Option<Removal> {
    match code {
        1 => Some(Removal::Left),
        2 => Some(Removal::SessionTimeout),
        3 => Some(Removal::RebalanceTimeout),
        _ => None,
    }
}

/// The second byte: [`HAS_TOOK`] and what detail follows.
mod tag {
    pub const NONE: u8 = 0;
    pub const PROCESS_UUID: u8 = 1 << 1;
    pub const PROCESS_TEXT: u8 = 2 << 1;
    pub const TASKS: u8 = 3 << 1;
    pub const FULL: u8 = 4 << 1;
    pub const MASK: u8 = 7 << 1;
}

/// Appends `stored`, packed after the event `before` marks, to `out`.
pub(in crate::timeline) fn pack(
    stored: &Stored,
    before: Mark,
    names: &mut Names,
    out: &mut Vec<u8>,
) {
    let mut first = head(stored.kind, stored.reason);
    if stored.member_id.is_some() {
        first |= HAS_MEMBER;
    }
    if stored.epoch != NO_EPOCH {
        first |= HAS_EPOCH;
    }
    let mut second = if stored.took_ms != -1 { HAS_TOOK } else { 0 };
    second |= match stored.detail.as_deref() {
        None => tag::NONE,
        Some(Detail::ProcessUuid(_)) => tag::PROCESS_UUID,
        Some(Detail::ProcessText(_)) => tag::PROCESS_TEXT,
        Some(Detail::Tasks { .. }) => tag::TASKS,
        Some(Detail::Full(_)) => tag::FULL,
    };
    out.extend([first, second]);
    signed(out, stored.time_ms.wrapping_sub(before.time_ms));
    signed(
        out,
        i64::from(stored.group_epoch) - i64::from(before.group_epoch),
    );
    if let Some(id) = &stored.member_id {
        unsigned(out, u64::from(names.place(id, || id.clone())));
    }
    if stored.epoch != NO_EPOCH {
        signed(out, i64::from(stored.epoch) - i64::from(stored.group_epoch));
    }
    if stored.took_ms != -1 {
        signed(out, i64::from(stored.took_ms));
    }
    match stored.detail.as_deref() {
        None => {}
        Some(Detail::ProcessUuid(bytes)) => out.extend_from_slice(bytes),
        Some(Detail::ProcessText(text)) => text_bytes(out, text),
        Some(Detail::Tasks {
            listed,
            gained_listed,
            gained,
            lost,
        }) => moves(out, listed, [*gained_listed, *gained, *lost]),
        Some(Detail::Full(full)) => {
            let (process_id, instance_id, task_moves) = &**full;
            match process_id {
                None => out.push(0),
                Some(ProcessId::Uuid(bytes)) => {
                    out.push(1);
                    out.extend_from_slice(bytes);
                }
                Some(ProcessId::Text(text)) => {
                    out.push(2);
                    text_bytes(out, text);
                }
            }
            match instance_id {
                None => out.push(0),
                Some(text) => {
                    out.push(1);
                    text_bytes(out, text);
                }
            }
            let counts = [task_moves.gained_listed, task_moves.gained, task_moves.lost];
            moves(out, &task_moves.listed, counts);
        }
    }
}

fn moves(out: &mut Vec<u8>, listed: &[KeptTask], counts: [u32; 3]) {
    for count in counts {
        unsigned(out, u64::from(count));
    }
    unsigned(out, listed.len() as u64);
    for (at, partition) in listed {
        unsigned(out, u64::from(*at));
        signed(out, i64::from(*partition));
    }
}

fn text_bytes(out: &mut Vec<u8>, text: &str) {
    unsigned(out, text.len() as u64);
    out.extend_from_slice(text.as_bytes());
}

/// LEB128: seven bits a byte, low first.
fn unsigned(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Zigzag, so that small negative differences take one byte too.
fn signed(out: &mut Vec<u8>, n: i64) {
    unsigned(out, ((n << 1) ^ (n >> 63)) as u64);
}

/// Reads packed events back from a group's bytes, from a given place.
pub(in crate::timeline) struct Reader<'a> {
    bytes: &'a VecDeque<u8>,
    pub(in crate::timeline) at: usize,
}

impl<'a> Reader<'a> {
    pub(in crate::timeline) fn new(bytes: &'a VecDeque<u8>) -> Self {
        Reader { bytes, at: 0 }
    }

    /// The event packed at the reader's place, after the event `before` marks; `None` at the
    /// end (or where the bytes are not an event, which packing never leaves).
    pub(in crate::timeline) fn next(&mut self, before: Mark, names: &Names) -> Option<Stored> {
        let first = self.byte()?;
        let second = self.byte()?;
        let time_ms = before.time_ms.wrapping_add(self.signed()?);
        let group_epoch = i32::try_from(i64::from(before.group_epoch) + self.signed()?).ok()?;
        let member_id = match first & HAS_MEMBER {
            0 => None,
            _ => Some(names.at(u32::try_from(self.unsigned()?).ok()?)?.clone()),
        };
        let epoch = match first & HAS_EPOCH {
            0 => NO_EPOCH,
            _ => i32::try_from(i64::from(group_epoch) + self.signed()?).ok()?,
        };
        let took_ms = match second & HAS_TOOK {
            0 => -1,
            _ => i32::try_from(self.signed()?).ok()?,
        };
        let detail = self.detail(second & tag::MASK)?.map(Box::new);
        Some(Stored {
            time_ms,
            group_epoch,
            epoch,
            took_ms,
            kind: kind_of(first & 0x0f)?,
            reason: reason_of(first >> 4 & 3),
            member_id,
            detail,
        })
    }

    /// The detail `tag` says follows: `Some(None)` for none, `None` for bytes that are not one.
    fn detail(&mut self, tag: u8) -> Option<Option<Detail>> {
        Some(Some(match tag {
            tag::NONE => return Some(None),
            tag::PROCESS_UUID => Detail::ProcessUuid(self.uuid()?),
            tag::PROCESS_TEXT => Detail::ProcessText(self.text()?),
            tag::TASKS => {
                let m = self.moves()?;
                Detail::Tasks {
                    listed: m.listed,
                    gained_listed: m.gained_listed,
                    gained: m.gained,
                    lost: m.lost,
                }
            }
            tag::FULL => {
                let process_id = match self.byte()? {
                    0 => None,
                    1 => Some(ProcessId::Uuid(self.uuid()?)),
                    _ => Some(ProcessId::Text(self.text()?)),
                };
                let instance_id = match self.byte()? {
                    0 => None,
                    _ => Some(self.text()?),
                };
                Detail::Full(Box::new((process_id, instance_id, self.moves()?)))
            }
            _ => return None,
        }))
    }

    fn moves(&mut self) -> Option<TaskMoves> {
        let mut count = || u32::try_from(self.unsigned()?).ok();
        let (gained_listed, gained, lost) = (count()?, count()?, count()?);
        let listed = usize::try_from(self.unsigned()?).ok()?;
        let listed = (0..listed)
            .map(|_| {
                let at = u32::try_from(self.unsigned()?).ok()?;
                Some((at, i32::try_from(self.signed()?).ok()?))
            })
            .collect::<Option<_>>()?;
        Some(TaskMoves {
            listed,
            gained_listed,
            gained,
            lost,
        })
    }

    fn uuid(&mut self) -> Option<[u8; 16]> {
        let mut bytes = [0; 16];
        for b in &mut bytes {
            *b = self.byte()?;
        }
        Some(bytes)
    }

    fn text(&mut self) -> Option<Box<str>> {
        let len = usize::try_from(self.unsigned()?).ok()?;
        let bytes: Vec<u8> = (0..len).map(|_| self.byte()).collect::<Option<_>>()?;
        String::from_utf8(bytes).ok().map(String::into_boxed_str)
    }

    fn byte(&mut self) -> Option<u8> {
        let b = self.bytes.get(self.at).copied()?;
        self.at += 1;
        Some(b)
    }

    fn unsigned(&mut self) -> Option<u64> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            n |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(n);
            }
        }
        None
    }

    fn signed(&mut self) -> Option<i64> {
        let n = self.unsigned()?;
        Some((n >> 1) as i64 ^ -((n & 1) as i64))
    }
}
