//! The server-side assignors of consumer groups: `uniform` (Kafka's default, sticky and
//! balanced) and `range` (co-partitioned ranges per topic). Kafka 4.4's assignors do not look
//! at racks: a member's rack is kept and described, and that is all, here as there.
//!
//! Kafka iterates hash maps where these iterate sorted maps (members by id, topics by id), so
//! when several members could take a partition, the one picked may differ from Kafka's; the
//! balance and the stickiness are the same.
use std::collections::{BTreeMap, BTreeSet};

use kcoord_metadata::TopicPartitions;
use uuid::Uuid;

use crate::error::CoordinatorError;

pub const UNIFORM: &str = "uniform";
pub const RANGE: &str = "range";

/// One member as the assignor sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssignorMember {
    pub instance_id: Option<String>,
    pub subscribed: BTreeSet<Uuid>,
    /// Its partitions in the current target assignment.
    pub current: TopicPartitions,
}

/// What the assignor is given: members by id, and the partition count of every subscribed
/// topic that exists.
#[derive(Debug, Clone, Default)]
pub struct GroupSpec {
    pub members: BTreeMap<String, AssignorMember>,
    pub partitions: BTreeMap<Uuid, i32>,
}

pub type GroupAssignment = BTreeMap<String, TopicPartitions>;

/// Runs the named assignor (an unknown name, which validation keeps out, is `uniform`).
pub fn assign(name: &str, spec: &GroupSpec) -> Result<GroupAssignment, CoordinatorError> {
    match name {
        RANGE => Ok(range(spec)),
        _ => Ok(uniform(spec)),
    }
}

fn homogeneous(spec: &GroupSpec) -> bool {
    let mut subs = spec.members.values().map(|m| &m.subscribed);
    match subs.next() {
        Some(first) => subs.all(|s| s == first),
        None => true,
    }
}

/// Kafka's `UniformAssignor`.
pub fn uniform(spec: &GroupSpec) -> GroupAssignment {
    if homogeneous(spec) {
        uniform_homogeneous(spec)
    } else {
        uniform_heterogeneous(spec)
    }
}

/// `UniformHomogeneousAssignmentBuilder`: every member gets the minimum quota, the first ones
/// one more; each keeps what it had up to its quota, and the rest is handed out in order.
fn uniform_homogeneous(spec: &GroupSpec) -> GroupAssignment {
    let mut out = GroupAssignment::new();
    let Some(first) = spec.members.values().next() else {
        return out;
    };
    let topics: Vec<(Uuid, i32)> = first
        .subscribed
        .iter()
        .filter_map(|t| spec.partitions.get(t).map(|n| (*t, *n)))
        .collect();
    let total: i32 = topics.iter().map(|(_, n)| n).sum();
    let count = spec.members.len() as i32;
    let (min_quota, mut extra) = (total / count, total % count);
    let owned: BTreeSet<(Uuid, i32)> = spec
        .members
        .values()
        .flat_map(|m| m.current.iter())
        .flat_map(|(t, ps)| ps.iter().map(move |p| (*t, *p)))
        .collect();
    let mut unassigned: Vec<(Uuid, i32)> = topics
        .iter()
        .flat_map(|(t, n)| (0..*n).map(move |p| (*t, p)))
        .filter(|tp| !owned.contains(tp))
        .collect();
    let mut unfilled = Vec::new();
    for (index, (id, m)) in spec.members.iter().enumerate() {
        let mut quota = min_quota;
        let mut has_extra = false;
        if extra > 0 {
            quota += 1;
            has_extra = true;
        }
        let mut kept = TopicPartitions::new();
        for (topic, parts) in &m.current {
            let Some(n) = spec.partitions.get(topic) else {
                continue;
            };
            for p in parts.iter().filter(|p| **p < *n) {
                if quota > 0 {
                    quota -= 1;
                    kept.entry(*topic).or_default().insert(*p);
                } else {
                    unassigned.push((*topic, *p));
                }
            }
        }
        if quota > 0 && has_extra && count - index as i32 > extra {
            quota -= 1;
            has_extra = false;
        }
        if quota > 0 {
            unfilled.push((id.clone(), quota));
        }
        if has_extra {
            extra -= 1;
        }
        out.insert(id.clone(), kept);
    }
    let mut next = unassigned.into_iter();
    for (id, quota) in unfilled {
        let Some(assignment) = out.get_mut(&id) else {
            continue;
        };
        for (topic, p) in next.by_ref().take(quota as usize) {
            assignment.entry(topic).or_default().insert(p);
        }
    }
    out
}

