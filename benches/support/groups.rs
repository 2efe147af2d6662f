//! Consumer group members for the benches that compare kcoord's consumer groups with Apache
//! Kafka's (`consumer_groups`): classic members (JoinGroup, SyncGroup, Heartbeat, the leader
//! assigning with a range assignor as Kafka's Java consumer does) and KIP-848 members
//! (ConsumerGroupHeartbeat, acknowledging every assignment at once), each on its own
//! connection as each real consumer is (Kafka answers a connection's requests one at a time,
//! so a JoinGroup waiting for the rebalance would hold up the other members of a shared one).
//!
//! Every member reports to a [`Board`], which knows when the group is stable: every member
//! holds its assignment of one generation (classic) or one member epoch (KIP-848), the
//! assignments disjoint and covering every partition of the topic. Every wait is bounded by
//! the board's deadline.
#![allow(dead_code)] // each bench uses its own part

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kcoord_client::{ClientConfig, Connection};
use kcoord_wire::messages::consumer_group_heartbeat_request::TopicPartitions;
use kcoord_wire::messages::join_group_request::JoinGroupRequestProtocol;
use kcoord_wire::messages::sync_group_request::SyncGroupRequestAssignment;
use kcoord_wire::messages::{
    ConsumerGroupHeartbeatRequest, HeartbeatRequest, JoinGroupRequest, JoinGroupResponse,
    SyncGroupRequest,
};
use kcoord_wire::ErrorCode;

/// The versions both kcoord and Kafka 4.4 serve (their highest).
pub const JOIN_VERSION: i16 = 9;
pub const SYNC_VERSION: i16 = 5;
pub const HEARTBEAT_VERSION: i16 = 4;
pub const CONSUMER_HEARTBEAT_VERSION: i16 = 1;

/// Session timeout of every member: long enough that no idle member expires during a run.
pub const SESSION_TIMEOUT_MS: i32 = 600_000;
const REBALANCE_TIMEOUT_MS: i32 = 60_000;
const ASSIGNOR: &str = "range";
const MEMBER_ID_REQUIRED: i16 = ErrorCode::MEMBER_ID_REQUIRED as i16;
const REBALANCE_IN_PROGRESS: i16 = ErrorCode::REBALANCE_IN_PROGRESS as i16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Classic,
    Consumer,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Classic => "classic",
            Protocol::Consumer => "consumer",
        }
    }

    pub fn parse(name: &str) -> Option<Protocol> {
        match name {
            "classic" => Some(Protocol::Classic),
            "consumer" => Some(Protocol::Consumer),
            _ => None,
        }
    }
}

/// A member once its group is stable: what its steady heartbeat carries.
#[derive(Debug, Clone)]
pub struct Settled {
    pub group_id: String,
    pub member_id: String,
    /// The generation (classic) or member epoch (KIP-848).
    pub epoch: i32,
}

/// What one group's members report, and when the group first became stable.
pub struct Board {
    members: usize,
    partitions: usize,
    /// Per member: (epoch, partitions held), `None` until it holds an assignment.
    held: Vec<Option<(i32, Vec<i32>)>>,
    pub stable_at: Option<Instant>,
    deadline: Instant,
}

impl Board {
    pub fn new(members: usize, partitions: usize, deadline: Instant) -> Arc<Mutex<Board>> {
        Arc::new(Mutex::new(Board {
            members,
            partitions,
            held: vec![None; members],
            stable_at: None,
            deadline,
        }))
    }

    /// Member `i` holds `partitions` at `epoch`; marks the group stable when that completes it.
    fn report(&mut self, i: usize, epoch: i32, partitions: Vec<i32>) {
        self.held[i] = Some((epoch, partitions));
        if self.stable_at.is_none() && self.complete() {
            self.stable_at = Some(Instant::now());
        }
    }

    fn complete(&self) -> bool {
        let mut seen = vec![false; self.partitions];
        let mut epoch = None;
        for held in &self.held {
            let Some((e, parts)) = held else { return false };
            if *epoch.get_or_insert(*e) != *e {
                return false;
            }
            for &p in parts {
                match seen.get_mut(p as usize) {
                    Some(s) if !*s => *s = true,
                    _ => return false,
                }
            }
        }
        seen.iter().all(|s| *s) && self.held.len() == self.members
    }

