//! CreatePartitions as the controller decides it, sans-IO, after Kafka 4.4's
//! `ReplicationControlManager.createPartitions`: each topic is grown on its own (a topic that
//! fails adds nothing, the others still grow), the new partitions get PartitionRecords led and
//! replicated by this node, and the whole batch is written at once (`ControllerResult.atomicOf`).
//!
//! The handler has already answered names given twice and topics the principal may not ALTER
//! (`ControllerApis.createPartitions`); this sees only the rest.

use std::collections::HashSet;

use kcoord_metadata::{Record, TopicImage, TopicsImage};
use kcoord_wire::messages::create_partitions_request::CreatePartitionsTopic;
use kcoord_wire::messages::create_partitions_response::CreatePartitionsTopicResult;
use kcoord_wire::records::PartitionRecord;
use kcoord_wire::ErrorCode;

use super::{error, Decision, TopicError, TopicLimits, MAX_PARTITIONS_PER_BATCH};

/// The new partitions of `topics`, in order, with one result per topic (none of their records
/// when `validate_only`, as `QuorumController.createPartitions` drops them).
pub fn create_partitions(
    image: &TopicsImage,
    node_id: i32,
    limits: &TopicLimits,
    topics: &[CreatePartitionsTopic],
    validate_only: bool,
) -> Decision<CreatePartitionsTopicResult> {
    let mut records = Vec::new();
    let mut results = Vec::with_capacity(topics.len());
    let mut partitions = image.partition_count();
    for topic in topics {
        let outcome = grow(image, node_id, topic).and_then(|new| {
            check_room(limits, partitions, records.len(), &topic.name, new.len())?;
            Ok(new)
        });
        let (code, message) = match outcome {
            Ok(new) => {
                partitions += new.len();
                records.extend(new);
                (ErrorCode::NONE, None)
            }
            Err(e) => e,
        };
        results.push(CreatePartitionsTopicResult {
            name: topic.name.clone(),
            error_code: code.code(),
            error_message: message,
            ..Default::default()
        });
    }
    if validate_only {
        records.clear();
    }
    Decision { records, results }
}

/// Kafka's per-operation bound on records (`MAX_RECORDS_PER_USER_OP`, 10,000), which Kafka
/// hits while adding a topic's records and answers as an unexpected error
/// (UNKNOWN_SERVER_ERROR, no message); then kcoord's catalog bound
/// (`controller.max.partitions`), POLICY_VIOLATION as for CreateTopics.
fn check_room(
    limits: &TopicLimits,
    partitions: usize,
    records: usize,
    name: &str,
    adding: usize,
) -> Result<(), TopicError> {
    if records.saturating_add(adding) as i64 > MAX_PARTITIONS_PER_BATCH {
        return Err((ErrorCode::UNKNOWN_SERVER_ERROR, None));
    }
    if partitions.saturating_add(adding) > limits.max_partitions {
        return Err(error(
            ErrorCode::POLICY_VIOLATION,
            format!(
                "Topic '{name}' cannot grow by {adding} partitions: the cluster would pass its maximum of {} partitions (controller.max.partitions); {} are left.",
                limits.max_partitions,
                limits.max_partitions.saturating_sub(partitions)
            ),
        ));
    }
    Ok(())
}

/// The PartitionRecords of one topic's new partitions, or Kafka's error for it.
fn grow(
    image: &TopicsImage,
    node_id: i32,
    topic: &CreatePartitionsTopic,
) -> Result<Vec<Record>, TopicError> {
    let Some(existing) = image.get(&topic.name) else {
        return Err((ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, None));
    };
    let current = existing.partition_count();
    if topic.count == current {
        return Err(error(
            ErrorCode::INVALID_PARTITIONS,
            format!("Topic already has {current} partition(s)."),
        ));
    }
    if topic.count < current {
        return Err(error(
            ErrorCode::INVALID_PARTITIONS,
            format!(
                "The topic {} currently has {current} partition(s); {} would not be an increase.",
                topic.name, topic.count
            ),
        ));
    }
    let additional = topic.count - current;
    if let Some(assignments) = &topic.assignments {
        if assignments.len() as i64 != i64::from(additional) {
            return Err(error(
                ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                format!(
                    "Attempted to add {additional} additional partition(s), but only {} assignment(s) were specified.",
                    assignments.len()
                ),
            ));
        }
    }
    let replication = replication_factor(existing)?;
    if let Some(assignments) = &topic.assignments {
        for a in assignments {
            check_manual_assignment(node_id, &a.broker_ids, replication)?;
        }
    }
    Ok((current..topic.count)
        .map(|partition_id| {
            Record::Partition(PartitionRecord {
                partition_id,
                topic_id: existing.id,
                replicas: vec![node_id],
                isr: vec![node_id],
                leader: node_id,
                leader_epoch: 0,
                partition_epoch: 0,
                ..Default::default()
            })
        })
        .collect())
}

/// The replica count of the topic's first partition, which new partitions must match.
fn replication_factor(topic: &TopicImage) -> Result<usize, TopicError> {
    topic
        .partitions
        .values()
        .next()
        .map(|p| p.replicas.len())
        .ok_or_else(|| {
            error(
                ErrorCode::UNKNOWN_SERVER_ERROR,
                format!(
                    "Invalid state: topic {} appears to have no partitions.",
                    topic.name
                ),
            )
        })
}

