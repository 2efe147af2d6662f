//! Fetch (key 1), v4-18, for consumers, after Kafka's `KafkaApis.handleFetchRequest`,
//! `ReplicaManager.fetchMessages` / `readFromLog` and `DelayedFetch`
//! (docs/kafka-data-plane-facts.md §4):
//!
//! * topics by id from v13 (unknown: UNKNOWN_TOPIC_ID), by name before; KIP-227 sessions
//!   (`fetch_sessions.rs`);
//! * partitions are read in order within `min(max_bytes, fetch.max.bytes)`, each within its
//!   `partition_max_bytes`; the first partition with data gets at least its whole first batch
//!   ("at least one batch"), later ones only what fits;
//! * the answer waits up to `max_wait_ms` for `min_bytes`, woken by appends to the partitions
//!   it reads ([`crate::runtime::partitions::Partition::appended`]), not by a timer per partition; any
//!   error answers at once;
//! * the batches are the stored bytes, sent by reference (`dispatch.rs` encodes the response
//!   into a `SharedFrame`);
//! * READ_COMMITTED (isolation level 1) reads only below the last stable offset and answers
//!   the aborted transactions overlapping what it read (Kafka's `FetchDataInfo`); both
//!   isolation levels answer the last stable offset, READ_UNCOMMITTED a null aborted list. A
//!   marker write wakes the waiting fetches as an append does, so a read_committed fetch
//!   waiting for data sees the last stable offset move.
//!
//! A single replica has no followers: a fetch with a replica id is answered
//! NOT_LEADER_OR_FOLLOWER, once the follower is allowed CLUSTER_ACTION on the cluster (which
//! it needs instead of READ on each topic, as in Kafka).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use kcoord_storage::ReadError;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, PartitionData,
};
use kcoord_wire::messages::{FetchRequest, FetchResponse};
use kcoord_wire::{ErrorCode, RecordSet};
use tracing::debug;
use uuid::Uuid;

use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::dispatch::Reply;
use crate::rpc::{Check, Rpc};
use crate::runtime::catalog::TopicsImage;
use crate::runtime::fetch_sessions::{FetchPartition, PartitionOutcome, SessionFetch};
use crate::runtime::partitions::Partition;
use crate::state::RequestContext;

/// Fetch as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::Fetch, 4, 18)
    .asks(&[
        Check::new(AclOperation::Read, ResourceType::Topic),
        Check::new(AclOperation::ClusterAction, ResourceType::Cluster),
    ])
    .rewritten_in_gateway();

/// Decodes the request, runs the handler, applies the client quotas (`rpc/quotas.rs`), and
/// sends the response's record batches by reference.
pub(crate) async fn serve(
    ctx: &RequestContext<'_>,
    api: ApiKey,
    version: i16,
    body: bytes::Bytes,
) -> Reply {
    match crate::rpc::dispatch::decode::<FetchRequest>(ctx, api, version, body) {
        Ok(request) => {
            let session_epoch = request.session_epoch;
            let mut response = handle(ctx, request, version).await;
            crate::rpc::quotas::throttle_fetch(ctx, &mut response, session_epoch);
            crate::rpc::dispatch::respond_shared(ctx, api, version, &response)
        }
        Err(reply) => reply,
    }
}

/// The first version that names topics by id.
const TOPIC_ID_VERSION: i16 = 13;
/// The first version that carries the replica id in ReplicaState.
const REPLICA_STATE_VERSION: i16 = 15;
/// Kafka's `IsolationLevel.READ_COMMITTED`.
const READ_COMMITTED: i8 = 1;

/// One partition of the fetch and the log it reads (or why there is none).
struct Target {
    request: FetchPartition,
    log: Result<Arc<Partition>, ErrorCode>,
}

/// What was read from one partition.
#[derive(Default)]
struct Read {
    error: Option<ErrorCode>,
    high_watermark: i64,
    last_stable_offset: i64,
    log_start_offset: i64,
    chunks: Vec<kcoord_storage::Chunk>,
    bytes: usize,
    /// READ_COMMITTED: the aborted transactions overlapping what was read.
    aborted: Option<Vec<kcoord_storage::AbortedTxn>>,
}

