//! `--describe --state [--verbose]`.

use crate::java::pad;
use crate::model::StreamsGroupDescription;

/// The Dead/Empty notice (always, even before the table), then a header and one row:
/// GROUP(max(15,len)) COORDINATOR (ID)(max(25,len)) ASSIGNOR(max(15,len)) STATE(25)
/// [GROUP-EPOCH(15) TARGET-ASSIGNMENT-EPOCH(25)] #MEMBERS.
pub fn format_state(description: &StreamsGroupDescription, verbose: bool) -> String {
    let mut out = super::empty_group_notice(&description.group_id, description.state);
    let c = &description.coordinator;
    let coordinator = format!("{}:{} ({})", c.host, c.port, c.id);
    let assignor = description.assignor_name.as_deref().unwrap_or("");
    let group_width = super::width(15, [description.group_id.as_str()]);
    let coordinator_width = super::width(25, [coordinator.as_str()]);
    let assignor_width = super::width(15, [assignor]);
    let state = description.state.to_string();
    let members = description.members.len().to_string();
    let mut row = |cells: [&str; 4], epochs: Option<[&str; 2]>, last: &str| {
        out.push_str(&format!(
            "{} {} {} {} ",
            pad(cells[0], group_width),
            pad(cells[1], coordinator_width),
            pad(cells[2], assignor_width),
            pad(cells[3], 25)
        ));
        if let Some([group_epoch, target_epoch]) = epochs {
            out.push_str(&format!(
                "{} {} ",
                pad(group_epoch, 15),
                pad(target_epoch, 25)
            ));
        }
        out.push_str(last);
        out.push('\n');
    };
    let cells = [
        description.group_id.as_str(),
        coordinator.as_str(),
        assignor,
        state.as_str(),
    ];
    if verbose {
        let group_epoch = description.group_epoch.to_string();
        let target_epoch = description.target_assignment_epoch.to_string();
        row(
            ["GROUP", "COORDINATOR (ID)", "ASSIGNOR", "STATE"],
            Some(["GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH"]),
            "#MEMBERS",
        );
        row(cells, Some([&group_epoch, &target_epoch]), &members);
    } else {
        row(
            ["GROUP", "COORDINATOR (ID)", "ASSIGNOR", "STATE"],
            None,
            "#MEMBERS",
        );
        row(cells, None, &members);
    }
    out
}
