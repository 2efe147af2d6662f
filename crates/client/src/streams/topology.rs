//! A builder for the `Topology` a streams member sends when it joins (the heartbeat's wire
//! struct, which is what the coordinator computes tasks and internal topics from).

use kcoord_wire::messages::streams_group_heartbeat_request::{
    CopartitionGroup, KeyValue, Subtopology, TopicInfo, Topology,
};

/// Why a topology could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    #[error("subtopology {subtopology}: copartition group names {topic:?}, which is neither a source topic nor a repartition source topic of the subtopology")]
    UnknownCopartitionTopic { subtopology: String, topic: String },
    #[error("subtopology {subtopology}: copartition group refers to more topics than an int16 index can address")]
    TooManyTopics { subtopology: String },
    #[error("subtopology id {0:?} is used twice")]
    DuplicateSubtopology(String),
}

/// Builds the heartbeat's `Topology` struct.
///
/// ```
/// use kcoord_client::streams::{SubtopologyBuilder, TopologyBuilder};
/// let topology = TopologyBuilder::new(1)
///     .subtopology(SubtopologyBuilder::new("0").source_topics(["orders"]).repartition_sink_topic("app-repartition"))
///     .subtopology(SubtopologyBuilder::new("1").repartition_source_topic("app-repartition", 0).state_changelog_topic("app-store-changelog"))
///     .build()
///     .unwrap();
/// assert_eq!(topology.subtopologies.len(), 2);
/// ```
#[derive(Debug, Clone, Default)]
pub struct TopologyBuilder {
    epoch: i32,
    subtopologies: Vec<SubtopologyBuilder>,
}

impl TopologyBuilder {
    /// A topology at `epoch` (Kafka Streams starts at 0; a higher epoch is an upgrade).
    pub fn new(epoch: i32) -> Self {
        TopologyBuilder {
            epoch,
            subtopologies: Vec::new(),
        }
    }

    /// One stateless subtopology `"0"` reading `source_topics`: the smallest useful topology.
    pub fn stateless(
        epoch: i32,
        source_topics: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        TopologyBuilder::new(epoch)
            .subtopology(SubtopologyBuilder::new("0").source_topics(source_topics))
    }

    pub fn subtopology(mut self, subtopology: SubtopologyBuilder) -> Self {
        self.subtopologies.push(subtopology);
        self
    }

    pub fn build(self) -> Result<Topology, TopologyError> {
        let mut subtopologies: Vec<Subtopology> = Vec::with_capacity(self.subtopologies.len());
        for builder in self.subtopologies {
            let subtopology = builder.build()?;
            if subtopologies
                .iter()
                .any(|s| s.subtopology_id == subtopology.subtopology_id)
            {
                return Err(TopologyError::DuplicateSubtopology(
                    subtopology.subtopology_id,
                ));
            }
            subtopologies.push(subtopology);
        }
        Ok(Topology {
            epoch: self.epoch,
            subtopologies,
            ..Default::default()
        })
    }
}

/// Builds one `Subtopology`. Copartition groups are given by topic name and turned into the
/// wire's indexes (into the subtopology's own source and repartition-source arrays) at build.
#[derive(Debug, Clone, Default)]
pub struct SubtopologyBuilder {
    subtopology: Subtopology,
    copartition_groups: Vec<Vec<String>>,
}

impl SubtopologyBuilder {
    pub fn new(subtopology_id: impl Into<String>) -> Self {
        SubtopologyBuilder {
            subtopology: Subtopology {
                subtopology_id: subtopology_id.into(),
                ..Default::default()
            },
            copartition_groups: Vec::new(),
        }
    }

    pub fn source_topics(mut self, topics: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.subtopology
            .source_topics
            .extend(topics.into_iter().map(Into::into));
        self
    }

    /// A changelog topic; its partition count is always derived by the coordinator.
    pub fn state_changelog_topic(self, name: impl Into<String>) -> Self {
        self.state_changelog_topic_with(InternalTopic::new(name, 0))
    }

    pub fn state_changelog_topic_with(mut self, topic: InternalTopic) -> Self {
        self.subtopology
            .state_changelog_topics
            .push(topic.into_wire());
        self
    }

    /// A repartition topic this subtopology writes to.
    pub fn repartition_sink_topic(mut self, name: impl Into<String>) -> Self {
        self.subtopology.repartition_sink_topics.push(name.into());
        self
    }