pub async fn handle(ctx: &RequestContext<'_>, req: FetchRequest, version: i16) -> FetchResponse {
    let now = crate::support::clock::now_ms();
    let uses_ids = version >= TOPIC_ID_VERSION;
    let replica_id = if version >= REPLICA_STATE_VERSION {
        req.replica_state.replica_id
    } else {
        req.replica_id
    };
    // One catalog snapshot answers the whole request.
    let image = ctx.server.topics.snapshot();
    let (requested, forgotten) = requested_partitions(&image, &req, uses_ids);
    let (session_id, incremental, partitions) = match ctx.server.fetch_sessions.begin(
        req.session_id,
        req.session_epoch,
        uses_ids,
        &requested,
        &forgotten,
        now,
    ) {
        SessionFetch::Full { session_id } => (session_id, false, requested),
        SessionFetch::Incremental {
            session_id,
            partitions,
        } => (session_id, true, partitions),
        SessionFetch::Error(code) => {
            return FetchResponse {
                error_code: code.code(),
                session_id: 0,
                ..Default::default()
            }
        }
    };
    let targets = targets(ctx, &image, partitions, uses_ids, replica_id);
    let reads = read_targets(ctx, &req, &targets).await;
    let included = included(ctx, session_id, incremental, &reads);
    let mut response = FetchResponse {
        throttle_time_ms: 0,
        error_code: 0,
        session_id,
        ..Default::default()
    };
    let read_committed = req.isolation_level == READ_COMMITTED;
    for ((target, read), include) in targets.iter().zip(reads).zip(included) {
        if include {
            count_sent(&ctx.server.metrics.data, &read.chunks);
            push_partition(
                &mut response,
                &target.request,
                read,
                uses_ids,
                read_committed,
            );
        }
    }
    response
}

/// The partitions to read, each with its log or the error it answers.
#[inline]
fn targets(
    ctx: &RequestContext<'_>,
    image: &TopicsImage,
    partitions: Vec<FetchPartition>,
    uses_ids: bool,
    replica_id: i32,
) -> Vec<Target> {
    // A follower (a replica id) needs CLUSTER_ACTION on the cluster instead of READ on each
    // topic; asked once, as Kafka asks it.
    let follower = (replica_id >= 0).then(|| {
        authorize(
            ctx,
            AclOperation::ClusterAction,
            ResourceType::Cluster,
            crate::rpc::apis::broker_registration::KAFKA_CLUSTER,
        )
    });
    partitions
        .into_iter()
        .map(|request| {
            let log = resolve(ctx, image, &request, uses_ids, follower);
            Target { request, log }
        })
        .collect()
}

/// Reads `targets` within the request's byte limits and wait; the chunks still in files are
/// then loaded into memory.
async fn read_targets(
    ctx: &RequestContext<'_>,
    req: &FetchRequest,
    targets: &[Target],
) -> Vec<Read> {
    let max_bytes =
        usize::try_from(req.max_bytes.min(ctx.server.config.log.fetch_max_bytes)).unwrap_or(0);
    let min_bytes = usize::try_from(req.min_bytes).unwrap_or(0).min(max_bytes);
    let wait = Duration::from_millis(u64::try_from(req.max_wait_ms).unwrap_or(0));
    let committed = req.isolation_level == READ_COMMITTED;
    let reads = read_until(targets, max_bytes, min_bytes, wait, committed).await;
    let on_disk = reads.iter().any(|r| {
        r.chunks
            .iter()
            .any(|c| matches!(c, kcoord_storage::Chunk::File { .. }))
    });
    if on_disk {
        crate::support::blocking::run(|| load_chunks(reads))
    } else {
        reads
    }
}

/// Which reads the response carries: all of them without a session, else as the session
/// decides (`FetchSessions::finish`).
#[inline]
fn included(
    ctx: &RequestContext<'_>,
    session_id: i32,
    incremental: bool,
    reads: &[Read],
) -> Vec<bool> {
    let outcomes: Vec<PartitionOutcome> = reads
        .iter()
        .map(|r| PartitionOutcome {
            has_records: r.bytes > 0,
            error: r.error.is_some(),
            high_watermark: r.high_watermark,
            last_stable_offset: r.last_stable_offset,
            log_start_offset: r.log_start_offset,
        })
        .collect();
    if session_id != 0 {
        ctx.server
            .fetch_sessions
            .finish(session_id, incremental, &outcomes)
    } else {
        vec![true; reads.len()]
    }
}

