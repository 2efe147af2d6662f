//! Offsets in transactions, on the group's shard: TxnOffsetCommit
//! (`OffsetMetadataManager.commitTransactionalOffset`, KIP-447's member checks for streams
//! groups) writes them as pending, and the transaction's marker makes them committed or drops
//! them (`replayEndTransactionMarker`).
use kcoord_metadata::Record;
use kcoord_wire::records::{OffsetCommitKey, OffsetCommitValue, TxnOffsetCommitKey};
use kcoord_wire::ErrorCode;

use crate::commits::{metadata_too_large, offset_records, validate_commit, OffsetToCommit};
use crate::error::{CoordinatorError, Result};
use crate::shard::CoordinatorShard;
use crate::Outcome;

/// A TxnOffsetCommit, as the group's shard reads it.
#[derive(Debug, Clone, Copy)]
pub struct TxnOffsetCommit<'a> {
    pub group_id: &'a str,
    pub producer_id: i64,
    pub member_id: &'a str,
    /// A classic group's static member.
    pub group_instance_id: Option<&'a str>,
    /// The generation, or for a streams group the member epoch; -1 for a simple group.
    pub generation_id_or_member_epoch: i32,
    pub api_version: i16,
    pub offsets: &'a [OffsetToCommit],
}

/// TxnOffsetCommit v6 (KIP-1319) reports GROUP_ID_NOT_FOUND and STALE_MEMBER_EPOCH as they
/// are; older versions get ILLEGAL_GENERATION for both.
const KIP_1319_VERSION: i16 = 6;

impl CoordinatorShard {
    /// One code per offset (OFFSET_METADATA_TOO_LARGE or NONE); a request-level error applies
    /// to every partition.
    pub fn commit_transactional_offsets(
        &self,
        req: &TxnOffsetCommit<'_>,
        now: i64,
    ) -> Outcome<Result<Vec<ErrorCode>>> {
        if let Err(e) = self.check_transactional_commit(req) {
            return Outcome::answer(Err(e));
        }
        offset_records(req.offsets, now, |o, value| {
            Record::TxnOffsetCommit(
                TxnOffsetCommitKey {
                    producer_id: req.producer_id,
                    group: req.group_id.into(),
                    topic: o.topic.clone(),
                    partition: o.partition,
                    ..Default::default()
                },
                Some(value),
            )
        })
    }

    /// `validateTransactionalOffsetCommit`, without committing anything (see
    /// [`CoordinatorShard::check_commit`]).
    pub fn check_transactional_commit(&self, req: &TxnOffsetCommit<'_>) -> Result<()> {
        let legacy = req.api_version < KIP_1319_VERSION;
        let illegal_generation = || CoordinatorError {
            code: ErrorCode::ILLEGAL_GENERATION,
            message: None,
        };
        let generation = req.generation_id_or_member_epoch;
        if let Some(group) = self.classic_group(req.group_id) {
            return group
                .validate_offset_commit(req.member_id, req.group_instance_id, generation, true)
                .map_err(|code| CoordinatorError {
                    code,
                    message: None,
                });
        }
        let Some(group) = self.group(req.group_id) else {
            let state = self.store.state();
            let simple = state.offsets.group(req.group_id).is_some()
                || state.txn_offsets.has_group(req.group_id);
            return match (generation < 0, simple) {
                (true, _) => Ok(()),
                // Kafka's simple (empty classic) group knows no members.
                (false, true) => Err(CoordinatorError::unknown_member(
                    req.group_id,
                    req.member_id,
                )),
                (false, false) if legacy => Err(illegal_generation()),
                (false, false) => Err(CoordinatorError::any_group_not_found(req.group_id)),
            };
        };
        // TxnOffsetCommit need not name a member: without one, nothing is checked.
        if generation < 0 && req.member_id.is_empty() {
            return Ok(());
        }
        let checked: Vec<&OffsetToCommit> = req
            .offsets
            .iter()
            .filter(|o| !metadata_too_large(o))
            .collect();
        validate_commit(
            group,
            req.member_id,
            req.generation_id_or_member_epoch,
            None,
            &checked,
        )
        .map_err(|e| {
            if legacy && e.code == ErrorCode::STALE_MEMBER_EPOCH {
                illegal_generation()
            } else {
                e
            }
        })
    }

    /// The marker of `producer_id`'s transaction reached this shard: its pending offsets are
    /// committed (unless the partition's committed offset was written later, by a plain commit
    /// or by a transaction settled before) or dropped. A committed offset keeps the record
    /// offset it was first written at (`OriginRecordOffset`), as Kafka's does. Returns how many
    /// were committed.
    pub fn complete_transactional_offsets(&self, producer_id: i64, commit: bool) -> Outcome<usize> {
        let state = self.store.state();
        let mut records = Vec::new();
        let mut committed = 0;
        for group in state.txn_offsets.groups_of(producer_id) {
            let Some(pending) = state.txn_offsets.pending(group, producer_id) else {
                continue;
            };
            for ((topic, partition), offset) in pending {
                records.push(Record::TxnOffsetCommit(
                    TxnOffsetCommitKey {
                        producer_id,
                        group: group.into(),
                        topic: topic.clone(),
                        partition: *partition,
                        ..Default::default()
                    },
                    None,
                ));
                let newer = state
                    .offsets
                    .get(group, topic, *partition)
                    .is_none_or(|existing| offset.record_offset > existing.record_offset);
                if commit && newer {
                    committed += 1;
                    records.push(Record::OffsetCommit(
                        OffsetCommitKey {
                            group: group.into(),
                            topic: topic.clone(),
                            partition: *partition,
                            ..Default::default()
                        },
                        Some(OffsetCommitValue {
                            offset: offset.offset,
                            leader_epoch: offset.leader_epoch,
                            metadata: offset.metadata.clone(),
                            commit_timestamp: offset.commit_timestamp,
                            topic_id: offset.topic_id,
                            origin_record_offset: i64::try_from(offset.record_offset).unwrap_or(-1),
                            ..Default::default()
                        }),
                    ));
                }
            }
        }
        Outcome {
            records: crate::at_latest_version(records),
            response: committed,
            effects: Vec::new(),
        }
    }

    /// Whether an open transaction holds an offset of the partition for the group (OffsetFetch
    /// with `RequireStable` answers UNSTABLE_OFFSET_COMMIT for it).
    pub fn has_pending_transactional_offset(
        &self,
        group: &str,
        topic: &str,
        partition: i32,
    ) -> bool {
        self.store
            .state()
            .txn_offsets
            .is_pending(group, topic, partition)
    }
}
