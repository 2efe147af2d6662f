//! `--describe` / `--describe --offsets [--verbose]`.
//!
//! Rows are the input partitions (source and repartition-source topics) of every member's
//! active tasks. Kafka prints them in `HashMap` order, which is no order; here they are sorted by
//! topic, then partition.
//!
//! Lag is log-end offset minus the committed offset (or minus the earliest offset when nothing
//! is committed). The end offsets come from ListOffsets; one that cannot be read prints as
//! `-`, as Kafka prints its missing column values.

use std::collections::{BTreeMap, BTreeSet};

use crate::java::pad;
use crate::model::{CommittedOffset, StreamsGroupDescription, TopicPartition};

/// Kafka's `MISSING_COLUMN_VALUE`.
const MISSING: &str = "-";

/// What the table shows for one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OffsetsInfo {
    pub current_offset: Option<i64>,
    pub leader_epoch: Option<i32>,
    pub log_end_offset: Option<i64>,
    pub lag: Option<i64>,
}

/// The partitions of the active tasks of all members. A task of a sub-topology the group does
/// not describe is an error, as in Kafka.
pub fn partitions_of_active_tasks(
    description: &StreamsGroupDescription,
) -> Result<BTreeSet<TopicPartition>, String> {
    let inputs = description.input_topics();
    let mut partitions = BTreeSet::new();
    for member in &description.members {
        for task in &member.assignment.active_tasks {
            let topics = inputs.get(task.subtopology_id.as_str()).ok_or_else(|| {
                format!(
                    "Subtopology {} not found in group description!",
                    task.subtopology_id
                )
            })?;
            for topic in topics {
                partitions.extend(
                    task.partitions
                        .iter()
                        .map(|p| TopicPartition::new(*topic, *p)),
                );
            }
        }
    }
    Ok(partitions)
}

/// Kafka's `getOffsets`: one entry per partition, with the lag when the needed offsets are
/// known.
pub fn offsets_info(
    partitions: &BTreeSet<TopicPartition>,
    committed: &BTreeMap<TopicPartition, CommittedOffset>,
    earliest: &BTreeMap<TopicPartition, i64>,
    latest: &BTreeMap<TopicPartition, i64>,
) -> BTreeMap<TopicPartition, OffsetsInfo> {
    partitions
        .iter()
        .map(|tp| {
            let commit = committed.get(tp);
            let current_offset = commit.map(|c| c.offset);
            let log_end_offset = latest.get(tp).copied();
            let base = current_offset.or_else(|| earliest.get(tp).copied());
            let lag = log_end_offset.zip(base).map(|(end, base)| end - base);
            let info = OffsetsInfo {
                current_offset,
                leader_epoch: commit.and_then(|c| c.leader_epoch),
                log_end_offset,
                lag,
            };
            (tp.clone(), info)
        })
        .collect()
}

/// Nothing for a Dead group or one without rows; else the Dead/Empty notice and the table
/// GROUP(max(15,len)) TOPIC(max(15,longest)) PARTITION(10) OFFSET-LAG, or with `verbose`
/// ... PARTITION(10) CURRENT-OFFSET(15) LEADER-EPOCH(15) LOG-END-OFFSET(15) OFFSET-LAG(15).
pub fn format_offsets(
    description: &StreamsGroupDescription,
    offsets: &BTreeMap<TopicPartition, OffsetsInfo>,
    verbose: bool,
) -> String {
    // Kafka checks the member count here, not the row count.
    if !super::has_rows(description.state, description.members.len()) {
        return String::new();
    }
    let mut out = super::empty_group_notice(&description.group_id, description.state);
    let group_width = super::width(15, [description.group_id.as_str()]);
    let topic_width = super::width(15, offsets.keys().map(|tp| tp.topic.as_str()));
    let known = |v: Option<String>| v.unwrap_or_else(|| MISSING.to_string());
    let lead = |group: &str, topic: &str, partition: &str| {
        format!(
            "{} {} {} ",
            pad(group, group_width),
            pad(topic, topic_width),
            pad(partition, 10)
        )
    };
    if !verbose {
        out.push_str(&format!(
            "{}OFFSET-LAG\n",
            lead("GROUP", "TOPIC", "PARTITION")
        ));
        for (tp, info) in offsets {
            let lag = known(info.lag.map(|l| l.to_string()));
            out.push_str(&format!(
                "{}{lag}\n",
                lead(&description.group_id, &tp.topic, &tp.partition.to_string())
            ));
        }
    } else {
        let tail = |cells: [&str; 4]| {
            format!(
                "{} {} {} {}\n",
                pad(cells[0], 15),
                pad(cells[1], 15),
                pad(cells[2], 15),
                pad(cells[3], 15)
            )
        };
        out.push_str(&lead("GROUP", "TOPIC", "PARTITION"));
        out.push_str(&tail([
            "CURRENT-OFFSET",
            "LEADER-EPOCH",
            "LOG-END-OFFSET",
            "OFFSET-LAG",
        ]));
        for (tp, info) in offsets {
            out.push_str(&lead(
                &description.group_id,
                &tp.topic,
                &tp.partition.to_string(),
            ));
            out.push_str(&tail([
                &known(info.current_offset.map(|o| o.to_string())),
                &known(info.leader_epoch.map(|e| e.to_string())),
                &known(info.log_end_offset.map(|o| o.to_string())),
                &known(info.lag.map(|l| l.to_string())),
            ]));
        }
    }
    out
}
