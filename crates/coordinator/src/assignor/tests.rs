use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::*;

fn t(subtopology: &str, partition: i32) -> TaskId {
    TaskId::new(subtopology, partition)
}

fn tasks(list: &[(&str, i32)]) -> BTreeSet<TaskId> {
    list.iter().map(|&(s, p)| t(s, p)).collect()
}

fn member(id: &str, process: &str) -> AssignorMember {
    AssignorMember::new(id, process)
}

fn with_active(mut m: AssignorMember, list: &[(&str, i32)]) -> AssignorMember {
    m.previous_active = tasks(list);
    m
}

fn with_standby(mut m: AssignorMember, list: &[(&str, i32)]) -> AssignorMember {
    m.previous_standby = tasks(list);
    m
}

fn with_offsets(mut m: AssignorMember, list: &[(&str, i32, i64)]) -> AssignorMember {
    m.task_offsets = list.iter().map(|&(s, p, o)| (t(s, p), o)).collect();
    m
}

fn input(
    subtopologies: &[(&str, i32, bool)],
    members: Vec<AssignorMember>,
    standby: i32,
) -> AssignorInput {
    AssignorInput {
        subtopologies: subtopologies
            .iter()
            .map(|&(id, n, stateful)| AssignorSubtopology::new(id, n, stateful))
            .collect(),
        members,
        num_standby_replicas: standby,
    }
}

fn active_of<'a>(
    out: &'a BTreeMap<String, MemberAssignment>,
    member: &str,
) -> &'a BTreeSet<TaskId> {
    &out[member].active
}

fn standby_of<'a>(
    out: &'a BTreeMap<String, MemberAssignment>,
    member: &str,
) -> &'a BTreeSet<TaskId> {
    &out[member].standby
}

/// Feeds an assignment back as the members' previous assignment.
fn carry_over(members: &mut [AssignorMember], out: &BTreeMap<String, MemberAssignment>) {
    for m in members {
        if let Some(a) = out.get(&m.member_id) {
            m.previous_active = a.active.clone();
            m.previous_standby = a.standby.clone();
        }
    }
}

/// Every task of the input active on exactly one member.
fn assert_all_active_once(input: &AssignorInput, out: &BTreeMap<String, MemberAssignment>) {
    let mut seen = BTreeMap::new();
    for a in out.values() {
        for task in &a.active {
            *seen.entry(task.clone()).or_insert(0) += 1;
        }
    }
    let mut expected = BTreeMap::new();
    let mut ids = BTreeSet::new();
    for s in &input.subtopologies {
        if ids.insert(s.id.clone()) {
            for p in 0..s.num_tasks.max(0) {
                expected.insert(t(&s.id, p), 1);
            }
        }
    }
    assert_eq!(seen, expected);
}

/// No process holds two copies (active or standby) of a task.
fn assert_no_duplicate_copies_per_process(
    input: &AssignorInput,
    out: &BTreeMap<String, MemberAssignment>,
) {
    let mut process_of = BTreeMap::new();
    for m in &input.members {
        process_of
            .entry(m.member_id.clone())
            .or_insert(m.process_id.clone());
    }
    let mut copies: BTreeSet<(String, TaskId)> = BTreeSet::new();
    for (member_id, a) in out {
        for task in a.active.iter().chain(&a.standby) {
            let key = (process_of[member_id].clone(), task.clone());
            assert!(
                copies.insert(key.clone()),
                "process holds two copies: {key:?}"
            );
        }
    }
}

#[test]
fn three_members_share_twelve_tasks_four_each() {
    let inp = input(
        &[("0", 6, false), ("1", 6, true)],
        vec![member("m1", "p1"), member("m2", "p2"), member("m3", "p3")],
        0,
    );
    let out = assign(&inp);
    assert_eq!(out.len(), 3);
    for a in out.values() {
        assert_eq!(a.active.len(), 4);
        assert!(a.standby.is_empty());
        assert!(a.warmup.is_empty());
    }
    assert_all_active_once(&inp, &out);
}

