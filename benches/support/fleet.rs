//! Shared by the streams benches (`load --api heartbeat`, `memory`, `rebalance`,
//! `kip1331_describe`): many [`StreamsMember`]s driven with the step API (`prepare_heartbeat`
//! → frame → response → `handle_response`) over a few raw, pipelined TCP connections, so
//! thousands of members need no task each; plus the setup they need (source topic, group checks) and process readings
//! (`/proc/<pid>/status` RSS, `/proc/<pid>/stat` CPU time); and the KIP-1331 side: a small
//! application's topology description, pushed when the coordinator asks for it.
//!
//! Every wait is bounded: reads by [`IO_TIMEOUT`], settling by the caller's deadline.
#![allow(dead_code)] // each bench uses its own part

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use kcoord_client::streams::{
    HeartbeatOutcome, MemberState, OwnedTasksReporting, StreamsMember, StreamsMemberConfig,
    TopologyBuilder, TopologyDescriptionRequest,
};
use kcoord_client::topology::{
    WireNode, WireSubtopology, WireTopology, NODE_TYPE_PROCESSOR, NODE_TYPE_SINK, NODE_TYPE_SOURCE,
};
use kcoord_client::{Client, ClientConfig, Connection};
use kcoord_wire::api::ApiKey;
use kcoord_wire::frame::{write_frame, FrameDecoder};
use kcoord_wire::messages::create_topics_request::CreatableTopic;
use kcoord_wire::messages::streams_group_describe_response::DescribedGroup;
use kcoord_wire::messages::streams_group_heartbeat_request::{TaskIds, Topology};
use kcoord_wire::messages::{
    CreateTopicsRequest, RequestHeader, ResponseHeader, StreamsGroupDescribeRequest,
    StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse,
    StreamsGroupTopologyDescriptionUpdateRequest, UpdateStreamsGroupTopologyDescriptionRequest,
};
use kcoord_wire::{Decodable, Encodable};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A read that gets nothing for this long fails the bench.
pub const IO_TIMEOUT: Duration = Duration::from_secs(30);
const READ_CHUNK: usize = 64 * 1024;
pub const CLIENT_ID: &str = "kcoord-bench";

// ---------------------------------------------------------------------------------------------
// Frames

/// Appends one request frame (size prefix, header, body) for `api` at `version`.
pub fn encode_request<R: Encodable>(
    api: ApiKey,
    version: i16,
    correlation_id: i32,
    request: &R,
    out: &mut BytesMut,
) -> Result<(), String> {
    let header = RequestHeader {
        request_api_key: api.key(),
        request_api_version: version,
        correlation_id,
        client_id: Some(CLIENT_ID.into()),
        ..Default::default()
    };
    let header_version = api.request_header_version(version);
    write_frame(out, |buf| {
        header.encode(buf, header_version)?;
        request.encode(buf, version)
    })
    .map_err(|e| format!("cannot encode {} v{version}: {e}", api.name()))
}

/// Decodes a response frame (without its size prefix): header (its correlation id must be
/// `correlation_id`) and body, with no byte left over.
pub fn decode_response<R: Decodable>(
    api: ApiKey,
    version: i16,
    correlation_id: i32,
    frame: Bytes,
) -> Result<R, String> {
    let mut bytes = frame;
    let header = ResponseHeader::decode(&mut bytes, api.response_header_version(version))
        .map_err(|e| format!("{} response header: {e}", api.name()))?;
    if header.correlation_id != correlation_id {
        return Err(format!(
            "expected correlation id {correlation_id}, got {}",
            header.correlation_id
        ));
    }
    let body =
        R::decode(&mut bytes, version).map_err(|e| format!("{} response: {e}", api.name()))?;
    if bytes.has_remaining() {
        return Err(format!(
            "{} bytes left after the {} response",
            bytes.remaining(),
            api.name()
        ));
    }
    Ok(body)
}

