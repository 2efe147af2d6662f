//! `--list` and `--list --state`.

use crate::java::pad;
use crate::model::{GroupListing, GroupState};

/// `--list`: one group id per line.
pub fn format_group_ids(groups: &[GroupListing]) -> String {
    groups.iter().map(|g| format!("{}\n", g.group_id)).collect()
}

/// `--list --state`: `GROUP` padded to max(15, longest id), then ` STATE`. A group whose
/// broker reported no state shows `Unknown`, as in Kafka.
pub fn format_group_states(groups: &[GroupListing]) -> String {
    let group_width = super::width(15, groups.iter().map(|g| g.group_id.as_str()));
    let mut out = format!("{} {}\n", pad("GROUP", group_width), "STATE");
    for group in groups {
        let state = group.state.unwrap_or(GroupState::Unknown);
        out.push_str(&format!(
            "{} {}\n",
            pad(&group.group_id, group_width),
            state
        ));
    }
    out
}
