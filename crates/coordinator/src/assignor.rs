//! The `sticky` task assignor of the streams rebalance protocol (KIP-1071), sans-IO.
//!
//! This reproduces the behaviour of Apache Kafka's group-coordinator `StickyTaskAssignor`
//! (docs/kafka-coordinator-facts.md §10) as a pure, deterministic function: the same input
//! ([`AssignorInput`]) always yields the same assignment, whatever the order of its members.
//!
//! # Active tasks
//! The per-member quota starts at `ceil(tasks / members)` and is recomputed every time a member
//! reaches it (`ceil(remaining tasks / remaining members)`).
//! 1. Tasks sorted by (partition, subtopology): the previous active owner keeps a task while it is
//!    under quota.
//! 2. Still in that order: the task goes to the least-loaded standby candidate (see below) if that
//!    candidate is under quota.
//! 3. The rest, sorted by (subtopology, partition), go one by one to the least-loaded process
//!    (tasks / members of the process) and there to its least-loaded member. No quota applies.
//!
//! # Standby tasks
//! Only for stateful sub-topologies, `num_standby_replicas` copies per task, and never two copies
//! of a task (active or standby) in one process. The quota is `ceil(all tasks incl. standby
//! copies / members)`, maintained like the active one. Tasks are visited in descending
//! (partition, subtopology) order; for each copy:
//! 1. the previous active owner, if its process holds no copy yet and it is under quota;
//! 2. else the least-loaded standby candidate whose process holds no copy, if under quota;
//! 3. else this and all further copies of the task are deferred. Deferred tasks are then visited
//!    in descending (subtopology, partition) order and each copy goes to the least-loaded process
//!    holding no copy yet (its least-loaded member). When no process is left the copy is dropped
//!    and reported in [`AssignmentOutcome::unassigned_standbys`] (Kafka logs a warning).
//!
//! # Standby candidates
//! The members that may hold state for a task: first those having it as a previous standby, then
//! those that only report an offset for it (a member restarted with a fresh id); within each group
//! the highest reported offset sum first (a previous standby without a reported offset counts 0).
//! Kafka's "least-loaded" pick among them is peculiar and kept as is: the first candidate (whose
//! process has no copy, for standbys) is taken unless a later one has *both* a strictly lower
//! process load and a strictly lower member task count.
//!
//! Warm-up tasks are never produced here (a later refiner adds them); previous warm-ups, rack ids
//! and client tags are accepted but not used, as in Kafka.
//!
//! # Differences from Kafka (all about determinism or degenerate input)
//! * Ties are broken by id: members are visited in member-id order, processes of equal load by
//!   process id, members of equal task count by member id. Kafka leaves these to `HashMap` and
//!   `PriorityQueue` iteration order.
//! * If several members claim the same previous active task, the smallest member id is its
//!   previous owner (Kafka: whichever member its hash map visits last).
//! * Loads are compared exactly as fractions instead of as `double`s.
//! * No members: an empty map (Kafka throws when there is a task to assign).
//! * Duplicate member ids or sub-topology ids: the first occurrence wins. Negative task or
//!   replica counts count as 0. Previous tasks that are not in the topology are ignored.

use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BTreeSet};

use crate::task::TaskId;

/// The name under which this assignor is configured (`group.streams.assignors`).
pub const STICKY_ASSIGNOR_NAME: &str = "sticky";

/// A sub-topology as the assignor sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssignorSubtopology {
    pub id: String,
    /// Number of tasks (the maximum partition count of its source topics).
    pub num_tasks: i32,
    /// Whether it has state stores, i.e. whether its tasks get standby replicas.
    pub stateful: bool,
}

impl AssignorSubtopology {
    pub fn new(id: impl Into<String>, num_tasks: i32, stateful: bool) -> Self {
        AssignorSubtopology {
            id: id.into(),
            num_tasks,
            stateful,
        }
    }
}