    fn stable(&self) -> bool {
        self.stable_at.is_some()
    }

    fn check_deadline(&self) -> Result<(), String> {
        if Instant::now() > self.deadline {
            Err("the group did not become stable before the deadline".into())
        } else {
            Ok(())
        }
    }
}

/// A connection for one member; requests may wait for a rebalance, hence the long timeout.
pub async fn connect(addr: &str) -> Result<Connection, String> {
    let config = ClientConfig::new("kcoord-bench").with_request_timeout(Duration::from_secs(90));
    Connection::connect(addr, config)
        .await
        .map_err(|e| format!("connect to {addr}: {e}"))
}

/// Runs member `i` of a group until the board says the group is stable, and gives back what
/// its steady heartbeat carries. `interval` paces a classic member's heartbeats once it holds
/// an assignment (a KIP-848 member is paced by the interval the server gives it).
pub async fn run_member(
    conn: &Connection,
    protocol: Protocol,
    group_id: &str,
    topic: &str,
    i: usize,
    board: &Mutex<Board>,
    interval: Duration,
) -> Result<Settled, String> {
    match protocol {
        Protocol::Classic => classic_member(conn, group_id, topic, i, board, interval).await,
        Protocol::Consumer => consumer_member(conn, group_id, topic, i, board).await,
    }
}

fn locked(board: &Mutex<Board>) -> std::sync::MutexGuard<'_, Board> {
    board.lock().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------------------------------------
// Classic members

async fn classic_member(
    conn: &Connection,
    group_id: &str,
    topic: &str,
    i: usize,
    board: &Mutex<Board>,
    interval: Duration,
) -> Result<Settled, String> {
    let mut member_id = String::new();
    'rejoin: loop {
        locked(board).check_deadline()?;
        let joined = join(conn, group_id, topic, &member_id).await?;
        member_id = joined.member_id.clone();
        match joined.error_code {
            0 => {}
            c if c == MEMBER_ID_REQUIRED || c == REBALANCE_IN_PROGRESS => continue,
            c => return Err(format!("JoinGroup: error {c}")),
        }
        let generation = joined.generation_id;
        let assignments = if joined.leader == member_id {
            range_assign(&joined, topic, locked(board).partitions)?
        } else {
            Vec::new()
        };
        let sync = SyncGroupRequest {
            group_id: group_id.into(),
            generation_id: generation,
            member_id: member_id.clone(),
            protocol_type: Some("consumer".into()),
            protocol_name: Some(ASSIGNOR.into()),
            assignments,
            ..Default::default()
        };
        let synced = conn
            .send(sync, SYNC_VERSION)
            .await
            .map_err(|e| format!("SyncGroup: {e}"))?;
        match synced.error_code {
            0 => {}
            c if c == REBALANCE_IN_PROGRESS => continue,
            code => return Err(format!("SyncGroup: error {code}")),
        }
        let partitions = decode_assignment(synced.assignment)?;
        locked(board).report(i, generation, partitions);
        // Heartbeat until the whole group is stable; a rebalance means joining again.
        loop {
            if locked(board).stable() {
                return Ok(Settled {
                    group_id: group_id.into(),
                    member_id,
                    epoch: generation,
                });
            }
            locked(board).check_deadline()?;
            tokio::time::sleep(interval).await;
            let code = classic_heartbeat(conn, group_id, &member_id, generation).await?;
            match code {
                0 => {}
                c if c == REBALANCE_IN_PROGRESS => continue 'rejoin,
                code => return Err(format!("Heartbeat: error {code}")),
            }
        }
    }
}

async fn join(
    conn: &Connection,
    group_id: &str,
    topic: &str,
    member_id: &str,
) -> Result<JoinGroupResponse, String> {
    let request = JoinGroupRequest {
        group_id: group_id.into(),
        session_timeout_ms: SESSION_TIMEOUT_MS,
        rebalance_timeout_ms: REBALANCE_TIMEOUT_MS,
        member_id: member_id.into(),
        protocol_type: "consumer".into(),
        protocols: vec![JoinGroupRequestProtocol {
            name: ASSIGNOR.into(),
            metadata: subscription(topic),
            ..Default::default()
        }],
        ..Default::default()
    };
    conn.send(request, JOIN_VERSION)
        .await
        .map_err(|e| format!("JoinGroup: {e}"))
}

