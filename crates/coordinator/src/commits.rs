//! OffsetCommit, OffsetDelete and OffsetFetch for the groups of a shard: streams groups
//! (`StreamsGroup.validateOffsetCommit` / `validateOffsetFetch`) and groups that only commit
//! offsets (Kafka's "simple" classic groups) (docs/kafka-coordinator-facts.md §4, §12).
use kcoord_metadata::{Record, StreamsGroup};
use kcoord_wire::records::{OffsetCommitKey, OffsetCommitValue};
use kcoord_wire::ErrorCode;
use uuid::Uuid;

use crate::classic::ClassicGroupState;
use crate::error::{CoordinatorError, Result};
use crate::groups::subscribed_to;
use crate::shard::CoordinatorShard;
use crate::Outcome;

/// Kafka's default `offset.metadata.max.bytes`.
pub const OFFSET_METADATA_MAX_BYTES: usize = 4096;

/// One partition of an OffsetCommit.
#[derive(Debug, Clone)]
pub struct OffsetToCommit {
    pub topic: String,
    pub topic_id: Uuid,
    pub partition: i32,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: Option<String>,
}

/// Kafka's `DefaultRecordBatch.RECORD_BATCH_OVERHEAD`: a v2 batch's header.
const RECORD_BATCH_OVERHEAD: usize = 61;

/// The bytes of the record batch Kafka's coordinator would append for this commit: an
/// OffsetCommit record (key v1, value v4) per offset whose metadata fits, in one v2 batch
/// (`AbstractRecords.estimateSizeInBytes`). Kafka refuses a write whose batch is larger than
/// the offsets topic's `max.message.bytes` (the broker's `message.max.bytes`): the log
/// rejects it, and the coordinator answers UNKNOWN_SERVER_ERROR on every partition. Computed
/// from the request alone, so that such a commit is refused before its shard is locked.
pub fn offset_commit_batch_bytes(group_id: &str, offsets: &[OffsetToCommit]) -> usize {
    let key = 2 + (2 + group_id.len()) + 2 + 4;
    offsets
        .iter()
        .filter(|o| !metadata_too_large(o))
        .enumerate()
        .fold(RECORD_BATCH_OVERHEAD, |total, (i, o)| {
            let metadata = o.metadata.as_deref().map_or(0, str::len);
            // Version, offset, leader epoch, metadata, commit timestamp, tagged fields (the
            // topic id is tag 0: tag, size and 16 bytes).
            let tagged = if o.topic_id.is_nil() {
                1
            } else {
                1 + 1 + 1 + 16
            };
            let value = 2 + 8 + 4 + uvarint_len(metadata as u64 + 1) + metadata + 8 + tagged;
            let key = key + o.topic.len();
            // Attributes, timestamp delta (0), offset delta, key, value, header count (0).
            let body = 1
                + 1
                + varint_len(i as i64)
                + varint_len(key as i64)
                + key
                + varint_len(value as i64)
                + value
                + 1;
            total.saturating_add(varint_len(body as i64) + body)
        })
}

/// Bytes of `v` as an unsigned varint.
fn uvarint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Bytes of `v` as a zig-zag varint.
fn varint_len(v: i64) -> usize {
    uvarint_len(((v << 1) ^ (v >> 63)) as u64)
}

/// Who commits: a member id (empty for an admin or a simple consumer), a classic static
/// member's instance id, and the generation (classic) or member epoch (streams), -1 for none.
#[derive(Debug, Clone, Copy)]
pub struct CommitMember<'a> {
    pub member_id: &'a str,
    pub group_instance_id: Option<&'a str>,
    pub generation_or_epoch: i32,
}

impl CoordinatorShard {
    /// OffsetCommit (`OffsetMetadataManager.commitOffset` with `StreamsGroup.validateOffsetCommit`).
    /// Returns one code per offset (OFFSET_METADATA_TOO_LARGE or NONE); a request-level error
    /// applies to every partition.
    #[allow(clippy::too_many_arguments)]
    pub fn commit_offsets(
        &self,
        group_id: &str,
        member_id: &str,
        member_epoch: i32,
        api_version: i16,
        offsets: &[OffsetToCommit],
        now: i64,
    ) -> Outcome<Result<Vec<ErrorCode>>> {
        let member = CommitMember {
            member_id,
            group_instance_id: None,
            generation_or_epoch: member_epoch,
        };
        self.commit_offsets_of(&member, group_id, api_version, offsets, now)
    }