/// A group member and what it had before this assignment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AssignorMember {
    pub member_id: String,
    pub process_id: String,
    /// Not used by the sticky assignor (as in Kafka).
    pub rack_id: Option<String>,
    /// Not used by the sticky assignor (as in Kafka).
    pub client_tags: BTreeMap<String, String>,
    /// Active tasks of the member's current target assignment.
    pub previous_active: BTreeSet<TaskId>,
    /// Standby tasks of the member's current target assignment.
    pub previous_standby: BTreeSet<TaskId>,
    /// Not used by the sticky assignor (as in Kafka).
    pub previous_warmup: BTreeSet<TaskId>,
    /// Reported task offsets (sum of changelog offsets), used to rank previous standby owners.
    pub task_offsets: BTreeMap<TaskId, i64>,
}

impl AssignorMember {
    /// A member without previous tasks, rack, tags or offsets.
    pub fn new(member_id: impl Into<String>, process_id: impl Into<String>) -> Self {
        AssignorMember {
            member_id: member_id.into(),
            process_id: process_id.into(),
            ..Default::default()
        }
    }
}

/// Everything the assignor needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AssignorInput {
    pub subtopologies: Vec<AssignorSubtopology>,
    pub members: Vec<AssignorMember>,
    /// `group.streams.num.standby.replicas` (0..=2 in Kafka; any non-negative value works here).
    pub num_standby_replicas: i32,
}

/// The tasks assigned to one member.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberAssignment {
    pub active: BTreeSet<TaskId>,
    pub standby: BTreeSet<TaskId>,
    /// Always empty: warm-ups are added by a refiner after the assignor.
    pub warmup: BTreeSet<TaskId>,
}

/// The result of [`assign_with_report`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AssignmentOutcome {
    /// One entry per member (possibly empty).
    pub members: BTreeMap<String, MemberAssignment>,
    /// Standby copies that could not be placed for lack of processes, per task. Kafka logs a
    /// warning for each ("There is not enough available capacity...").
    pub unassigned_standbys: BTreeMap<TaskId, i32>,
}

/// Computes the target assignment: member id → tasks. Every member is present; every task is
/// active on exactly one member when there is at least one member.
pub fn assign(input: &AssignorInput) -> BTreeMap<String, MemberAssignment> {
    assign_with_report(input).members
}

/// [`assign`], also reporting the standby copies that found no room.
pub fn assign_with_report(input: &AssignorInput) -> AssignmentOutcome {
    if input.members.is_empty() {
        return AssignmentOutcome::default();
    }
    let mut state = State::new(input);
    state.assign_active();
    if state.num_standby > 0 {
        state.assign_standby();
    }
    state.into_outcome()
}

/// `ceil(tasks / members)` with Kafka's integer semantics (0 when there are no members).
fn tasks_per_member(tasks: i64, members: i64) -> i64 {
    if members == 0 {
        return 0;
    }
    let mut per_member = tasks / members;
    if tasks % members > 0 {
        per_member += 1;
    }
    per_member
}

/// A process load, `tasks / members`, compared exactly.
#[derive(Debug, Clone, Copy)]
struct Load {
    tasks: u64,
    members: u64,
}

impl Ord for Load {
    fn cmp(&self, other: &Self) -> Ordering {
        (u128::from(self.tasks) * u128::from(other.members))
            .cmp(&(u128::from(other.tasks) * u128::from(self.members)))
    }
}

impl PartialOrd for Load {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Load {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Load {}

struct Member<'a> {
    id: &'a str,
    process: usize,
    /// Active plus standby tasks assigned so far.
    task_count: i64,
    active: Vec<usize>,
    standby: Vec<usize>,
}

struct Process {
    /// Member indices, in member-id order.
    members: Vec<usize>,
    task_count: u64,
}

/// Kafka's running quotas (`LocalState`).
struct Quotas {
    active_per_member: i64,
    total_per_member: i64,
    remaining_active_tasks: i64,
    remaining_total_tasks: i64,
    members_with_active_capacity: i64,
    members_with_total_capacity: i64,
}

impl Quotas {
    /// A member now holds `count` active tasks.
    fn on_active_added(&mut self, count: i64) {
        if count == self.active_per_member {
            self.members_with_active_capacity -= 1;
            self.remaining_active_tasks -= count;
            self.active_per_member = tasks_per_member(
                self.remaining_active_tasks,
                self.members_with_active_capacity,
            );
        }
    }

