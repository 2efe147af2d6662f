//! The `transactions` bench's second measure: catch-up of a topic written in transactions,
//! some aborted, with read_committed against read_uncommitted Fetches (see the bench's
//! documentation).

use std::collections::HashSet;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use kcoord_client::Connection;
use kcoord_record_batches::{BatchSplitter, EndTxnMarker, RecordBatch, RecordsError};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::fetch_request::{FetchPartition, FetchTopic, ReplicaState};
use kcoord_wire::messages::fetch_response::AbortedTransaction;
use kcoord_wire::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kcoord_wire::messages::{FetchRequest, FetchResponse, ListOffsetsRequest};
use producer_side::fill;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use uuid::Uuid;

use crate::txn_options::{json_f64, Options, ServerKind};
use crate::{cpu, fleet, self_cpu, sys_cpu, Server};

const GOAL_RATIO: f64 = 0.9;
const FETCH_VERSION: i16 = 16;
const FETCH_MAX_BYTES: i32 = 50 << 20;
const IO_TIMEOUT: Duration = Duration::from_secs(30);
const READ_COMMITTED: i8 = 1;

/// The topic a server was filled with.
#[derive(Clone)]
pub struct Filled {
    topic: String,
    topic_id: Uuid,
    /// Log end offset per partition (every transaction ended, so the LSO too).
    ends: Vec<i64>,
    committed_records: u64,
    aborted_records: u64,
}

mod producer_side {
    use std::time::Instant;

    use rdkafka::producer::Producer;

    use super::{end_offsets, Filled};
    use crate::txn_options::Options;
    use crate::{drain, produce, send_records, Server, TxnStats, TXN_TIMEOUT};

    /// Writes `--fill-mb` of records in transactions of `--txn-records`, every
    /// `--abort-every`th aborted; each drained first (so that an aborted one's records are in
    /// the log, and the commit does not wait in the `rdkafka` crate's flush).
    pub fn fill(
        server: &Server,
        options: &Options,
        rt: &tokio::runtime::Runtime,
    ) -> Result<Filled, String> {
        let topic = "txn-catchup".to_string();
        let conn = server.client.bootstrap();
        let partitions = options.partitions as i32;
        let ids = rt.block_on(produce::create_topics(
            &conn,
            &[(topic.clone(), partitions)],
            &[],
        ))?;
        let value = produce::record_value(options.record_bytes, 5);
        let total = (options.fill_mb * 1e6 / options.record_bytes as f64).ceil() as u64;
        let (started, mut stats, p) = (Instant::now(), TxnStats::default(), &server.producer);
        let err = |what: &str, e: rdkafka::error::KafkaError| format!("{what}: {e}");
        while stats.committed_records + stats.aborted_records < total {
            p.begin_transaction().map_err(|e| err("begin", e))?;
            let want = options
                .txn_records
                .min(total - stats.committed_records - stats.aborted_records);
            let sent = send_records(p, &topic, options.partitions, &value, Some(want), None)?;
            stats.transactions += 1;
            drain(p)?;
            if stats.transactions % options.abort_every == 0 {
                p.abort_transaction(TXN_TIMEOUT)
                    .map_err(|e| err("abort", e))?;
                stats.aborted += 1;
                stats.aborted_records += sent;
            } else {
                p.commit_transaction(TXN_TIMEOUT)
                    .map_err(|e| err("commit", e))?;
                stats.committed_records += sent;
            }
        }
        let ends = rt.block_on(end_offsets(&conn, &topic, options.partitions))?;
        eprintln!(
            "transactions: filled {topic} on {} with {} transactions ({} aborted), {} records, in {:.1} s",
            server.name(),
            stats.transactions,
            stats.aborted,
            stats.committed_records + stats.aborted_records,
            started.elapsed().as_secs_f64()
        );
        Ok(Filled {
            topic,
            topic_id: ids[0],
            ends,
            committed_records: stats.committed_records,
            aborted_records: stats.aborted_records,
        })
    }
}

