//! Produce (key 0), v3-13, after Kafka's `KafkaApis.handleProduceRequest` and
//! `ReplicaManager.appendRecords` for a single broker: every partition is led here and this
//! node is its only replica, so acks=-1 is answered once the batch is appended (and flushed
//! when `flush.messages` says so).
//!
//! In Kafka's order (docs/kafka-data-plane-facts.md §1): a request with transactional batches
//! needs a transactional id with WRITE (else the whole request is
//! TRANSACTIONAL_ID_AUTHORIZATION_FAILED); topics are named by id from v13 (unknown:
//! UNKNOWN_TOPIC_ID), by name before (unknown: UNKNOWN_TOPIC_OR_PARTITION); then acks (only
//! -1, 0, 1); internal topics are refused. Each partition's batch is validated as Kafka's
//! `LogValidator` validates it (`kcoord_storage::validate`) before the partition is locked; a
//! transactional batch that would start its producer's transaction in the partition is
//! verified with the transaction coordinator first ([`verify`], KIP-890); the producer checks
//! (sequence, epoch, transaction state: INVALID_PRODUCER_EPOCH, OUT_OF_ORDER_SEQUENCE_NUMBER,
//! INVALID_TXN_STATE) and the append happen under the lock. A partition named twice in one
//! request appends nothing unless every one of its batches is valid. With acks=0 nothing is
//! answered (`dispatch.rs`).

mod implicit_add;
mod verify;

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use kcoord_storage::validate::{self, ProduceContext};
use kcoord_storage::{Appended, IncomingBatch, VerificationGuard};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
};
use kcoord_wire::messages::{ProduceRequest, ProduceResponse};
use kcoord_wire::ErrorCode;
use tracing::debug;
use uuid::Uuid;

use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::dispatch::Reply;
use crate::rpc::{Check, Rpc};
use crate::runtime::catalog::TopicImage;
use crate::runtime::partitions::writeback::Writeback;
use crate::runtime::partitions::Partition;
use crate::runtime::quotas::QuotaType;
use crate::state::RequestContext;
use crate::support::logging::log_per_peer;

/// Produce as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::Produce, 3, 13)
    .asks(&[
        Check::new(AclOperation::Write, ResourceType::Topic),
        Check::new(AclOperation::Write, ResourceType::TransactionalId),
    ])
    .advertised_from(0)
    .rewritten_in_gateway();

/// Produce: acks=0 is answered with silence, or, when a partition failed, by closing the
/// connection so the client refreshes its metadata (Kafka's `sendResponseCallback`). The
/// client quotas throttle it (`rpc/quotas.rs`), acks=0 included.
pub(crate) async fn serve(
    ctx: &RequestContext<'_>,
    api: ApiKey,
    version: i16,
    body: Bytes,
) -> Reply {
    // Kafka's `sizeInBytes`, what the producer byte rate counts: the body after the header.
    let body_size = body.len();
    let request: kcoord_wire::messages::ProduceRequest =
        match crate::rpc::dispatch::decode(ctx, api, version, body) {
            Ok(request) => request,
            Err(reply) => return reply,
        };
    let acks = request.acks;
    implicit_add::add_partitions(ctx, &request, version).await;
    // Appends wait for the disk here, a chunk at a time, rather than in the kernel.
    ctx.server.partitions.writeback().room().await;
    // The handler runs on this thread without waiting: its time is Kafka's request thread time.
    let started = std::time::Instant::now();
    let mut response = handle(ctx, request, version);
    let handler_time = (acks != 0).then(|| started.elapsed());
    let throttle = crate::rpc::quotas::throttle(ctx, QuotaType::Produce, body_size, handler_time);
    response.throttle_time_ms = i32::try_from(throttle).unwrap_or(i32::MAX);
    if acks != 0 {
        return crate::rpc::dispatch::respond(ctx, api, version, &response);
    }
    let failed = response
        .responses
        .iter()
        .flat_map(|t| &t.partition_responses)
        .find(|p| p.error_code != 0);
    match failed {
        None => Reply::NoResponse,
        Some(p) => {
            log_per_peer!(
                warn, ctx.peer, "acks=0 produce failed",
                peer = %ctx.peer, listener = %ctx.listener.name, partition = p.index,
                error = ErrorCode::from_code(p.error_code).map_or("UNKNOWN", ErrorCode::name),
                "closing connection due to an error in a produce request with acks=0"
            );
            Reply::Close
        }
    }
}

