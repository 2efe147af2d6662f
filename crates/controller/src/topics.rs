//! CreateTopics and DeleteTopics as the controller decides them, sans-IO: each takes the current
//! [`TopicsImage`] and a request and returns the records to append plus one result per topic.
//! The rules and messages are those of Kafka's `ControllerApis.createTopics` /
//! `deleteTopics` and `ReplicationControlManager` (this node is the only broker, so it leads
//! every partition and is its only replica; a requested replication factor is recorded, not
//! enforced).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::Hash;

use kcoord_metadata::{Record, TopicsImage};
use kcoord_wire::messages::create_topics_request::{CreatableReplicaAssignment, CreatableTopic};
use kcoord_wire::messages::create_topics_response::CreatableTopicResult;
use kcoord_wire::messages::CreateTopicsRequest;
use kcoord_wire::records::{ConfigRecord, PartitionRecord, TopicRecord};
use kcoord_wire::ErrorCode;
use uuid::Uuid;

use kcoord_metadata::{invalid_topic_name, CLUSTER_METADATA_TOPIC};

mod delete;
mod partitions;

pub use delete::{delete_topics, delete_topics_as, TopicAccess};
pub use partitions::create_partitions;

/// Kafka's `ReplicationControlManager.MAX_PARTITIONS_PER_BATCH`.
pub const MAX_PARTITIONS_PER_BATCH: i64 = 10_000;

/// DescribeConfigs resource type of a topic (ConfigRecord.ResourceType).
const TOPIC_RESOURCE: i8 = 2;

/// What a topic gets when CreateTopics leaves a setting at -1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopicDefaults {
    /// This node: the leader and only replica of every partition.
    pub node_id: i32,
    /// `num.partitions`.
    pub num_partitions: i32,
    /// `default.replication.factor`.
    pub replication_factor: i16,
}

impl Default for TopicDefaults {
    /// Node 1 with Kafka's defaults (`num.partitions` and `default.replication.factor` are 1).
    fn default() -> Self {
        TopicDefaults {
            node_id: 1,
            num_partitions: 1,
            replication_factor: 1,
        }
    }
}

/// kcoord's bounds on the topic catalog, which Kafka does not have: a CreateTopics (or an
/// automatic creation) that would take the catalog past one is refused with POLICY_VIOLATION,
/// Kafka's answer when its own controller refuses a creation by rule (its per-request
/// partition bound, [`MAX_PARTITIONS_PER_BATCH`], and `create.topic.policy.class.name`).
/// THROTTLING_QUOTA_EXCEEDED would not do: the admin client retries it until its timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopicLimits {
    /// `controller.max.topics`.
    pub max_topics: usize,
    /// `controller.max.partitions`: partitions of all topics together.
    pub max_partitions: usize,
}

/// Default of `controller.max.topics`.
pub const DEFAULT_MAX_TOPICS: usize = 10_000;
/// Default of `controller.max.partitions`.
pub const DEFAULT_MAX_PARTITIONS: usize = 100_000;

impl Default for TopicLimits {
    fn default() -> Self {
        TopicLimits {
            max_topics: DEFAULT_MAX_TOPICS,
            max_partitions: DEFAULT_MAX_PARTITIONS,
        }
    }
}

/// What is left of the limits while a request's topics are created one after another.
struct Room {
    limits: TopicLimits,
    topics: usize,
    partitions: usize,
}

impl Room {
    fn new(image: &TopicsImage, limits: &TopicLimits) -> Room {
        Room {
            limits: *limits,
            topics: image.len(),
            partitions: image.partition_count(),
        }
    }

    /// Takes room for one topic of `partitions` partitions, or says why there is none.
    fn take(&mut self, name: &str, partitions: i32) -> Result<(), TopicError> {
        let partitions = usize::try_from(partitions).unwrap_or(0);
        let TopicLimits {
            max_topics,
            max_partitions,
        } = self.limits;
        if self.topics >= max_topics {
            return Err(error(
                ErrorCode::POLICY_VIOLATION,
                format!("Topic '{name}' cannot be created: the cluster holds its maximum of {max_topics} topics (controller.max.topics)."),
            ));
        }
        if self.partitions.saturating_add(partitions) > max_partitions {
            return Err(error(
                ErrorCode::POLICY_VIOLATION,
                format!(
                    "Topic '{name}' cannot be created: its {partitions} partitions would take the cluster past its maximum of {max_partitions} partitions (controller.max.partitions); {} are left.",
                    max_partitions.saturating_sub(self.partitions)
                ),
            ));
        }
        self.topics += 1;
        self.partitions += partitions;
        Ok(())
    }
}