    /// A member now holds `count` tasks in all.
    fn on_task_added(&mut self, count: i64) {
        if count == self.total_per_member {
            self.members_with_total_capacity -= 1;
            self.remaining_total_tasks -= count;
            self.total_per_member =
                tasks_per_member(self.remaining_total_tasks, self.members_with_total_capacity);
        }
    }
}

/// Every task of the topology in (subtopology, partition) order, and whether its sub-topology
/// is stateful.
fn sorted_tasks(input: &AssignorInput) -> (Vec<TaskId>, Vec<bool>) {
    let mut seen_subtopologies = BTreeSet::new();
    let mut task_list: Vec<(TaskId, bool)> = Vec::new();
    for sub in &input.subtopologies {
        if !seen_subtopologies.insert(sub.id.as_str()) {
            continue;
        }
        for partition in 0..sub.num_tasks.max(0) {
            task_list.push((TaskId::new(sub.id.clone(), partition), sub.stateful));
        }
    }
    task_list.sort();
    task_list.into_iter().unzip()
}

/// The members (`by_id`, in member-id order) and their processes, in process-id order.
fn members_and_processes<'a>(
    by_id: &BTreeMap<&'a str, &AssignorMember>,
) -> (Vec<Member<'a>>, Vec<Process>) {
    let process_index: BTreeMap<&str, usize> = by_id
        .values()
        .map(|m| m.process_id.as_str())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .enumerate()
        .map(|(i, p)| (p, i))
        .collect();
    let mut processes: Vec<Process> = (0..process_index.len())
        .map(|_| Process {
            members: Vec::new(),
            task_count: 0,
        })
        .collect();
    let mut members = Vec::with_capacity(by_id.len());
    for (idx, (id, member)) in by_id.iter().enumerate() {
        let process = process_index[member.process_id.as_str()];
        processes[process].members.push(idx);
        members.push(Member {
            id,
            process,
            task_count: 0,
            active: Vec::new(),
            standby: Vec::new(),
        });
    }
    (members, processes)
}

/// Per task (by its index in `task_index`, of `task_count`): its previous active owner and its
/// ranked standby candidates, as member indices in `by_id`.
fn previous_owners(
    by_id: &BTreeMap<&str, &AssignorMember>,
    task_index: &BTreeMap<&TaskId, usize>,
    task_count: usize,
) -> (Vec<Option<usize>>, Vec<Vec<usize>>) {
    let mut prev_active = vec![None; task_count];
    let mut candidates: Vec<Vec<(usize, bool, i64)>> = vec![Vec::new(); task_count];
    for (idx, member) in by_id.values().enumerate() {
        for task in &member.previous_active {
            if let Some(&t) = task_index.get(task) {
                prev_active[t].get_or_insert(idx);
            }
        }
        for task in &member.previous_standby {
            if let Some(&t) = task_index.get(task) {
                let offset = member.task_offsets.get(task).copied().unwrap_or(0);
                candidates[t].push((idx, true, offset));
            }
        }
        for (task, &offset) in &member.task_offsets {
            if member.previous_standby.contains(task) {
                continue;
            }
            if let Some(&t) = task_index.get(task) {
                candidates[t].push((idx, false, offset));
            }
        }
    }
    let standby_candidates = candidates
        .into_iter()
        .map(|mut list| {
            // Stable: equal candidates stay in member-id order.
            list.sort_by_key(|&(_, prev_standby, offset)| (!prev_standby, Reverse(offset)));
            list.into_iter().map(|(member, _, _)| member).collect()
        })
        .collect();
    (prev_active, standby_candidates)
}

struct State<'a> {
    /// All tasks in (subtopology, partition) order; tasks are referred to by index.
    tasks: Vec<TaskId>,
    stateful: Vec<bool>,
    /// Members in member-id order.
    members: Vec<Member<'a>>,
    /// Processes in process-id order.
    processes: Vec<Process>,
    /// Per task, the processes holding a copy (active or standby).
    holders: Vec<Vec<usize>>,
    /// Per task, its previous active owner.
    prev_active: Vec<Option<usize>>,
    /// Per task, the ranked standby candidates.
    standby_candidates: Vec<Vec<usize>>,
    num_standby: i64,
    quotas: Quotas,
    unassigned_standbys: BTreeMap<TaskId, i32>,
}