/// The first version that names topics by id.
const TOPIC_ID_VERSION: i16 = 13;

/// The answer to a Produce request (`dispatch.rs` sends nothing for acks=0).
pub fn handle(ctx: &RequestContext<'_>, req: ProduceRequest, version: i16) -> ProduceResponse {
    produce(ctx, req, version, crate::support::clock::now_ms())
}

/// The response to `req`, whatever its acks.
pub fn produce(
    ctx: &RequestContext<'_>,
    req: ProduceRequest,
    version: i16,
    now_ms: i64,
) -> ProduceResponse {
    let use_ids = version >= TOPIC_ID_VERSION;
    let whole = whole_request_refusal(ctx, &req);
    let image = ctx.server.topics.snapshot();
    let mut responses: Vec<TopicProduceResponse> = Vec::with_capacity(req.topic_data.len());
    // The entries of each partition, to validate together: (topic slot, partition slot, records).
    let mut by_partition: HashMap<(Uuid, i32), (Arc<Partition>, Vec<Entry>)> = HashMap::new();
    for t in req.topic_data {
        let topic = if use_ids {
            image.get_by_id(&t.topic_id)
        } else {
            image.get(&t.name)
        };
        let ti = responses.len();
        responses.push(TopicProduceResponse {
            name: if use_ids {
                String::new()
            } else {
                t.name.clone()
            },
            topic_id: if use_ids { t.topic_id } else { Uuid::nil() },
            partition_responses: Vec::with_capacity(t.partition_data.len()),
            ..Default::default()
        });
        for p in t.partition_data {
            let pi = responses[ti].partition_responses.len();
            let partition = topic.and_then(|t| ctx.server.partitions.get(t.id, p.index));
            let error = match &whole {
                Some(refusal) => Some(refusal.clone()),
                None => {
                    let known = partition.is_some();
                    partition_refusal(ctx, topic, &t.name, known, use_ids, req.acks)
                }
            };
            responses[ti]
                .partition_responses
                .push(PartitionProduceResponse {
                    index: p.index,
                    ..failed(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
                });
            match (error, partition) {
                (Some(refusal), _) => {
                    responses[ti].partition_responses[pi] = refusal.answer(p.index, -1)
                }
                (None, Some(partition)) => by_partition
                    .entry((partition.topic_id, partition.index))
                    .or_insert_with(|| (partition, Vec::new()))
                    .1
                    .push(Entry {
                        ti,
                        pi,
                        records: p.records.map(|r| r.to_bytes()),
                    }),
                (None, None) => {}
            }
        }
    }
    let transactional_id = req.transactional_id.as_deref();
    append_all(
        ctx,
        transactional_id,
        by_partition,
        &mut responses,
        version,
        now_ms,
    );
    ProduceResponse {
        responses,
        throttle_time_ms: 0,
        ..Default::default()
    }
}

/// Kafka's checks of one partition once the whole request passed them: WRITE on the topic,
/// the topic and partition known (`partition_known`), acks, and no internal topic.
#[inline]
fn partition_refusal(
    ctx: &RequestContext<'_>,
    topic: Option<&TopicImage>,
    requested_name: &str,
    partition_known: bool,
    use_ids: bool,
    acks: i16,
) -> Option<Refusal> {
    // Kafka asks the authorizer first, by the name the request gives (or resolves).
    let name = topic.map_or(requested_name, |t| t.name.as_str());
    let allowed = (use_ids && topic.is_none())
        || authorize(ctx, AclOperation::Write, ResourceType::Topic, name);
    match (topic, partition_known) {
        _ if !allowed => Some(Refusal::code(ErrorCode::TOPIC_AUTHORIZATION_FAILED)),
        (None, _) if use_ids => Some(Refusal::code(ErrorCode::UNKNOWN_TOPIC_ID)),
        (None, _) | (_, false) => Some(Refusal::code(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)),
        // Kafka checks acks once the topics are known.
        _ if !matches!(acks, -1..=1) => Some(Refusal::code(ErrorCode::INVALID_REQUIRED_ACKS)),
        (Some(t), _) if t.is_internal() => Some(Refusal::code(ErrorCode::INVALID_TOPIC_EXCEPTION)),
        _ => None,
    }
}

/// Appends the entries of each partition and puts their answers in their slots of `responses`.
#[inline]
fn append_all(
    ctx: &RequestContext<'_>,
    transactional_id: Option<&str>,
    by_partition: HashMap<(Uuid, i32), (Arc<Partition>, Vec<Entry>)>,
    responses: &mut [TopicProduceResponse],
    version: i16,
    now_ms: i64,
) {
    for (partition, entries) in by_partition.into_values() {
        let checked = check_partition(ctx, transactional_id, &partition, entries, version, now_ms);
        let appended = append_partition(
            &partition,
            checked,
            now_ms,
            &ctx.server.metrics.data,
            ctx.server.partitions.writeback(),
        );
        for (ti, pi, answer) in appended {
            let index = responses[ti].partition_responses[pi].index;
            responses[ti].partition_responses[pi] = PartitionProduceResponse { index, ..answer };
        }
    }
}

/// One partition entry of the request.
struct Entry {
    ti: usize,
    pi: usize,
    records: Option<Bytes>,
}

/// An error for a partition: the code, Kafka's ErrorMessage and record errors, and whether
/// the answer carries the real log start offset (Kafka sends it for producer-state and
/// record-validation errors, so the Java producer can tell retention from a lost sequence).
#[derive(Debug, Clone)]
struct Refusal {
    code: ErrorCode,
    message: Option<String>,
    record_errors: Vec<BatchIndexAndErrorMessage>,
    /// Refused before the log saw the batch (the transaction verification): Kafka answers
    /// its unknown append info, log start offset -1.
    before_append: bool,
}

impl Refusal {
    pub(super) fn code(code: ErrorCode) -> Refusal {
        Refusal {
            code,
            message: None,
            record_errors: Vec::new(),
            before_append: false,
        }
    }

    /// A refusal of the transaction verification, before the append.
    pub(super) fn unverified(code: ErrorCode, message: Option<String>) -> Refusal {
        Refusal {
            message,
            before_append: true,
            ..Refusal::code(code)
        }
    }

    pub(super) fn with_message(code: ErrorCode, message: String) -> Refusal {
        Refusal {
            message: Some(message),
            ..Refusal::code(code)
        }
    }

    fn answer(self, index: i32, log_start_offset: i64) -> PartitionProduceResponse {
        let keeps_log_start = !self.before_append
            && !matches!(
                self.code,
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
                    | ErrorCode::UNKNOWN_TOPIC_ID
                    | ErrorCode::NOT_LEADER_OR_FOLLOWER
                    | ErrorCode::MESSAGE_TOO_LARGE
                    | ErrorCode::RECORD_LIST_TOO_LARGE
                    | ErrorCode::CORRUPT_MESSAGE
                    | ErrorCode::KAFKA_STORAGE_ERROR
                    | ErrorCode::INVALID_TOPIC_EXCEPTION
            );
        PartitionProduceResponse {
            index,
            error_message: self.message,
            record_errors: self.record_errors,
            log_start_offset: if keeps_log_start {
                log_start_offset
            } else {
                -1
            },
            ..failed(self.code)
        }
    }
}

/// A refusal of every partition of the request (Kafka's checks before any partition's).
fn whole_request_refusal(ctx: &RequestContext<'_>, req: &ProduceRequest) -> Option<Refusal> {
    let records: Vec<Bytes> = req
        .topic_data
        .iter()
        .flat_map(|t| &t.partition_data)
        .filter_map(|p| p.records.as_ref().map(|r| r.to_bytes()))
        .collect();
    match validate::has_transactional_records(&records) {
        Ok(false) => None,
        // Kafka's first check: WRITE on the transactional id, which there must be; refused,
        // the whole request is TRANSACTIONAL_ID_AUTHORIZATION_FAILED without a message (the
        // exception's text is the code's default, which `ApiError.fromThrowable` drops).
        Ok(true) => match &req.transactional_id {
            Some(id) if authorize(ctx, AclOperation::Write, ResourceType::TransactionalId, id) => {
                None
            }
            _ => Some(Refusal::code(
                ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            )),
        },
        Err(e) => Some(Refusal::code(
            ErrorCode::from_code(e.error_code()).unwrap_or(ErrorCode::CORRUPT_MESSAGE),
        )),
    }
}

fn failed(code: ErrorCode) -> PartitionProduceResponse {
    PartitionProduceResponse {
        error_code: code.code(),
        base_offset: -1,
        log_append_time_ms: -1,
        log_start_offset: -1,
        ..Default::default()
    }
}

fn validation_refusal(e: &validate::ValidationError) -> Refusal {
    Refusal {
        code: ErrorCode::from_code(e.error_code()).unwrap_or(ErrorCode::UNKNOWN_SERVER_ERROR),
        message: e.message(),
        record_errors: e
            .record_errors()
            .into_iter()
            .map(|(batch_index, message)| BatchIndexAndErrorMessage {
                batch_index,
                batch_index_error_message: message,
                ..Default::default()
            })
            .collect(),
        before_append: false,
    }
}

/// One entry of a partition after its checks: the batch to append, with the verification
/// guard its transaction needs, or its refusal.
type Checked = (
    usize,
    usize,
    Result<(IncomingBatch, Option<VerificationGuard>), Refusal>,
);

/// Validates every batch given for one partition and verifies the transactional ones.
fn check_partition(
    ctx: &RequestContext<'_>,
    transactional_id: Option<&str>,
    partition: &Partition,
    entries: Vec<Entry>,
    version: i16,
    now_ms: i64,
) -> Vec<Checked> {
    let validation = partition.log().config().validation();
    let context = ProduceContext {
        api_version: version,
        topic: &partition.topic,
        partition: partition.index,
    };
    entries
        .into_iter()
        .map(|e| {
            let result = match e.records {
                None => Err(Refusal::code(ErrorCode::INVALID_RECORD)),
                Some(bytes) => validate::validate_produce(&bytes, &validation, &context, now_ms)
                    .map(IncomingBatch::from)
                    .map_err(|err| {
                        debug!(partition = %partition.name(), error = %err, "produce refused");
                        validation_refusal(&err)
                    }),
            };
            let result = result.and_then(|batch| {
                verify::verified(ctx, transactional_id, partition, &batch, now_ms)
                    .map(|guard| (batch, guard))
            });
            (e.ti, e.pi, result)
        })
        .collect()
}

/// Appends every checked batch of one partition, or none when any was refused.
fn append_partition(
    partition: &Partition,
    checked: Vec<Checked>,
    now_ms: i64,
    metrics: &crate::metrics::DataPlaneMetrics,
    writeback: &Writeback,
) -> Vec<(usize, usize, PartitionProduceResponse)> {
    let (log_start, fsyncs_every_append) = {
        let log = partition.log();
        let fsyncs = log.dir().is_some() && log.config().flush_messages < i64::MAX;
        (log.log_start_offset(), fsyncs)
    };
    if checked.iter().any(|(_, _, r)| r.is_err()) {
        return checked
            .into_iter()
            .map(|(ti, pi, r)| {
                let refusal = r.err().unwrap_or_else(|| {
                    Refusal::with_message(
                        ErrorCode::INVALID_RECORD,
                        "Another batch for this partition in the request was rejected".into(),
                    )
                });
                (ti, pi, refusal.answer(0, log_start))
            })
            .collect();
    }
    let append = || {
        let mut log = partition.log();
        let answers = checked
            .into_iter()
            .filter_map(|(ti, pi, r)| r.ok().map(|b| (ti, pi, b)))
            .map(|(ti, pi, (batch, guard))| {
                let result = log.append_verified(&batch, partition.leader_epoch, guard, now_ms);
                let answer = match result {
                    Ok(a) => {
                        if !a.duplicate {
                            let records = u64::try_from(batch.record_count).unwrap_or(0);
                            metrics.produced(batch.bytes.len(), records);
                        }
                        appended(&a)
                    }
                    Err(e) => {
                        debug!(partition = %partition.name(), error = %e, "append refused");
                        let code = ErrorCode::from_code(e.error_code())
                            .unwrap_or(ErrorCode::UNKNOWN_SERVER_ERROR);
                        Refusal::code(code).answer(0, log.log_start_offset())
                    }
                };
                (ti, pi, answer)
            })
            .collect::<Vec<_>>();
        (answers, log.take_seals(), log.take_writeback())
    };
    // An fsync (flush.messages) must not stall the worker's other connections.
    let (answers, seals, written) = if fsyncs_every_append {
        crate::support::blocking::run(append)
    } else {
        append()
    };
    partition.appended.notify_waiters();
    if let Some(range) = written {
        writeback.submit(range);
    }
    if !seals.is_empty() {
        crate::runtime::partitions::seals::run_in_background(partition.name(), seals);
    }
    answers
}

fn appended(a: &Appended) -> PartitionProduceResponse {
    PartitionProduceResponse {
        error_code: 0,
        base_offset: a.base_offset,
        log_append_time_ms: a.log_append_time,
        log_start_offset: a.log_start_offset,
        ..Default::default()
    }
}

/// The authorization matrix's rows of Produce ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        row!(Produce 12 on Broker, produce(),
            needs [(Write, Topic, TOPIC)],
            ProduceResponse => |r| code(r.responses[0].partition_responses[0].error_code),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED"),
        // Allowed, the transaction coordinator has no such producer: its answer, as Kafka's.
        row!(Produce ("transactional") 12 on Broker, produce_transactional(TRANSACTIONAL_ID),
            needs [(Write, TransactionalId, TRANSACTIONAL_ID), (Write, Topic, TOPIC)],
            ProduceResponse => |r| {
                let p = &r.responses[0].partition_responses[0];
                refusal(p.error_code, p.error_message.as_deref())
            },
            allowed "INVALID_PRODUCER_ID_MAPPING", denied "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
    ]
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kcoord_record_batches::{BatchBuilder, BatchOptions};
    use kcoord_wire::messages::produce_request::{PartitionProduceData, TopicProduceData};

    use super::*;
    use crate::config::ListenerKind;
    use crate::rpc::testing::{create_topic, encodes, running, with_ctx};
    use crate::state::ServerState;

    fn request(topic: &str, partitions: &[i32]) -> ProduceRequest {
        let mut b = BatchBuilder::new(BatchOptions::default());
        b.push(0, Some(b"k"), Some(b"v"), &[]).unwrap();
        let batch = b.build().unwrap();
        ProduceRequest {
            acks: -1,
            timeout_ms: 1000,
            topic_data: vec![TopicProduceData {
                name: topic.into(),
                partition_data: partitions
                    .iter()
                    .map(|p| PartitionProduceData {
                        index: *p,
                        records: Some(batch.clone().into()),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn codes(state: &ServerState, req: ProduceRequest, version: i16) -> Vec<(i16, i64, i64)> {
        let resp = with_ctx(state, ListenerKind::Broker, |ctx| {
            produce(ctx, req, version, 1_700_000_000_000)
        });
        encodes(&resp, version);
        resp.responses[0]
            .partition_responses
            .iter()
            .map(|p| (p.error_code, p.base_offset, p.log_start_offset))
            .collect()
    }

    #[tokio::test]
    async fn appends_answer_offsets_and_unknown_partitions_are_refused() {
        let node = running("");
        create_topic(&node.state, "t", 2).await;
        assert_eq!(
            codes(&node.state, request("t", &[0, 1, 7]), 12),
            vec![(0, 0, 0), (0, 0, 0), (3, -1, -1)]
        );
        assert_eq!(
            codes(&node.state, request("t", &[0]), 3),
            vec![(0, 1, 0)],
            "v3 is served"
        );
    }

    /// A transactional batch for `topic`-0, with `transactional_id`.
    fn transactional(topic: &str, transactional_id: Option<&str>) -> ProduceRequest {
        let mut b = BatchBuilder::new(BatchOptions {
            producer_id: 1,
            producer_epoch: 0,
            base_sequence: 0,
            transactional: true,
            ..BatchOptions::default()
        });
        b.push(0, Some(b"k"), Some(b"v"), &[]).unwrap();
        let mut req = ProduceRequest {
            transactional_id: transactional_id.map(str::to_owned),
            ..request(topic, &[0])
        };
        req.topic_data[0].partition_data[0].records = Some(b.build().unwrap().into());
        req
    }

    fn answer(state: &ServerState, req: ProduceRequest) -> (i16, Option<String>) {
        let resp = with_ctx(state, ListenerKind::Broker, |ctx| {
            produce(ctx, req, 12, 1_700_000_000_000)
        });
        let p = &resp.responses[0].partition_responses[0];
        (p.error_code, p.error_message.clone())
    }

    #[tokio::test]
    async fn transactional_batches_need_write_on_the_transactional_id() {
        let node = running("");
        create_topic(&node.state, "t", 1).await;
        let (mut denied, _) = ServerState::build(
            Arc::clone(&node.state.config),
            node.state.listeners.iter().map(|l| (**l).clone()).collect(),
        );
        denied.authorizer = Some(Arc::new(crate::security::DenyAll));
        // Refused, or no id at all: 53 without a message, as Kafka's error response.
        assert_eq!(answer(&denied, transactional("t", Some("tx"))), (53, None));
        assert_eq!(answer(&node.state, transactional("t", None)), (53, None));
        // Allowed, but producer 1 has no transaction: the coordinator's answer.
        assert_eq!(
            answer(&node.state, transactional("t", Some("tx"))),
            (49, None)
        );
        // In a transaction holding the partition: appended, and the transaction is open.
        assert_eq!(begin(&node.state, 0).await, 0);
        assert_eq!(
            answer(&node.state, transactional("t", Some("tx"))),
            (0, None)
        );
        let partition = node.state.partitions.by_name("t", 0).unwrap();
        assert_eq!(partition.log().last_stable_offset(), 0);
        assert_eq!(partition.active_producers()[0].current_txn_start_offset, 0);
    }

    /// Producer 1 gets transactional id "tx" (InitProducerId `bumps` + 1 times) and a
    /// transaction holding `t`-0; returns its epoch.
    async fn begin(state: &ServerState, bumps: usize) -> i16 {
        use kcoord_coordinator::transactions::{InitProducerId, InitProducerIdResult};
        let shard = state.coordinators.for_transactional_id("tx");
        let init = InitProducerId {
            transactional_id: "tx",
            transaction_timeout_ms: 60_000,
            expected: None,
            fresh_producer_id: Some(1),
        };
        let mut epoch = -1;
        for _ in 0..=bumps {
            match shard.call(|s, now| s.init_producer_id(&init, now)).await {
                Ok(InitProducerIdResult::Granted { producer_epoch, .. }) => epoch = producer_epoch,
                other => panic!("InitProducerId: {other:?}"),
            }
        }
        let tp = [("t".to_owned(), 0)];
        let added = shard
            .call(|s, now| s.add_partitions_to_transaction("tx", 1, epoch, &tp, 0, now))
            .await;
        assert_eq!(added, Ok(ErrorCode::NONE));
        epoch
    }

    /// A batch of producer 1 for `t`-0 at `epoch` from `seq`, transactional or not.
    fn producer_batch(epoch: i16, seq: i32, txn: bool) -> ProduceRequest {
        let mut b = BatchBuilder::new(BatchOptions {
            producer_id: 1,
            producer_epoch: epoch,
            base_sequence: seq,
            transactional: txn,
            ..BatchOptions::default()
        });
        b.push(0, Some(b"k"), Some(b"v"), &[]).unwrap();
        let mut req = ProduceRequest {
            transactional_id: Some("tx".into()),
            ..request("t", &[0])
        };
        req.topic_data[0].partition_data[0].records = Some(b.build().unwrap().into());
        req
    }

    #[tokio::test]
    async fn transactional_batches_are_checked_against_the_producer_state() {
        let node = running("");
        create_topic(&node.state, "t", 1).await;
        let code = |req| answer(&node.state, req).0;
        assert_eq!(begin(&node.state, 2).await, 2);
        assert_eq!(code(producer_batch(2, 0, true)), 0);
        assert_eq!(code(producer_batch(2, 1, true)), 0);
        // A gap, an older epoch, a non-transactional batch in the transaction.
        assert_eq!(code(producer_batch(2, 5, true)), 45);
        assert_eq!(code(producer_batch(1, 0, true)), 47);
        assert_eq!(code(producer_batch(2, 2, false)), 48);
        // A newer epoch while the older one's transaction is open: the coordinator, asked to
        // verify it, knows no such epoch (PRODUCER_FENCED, which producers get as 47).
        assert_eq!(code(producer_batch(3, 0, true)), 47);
        // Aborted by its coordinator, whose marker task writes the ABORT marker; the next
        // epoch then starts a new transaction.
        let shard = node.state.coordinators.for_transactional_id("tx");
        let ended = shard
            .call(|s, now| s.end_transaction("tx", 1, 2, false, now))
            .await;
        assert_eq!(ended, Ok(ErrorCode::NONE));
        node.state.coordinators.wake_markers();
        let completed = |s: &kcoord_coordinator::CoordinatorShard| {
            s.transaction("tx").map(|t| t.state)
                == Some(kcoord_metadata::TransactionState::CompleteAbort)
        };
        for _ in 0..500 {
            if shard.read(completed).await == Ok(true) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(
            shard.read(completed).await,
            Ok(true),
            "the markers were not written within 5 s"
        );
        let partition = node.state.partitions.by_name("t", 0).unwrap();
        assert_eq!(partition.log().aborted_transactions().len(), 1);
        assert_eq!(begin(&node.state, 0).await, 3);
        assert_eq!(code(producer_batch(3, 0, true)), 0);
    }

    #[tokio::test]
    async fn the_authorizer_is_asked_before_the_topic_is_looked_up() {
        let node = running("");
        create_topic(&node.state, "t", 1).await;
        let (mut state, _) = ServerState::build(
            Arc::clone(&node.state.config),
            node.state.listeners.iter().map(|l| (**l).clone()).collect(),
        );
        state.authorizer = Some(Arc::new(crate::security::DenyAll));
        // A node whose catalog does not know the topic: denied all the same, as Kafka answers.
        assert_eq!(codes(&state, request("t", &[0]), 12), vec![(29, -1, -1)]);
        assert_eq!(
            codes(&state, request("unknown", &[0]), 12),
            vec![(29, -1, -1)]
        );
    }
}