/// Records to append (nothing for validate-only requests) and the per-topic answers.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision<T> {
    pub records: Vec<Record>,
    pub results: Vec<T>,
}

type TopicError = (ErrorCode, Option<String>);

fn error(code: ErrorCode, message: impl Into<String>) -> TopicError {
    (code, Some(message.into()))
}

/// Kafka's `Uuid.randomUuid`: never the zero id, never the metadata topic's id (1), and never an
/// id whose base64 form starts with '-' (it would look like a command-line flag).
pub fn random_topic_id() -> Uuid {
    loop {
        let id = Uuid::new_v4();
        let first_sextet = id.as_bytes()[0] >> 2;
        if !id.is_nil() && id.as_u128() != 1 && first_sextet != 62 {
            return id;
        }
    }
}

/// CreateTopics, all versions (the handler trims fields the version lacks).
pub fn create_topics(
    image: &TopicsImage,
    defaults: &TopicDefaults,
    limits: &TopicLimits,
    request: &CreateTopicsRequest,
    mut new_id: impl FnMut() -> Uuid,
) -> Decision<CreatableTopicResult> {
    // ControllerApis: names given twice are refused outright, in every occurrence.
    let (unique, duplicates) = split_duplicates(request.topics.iter().map(|t| t.name.as_str()));
    let unique: HashSet<&str> = unique.into_iter().collect();
    let effective: Vec<&CreatableTopic> = request
        .topics
        .iter()
        .filter(|t| unique.contains(&t.name.as_str()) && t.name != CLUSTER_METADATA_TOPIC)
        .collect();

    if let Some(e) = too_many_partitions(&effective, defaults) {
        // Kafka fails the whole request; `getErrorResponse` answers every topic as sent.
        let results = request.topics.iter().map(|t| failed(&t.name, &e)).collect();
        return Decision {
            records: Vec::new(),
            results,
        };
    }

    let mut records = Vec::new();
    let mut results = Vec::with_capacity(request.topics.len());
    let mut room = Room::new(image, limits);
    for topic in effective {
        match create_topic(image, defaults, &mut room, topic, &mut new_id) {
            Ok((result, topic_records)) => {
                records.extend(topic_records);
                results.push(result);
            }
            Err(e) => results.push(failed(&topic.name, &e)),
        }
    }
    for name in duplicates {
        results.push(failed(
            name,
            &error(ErrorCode::INVALID_REQUEST, "Duplicate topic name."),
        ));
    }
    if unique.contains(&CLUSTER_METADATA_TOPIC) {
        results.push(failed(
            CLUSTER_METADATA_TOPIC,
            &error(
                ErrorCode::INVALID_REQUEST,
                format!("Creation of internal topic {CLUSTER_METADATA_TOPIC} is prohibited."),
            ),
        ));
    }
    if request.validate_only {
        records.clear();
    }
    Decision { records, results }
}

fn failed(name: &str, (code, message): &TopicError) -> CreatableTopicResult {
    CreatableTopicResult {
        name: name.to_owned(),
        error_code: code.code(),
        error_message: message.clone(),
        ..Default::default()
    }
}

/// `validateTotalNumberOfPartitions`: an upper bound over the request, before anything else.
fn too_many_partitions(topics: &[&CreatableTopic], defaults: &TopicDefaults) -> Option<TopicError> {
    let mut total: i64 = 0;
    for t in topics {
        total += if !t.assignments.is_empty() {
            t.assignments.len() as i64
        } else if t.num_partitions == -1 {
            i64::from(defaults.num_partitions)
        } else {
            i64::from(t.num_partitions.max(0))
        };
        if total > MAX_PARTITIONS_PER_BATCH {
            return Some(error(
                ErrorCode::POLICY_VIOLATION,
                "Excessively large number of partitions per request.",
            ));
        }
    }
    None
}

