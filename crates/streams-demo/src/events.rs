//! One line per thing that happened to a member, from two consecutive snapshots of it.

use kcoord_client::api_name;
use kcoord_client::streams::{
    MemberSnapshot, MemberState, PushResult, Tasks, TopologyDescriptionRequest,
};

/// The lines for what changed between `before` and `after` of member `name`.
pub fn changes(name: &str, before: &MemberSnapshot, after: &MemberSnapshot) -> Vec<String> {
    let mut lines = Vec::new();
    if before.responses == 0 && after.responses > 0 {
        lines.push(format!("{name}: joined (epoch {})", after.member_epoch));
    } else if fenced(before, after) {
        lines.push(format!("{name}: fenced; rejoining"));
    }
    if after.last_error != before.last_error {
        if let Some(error) = &after.last_error {
            let what = if after.state == MemberState::Failed {
                "failed"
            } else {
                "heartbeat failed, retrying"
            };
            lines.push(format!("{name}: {what}: {error}"));
        }
    }
    // Leaving drops every task; "left the group" says so.
    if after.assignment != before.assignment && after.state != MemberState::Left {
        let a = &after.assignment;
        lines.push(format!(
            "{name}: assignment (epoch {}): active {}, standby {}, warmup {}",
            after.member_epoch,
            tasks(&a.active),
            tasks(&a.standby),
            tasks(&a.warmup)
        ));
    }
    if after.statuses != before.statuses {
        let statuses: Vec<String> = after.statuses.iter().map(ToString::to_string).collect();
        lines.push(format!(
            "{name}: status: {}",
            if statuses.is_empty() {
                "none".to_string()
            } else {
                statuses.join("; ")
            }
        ));
    }
    let asked = |s: &MemberSnapshot| (s.topology_description_id, s.topology_description_required);
    if asked(after) != asked(before) {
        match asked(after) {
            (Some(id), _) => lines.push(format!("{name}: coordinator asks for the topology description (TopologyDescriptionId {id})")),
            (None, true) => lines.push(format!("{name}: coordinator asks for the topology description (TopologyDescriptionRequired)")),
            (None, false) => {}
        }
    }
    if after.topology_pushes_sent > before.topology_pushes_sent {
        if let Some(id) = after
            .topology_push_in_flight
            .or(after.last_topology_push.as_ref().map(|r| r.id))
        {
            lines.push(format!(
                "{name}: pushed the topology description ({})",
                request(id)
            ));
        }
    }
    let report_seq = |s: &MemberSnapshot| s.last_topology_push.as_ref().map(|r| r.seq);
    if report_seq(after) != report_seq(before) {
        if let Some(report) = &after.last_topology_push {
            let verdict = match &report.result {
                PushResult::Stored => "stored by the coordinator".to_string(),
                other => other.to_string(),
            };
            lines.push(format!(
                "{name}: push result ({}): {verdict}",
                api_name(report.api_key)
            ));
        }
    }
    if after.state == MemberState::Left && before.state != MemberState::Left {
        lines.push(format!("{name}: left the group"));
    }
    lines
}

/// Fenced between the two snapshots: seen fenced (back to joining), or already rejoined from
/// a real epoch. (A member kept at epoch 0 by the initial rebalance delay sends a join with
/// every heartbeat; that is no fencing.)
fn fenced(before: &MemberSnapshot, after: &MemberSnapshot) -> bool {
    let seen_fenced = before.responses > 0
        && before.state != MemberState::Joining
        && after.state == MemberState::Joining;
    let rejoined = after.joins > before.joins && before.member_epoch > 0;
    seen_fenced || rejoined
}

fn request(id: TopologyDescriptionRequest) -> String {
    match id {
        TopologyDescriptionRequest::Id(id) => {
            format!("UpdateStreamsGroupTopologyDescription, TopologyDescriptionId {id}")
        }
        TopologyDescriptionRequest::Required => {
            "StreamsGroupTopologyDescriptionUpdate, by topology epoch".to_string()
        }
    }
}