async fn classic_heartbeat(
    conn: &Connection,
    group_id: &str,
    member_id: &str,
    generation: i32,
) -> Result<i16, String> {
    let request = heartbeat_request(group_id, member_id, generation);
    let response = conn
        .send(request, HEARTBEAT_VERSION)
        .await
        .map_err(|e| format!("Heartbeat: {e}"))?;
    Ok(response.error_code)
}

/// A classic member's heartbeat.
pub fn heartbeat_request(group_id: &str, member_id: &str, generation: i32) -> HeartbeatRequest {
    HeartbeatRequest {
        group_id: group_id.into(),
        generation_id: generation,
        member_id: member_id.into(),
        ..Default::default()
    }
}

/// `ConsumerProtocolSubscription` v0 of one topic, as Kafka's Java consumer writes it.
fn subscription(topic: &str) -> Bytes {
    let mut out = BytesMut::new();
    out.put_i16(0); // version
    out.put_i32(1); // one topic
    put_string(&mut out, topic);
    out.put_i32(-1); // no user data
    out.freeze()
}

/// `ConsumerProtocolAssignment` v0: these partitions of one topic.
fn assignment(topic: &str, partitions: &[i32]) -> Bytes {
    let mut out = BytesMut::new();
    out.put_i16(0);
    out.put_i32(1);
    put_string(&mut out, topic);
    out.put_i32(partitions.len() as i32);
    for p in partitions {
        out.put_i32(*p);
    }
    out.put_i32(-1);
    out.freeze()
}

fn put_string(out: &mut BytesMut, s: &str) {
    out.put_i16(s.len() as i16);
    out.put_slice(s.as_bytes());
}

/// The partitions of a `ConsumerProtocolAssignment` (every topic's; the benches use one).
fn decode_assignment(mut b: Bytes) -> Result<Vec<i32>, String> {
    let short = || "short ConsumerProtocolAssignment".to_string();
    let mut partitions = Vec::new();
    if b.remaining() < 6 {
        return Err(short());
    }
    b.advance(2);
    for _ in 0..b.get_i32() {
        if b.remaining() < 2 {
            return Err(short());
        }
        let len = b.get_i16().max(0) as usize;
        if b.remaining() < len + 4 {
            return Err(short());
        }
        b.advance(len);
        let n = b.get_i32().max(0) as usize;
        if b.remaining() < n * 4 {
            return Err(short());
        }
        partitions.extend((0..n).map(|_| b.get_i32()));
    }
    Ok(partitions)
}

/// The leader's range assignment (Kafka's `RangeAssignor` for one topic): members in member id
/// order, each a contiguous range, the first `partitions % members` one partition more.
fn range_assign(
    joined: &JoinGroupResponse,
    topic: &str,
    partitions: usize,
) -> Result<Vec<SyncGroupRequestAssignment>, String> {
    let mut ids: Vec<&str> = joined
        .members
        .iter()
        .map(|m| m.member_id.as_str())
        .collect();
    if ids.is_empty() {
        return Err("the leader's JoinGroup answer lists no member".into());
    }
    ids.sort_unstable();
    let (each, extra) = (partitions / ids.len(), partitions % ids.len());
    let mut next = 0;
    Ok(ids
        .iter()
        .enumerate()
        .map(|(k, id)| {
            let n = each + usize::from(k < extra);
            let parts: Vec<i32> = (next..next + n).map(|p| p as i32).collect();
            next += n;
            SyncGroupRequestAssignment {
                member_id: (*id).into(),
                assignment: assignment(topic, &parts),
                ..Default::default()
            }
        })
        .collect())
}

// ---------------------------------------------------------------------------------------------
// KIP-848 members