/// The request's partitions and forgotten partitions, with names and ids both filled in as
/// far as the catalog knows them.
fn requested_partitions(
    image: &TopicsImage,
    req: &FetchRequest,
    uses_ids: bool,
) -> (Vec<FetchPartition>, Vec<(Uuid, String, i32)>) {
    let name_and_id = |name: &str, id: Uuid| -> (String, Uuid) {
        if uses_ids {
            (
                image
                    .get_by_id(&id)
                    .map(|t| t.name.clone())
                    .unwrap_or_default(),
                id,
            )
        } else {
            (
                name.to_owned(),
                image.get(name).map_or(Uuid::nil(), |t| t.id),
            )
        }
    };
    let mut requested = Vec::new();
    for t in &req.topics {
        let (topic, topic_id) = name_and_id(&t.topic, t.topic_id);
        for p in &t.partitions {
            requested.push(FetchPartition {
                topic: topic.clone(),
                topic_id: if uses_ids { t.topic_id } else { topic_id },
                partition: p.partition,
                fetch_offset: p.fetch_offset,
                max_bytes: p.partition_max_bytes,
                current_leader_epoch: p.current_leader_epoch,
            });
        }
    }
    let mut forgotten = Vec::new();
    for t in &req.forgotten_topics_data {
        let (topic, topic_id) = name_and_id(&t.topic, t.topic_id);
        let id = if uses_ids { t.topic_id } else { topic_id };
        forgotten.extend(t.partitions.iter().map(|p| (id, topic.clone(), *p)));
    }
    (requested, forgotten)
}

/// The partition `p` reads. `follower`: `None` for a consumer, else whether the follower
/// may fetch (CLUSTER_ACTION): refused, every partition is TOPIC_AUTHORIZATION_FAILED, even
/// an unknown topic id (Kafka's `handleFetchRequest`).
fn resolve(
    ctx: &RequestContext<'_>,
    image: &TopicsImage,
    p: &FetchPartition,
    uses_ids: bool,
    follower: Option<bool>,
) -> Result<Arc<Partition>, ErrorCode> {
    if follower == Some(false) {
        return Err(ErrorCode::TOPIC_AUTHORIZATION_FAILED);
    }
    if p.topic.is_empty() && uses_ids {
        return Err(ErrorCode::UNKNOWN_TOPIC_ID);
    }
    if follower.is_none() && !authorize(ctx, AclOperation::Read, ResourceType::Topic, &p.topic) {
        return Err(ErrorCode::TOPIC_AUTHORIZATION_FAILED);
    }
    let Some(topic) = image.get(&p.topic) else {
        return Err(if uses_ids {
            ErrorCode::UNKNOWN_TOPIC_ID
        } else {
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
        });
    };
    if uses_ids && topic.id != p.topic_id {
        return Err(ErrorCode::INCONSISTENT_TOPIC_ID);
    }
    if follower.is_some() {
        // No follower replicates from this node.
        return Err(ErrorCode::NOT_LEADER_OR_FOLLOWER);
    }
    ctx.server
        .partitions
        .get(topic.id, p.partition)
        .ok_or(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
}

/// Reads until `min_bytes` are there, an error shows, or `wait` has passed.
async fn read_until(
    targets: &[Target],
    max_bytes: usize,
    min_bytes: usize,
    wait: Duration,
    committed: bool,
) -> Vec<Read> {
    let reads = read_all(targets, max_bytes, committed);
    if done(&reads, min_bytes) || wait.is_zero() || targets.is_empty() {
        return reads;
    }
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        // Listen before reading again, so an append in between is not missed.
        let mut woken: Vec<Pin<Box<tokio::sync::futures::Notified<'_>>>> = targets
            .iter()
            .filter_map(|t| t.log.as_ref().ok())
            .map(|p| Box::pin(p.appended.notified()))
            .collect();
        for w in &mut woken {
            w.as_mut().enable();
        }
        let reads = read_all(targets, max_bytes, committed);
        if done(&reads, min_bytes) {
            return reads;
        }
        let any = std::future::poll_fn(|cx| {
            if woken.iter_mut().any(|w| w.as_mut().poll(cx).is_ready()) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        });
        if tokio::time::timeout_at(deadline, any).await.is_err() {
            return reads;
        }
    }
}

