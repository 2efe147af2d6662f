//! What OffsetFetch reads on a group's shard: the member checks, the committed offsets of the
//! partitions the entries name and, when an entry asks for them, all the group's offsets.

use std::ops::Bound;

use kcoord_coordinator::CoordinatorShard;
use kcoord_metadata::CommittedOffset;
use kcoord_wire::ErrorCode;

use super::{GroupPlan, OFFSETS_PER_JOB};
use crate::runtime::shards::Coordinators;

/// What the shard answered for one group.
#[derive(Default)]
pub(super) struct Fetched {
    /// The shard could not serve the group.
    pub(super) failed: Option<ErrorCode>,
    /// Per check: NONE or the member check's error.
    pub(super) checks: Vec<ErrorCode>,
    /// Per lookup: the committed offset, if any.
    pub(super) found: Vec<Option<CommittedOffset>>,
    /// Per lookup, with RequireStable: whether an open transaction holds an offset of it.
    pub(super) unstable: Vec<bool>,
    /// Every committed offset, when `wants_all`.
    pub(super) all: Vec<(String, i32, CommittedOffset)>,
    /// Per offset of `all`, with RequireStable: whether an open transaction holds one.
    pub(super) all_unstable: Vec<bool>,
}

/// Reads what `plan` asks of its group on the group's shard, in jobs of at most
/// [`OFFSETS_PER_JOB`] checks, lookups and offsets together. Jobs after the first read the
/// offsets as they are then: a request larger than one job is not one snapshot of the group.
pub(super) async fn fetch(coordinators: &Coordinators, plan: &mut GroupPlan) {
    let shard = coordinators.for_group(&plan.id);
    let mut fetched = Fetched {
        checks: Vec::with_capacity(plan.checks.len()),
        found: Vec::with_capacity(plan.lookups.len()),
        ..Default::default()
    };
    // The last offset read when reading them all, and whether all are read.
    let mut after: Option<(String, i32)> = None;
    let mut all_done = !plan.wants_all;
    let mut first = true;
    while first
        || fetched.checks.len() < plan.checks.len()
        || fetched.found.len() < plan.lookups.len()
        || !all_done
    {
        if !first {
            tokio::task::yield_now().await;
        }
        first = false;
        let ran = shard
            .read(|shard| {
                let mut work = OFFSETS_PER_JOB;
                let checks = next(&plan.checks, fetched.checks.len(), &mut work);
                fetched.checks.extend(
                    checks
                        .iter()
                        .map(|(member, epoch)| check(shard, &plan.id, member.as_deref(), *epoch)),
                );
                let lookups = next(&plan.lookups, fetched.found.len(), &mut work);
                look_up(shard, plan, lookups, &mut fetched.found);
                if plan.require_stable {
                    fetched.unstable.extend(lookups.iter().map(|(ti, p)| {
                        shard.has_pending_transactional_offset(&plan.id, &plan.topics[*ti], *p)
                    }));
                }
                if !all_done && work > 0 {
                    let read = read_all(shard, &plan.id, after.as_ref(), work);
                    all_done = read.len() < work;
                    after = read.last().map(|(t, p, _)| (t.clone(), *p));
                    if plan.require_stable {
                        fetched.all_unstable.extend(read.iter().map(|(t, p, _)| {
                            shard.has_pending_transactional_offset(&plan.id, t, *p)
                        }));
                    }
                    fetched.all.extend(read);
                }
            })
            .await;
        if let Err(e) = ran {
            fetched.failed = Some(e.error_code());
            break;
        }
    }
    plan.fetched = fetched;
}

/// The next at most `work` items of `items` from `done`; takes them from `work`.
fn next<'a, T>(items: &'a [T], done: usize, work: &mut usize) -> &'a [T] {
    let end = done.saturating_add(*work).min(items.len());
    let slice = items.get(done..end).unwrap_or_default();
    *work -= slice.len();
    slice
}

/// `StreamsGroup.validateOffsetFetch` for one member id and epoch.
fn check(shard: &CoordinatorShard, group_id: &str, member: Option<&str>, epoch: i32) -> ErrorCode {
    match shard.validate_offset_fetch(group_id, member, epoch) {
        Ok(()) => ErrorCode::NONE,
        Err(e) => e.code,
    }
}

/// The committed offsets of `lookups` (sorted by topic), appended to `found`.
fn look_up(
    shard: &CoordinatorShard,
    plan: &GroupPlan,
    lookups: &[(usize, i32)],
    found: &mut Vec<Option<CommittedOffset>>,
) {
    let Some(offsets) = shard.state().offsets.group(&plan.id) else {
        found.extend(lookups.iter().map(|_| None));
        return;
    };
    // One key per topic, its partition changed in place: no allocation per partition.
    let mut key: Option<(String, i32)> = None;
    for (ti, partition) in lookups {
        let name = &plan.topics[*ti];
        let key = match &mut key {
            Some(key) if key.0 == *name => key,
            slot => slot.insert((name.clone(), *partition)),
        };
        key.1 = *partition;
        found.push(offsets.get(key).cloned());
    }
}

/// At most `limit` committed offsets of the group, in order, after `after`.
fn read_all(
    shard: &CoordinatorShard,
    group_id: &str,
    after: Option<&(String, i32)>,
    limit: usize,
) -> Vec<(String, i32, CommittedOffset)> {
    let Some(offsets) = shard.state().offsets.group(group_id) else {
        return Vec::new();
    };
    let from = after.map_or(Bound::Unbounded, Bound::Excluded);
    offsets
        .range((from, Bound::Unbounded))
        .take(limit)
        .map(|((t, p), o)| (t.clone(), *p, o.clone()))
        .collect()
}