/// One topic, in `ReplicationControlManager.createTopics` order: name, collision, existence,
/// configs, placement, then kcoord's catalog limits.
fn create_topic(
    image: &TopicsImage,
    defaults: &TopicDefaults,
    room: &mut Room,
    topic: &CreatableTopic,
    new_id: &mut impl FnMut() -> Uuid,
) -> Result<(CreatableTopicResult, Vec<Record>), TopicError> {
    let name = topic.name.as_str();
    if image.get(name).is_some() {
        return Err(error(
            ErrorCode::TOPIC_ALREADY_EXISTS,
            format!("Topic '{name}' already exists."),
        ));
    }
    if let Some(message) = invalid_topic_name(name) {
        return Err(error(ErrorCode::INVALID_TOPIC_EXCEPTION, message));
    }
    if let Some(existing) = image.colliding_topic(name) {
        return Err(error(
            ErrorCode::INVALID_TOPIC_EXCEPTION,
            format!("Topic '{name}' collides with existing topic: {existing}"),
        ));
    }
    let configs = topic_configs(topic)?;
    let (num_partitions, replication_factor) = placement(defaults, topic)?;
    // Last, as Kafka's creation policy runs once the request is known to be valid.
    room.take(name, num_partitions)?;

    let id = new_id();
    let records = topic_records(
        name,
        id,
        replication_factor,
        &configs,
        num_partitions,
        defaults.node_id,
    );
    let result = CreatableTopicResult {
        name: name.to_owned(),
        topic_id: id,
        error_code: ErrorCode::NONE.code(),
        error_message: None,
        topic_config_error_code: ErrorCode::NONE.code(),
        num_partitions,
        replication_factor,
        // Every effective config, as Kafka lists them, is added by the CreateTopics handler.
        configs: None,
        ..Default::default()
    };
    Ok((result, records))
}

/// The topic's configs as given, each checked, or INVALID_CONFIG.
fn topic_configs(topic: &CreatableTopic) -> Result<BTreeMap<&str, &str>, TopicError> {
    let null_configs: Vec<&str> = topic
        .configs
        .iter()
        .filter(|c| c.value.is_none())
        .map(|c| c.name.as_str())
        .collect();
    if !null_configs.is_empty() {
        return Err(error(
            ErrorCode::INVALID_CONFIG,
            format!(
                "Null value not supported for topic configs: {}",
                null_configs.join(",")
            ),
        ));
    }
    // A config given twice keeps the last value, as Kafka's map does.
    let configs: BTreeMap<&str, &str> = topic
        .configs
        .iter()
        .filter_map(|c| c.value.as_deref().map(|v| (c.name.as_str(), v)))
        .collect();
    for (name, value) in &configs {
        kcoord_storage::log_config::validate_topic_config(name, value)
            .map_err(|message| error(ErrorCode::INVALID_CONFIG, message))?;
    }
    Ok(configs)
}

/// The records that create a topic whose every partition `node_id` leads and alone replicates.
fn topic_records(
    name: &str,
    id: Uuid,
    replication_factor: i16,
    configs: &BTreeMap<&str, &str>,
    num_partitions: i32,
    node_id: i32,
) -> Vec<Record> {
    let mut records = vec![Record::Topic(TopicRecord {
        name: name.to_owned(),
        topic_id: id,
        replication_factor,
        ..Default::default()
    })];
    // ConfigRecords go after the TopicRecord and before the PartitionRecords, as in Kafka.
    records.extend(configs.iter().map(|(k, v)| {
        Record::Config(ConfigRecord {
            resource_type: TOPIC_RESOURCE,
            resource_name: name.to_owned(),
            name: (*k).to_owned(),
            value: Some((*v).to_owned()),
            ..Default::default()
        })
    }));
    records.extend((0..num_partitions).map(|p| {
        Record::Partition(PartitionRecord {
            partition_id: p,
            topic_id: id,
            replicas: vec![node_id],
            isr: vec![node_id],
            leader: node_id,
            leader_epoch: 0,
            partition_epoch: 0,
            ..Default::default()
        })
    }));
    records
}