fn done(reads: &[Read], min_bytes: usize) -> bool {
    reads.iter().any(|r| r.error.is_some())
        || reads.iter().map(|r| r.bytes).sum::<usize>() >= min_bytes
}

/// One pass over the partitions, in order, within the byte limits; `committed`: only below
/// each last stable offset.
fn read_all(targets: &[Target], max_bytes: usize, committed: bool) -> Vec<Read> {
    let mut remaining = max_bytes;
    let mut min_one = true;
    targets
        .iter()
        .map(|t| {
            let read = read_one(t, remaining, min_one, committed);
            if read.bytes > 0 {
                min_one = false;
                remaining = remaining.saturating_sub(read.bytes);
            }
            read
        })
        .collect()
}

fn read_one(t: &Target, remaining: usize, min_one: bool, committed: bool) -> Read {
    let failed = |code: ErrorCode| Read {
        error: Some(code),
        high_watermark: -1,
        last_stable_offset: -1,
        log_start_offset: -1,
        ..Read::default()
    };
    let partition = match &t.log {
        Ok(p) => p,
        Err(code) => return failed(*code),
    };
    let requested_epoch = t.request.current_leader_epoch;
    if requested_epoch >= 0 && requested_epoch != partition.leader_epoch {
        return failed(if requested_epoch < partition.leader_epoch {
            ErrorCode::FENCED_LEADER_EPOCH
        } else {
            ErrorCode::UNKNOWN_LEADER_EPOCH
        });
    }
    let limit = usize::try_from(t.request.max_bytes)
        .unwrap_or(0)
        .min(remaining);
    let log = partition.log();
    let read = if committed {
        log.read_committed(t.request.fetch_offset, limit, min_one)
    } else {
        log.read(t.request.fetch_offset, limit, min_one)
    };
    match read {
        Ok(r) => Read {
            error: None,
            high_watermark: r.high_watermark,
            last_stable_offset: r.last_stable_offset,
            log_start_offset: r.log_start_offset,
            chunks: r.chunks,
            bytes: r.bytes,
            aborted: r.aborted_transactions,
        },
        Err(e @ ReadError::OffsetOutOfRange { .. }) => {
            debug!(partition = %partition.name(), error = %e, "fetch out of range");
            failed(ErrorCode::OFFSET_OUT_OF_RANGE)
        }
    }
}

/// Reads file chunks into memory, after every partition lock is released. A partition whose
/// file cannot be read answers KAFKA_STORAGE_ERROR.
fn load_chunks(reads: Vec<Read>) -> Vec<Read> {
    reads
        .into_iter()
        .map(|mut r| {
            let loaded: Result<Vec<kcoord_storage::Chunk>, std::io::Error> = r
                .chunks
                .iter()
                .map(|c| match c {
                    kcoord_storage::Chunk::Memory(_) => Ok(c.clone()),
                    kcoord_storage::Chunk::File { .. } => {
                        c.load().map(kcoord_storage::Chunk::Memory)
                    }
                })
                .collect();
            match loaded {
                Ok(chunks) => r.chunks = chunks,
                Err(e) => {
                    tracing::warn!(error = %e, "a segment file could not be read");
                    r = Read {
                        error: Some(ErrorCode::KAFKA_STORAGE_ERROR),
                        high_watermark: -1,
                        last_stable_offset: -1,
                        log_start_offset: -1,
                        ..Read::default()
                    };
                }
            }
            r
        })
        .collect()
}