/// Kafka's `validateManualPartitionAssignment` with the topic's replication factor: on this
/// single node, only `node_id` is a registered broker that can hold a partition.
fn check_manual_assignment(
    node_id: i32,
    brokers: &[i32],
    replication: usize,
) -> Result<(), TopicError> {
    let bad = |m: String| error(ErrorCode::INVALID_REPLICA_ASSIGNMENT, m);
    if brokers.is_empty() {
        return Err(bad(
            "The manual partition assignment includes an empty replica list.".to_owned(),
        ));
    }
    let mut sorted = brokers.to_vec();
    sorted.sort_unstable();
    let mut seen = HashSet::new();
    for broker in sorted.iter().copied() {
        if broker != node_id {
            return Err(bad(format!(
                "The manual partition assignment includes broker {broker}, but no such broker is registered."
            )));
        }
        if !seen.insert(broker) {
            return Err(bad(format!(
                "The manual partition assignment includes the broker {broker} more than once."
            )));
        }
    }
    if sorted.len() != replication {
        return Err(bad(format!(
            "The manual partition assignment includes a partition with {} replica(s), but this is not consistent with previous partitions, which have {replication} replica(s).",
            sorted.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use kcoord_metadata::Store;
    use kcoord_wire::messages::create_partitions_request::CreatePartitionsAssignment;
    use kcoord_wire::messages::create_topics_request::CreatableTopic;
    use kcoord_wire::messages::CreateTopicsRequest;
    use uuid::Uuid;

    use super::*;
    use crate::topics::{create_topics, TopicDefaults};

    const NODE: i32 = 7;

    fn store_with(topics: &[(&str, i32)]) -> Store {
        let mut store = Store::new();
        let mut next = 100u128;
        let request = CreateTopicsRequest {
            topics: topics
                .iter()
                .map(|(name, n)| CreatableTopic {
                    name: (*name).into(),
                    num_partitions: *n,
                    replication_factor: -1,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let defaults = TopicDefaults {
            node_id: NODE,
            ..TopicDefaults::default()
        };
        let decision = create_topics(
            &store.state().topics,
            &defaults,
            &TopicLimits::default(),
            &request,
            || {
                next += 1;
                Uuid::from_u128(next)
            },
        );
        store.append(decision.records).unwrap();
        store
    }

    fn grow_to(
        name: &str,
        count: i32,
        assignments: Option<Vec<Vec<i32>>>,
    ) -> CreatePartitionsTopic {
        CreatePartitionsTopic {
            name: name.into(),
            count,
            assignments: assignments.map(|a| {
                a.into_iter()
                    .map(|broker_ids| CreatePartitionsAssignment {
                        broker_ids,
                        ..Default::default()
                    })
                    .collect()
            }),
            ..Default::default()
        }
    }

    fn answers(d: &Decision<CreatePartitionsTopicResult>) -> Vec<(&str, i16, Option<&str>)> {
        d.results
            .iter()
            .map(|r| (r.name.as_str(), r.error_code, r.error_message.as_deref()))
            .collect()
    }

    #[test]
    fn grows_topics_with_this_node_as_leader_and_refuses_what_kafka_refuses() {
        let mut store = store_with(&[("a", 2), ("b", 3), ("c", 1)]);
        let d = create_partitions(
            &store.state().topics,
            NODE,
            &TopicLimits::default(),
            &[
                grow_to("a", 4, None),
                grow_to("b", 3, None),
                grow_to("c", 0, None),
                grow_to("nope", 2, None),
                grow_to("c", 3, Some(vec![vec![NODE]])),
                grow_to("c", 2, Some(vec![vec![8]])),
                grow_to("c", 2, Some(vec![vec![NODE, NODE]])),
                grow_to("c", 2, Some(vec![vec![]])),
            ],
            false,
        );
        assert_eq!(
            answers(&d),
            vec![
                ("a", 0, None),
                ("b", 37, Some("Topic already has 3 partition(s).")),
                ("c", 37, Some("The topic c currently has 1 partition(s); 0 would not be an increase.")),
                ("nope", 3, None),
                ("c", 39, Some("Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.")),
                ("c", 39, Some("The manual partition assignment includes broker 8, but no such broker is registered.")),
                ("c", 39, Some("The manual partition assignment includes the broker 7 more than once.")),
                ("c", 39, Some("The manual partition assignment includes an empty replica list.")),
            ]
        );
        assert_eq!(d.records.len(), 2);
        store.append(d.records).unwrap();
        let a = store.state().topics.get("a").unwrap();
        assert_eq!(a.partition_count(), 4);
        let p3 = &a.partitions[&3];
        assert_eq!((p3.leader, p3.replicas.clone()), (NODE, vec![NODE]));
    }

    #[test]
    fn validate_only_and_the_limits_add_nothing() {
        let store = store_with(&[("a", 1)]);
        let topics = &store.state().topics;
        let d = create_partitions(
            topics,
            NODE,
            &TopicLimits::default(),
            &[grow_to("a", 3, Some(vec![vec![NODE], vec![NODE]]))],
            true,
        );
        assert_eq!(answers(&d), vec![("a", 0, None)]);
        assert!(d.records.is_empty());
        let limits = TopicLimits {
            max_topics: 10,
            max_partitions: 3,
        };
        let d = create_partitions(
            topics,
            NODE,
            &limits,
            &[grow_to("a", 3, None), grow_to("a", 4, None)],
            false,
        );
        assert_eq!(d.results[0].error_code, 0);
        assert_eq!(d.results[1].error_code, ErrorCode::POLICY_VIOLATION.code());
        assert_eq!(d.records.len(), 2);
        let d = create_partitions(
            topics,
            NODE,
            &TopicLimits::default(),
            &[grow_to("a", 10_002, None)],
            false,
        );
        assert_eq!(
            answers(&d),
            vec![("a", ErrorCode::UNKNOWN_SERVER_ERROR.code(), None)]
        );
        assert!(d.records.is_empty());
    }
}
