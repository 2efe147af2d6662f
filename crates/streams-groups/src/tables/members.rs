//! `--describe --members [--verbose]`.

use crate::java::pad;
use crate::model::{MemberAssignment, StreamsGroupDescription, TaskIds};

/// Nothing for a Dead group or one without members; else the Dead/Empty notice and the table
/// GROUP(max(15,len)) MEMBER(max(15)) PROCESS(max(15)) CLIENT-ID(max(15)) ASSIGNMENTS, or with
/// `verbose` GROUP TARGET-ASSIGNMENT-EPOCH(25) TOPOLOGY-EPOCH(15) MEMBER MEMBER-PROTOCOL(15)
/// MEMBER-EPOCH(15) PROCESS CLIENT-ID ASSIGNMENTS. Kafka's verbose format string has no space
/// between TOPOLOGY-EPOCH and MEMBER; that quirk is kept, as it is part of the output.
pub fn format_members(description: &StreamsGroupDescription, verbose: bool) -> String {
    let members = &description.members;
    if !super::has_rows(description.state, members.len()) {
        return String::new();
    }
    let mut out = super::empty_group_notice(&description.group_id, description.state);
    let widths = Widths {
        group: super::width(15, [description.group_id.as_str()]),
        member: super::width(15, members.iter().map(|m| m.member_id.as_str())),
        process: super::width(15, members.iter().map(|m| m.process_id.as_str())),
        client: super::width(15, members.iter().map(|m| m.client_id.as_str())),
    };
    if verbose {
        verbose_table(description, &widths, &mut out);
    } else {
        table(description, &widths, &mut out);
    }
    out
}

/// The widths of the columns that grow with their values.
struct Widths {
    group: usize,
    member: usize,
    process: usize,
    client: usize,
}

/// GROUP MEMBER PROCESS CLIENT-ID ASSIGNMENTS.
fn table(description: &StreamsGroupDescription, widths: &Widths, out: &mut String) {
    let row = |group: &str, member: &str, process: &str, client: &str, assignments: &str| {
        format!(
            "{} {} {} {} {assignments}\n",
            pad(group, widths.group),
            pad(member, widths.member),
            pad(process, widths.process),
            pad(client, widths.client)
        )
    };
    out.push_str(&row(
        "GROUP",
        "MEMBER",
        "PROCESS",
        "CLIENT-ID",
        "ASSIGNMENTS",
    ));
    for m in &description.members {
        out.push_str(&row(
            &description.group_id,
            &m.member_id,
            &m.process_id,
            &m.client_id,
            &tasks(&m.assignment, None),
        ));
    }
}

/// GROUP TARGET-ASSIGNMENT-EPOCH TOPOLOGY-EPOCH MEMBER MEMBER-PROTOCOL MEMBER-EPOCH PROCESS
/// CLIENT-ID ASSIGNMENTS, with the target assignments.
fn verbose_table(description: &StreamsGroupDescription, widths: &Widths, out: &mut String) {
    let row = |cells: [&str; 8], assignments: &str| {
        format!(
            "{} {} {}{} {} {} {} {} {assignments}\n",
            pad(cells[0], widths.group),
            pad(cells[1], 25),
            pad(cells[2], 15),
            pad(cells[3], widths.member),
            pad(cells[4], 15),
            pad(cells[5], 15),
            pad(cells[6], widths.process),
            pad(cells[7], widths.client)
        )
    };
    out.push_str(&row(
        [
            "GROUP",
            "TARGET-ASSIGNMENT-EPOCH",
            "TOPOLOGY-EPOCH",
            "MEMBER",
            "MEMBER-PROTOCOL",
            "MEMBER-EPOCH",
            "PROCESS",
            "CLIENT-ID",
        ],
        "ASSIGNMENTS",
    ));
    let target_epoch = description.target_assignment_epoch.to_string();
    let topology_epoch = description.topology_epoch.to_string();
    for m in &description.members {
        let protocol = if m.is_classic { "classic" } else { "streams" };
        let member_epoch = m.member_epoch.to_string();
        out.push_str(&row(
            [
                &description.group_id,
                &target_epoch,
                &topology_epoch,
                &m.member_id,
                protocol,
                &member_epoch,
                &m.process_id,
                &m.client_id,
            ],
            &tasks(&m.assignment, Some(&m.target_assignment)),
        ));
    }
}

/// Kafka's `getTasksForPrinting`: `ACTIVE: 0:[0,1]; 1:[0]; STANDBY: ...`, empty sections left
/// out, target sections appended in verbose mode.
fn tasks(assignment: &MemberAssignment, target: Option<&MemberAssignment>) -> String {
    let mut out = section(&assignment.active_tasks, "ACTIVE")
        + &section(&assignment.standby_tasks, "STANDBY")
        + &section(&assignment.warmup_tasks, "WARMUP");
    if let Some(target) = target {
        out += &section(&target.active_tasks, "TARGET-ACTIVE");
        out += &section(&target.standby_tasks, "TARGET-STANDBY");
        out += &section(&target.warmup_tasks, "TARGET-WARMUP");
    }
    out
}

fn section(tasks: &[TaskIds], kind: &str) -> String {
    if tasks.is_empty() {
        return String::new();
    }
    let mut out = format!("{kind}: ");
    for t in tasks {
        let partitions: Vec<String> = t.partitions.iter().map(i32::to_string).collect();
        out.push_str(&format!(
            "{}:[{}]; ",
            t.subtopology_id,
            partitions.join(",")
        ));
    }
    out
}