/// Counts the bytes and records of `chunks` (`kcoord_fetch_*_total`, Kafka's BytesOutPerSec).
/// Records are read from the batch headers (`recordsCount`); a batch cut off at the end of a
/// chunk, as a byte limit may leave it, counts in bytes only.
fn count_sent(metrics: &crate::metrics::DataPlaneMetrics, chunks: &[kcoord_storage::Chunk]) {
    let mut bytes = 0u64;
    let mut records = 0u64;
    for chunk in chunks {
        if let kcoord_storage::Chunk::Memory(b) = chunk {
            bytes += b.len() as u64;
            records += records_in(b);
        }
    }
    if bytes > 0 {
        metrics.fetched(bytes, records);
    }
}

/// The records of the whole magic-2 batches in `batches`.
fn records_in(mut batches: &[u8]) -> u64 {
    // baseOffset (8), batchLength (4), then recordsCount at byte 57 of the batch.
    const COUNT_AT: usize = 57;
    let mut records = 0u64;
    while batches.len() >= COUNT_AT + 4 {
        let be32 = |at: usize| {
            i32::from_be_bytes([
                batches[at],
                batches[at + 1],
                batches[at + 2],
                batches[at + 3],
            ])
        };
        let Some(size) = usize::try_from(be32(8)).ok().map(|len| len + 12) else {
            break;
        };
        if size > batches.len() {
            break;
        }
        records += u64::try_from(be32(COUNT_AT)).unwrap_or(0);
        batches = &batches[size..];
    }
    records
}

fn push_partition(
    response: &mut FetchResponse,
    p: &FetchPartition,
    read: Read,
    uses_ids: bool,
    read_committed: bool,
) {
    let same_topic = response.responses.last().is_some_and(|t| {
        if uses_ids {
            t.topic_id == p.topic_id
        } else {
            t.topic == p.topic
        }
    });
    if !same_topic {
        response.responses.push(FetchableTopicResponse {
            topic: if uses_ids {
                String::new()
            } else {
                p.topic.clone()
            },
            topic_id: if uses_ids { p.topic_id } else { Uuid::nil() },
            ..Default::default()
        });
    }
    let parts: Vec<bytes::Bytes> = read
        .chunks
        .into_iter()
        .filter_map(|c| match c {
            kcoord_storage::Chunk::Memory(b) => Some(b),
            kcoord_storage::Chunk::File { .. } => None,
        })
        .collect();
    let data = PartitionData {
        partition_index: p.partition,
        error_code: read.error.map_or(0, ErrorCode::code),
        high_watermark: read.high_watermark,
        last_stable_offset: read.last_stable_offset,
        log_start_offset: read.log_start_offset,
        aborted_transactions: aborted_transactions(read_committed, read.aborted.as_deref()),
        preferred_read_replica: -1,
        records: Some(RecordSet::from(parts)),
        ..Default::default()
    };
    if let Some(topic) = response.responses.last_mut() {
        topic.partitions.push(data);
    }
}

/// A partition's AbortedTransactions: for READ_COMMITTED the aborted transactions overlapping
/// what was read (null on an error, as Kafka's empty `FetchDataInfo` gives none), null for
/// READ_UNCOMMITTED.
fn aborted_transactions(
    read_committed: bool,
    found: Option<&[kcoord_storage::AbortedTxn]>,
) -> Option<Vec<AbortedTransaction>> {
    let found = found.filter(|_| read_committed)?;
    Some(
        found
            .iter()
            .map(|t| AbortedTransaction {
                producer_id: t.producer_id,
                first_offset: t.first_offset,
                ..Default::default()
            })
            .collect(),
    )
}

/// The authorization matrix's rows of Fetch ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        row!(Fetch ("consumer") 12 on Broker, fetch(-1),
            needs [(Read, Topic, TOPIC)],
            FetchResponse => |r| code(r.responses[0].partitions[0].error_code),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED"),
        // A follower: this node leads every partition alone.
        row!(Fetch ("follower") 12 on Broker, fetch(2),
            needs [(ClusterAction, Cluster, CLUSTER)],
            FetchResponse => |r| code(r.responses[0].partitions[0].error_code),
            allowed "NOT_LEADER_OR_FOLLOWER", denied "TOPIC_AUTHORIZATION_FAILED"),
    ]
}

#[cfg(test)]
mod tests;