#[test]
fn fresh_assignment_is_range_like_per_subtopology() {
    // Two sub-topologies of 2 tasks on two empty processes: each member gets one task of each
    // (Kafka's shouldRangeAssignTasksWhenStartingEmpty), and with one standby the other copy.
    let inp = input(
        &[("a", 2, true), ("b", 2, true)],
        vec![member("m1", "p1"), member("m2", "p2")],
        1,
    );
    let out = assign(&inp);
    for m in ["m1", "m2"] {
        for s in ["a", "b"] {
            assert_eq!(
                out[m].active.iter().filter(|x| x.subtopology == s).count(),
                1,
                "{m} {s}"
            );
            assert_eq!(
                out[m].standby.iter().filter(|x| x.subtopology == s).count(),
                1,
                "{m} {s}"
            );
        }
    }
    assert_eq!(active_of(&out, "m1"), &tasks(&[("a", 0), ("b", 0)]));
    assert_eq!(active_of(&out, "m2"), &tasks(&[("a", 1), ("b", 1)]));
    assert_no_duplicate_copies_per_process(&inp, &out);
}

#[test]
fn member_keeps_previous_tasks_when_balanced() {
    // A deliberately non-range previous assignment, already balanced: nothing moves.
    let members = vec![
        with_active(
            member("m1", "p1"),
            &[("0", 5), ("0", 1), ("1", 2), ("1", 4)],
        ),
        with_active(
            member("m2", "p2"),
            &[("0", 0), ("0", 3), ("1", 1), ("1", 5)],
        ),
        with_active(
            member("m3", "p3"),
            &[("0", 2), ("0", 4), ("1", 0), ("1", 3)],
        ),
    ];
    let inp = input(&[("0", 6, false), ("1", 6, false)], members.clone(), 0);
    let out = assign(&inp);
    for m in &members {
        assert_eq!(
            active_of(&out, &m.member_id),
            &m.previous_active,
            "{}",
            m.member_id
        );
    }
}

#[test]
fn adding_a_fourth_member_moves_the_fewest_tasks() {
    let mut members = vec![member("m1", "p1"), member("m2", "p2"), member("m3", "p3")];
    let subs = [("0", 6, false), ("1", 6, false)];
    let before = assign(&input(&subs, members.clone(), 0));
    carry_over(&mut members, &before);
    members.push(member("m4", "p4"));
    let after = assign(&input(&subs, members, 0));

    // 12 tasks over 4 members: 3 each, and exactly 3 tasks move (one from each old member).
    for m in ["m1", "m2", "m3"] {
        assert_eq!(after[m].active.len(), 3, "{m}");
        assert!(
            after[m].active.is_subset(&before[m].active),
            "{m} gained a task"
        );
    }
    assert_eq!(after["m4"].active.len(), 3);
    let moved: usize = ["m1", "m2", "m3"]
        .iter()
        .map(|m| before[*m].active.difference(&after[*m].active).count())
        .sum();
    assert_eq!(moved, 3);
}

#[test]
fn a_returning_assignment_is_stable() {
    // Running the assignor on its own output changes nothing (actives and standbys).
    let mut members: Vec<_> = (0..5)
        .map(|i| member(&format!("m{i}"), &format!("p{}", i % 3)))
        .collect();
    let subs = [("0", 7, true), ("1", 4, false), ("2", 5, true)];
    let first = assign(&input(&subs, members.clone(), 1));
    carry_over(&mut members, &first);
    let second = assign(&input(&subs, members, 1));
    assert_eq!(first, second);
}

#[test]
fn balances_across_processes_with_multiple_members_per_process() {
    // p1 has three members, p2 one: 8 tasks → p1 gets 6 (2 per member), p2 gets 2.
    let members = vec![
        member("a1", "p1"),
        member("a2", "p1"),
        member("a3", "p1"),
        member("b1", "p2"),
    ];
    let inp = input(&[("0", 8, false)], members, 0);
    let out = assign(&inp);
    for a in out.values() {
        assert_eq!(a.active.len(), 2);
    }
    assert_all_active_once(&inp, &out);

    // Unequal sizes with a remainder: per-member counts still differ by at most one.
    let members = vec![
        member("a1", "p1"),
        member("a2", "p1"),
        member("b1", "p2"),
        member("c1", "p3"),
    ];
    let out = assign(&input(&[("0", 7, false), ("1", 3, false)], members, 0));
    let counts: Vec<usize> = out.values().map(|a| a.active.len()).collect();
    assert!(
        counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1,
        "{counts:?}"
    );
    assert_eq!(counts.iter().sum::<usize>(), 10);
}

