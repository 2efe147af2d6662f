//! The invariants of the shard's state alone, checked after every step.
use std::collections::BTreeMap;

use kcoord_coordinator::CoordinatorShard;
use kcoord_metadata::{LogState, MetadataLog, Store, StreamsGroup, Tasks};

use super::model::{Kind, Violation};

/// Within each group, no active task is owned by two members: a task moving between members
/// stays with the one revoking it (pending revocation) until that one has let it go.
pub fn no_task_owned_twice(state: &LogState) -> Result<(), Violation> {
    for group in sorted_groups(state) {
        let mut owners: BTreeMap<(&str, i32), &str> = BTreeMap::new();
        for member in group.members.values() {
            let owned = [
                &member.assigned().active,
                &member.pending_revocation().active,
            ];
            for (subtopology, partition) in owned.into_iter().flat_map(tasks) {
                if let Some(other) = owners.insert((subtopology, partition), &member.member_id) {
                    return Err(Violation::new(
                        Kind::TaskOwnedTwice,
                        format!(
                            "group {}: task {subtopology}:{partition} is owned by {other} and {}",
                            group.group_id, member.member_id
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The groups by id, so that the first violation reported does not depend on hashing.
fn sorted_groups(state: &LogState) -> Vec<&StreamsGroup> {
    let mut groups: Vec<&StreamsGroup> = state.streams_groups.iter().collect();
    groups.sort_by(|a, b| a.group_id.cmp(&b.group_id));
    groups
}

fn tasks(tasks: &Tasks) -> impl Iterator<Item = (&str, i32)> {
    tasks
        .iter()
        .flat_map(|(sub, partitions)| partitions.iter().map(move |p| (sub.as_str(), *p)))
}

/// A member's epoch never passes its group's target assignment epoch, nor that the group
/// epoch.
pub fn epochs_ordered(state: &LogState) -> Result<(), Violation> {
    for group in sorted_groups(state) {
        let ahead = group
            .members
            .values()
            .find(|m| m.member_epoch > group.target_assignment_epoch);
        if group.target_assignment_epoch > group.group_epoch || ahead.is_some() {
            return Err(Violation::new(
                Kind::EpochWentBack,
                format!(
                    "group {}: group epoch {}, target epoch {}, member {:?} ahead of them",
                    group.group_id,
                    group.group_epoch,
                    group.target_assignment_epoch,
                    ahead.map(|m| (&m.member_id, m.member_epoch))
                ),
            ));
        }
    }
    Ok(())
}

/// Replaying `log` gives `shard`'s live state.
pub fn replays_to_live(
    log: &MetadataLog,
    shard: &CoordinatorShard,
    which: &str,
) -> Result<(), Violation> {
    let replayed = Store::replay_log(log).map_err(|e| {
        Violation::new(Kind::ReplayDiffers, format!("{which} does not replay: {e}"))
    })?;
    if replayed.state() != shard.state() {
        return Err(Violation::new(
            Kind::ReplayDiffers,
            format!(
                "{which}, replayed, differs from the live state: {}",
                first_difference(replayed.state(), shard.state())
            ),
        ));
    }
    Ok(())
}

/// Where two states differ, briefly.
fn first_difference(replayed: &LogState, live: &LogState) -> String {
    if replayed.offsets != live.offsets {
        return format!(
            "offsets: replayed {:?}, live {:?}",
            super::model::live_offsets(replayed),
            super::model::live_offsets(live)
        );
    }
    let replayed_groups = sorted_groups(replayed);
    let live_groups = sorted_groups(live);
    if replayed_groups.len() != live_groups.len() {
        let ids = |groups: &[&StreamsGroup]| {
            groups
                .iter()
                .map(|g| g.group_id.clone())
                .collect::<Vec<_>>()
        };
        return format!(
            "groups: replayed {:?}, live {:?}",
            ids(&replayed_groups),
            ids(&live_groups)
        );
    }
    for live_group in live_groups {
        match replayed.streams_groups.get(&live_group.group_id) {
            Some(replayed_group) if replayed_group == live_group => {}
            Some(replayed_group) => return group_difference(replayed_group, live_group),
            None => return format!("group {} is not in the replayed state", live_group.group_id),
        }
    }
    "elsewhere (group count, topics)".to_owned()
}

/// Where two versions of a group differ: its epochs, or the first member that differs.
fn group_difference(replayed: &StreamsGroup, live: &StreamsGroup) -> String {
    let id = &live.group_id;
    let epochs = |g: &StreamsGroup| (g.group_epoch, g.target_assignment_epoch);
    if epochs(replayed) != epochs(live) {
        return format!(
            "group {id}: (group epoch, target epoch) replayed {:?}, live {:?}",
            epochs(replayed),
            epochs(live)
        );
    }
    let member_ids = replayed.members.keys().chain(live.members.keys());
    for member_id in member_ids {
        let (r, l) = (replayed.members.get(member_id), live.members.get(member_id));
        if r != l {
            return format!("group {id}, member {member_id}: replayed {r:?}, live {l:?}");
        }
    }
    format!("group {id}: replayed {replayed:?}, live {live:?}")
}