/// The partition count and replication factor, from a manual assignment or from the request
/// with -1 meaning the default.
fn placement(defaults: &TopicDefaults, topic: &CreatableTopic) -> Result<(i32, i16), TopicError> {
    if topic.assignments.is_empty() {
        return requested_placement(defaults, topic);
    }
    if topic.replication_factor != -1 {
        return Err(error(
            ErrorCode::INVALID_REQUEST,
            "A manual partition assignment was specified, but replication factor was not set to -1.",
        ));
    }
    if topic.num_partitions != -1 {
        return Err(error(
            ErrorCode::INVALID_REQUEST,
            "A manual partition assignment was specified, but numPartitions was not set to -1.",
        ));
    }
    manual_placement(defaults.node_id, &topic.assignments)
}

/// `NumPartitions` and `ReplicationFactor` as requested, -1 meaning the default.
fn requested_placement(
    defaults: &TopicDefaults,
    topic: &CreatableTopic,
) -> Result<(i32, i16), TopicError> {
    if topic.replication_factor < -1 || topic.replication_factor == 0 {
        return Err(error(
            ErrorCode::INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        ));
    }
    if topic.num_partitions < -1 || topic.num_partitions == 0 {
        return Err(error(
            ErrorCode::INVALID_PARTITIONS,
            "Number of partitions was set to an invalid non-positive value.",
        ));
    }
    let partitions = if topic.num_partitions == -1 {
        defaults.num_partitions
    } else {
        topic.num_partitions
    };
    let replication = if topic.replication_factor == -1 {
        defaults.replication_factor
    } else {
        topic.replication_factor
    };
    Ok((partitions, replication))
}

/// The partition count and replication factor of a manual assignment, which may name only
/// this node (`node_id`).
fn manual_placement(
    node_id: i32,
    assignments: &[CreatableReplicaAssignment],
) -> Result<(i32, i16), TopicError> {
    let bad = |m: String| error(ErrorCode::INVALID_REPLICA_ASSIGNMENT, m);
    let mut seen = HashSet::new();
    let mut replication: Option<usize> = None;
    for a in assignments {
        if !seen.insert(a.partition_index) {
            return Err(bad(format!(
                "Found multiple manual partition assignments for partition {}",
                a.partition_index
            )));
        }
        if a.broker_ids.is_empty() {
            return Err(bad(
                "The manual partition assignment includes an empty replica list.".to_owned(),
            ));
        }
        let mut sorted = a.broker_ids.clone();
        sorted.sort_unstable();
        let mut previous = None;
        for broker in sorted.iter().copied() {
            if broker != node_id {
                return Err(bad(format!("The manual partition assignment includes broker {broker}, but no such broker is registered.")));
            }
            if previous == Some(broker) {
                return Err(bad(format!(
                    "The manual partition assignment includes the broker {broker} more than once."
                )));
            }
            previous = Some(broker);
        }
        if let Some(rf) = replication.filter(|rf| *rf != sorted.len()) {
            return Err(bad(format!("The manual partition assignment includes a partition with {} replica(s), but this is not consistent with previous partitions, which have {rf} replica(s).", sorted.len())));
        }
        replication = Some(sorted.len());
    }
    let count = assignments.len() as i32;
    if (0..count).any(|p| !seen.contains(&p)) {
        return Err(bad(
            "partitions should be a consecutive 0-based integer sequence".to_owned(),
        ));
    }
    // Only this node can be named, once: the replication factor is 1.
    Ok((count, replication.map_or(1, |r| r as i16)))
}

/// Kafka's duplicate check on a request's list: the items given exactly once, in the order
/// given, and the items given more than once, each once, in the order of their second
/// occurrence. Linear in the list (hashing), where a scan per item would be quadratic.
fn split_duplicates<T: Hash + Eq + Copy>(items: impl IntoIterator<Item = T>) -> (Vec<T>, Vec<T>) {
    let mut counts: HashMap<T, u8> = HashMap::new();
    let mut first_seen = Vec::new();
    let mut duplicates = Vec::new();
    for item in items {
        let count = counts.entry(item).or_insert(0);
        match *count {
            0 => first_seen.push(item),
            1 => duplicates.push(item),
            _ => continue,
        }
        *count += 1;
    }
    first_seen.retain(|item| counts[item] == 1);
    (first_seen, duplicates)
}

#[cfg(test)]
mod tests;