/// One raw connection: requests are queued into `out` and written together; responses are
/// read as whole frames, in request order.
pub struct Pipe {
    stream: TcpStream,
    decoder: FrameDecoder,
    buf: BytesMut,
    pub out: BytesMut,
    next_correlation_id: i32,
}

impl Pipe {
    pub async fn connect(addr: &str) -> Result<Pipe, String> {
        let stream = tokio::time::timeout(IO_TIMEOUT, TcpStream::connect(addr))
            .await
            .map_err(|_| format!("connect to {addr}: timed out"))?
            .map_err(|e| format!("connect to {addr}: {e}"))?;
        let _ = stream.set_nodelay(true);
        Ok(Pipe {
            stream,
            decoder: FrameDecoder::new(64 * 1024 * 1024),
            buf: BytesMut::with_capacity(READ_CHUNK),
            out: BytesMut::with_capacity(4096),
            next_correlation_id: 0,
        })
    }

    /// The correlation id for the next request queued on this pipe.
    pub fn next_id(&mut self) -> i32 {
        let id = self.next_correlation_id;
        self.next_correlation_id = id.wrapping_add(1);
        id
    }

    /// Writes everything queued.
    pub async fn flush(&mut self) -> Result<(), String> {
        if !self.out.is_empty() {
            self.stream
                .write_all(&self.out)
                .await
                .map_err(|e| format!("write: {e}"))?;
            self.out.clear();
        }
        Ok(())
    }