impl<'a> State<'a> {
    fn new(input: &'a AssignorInput) -> Self {
        let num_standby = i64::from(input.num_standby_replicas.max(0));
        let (tasks, stateful) = sorted_tasks(input);
        let task_index: BTreeMap<&TaskId, usize> =
            tasks.iter().enumerate().map(|(i, t)| (t, i)).collect();

        // Members and processes, in id order.
        let mut by_id: BTreeMap<&str, &AssignorMember> = BTreeMap::new();
        for member in &input.members {
            by_id.entry(member.member_id.as_str()).or_insert(member);
        }
        let (members, processes) = members_and_processes(&by_id);
        let (prev_active, standby_candidates) = previous_owners(&by_id, &task_index, tasks.len());

        let total_active = tasks.len() as i64;
        let stateful_count = stateful.iter().filter(|s| **s).count() as i64;
        let total_tasks = total_active + stateful_count * num_standby;
        let member_count = members.len() as i64;
        let quotas = Quotas {
            active_per_member: tasks_per_member(total_active, member_count),
            total_per_member: tasks_per_member(total_tasks, member_count),
            remaining_active_tasks: total_active,
            remaining_total_tasks: total_tasks,
            members_with_active_capacity: member_count,
            members_with_total_capacity: member_count,
        };

        State {
            holders: vec![Vec::new(); tasks.len()],
            tasks,
            stateful,
            members,
            processes,
            prev_active,
            standby_candidates,
            num_standby,
            quotas,
            unassigned_standbys: BTreeMap::new(),
        }
    }

    fn load(&self, process: usize) -> Load {
        let p = &self.processes[process];
        Load {
            tasks: p.task_count,
            members: p.members.len() as u64,
        }
    }

    fn holds(&self, process: usize, task: usize) -> bool {
        self.holders[task].contains(&process)
    }

    /// Gives `task` to `member`; returns the member's new task count.
    fn add_task(&mut self, member: usize, task: usize, active: bool) -> i64 {
        let m = &mut self.members[member];
        m.task_count += 1;
        if active {
            m.active.push(task);
        } else {
            m.standby.push(task);
        }
        let process = m.process;
        self.processes[process].task_count += 1;
        self.holders[task].push(process);
        m.task_count
    }

    fn add_active(&mut self, member: usize, task: usize) {
        let count = self.add_task(member, task, true);
        self.quotas.on_active_added(count);
        self.quotas.on_task_added(count);
    }

    fn add_standby(&mut self, member: usize, task: usize) {
        let count = self.add_task(member, task, false);
        self.quotas.on_task_added(count);
    }

    /// The member of `process` with the fewest tasks (smallest id on ties).
    fn least_loaded_member(&self, process: usize) -> usize {
        *self.processes[process]
            .members
            .iter()
            .min_by_key(|&&m| (self.members[m].task_count, m))
            .expect("a process has at least one member")
    }

    /// Kafka's `findPrevMemberWithLeastLoad`: the first candidate (skipping processes that hold
    /// `exclude_holders_of`), replaced only by one with strictly lower process load *and* strictly
    /// lower member task count.
    fn pick_candidate(
        &self,
        candidates: &[usize],
        exclude_holders_of: Option<usize>,
    ) -> Option<usize> {
        let mut best: Option<(usize, Load, i64)> = None;
        for &member in candidates {
            let process = self.members[member].process;
            if exclude_holders_of.is_some_and(|task| self.holds(process, task)) {
                continue;
            }
            let process_load = self.load(process);
            let member_load = self.members[member].task_count;
            match best {
                Some((_, best_process, best_member))
                    if !(process_load < best_process && member_load < best_member) => {}
                _ => best = Some((member, process_load, member_load)),
            }
        }
        best.map(|(member, _, _)| member)
    }

