//! `--output json`: the client model (with the rebuilt predecessors) as pretty JSON.
//!
//! Keys come in a fixed order (struct field order; sets sorted), so the output is stable:
//! `{"subtopologies": [{"id", "nodes": [{"name", "type": "source"|"processor"|"sink",
//! "topics"|"stores"|"topic", "successors", "predecessors"}]}], "globalStores": [{"source",
//! "processor"}]}`. A sink without a fixed topic has `"topic": null`.

use crate::topology::StreamsGroupTopologyDescription;

/// The model as pretty-printed JSON followed by a newline.
pub fn format_json(topology: &StreamsGroupTopologyDescription) -> String {
    // Serializing plain structs of strings and sets into a String cannot fail; the fallback
    // keeps the signature simple without an unwrap.
    let mut out = serde_json::to_string_pretty(topology)
        .unwrap_or_else(|e| format!("{{\"error\": {:?}}}", e.to_string()));
    out.push('\n');
    out
}
