use super::*;

/// The queue and the per-group entries it is given, as a shard holds them.
#[derive(Default)]
struct Shard {
    timers: Timers,
    groups: FastMap<Id, GroupTimers>,
}

impl Shard {
    fn schedule_session(&mut self, group: &str, member: &str, deadline: i64) {
        self.timers
            .schedule_session(&mut self.groups, group, member, deadline);
    }

    fn schedule_rebalance(&mut self, group: &str, member: &str, deadline: i64, epoch: i32) {
        self.timers
            .schedule_rebalance(&mut self.groups, group, member, deadline, epoch);
    }

    fn cancel_rebalance(&mut self, group: &str, member: &str) {
        self.timers
            .cancel_rebalance(&mut self.groups, group, member);
    }

    fn cancel_member(&mut self, group: &str, member: &str) {
        self.timers.cancel_member(&mut self.groups, group, member);
    }

    fn due(&self, now: i64) -> DueTimers {
        self.timers.due(&self.groups, now)
    }

    fn take(&mut self, due: &DueTimers) {
        self.timers.take(&mut self.groups, due);
    }

    fn next_deadline(&self) -> Option<i64> {
        self.timers.next_deadline()
    }
}

/// Fires what is due at `now`, as a tick does: (group, member, kind) in firing order.
fn fire(t: &mut Shard, now: i64) -> Vec<(String, String, TimerKind)> {
    let due = t.due(now);
    t.take(&due);
    due.fire
        .into_iter()
        .map(|d| (d.group_id.to_string(), d.member_id.to_string(), d.kind))
        .collect()
}

#[test]
fn due_timers_come_out_by_deadline_then_group_then_member() {
    let mut t = Shard::default();
    t.schedule_session("g2", "a", 10);
    t.schedule_session("g1", "b", 10);
    t.schedule_session("g1", "a", 10);
    t.schedule_rebalance("g1", "a", 5, 3);
    t.schedule_session("g3", "z", 20);
    // Re-arming later leaves the queue entry where it was; it is re-queued when due.
    t.schedule_session("g3", "z", 30);
    t.schedule_rebalance("g1", "a", 7, 4);
    assert_eq!(t.next_deadline(), Some(7));
    let due = fire(&mut t, 10);
    let due: Vec<(&str, &str, TimerKind)> = due
        .iter()
        .map(|(g, m, k)| (g.as_str(), m.as_str(), *k))
        .collect();
    assert_eq!(
        due,
        vec![
            ("g1", "a", TimerKind::Rebalance(4)),
            ("g1", "a", TimerKind::Session),
            ("g1", "b", TimerKind::Session),
            ("g2", "a", TimerKind::Session),
        ]
    );
    assert_eq!(t.next_deadline(), Some(20));
    assert!(fire(&mut t, 20).is_empty(), "g3/z's deadline is 30, not 20");
    assert_eq!(t.next_deadline(), Some(30));
    // A fired timer is disarmed: cancelling finds nothing of it in the queue.
    t.cancel_rebalance("g1", "a");
    t.schedule_rebalance("g3", "z", 25, 1);
    t.cancel_rebalance("g3", "z");
    assert_eq!(t.next_deadline(), Some(30));
    t.cancel_member("g3", "z");
    assert_eq!(t.next_deadline(), None);
    assert!(
        t.groups
            .get("g3")
            .is_some_and(|g| g.is_empty() && g.members.capacity() == 0),
        "a group without timers keeps no room for them"
    );
}

#[test]
fn session_timers_pushed_back_fire_at_their_last_deadline_in_deadline_order() {
    let mut t = Shard::default();
    t.schedule_session("g", "late", 10);
    t.schedule_session("g", "early", 12);
    // Heartbeats push "late" back three times; its queue entry stays at 10.
    for deadline in [20, 30, 40] {
        t.schedule_session("g", "late", deadline);
    }
    assert_eq!(t.timers.queue.len(), 1, "one session entry for the group");
    // Pulling a deadline forward moves the entry at once.
    t.schedule_session("g", "early", 11);
    assert_eq!(t.next_deadline(), Some(10));
    assert!(fire(&mut t, 10).is_empty());
    let members = |due: Vec<(String, String, TimerKind)>| {
        due.into_iter().map(|(_, m, _)| m).collect::<Vec<_>>()
    };
    assert_eq!(members(fire(&mut t, 39)), vec!["early"]);
    assert_eq!(t.next_deadline(), Some(40));
    // Two timers due in one tick come out by real deadline, whatever their queue order.
    t.schedule_session("g", "a", 45);
    t.schedule_session("g", "a", 50);
    t.schedule_session("g", "b", 48);
    let _ = fire(&mut t, 46); // "late" fires; "a" is re-queued at 50
    t.schedule_session("g", "c", 49);
    assert_eq!(members(fire(&mut t, 60)), vec!["b", "c", "a"]);
    assert_eq!(t.next_deadline(), None);
    assert!(t
        .groups
        .get("g")
        .is_some_and(|g| g.session_queued.get().is_none()
            && g.members.values().all(|session| session.get().is_none())));
}

#[test]
fn finding_due_timers_changes_nothing() {
    let mut t = Shard::default();
    t.schedule_session("g", "a", 10);
    t.schedule_session("g", "a", 20);
    t.schedule_session("g", "b", 12);
    let due = t.due(15);
    assert_eq!(due, t.due(15), "asking twice gives the same answer");
    assert_eq!(t.next_deadline(), Some(10));
    t.take(&due);
    assert_eq!(t.next_deadline(), Some(20));
}

#[test]
fn a_members_timers_take_8_bytes_and_a_group_one_queue_entry_for_its_sessions() {
    // A member's entry is its session deadline: its rebalance timer, armed only while it
    // revokes, is kept apart.
    assert_eq!(std::mem::size_of::<super::Deadline>(), 8);
    let mut t = Shard::default();
    for m in 0..100 {
        t.schedule_session("g", &format!("m{m}"), 1_000 + m);
    }
    assert_eq!(t.timers.queue.len(), 1);
    // Its members' sessions fire in deadline order as they come due.
    let due = fire(&mut t, 1_004);
    let members: Vec<String> = due.into_iter().map(|(_, m, _)| m).collect();
    assert_eq!(members, ["m0", "m1", "m2", "m3", "m4"]);
    assert_eq!(t.next_deadline(), Some(1_005));
    t.cancel_member("g", "m5");
    assert_eq!(
        t.next_deadline(),
        Some(1_005),
        "the entry stays for the others"
    );
    assert!(fire(&mut t, 1_005).is_empty());
    assert_eq!(t.next_deadline(), Some(1_006));
}

#[test]
fn a_group_whose_rebalance_timers_are_all_disarmed_keeps_no_room_for_them() {
    let mut t = Shard::default();
    for m in ["a", "b", "c"] {
        t.schedule_session("g", m, 100);
        t.schedule_rebalance("g", m, 50, 3);
    }
    let room = |t: &Shard| {
        t.groups
            .get("g")
            .map(|g| g.rebalances.as_ref().map_or(0, |r| r.capacity()))
    };
    assert!(room(&t).is_some_and(|c| c >= 3));
    t.cancel_rebalance("g", "a");
    t.cancel_member("g", "b");
    assert!(room(&t).is_some_and(|c| c > 0), "one is still armed");
    let fired = fire(&mut t, 60);
    assert_eq!(fired.len(), 1, "c's rebalance timer fires");
    assert_eq!(room(&t), Some(0));
    assert_eq!(t.next_deadline(), Some(100), "the sessions stay armed");
}