    /// [`CoordinatorShard::commit_offsets`] for a member that may be a classic group's static
    /// member.
    pub fn commit_offsets_of(
        &self,
        member: &CommitMember<'_>,
        group_id: &str,
        api_version: i16,
        offsets: &[OffsetToCommit],
        now: i64,
    ) -> Outcome<Result<Vec<ErrorCode>>> {
        if let Some(group) = self.classic_group(group_id) {
            let checked = group.validate_offset_commit(
                member.member_id,
                member.group_instance_id,
                member.generation_or_epoch,
                false,
            );
            return match checked {
                Ok(()) => commit_records(group_id, offsets, now),
                Err(code) => Outcome::answer(Err(CoordinatorError {
                    code,
                    message: None,
                })),
            };
        }
        let (member_id, member_epoch) = (member.member_id, member.generation_or_epoch);
        match self.check_commit(group_id, member_id, member_epoch, api_version, offsets) {
            Ok(()) => commit_records(group_id, offsets, now),
            Err(e) => Outcome::answer(Err(e)),
        }
    }

    /// Whether the commit may go ahead (`StreamsGroup.validateOffsetCommit`, and room for a
    /// new offsets-only group), without committing anything: in gateway mode a streams group's
    /// offsets are checked here and kept in the upstream cluster.
    pub fn check_commit(
        &self,
        group_id: &str,
        member_id: &str,
        member_epoch: i32,
        api_version: i16,
        offsets: &[OffsetToCommit],
    ) -> Result<()> {
        let state = self.store.state();
        if let Some(g) = state.consumer_groups.get(group_id) {
            let checked: Vec<&OffsetToCommit> =
                offsets.iter().filter(|o| !metadata_too_large(o)).collect();
            return crate::consumer::admin::validate_commit(
                g,
                member_id,
                member_epoch,
                Some(api_version),
                &checked,
                &self.topics,
            );
        }
        match state.streams_groups.get(group_id) {
            None if member_epoch < 0 => {
                if state.offsets.group(group_id).is_none() {
                    self.check_room_for_group()?;
                }
            }
            None if api_version >= 9 => {
                return Err(CoordinatorError::any_group_not_found(group_id))
            }
            None => {
                return Err(CoordinatorError {
                    code: ErrorCode::ILLEGAL_GENERATION,
                    message: None,
                })
            }
            // Kafka validates only the partitions whose metadata fits: a too-large one is
            // answered OFFSET_METADATA_TOO_LARGE without looking at its task.
            Some(g) => {
                let checked: Vec<&OffsetToCommit> =
                    offsets.iter().filter(|o| !metadata_too_large(o)).collect();
                validate_commit(g, member_id, member_epoch, Some(api_version), &checked)?
            }
        }
        Ok(())
    }

    /// OffsetDelete (`OffsetMetadataManager.deleteOffsets`) for the partitions that passed the
    /// network layer's topic checks: one code per partition, in the order given. A topic the
    /// group still consumes (a source or repartition source topic of a non-empty streams
    /// group, a topic the current generation of a classic `consumer` group subscribes to) is
    /// GROUP_SUBSCRIBED_TO_TOPIC; otherwise the offset, if any, is deleted. The group must
    /// exist (streams, classic or offsets-only): else GROUP_ID_NOT_FOUND for the request.
    pub fn delete_offsets(
        &self,
        group_id: &str,
        topics: &[(String, Vec<i32>)],
    ) -> Outcome<Result<Vec<Vec<ErrorCode>>>> {
        let state = self.store.state();
        let group = state.streams_groups.get(group_id);
        let classic = self.classic_group(group_id);
        let consumer = state.consumer_groups.get(group_id);
        if group.is_none()
            && classic.is_none()
            && consumer.is_none()
            && state.offsets.group(group_id).is_none()
        {
            return Outcome::answer(Err(CoordinatorError::any_group_not_found(group_id)));
        }
        // Kafka's `ClassicGroup.validateOffsetDelete`: a live group that is not a consumer
        // group keeps its offsets.
        if classic.is_some_and(|g| !g.is(ClassicGroupState::Empty) && !g.uses_consumer_protocol()) {
            return Outcome::answer(Err(CoordinatorError {
                code: ErrorCode::NON_EMPTY_GROUP,
                message: None,
            }));
        }
        let committed = state.offsets.group(group_id);
        let mut records = Vec::new();
        let mut codes = Vec::with_capacity(topics.len());
        for (topic, partitions) in topics {
            let subscribed = group.is_some_and(|g| subscribed_to(g, topic))
                || classic
                    .is_some_and(|g| !g.is(ClassicGroupState::Empty) && g.is_subscribed_to(topic))
                || consumer.is_some_and(|g| crate::consumer::admin::subscribed_to(g, topic));
            if subscribed {
                codes.push(vec![ErrorCode::GROUP_SUBSCRIBED_TO_TOPIC; partitions.len()]);
                continue;
            }
            for p in partitions {
                let present = committed.is_some_and(|c| c.contains_key(&(topic.clone(), *p)));
                if present {
                    records.push(Record::OffsetCommit(
                        OffsetCommitKey {
                            group: group_id.into(),
                            topic: topic.clone(),
                            partition: *p,
                            ..Default::default()
                        },
                        None,
                    ));
                }
            }
            codes.push(vec![ErrorCode::NONE; partitions.len()]);
        }
        Outcome {
            records: crate::at_latest_version(records),
            response: Ok(codes),
            effects: Vec::new(),
        }
    }