/// `0:[0,1] 1:[2]`, or `-` for none.
fn tasks(tasks: &Tasks) -> String {
    if tasks.is_empty() {
        return "-".to_string();
    }
    let parts: Vec<String> = tasks
        .iter()
        .map(|(subtopology, partitions)| {
            let partitions: Vec<String> = partitions.iter().map(i32::to_string).collect();
            format!("{subtopology}:[{}]", partitions.join(","))
        })
        .collect();
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    use kcoord_client::streams::{tasks_from, Assignment, PushReport};

    fn snapshot() -> MemberSnapshot {
        MemberSnapshot {
            state: MemberState::Joining,
            member_epoch: 0,
            assignment: Assignment::default(),
            statuses: Vec::new(),
            heartbeat_interval: Duration::from_secs(5),
            responses: 0,
            joins: 0,
            last_error: None,
            topology_description_id: None,
            topology_description_required: false,
            pending_topology_description: None,
            topology_push_in_flight: None,
            topology_pushes_sent: 0,
            last_topology_push: None,
        }
    }

    #[test]
    fn a_join_an_assignment_and_a_push_are_reported() {
        let before = snapshot();
        let id = uuid::Uuid::nil();
        let mut after = MemberSnapshot {
            state: MemberState::Stable,
            member_epoch: 2,
            responses: 1,
            joins: 1,
            assignment: Assignment {
                active: tasks_from([("0", &[0, 1])]),
                ..Default::default()
            },
            topology_description_id: Some(id),
            ..snapshot()
        };
        let lines = changes("member-1", &before, &after);
        assert_eq!(
            lines,
            [
                "member-1: joined (epoch 2)",
                "member-1: assignment (epoch 2): active 0:[0,1], standby -, warmup -",
                "member-1: coordinator asks for the topology description (TopologyDescriptionId 00000000-0000-0000-0000-000000000000)",
            ]
        );
        let asked = after.clone();
        after.topology_pushes_sent = 1;
        after.topology_push_in_flight = Some(TopologyDescriptionRequest::Required);
        assert_eq!(changes("m", &asked, &after), ["m: pushed the topology description (StreamsGroupTopologyDescriptionUpdate, by topology epoch)"]);
        let sent = after.clone();
        after.topology_push_in_flight = None;
        after.last_topology_push = Some(PushReport {
            seq: 1,
            id: TopologyDescriptionRequest::Required,
            api_key: 93,
            result: PushResult::Stored,
        });
        assert_eq!(
            changes("m", &sent, &after),
            ["m: push result (StreamsGroupTopologyDescriptionUpdate): stored by the coordinator"]
        );
    }

    #[test]
    fn joins_at_epoch_zero_are_no_fencing_but_a_rejoin_is() {
        let waiting = MemberSnapshot {
            state: MemberState::Stable,
            responses: 1,
            joins: 1,
            ..snapshot()
        };
        let still_waiting = MemberSnapshot {
            responses: 2,
            joins: 2,
            ..waiting.clone()
        };
        assert!(
            changes("m", &waiting, &still_waiting).is_empty(),
            "the initial rebalance delay keeps epoch 0"
        );
        let member = MemberSnapshot {
            member_epoch: 3,
            ..still_waiting.clone()
        };
        let fenced = MemberSnapshot {
            state: MemberState::Joining,
            member_epoch: 0,
            ..member.clone()
        };
        assert_eq!(changes("m", &member, &fenced), ["m: fenced; rejoining"]);
        let rejoined = MemberSnapshot {
            member_epoch: 4,
            joins: 3,
            responses: 3,
            ..member.clone()
        };
        assert_eq!(changes("m", &member, &rejoined), ["m: fenced; rejoining"]);
        assert!(changes(
            "m",
            &fenced,
            &MemberSnapshot {
                state: MemberState::Stable,
                member_epoch: 4,
                joins: 3,
                ..fenced.clone()
            }
        )
        .is_empty());
    }
}