#[test]
fn standbys_never_on_the_same_process_as_the_active() {
    let members = vec![
        member("a1", "p1"),
        member("a2", "p1"),
        member("b1", "p2"),
        member("b2", "p2"),
    ];
    let inp = input(&[("0", 8, true)], members, 1);
    let out = assign(&inp);
    assert_no_duplicate_copies_per_process(&inp, &out);
    let standby_total: usize = out.values().map(|a| a.standby.len()).sum();
    assert_eq!(standby_total, 8, "one standby per task");
    // With two processes, p1's standbys are exactly p2's actives and vice versa.
    let p1_active: BTreeSet<_> = out["a1"].active.union(&out["a2"].active).cloned().collect();
    let p2_standby: BTreeSet<_> = out["b1"]
        .standby
        .union(&out["b2"].standby)
        .cloned()
        .collect();
    assert_eq!(p1_active, p2_standby);
}

#[test]
fn standbys_only_for_stateful_subtopologies() {
    let members = vec![member("m1", "p1"), member("m2", "p2"), member("m3", "p3")];
    let inp = input(
        &[("stateless", 4, false), ("stateful", 3, true)],
        members,
        2,
    );
    let out = assign(&inp);
    let standbys: Vec<&TaskId> = out.values().flat_map(|a| a.standby.iter()).collect();
    assert_eq!(
        standbys.len(),
        6,
        "2 copies of each of the 3 stateful tasks"
    );
    assert!(standbys.iter().all(|task| task.subtopology == "stateful"));
    assert_no_duplicate_copies_per_process(&inp, &out);
}

#[test]
fn no_standbys_when_replicas_is_zero() {
    let members = vec![member("m1", "p1"), member("m2", "p2")];
    let out = assign(&input(&[("0", 4, true)], members, 0));
    assert!(out.values().all(|a| a.standby.is_empty()));
}

#[test]
fn standby_prefers_the_previous_standby_owner() {
    // Actives stay put (m1: 0, m2: 1). Without history, standby 1 goes to the empty p3 and standby
    // 0 then to p2 (equal loads, p1 holds the active). m3 had standby 0 before and is under quota,
    // so it keeps it, and standby 1 goes to the least-loaded remaining process.
    let subs = [("s", 2, true)];
    let base = vec![
        with_active(member("m1", "p1"), &[("s", 0)]),
        with_active(member("m2", "p2"), &[("s", 1)]),
        member("m3", "p3"),
    ];
    let without = assign(&input(&subs, base.clone(), 1));
    assert_eq!(
        standby_of(&without, "m2"),
        &tasks(&[("s", 0)]),
        "control: least-loaded choice"
    );

    let mut members = base;
    members[2] = with_standby(member("m3", "p3"), &[("s", 0)]);
    let out = assign(&input(&subs, members, 1));
    assert_eq!(active_of(&out, "m1"), &tasks(&[("s", 0)]));
    assert_eq!(active_of(&out, "m2"), &tasks(&[("s", 1)]));
    assert_eq!(standby_of(&out, "m3"), &tasks(&[("s", 0)]));
    assert_eq!(standby_of(&out, "m1"), &tasks(&[("s", 1)]));
    assert!(standby_of(&out, "m2").is_empty());
}

#[test]
fn standby_prefers_the_most_caught_up_previous_standby() {
    // Both m2 and m3 had standby 0; m3 reports the higher offset sum and wins. Swap the offsets and
    // m2 wins.
    let subs = [("s", 1, true)];
    let make = |o2: i64, o3: i64| {
        vec![
            with_active(member("m1", "p1"), &[("s", 0)]),
            with_offsets(
                with_standby(member("m2", "p2"), &[("s", 0)]),
                &[("s", 0, o2)],
            ),
            with_offsets(
                with_standby(member("m3", "p3"), &[("s", 0)]),
                &[("s", 0, o3)],
            ),
        ]
    };
    let out = assign(&input(&subs, make(10, 100), 1));
    assert_eq!(standby_of(&out, "m3"), &tasks(&[("s", 0)]));
    assert!(standby_of(&out, "m2").is_empty());
    let out = assign(&input(&subs, make(100, 10), 1));
    assert_eq!(standby_of(&out, "m2"), &tasks(&[("s", 0)]));
    assert!(standby_of(&out, "m3").is_empty());
}