    /// `StreamsGroup.validateOffsetFetch`: admin fetches (no member id, epoch < 0) always pass.
    pub fn validate_offset_fetch(
        &self,
        group_id: &str,
        member_id: Option<&str>,
        member_epoch: i32,
    ) -> Result<()> {
        if let Some(g) = self.consumer_group(group_id) {
            return crate::consumer::admin::validate_fetch(g, member_id, member_epoch);
        }
        let Some(group) = self.group(group_id) else {
            return Ok(());
        };
        if member_id.is_none() && member_epoch < 0 {
            return Ok(());
        }
        let member_id = member_id.unwrap_or_default();
        let member = group
            .members
            .get(member_id)
            .ok_or_else(|| CoordinatorError::unknown_member(group_id, member_id))?;
        if member_epoch != member.member_epoch {
            return Err(CoordinatorError::new(
                ErrorCode::STALE_MEMBER_EPOCH,
                format!("The received member epoch {member_epoch} does not match the expected member epoch {}.", member.member_epoch),
            ));
        }
        Ok(())
    }

    pub fn committed_offsets(
        &self,
        group_id: &str,
    ) -> Vec<(String, i32, kcoord_metadata::CommittedOffset)> {
        self.store
            .state()
            .offsets
            .group(group_id)
            .map(|g| {
                g.iter()
                    .map(|((t, p), o)| (t.clone(), *p, o.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The OffsetCommit records of a commit that passed its checks, and one code per offset
/// (OFFSET_METADATA_TOO_LARGE, whose offset is not written, or NONE).
fn commit_records(
    group_id: &str,
    offsets: &[OffsetToCommit],
    now: i64,
) -> Outcome<Result<Vec<ErrorCode>>> {
    offset_records(offsets, now, |o, value| {
        Record::OffsetCommit(
            OffsetCommitKey {
                group: group_id.into(),
                topic: o.topic.clone(),
                partition: o.partition,
                ..Default::default()
            },
            Some(value),
        )
    })
}

/// One record per offset whose metadata fits, made by `record` from the offset and its value
/// committed at `now`, and one code per offset (OFFSET_METADATA_TOO_LARGE, or NONE).
pub(crate) fn offset_records(
    offsets: &[OffsetToCommit],
    now: i64,
    record: impl Fn(&OffsetToCommit, OffsetCommitValue) -> Record,
) -> Outcome<Result<Vec<ErrorCode>>> {
    let mut codes = Vec::with_capacity(offsets.len());
    let mut records = Vec::new();
    for o in offsets {
        if metadata_too_large(o) {
            codes.push(ErrorCode::OFFSET_METADATA_TOO_LARGE);
            continue;
        }
        codes.push(ErrorCode::NONE);
        let value = OffsetCommitValue {
            offset: o.offset,
            leader_epoch: o.leader_epoch,
            metadata: o.metadata.clone().unwrap_or_default(),
            commit_timestamp: now,
            topic_id: o.topic_id,
            ..Default::default()
        };
        records.push(record(o, value));
    }
    Outcome {
        records: crate::at_latest_version(records),
        response: Ok(codes),
        effects: Vec::new(),
    }
}

pub(crate) fn metadata_too_large(o: &OffsetToCommit) -> bool {
    o.metadata
        .as_ref()
        .is_some_and(|m| m.len() > OFFSET_METADATA_MAX_BYTES)
}

/// `StreamsGroup.validateOffsetCommit`; `api_version` is None for a transactional commit, which
/// Kafka does not hold to OffsetCommit's version 9.
pub(crate) fn validate_commit(
    group: &StreamsGroup,
    member_id: &str,
    member_epoch: i32,
    api_version: Option<i16>,
    offsets: &[&OffsetToCommit],
) -> Result<()> {
    if member_epoch < 0 && group.members.is_empty() {
        return Ok(());
    }
    let member = group
        .members
        .get(member_id)
        .ok_or_else(|| CoordinatorError::unknown_member(&group.group_id, member_id))?;
    if api_version.is_some_and(|v| v < 9) {
        return Err(CoordinatorError::new(
            ErrorCode::UNSUPPORTED_VERSION,
            "OffsetCommit version 9 or above must be used by members using the streams group protocol",
        ));
    }
    if member_epoch == member.member_epoch {
        return Ok(());
    }
    let stale = |msg: String| CoordinatorError::new(ErrorCode::STALE_MEMBER_EPOCH, msg);
    if member_epoch > member.member_epoch {
        return Err(stale(format!(
            "Received member epoch {member_epoch} is newer than current member epoch {}.",
            member.member_epoch
        )));
    }
    // An older epoch is checked per partition against the epoch each task was assigned at.
    let topology = group
        .topology
        .as_ref()
        .ok_or_else(|| stale("Topology is not available for offset commit validation.".into()))?;
    for o in offsets {
        // Kafka's `StreamsTopology.sourceTopicMap`: source and repartition source topics.
        let Some(sub) = topology.subtopologies.iter().find(|s| {
            s.source_topics.contains(&o.topic)
                || s.repartition_source_topics
                    .iter()
                    .any(|r| r.name == o.topic)
        }) else {
            return Err(stale(format!("Topic {} is not in the topology.", o.topic)));
        };
        let Some(epoch) = member.active_task_epoch(&sub.subtopology_id, o.partition) else {
            return Err(stale(format!(
                "Task {}-{} is not assigned or pending revocation for member.",
                sub.subtopology_id, o.partition
            )));
        };
        if member_epoch < epoch {
            return Err(stale(format!(
                "Received member epoch {member_epoch} is older than assignment epoch {epoch} for task {}-{}.",
                sub.subtopology_id, o.partition
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use kcoord_wire::Encodable;

    use super::*;

    fn offset(topic: &str, metadata: &str, topic_id: Uuid) -> OffsetToCommit {
        OffsetToCommit {
            topic: topic.into(),
            topic_id,
            partition: 0,
            offset: 5,
            leader_epoch: 1,
            metadata: Some(metadata.into()),
        }
    }

    /// The size of the record Kafka writes: version-prefixed key and value (v4) in a v2
    /// record (`DefaultRecord.sizeInBytes`).
    fn kafka_record_bytes(group: &str, o: &OffsetToCommit, offset_delta: i64) -> usize {
        let key = OffsetCommitKey {
            group: group.into(),
            topic: o.topic.clone(),
            partition: o.partition,
            ..Default::default()
        };
        let value = OffsetCommitValue {
            offset: o.offset,
            leader_epoch: o.leader_epoch,
            metadata: o.metadata.clone().unwrap_or_default(),
            commit_timestamp: 1,
            topic_id: o.topic_id,
            ..Default::default()
        };
        // The key's version prefix is its record type, 1; our schema numbers that version 0.
        let key = 2 + key.compute_size(0).unwrap();
        let value = 2 + value.compute_size(4).unwrap();
        let body = 1
            + 1
            + varint_len(offset_delta)
            + varint_len(key as i64)
            + key
            + varint_len(value as i64)
            + value
            + 1;
        varint_len(body as i64) + body
    }

    #[test]
    fn commit_batch_bytes_are_kafkas_record_sizes() {
        let id = Uuid::from_u128(7);
        let offsets = vec![
            offset("t", "m", Uuid::nil()),
            offset("orders", &"x".repeat(300), id),
            // Too large: answered OFFSET_METADATA_TOO_LARGE, never written.
            offset("t", &"y".repeat(OFFSET_METADATA_MAX_BYTES + 1), id),
        ];
        let expected = RECORD_BATCH_OVERHEAD
            + kafka_record_bytes("g", &offsets[0], 0)
            + kafka_record_bytes("g", &offsets[1], 1);
        // The first record by hand: key 2+3+3+4, value 2+8+4+2+8+1, framing 1+1+1+1+1+1 and
        // its length.
        assert_eq!(kafka_record_bytes("g", &offsets[0], 0), 12 + 25 + 6 + 1);
        assert_eq!(offset_commit_batch_bytes("g", &offsets), expected);
    }

    #[test]
    fn a_commit_of_many_partitions_exceeds_kafkas_default_batch_limit() {
        let max = 1_048_588;
        let one = offset("topic-name", "", Uuid::from_u128(1));
        let fits = vec![one.clone(); 1000];
        assert!(offset_commit_batch_bytes("group", &fits) < max);
        let huge = vec![one; 100_000];
        assert!(offset_commit_batch_bytes("group", &huge) > max);
    }
}