    fn process_queue(&self) -> BTreeSet<(Load, usize)> {
        (0..self.processes.len())
            .map(|p| (self.load(p), p))
            .collect()
    }

    fn assign_active(&mut self) {
        let mut remaining: Vec<usize> = (0..self.tasks.len()).collect();
        remaining.sort_by(|&a, &b| {
            let (ta, tb) = (&self.tasks[a], &self.tasks[b]);
            (ta.partition, &ta.subtopology).cmp(&(tb.partition, &tb.subtopology))
        });

        // 1. Previous active owners keep their tasks while under quota.
        let mut left = Vec::with_capacity(remaining.len());
        for task in remaining {
            match self.prev_active[task] {
                Some(m) if self.members[m].task_count < self.quotas.active_per_member => {
                    self.add_active(m, task)
                }
                _ => left.push(task),
            }
        }

        // 2. Then the least-loaded standby candidate, if under quota.
        let mut remaining = Vec::with_capacity(left.len());
        for task in left {
            match self.pick_candidate(&self.standby_candidates[task], None) {
                Some(m) if self.members[m].task_count < self.quotas.active_per_member => {
                    self.add_active(m, task)
                }
                _ => remaining.push(task),
            }
        }

        // 3. The rest, in (subtopology, partition) order, to the least-loaded process.
        remaining.sort_unstable();
        let mut queue = self.process_queue();
        for task in remaining {
            let (_, process) = queue.pop_first().expect("there is at least one process");
            let member = self.least_loaded_member(process);
            self.add_active(member, task);
            queue.insert((self.load(process), process));
        }
    }

    fn assign_standby(&mut self) {
        let replicas = self.num_standby;
        let mut stateful: Vec<usize> = (0..self.tasks.len())
            .filter(|&t| self.stateful[t])
            .collect();
        stateful.sort_by(|&a, &b| {
            let (ta, tb) = (&self.tasks[a], &self.tasks[b]);
            (tb.partition, &tb.subtopology).cmp(&(ta.partition, &ta.subtopology))
        });

        let mut deferred: Vec<(usize, i64)> = Vec::new();
        for task in stateful {
            for copy in 0..replicas {
                if let Some(m) = self.prev_active[task] {
                    let process = self.members[m].process;
                    if !self.holds(process, task)
                        && self.members[m].task_count < self.quotas.total_per_member
                    {
                        self.add_standby(m, task);
                        continue;
                    }
                }
                if let Some(m) = self.pick_candidate(&self.standby_candidates[task], Some(task)) {
                    if self.members[m].task_count < self.quotas.total_per_member {
                        self.add_standby(m, task);
                        continue;
                    }
                }
                deferred.push((task, replicas - copy));
                break;
            }
        }

        // Descending (subtopology, partition) order; each task is deferred at most once.
        deferred.sort_unstable_by_key(|&(task, _)| Reverse(task));
        let mut queue = self.process_queue();
        for (task, copies) in deferred {
            for placed in 0..copies {
                let Some(entry) = queue.iter().find(|(_, p)| !self.holds(*p, task)).copied() else {
                    let missing = i32::try_from(copies - placed).unwrap_or(i32::MAX);
                    self.unassigned_standbys
                        .insert(self.tasks[task].clone(), missing);
                    break;
                };
                queue.remove(&entry);
                let process = entry.1;
                let member = self.least_loaded_member(process);
                self.add_standby(member, task);
                queue.insert((self.load(process), process));
            }
        }
    }

    fn into_outcome(self) -> AssignmentOutcome {
        let to_set = |list: &[usize]| list.iter().map(|&t| self.tasks[t].clone()).collect();
        let members = self
            .members
            .iter()
            .map(|m| {
                let assignment = MemberAssignment {
                    active: to_set(&m.active),
                    standby: to_set(&m.standby),
                    warmup: BTreeSet::new(),
                };
                (m.id.to_owned(), assignment)
            })
            .collect();
        AssignmentOutcome {
            members,
            unassigned_standbys: self.unassigned_standbys,
        }
    }
}

#[cfg(test)]
mod tests;
