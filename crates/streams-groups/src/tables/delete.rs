//! `--delete` outcome messages.

use super::error_line;

/// Kafka's messages after deleting groups. `failed` pairs a group with the text of the error
/// that stopped its deletion (a Java exception's `toString()`); both lists are in the order the
/// groups were requested (Kafka uses `HashMap` order).
pub fn format_delete_outcome(deleted: &[String], failed: &[(String, String)]) -> String {
    let quoted = |groups: &[String]| format!("'{}'", groups.join("', '"));
    if failed.is_empty() {
        return format!(
            "Deletion of requested streams groups ({}) was successful.\n",
            quoted(deleted)
        );
    }
    let mut out = error_line("Deletion of some streams groups failed:");
    for (group, error) in failed {
        out.push_str(&format!(
            "* Group '{group}' could not be deleted due to: {error}\n"
        ));
    }
    if !deleted.is_empty() {
        out.push_str(&format!(
            "\nThese streams groups were deleted successfully: {}.\n",
            quoted(deleted)
        ));
    }
    out
}