/// Members subscribed to different topics: each keeps what it had while the balance allows,
/// then every free partition (topics with the fewest subscribers first) goes to the subscriber
/// holding the fewest, and partitions move from the fullest to the emptiest subscriber while
/// that narrows the gap by two or more.
fn uniform_heterogeneous(spec: &GroupSpec) -> GroupAssignment {
    let mut out: GroupAssignment = spec
        .members
        .keys()
        .map(|id| (id.clone(), TopicPartitions::new()))
        .collect();
    let mut owner: BTreeMap<(Uuid, i32), String> = BTreeMap::new();
    for (id, m) in &spec.members {
        for (topic, parts) in &m.current {
            let Some(n) = spec.partitions.get(topic) else {
                continue;
            };
            if !m.subscribed.contains(topic) {
                continue;
            }
            for p in parts.iter().filter(|p| **p < *n) {
                owner.entry((*topic, *p)).or_insert_with(|| id.clone());
            }
        }
    }
    let subscribers = |topic: &Uuid| -> Vec<&String> {
        spec.members
            .iter()
            .filter(|(_, m)| m.subscribed.contains(topic))
            .map(|(id, _)| id)
            .collect()
    };
    let mut topics: Vec<(usize, Uuid, i32)> = spec
        .partitions
        .iter()
        .map(|(t, n)| (subscribers(t).len(), *t, *n))
        .filter(|(s, _, _)| *s > 0)
        .collect();
    topics.sort();
    let mut counts: BTreeMap<String, usize> =
        spec.members.keys().map(|id| (id.clone(), 0)).collect();
    for who in owner.values() {
        *counts.entry(who.clone()).or_default() += 1;
    }
    for (_, topic, n) in &topics {
        let subs = subscribers(topic);
        for p in 0..*n {
            if owner.contains_key(&(*topic, p)) {
                continue;
            }
            let Some(least) = subs.iter().min_by_key(|id| (counts[**id], (**id).clone())) else {
                continue;
            };
            owner.insert((*topic, p), (*least).clone());
            *counts.entry((*least).clone()).or_default() += 1;
        }
    }
    balance(spec, &mut owner, &mut counts);
    for ((topic, p), who) in owner {
        if let Some(a) = out.get_mut(&who) {
            a.entry(topic).or_default().insert(p);
        }
    }
    out
}

/// Moves partitions from a fuller to an emptier subscriber while that narrows the gap by at
/// least two; bounded by the partition count, as each move lowers the sum of squares.
fn balance(
    spec: &GroupSpec,
    owner: &mut BTreeMap<(Uuid, i32), String>,
    counts: &mut BTreeMap<String, usize>,
) {
    for _ in 0..owner.len().saturating_mul(2) {
        let mut moved = false;
        let keys: Vec<(Uuid, i32)> = owner.keys().copied().collect();
        for key in keys {
            let Some(from) = owner.get(&key).cloned() else {
                continue;
            };
            let target = spec
                .members
                .iter()
                .filter(|(_, m)| m.subscribed.contains(&key.0))
                .map(|(id, _)| id)
                .min_by_key(|id| (counts[*id], (*id).clone()));
            let Some(to) = target else { continue };
            if counts[to] + 2 <= counts[&from] {
                let to = to.clone();
                *counts.entry(from).or_default() -= 1;
                *counts.entry(to.clone()).or_default() += 1;
                owner.insert(key, to);
                moved = true;
            }
        }
        if !moved {
            return;
        }
    }
}

/// Kafka's `RangeAssignor`: per topic, its subscribers in order (static members by instance
/// id first, then the others by member id) take consecutive ranges, the first ones one
/// partition more. Not sticky, as in Kafka.
pub fn range(spec: &GroupSpec) -> GroupAssignment {
    let mut order: Vec<(&String, &AssignorMember)> = spec.members.iter().collect();
    order.sort_by(
        |(a_id, a), (b_id, b)| match (&a.instance_id, &b.instance_id) {
            (Some(x), Some(y)) => x.cmp(y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => a_id.cmp(b_id),
        },
    );
    let mut out: GroupAssignment = spec
        .members
        .keys()
        .map(|id| (id.clone(), TopicPartitions::new()))
        .collect();
    for (topic, n) in &spec.partitions {
        let subs: Vec<&String> = order
            .iter()
            .filter(|(_, m)| m.subscribed.contains(topic))
            .map(|(id, _)| *id)
            .collect();
        if subs.is_empty() {
            continue;
        }
        let count = subs.len() as i32;
        let (min_quota, extra) = (n / count, n % count);
        let mut start = 0;
        for (i, id) in subs.iter().enumerate() {
            let len = min_quota + i32::from((i as i32) < extra);
            if len > 0 {
                if let Some(a) = out.get_mut(*id) {
                    a.insert(*topic, (start..start + len).collect());
                }
            }
            start += len;
        }
    }
    out
}