async fn consumer_member(
    conn: &Connection,
    group_id: &str,
    topic: &str,
    i: usize,
    board: &Mutex<Board>,
) -> Result<Settled, String> {
    // Kafka 4.x's consumer makes up its own member id.
    let member_id = uuid::Uuid::new_v4().to_string();
    let mut epoch = 0;
    let mut owned: Vec<TopicPartitions> = Vec::new();
    let mut report_owned = true;
    let mut interval = Duration::ZERO;
    loop {
        let stable = {
            let state = locked(board);
            if !state.stable() {
                state.check_deadline()?;
            }
            state.stable()
        };
        if epoch > 0 && stable {
            return Ok(Settled {
                group_id: group_id.into(),
                member_id,
                epoch,
            });
        }
        if !report_owned {
            tokio::time::sleep(interval).await;
        }
        let joining = epoch == 0;
        let request = ConsumerGroupHeartbeatRequest {
            group_id: group_id.into(),
            member_id: member_id.clone(),
            member_epoch: epoch,
            rebalance_timeout_ms: if joining { REBALANCE_TIMEOUT_MS } else { -1 },
            subscribed_topic_names: joining.then(|| vec![topic.to_string()]),
            topic_partitions: report_owned.then(|| owned.clone()),
            ..Default::default()
        };
        let response = conn
            .send(request, CONSUMER_HEARTBEAT_VERSION)
            .await
            .map_err(|e| format!("ConsumerGroupHeartbeat: {e}"))?;
        if response.error_code != 0 {
            return Err(format!(
                "ConsumerGroupHeartbeat: error {} {:?}",
                response.error_code, response.error_message
            ));
        }
        epoch = response.member_epoch;
        interval = Duration::from_millis(response.heartbeat_interval_ms.max(1) as u64);
        report_owned = false;
        if let Some(assignment) = response.assignment {
            // Reconciled at once: the next heartbeat acknowledges it.
            owned = assignment
                .topic_partitions
                .iter()
                .map(|t| TopicPartitions {
                    topic_id: t.topic_id,
                    partitions: t.partitions.clone(),
                    ..Default::default()
                })
                .collect();
            report_owned = true;
        }
        let held = owned.iter().flat_map(|t| t.partitions.clone()).collect();
        locked(board).report(i, epoch, held);
    }
}

/// A KIP-848 member's steady heartbeat, as Kafka's Java consumer sends it when nothing changed.
pub fn consumer_heartbeat_request(settled: &Settled) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest {
        group_id: settled.group_id.clone(),
        member_id: settled.member_id.clone(),
        member_epoch: settled.epoch,
        rebalance_timeout_ms: -1,
        ..Default::default()
    }
}

// ---------------------------------------------------------------------------------------------
// Groups

/// What a group of members is: where, which protocol, how many on which topic.
#[derive(Clone)]
pub struct Spec {
    pub addr: String,
    pub protocol: Protocol,
    pub topic: String,
    pub members: usize,
    pub partitions: usize,
    /// A classic member's heartbeat interval once it holds an assignment.
    pub interval: Duration,
    /// The most the group may take to become stable.
    pub timeout: Duration,
}

/// Runs one group as `spec` says, each member on its own new connection, all starting
/// together; returns the members once the group is stable and how long that took from the
/// start. The connections are closed on return.
pub async fn run_group(spec: &Spec, group_id: &str) -> Result<(Vec<Settled>, Duration), String> {
    let mut conns = Vec::with_capacity(spec.members);
    for _ in 0..spec.members {
        conns.push(Arc::new(connect(&spec.addr).await?));
    }
    let start = Instant::now();
    let board = Board::new(spec.members, spec.partitions, start + spec.timeout);
    let mut tasks = Vec::with_capacity(spec.members);
    for (i, conn) in conns.iter().enumerate() {
        let (conn, board) = (Arc::clone(conn), Arc::clone(&board));
        let (group_id, spec) = (group_id.to_string(), spec.clone());
        tasks.push(tokio::spawn(async move {
            let (protocol, topic) = (spec.protocol, spec.topic.as_str());
            run_member(&conn, protocol, &group_id, topic, i, &board, spec.interval).await
        }));
    }
    let mut settled = Vec::with_capacity(spec.members);
    for task in tasks {
        settled.push(task.await.map_err(|e| format!("member task: {e}"))??);
    }
    let stable_at = locked(&board).stable_at.ok_or("no stable time recorded")?;
    Ok((settled, stable_at.duration_since(start)))
}
