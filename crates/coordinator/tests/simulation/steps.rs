//! The steps the driver draws: what clients send, time passing, and what the disk and the
//! process do. Each is drawn from the seeded generator alone.
use rand::rngs::StdRng;
use rand::Rng;

use super::clients::{Client, SIMPLE_GROUP, STREAMS_GROUPS, TOPICS};
use super::groups::GroupStep;
use super::mixed::MixedStep;
use super::producers::TxnStep;

#[derive(Debug, Clone)]
pub enum Step {
    /// A transactional producer's request, or the marker writer's next action
    /// (`producers.rs`).
    Txn(TxnStep),
    /// A classic group member's or a consumer group member's request (`groups.rs`).
    Group(GroupStep),
    /// A mixed-group client's request (`mixed.rs`).
    Mixed(MixedStep),
    /// A member's heartbeat (a join at epoch 0), reporting its owned tasks or, for a steady
    /// heartbeat, not.
    Heartbeat { client: usize, report_tasks: bool },
    /// A member leaves (-1, or -2 for a static member) and comes back later, under a new id
    /// (a static member may keep its own).
    Leave { client: usize },
    /// A member leaves and comes back with the next topology epoch.
    UpgradeTopology { client: usize },
    /// A member commits the offsets of tasks it owns, at its member epoch.
    MemberCommit { client: usize },
    /// The offsets-only group commits (member id "", epoch -1).
    SimpleCommit {
        partitions: Vec<(&'static str, i32)>,
    },
    /// DeleteGroups of the offsets-only group, sometimes with a streams group (deleted only
    /// when empty).
    DeleteGroups { groups: Vec<String> },
    /// OffsetDelete of some of the offsets-only group's partitions.
    DeleteOffsets {
        partitions: Vec<(&'static str, i32)>,
    },
    /// The controller adds a partition to a topic (up to a bound) and publishes the catalog.
    GrowTopic { topic: usize },
    /// The clock moves on; the timers due run.
    Advance { ms: i64 },
    /// The clock moves to the shard's next deadline; the timers due run.
    AdvanceToDeadline,
    /// The writer writes and syncs the oldest queued batches.
    Sync { batches: usize },
    /// The disk refuses the writer's write.
    FailWrite,
    /// The writer rewrites the file as the shard's compacted log.
    RewriteCompacted,
    /// The process dies and restarts from the file. `written` of the queued records had
    /// reached the file (a write the crash interrupted, which may end inside a batch).
    Crash { written: usize },
}

/// How often each kind of step is drawn, out of the sum.
const WEIGHTS: [(Kind, u32); 14] = [
    (Kind::Heartbeat, 22),
    (Kind::SteadyHeartbeat, 10),
    (Kind::Leave, 3),
    (Kind::UpgradeTopology, 1),
    (Kind::MemberCommit, 8),
    (Kind::SimpleCommit, 5),
    (Kind::DeleteGroups, 2),
    (Kind::DeleteOffsets, 2),
    (Kind::GrowTopic, 1),
    (Kind::Advance, 10),
    (Kind::AdvanceToDeadline, 3),
    (Kind::Sync, 20),
    (Kind::FailWrite, 2),
    (Kind::RewriteCompacted, 1),
];

/// A crash is drawn apart from the others, one step in this many, so that runs have long
/// stretches between crashes in which groups settle.
const CRASH_ONE_IN: u32 = 60;

#[derive(Debug, Clone, Copy)]
enum Kind {
    Heartbeat,
    SteadyHeartbeat,
    Leave,
    UpgradeTopology,
    MemberCommit,
    SimpleCommit,
    DeleteGroups,
    DeleteOffsets,
    GrowTopic,
    Advance,
    AdvanceToDeadline,
    Sync,
    FailWrite,
    RewriteCompacted,
}

/// What the next step's draw depends on besides the generator and the clients.
#[derive(Debug, Clone, Copy)]
pub struct Situation {
    /// Long clock moves go a little past one session, so that silent members are fenced.
    pub session_timeout_ms: i64,
    pub queued_batches: usize,
    pub queued_records: usize,
}

/// Draws the next step.
pub fn draw(rng: &mut StdRng, clients: &[Client], situation: Situation) -> Step {
    if rng.random_ratio(1, CRASH_ONE_IN) {
        // Half the crashes interrupt the writer's write of the queue.
        let written = if rng.random_bool(0.5) {
            rng.random_range(0..=situation.queued_records)
        } else {
            0
        };
        return Step::Crash { written };
    }
    let total: u32 = WEIGHTS.iter().map(|(_, w)| w).sum();
    // Drawn again when the kind drawn has nothing to act on (no idle client, nothing queued);
    // a clock move always has.
    loop {
        let mut pick = rng.random_range(0..total);
        let kind = WEIGHTS
            .iter()
            .find(|(_, w)| {
                let found = pick < *w;
                pick = pick.saturating_sub(*w);
                found
            })
            .map_or(Kind::Advance, |(k, _)| *k);
        if let Some(step) = step_of(kind, rng, clients, situation) {
            return step;
        }
    }
}

fn step_of(kind: Kind, rng: &mut StdRng, clients: &[Client], situation: Situation) -> Option<Step> {
    let queued = situation.queued_batches;
    let idle: Vec<usize> = (0..clients.len())
        .filter(|&i| !clients[i].waiting)
        .collect();
    let client = (!idle.is_empty()).then(|| idle[rng.random_range(0..idle.len())]);
    // Leaving, upgrading and committing need a member that has joined; one that has not joins.
    let joined = client.filter(|&c| clients[c].member.epoch > 0);
    let step = match (kind, client, joined) {
        (Kind::Heartbeat, Some(client), _) => Step::Heartbeat {
            client,
            report_tasks: true,
        },
        (Kind::SteadyHeartbeat, Some(client), _) => Step::Heartbeat {
            client,
            report_tasks: false,
        },
        (Kind::Leave, _, Some(client)) => Step::Leave { client },
        (Kind::UpgradeTopology, _, Some(client)) => Step::UpgradeTopology { client },
        (Kind::MemberCommit, _, Some(client)) => Step::MemberCommit { client },
        (Kind::Leave | Kind::UpgradeTopology | Kind::MemberCommit, Some(client), None) => {
            Step::Heartbeat {
                client,
                report_tasks: true,
            }
        }
        (Kind::SimpleCommit, _, _) => Step::SimpleCommit {
            partitions: partitions(rng),
        },
        (Kind::DeleteGroups, _, _) => Step::DeleteGroups {
            groups: groups_to_delete(rng),
        },
        (Kind::DeleteOffsets, _, _) => Step::DeleteOffsets {
            partitions: partitions(rng),
        },
        (Kind::GrowTopic, _, _) => Step::GrowTopic {
            topic: rng.random_range(0..TOPICS.len()),
        },
        (Kind::Advance, _, _) => Step::Advance {
            ms: clock_move(rng, situation.session_timeout_ms),
        },
        (Kind::AdvanceToDeadline, _, _) => Step::AdvanceToDeadline,
        (Kind::Sync, _, _) if queued > 0 => Step::Sync {
            batches: rng.random_range(1..=queued),
        },
        (Kind::FailWrite, _, _) if queued > 0 => Step::FailWrite,
        (Kind::RewriteCompacted, _, _) => Step::RewriteCompacted,
        _ => return None,
    };
    Some(step)
}

/// One to three partitions of the catalog.
fn partitions(rng: &mut StdRng) -> Vec<(&'static str, i32)> {
    let count = rng.random_range(1..=3);
    (0..count)
        .map(|_| {
            let (topic, partitions) = TOPICS[rng.random_range(0..TOPICS.len())];
            (topic, rng.random_range(0..partitions))
        })
        .collect()
}

fn groups_to_delete(rng: &mut StdRng) -> Vec<String> {
    let mut groups = vec![SIMPLE_GROUP.to_owned()];
    if rng.random_bool(0.5) {
        groups.push(STREAMS_GROUPS[rng.random_range(0..STREAMS_GROUPS.len())].to_owned());
    }
    groups
}

/// Mostly short moves; sometimes past a session timeout.
fn clock_move(rng: &mut StdRng, session_timeout_ms: i64) -> i64 {
    if rng.random_ratio(1, 6) {
        rng.random_range(session_timeout_ms / 2..=session_timeout_ms + 2_000)
    } else {
        rng.random_range(1..=400)
    }
}
