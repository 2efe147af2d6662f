//! Configuring a streams group's topology against the topic catalog (KIP-1071, facts §4.4).
//!
//! Sans-IO and pure: [`configure`] takes the group topology as stored in its
//! `StreamsGroupTopology` record plus a view of the existing topics' partition counts, and decides
//! the partition counts of all internal topics, the number of tasks of every sub-topology, the
//! internal topics still to create, and the heartbeat status to report. It mirrors Apache Kafka's
//! `InternalTopicManager.configureTopics` with `RepartitionTopics`, `CopartitionedTopicsEnforcer`
//! and `ChangelogTopics`, in the same order of checks and with the same status detail texts:
//!
//! 1. any missing source topic → MISSING_SOURCE_TOPICS (nothing else is computed);
//! 2. repartition topics with `Partitions == 0` get the max partition count of the source and
//!    repartition-source topics of the sub-topology that writes them (iterated to a fixed point);
//!    an unresolvable loop is a STREAMS_INVALID_TOPOLOGY *error* (the whole heartbeat fails);
//! 3. copartition groups are enforced (INCORRECTLY_PARTITIONED_TOPICS on a conflict, flexible
//!    repartition topics take the group's count);
//! 4. changelog topics get the max partition count of their sub-topology's inputs;
//! 5. tasks per sub-topology = the same max;
//! 6. existing internal topics with a different partition count → INCORRECTLY_PARTITIONED_TOPICS;
//!    missing internal topics → MISSING_INTERNAL_TOPICS plus the topics to create.
//!
//! Where Kafka's result depends on Java hash-map iteration order this module is deterministic
//! instead: topics are considered in name order and sub-topologies in id order.
use std::collections::{BTreeMap, BTreeSet, HashMap};

use kcoord_metadata::{TopicsImage, VecMap, VecSet};
use kcoord_wire::records::streams_group_topology_value::{Subtopology, TopicInfo};
use kcoord_wire::records::StreamsGroupTopologyValue;
use kcoord_wire::ErrorCode;
use uuid::Uuid;

use crate::task::TaskId;

mod copartition;
mod repartition;

use copartition::enforce_copartitioning;
use repartition::repartition_partition_counts;

// ---------------------------------------------------------------------------------------------
// Topic catalog view
// ---------------------------------------------------------------------------------------------

/// What the configuration needs to know about existing topics.
pub trait TopicPartitions {
    /// The partition count of an existing topic, `None` if the topic does not exist.
    fn partitions(&self, topic: &str) -> Option<i32>;

    /// The id of an existing topic, if known. Only used by [`metadata_hash`], so that deleting
    /// and re-creating a topic with the same partition count still changes the hash.
    fn topic_id(&self, _topic: &str) -> Option<Uuid> {
        None
    }
}

impl TopicPartitions for TopicsImage {
    fn partitions(&self, topic: &str) -> Option<i32> {
        self.get(topic).map(|t| t.partition_count())
    }

    fn topic_id(&self, topic: &str) -> Option<Uuid> {
        self.get(topic).map(|t| t.id)
    }
}

impl<F: Fn(&str) -> Option<i32>> TopicPartitions for F {
    fn partitions(&self, topic: &str) -> Option<i32> {
        self(topic)
    }
}

impl TopicPartitions for BTreeMap<String, i32> {
    fn partitions(&self, topic: &str) -> Option<i32> {
        self.get(topic).copied()
    }
}

impl TopicPartitions for HashMap<String, i32> {
    fn partitions(&self, topic: &str) -> Option<i32> {
        self.get(topic).copied()
    }
}

// ---------------------------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------------------------

/// An internal topic (repartition or changelog) with its decided partition count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfiguredInternalTopic {
    pub name: String,
    /// The partition count from the topology, or the decided one when the topology said 0.
    pub partitions: i32,
    /// As given in the topology: 0 = broker default (StreamsGroupDescribe reports it like this).
    pub replication_factor: i16,
    pub configs: VecMap<String, String>,
}

/// A sub-topology whose tasks can be assigned.
///
/// Cached per group for as long as the group lives, so its collections are sorted vectors
/// (which iterate in key order exactly like `BTreeMap`/`BTreeSet`) built without spare
/// capacity: a one-entry B-tree would cost a whole node of several hundred bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfiguredSubtopology {
    pub id: String,
    /// Max partition count over the source and repartition-source topics.
    pub num_tasks: i32,
    /// True iff the sub-topology has at least one changelog topic (only these get standbys).
    pub stateful: bool,
    pub source_topics: VecSet<String>,
    pub repartition_sink_topics: VecSet<String>,
    pub repartition_source_topics: VecMap<String, ConfiguredInternalTopic>,
    pub state_changelog_topics: VecMap<String, ConfiguredInternalTopic>,
}

impl ConfiguredSubtopology {
    /// The tasks of this sub-topology: partitions `0..num_tasks`.
    pub fn tasks(&self) -> impl Iterator<Item = TaskId> + '_ {
        (0..self.num_tasks).map(move |p| TaskId::new(self.id.clone(), p))
    }
}

/// A topic the coordinator asks to be created (a CreateTopics `CreatableTopic`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatableTopic {
    pub name: String,
    pub partitions: i32,
    /// -1 (broker default) when the topology gave 0.
    pub replication_factor: i16,
    pub configs: BTreeMap<String, String>,
}

/// A heartbeat status (StreamsGroupHeartbeatResponse `Status`) produced by the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopologyStatus {
    /// Code 1.
    MissingSourceTopics(String),
    /// Code 2.
    IncorrectlyPartitionedTopics(String),
    /// Code 3.
    MissingInternalTopics(String),
}

impl TopologyStatus {
    pub const MISSING_SOURCE_TOPICS: i8 = 1;
    pub const INCORRECTLY_PARTITIONED_TOPICS: i8 = 2;
    pub const MISSING_INTERNAL_TOPICS: i8 = 3;

    /// The `StatusCode` of the heartbeat response status.
    pub fn code(&self) -> i8 {
        match self {
            TopologyStatus::MissingSourceTopics(_) => Self::MISSING_SOURCE_TOPICS,
            TopologyStatus::IncorrectlyPartitionedTopics(_) => Self::INCORRECTLY_PARTITIONED_TOPICS,
            TopologyStatus::MissingInternalTopics(_) => Self::MISSING_INTERNAL_TOPICS,
        }
    }

    /// The `StatusDetail` of the heartbeat response status.
    pub fn detail(&self) -> &str {
        match self {
            TopologyStatus::MissingSourceTopics(d)
            | TopologyStatus::IncorrectlyPartitionedTopics(d)
            | TopologyStatus::MissingInternalTopics(d) => d,
        }
    }
}