    /// Waits for at least one complete response frame and appends every complete one.
    pub async fn read_frames(&mut self, frames: &mut Vec<Bytes>) -> Result<(), String> {
        loop {
            while let Some(frame) = self
                .decoder
                .decode(&mut self.buf)
                .map_err(|e| format!("response framing: {e}"))?
            {
                frames.push(frame);
            }
            if !frames.is_empty() {
                return Ok(());
            }
            if self.buf.capacity() - self.buf.len() < READ_CHUNK / 4 {
                self.buf.reserve(READ_CHUNK);
            }
            match tokio::time::timeout(IO_TIMEOUT, self.stream.read_buf(&mut self.buf)).await {
                Ok(Ok(0)) => return Err("the server closed the connection".into()),
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return Err(format!("read: {e}")),
                Err(_) => return Err(format!("no response for {IO_TIMEOUT:?}")),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Heartbeats of stepped members

/// The request a member sends next; with `always_owned`, the owned tasks are listed even when
/// the member's own policy would leave them out (what a client reporting them in every
/// heartbeat sends).
pub fn next_heartbeat(
    member: &mut StreamsMember,
    always_owned: bool,
) -> Result<StreamsGroupHeartbeatRequest, String> {
    let mut request = member.prepare_heartbeat().map_err(|e| e.to_string())?;
    if always_owned && request.active_tasks.is_none() {
        let owned = member.assignment();
        request.active_tasks = Some(task_ids(&owned.active));
        request.standby_tasks = Some(task_ids(&owned.standby));
        request.warmup_tasks = Some(task_ids(&owned.warmup));
    }
    Ok(request)
}

fn task_ids(tasks: &kcoord_client::streams::Tasks) -> Vec<TaskIds> {
    tasks
        .iter()
        .map(|(s, p)| TaskIds {
            subtopology_id: s.clone(),
            partitions: p.iter().copied().collect(),
            ..Default::default()
        })
        .collect()
}

/// Hands a heartbeat response frame to its member. `Err` only for a broken frame or a member
/// that failed for good; fencing and retriable errors come back as outcomes.
pub fn apply_response(
    member: &mut StreamsMember,
    version: i16,
    correlation_id: i32,
    frame: Bytes,
) -> Result<HeartbeatOutcome, String> {
    let response: StreamsGroupHeartbeatResponse = decode_response(
        ApiKey::StreamsGroupHeartbeat,
        version,
        correlation_id,
        frame,
    )?;
    member
        .handle_response(response, version)
        .map_err(|e| format!("member {} failed: {e}", member.member_id()))
}

/// What one pass over some members saw.
#[derive(Debug, Default, Clone, Copy)]
pub struct PassStats {
    pub heartbeats: u64,
    pub fenced: u64,
    pub retried: u64,
    pub assignment_changes: u64,
}

impl PassStats {
    fn add(&mut self, o: &PassStats) {
        self.heartbeats += o.heartbeats;
        self.fenced += o.fenced;
        self.retried += o.retried;
        self.assignment_changes += o.assignment_changes;
    }

    fn count(&mut self, outcome: &HeartbeatOutcome) {
        self.heartbeats += 1;
        match outcome {
            HeartbeatOutcome::Accepted { assignment_changed } => {
                self.assignment_changes += u64::from(*assignment_changed)
            }
            HeartbeatOutcome::Fenced { .. } => self.fenced += 1,
            HeartbeatOutcome::Retry { .. } => self.retried += 1,
        }
    }
}

/// Sends one heartbeat for each of `members` over `pipe`, `inflight` at a time.
async fn pass_on_pipe(
    mut pipe: Pipe,
    mut members: Vec<(usize, StreamsMember)>,
    inflight: usize,
    version: i16,
) -> (Pipe, Vec<(usize, StreamsMember)>, Result<PassStats, String>) {
    let mut stats = PassStats::default();
    let result: Result<(), String> = async {
        let mut next = 0;
        let mut outstanding: VecDeque<(usize, i32)> = VecDeque::new();
        let mut frames = Vec::new();
        loop {
            while outstanding.len() < inflight && next < members.len() {
                let request = next_heartbeat(&mut members[next].1, false)?;
                let id = pipe.next_id();
                encode_request(
                    ApiKey::StreamsGroupHeartbeat,
                    version,
                    id,
                    &request,
                    &mut pipe.out,
                )?;
                outstanding.push_back((next, id));
                next += 1;
            }
            if outstanding.is_empty() {
                return Ok(());
            }
            pipe.flush().await?;
            frames.clear();
            pipe.read_frames(&mut frames).await?;
            for frame in frames.drain(..) {
                let (at, id) = outstanding
                    .pop_front()
                    .ok_or("a response nobody asked for")?;
                let outcome = apply_response(&mut members[at].1, version, id, frame)?;
                stats.count(&outcome);
            }
        }
    }
    .await;
    (pipe, members, result.map(|()| stats))
}

/// One heartbeat for every member whose index `pick` accepts, spread over all pipes.
pub async fn heartbeat_pass(
    pipes: &mut Vec<Pipe>,
    members: &mut Vec<StreamsMember>,
    inflight: usize,
    version: i16,
    pick: impl Fn(usize) -> bool,
) -> Result<PassStats, String> {
    let n = pipes.len();
    let mut batches: Vec<Vec<(usize, StreamsMember)>> = (0..n).map(|_| Vec::new()).collect();
    let mut idle = Vec::new();
    for (i, m) in std::mem::take(members).into_iter().enumerate() {
        if pick(i) {
            batches[i % n].push((i, m));
        } else {
            idle.push((i, m));
        }
    }
    let mut tasks = Vec::with_capacity(n);
    for (pipe, batch) in std::mem::take(pipes).into_iter().zip(batches) {
        tasks.push(tokio::spawn(pass_on_pipe(pipe, batch, inflight, version)));
    }
    let mut stats = PassStats::default();
    let mut first_error = None;
    let mut back = idle;
    for task in tasks {
        let (pipe, batch, result) = task.await.map_err(|e| format!("pipe task: {e}"))?;
        pipes.push(pipe);
        back.extend(batch);
        match result {
            Ok(s) => stats.add(&s),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    back.sort_unstable_by_key(|(i, _)| *i);
    *members = back.into_iter().map(|(_, m)| m).collect();
    match first_error {
        Some(e) => Err(e),
        None => Ok(stats),
    }
}

// ---------------------------------------------------------------------------------------------
// Fleets: groups of members with one stateless subtopology on one source topic

/// `groups` groups of `per_group` members each; member `i` is in group `i / per_group`.
pub struct Fleet {
    pub members: Vec<StreamsMember>,
    pub per_group: usize,
    /// Tasks of each group (= partitions of the source topic).
    pub tasks: usize,
    pub group_prefix: String,
    pub version: i16,
}

pub fn group_id(prefix: &str, group: usize) -> String {
    format!("{prefix}-{group:05}")
}

/// The one-subtopology topology every bench group uses.
pub fn topology(topic: &str) -> Arc<Topology> {
    Arc::new(
        TopologyBuilder::stateless(0, [topic])
            .build()
            .expect("a one-topic topology builds"),
    )
}

impl Fleet {
    pub fn new(per_group: usize, tasks: usize, group_prefix: &str, version: i16) -> Fleet {
        Fleet {
            members: Vec::new(),
            per_group,
            tasks,
            group_prefix: group_prefix.into(),
            version,
        }
    }

    pub fn groups(&self) -> usize {
        self.members.len() / self.per_group
    }

    /// Adds `count` groups of members (not joined yet).
    pub fn add_groups(
        &mut self,
        client: &Client,
        topology: &Arc<Topology>,
        count: usize,
        owned: OwnedTasksReporting,
    ) {
        let first = self.groups();
        self.members.reserve(count * self.per_group);
        for g in first..first + count {
            let group = group_id(&self.group_prefix, g);
            for _ in 0..self.per_group {
                let config = StreamsMemberConfig::new(group.clone(), Arc::clone(topology))
                    .with_heartbeat_version(self.version)
                    .with_owned_tasks(owned);
                self.members.push(StreamsMember::new(client, config));
            }
        }
    }

    /// Whether group `g` has converged as its members see it: every member has reported its
    /// tasks (state Stable), all at the same epoch, and their active tasks are complete and
    /// disjoint.
    pub fn converged(&self, g: usize) -> bool {
        converged(
            &self.members[g * self.per_group..(g + 1) * self.per_group],
            self.tasks,
        )
    }

    /// Heartbeats the members of every group in `groups` that has not converged, in passes
    /// (one heartbeat per member each), until all have converged or `deadline` passes.
    pub async fn settle(
        &mut self,
        pipes: &mut Vec<Pipe>,
        inflight: usize,
        groups: std::ops::Range<usize>,
        deadline: Instant,
    ) -> Result<SettleStats, String> {
        let start = Instant::now();
        let mut stats = SettleStats::default();
        loop {
            let open: BTreeSet<usize> = groups.clone().filter(|&g| !self.converged(g)).collect();
            if open.is_empty() {
                stats.seconds = start.elapsed().as_secs_f64();
                return Ok(stats);
            }
            if Instant::now() >= deadline {
                let first = open.iter().next().copied().unwrap_or_default();
                let members = &self.members[first * self.per_group..(first + 1) * self.per_group];
                let states: Vec<String> = members
                    .iter()
                    .map(|m| {
                        format!(
                            "{:?} epoch {} tasks {} statuses {:?} last error {:?}",
                            m.state(),
                            m.member_epoch(),
                            m.assignment().active_tasks().count(),
                            m.statuses(),
                            m.snapshot().last_error
                        )
                    })
                    .collect();
                return Err(format!(
                    "{} of {} groups did not converge in time (after {} passes); group {first}: {states:?}",
                    open.len(),
                    groups.len(),
                    stats.passes
                ));
            }
            let per_group = self.per_group;
            let pass = heartbeat_pass(pipes, &mut self.members, inflight, self.version, |i| {
                open.contains(&(i / per_group))
            })
            .await?;
            stats.passes += 1;
            stats.heartbeats.add(&pass);
            if pass.retried > 0 {
                // The coordinator asked to back off (e.g. loading); do not spin.
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

#[derive(Debug, Default, Clone, Copy)]
pub struct SettleStats {
    pub passes: u64,
    pub heartbeats: PassStats,
    pub seconds: f64,
}

/// See [`Fleet::converged`].
pub fn converged(members: &[StreamsMember], tasks: usize) -> bool {
    let Some(first) = members.first() else {
        return true;
    };
    let epoch = first.member_epoch();
    if epoch <= 0 {
        return false;
    }
    let mut seen = BTreeSet::new();
    let mut count = 0;
    for m in members {
        if m.state() != MemberState::Stable || m.member_epoch() != epoch {
            return false;
        }
        for task in m.assignment().active_tasks() {
            count += 1;
            seen.insert(task);
        }
    }
    count == tasks && seen.len() == tasks
}

// ---------------------------------------------------------------------------------------------
// Setup and checks through the client library

pub async fn connect_client(addr: &str) -> Result<Client, String> {
    let config = ClientConfig::new(CLIENT_ID).with_request_timeout(Duration::from_secs(60));
    Client::connect(addr, config)
        .await
        .map_err(|e| format!("connect to {addr}: {e}"))
}

/// FindCoordinator for every group until each is answered, as a client does before its first
/// heartbeat. Apache Kafka creates `__consumer_offsets` on the first FindCoordinator and answers
/// NOT_COORDINATOR to group requests until then; kcoord coordinates every group at once.
pub async fn find_coordinators(client: &Client, group_ids: &[String]) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(120);
    for group in group_ids {
        loop {
            match client.find_coordinator(group).await {
                Ok(_) => break,
                Err(_) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => return Err(format!("FindCoordinator {group}: {e}")),
            }
        }
    }
    Ok(())
}

/// The StreamsGroupHeartbeat version both sides support (the highest).
pub async fn heartbeat_version(client: &Client) -> Result<i16, String> {
    client
        .bootstrap()
        .negotiated_version::<StreamsGroupHeartbeatRequest>()
        .await
        .map_err(|e| format!("StreamsGroupHeartbeat version: {e}"))
}

/// Creates a topic with `partitions` partitions (replication factor 1).
pub async fn create_topic(conn: &Connection, name: &str, partitions: i32) -> Result<(), String> {
    let request = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: name.into(),
            num_partitions: partitions,
            replication_factor: 1,
            ..Default::default()
        }],
        timeout_ms: 30_000,
        ..Default::default()
    };
    let response = conn
        .send_negotiated(request)
        .await
        .map_err(|e| format!("CreateTopics {name}: {e}"))?;
    match response.topics.first() {
        Some(t) if t.error_code == 0 => Ok(()),
        Some(t) => Err(format!(
            "CreateTopics {name}: error {} {:?}",
            t.error_code, t.error_message
        )),
        None => Err(format!("CreateTopics {name}: empty answer")),
    }
}

/// StreamsGroupDescribe of `group_ids`, 100 groups per request.
pub async fn describe(
    conn: &Connection,
    group_ids: &[String],
) -> Result<Vec<DescribedGroup>, String> {
    describe_with(conn, group_ids, false).await
}

/// [`describe`], optionally with IncludeTopologyDescription (which needs v1).
pub async fn describe_with(
    conn: &Connection,
    group_ids: &[String],
    include_topology_description: bool,
) -> Result<Vec<DescribedGroup>, String> {
    let mut out = Vec::with_capacity(group_ids.len());
    for chunk in group_ids.chunks(100) {
        let request = StreamsGroupDescribeRequest {
            group_ids: chunk.to_vec(),
            include_topology_description,
            ..Default::default()
        };
        let response = conn
            .send_negotiated(request)
            .await
            .map_err(|e| format!("StreamsGroupDescribe: {e}"))?;
        out.extend(response.groups);
    }
    Ok(out)
}

/// The coordinator's view agrees the group is Stable: state "Stable", `members` members all at
/// the group's epoch, and their active tasks complete (`tasks` of them) and disjoint.
pub fn check_stable(group: &DescribedGroup, members: usize, tasks: usize) -> Result<(), String> {
    let id = &group.group_id;
    if group.error_code != 0 {
        return Err(format!("{id}: describe error {}", group.error_code));
    }
    if group.group_state != "Stable" {
        return Err(format!(
            "{id}: state {} (expected Stable)",
            group.group_state
        ));
    }
    if group.members.len() != members {
        return Err(format!(
            "{id}: {} members, expected {members}",
            group.members.len()
        ));
    }
    if group.assignment_epoch != group.group_epoch {
        return Err(format!(
            "{id}: assignment epoch {} behind group epoch {}",
            group.assignment_epoch, group.group_epoch
        ));
    }
    let mut seen = BTreeSet::new();
    let mut count = 0;
    for m in &group.members {
        if m.member_epoch != group.group_epoch {
            return Err(format!(
                "{id}: member {} at epoch {}, group at {}",
                m.member_id, m.member_epoch, group.group_epoch
            ));
        }
        for t in &m.assignment.active_tasks {
            for p in &t.partitions {
                count += 1;
                seen.insert((t.subtopology_id.clone(), *p));
            }
        }
    }
    if count != tasks || seen.len() != tasks {
        return Err(format!(
            "{id}: {count} active tasks assigned ({} distinct), expected {tasks}",
            seen.len()
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// KIP-1331 topology descriptions

/// StreamsGroupDescribe's TopologyDescriptionStatus AVAILABLE.
pub const DESCRIPTION_AVAILABLE: i8 = 3;

/// A small application's topology description as its members push it: `subtopologies`
/// sub-topologies chained through repartition topics, each of `nodes` (>= 2) nodes — a source,
/// processors with a store each, a sink — named as Kafka Streams names them; the first reads
/// `source_topic`.
pub fn description(subtopologies: usize, nodes: usize, source_topic: &str) -> WireTopology {
    let per = nodes.max(2);
    let topic = |s: usize| match s {
        0 => source_topic.to_string(),
        s => format!("bench-app-KSTREAM-AGGREGATE-STATE-STORE-{s:010}-repartition"),
    };
    let mut subs = Vec::with_capacity(subtopologies);
    for s in 0..subtopologies {
        let first = s * per;
        let name = |i: usize| {
            let kind = match i {
                0 => "SOURCE",
                i if i + 1 == per => "SINK",
                _ => "PROCESSOR",
            };
            format!("KSTREAM-{kind}-{:010}", first + i)
        };
        let nodes = (0..per)
            .map(|i| {
                let last = i + 1 == per;
                WireNode {
                    name: name(i),
                    node_type: match i {
                        0 => NODE_TYPE_SOURCE,
                        _ if last => NODE_TYPE_SINK,
                        _ => NODE_TYPE_PROCESSOR,
                    },
                    source_topics: if i == 0 { vec![topic(s)] } else { vec![] },
                    sink_topic: last.then(|| {
                        if s + 1 < subtopologies {
                            topic(s + 1)
                        } else {
                            "bench-app-output".to_string()
                        }
                    }),
                    stores: if i > 0 && !last {
                        vec![format!("bench-app-store-{:010}", first + i)]
                    } else {
                        vec![]
                    },
                    successors: if last { vec![] } else { vec![name(i + 1)] },
                }
            })
            .collect();
        subs.push(WireSubtopology {
            subtopology_id: s.to_string(),
            nodes,
        });
    }
    WireTopology {
        subtopologies: subs,
        global_stores: Vec::new(),
    }
}

/// UpdateStreamsGroupTopologyDescription (key 95) of `description` for `group_id` under `id`;
/// anything but NONE is an error.
pub async fn push_description(
    conn: &Connection,
    group_id: &str,
    id: uuid::Uuid,
    description: &WireTopology,
) -> Result<(), String> {
    let request = UpdateStreamsGroupTopologyDescriptionRequest {
        group_id: group_id.into(),
        topology_description_id: id,
        topology_description: description.into(),
        ..Default::default()
    };
    let response = conn
        .send_negotiated(request)
        .await
        .map_err(|e| format!("UpdateStreamsGroupTopologyDescription {group_id}: {e}"))?;
    if response.error_code != 0 {
        return Err(format!(
            "UpdateStreamsGroupTopologyDescription {group_id}: error {} {:?}",
            response.error_code, response.error_message
        ));
    }
    Ok(())
}

/// Kafka 4.4's push (key 93): `description` for `member_id` at `topology_epoch`.
pub async fn push_description_93(
    conn: &Connection,
    group_id: &str,
    member_id: &str,
    topology_epoch: i32,
    description: &WireTopology,
) -> Result<(), String> {
    let request = StreamsGroupTopologyDescriptionUpdateRequest {
        group_id: group_id.into(),
        member_id: member_id.into(),
        topology_epoch,
        topology_description: description.into(),
        ..Default::default()
    };
    let response = conn
        .send_negotiated(request)
        .await
        .map_err(|e| format!("StreamsGroupTopologyDescriptionUpdate {group_id}: {e}"))?;
    if response.error_code != 0 {
        return Err(format!(
            "StreamsGroupTopologyDescriptionUpdate {group_id}: error {} {:?}",
            response.error_code, response.error_message
        ));
    }
    Ok(())
}

impl Fleet {
    /// What a Kafka Streams member does when a heartbeat response asks for its description:
    /// push `description` once, under the TopologyDescriptionId (heartbeat v2, key 95) or for
    /// the member at its topology epoch (v1's TopologyDescriptionRequired, key 93). Pushes for
    /// every member with such a request pending (over `conn`, one at a time), then heartbeats
    /// every member once more, until a pass brings no new request (the plugin has them all).
    /// Returns the number of pushes.
    pub async fn push_descriptions(
        &mut self,
        pipes: &mut Vec<Pipe>,
        conn: &Connection,
        description: &WireTopology,
        deadline: Instant,
    ) -> Result<usize, String> {
        let mut pushes = 0;
        loop {
            let mut pushed = 0;
            for m in &mut self.members {
                match m.take_pending_topology_description() {
                    None => {}
                    Some(TopologyDescriptionRequest::Id(id)) => {
                        push_description(conn, m.group_id(), id, description).await?;
                        pushed += 1;
                    }
                    Some(TopologyDescriptionRequest::Required) => {
                        let epoch = m.config().topology.epoch;
                        push_description_93(conn, m.group_id(), m.member_id(), epoch, description)
                            .await?;
                        pushed += 1;
                    }
                }
            }
            pushes += pushed;
            if pushed == 0 {
                return Ok(pushes);
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "the coordinator still asks for pushes after {pushes}"
                ));
            }
            let pass = heartbeat_pass(pipes, &mut self.members, 16, self.version, |_| true).await?;
            if pass.fenced + pass.retried + pass.assignment_changes > 0 {
                return Err(format!("a group was not steady after the pushes: {pass:?}"));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Process readings

/// A `kB` field of `/proc/<pid>/status` (VmRSS, VmHWM, RssAnon, ...), in KiB.
pub fn proc_status_kib(pid: u32, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

/// User + system CPU seconds of a process so far (`/proc/<pid>/stat`, clock ticks of 10 ms).
pub fn cpu_seconds(pid: &str) -> Option<f64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces; fields follow the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After ')': state is field 3 of the man page, so utime (14) is index 11, stime (15) 12.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// Pins every thread of `pid` to `cpus` (a `taskset` list such as `1` or `0-1`).
pub fn pin(pid: u32, cpus: &str) -> Result<(), String> {
    let status = std::process::Command::new("taskset")
        .args(["-a", "-p", "-c", cpus, &pid.to_string()])
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("taskset: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("taskset -c {cpus} {pid} failed"))
    }
}