#[test]
fn previous_standby_is_promoted_to_active() {
    // Kafka's shouldAssignStandbyToPreviousStandbyThatDoesNotHoldTheActiveTask.
    let members = vec![
        with_standby(member("member1", "process1"), &[("s", 2)]),
        with_standby(
            with_active(member("member2", "process2"), &[("s", 0)]),
            &[("s", 2)],
        ),
        with_active(member("member3", "process3"), &[("s", 1)]),
        member("member4", "process4"),
    ];
    let inp = input(&[("s", 3, true)], members, 1);
    let out = assign(&inp);
    assert_eq!(active_of(&out, "member1"), &tasks(&[("s", 2)]));
    assert_eq!(active_of(&out, "member2"), &tasks(&[("s", 0)]));
    assert_eq!(active_of(&out, "member3"), &tasks(&[("s", 1)]));
    assert!(active_of(&out, "member4").is_empty());
    assert_eq!(standby_of(&out, "member2"), &tasks(&[("s", 2)]));
    // One of the three layouts Kafka's test accepts; ties resolved by process id here.
    let layout: Vec<_> = ["member1", "member3", "member4"]
        .iter()
        .map(|m| standby_of(&out, m).clone())
        .collect();
    let accepted = [
        vec![tasks(&[]), tasks(&[("s", 0)]), tasks(&[("s", 1)])],
        vec![tasks(&[("s", 1)]), tasks(&[]), tasks(&[("s", 0)])],
        vec![tasks(&[("s", 0)]), tasks(&[]), tasks(&[("s", 1)])],
    ];
    assert!(accepted.contains(&layout), "{layout:?}");
    assert_no_duplicate_copies_per_process(&inp, &out);
}

#[test]
fn reported_offsets_attract_tasks_on_cold_start() {
    // Kafka's shouldAssignTasksToMembersReportingTaskOffsetsOnColdStart.
    let members = vec![
        with_offsets(
            member("member1", "process1"),
            &[("s", 0, 100), ("s", 1, 100)],
        ),
        with_offsets(
            member("member2", "process2"),
            &[("s", 2, 100), ("s", 3, 100)],
        ),
    ];
    let out = assign(&input(&[("s", 4, true)], members, 0));
    assert_eq!(active_of(&out, "member1"), &tasks(&[("s", 0), ("s", 1)]));
    assert_eq!(active_of(&out, "member2"), &tasks(&[("s", 2), ("s", 3)]));
}

#[test]
fn current_owners_rank_ahead_of_reported_offsets() {
    // Kafka's shouldRankCurrentOwnersAheadOfReportedTaskOffsetsAndMostCaughtUpFirst.
    let members = vec![
        with_active(member("member1", "process1"), &[("s", 0)]),
        with_standby(member("member2", "process2"), &[("s", 0), ("s", 1)]),
        with_offsets(
            member("member3", "process3"),
            &[("s", 0, 1_000_000), ("s", 1, 1_000_000), ("s", 2, 100)],
        ),
        with_offsets(member("member4", "process4"), &[("s", 2, 50)]),
    ];
    let out = assign(&input(&[("s", 4, true)], members, 0));
    assert_eq!(active_of(&out, "member1"), &tasks(&[("s", 0)]));
    assert_eq!(active_of(&out, "member2"), &tasks(&[("s", 1)]));
    assert_eq!(active_of(&out, "member3"), &tasks(&[("s", 2)]));
    assert_eq!(active_of(&out, "member4"), &tasks(&[("s", 3)]));
}

#[test]
fn cold_start_standbys_land_away_from_the_state_holder() {
    // Kafka's shouldAssignStandbysAwayFromProcessHoldingStateOnColdStart.
    let members = vec![
        with_offsets(member("member1", "process1"), &[("s", 0, 100)]),
        with_offsets(member("member2", "process2"), &[("s", 1, 100)]),
    ];
    let out = assign(&input(&[("s", 2, true)], members, 1));
    assert_eq!(active_of(&out, "member1"), &tasks(&[("s", 0)]));
    assert_eq!(active_of(&out, "member2"), &tasks(&[("s", 1)]));
    assert_eq!(standby_of(&out, "member1"), &tasks(&[("s", 1)]));
    assert_eq!(standby_of(&out, "member2"), &tasks(&[("s", 0)]));
}

