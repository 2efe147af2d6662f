//! The classic group's simulated consumers, doing what Kafka's `ConsumerCoordinator` does:
//! JoinGroup (v9 with KIP-394's MEMBER_ID_REQUIRED round trip, or v3, which has none),
//! SyncGroup (the leader sends a range assignment of `input`'s partitions, as many as the
//! catalog has), Heartbeat, LeaveGroup, and a rejoin on REBALANCE_IN_PROGRESS,
//! ILLEGAL_GENERATION (same member id) or UNKNOWN_MEMBER_ID and FENCED_INSTANCE_ID (a new
//! one). One request in flight each. The static member never sends LeaveGroup (Kafka's
//! consumer does not, for a static member): it restarts and joins again under its instance id
//! with no member id, and the coordinator gives it a new one in its old place.
use bytes::{Buf, BufMut, Bytes, BytesMut};
use kcoord_wire::messages::join_group_request::JoinGroupRequestProtocol;
use kcoord_wire::messages::sync_group_request::SyncGroupRequestAssignment;
use kcoord_wire::messages::{JoinGroupRequest, JoinGroupResponse, SyncGroupRequest};
use kcoord_wire::ErrorCode;

/// The classic group; its members consume `input` (the first topic of the catalog).
pub const CLASSIC_GROUP: &str = "classic";
pub const CLASSIC_TOPIC: &str = "input";
pub const CLASSIC_MEMBERS: usize = 3;
const PROTOCOL: &str = "range";
const REBALANCE_TIMEOUT_MS: i32 = 3_000;

/// Where a member is in Kafka's join protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// It must (re)join: its next request is a JoinGroup.
    Joining,
    /// It joined `generation` and must SyncGroup; the leader (unless told to skip the
    /// assignment, a static leader that took its own place) assigns `members`.
    Syncing {
        generation: i32,
        leader: bool,
        skip_assignment: bool,
        /// (member id, instance id) of each member, as the leader's JoinGroup answer lists.
        members: Vec<(String, Option<String>)>,
    },
    /// It has its assignment of `generation`: it heartbeats and commits.
    Stable {
        generation: i32,
        partitions: Vec<i32>,
    },
}

#[derive(Debug)]
pub struct ClassicClient {
    pub name: String,
    pub group: &'static str,
    pub instance: Option<String>,
    /// Empty until the coordinator gives it one.
    pub member_id: String,
    /// The JoinGroup version of this incarnation of the client: 9, or 3 (dynamic members).
    pub version: i16,
    pub session_timeout_ms: i32,
    pub phase: Phase,
    /// As the leader, the partition count it assigned: a leader that sees more rejoins, as
    /// Kafka's leader does when the metadata of a subscribed topic changes.
    pub assigned_count: Option<i32>,
    pub waiting: bool,
    pub restarts: u32,
}

impl ClassicClient {
    pub fn all() -> Vec<ClassicClient> {
        Self::of(CLASSIC_GROUP, CLASSIC_MEMBERS, true)
    }

    /// `count` members of `group`, the last static if `with_static`.
    pub fn of(group: &'static str, count: usize, with_static: bool) -> Vec<ClassicClient> {
        (0..count)
            .map(|i| ClassicClient {
                name: format!("{group}/m{i}"),
                group,
                instance: (with_static && i + 1 == count).then(|| format!("{group}-static")),
                member_id: String::new(),
                version: 9,
                session_timeout_ms: 3_000,
                phase: Phase::Joining,
                assigned_count: None,
                waiting: false,
                restarts: 0,
            })
            .collect()
    }

    /// Who it is across member ids: a static member is its instance id.
    pub fn identity(&self) -> String {
        self.instance
            .clone()
            .unwrap_or_else(|| self.member_id.clone())
    }

    pub fn generation(&self) -> Option<i32> {
        match &self.phase {
            Phase::Syncing { generation, .. } | Phase::Stable { generation, .. } => {
                Some(*generation)
            }
            Phase::Joining => None,
        }
    }

    pub fn owned(&self) -> &[i32] {
        match &self.phase {
            Phase::Stable { partitions, .. } => partitions,
            _ => &[],
        }
    }

