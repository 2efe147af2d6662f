//! Step 3 of the module docs: copartition groups.

use std::collections::{BTreeMap, BTreeSet};

use kcoord_wire::records::streams_group_topology_value::{CopartitionGroup, Subtopology};

use super::{incorrectly_partitioned, java_map, Counts, Failure, InvalidTopology, TopicPartitions};

/// Kafka's `enforceCopartitioning` / `CopartitionedTopicsEnforcer.enforce`, groups taken in
/// sub-topology id order, topics within a group in name order.
pub(super) fn enforce_copartitioning<T: TopicPartitions>(
    by_id: &BTreeMap<&str, &Subtopology>,
    counts: &mut Counts<'_, T>,
) -> Result<(), Failure> {
    let repartition_topics = || {
        by_id
            .values()
            .flat_map(|s| s.repartition_source_topics.iter())
    };
    let fixed: BTreeSet<&str> = repartition_topics()
        .filter(|t| t.partitions != 0)
        .map(|t| t.name.as_str())
        .collect();
    let flexible: BTreeSet<&str> = repartition_topics()
        .filter(|t| t.partitions == 0)
        .map(|t| t.name.as_str())
        .collect();

    for sub in by_id.values() {
        for group in &sub.copartition_groups {
            let members = copartition_group_topics(sub, group)?;
            if members.is_empty() {
                continue;
            }

            let count = |topic: &str| {
                counts.get(topic).ok_or_else(|| {
                    InvalidTopology::new(format!(
                        "Number of partitions is not set for topic: {topic}"
                    ))
                })
            };
            let mut repartition: BTreeMap<&str, i32> = BTreeMap::new();
            let mut others: BTreeMap<&str, i32> = BTreeMap::new();
            for &topic in &members {
                if fixed.contains(topic) || flexible.contains(topic) {
                    repartition.insert(topic, count(topic)?);
                } else {
                    others.insert(topic, count(topic)?);
                }
            }

            let target = copartition_target(&repartition, &others, &fixed)?;
            for (&topic, &current) in &repartition {
                if fixed.contains(topic) && current != target {
                    return Err(incorrectly_partitioned(format!(
                        "Number of partitions [{current}] of repartition topic [{topic}] doesn't match number of partitions [{target}] of the source topic."
                    )));
                }
            }
            for &topic in repartition.keys() {
                counts.decided.insert(topic.to_string(), target);
            }
        }
    }
    Ok(())
}

/// The topics of a copartition group of `sub`, which names them by their index in the
/// sub-topology's source and repartition-source topics.
fn copartition_group_topics<'a>(
    sub: &'a Subtopology,
    group: &CopartitionGroup,
) -> Result<BTreeSet<&'a str>, InvalidTopology> {
    let mut members: BTreeSet<&str> = BTreeSet::new();
    for &i in &group.source_topics {
        let topic = usize::try_from(i).ok().and_then(|i| sub.source_topics.get(i)).ok_or_else(|| {
            InvalidTopology::new(format!(
                "Copartition group of subtopology {} refers to source topic index {i}, which does not exist.",
                sub.subtopology_id
            ))
        })?;
        members.insert(topic);
    }
    for &i in &group.repartition_source_topics {
        let topic = usize::try_from(i).ok().and_then(|i| sub.repartition_source_topics.get(i)).ok_or_else(|| {
            InvalidTopology::new(format!(
                "Copartition group of subtopology {} refers to repartition source topic index {i}, which does not exist.",
                sub.subtopology_id
            ))
        })?;
        members.insert(&topic.name);
    }
    Ok(members)
}

/// The partition count a copartition group's topics must share: the external topics' (`others`),
/// which must agree, else the fixed repartition topics', else the largest of the flexible ones.
fn copartition_target(
    repartition: &BTreeMap<&str, i32>,
    others: &BTreeMap<&str, i32>,
    fixed: &BTreeSet<&str>,
) -> Result<i32, Failure> {
    if !others.is_empty() {
        // External topics decide, and they must agree.
        let mut values = others.values().copied();
        let first = values.next().unwrap_or(0);
        if values.any(|c| c != first) {
            return Err(incorrectly_partitioned(format!(
                "Following topics do not have the same number of partitions: [{}]",
                java_map(others)
            )));
        }
        return Ok(first);
    }
    let fixed_counts: BTreeSet<i32> = repartition
        .iter()
        .filter(|(t, _)| fixed.contains(**t))
        .map(|(_, &c)| c)
        .collect();
    match fixed_counts.len() {
        // Only flexible repartition topics: they all take the largest count.
        0 => match repartition.values().copied().max() {
            Some(max) if max > 0 => Ok(max),
            _ => Err(InvalidTopology::new(format!(
                "All topics in the copartition group had undefined partition number: [{}]",
                repartition.keys().copied().collect::<Vec<_>>().join(", ")
            ))
            .into()),
        },
        1 => Ok(*fixed_counts.first().unwrap_or(&0)),
        _ => Err(incorrectly_partitioned(format!(
            "Following topics do not have the same number of partitions: [{}]",
            java_map(repartition)
        ))),
    }
}