/// The topology cannot be configured at all. Kafka throws `StreamsInvalidTopologyException` out
/// of the configuration, so the heartbeat that triggered it fails with STREAMS_INVALID_TOPOLOGY
/// and this message (and none of its records, e.g. a new topology record, are written).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct InvalidTopology {
    pub message: String,
}

impl InvalidTopology {
    fn new(message: impl Into<String>) -> Self {
        InvalidTopology {
            message: message.into(),
        }
    }

    /// Always STREAMS_INVALID_TOPOLOGY (130).
    pub fn error_code(&self) -> ErrorCode {
        ErrorCode::STREAMS_INVALID_TOPOLOGY
    }
}

/// The outcome of [`configure`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfiguredTopology {
    /// The topology epoch this was configured for.
    pub epoch: i32,
    /// [`metadata_hash`] of the topics this was configured against.
    pub metadata_hash: i64,
    /// The configured sub-topologies by id, in id order; empty unless ready (`status` is `None`).
    pub subtopologies: VecMap<String, ConfiguredSubtopology>,
    /// Internal topics to create, sorted by name; non-empty only with MISSING_INTERNAL_TOPICS.
    pub internal_topics_to_create: Vec<CreatableTopic>,
    /// `None` = ready: tasks can be assigned.
    pub status: Option<TopologyStatus>,
}

impl ConfiguredTopology {
    pub fn is_ready(&self) -> bool {
        self.status.is_none()
    }

    /// All tasks of all sub-topologies, ordered by (sub-topology id, partition). Empty unless ready.
    pub fn tasks(&self) -> impl Iterator<Item = TaskId> + '_ {
        self.subtopologies.values().flat_map(|s| s.tasks())
    }

    /// Whether the task exists in this (ready) topology.
    pub fn contains_task(&self, subtopology: &str, partition: i32) -> bool {
        self.subtopologies
            .get(subtopology)
            .is_some_and(|s| partition >= 0 && partition < s.num_tasks)
    }
}

// ---------------------------------------------------------------------------------------------
// Referenced topics and metadata hash
// ---------------------------------------------------------------------------------------------

/// Every topic the topology needs (Kafka's `StreamsTopology.requiredTopics`): source topics,
/// repartition-source topics and changelog topics. Repartition *sink* topics are not listed on
/// their own: a sink that matters is some sub-topology's repartition source.
pub fn required_topics(topology: &StreamsGroupTopologyValue) -> BTreeSet<String> {
    let mut topics = BTreeSet::new();
    for sub in &topology.subtopologies {
        topics.extend(sub.source_topics.iter().cloned());
        topics.extend(sub.repartition_source_topics.iter().map(|t| t.name.clone()));
        topics.extend(sub.state_changelog_topics.iter().map(|t| t.name.clone()));
    }
    topics
}

/// A deterministic hash of the required topics that exist: their names, partition counts and
/// (when the catalog knows them) topic ids, in name order. 0 when none of them exists, like
/// Kafka's `computeGroupHash` of an empty map. Missing topics do not contribute, so creating
/// one changes the hash. The group epoch is bumped whenever this value changes
/// (`StreamsGroupMetadataValue.MetadataHash`).
///
/// Kafka hashes (magic byte, topic id, name, partition count, partition racks) per topic with
/// XXH3 and combines the per-topic hashes with XXH3; the value is only ever compared with itself,
/// so this uses its own function (FNV-1a 64 over a length-prefixed encoding, finished with a
/// SplitMix64 mix).
pub fn metadata_hash(topology: &StreamsGroupTopologyValue, topics: &impl TopicPartitions) -> i64 {
    let mut hasher = Fnv64::new();
    let mut any = false;
    hasher.write(&[1]); // version of this hash layout
    for name in required_topics(topology) {
        let Some(partitions) = topics.partitions(&name) else {
            continue;
        };
        any = true;
        hasher.write(&(name.len() as u32).to_be_bytes());
        hasher.write(name.as_bytes());
        hasher.write(&partitions.to_be_bytes());
        match topics.topic_id(&name) {
            Some(id) => {
                hasher.write(&[1]);
                hasher.write(id.as_bytes());
            }
            None => hasher.write(&[0]),
        }
    }
    if !any {
        return 0;
    }
    splitmix64(hasher.0) as i64
}

struct Fnv64(u64);

impl Fnv64 {
    fn new() -> Self {
        Fnv64(0xcbf2_9ce4_8422_2325)
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

// ---------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------

/// Configures the topology against the catalog; see the module docs for the rules.
///
/// `Err` means the topology itself is unusable (Kafka fails the heartbeat with
/// STREAMS_INVALID_TOPOLOGY); every topic-related problem is reported as `status` instead.
pub fn configure(
    topology: &StreamsGroupTopologyValue,
    topics: &impl TopicPartitions,
) -> Result<ConfiguredTopology, InvalidTopology> {
    let metadata_hash = metadata_hash(topology, topics);
    let not_ready = |status: TopologyStatus, to_create: Vec<CreatableTopic>| ConfiguredTopology {
        epoch: topology.epoch,
        metadata_hash,
        subtopologies: VecMap::new(),
        internal_topics_to_create: to_create,
        status: Some(status),
    };
    match configure_subtopologies(topology, topics) {
        Ok((subtopologies, to_create)) if to_create.is_empty() => Ok(ConfiguredTopology {
            epoch: topology.epoch,
            metadata_hash,
            subtopologies,
            internal_topics_to_create: Vec::new(),
            status: None,
        }),
        Ok((_, to_create)) => {
            let detail = format!(
                "Internal topics are missing: {}",
                summarize_topics(to_create.iter().map(|t| &t.name))
            );
            Ok(not_ready(
                TopologyStatus::MissingInternalTopics(detail),
                to_create,
            ))
        }
        Err(Failure::Status(status)) => Ok(not_ready(status, Vec::new())),
        Err(Failure::Invalid(e)) => Err(e),
    }
}

enum Failure {
    Status(TopologyStatus),
    Invalid(InvalidTopology),
}

impl From<InvalidTopology> for Failure {
    fn from(e: InvalidTopology) -> Self {
        Failure::Invalid(e)
    }
}

fn incorrectly_partitioned(detail: String) -> Failure {
    Failure::Status(TopologyStatus::IncorrectlyPartitionedTopics(detail))
}

/// Partition counts as Kafka's `topicPartitionCountProvider` sees them: the catalog first, then
/// the counts decided so far for internal topics that do not exist yet.
struct Counts<'a, T: TopicPartitions> {
    topics: &'a T,
    decided: BTreeMap<String, i32>,
}

impl<T: TopicPartitions> Counts<'_, T> {
    fn get(&self, topic: &str) -> Option<i32> {
        self.topics
            .partitions(topic)
            .or_else(|| self.decided.get(topic).copied())
    }

