//! `--describe --lag` (kcoord's addition, not in Kafka's tool): the offsets table of
//! `--describe --offsets` summed per sub-topology, the sub-topology that lags most first, so a
//! terminal shows where an application falls behind at a glance.
//!
//! GROUP(max(15,len)) SUBTOPOLOGY(max(11,longest)) PARTITIONS(10) OFFSET-LAG(15) TOPICS: a
//! sub-topology's lag is the sum of the lags of its partitions that have one (`-` when none
//! has), its partitions those of its active tasks, as `--offsets` lists them.

use std::collections::BTreeMap;

use super::offsets::OffsetsInfo;
use crate::java::pad;
use crate::model::{StreamsGroupDescription, TopicPartition};

/// One sub-topology's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubtopologyLag<'a> {
    pub subtopology_id: &'a str,
    pub topics: Vec<&'a str>,
    pub partitions: usize,
    pub lag: Option<i64>,
}

/// The rows of `offsets` per sub-topology of `description`, most lag first (then by id).
pub fn subtopology_lags<'a>(
    description: &'a StreamsGroupDescription,
    offsets: &BTreeMap<TopicPartition, OffsetsInfo>,
) -> Vec<SubtopologyLag<'a>> {
    let mut rows: Vec<SubtopologyLag> = description
        .input_topics()
        .into_iter()
        .map(|(id, topics)| {
            let mine: Vec<&OffsetsInfo> = offsets
                .iter()
                .filter(|(tp, _)| topics.contains(&tp.topic.as_str()))
                .map(|(_, info)| info)
                .collect();
            let lags: Vec<i64> = mine.iter().filter_map(|i| i.lag).collect();
            SubtopologyLag {
                subtopology_id: id,
                topics,
                partitions: mine.len(),
                lag: (!lags.is_empty()).then(|| lags.iter().sum()),
            }
        })
        .filter(|row| row.partitions > 0)
        .collect();
    rows.sort_by(|a, b| {
        b.lag
            .cmp(&a.lag)
            .then(a.subtopology_id.cmp(b.subtopology_id))
    });
    rows
}

/// The table; nothing for a Dead group or one without rows, as `--offsets`.
pub fn format_subtopology_lag(
    description: &StreamsGroupDescription,
    offsets: &BTreeMap<TopicPartition, OffsetsInfo>,
) -> String {
    if !super::has_rows(description.state, description.members.len()) {
        return String::new();
    }
    let mut out = super::empty_group_notice(&description.group_id, description.state);
    let rows = subtopology_lags(description, offsets);
    let group_width = super::width(15, [description.group_id.as_str()]);
    let id_width = super::width(11, rows.iter().map(|r| r.subtopology_id));
    let line = |group: &str, id: &str, partitions: &str, lag: &str, topics: &str| {
        format!(
            "{} {} {} {} {topics}\n",
            pad(group, group_width),
            pad(id, id_width),
            pad(partitions, 10),
            pad(lag, 15)
        )
    };
    out.push_str(&line(
        "GROUP",
        "SUBTOPOLOGY",
        "PARTITIONS",
        "OFFSET-LAG",
        "TOPICS",
    ));
    for row in &rows {
        out.push_str(&line(
            &description.group_id,
            row.subtopology_id,
            &row.partitions.to_string(),
            &row.lag.map_or_else(|| "-".to_owned(), |l| l.to_string()),
            &row.topics.join(","),
        ));
    }
    out
}
