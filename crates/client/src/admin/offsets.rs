//! OffsetCommit and OffsetFetch for a group, at the newest version both sides know.
//!
//! Version 10 of both names topics by id. Ids come from Metadata; when it cannot give one for
//! every topic (or an OffsetFetch asks for all topics, whose answer would need every id
//! mapped back), the call stays at v9, which names topics.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use kcoord_wire::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kcoord_wire::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kcoord_wire::messages::{OffsetCommitRequest, OffsetFetchRequest, OffsetFetchResponse};
use kcoord_wire::{Request, VersionRange};
use tracing::debug;
use uuid::Uuid;

use crate::admin::{kafka_result, GroupResult, TopicPartition};
use crate::client::Client;
use crate::connection::Connection;
use crate::error::ClientError;

/// First versions of the features below.
const COMMIT_INSTANCE_ID: i16 = 7;
const TOPIC_IDS: i16 = 10;
const FETCH_NULL_TOPICS: i16 = 2;
const FETCH_REQUIRE_STABLE: i16 = 7;
const FETCH_BATCHED: i16 = 8;

/// A committed offset (Kafka's `OffsetAndMetadata`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetAndMetadata {
    pub offset: i64,
    pub leader_epoch: Option<i32>,
    pub metadata: Option<String>,
}

impl OffsetAndMetadata {
    pub fn new(offset: i64) -> Self {
        OffsetAndMetadata {
            offset,
            leader_epoch: None,
            metadata: None,
        }
    }
}

/// Who commits or fetches: a member of the group, checked by the coordinator against its
/// epoch. Without one the call is an admin's (member epoch -1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupMember {
    pub member_id: String,
    /// The member epoch (the generation id for classic groups).
    pub member_epoch: i32,
    pub instance_id: Option<String>,
}

/// One group of [`Client::fetch_offsets_for_groups`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupOffsetsSpec {
    pub group_id: String,
    /// `None` = every partition with a committed offset.
    pub partitions: Option<Vec<TopicPartition>>,
    pub member: Option<GroupMember>,
}

/// A result per partition.
pub type PartitionResults<T> = BTreeMap<TopicPartition, Result<T, ClientError>>;

/// Committed offsets as fetched: `None` where the partition has none.
type Fetched = PartitionResults<Option<OffsetAndMetadata>>;

impl Client {
    /// Commits `offsets` for `group_id` at its coordinator; a result per partition (e.g.
    /// STALE_MEMBER_EPOCH as a [`ClientError::Kafka`]). `Err` when the request failed as a
    /// whole. NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE on any partition sends the whole
    /// commit once more to a freshly looked-up coordinator.
    pub async fn commit_offsets(
        &self,
        group_id: &str,
        offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>,
        member: Option<&GroupMember>,
    ) -> Result<PartitionResults<()>, ClientError> {
        let moved = |results: &PartitionResults<()>| {
            results
                .values()
                .any(|r| r.as_ref().is_err_and(ClientError::is_coordinator_moved))
        };
        self.with_coordinator(group_id, moved, |conn| {
            self.commit_on(conn, group_id, offsets, member)
        })
        .await
    }