    /// Max over the sub-topology's source and repartition-source topics; `None` if it has none.
    fn max_input(&self, sub: &Subtopology) -> Result<Option<i32>, InvalidTopology> {
        let mut max = None;
        for topic in inputs(sub) {
            let count = self.get(topic).ok_or_else(|| {
                InvalidTopology::new(format!(
                    "Number of partitions must be set for topic {topic}"
                ))
            })?;
            max = max.max(Some(count));
        }
        Ok(max)
    }
}

fn inputs(sub: &Subtopology) -> impl Iterator<Item = &str> {
    sub.source_topics.iter().map(String::as_str).chain(
        sub.repartition_source_topics
            .iter()
            .map(|t| t.name.as_str()),
    )
}

type Configured = (VecMap<String, ConfiguredSubtopology>, Vec<CreatableTopic>);

fn configure_subtopologies(
    topology: &StreamsGroupTopologyValue,
    topics: &impl TopicPartitions,
) -> Result<Configured, Failure> {
    let by_id = subtopologies_by_id(topology)?;

    // 1. Missing source topics.
    check_source_topics(topology, topics)?;

    // 2. Repartition topics.
    let mut counts = Counts {
        topics,
        decided: repartition_partition_counts(topology, topics)?,
    };

    // 3. Copartition groups.
    enforce_copartitioning(&by_id, &mut counts)?;

    // 4. Changelog topics.
    let changelogs = changelog_partition_counts(topology, &counts)?;
    counts.decided.extend(changelogs);

    // 5. Configured sub-topologies, collected in id order (`collect` leaves no spare capacity).
    let configured: VecMap<String, ConfiguredSubtopology> = by_id
        .iter()
        .map(|(&id, sub)| Ok((id.to_string(), configured_subtopology(id, sub, &counts)?)))
        .collect::<Result<_, InvalidTopology>>()?;

    // 6. Existing and missing internal topics.
    let to_create = internal_topics_to_create(topology, topics, &configured)?;
    Ok((configured, to_create))
}

/// Sub-topologies by id (Kafka keys them by id too; a duplicate id cannot be stored there).
fn subtopologies_by_id(
    topology: &StreamsGroupTopologyValue,
) -> Result<BTreeMap<&str, &Subtopology>, InvalidTopology> {
    let mut by_id: BTreeMap<&str, &Subtopology> = BTreeMap::new();
    for sub in &topology.subtopologies {
        if by_id.insert(&sub.subtopology_id, sub).is_some() {
            return Err(InvalidTopology::new(format!(
                "Duplicate subtopology id {}",
                sub.subtopology_id
            )));
        }
    }
    Ok(by_id)
}

/// MISSING_SOURCE_TOPICS unless every source topic exists.
fn check_source_topics(
    topology: &StreamsGroupTopologyValue,
    topics: &impl TopicPartitions,
) -> Result<(), Failure> {
    let missing: BTreeSet<&str> = topology
        .subtopologies
        .iter()
        .flat_map(|s| s.source_topics.iter())
        .filter(|t| topics.partitions(t).is_none())
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        let detail = format!("Source topics {} are missing.", summarize_topics(missing));
        return Err(Failure::Status(TopologyStatus::MissingSourceTopics(detail)));
    }
    Ok(())
}

/// Kafka's `ChangelogTopics.setup`: each changelog topic takes the largest partition count of
/// its sub-topology's inputs.
fn changelog_partition_counts<T: TopicPartitions>(
    topology: &StreamsGroupTopologyValue,
    counts: &Counts<'_, T>,
) -> Result<BTreeMap<String, i32>, InvalidTopology> {
    let mut changelogs = BTreeMap::new();
    for sub in &topology.subtopologies {
        let max = counts.max_input(sub)?.ok_or_else(|| {
            InvalidTopology::new(format!(
                "No source topics found for subtopology {}",
                sub.subtopology_id
            ))
        })?;
        for changelog in &sub.state_changelog_topics {
            changelogs.insert(changelog.name.clone(), max);
        }
    }
    Ok(changelogs)
}

/// Sub-topology `id` with its number of tasks and its internal topics' partition counts.
fn configured_subtopology<T: TopicPartitions>(
    id: &str,
    sub: &Subtopology,
    counts: &Counts<'_, T>,
) -> Result<ConfiguredSubtopology, InvalidTopology> {
    let num_tasks = counts
        .max_input(sub)?
        .ok_or_else(|| InvalidTopology::new("Subtopology does not contain any source topics"))?;
    let internal =
        |infos: &[TopicInfo]| -> Result<VecMap<String, ConfiguredInternalTopic>, InvalidTopology> {
            infos
                .iter()
                .map(|info| {
                    Ok((
                        info.name.clone(),
                        configured_internal_topic(info, &counts.decided)?,
                    ))
                })
                .collect()
        };
    let state_changelog_topics = internal(&sub.state_changelog_topics)?;
    Ok(ConfiguredSubtopology {
        id: id.to_string(),
        num_tasks,
        stateful: !state_changelog_topics.is_empty(),
        source_topics: sub.source_topics.iter().cloned().collect(),
        repartition_sink_topics: sub.repartition_sink_topics.iter().cloned().collect(),
        repartition_source_topics: internal(&sub.repartition_source_topics)?,
        state_changelog_topics,
    })
}

/// The internal topics that do not exist yet, sorted by name; INCORRECTLY_PARTITIONED_TOPICS
/// when one exists with another partition count.
fn internal_topics_to_create(
    topology: &StreamsGroupTopologyValue,
    topics: &impl TopicPartitions,
    configured: &VecMap<String, ConfiguredSubtopology>,
) -> Result<Vec<CreatableTopic>, Failure> {
    let mut to_create: BTreeMap<String, CreatableTopic> = BTreeMap::new();
    for sub in configured.values() {
        for topic in sub
            .repartition_source_topics
            .values()
            .chain(sub.state_changelog_topics.values())
        {
            to_create.insert(topic.name.clone(), creatable_topic(topic));
        }
    }
    for topic in required_topics(topology) {
        let Some(found) = topics.partitions(&topic) else {
            continue;
        };
        if let Some(expected) = to_create.remove(&topic) {
            if found != expected.partitions {
                return Err(incorrectly_partitioned(format!(
                    "Existing topic {topic} has different number of partitions: expected {}, found {found}",
                    expected.partitions
                )));
            }
        }
    }
    Ok(to_create.into_values().collect())
}

