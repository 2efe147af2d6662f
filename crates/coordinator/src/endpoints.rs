//! PartitionsByUserEndpoint: which topic partitions each member with an endpoint serves, for
//! interactive queries (Kafka's `EndpointToPartitionsManager`).
use std::collections::{BTreeMap, BTreeSet};

use kcoord_metadata::{StreamsGroupMember, Tasks, TopicsImage};
use kcoord_wire::messages::streams_group_heartbeat_response as resp;

use crate::configured_topology::ConfiguredTopology;

fn topic_partitions(
    tasks: &[&Tasks],
    configured: &ConfiguredTopology,
    topics: &TopicsImage,
) -> Vec<resp::TopicPartition> {
    let mut by_topic: BTreeMap<String, BTreeSet<i32>> = BTreeMap::new();
    for t in tasks {
        for (sub_id, partitions) in t.iter() {
            let Some(sub) = configured.subtopologies.get(sub_id.as_str()) else {
                continue;
            };
            let sources = sub
                .source_topics
                .iter()
                .chain(sub.repartition_source_topics.keys());
            for topic in sources {
                let count = topics.get(topic).map_or(0, |t| t.partition_count());
                let entry = by_topic.entry(topic.clone()).or_default();
                entry.extend(partitions.iter().copied().filter(|p| *p < count));
            }
        }
    }
    by_topic
        .into_iter()
        .filter(|(_, p)| !p.is_empty())
        .map(|(topic, p)| resp::TopicPartition {
            topic,
            partitions: p.into_iter().collect(),
            ..Default::default()
        })
        .collect()
}

/// One entry per member of `members` (the group's, in member id order) that has a user
/// endpoint; standby partitions include warm-ups.
pub fn partitions_by_user_endpoint<'a>(
    members: impl IntoIterator<Item = &'a StreamsGroupMember>,
    configured: &ConfiguredTopology,
    topics: &TopicsImage,
) -> Vec<resp::EndpointToPartitions> {
    members
        .into_iter()
        .filter_map(|m| {
            let endpoint = m.user_endpoint()?;
            Some(resp::EndpointToPartitions {
                user_endpoint: resp::Endpoint {
                    host: endpoint.host.clone(),
                    port: endpoint.port,
                    ..Default::default()
                },
                active_partitions: topic_partitions(&[&m.assigned().active], configured, topics),
                standby_partitions: topic_partitions(
                    &[&m.assigned().standby, &m.assigned().warmup],
                    configured,
                    topics,
                ),
                ..Default::default()
            })
        })
        .collect()
}