#[test]
fn previous_standby_owner_over_quota_does_not_get_it_as_active() {
    // member1 had task 0 active and task 1 standby; member2 had task 1 active. With 2 members the
    // active quota is 1, so member1 cannot also take task 1 and member2 keeps it.
    let members = vec![
        with_standby(
            with_active(member("member1", "process1"), &[("s", 0)]),
            &[("s", 1)],
        ),
        with_active(member("member2", "process2"), &[("s", 1)]),
    ];
    let out = assign(&input(&[("s", 2, true)], members, 0));
    assert_eq!(active_of(&out, "member1"), &tasks(&[("s", 0)]));
    assert_eq!(active_of(&out, "member2"), &tasks(&[("s", 1)]));
}

#[test]
fn insufficient_capacity_for_standbys_does_not_panic() {
    // One process: no standby can be placed at all.
    let inp = input(
        &[("0", 4, true)],
        vec![member("a1", "p1"), member("a2", "p1")],
        2,
    );
    let report = assign_with_report(&inp);
    assert_all_active_once(&inp, &report.members);
    assert!(report.members.values().all(|a| a.standby.is_empty()));
    assert_eq!(report.unassigned_standbys.len(), 4);
    assert!(report.unassigned_standbys.values().all(|&n| n == 2));

    // Two processes, two replicas wanted: one copy each, the second is dropped.
    let inp = input(
        &[("0", 3, true)],
        vec![member("a1", "p1"), member("b1", "p2")],
        2,
    );
    let report = assign_with_report(&inp);
    assert_no_duplicate_copies_per_process(&inp, &report.members);
    let standbys: usize = report.members.values().map(|a| a.standby.len()).sum();
    assert_eq!(standbys, 3);
    assert_eq!(
        report.unassigned_standbys,
        (0..3).map(|p| (t("0", p), 1)).collect()
    );
}

#[test]
fn zero_members_gives_an_empty_map() {
    let inp = input(&[("0", 4, true)], vec![], 1);
    assert!(assign(&inp).is_empty());
    assert_eq!(assign_with_report(&inp), AssignmentOutcome::default());
}

#[test]
fn every_member_is_present_even_without_tasks() {
    let members = (0..5)
        .map(|i| member(&format!("m{i}"), &format!("p{i}")))
        .collect();
    let inp = input(&[("0", 2, false)], members, 0);
    let out = assign(&inp);
    assert_eq!(out.len(), 5);
    assert_eq!(out.values().filter(|a| a.active.len() == 1).count(), 2);
    assert_eq!(out.values().filter(|a| a.active.is_empty()).count(), 3);

    let out = assign(&input(&[], vec![member("m", "p")], 1));
    assert_eq!(out["m"], MemberAssignment::default());
}

#[test]
fn previous_tasks_outside_the_topology_are_ignored() {
    let members = vec![
        with_standby(
            with_active(member("m1", "p1"), &[("gone", 0), ("0", 7)]),
            &[("0", 9)],
        ),
        member("m2", "p2"),
    ];
    let inp = input(&[("0", 2, true)], members, 1);
    let out = assign(&inp);
    assert_all_active_once(&inp, &out);
    assert!(out
        .values()
        .flat_map(|a| a.active.iter().chain(&a.standby))
        .all(|x| x.subtopology == "0" && x.partition < 2));
}

#[test]
fn output_does_not_depend_on_member_order() {
    let members = vec![
        with_active(member("m3", "p1"), &[("0", 1)]),
        member("m1", "p2"),
        with_standby(member("m2", "p1"), &[("0", 2)]),
        member("m4", "p3"),
    ];
    let subs = [("0", 6, true), ("1", 3, false)];
    let a = assign(&input(&subs, members.clone(), 1));
    let mut reversed = members;
    reversed.reverse();
    let b = assign(&input(&subs, reversed, 1));
    assert_eq!(a, b);
}

// ---------------------------------------------------------------------------------------------
// Property tests.

const SUBTOPOLOGY_IDS: [&str; 4] = ["0", "1", "2", "10"];

fn arb_task() -> impl Strategy<Value = TaskId> {
    // Includes partitions and a sub-topology that may not exist in the topology.
    (
        prop::sample::select(vec!["0", "1", "2", "10", "x"]),
        0..9i32,
    )
        .prop_map(|(s, p)| t(s, p))
}