    pub fn join_request(&self) -> JoinGroupRequest {
        JoinGroupRequest {
            group_id: self.group.into(),
            session_timeout_ms: self.session_timeout_ms,
            rebalance_timeout_ms: REBALANCE_TIMEOUT_MS,
            member_id: self.member_id.clone(),
            group_instance_id: self.instance.clone(),
            protocol_type: "consumer".into(),
            protocols: vec![JoinGroupRequestProtocol {
                name: PROTOCOL.into(),
                metadata: subscription(),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    /// A JoinGroup's answer (acknowledged).
    pub fn joined(&mut self, r: &JoinGroupResponse) {
        let code = ErrorCode::from_code(r.error_code).unwrap_or(ErrorCode::UNKNOWN_SERVER_ERROR);
        match code {
            ErrorCode::NONE => {
                self.member_id = r.member_id.clone();
                self.phase = Phase::Syncing {
                    generation: r.generation_id,
                    leader: r.leader == r.member_id,
                    skip_assignment: r.skip_assignment,
                    members: r
                        .members
                        .iter()
                        .map(|m| (m.member_id.clone(), m.group_instance_id.clone()))
                        .collect(),
                };
            }
            ErrorCode::MEMBER_ID_REQUIRED => {
                self.member_id = r.member_id.clone();
                self.phase = Phase::Joining;
            }
            _ => self.rejoin_after(code),
        }
    }

    /// The SyncGroup it sends in `Syncing`; as the leader, the assignment of `partitions`
    /// partitions of the topic.
    pub fn sync_request(&mut self, partitions: i32) -> SyncGroupRequest {
        let Phase::Syncing {
            generation,
            leader,
            skip_assignment,
            members,
        } = &self.phase
        else {
            panic!("{} syncs outside a generation", self.name)
        };
        let assignments = if *leader && !skip_assignment {
            self.assigned_count = Some(partitions);
            range_assignment(members, partitions)
        } else {
            Vec::new()
        };
        SyncGroupRequest {
            group_id: self.group.into(),
            generation_id: *generation,
            member_id: self.member_id.clone(),
            group_instance_id: self.instance.clone(),
            protocol_type: Some("consumer".into()),
            protocol_name: Some(PROTOCOL.into()),
            assignments,
            ..Default::default()
        }
    }

    /// A SyncGroup's answer (acknowledged), for `generation`.
    pub fn synced(&mut self, generation: i32, code: ErrorCode, assignment: &Bytes) {
        if code == ErrorCode::NONE {
            self.phase = Phase::Stable {
                generation,
                partitions: decode_assignment(assignment),
            };
        } else {
            self.rejoin_after(code);
        }
    }

    /// A Heartbeat's or OffsetCommit's error (acknowledged): Kafka's consumer rejoins on
    /// these, under a new member id when its own is no longer known.
    pub fn rejoin_after(&mut self, code: ErrorCode) {
        match code {
            ErrorCode::NONE => return,
            ErrorCode::UNKNOWN_MEMBER_ID | ErrorCode::FENCED_INSTANCE_ID => self.member_id.clear(),
            _ => {}
        }
        self.phase = Phase::Joining;
        self.assigned_count = None;
    }

    /// The process restarts: a new member id (none until the coordinator gives one), and this
    /// incarnation's JoinGroup version.
    pub fn restart(&mut self, version: i16) {
        self.restarts += 1;
        self.member_id.clear();
        self.version = if self.instance.is_some() { 9 } else { version };
        self.phase = Phase::Joining;
        self.assigned_count = None;
    }
}

/// Kafka's consumer protocol subscription (version 0) to the topic.
fn subscription() -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(0);
    b.put_i32(1);
    b.put_i16(CLASSIC_TOPIC.len() as i16);
    b.put_slice(CLASSIC_TOPIC.as_bytes());
    b.put_i32(-1);
    b.freeze()
}

/// The range assignor's answer: the members in member id order, each a run of partitions.
fn range_assignment(
    members: &[(String, Option<String>)],
    partitions: i32,
) -> Vec<SyncGroupRequestAssignment> {
    let mut ids: Vec<&str> = members.iter().map(|(id, _)| id.as_str()).collect();
    ids.sort_unstable();
    let count = ids.len().max(1) as i32;
    let (each, extra) = (partitions / count, partitions % count);
    let mut next = 0;
    ids.iter()
        .enumerate()
        .map(|(i, id)| {
            let take = each + i32::from((i as i32) < extra);
            let mine: Vec<i32> = (next..next + take).collect();
            next += take;
            SyncGroupRequestAssignment {
                member_id: (*id).into(),
                assignment: encode_assignment(&mine),
                ..Default::default()
            }
        })
        .collect()
}

/// Kafka's consumer protocol assignment (version 0) of the topic's `partitions`.
pub fn encode_assignment(partitions: &[i32]) -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(0);
    b.put_i32(1);
    b.put_i16(CLASSIC_TOPIC.len() as i16);
    b.put_slice(CLASSIC_TOPIC.as_bytes());
    b.put_i32(partitions.len() as i32);
    for p in partitions {
        b.put_i32(*p);
    }
    b.put_i32(-1);
    b.freeze()
}

/// The partitions of an assignment [`encode_assignment`] wrote (none for an empty one: a
/// member the leader left out).
pub fn decode_assignment(bytes: &Bytes) -> Vec<i32> {
    let mut b = bytes.clone();
    if b.remaining() < 6 {
        return Vec::new();
    }
    b.advance(2);
    let mut partitions = Vec::new();
    for _ in 0..b.get_i32() {
        let name = b.get_i16() as usize;
        b.advance(name);
        for _ in 0..b.get_i32() {
            partitions.push(b.get_i32());
        }
    }
    partitions
}
