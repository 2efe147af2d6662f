//! The tables and messages of `--list`, `--describe` (offsets, `--members`, `--state`) and
//! `--delete`, byte for byte as Kafka's `StreamsGroupCommand` prints them (and kcoord's own
//! `--describe --lag`, in the same style): every column is a
//! Java `%-Ns` (left-justified, padded, never truncated), columns are separated by one space,
//! and several groups print as repeated tables, each with its header.

mod delete;
mod lag;
mod list;
mod members;
mod offsets;
mod state;

pub use delete::format_delete_outcome;
pub use lag::{format_subtopology_lag, subtopology_lags, SubtopologyLag};
pub use list::{format_group_ids, format_group_states};
pub use members::format_members;
pub use offsets::{format_offsets, offsets_info, partitions_of_active_tasks, OffsetsInfo};
pub use state::format_state;

use crate::model::GroupState;

/// Kafka's `printError`: `System.out.println("\nError: " + msg)`.
pub fn error_line(message: &str) -> String {
    format!("\nError: {message}\n")
}

/// Kafka's `maybePrintEmptyGroupState`: a note for a Dead or Empty group, else nothing.
fn empty_group_notice(group_id: &str, state: GroupState) -> String {
    match state {
        GroupState::Dead => error_line(&format!("Streams group '{group_id}' does not exist.")),
        GroupState::Empty => error_line(&format!(
            "Streams group '{group_id}' has no active members."
        )),
        _ => String::new(),
    }
}

/// Kafka's `isGroupStateValid`: tables with rows print only for a live group with rows.
fn has_rows(state: GroupState, rows: usize) -> bool {
    state != GroupState::Dead && rows > 0
}

/// The width of a column: `minimum`, or the longest value (in Java `String.length()`).
fn width<'a>(minimum: usize, values: impl IntoIterator<Item = &'a str>) -> usize {
    values
        .into_iter()
        .map(crate::java::java_len)
        .fold(minimum, usize::max)
}