fn arb_member(index: usize, with_history: bool) -> BoxedStrategy<AssignorMember> {
    let base =
        (0..4usize).prop_map(move |p| member(&format!("member-{index}"), &format!("process-{p}")));
    if !with_history {
        return base.boxed();
    }
    (
        base,
        prop::collection::btree_set(arb_task(), 0..6),
        prop::collection::btree_set(arb_task(), 0..4),
        prop::collection::btree_map(arb_task(), 0..1000i64, 0..4),
    )
        .prop_map(|(mut m, active, standby, offsets)| {
            m.previous_active = active;
            m.previous_standby = standby;
            m.task_offsets = offsets;
            m
        })
        .boxed()
}

fn arb_input(with_history: bool) -> impl Strategy<Value = AssignorInput> {
    let subs =
        prop::collection::vec((0..8i32, any::<bool>()), 1..=SUBTOPOLOGY_IDS.len()).prop_map(|v| {
            v.into_iter()
                .enumerate()
                .map(|(i, (n, stateful))| AssignorSubtopology::new(SUBTOPOLOGY_IDS[i], n, stateful))
                .collect::<Vec<_>>()
        });
    let members = (0..9usize).prop_flat_map(move |n| {
        (0..n)
            .map(|i| arb_member(i, with_history))
            .collect::<Vec<_>>()
    });
    (subs, members, 0..=2i32).prop_map(|(subtopologies, members, num_standby_replicas)| {
        AssignorInput {
            subtopologies,
            members,
            num_standby_replicas,
        }
    })
}

fn check_invariants(inp: &AssignorInput) -> BTreeMap<String, MemberAssignment> {
    let report = assign_with_report(inp);
    let out = &report.members;

    // Every member present, nothing else.
    let ids: BTreeSet<&str> = inp.members.iter().map(|m| m.member_id.as_str()).collect();
    assert_eq!(out.keys().map(String::as_str).collect::<BTreeSet<_>>(), ids);
    if inp.members.is_empty() {
        assert!(out.is_empty());
        return report.members;
    }

    assert_all_active_once(inp, out);
    assert_no_duplicate_copies_per_process(inp, out);

    // Standbys: only stateful tasks, min(replicas, processes - 1) copies each, and the shortfall
    // is what the report says.
    let processes: BTreeSet<&str> = inp.members.iter().map(|m| m.process_id.as_str()).collect();
    let replicas = inp.num_standby_replicas as usize;
    let expected_copies = replicas.min(processes.len() - 1);
    let mut copies: BTreeMap<&TaskId, usize> = BTreeMap::new();
    for a in out.values() {
        assert!(a.warmup.is_empty());
        for task in &a.standby {
            *copies.entry(task).or_default() += 1;
        }
    }
    for s in &inp.subtopologies {
        for p in 0..s.num_tasks {
            let task = t(&s.id, p);
            let n = copies.get(&task).copied().unwrap_or(0);
            if s.stateful {
                assert_eq!(n, expected_copies, "standby copies of {task:?}");
                let missing = report.unassigned_standbys.get(&task).copied().unwrap_or(0) as usize;
                assert_eq!(n + missing, replicas, "report for {task:?}");
            } else {
                assert_eq!(n, 0, "standby of stateless {task:?}");
            }
        }
    }

    // Deterministic, also under a different member order.
    assert_eq!(&assign(inp), out);
    let mut reversed = inp.clone();
    reversed.members.reverse();
    assert_eq!(&assign(&reversed), out);
    report.members
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn prop_invariants_hold_for_random_inputs(inp in arb_input(true)) {
        check_invariants(&inp);
    }

    #[test]
    fn prop_fresh_assignment_is_balanced(inp in arb_input(false)) {
        let out = check_invariants(&inp);
        if !out.is_empty() {
            let counts: Vec<usize> = out.values().map(|a| a.active.len()).collect();
            let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
            prop_assert!(max - min <= 1, "active counts {:?}", counts);
        }
    }

    #[test]
    fn prop_reassigning_own_output_changes_nothing_when_processes_are_singletons(
        inp in arb_input(false)
    ) {
        // One member per process: feeding the result back must be a fixed point for actives.
        let mut inp = inp;
        for (i, m) in inp.members.iter_mut().enumerate() {
            m.process_id = format!("own-{i}");
        }
        let first = assign(&inp);
        let mut members = inp.members.clone();
        carry_over(&mut members, &first);
        let again = assign(&AssignorInput { members, ..inp });
        for (id, a) in &first {
            prop_assert_eq!(&again[id].active, &a.active);
        }
    }
}