fn configured_internal_topic(
    info: &TopicInfo,
    decided: &BTreeMap<String, i32>,
) -> Result<ConfiguredInternalTopic, InvalidTopology> {
    let partitions = if info.partitions != 0 {
        info.partitions
    } else {
        *decided.get(&info.name).ok_or_else(|| {
            InvalidTopology::new(format!(
                "Number of partitions must be set for topic {}",
                info.name
            ))
        })?
    };
    Ok(ConfiguredInternalTopic {
        name: info.name.clone(),
        partitions,
        replication_factor: info.replication_factor,
        configs: info
            .topic_configs
            .iter()
            .map(|c| (c.key.clone(), c.value.clone()))
            .collect(),
    })
}

fn creatable_topic(topic: &ConfiguredInternalTopic) -> CreatableTopic {
    CreatableTopic {
        name: topic.name.clone(),
        partitions: topic.partitions,
        replication_factor: if topic.replication_factor == 0 {
            -1
        } else {
            topic.replication_factor
        },
        configs: topic
            .configs
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    }
}

/// Kafka's `InternalTopicManager.summarizeTopics`: up to three names, then "and N additional
/// topics"; `<none>` for no topics.
fn summarize_topics<S: AsRef<str>>(topics: impl IntoIterator<Item = S>) -> String {
    let topics: Vec<S> = topics.into_iter().collect();
    if topics.is_empty() {
        return "<none>".to_string();
    }
    let shown: Vec<&str> = topics.iter().take(3).map(AsRef::as_ref).collect();
    let mut s = shown.join(", ");
    if topics.len() > 3 {
        s.push_str(&format!(" and {} additional topics", topics.len() - 3));
    }
    s
}