    /// A repartition topic this subtopology reads; `partitions` 0 lets the coordinator decide.
    pub fn repartition_source_topic(self, name: impl Into<String>, partitions: i32) -> Self {
        self.repartition_source_topic_with(InternalTopic::new(name, partitions))
    }

    pub fn repartition_source_topic_with(mut self, topic: InternalTopic) -> Self {
        self.subtopology
            .repartition_source_topics
            .push(topic.into_wire());
        self
    }

    /// Topics (source or repartition source, by name) that must have the same partition count.
    pub fn copartition_group(
        mut self,
        topics: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.copartition_groups
            .push(topics.into_iter().map(Into::into).collect());
        self
    }

    fn build(mut self) -> Result<Subtopology, TopologyError> {
        let id = self.subtopology.subtopology_id.clone();
        let index = |found: Option<usize>| -> Result<Option<i16>, TopologyError> {
            found
                .map(|i| {
                    i16::try_from(i).map_err(|_| TopologyError::TooManyTopics {
                        subtopology: id.clone(),
                    })
                })
                .transpose()
        };
        for names in &self.copartition_groups {
            let mut group = CopartitionGroup::default();
            for name in names {
                if let Some(i) = index(
                    self.subtopology
                        .source_topics
                        .iter()
                        .position(|t| t == name),
                )? {
                    group.source_topics.push(i);
                } else if let Some(i) = index(
                    self.subtopology
                        .repartition_source_topics
                        .iter()
                        .position(|t| &t.name == name),
                )? {
                    group.repartition_source_topics.push(i);
                } else {
                    return Err(TopologyError::UnknownCopartitionTopic {
                        subtopology: id.clone(),
                        topic: name.clone(),
                    });
                }
            }
            self.subtopology.copartition_groups.push(group);
        }
        Ok(self.subtopology)
    }
}

/// An internal (changelog or repartition) topic as the topology declares it.
#[derive(Debug, Clone, Default)]
pub struct InternalTopic {
    pub name: String,
    /// 0 = derived by the coordinator (always 0 for changelogs).
    pub partitions: i32,
    /// 0 = the broker's default.
    pub replication_factor: i16,
    pub configs: Vec<(String, String)>,
}

impl InternalTopic {
    pub fn new(name: impl Into<String>, partitions: i32) -> Self {
        InternalTopic {
            name: name.into(),
            partitions,
            ..Default::default()
        }
    }

    pub fn replication_factor(mut self, replication_factor: i16) -> Self {
        self.replication_factor = replication_factor;
        self
    }

    pub fn config(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.configs.push((key.into(), value.into()));
        self
    }

    fn into_wire(self) -> TopicInfo {
        TopicInfo {
            name: self.name,
            partitions: self.partitions,
            replication_factor: self.replication_factor,
            topic_configs: self
                .configs
                .into_iter()
                .map(|(key, value)| KeyValue {
                    key,
                    value,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copartition_groups_become_indexes_into_the_subtopology() {
        let topology = TopologyBuilder::new(3)
            .subtopology(
                SubtopologyBuilder::new("0")
                    .source_topics(["a", "b"])
                    .repartition_source_topic("r", 4)
                    .copartition_group(["b", "r"])
                    .state_changelog_topic_with(
                        InternalTopic::new("c", 0)
                            .replication_factor(3)
                            .config("cleanup.policy", "compact"),
                    ),
            )
            .build()
            .unwrap();
        assert_eq!(topology.epoch, 3);
        let s = &topology.subtopologies[0];
        assert_eq!(s.copartition_groups[0].source_topics, vec![1]);
        assert_eq!(s.copartition_groups[0].repartition_source_topics, vec![0]);
        assert_eq!(s.repartition_source_topics[0].partitions, 4);
        assert_eq!(
            (
                s.state_changelog_topics[0].replication_factor,
                s.state_changelog_topics[0].topic_configs.len()
            ),
            (3, 1)
        );
    }

    #[test]
    fn bad_topologies_are_refused() {
        let unknown = TopologyBuilder::stateless(0, ["a"])
            .subtopology(SubtopologyBuilder::new("1").copartition_group(["x"]))
            .build();
        assert!(
            matches!(unknown, Err(TopologyError::UnknownCopartitionTopic { .. })),
            "{unknown:?}"
        );
        let twice = TopologyBuilder::stateless(0, ["a"])
            .subtopology(SubtopologyBuilder::new("0"))
            .build();
        assert_eq!(
            twice.unwrap_err(),
            TopologyError::DuplicateSubtopology("0".into())
        );
    }
}