    async fn commit_on(
        &self,
        conn: Connection,
        group_id: &str,
        offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>,
        member: Option<&GroupMember>,
    ) -> Result<PartitionResults<()>, ClientError> {
        let names: BTreeSet<&str> = offsets.keys().map(|tp| tp.topic.as_str()).collect();
        let (version, ids) = self
            .topic_id_version::<OffsetCommitRequest>(&conn, Some(&names))
            .await?;
        let mut topics: BTreeMap<&str, Vec<OffsetCommitRequestPartition>> = BTreeMap::new();
        for (tp, offset) in offsets {
            topics
                .entry(&tp.topic)
                .or_default()
                .push(OffsetCommitRequestPartition {
                    partition_index: tp.partition,
                    committed_offset: offset.offset,
                    committed_leader_epoch: offset.leader_epoch.unwrap_or(-1),
                    committed_metadata: offset.metadata.clone(),
                    ..Default::default()
                });
        }
        let request = OffsetCommitRequest {
            group_id: group_id.to_string(),
            generation_id_or_member_epoch: member.map_or(-1, |m| m.member_epoch),
            member_id: member.map(|m| m.member_id.clone()).unwrap_or_default(),
            group_instance_id: if version >= COMMIT_INSTANCE_ID {
                member.and_then(|m| m.instance_id.clone())
            } else {
                None
            },
            topics: topics
                .into_iter()
                .map(|(name, partitions)| OffsetCommitRequestTopic {
                    name: name.to_string(),
                    topic_id: ids.get(name).copied().unwrap_or_default(),
                    partitions,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let response = conn.send(request, version).await?;
        let names_by_id = invert(&ids);
        let mut results: PartitionResults<()> = BTreeMap::new();
        for topic in response.topics {
            let name = topic_name(version, topic.name, topic.topic_id, &names_by_id)?;
            for p in topic.partitions {
                results.insert(
                    TopicPartition::new(name.clone(), p.partition_index),
                    kafka_result(OffsetCommitRequest::KEY, p.error_code, None),
                );
            }
        }
        for tp in offsets.keys() {
            results.entry(tp.clone()).or_insert_with(|| {
                Err(ClientError::Protocol(format!(
                    "the OffsetCommit response has no result for {}-{}",
                    tp.topic, tp.partition
                )))
            });
        }
        debug!(
            group = group_id,
            version,
            partitions = results.len(),
            "committed offsets"
        );
        Ok(results)
    }

    /// The committed offsets of `group_id` for `partitions` (`None` = all it has), as an
    /// admin. A group error (e.g. GROUP_ID_NOT_FOUND) is `Err`; partition errors are per
    /// partition.
    pub async fn fetch_offsets(
        &self,
        group_id: &str,
        partitions: Option<&[TopicPartition]>,
        require_stable: bool,
    ) -> Result<Fetched, ClientError> {
        let spec = GroupOffsetsSpec {
            group_id: group_id.to_string(),
            partitions: partitions.map(<[TopicPartition]>::to_vec),
            member: None,
        };
        let mut results = self
            .fetch_offsets_for_groups(std::slice::from_ref(&spec), require_stable)
            .await;
        match results.pop() {
            Some(r) => r.result,
            None => Err(ClientError::Protocol(format!(
                "no result for group {group_id:?}"
            ))),
        }
    }

    /// Committed offsets of several groups: one OffsetFetch per coordinator when it speaks
    /// v8+ (the batched form), else one per group. One result per group, in request order.
    pub async fn fetch_offsets_for_groups(
        &self,
        specs: &[GroupOffsetsSpec],
        require_stable: bool,
    ) -> Vec<GroupResult<Fetched>> {
        let ids: Vec<&str> = specs.iter().map(|s| s.group_id.as_str()).collect();
        self.per_coordinator(&ids, |_, conn, groups| async move {
            let wanted: Vec<&GroupOffsetsSpec> = groups.iter().filter_map(|g| specs.iter().find(|s| &s.group_id == g)).collect();
            let version = conn.negotiated_version::<OffsetFetchRequest>().await?;
            if require_stable && version < FETCH_REQUIRE_STABLE {
                return Err(ClientError::Unsupported {
                    api: OffsetFetchRequest::KEY,
                    reason: format!("RequireStable needs OffsetFetch v{FETCH_REQUIRE_STABLE}+, the server speaks v{version}"),
                });
            }
            if version >= FETCH_BATCHED {
                return self.fetch_batched(&conn, &wanted, require_stable).await;
            }
            let mut answers = Vec::with_capacity(wanted.len());
            for spec in wanted {
                answers.push((spec.group_id.clone(), fetch_single(&conn, version, spec, require_stable).await));
            }
            Ok(answers)
        })
        .await
    }

    /// OffsetFetch v8+: every group in one request.
    async fn fetch_batched(
        &self,
        conn: &Connection,
        specs: &[&GroupOffsetsSpec],
        require_stable: bool,
    ) -> Result<Vec<(String, Result<Fetched, ClientError>)>, ClientError> {
        // v10 only when every group names its topics and every topic has a known id.
        let names: Option<BTreeSet<&str>> = specs
            .iter()
            .map(|s| {
                s.partitions
                    .as_ref()
                    .map(|ps| ps.iter().map(|tp| tp.topic.as_str()))
            })
            .collect::<Option<Vec<_>>>()
            .map(|v| v.into_iter().flatten().collect());
        let (version, ids) = self
            .topic_id_version::<OffsetFetchRequest>(conn, names.as_ref())
            .await?;
        let request = OffsetFetchRequest {
            groups: specs
                .iter()
                .map(|s| OffsetFetchRequestGroup {
                    group_id: s.group_id.clone(),
                    member_id: s.member.as_ref().map(|m| m.member_id.clone()),
                    member_epoch: s.member.as_ref().map_or(-1, |m| m.member_epoch),
                    topics: s.partitions.as_ref().map(|ps| {
                        by_topic(ps)
                            .into_iter()
                            .map(|(name, partition_indexes)| OffsetFetchRequestTopics {
                                name: name.to_string(),
                                topic_id: ids.get(name).copied().unwrap_or_default(),
                                partition_indexes,
                                ..Default::default()
                            })
                            .collect()
                    }),
                    ..Default::default()
                })
                .collect(),
            require_stable,
            ..Default::default()
        };
        let response = conn.send(request, version).await?;
        let names_by_id = invert(&ids);
        let mut answers = Vec::with_capacity(response.groups.len());
        for group in response.groups {
            let result =
                kafka_result(OffsetFetchRequest::KEY, group.error_code, None).and_then(|()| {
                    let mut fetched = Fetched::new();
                    for topic in group.topics {
                        let name = topic_name(version, topic.name, topic.topic_id, &names_by_id)?;
                        for p in topic.partitions {
                            fetched.insert(
                                TopicPartition::new(name.clone(), p.partition_index),
                                committed(
                                    p.error_code,
                                    p.committed_offset,
                                    p.committed_leader_epoch,
                                    p.metadata,
                                ),
                            );
                        }
                    }
                    Ok(fetched)
                });
            answers.push((group.group_id, result));
        }
        Ok(answers)
    }

    /// The highest version of `R` to use and, for v10+, the topic ids of `names`. Falls back
    /// to v9 when `names` is `None` or Metadata lacks an id.
    async fn topic_id_version<R: Request>(
        &self,
        conn: &Connection,
        names: Option<&BTreeSet<&str>>,
    ) -> Result<(i16, HashMap<String, Uuid>), ClientError> {
        let version = conn.negotiated_version::<R>().await?;
        if version < TOPIC_IDS {
            return Ok((version, HashMap::new()));
        }
        if let Some(names) = names {
            if let Some(ids) = self.topic_ids(names).await {
                return Ok((version, ids));
            }
        }
        let server_min = conn
            .server_versions()
            .and_then(|v| v.range(R::KEY))
            .map_or(R::VERSIONS.min, |r: VersionRange| r.min);
        if server_min >= TOPIC_IDS {
            return Err(ClientError::Unsupported {
                api: R::KEY,
                reason: format!("the server needs topic ids (v{server_min}+) and Metadata does not give one for every topic"),
            });
        }
        Ok((TOPIC_IDS - 1, HashMap::new()))
    }

    /// The ids of `names` from Metadata, if it knows every one.
    async fn topic_ids(&self, names: &BTreeSet<&str>) -> Option<HashMap<String, Uuid>> {
        let metadata = self
            .metadata(Some(names.iter().map(|n| n.to_string()).collect()))
            .await
            .ok()?;
        let ids: HashMap<String, Uuid> = metadata
            .topics
            .into_iter()
            .filter(|t| t.error_code == 0 && !t.topic_id.is_nil())
            .filter_map(|t| Some((t.name?, t.topic_id)))
            .collect();
        names.iter().all(|n| ids.contains_key(*n)).then_some(ids)
    }
}

/// OffsetFetch v1-v7: one group per request.
async fn fetch_single(
    conn: &Connection,
    version: i16,
    spec: &GroupOffsetsSpec,
    require_stable: bool,
) -> Result<Fetched, ClientError> {
    if spec.partitions.is_none() && version < FETCH_NULL_TOPICS {
        return Err(ClientError::Unsupported {
            api: OffsetFetchRequest::KEY,
            reason: format!("fetching every partition needs OffsetFetch v{FETCH_NULL_TOPICS}+, the server speaks v{version}"),
        });
    }
    let request = OffsetFetchRequest {
        group_id: spec.group_id.clone(),
        topics: spec.partitions.as_ref().map(|ps| {
            by_topic(ps)
                .into_iter()
                .map(|(name, partition_indexes)| OffsetFetchRequestTopic {
                    name: name.to_string(),
                    partition_indexes,
                    ..Default::default()
                })
                .collect()
        }),
        require_stable,
        ..Default::default()
    };
    let response: OffsetFetchResponse = conn.send(request, version).await?;
    kafka_result(OffsetFetchRequest::KEY, response.error_code, None)?;
    let mut fetched = Fetched::new();
    for topic in response.topics {
        for p in topic.partitions {
            fetched.insert(
                TopicPartition::new(topic.name.clone(), p.partition_index),
                committed(
                    p.error_code,
                    p.committed_offset,
                    p.committed_leader_epoch,
                    p.metadata,
                ),
            );
        }
    }
    Ok(fetched)
}

fn committed(
    error_code: i16,
    offset: i64,
    leader_epoch: i32,
    metadata: Option<String>,
) -> Result<Option<OffsetAndMetadata>, ClientError> {
    kafka_result(OffsetFetchRequest::KEY, error_code, None)?;
    // -1 is Kafka's "no committed offset".
    Ok((offset >= 0).then(|| OffsetAndMetadata {
        offset,
        leader_epoch: (leader_epoch >= 0).then_some(leader_epoch),
        metadata,
    }))
}

fn by_topic(partitions: &[TopicPartition]) -> BTreeMap<&str, Vec<i32>> {
    let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for tp in partitions {
        topics.entry(&tp.topic).or_default().push(tp.partition);
    }
    topics
}

fn invert(ids: &HashMap<String, Uuid>) -> HashMap<Uuid, String> {
    ids.iter().map(|(name, id)| (*id, name.clone())).collect()
}

/// A response topic's name: as sent below v10, mapped back from its id from v10.
fn topic_name(
    version: i16,
    name: String,
    id: Uuid,
    names_by_id: &HashMap<Uuid, String>,
) -> Result<String, ClientError> {
    if version < TOPIC_IDS {
        return Ok(name);
    }
    names_by_id.get(&id).cloned().ok_or_else(|| {
        ClientError::Protocol(format!(
            "the response names topic id {id}, which was not asked for"
        ))
    })
}