/// A sorted map as Java's `TreeMap.toString` prints it: `{a=1, b=2}`.
fn java_map(map: &BTreeMap<&str, i32>) -> String {
    let entries: Vec<String> = map.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{{{}}}", entries.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pass-by-pass form of [`repartition_partition_counts`] (quadratic), as it was before:
    /// the oracle the event-driven form is checked against.
    /// Kafka's `RepartitionTopics.setup`: the partition counts of all repartition topics (fixed ones
    /// as given, the others inferred from the sub-topology writing them).
    ///
    /// Kafka resolves a sink as soon as *any* input of its writer is known, so with several
    /// sub-topologies its result can depend on their iteration order. Here a pass first resolves
    /// only sinks whose writer's inputs are all known (which makes the result for any loop-free
    /// topology the true max, independent of order); only when such a pass makes no progress does a
    /// pass apply Kafka's any-known-input rule (which is what resolves loops). The set of topologies
    /// rejected as unresolvable is the same as Kafka's.
    fn reference_counts(
        topology: &StreamsGroupTopologyValue,
        topics: &impl TopicPartitions,
    ) -> Result<BTreeMap<String, i32>, InvalidTopology> {
        let mut counts: BTreeMap<String, i32> = BTreeMap::new();
        for sub in &topology.subtopologies {
            for info in &sub.repartition_source_topics {
                if info.partitions != 0 {
                    counts.insert(info.name.clone(), info.partitions);
                }
            }
        }

        let writer_count =
            |sub: &Subtopology, counts: &BTreeMap<String, i32>, strict: bool| -> Option<i32> {
                let mut max = None;
                let mut all_known = true;
                for info in &sub.repartition_source_topics {
                    match counts.get(&info.name) {
                        Some(&c) => max = max.max(Some(c)),
                        None => all_known = false,
                    }
                }
                for topic in &sub.source_topics {
                    match topics.partitions(topic) {
                        Some(c) => max = max.max(Some(c)),
                        None => all_known = false,
                    }
                }
                if strict && !all_known {
                    None
                } else {
                    max
                }
            };

        loop {
            let needed = topology
                .subtopologies
                .iter()
                .flat_map(|s| s.repartition_sink_topics.iter())
                .any(|t| !counts.contains_key(t));
            if !needed {
                break;
            }
            let mut progress = false;
            for strict in [true, false] {
                for sub in &topology.subtopologies {
                    for sink in &sub.repartition_sink_topics {
                        if counts.contains_key(sink) {
                            continue;
                        }
                        if let Some(c) = writer_count(sub, &counts, strict) {
                            counts.insert(sink.clone(), c);
                            progress = true;
                        }
                    }
                }
                if progress {
                    break;
                }
            }
            if !progress {
                return Err(InvalidTopology::new(
                    "Failed to compute number of partitions for all repartition topics. There may be loops in the topology that cannot be resolved.",
                ));
            }
        }

        let unresolved = topology
            .subtopologies
            .iter()
            .flat_map(|s| s.repartition_source_topics.iter())
            .any(|t| !counts.contains_key(&t.name));
        if unresolved {
            return Err(InvalidTopology::new(
                "Failed to compute number of partitions for all repartition topics, because a repartition source topic is never used as a sink topic.",
            ));
        }
        Ok(counts)
    }
    use kcoord_wire::records::streams_group_topology_value::{CopartitionGroup, TopicConfig};

    fn info(name: &str, partitions: i32) -> TopicInfo {
        TopicInfo {
            name: name.to_string(),
            partitions,
            ..Default::default()
        }
    }

    fn strings(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    fn sub(
        id: &str,
        sources: &[&str],
        rep_sources: Vec<TopicInfo>,
        sinks: &[&str],
        changelogs: Vec<TopicInfo>,
    ) -> Subtopology {
        Subtopology {
            subtopology_id: id.to_string(),
            source_topics: strings(sources),
            repartition_source_topics: rep_sources,
            repartition_sink_topics: strings(sinks),
            state_changelog_topics: changelogs,
            ..Default::default()
        }
    }

    fn copartition(sources: &[i16], rep_sources: &[i16]) -> CopartitionGroup {
        CopartitionGroup {
            source_topics: sources.to_vec(),
            repartition_source_topics: rep_sources.to_vec(),
            ..Default::default()
        }
    }

    fn topo(subs: Vec<Subtopology>) -> StreamsGroupTopologyValue {
        StreamsGroupTopologyValue {
            epoch: 1,
            subtopologies: subs,
            ..Default::default()
        }
    }

    fn catalog(topics: &[(&str, i32)]) -> BTreeMap<String, i32> {
        topics.iter().map(|(n, p)| (n.to_string(), *p)).collect()
    }

    fn ok(t: &StreamsGroupTopologyValue, c: &BTreeMap<String, i32>) -> ConfiguredTopology {
        configure(t, c).expect("topology should be valid")
    }

    fn ready(t: &StreamsGroupTopologyValue, c: &BTreeMap<String, i32>) -> ConfiguredTopology {
        let r = ok(t, c);
        assert_eq!(r.status, None, "expected a ready topology");
        r
    }

    /// Catalog with every internal topic the configuration asks for, created as asked.
    fn with_created(
        t: &StreamsGroupTopologyValue,
        c: &BTreeMap<String, i32>,
    ) -> BTreeMap<String, i32> {
        let mut created = c.clone();
        for topic in ok(t, c).internal_topics_to_create {
            created.insert(topic.name, topic.partitions);
        }
        created
    }

    #[test]
    fn missing_source_topics_give_status_naming_them_and_no_configuration() {
        let t = topo(vec![
            sub("0", &["a", "c"], vec![], &[], vec![info("cl", 0)]),
            sub("1", &["b"], vec![], &[], vec![]),
        ]);
        let r = ok(&t, &catalog(&[("a", 3)]));
        assert_eq!(
            r.status,
            Some(TopologyStatus::MissingSourceTopics(
                "Source topics b, c are missing.".into()
            ))
        );
        assert_eq!(r.status.as_ref().map(|s| s.code()), Some(1));
        assert!(r.subtopologies.is_empty());
        assert!(r.internal_topics_to_create.is_empty());
    }

    #[test]
    fn missing_source_topics_detail_summarizes_more_than_three() {
        let t = topo(vec![sub(
            "0",
            &["e", "d", "c", "b", "a"],
            vec![],
            &[],
            vec![],
        )]);
        let r = ok(&t, &catalog(&[]));
        assert_eq!(
            r.status.unwrap().detail(),
            "Source topics a, b, c and 2 additional topics are missing."
        );
    }

    #[test]
    fn missing_source_topics_reported_before_an_unresolvable_loop() {
        let t = topo(vec![
            sub("0", &["missing"], vec![info("r2", 0)], &["r1"], vec![]),
            sub("1", &[], vec![info("r1", 0)], &["r2"], vec![]),
        ]);
        let r = ok(&t, &catalog(&[]));
        assert_eq!(
            r.status.unwrap().code(),
            TopologyStatus::MISSING_SOURCE_TOPICS
        );
    }

    #[test]
    fn all_sources_present_gives_tasks_equal_to_max_partitions() {
        let t = topo(vec![
            sub("0", &["a", "b"], vec![], &[], vec![]),
            sub("1", &["c"], vec![], &[], vec![]),
        ]);
        let r = ready(&t, &catalog(&[("a", 3), ("b", 5), ("c", 2)]));
        assert_eq!(r.subtopologies.get("0").unwrap().num_tasks, 5);
        assert_eq!(r.subtopologies.get("1").unwrap().num_tasks, 2);
        let tasks: Vec<TaskId> = r.tasks().collect();
        assert_eq!(tasks.len(), 7);
        assert_eq!(tasks[0], TaskId::new("0", 0));
        assert_eq!(tasks[6], TaskId::new("1", 1));
        assert!(r.contains_task("0", 4) && !r.contains_task("0", 5) && !r.contains_task("2", 0));
        assert!(r.internal_topics_to_create.is_empty());
    }

    #[test]
    fn repartition_partitions_inferred_from_upstream_subtopology() {
        let t = topo(vec![
            sub("0", &["a", "b"], vec![], &["r"], vec![]),
            sub("1", &[], vec![info("r", 0)], &[], vec![]),
        ]);
        let c = catalog(&[("a", 4), ("b", 6)]);
        let r = ok(&t, &c);
        assert_eq!(r.internal_topics_to_create.len(), 1);
        assert_eq!(r.internal_topics_to_create[0].name, "r");
        assert_eq!(r.internal_topics_to_create[0].partitions, 6);

        let r = ready(&t, &with_created(&t, &c));
        assert_eq!(r.subtopologies.get("1").unwrap().num_tasks, 6);
        assert_eq!(
            r.subtopologies
                .get("1")
                .unwrap()
                .repartition_source_topics
                .get("r")
                .unwrap()
                .partitions,
            6
        );
    }

    #[test]
    fn chained_repartition_inference_is_order_independent() {
        // Downstream sub-topologies are listed first: sub-topology 1 reads r1 (written by 0, from
        // 8 partitions) and b (2 partitions). Kafka's first-known-input rule would give r2 = 2 in
        // this order; all inputs are considered here, so r2 = 8.
        let t = topo(vec![
            sub("2", &[], vec![info("r2", 0)], &[], vec![]),
            sub("1", &["b"], vec![info("r1", 0)], &["r2"], vec![]),
            sub("0", &["a"], vec![], &["r1"], vec![]),
        ]);
        let c = catalog(&[("a", 8), ("b", 2)]);
        let r = ok(&t, &c);
        let created: BTreeMap<_, _> = r
            .internal_topics_to_create
            .iter()
            .map(|t| (t.name.as_str(), t.partitions))
            .collect();
        assert_eq!(created, BTreeMap::from([("r1", 8), ("r2", 8)]));
        let r = ready(&t, &with_created(&t, &c));
        assert_eq!(r.subtopologies.get("2").unwrap().num_tasks, 8);
    }

    #[test]
    fn fixed_repartition_partitions_are_kept_and_propagate() {
        let t = topo(vec![
            sub("0", &["a"], vec![], &["r1"], vec![]),
            sub("1", &[], vec![info("r1", 3)], &["r2"], vec![]),
            sub("2", &[], vec![info("r2", 0)], &[], vec![]),
        ]);
        let r = ok(&t, &catalog(&[("a", 10)]));
        let created: BTreeMap<_, _> = r
            .internal_topics_to_create
            .iter()
            .map(|t| (t.name.as_str(), t.partitions))
            .collect();
        assert_eq!(created, BTreeMap::from([("r1", 3), ("r2", 3)]));
    }

    #[test]
    fn unresolvable_repartition_loop_is_invalid_topology() {
        let t = topo(vec![
            sub("0", &[], vec![info("r2", 0)], &["r1"], vec![]),
            sub("1", &[], vec![info("r1", 0)], &["r2"], vec![]),
        ]);
        let e = configure(&t, &catalog(&[])).unwrap_err();
        assert_eq!(e.error_code(), ErrorCode::STREAMS_INVALID_TOPOLOGY);
        assert_eq!(
            e.message,
            "Failed to compute number of partitions for all repartition topics. There may be loops in the topology that cannot be resolved."
        );
    }

    #[test]
    fn repartition_loop_with_a_known_input_resolves() {
        let t = topo(vec![
            sub("0", &["a"], vec![info("r2", 0)], &["r1"], vec![]),
            sub("1", &[], vec![info("r1", 0)], &["r2"], vec![]),
        ]);
        let r = ok(&t, &catalog(&[("a", 5)]));
        let created: BTreeMap<_, _> = r
            .internal_topics_to_create
            .iter()
            .map(|t| (t.name.as_str(), t.partitions))
            .collect();
        assert_eq!(created, BTreeMap::from([("r1", 5), ("r2", 5)]));
    }

    #[test]
    fn repartition_source_never_written_is_invalid_topology() {
        let t = topo(vec![sub("0", &["a"], vec![info("orphan", 0)], &[], vec![])]);
        let e = configure(&t, &catalog(&[("a", 1)])).unwrap_err();
        assert_eq!(
            e.message,
            "Failed to compute number of partitions for all repartition topics, because a repartition source topic is never used as a sink topic."
        );
    }

    #[test]
    fn subtopology_without_inputs_is_invalid_topology() {
        let t = topo(vec![
            sub("0", &["a"], vec![], &[], vec![]),
            sub("7", &[], vec![], &[], vec![]),
        ]);
        let e = configure(&t, &catalog(&[("a", 1)])).unwrap_err();
        assert_eq!(e.message, "No source topics found for subtopology 7");
    }

    #[test]
    fn copartition_mismatch_of_source_topics_is_incorrectly_partitioned() {
        let mut s = sub("0", &["b", "a"], vec![], &[], vec![]);
        s.copartition_groups = vec![copartition(&[0, 1], &[])];
        let r = ok(&topo(vec![s]), &catalog(&[("a", 3), ("b", 4)]));
        assert_eq!(
            r.status,
            Some(TopologyStatus::IncorrectlyPartitionedTopics(
                "Following topics do not have the same number of partitions: [{a=3, b=4}]".into()
            ))
        );
        assert!(r.subtopologies.is_empty() && r.internal_topics_to_create.is_empty());
    }

    #[test]
    fn flexible_repartition_topic_in_copartition_group_takes_group_count() {
        // r is written from x (8 partitions) but is co-partitioned with a (3 partitions).
        let mut joiner = sub(
            "1",
            &["a"],
            vec![info("r", 0)],
            &[],
            vec![info("store-changelog", 0)],
        );
        joiner.copartition_groups = vec![copartition(&[0], &[0])];
        let t = topo(vec![sub("0", &["x"], vec![], &["r"], vec![]), joiner]);
        let c = catalog(&[("a", 3), ("x", 8)]);
        let r = ok(&t, &c);
        let created: BTreeMap<_, _> = r
            .internal_topics_to_create
            .iter()
            .map(|t| (t.name.as_str(), t.partitions))
            .collect();
        assert_eq!(created, BTreeMap::from([("r", 3), ("store-changelog", 3)]));
        let r = ready(&t, &with_created(&t, &c));
        assert_eq!(r.subtopologies.get("1").unwrap().num_tasks, 3);
        assert_eq!(r.subtopologies.get("0").unwrap().num_tasks, 8);
    }

    #[test]
    fn fixed_repartition_topic_conflicting_with_copartition_group_is_incorrectly_partitioned() {
        let mut joiner = sub("1", &["a"], vec![info("r", 5)], &[], vec![]);
        joiner.copartition_groups = vec![copartition(&[0], &[0])];
        let t = topo(vec![sub("0", &["x"], vec![], &["r"], vec![]), joiner]);
        let r = ok(&t, &catalog(&[("a", 3), ("x", 8)]));
        assert_eq!(
            r.status,
            Some(TopologyStatus::IncorrectlyPartitionedTopics(
                "Number of partitions [5] of repartition topic [r] doesn't match number of partitions [3] of the source topic.".into()
            ))
        );
    }

    #[test]
    fn copartition_group_of_only_repartition_topics() {
        // Flexible only: all take the max.
        let writer = sub("0", &["x", "y"], vec![], &["r1", "r2"], vec![]);
        let mut joiner = sub("1", &[], vec![info("r1", 0), info("r2", 0)], &[], vec![]);
        joiner.copartition_groups = vec![copartition(&[], &[0, 1])];
        let r = ok(
            &topo(vec![writer.clone(), joiner]),
            &catalog(&[("x", 2), ("y", 6)]),
        );
        assert!(r
            .internal_topics_to_create
            .iter()
            .all(|t| t.partitions == 6));

        // One fixed: everybody takes its count.
        let mut joiner = sub("1", &[], vec![info("r1", 4), info("r2", 0)], &[], vec![]);
        joiner.copartition_groups = vec![copartition(&[], &[0, 1])];
        let r = ok(
            &topo(vec![writer.clone(), joiner]),
            &catalog(&[("x", 2), ("y", 6)]),
        );
        assert!(
            r.internal_topics_to_create
                .iter()
                .all(|t| t.partitions == 4),
            "{r:?}"
        );

        // Two fixed that differ: incorrectly partitioned.
        let mut joiner = sub("1", &[], vec![info("r1", 4), info("r2", 2)], &[], vec![]);
        joiner.copartition_groups = vec![copartition(&[], &[0, 1])];
        let r = ok(&topo(vec![writer, joiner]), &catalog(&[("x", 2), ("y", 6)]));
        assert_eq!(
            r.status.unwrap().detail(),
            "Following topics do not have the same number of partitions: [{r1=4, r2=2}]"
        );
    }

    #[test]
    fn copartition_group_with_bad_index_is_invalid_topology() {
        let mut s = sub("0", &["a"], vec![], &[], vec![]);
        s.copartition_groups = vec![copartition(&[0, 3], &[])];
        assert!(configure(&topo(vec![s]), &catalog(&[("a", 1)])).is_err());
    }

    #[test]
    fn existing_internal_topic_with_wrong_partitions_is_incorrectly_partitioned() {
        let t = topo(vec![
            sub("0", &["a"], vec![], &["r"], vec![]),
            sub(
                "1",
                &[],
                vec![info("r", 0)],
                &[],
                vec![info("app-store-changelog", 0)],
            ),
        ]);
        let r = ok(
            &t,
            &catalog(&[("a", 4), ("r", 4), ("app-store-changelog", 2)]),
        );
        assert_eq!(
            r.status,
            Some(TopologyStatus::IncorrectlyPartitionedTopics(
                "Existing topic app-store-changelog has different number of partitions: expected 4, found 2".into()
            ))
        );
        assert!(r.internal_topics_to_create.is_empty());

        // A wrongly partitioned internal topic wins over missing ones.
        let r = ok(&t, &catalog(&[("a", 4), ("app-store-changelog", 2)]));
        assert_eq!(
            r.status.unwrap().code(),
            TopologyStatus::INCORRECTLY_PARTITIONED_TOPICS
        );
    }

    #[test]
    fn missing_internal_topics_status_with_creatable_topics() {
        let mut changelog = info("app-store-changelog", 0);
        changelog.replication_factor = 3;
        changelog.topic_configs = vec![TopicConfig {
            key: "cleanup.policy".into(),
            value: "compact".into(),
            ..Default::default()
        }];
        let mut repartition = info("app-rep-repartition", 0);
        repartition.topic_configs = vec![
            TopicConfig {
                key: "cleanup.policy".into(),
                value: "delete".into(),
                ..Default::default()
            },
            TopicConfig {
                key: "retention.ms".into(),
                value: "-1".into(),
                ..Default::default()
            },
        ];
        let t = topo(vec![
            sub(
                "0",
                &["a"],
                vec![],
                &["app-rep-repartition"],
                vec![info("existing-changelog", 0)],
            ),
            sub("1", &[], vec![repartition], &[], vec![changelog]),
        ]);
        let r = ok(&t, &catalog(&[("a", 6), ("existing-changelog", 6)]));
        assert_eq!(
            r.status,
            Some(TopologyStatus::MissingInternalTopics(
                "Internal topics are missing: app-rep-repartition, app-store-changelog".into()
            ))
        );
        assert_eq!(r.status.as_ref().unwrap().code(), 3);
        assert!(r.subtopologies.is_empty(), "not ready, so no tasks");
        assert_eq!(
            r.internal_topics_to_create,
            vec![
                CreatableTopic {
                    name: "app-rep-repartition".into(),
                    partitions: 6,
                    replication_factor: -1,
                    configs: BTreeMap::from([
                        ("cleanup.policy".into(), "delete".into()),
                        ("retention.ms".into(), "-1".into())
                    ]),
                },
                CreatableTopic {
                    name: "app-store-changelog".into(),
                    partitions: 6,
                    replication_factor: 3,
                    configs: BTreeMap::from([("cleanup.policy".into(), "compact".into())]),
                },
            ]
        );
    }

    #[test]
    fn missing_internal_topics_detail_summarizes_more_than_three() {
        let cls: Vec<TopicInfo> = ["c1", "c2", "c3", "c4", "c5"]
            .iter()
            .map(|n| info(n, 0))
            .collect();
        let r = ok(
            &topo(vec![sub("0", &["a"], vec![], &[], cls)]),
            &catalog(&[("a", 1)]),
        );
        assert_eq!(
            r.status.unwrap().detail(),
            "Internal topics are missing: c1, c2, c3 and 2 additional topics"
        );
        assert_eq!(r.internal_topics_to_create.len(), 5);
    }

    #[test]
    fn changelog_partitions_are_max_of_sources_and_repartition_sources() {
        let t = topo(vec![
            sub("0", &["big"], vec![], &["r"], vec![]),
            sub(
                "1",
                &["small"],
                vec![info("r", 0)],
                &[],
                vec![info("cl1", 0), info("cl2", 0)],
            ),
            sub("2", &["small"], vec![], &[], vec![info("cl3", 0)]),
        ]);
        let c = catalog(&[("big", 9), ("small", 2)]);
        let r = ok(&t, &c);
        let created: BTreeMap<_, _> = r
            .internal_topics_to_create
            .iter()
            .map(|t| (t.name.as_str(), t.partitions))
            .collect();
        assert_eq!(
            created,
            BTreeMap::from([("cl1", 9), ("cl2", 9), ("cl3", 2), ("r", 9)])
        );
        let r = ready(&t, &with_created(&t, &c));
        assert_eq!(
            r.subtopologies
                .get("1")
                .unwrap()
                .state_changelog_topics
                .get("cl2")
                .unwrap()
                .partitions,
            9
        );
        assert_eq!(
            r.subtopologies
                .get("2")
                .unwrap()
                .state_changelog_topics
                .get("cl3")
                .unwrap()
                .partitions,
            2
        );
    }

    #[test]
    fn stateful_iff_subtopology_has_changelog_topics() {
        let t = topo(vec![
            sub("0", &["a"], vec![], &[], vec![]),
            sub("1", &["a"], vec![], &[], vec![info("cl", 0)]),
        ]);
        let r = ready(&t, &catalog(&[("a", 2), ("cl", 2)]));
        assert!(!r.subtopologies.get("0").unwrap().stateful);
        assert!(r.subtopologies.get("1").unwrap().stateful);
    }

    #[test]
    fn configured_subtopology_keeps_topology_details() {
        let mut rep = info("r", 0);
        rep.replication_factor = 0;
        let t = topo(vec![
            sub("0", &["a"], vec![], &["r"], vec![]),
            sub("1", &[], vec![rep], &[], vec![]),
        ]);
        let r = ready(&t, &catalog(&[("a", 2), ("r", 2)]));
        assert_eq!(r.epoch, 1);
        assert_eq!(
            r.subtopologies.get("0").unwrap().repartition_sink_topics,
            VecSet::from(["r".to_string()])
        );
        assert_eq!(
            r.subtopologies.get("0").unwrap().source_topics,
            VecSet::from(["a".to_string()])
        );
        assert_eq!(
            r.subtopologies
                .get("1")
                .unwrap()
                .repartition_source_topics
                .get("r")
                .unwrap()
                .replication_factor,
            0
        );
    }

    #[test]
    fn duplicate_subtopology_ids_are_invalid_topology() {
        let t = topo(vec![
            sub("0", &["a"], vec![], &[], vec![]),
            sub("0", &["b"], vec![], &[], vec![]),
        ]);
        assert!(configure(&t, &catalog(&[("a", 1), ("b", 1)])).is_err());
    }

    #[test]
    fn required_topics_lists_sources_repartition_sources_and_changelogs() {
        let t = topo(vec![
            sub("0", &["a", "b"], vec![], &["r"], vec![info("cl", 0)]),
            sub("1", &["b"], vec![info("r", 0)], &[], vec![]),
        ]);
        let names: Vec<String> = required_topics(&t).into_iter().collect();
        assert_eq!(names, strings(&["a", "b", "cl", "r"]));
    }

    #[test]
    fn metadata_hash_tracks_referenced_topic_partitions() {
        let t = topo(vec![
            sub("0", &["a"], vec![], &["r"], vec![]),
            sub("1", &[], vec![info("r", 0)], &[], vec![]),
        ]);
        let reversed = topo(t.subtopologies.iter().rev().cloned().collect());
        let c = catalog(&[("a", 4), ("unrelated", 1)]);
        let h = metadata_hash(&t, &c);
        assert_ne!(h, 0);
        assert_eq!(
            h,
            metadata_hash(&reversed, &c),
            "independent of sub-topology order"
        );
        assert_eq!(
            h,
            metadata_hash(&t, &catalog(&[("a", 4), ("unrelated", 7)])),
            "unrelated topics do not count"
        );
        assert_ne!(
            h,
            metadata_hash(&t, &catalog(&[("a", 5)])),
            "partition count counts"
        );
        assert_ne!(
            h,
            metadata_hash(&t, &catalog(&[("a", 4), ("r", 4)])),
            "creating an internal topic counts"
        );
        assert_eq!(metadata_hash(&t, &catalog(&[])), 0);
        assert_eq!(ok(&t, &c).metadata_hash, h);
    }

    #[test]
    fn metadata_hash_includes_topic_ids_when_known() {
        struct WithIds(Uuid);
        impl TopicPartitions for WithIds {
            fn partitions(&self, _: &str) -> Option<i32> {
                Some(3)
            }
            fn topic_id(&self, _: &str) -> Option<Uuid> {
                Some(self.0)
            }
        }
        let t = topo(vec![sub("0", &["a"], vec![], &[], vec![])]);
        let h1 = metadata_hash(&t, &WithIds(Uuid::from_u128(1)));
        let h2 = metadata_hash(&t, &WithIds(Uuid::from_u128(2)));
        assert_ne!(h1, h2);
    }

    #[test]
    fn closures_and_topics_image_serve_as_catalogs() {
        let t = topo(vec![sub("0", &["a"], vec![], &[], vec![])]);
        let r = configure(&t, &|name: &str| (name == "a").then_some(7)).unwrap();
        assert_eq!(r.subtopologies.get("0").unwrap().num_tasks, 7);
        let r = configure(&t, &TopicsImage::default()).unwrap();
        assert_eq!(
            r.status.unwrap().code(),
            TopologyStatus::MISSING_SOURCE_TOPICS
        );
    }

    /// A random topology over a few repartition topics (some fixed), a few source topics (some
    /// missing from the catalog), with loops, several writers per sink and repeated names.
    /// (source topics, repartition sources with their fixed count or 0, sinks) by number.
    type RandomSub = (Vec<u8>, Vec<(u8, i32)>, Vec<u8>);

    fn random_topology(subs: &[RandomSub]) -> StreamsGroupTopologyValue {
        topo(
            subs.iter()
                .enumerate()
                .map(|(i, (sources, rep_sources, sinks))| {
                    let sources: Vec<String> = sources.iter().map(|s| format!("s{s}")).collect();
                    let sources: Vec<&str> = sources.iter().map(String::as_str).collect();
                    let sinks: Vec<String> = sinks.iter().map(|s| format!("r{s}")).collect();
                    let sinks: Vec<&str> = sinks.iter().map(String::as_str).collect();
                    sub(
                        &i.to_string(),
                        &sources,
                        rep_sources
                            .iter()
                            .map(|(r, p)| info(&format!("r{r}"), *p))
                            .collect(),
                        &sinks,
                        vec![],
                    )
                })
                .collect(),
        )
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// The event-driven resolution answers exactly what the pass-by-pass one does, errors
        /// included.
        #[test]
        fn repartition_counts_match_the_pass_by_pass_resolution(
            subs in proptest::collection::vec(
                (
                    proptest::collection::vec(0u8..4, 0..3),
                    proptest::collection::vec((0u8..6, proptest::prop_oneof![3 => proptest::strategy::Just(0), 1 => 1i32..6]), 0..3),
                    proptest::collection::vec(0u8..6, 0..3),
                ),
                1..10,
            ),
            partitions in proptest::collection::vec(proptest::option::of(1i32..9), 4),
        ) {
            let t = random_topology(&subs);
            let c: BTreeMap<String, i32> = partitions
                .iter()
                .enumerate()
                .filter_map(|(i, p)| p.map(|p| (format!("s{i}"), p)))
                .collect();
            proptest::prop_assert_eq!(
                repartition_partition_counts(&t, &c),
                reference_counts(&t, &c)
            );
        }
    }

    /// A chain of 20,000 sub-topologies, each reading the sink of the next one: the pass-by-pass
    /// form resolves one sink per pass over all of them (2x10^8 writer visits); this resolves
    /// each once. Every count is the source topic's.
    #[test]
    fn a_long_backward_chain_resolves_in_one_visit_per_subtopology() {
        let n = 20_000;
        let subs: Vec<Subtopology> = (0..n)
            .map(|i| {
                let sink = format!("rep-{i}");
                if i + 1 == n {
                    sub(&i.to_string(), &["in"], vec![], &[&sink], vec![])
                } else {
                    let source = info(&format!("rep-{}", i + 1), 0);
                    sub(&i.to_string(), &[], vec![source], &[&sink], vec![])
                }
            })
            .collect();
        let t = topo(subs);
        let counts = repartition_partition_counts(&t, &catalog(&[("in", 7)])).unwrap();
        assert_eq!(counts.len(), n);
        assert!(counts.values().all(|c| *c == 7));
        // The same on a smaller chain, checked against the pass-by-pass form.
        let small = topo(t.subtopologies[n - 300..].to_vec());
        let c = catalog(&[("in", 7)]);
        assert_eq!(
            repartition_partition_counts(&small, &c),
            reference_counts(&small, &c)
        );
    }

    /// A large random topology with loops: the same answers as the pass-by-pass form.
    #[test]
    fn a_large_topology_with_loops_matches_the_pass_by_pass_resolution() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(13);
        for round in 0..20 {
            let n = 2_000;
            let topics = 600u32;
            let subs: Vec<Subtopology> = (0..n)
                .map(|i| {
                    let pick =
                        |rng: &mut rand::rngs::StdRng| format!("r{}", rng.random_range(0..topics));
                    let rep_sources: Vec<TopicInfo> = (0..rng.random_range(0..3))
                        .map(|_| {
                            let fixed = if rng.random_range(0..10) == 0 {
                                rng.random_range(1..9)
                            } else {
                                0
                            };
                            info(&pick(&mut rng), fixed)
                        })
                        .collect();
                    let sinks: Vec<String> = (0..rng.random_range(0..3))
                        .map(|_| pick(&mut rng))
                        .collect();
                    let sinks: Vec<&str> = sinks.iter().map(String::as_str).collect();
                    let sources: &[&str] = if rng.random_range(0..4) == 0 {
                        &["in"]
                    } else {
                        &[]
                    };
                    sub(&i.to_string(), sources, rep_sources, &sinks, vec![])
                })
                .collect();
            let t = topo(subs);
            let c = catalog(&[("in", 1 + round)]);
            assert_eq!(
                repartition_partition_counts(&t, &c),
                reference_counts(&t, &c),
                "round {round}"
            );
        }
    }
}