/// ListOffsets (latest) of every partition at an isolation level.
async fn latest(
    conn: &Connection,
    topic: &str,
    partitions: usize,
    isolation_level: i8,
) -> Result<Vec<i64>, String> {
    let request = ListOffsetsRequest {
        replica_id: -1,
        isolation_level,
        topics: vec![ListOffsetsTopic {
            name: topic.into(),
            partitions: (0..partitions as i32)
                .map(|p| ListOffsetsPartition {
                    partition_index: p,
                    current_leader_epoch: -1,
                    timestamp: -1,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let response = conn
        .send_negotiated(request)
        .await
        .map_err(|e| format!("ListOffsets: {e}"))?;
    let mut ends = vec![-1; partitions];
    for p in response.topics.iter().flat_map(|t| &t.partitions) {
        if p.error_code != 0 {
            return Err(format!(
                "ListOffsets {topic}-{}: error {}",
                p.partition_index, p.error_code
            ));
        }
        if let Some(end) = usize::try_from(p.partition_index)
            .ok()
            .and_then(|i| ends.get_mut(i))
        {
            *end = p.offset;
        }
    }
    Ok(ends)
}

/// The log end offsets, once the last stable offsets reached them (Kafka writes the markers
/// after the commit is answered).
async fn end_offsets(
    conn: &Connection,
    topic: &str,
    partitions: usize,
) -> Result<Vec<i64>, String> {
    let deadline = Instant::now() + IO_TIMEOUT;
    loop {
        let ends = latest(conn, topic, partitions, 0).await?;
        let stable = latest(conn, topic, partitions, READ_COMMITTED).await?;
        if ends == stable && ends.iter().all(|&e| e >= 0) {
            return Ok(ends);
        }
        if Instant::now() > deadline {
            return Err(format!(
                "{topic}: ends {ends:?}, last stable offsets {stable:?}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// ---------------------------------------------------------------------------------------------
// Consumers

/// What consumers read.
#[derive(Debug, Default, Clone, Copy)]
struct Read {
    /// Bytes of whole batches, aborted and control batches included.
    bytes: u64,
    /// Data records delivered (for read_committed: of committed transactions only).
    records: u64,
    /// Data records of aborted transactions that read_committed dropped.
    dropped: u64,
    fetches: u64,
}

impl Read {
    fn add(&mut self, o: &Read) {
        self.bytes += o.bytes;
        self.records += o.records;
        self.dropped += o.dropped;
        self.fetches += o.fetches;
    }
}

/// Walks one partition's records from `*next`, as Kafka's consumer does with read_committed
/// when `aborted` is given: a transactional batch of a producer whose aborted transaction
/// (from the response) began at or before the batch's last offset is dropped, until that
/// producer's ABORT marker; control batches are never delivered.
fn take_batches(
    records: Bytes,
    next: &mut i64,
    aborted: Option<&[AbortedTransaction]>,
    read: &mut Read,
) -> Result<(), String> {
    let committed = aborted.is_some();
    // Descending first offset: the next one to apply is last.
    let mut pending: Vec<(i64, i64)> = aborted
        .unwrap_or_default()
        .iter()
        .map(|t| (t.first_offset, t.producer_id))
        .collect();
    pending.sort_unstable_by(|a, b| b.cmp(a));
    let mut aborting: HashSet<i64> = HashSet::new();
    for item in BatchSplitter::new(records) {
        let (h, batch) = match item {
            Ok(x) => x,
            // A partial batch at the end of the partition's share: fetched again next time.
            Err(RecordsError::Truncated { .. }) => break,
            Err(e) => return Err(format!("fetched records: {e}")),
        };
        if h.base_offset != *next {
            return Err(format!(
                "a batch at offset {}, expected {next}",
                h.base_offset
            ));
        }
        *next = h.next_offset();
        read.bytes += batch.len() as u64;
        if committed && h.is_transactional() {
            while pending
                .last()
                .is_some_and(|&(first, _)| first <= h.last_offset())
            {
                if let Some((_, producer)) = pending.pop() {
                    aborting.insert(producer);
                }
            }
        }
        if h.is_control() {
            if committed {
                let batch = RecordBatch::parse(batch).map_err(|e| format!("marker: {e}"))?;
                let marker = EndTxnMarker::of_batch(&batch).map_err(|e| format!("marker: {e}"))?;
                if marker.is_some_and(|m| !m.commit) {
                    aborting.remove(&h.producer_id);
                }
            }
        } else if committed && h.is_transactional() && aborting.contains(&h.producer_id) {
            read.dropped += h.record_count as u64;
        } else {
            read.records += h.record_count as u64;
        }
    }
    Ok(())
}

/// Reads one frame (size prefix, then exactly that many bytes).
async fn read_frame(reader: &mut tokio::net::tcp::OwnedReadHalf) -> Result<Bytes, String> {
    let mut size = [0u8; 4];
    tokio::time::timeout(IO_TIMEOUT, reader.read_exact(&mut size))
        .await
        .map_err(|_| format!("no answer for {IO_TIMEOUT:?}"))?
        .map_err(|e| format!("read: {e}"))?;
    let size = usize::try_from(i32::from_be_bytes(size)).map_err(|_| "negative frame size")?;
    let mut frame = BytesMut::zeroed(size);
    tokio::time::timeout(IO_TIMEOUT, reader.read_exact(&mut frame))
        .await
        .map_err(|_| format!("no answer for {IO_TIMEOUT:?}"))?
        .map_err(|e| format!("read: {e}"))?;
    Ok(frame.freeze())
}

fn fetch_request(
    topic: &Filled,
    pending: &[(i32, i64)],
    partition_max_bytes: i32,
    isolation_level: i8,
) -> FetchRequest {
    FetchRequest {
        replica_id: -1,
        replica_state: ReplicaState {
            replica_id: -1,
            replica_epoch: -1,
            ..Default::default()
        },
        max_wait_ms: 500,
        min_bytes: 1,
        max_bytes: FETCH_MAX_BYTES,
        isolation_level,
        session_id: 0,
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic: topic.topic.clone(),
            topic_id: topic.topic_id,
            partitions: pending
                .iter()
                .map(|&(partition, fetch_offset)| FetchPartition {
                    partition,
                    current_leader_epoch: -1,
                    fetch_offset,
                    last_fetched_epoch: -1,
                    log_start_offset: -1,
                    partition_max_bytes,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// One consumer: its partitions (partition, next offset) from 0 to their ends.
async fn consume(
    addr: String,
    topic: &Filled,
    mut parts: Vec<(i32, i64)>,
    partition_max_bytes: i32,
    isolation_level: i8,
) -> Result<Read, String> {
    let tcp = TcpStream::connect(&addr)
        .await
        .map_err(|e| format!("connect to {addr}: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let (mut reader, mut writer) = tcp.into_split();
    let (mut read, mut out, mut id) = (Read::default(), BytesMut::new(), 0);
    loop {
        let pending: Vec<(i32, i64)> = parts
            .iter()
            .copied()
            .filter(|&(p, next)| next < topic.ends[p as usize])
            .collect();
        if pending.is_empty() {
            return Ok(read);
        }
        let request = fetch_request(topic, &pending, partition_max_bytes, isolation_level);
        id += 1;
        out.clear();
        fleet::encode_request(ApiKey::Fetch, FETCH_VERSION, id, &request, &mut out)?;
        writer
            .write_all(&out)
            .await
            .map_err(|e| format!("write: {e}"))?;
        let frame = read_frame(&mut reader).await?;
        let response: FetchResponse =
            fleet::decode_response(ApiKey::Fetch, FETCH_VERSION, id, frame)?;
        read.fetches += 1;
        if response.error_code != 0 {
            return Err(format!("Fetch: error {}", response.error_code));
        }
        let before: i64 = parts.iter().map(|p| p.1).sum();
        for p in response.responses.into_iter().flat_map(|t| t.partitions) {
            if p.error_code != 0 {
                return Err(format!(
                    "Fetch partition {}: error {}",
                    p.partition_index, p.error_code
                ));
            }
            let slot = parts
                .iter_mut()
                .find(|(i, _)| *i == p.partition_index)
                .ok_or_else(|| format!("Fetch answer for partition {}", p.partition_index))?;
            let Some(records) = p.records else { continue };
            let aborted = (isolation_level == READ_COMMITTED)
                .then(|| p.aborted_transactions.unwrap_or_default());
            take_batches(
                records.to_bytes(),
                &mut slot.1,
                aborted.as_deref(),
                &mut read,
            )?;
        }
        if parts.iter().map(|p| p.1).sum::<i64>() == before {
            return Err(format!("a Fetch of {pending:?} brought no whole batch"));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Measurement

/// `--passes` catch-ups of the whole topic by `--consumers` consumers at one isolation level;
/// MB of batches per server CPU-second.
fn catchup(
    server: &Server,
    topic: &Filled,
    options: &Options,
    rt: &tokio::runtime::Runtime,
    isolation_level: i8,
    round: usize,
) -> Result<f64, String> {
    let consumers = options.consumers.min(topic.ends.len());
    let pmb = i32::try_from(options.partition_max_bytes).map_err(|_| "--partition-max-bytes")?;
    let (server0, sys0) = (cpu(server.pid)?, sys_cpu(server.pid)?);
    let (client0, started) = (self_cpu()?, Instant::now());
    let mut total = Read::default();
    for _ in 0..options.passes {
        let tasks: Vec<_> = (0..consumers)
            .map(|c| {
                let share = (0..topic.ends.len() as i32)
                    .filter(|p| *p as usize % consumers == c)
                    .map(|p| (p, 0))
                    .collect();
                let (addr, topic) = (server.addr.clone(), topic.clone());
                rt.spawn(async move { consume(addr, &topic, share, pmb, isolation_level).await })
            })
            .collect();
        let mut pass = Read::default();
        for task in tasks {
            pass.add(
                &rt.block_on(task)
                    .map_err(|e| format!("consumer task: {e}"))??,
            );
        }
        let expected = match isolation_level {
            READ_COMMITTED => topic.committed_records,
            _ => topic.committed_records + topic.aborted_records,
        };
        if pass.records != expected {
            return Err(format!(
                "{}: isolation level {isolation_level} delivered {} records, expected {expected}",
                server.name(),
                pass.records
            ));
        }
        total.add(&pass);
    }
    let seconds = started.elapsed().as_secs_f64();
    let (server1, sys1, client1) = (cpu(server.pid)?, sys_cpu(server.pid)?, self_cpu()?);
    let (server_cpu_s, server_sys_s) = (server1 - server0, sys1 - sys0);
    let mb = total.bytes as f64 / 1e6;
    let per_cpu = mb / server_cpu_s;
    println!(
        r#"{{"bench":"transactions","measure":"catchup","server":"{}","round":{round},"isolation":"{}","partitions":{},"consumers":{consumers},"passes":{},"partition_max_bytes":{},"mb":{mb:.1},"records":{},"dropped_records":{},"fetches":{},"seconds":{seconds:.2},"server_cpu_s":{server_cpu_s:.2},"server_sys_s":{server_sys_s:.2},"mb_per_server_cpu_s":{},"records_per_server_cpu_s":{},"client_cpu_s":{:.2}}}"#,
        server.name(),
        if isolation_level == READ_COMMITTED {
            "read_committed"
        } else {
            "read_uncommitted"
        },
        topic.ends.len(),
        options.passes,
        options.partition_max_bytes,
        total.records,
        total.dropped,
        total.fetches,
        json_f64(per_cpu, 1),
        json_f64(total.records as f64 / server_cpu_s, 0),
        client1 - client0,
    );
    Ok(per_cpu)
}

/// Fills every server, then each round reads each server's topic at both isolation levels
/// (read_uncommitted first in odd rounds); a ratio line per server and round.
pub fn catchup_rounds(
    servers: &[Server],
    options: &Options,
    rt: &tokio::runtime::Runtime,
) -> Result<(), String> {
    let mut filled = Vec::new();
    for server in servers {
        filled.push(fill(server, options, rt)?);
    }
    for round in 1..=options.rounds {
        for (server, topic) in servers.iter().zip(&filled) {
            let mut levels = [0, READ_COMMITTED];
            if round % 2 == 0 {
                levels.reverse();
            }
            let mut per_cpu = [0.0; 2];
            for level in levels {
                per_cpu[level as usize] = catchup(server, topic, options, rt, level, round)?;
            }
            let ratio = per_cpu[1] / per_cpu[0];
            let goal = server.kind == ServerKind::Kcoord && ratio.is_finite();
            println!(
                r#"{{"bench":"transactions","measure":"read_committed_vs_uncommitted","server":"{}","round":{round},"read_committed_mb_per_server_cpu_s":{},"read_uncommitted_mb_per_server_cpu_s":{},"ratio":{},"goal_ratio":{},"goal_met":{}}}"#,
                server.name(),
                json_f64(per_cpu[1], 1),
                json_f64(per_cpu[0], 1),
                json_f64(ratio, 3),
                if goal {
                    GOAL_RATIO.to_string()
                } else {
                    "null".into()
                },
                if goal {
                    (ratio >= GOAL_RATIO).to_string()
                } else {
                    "null".into()
                },
            );
        }
    }
    Ok(())
}
