//! A fake streams group coordinator: enough of KIP-1071 for the client's member to be tested
//! against. Each member has a target the test sets; the fake moves the member towards it as
//! Kafka does (revoke first, at the same epoch; grant the rest with a new epoch once the member
//! reports that it no longer owns the revoked tasks). Epochs are checked strictly (no
//! lost-response tolerance). Scripted replies, queued by the test, are answered first.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::find_coordinator_response::Coordinator as CoordinatorResult;
use kcoord_wire::messages::streams_group_heartbeat_request::TaskIds as RequestTaskIds;
use kcoord_wire::messages::streams_group_heartbeat_response::{Status, TaskIds};
use kcoord_wire::messages::{
    FindCoordinatorRequest, FindCoordinatorResponse, StreamsGroupHeartbeatRequest,
    StreamsGroupHeartbeatResponse,
};
use uuid::Uuid;

use super::{api_versions, response, Received, Reply};

pub type Tasks = BTreeMap<String, BTreeSet<i32>>;

/// `[("0", &[0, 1])]` as [`Tasks`].
pub fn tasks(spec: &[(&str, &[i32])]) -> Tasks {
    spec.iter()
        .filter(|(_, p)| !p.is_empty())
        .map(|(s, p)| (s.to_string(), p.iter().copied().collect()))
        .collect()
}

pub fn reported(ids: &Option<Vec<RequestTaskIds>>) -> Option<Tasks> {
    ids.as_ref().map(|ids| {
        ids.iter()
            .filter(|t| !t.partitions.is_empty())
            .map(|t| {
                (
                    t.subtopology_id.clone(),
                    t.partitions.iter().copied().collect(),
                )
            })
            .collect()
    })
}

fn wire(tasks: &Tasks) -> Vec<TaskIds> {
    tasks
        .iter()
        .map(|(s, p)| TaskIds {
            subtopology_id: s.clone(),
            partitions: p.iter().copied().collect(),
            ..Default::default()
        })
        .collect()
}

fn subset(a: &Tasks, b: &Tasks) -> bool {
    a.iter()
        .all(|(s, ps)| b.get(s).is_some_and(|bs| ps.is_subset(bs)))
}

fn intersection(a: &Tasks, b: &Tasks) -> Tasks {
    a.iter()
        .filter_map(|(s, ps)| {
            let kept: BTreeSet<i32> = b
                .get(s)
                .map(|bs| ps.intersection(bs).copied().collect())
                .unwrap_or_default();
            (!kept.is_empty()).then(|| (s.clone(), kept))
        })
        .collect()
}

#[derive(Default)]
struct Member {
    epoch: i32,
    assigned: Tasks,
    revoking: bool,
}

struct State {
    group_epoch: i32,
    heartbeat_interval_ms: i32,
    targets: HashMap<String, Tasks>,
    members: HashMap<String, Member>,
    scripted: VecDeque<StreamsGroupHeartbeatResponse>,
    statuses: Vec<Status>,
    topology_description_id: Option<Uuid>,
    topology_description_required: bool,
}

/// See the module documentation. Clones share the state.
#[derive(Clone)]
pub struct FakeStreamsCoordinator(Arc<Mutex<State>>);

impl FakeStreamsCoordinator {
    pub fn new(heartbeat_interval_ms: i32) -> Self {
        FakeStreamsCoordinator(Arc::new(Mutex::new(State {
            group_epoch: 1,
            heartbeat_interval_ms,
            targets: HashMap::new(),
            members: HashMap::new(),
            scripted: VecDeque::new(),
            statuses: Vec::new(),
            topology_description_id: None,
            topology_description_required: false,
        })))
    }

    /// Sets the tasks `member_id` should end up with (a new group epoch).
    pub fn set_target(&self, member_id: &str, target: Tasks) {
        let mut state = self.0.lock().unwrap();
        state.group_epoch += 1;
        state.targets.insert(member_id.to_string(), target);
    }

    /// Answers the next heartbeat with `error` (as the only change to a default response).
    pub fn fail_next(&self, error: i16) {
        self.script(StreamsGroupHeartbeatResponse {
            error_code: error,
            error_message: Some("scripted".into()),
            ..Default::default()
        });
    }

    /// Answers the next heartbeat with `response` as it is.
    pub fn script(&self, response: StreamsGroupHeartbeatResponse) {
        self.0.lock().unwrap().scripted.push_back(response);
    }

    pub fn set_statuses(&self, statuses: &[(i8, &str)]) {
        self.0.lock().unwrap().statuses = statuses
            .iter()
            .map(|(code, detail)| Status {
                status_code: *code,
                status_detail: detail.to_string(),
                ..Default::default()
            })
            .collect();
    }

    pub fn set_topology_description(&self, id: Option<Uuid>, required: bool) {
        let mut state = self.0.lock().unwrap();
        state.topology_description_id = id;
        state.topology_description_required = required;
    }

    pub fn member_epoch(&self, member_id: &str) -> Option<i32> {
        self.0
            .lock()
            .unwrap()
            .members
            .get(member_id)
            .map(|m| m.epoch)
    }

    /// The answer to `request`, to be encoded at `version` (fields it lacks are left out).
    pub fn heartbeat(
        &self,
        request: &StreamsGroupHeartbeatRequest,
        version: i16,
    ) -> StreamsGroupHeartbeatResponse {
        let mut guard = self.0.lock().unwrap();
        let state = &mut *guard;
        if let Some(scripted) = state.scripted.pop_front() {
            return scripted;
        }
        let mut response = StreamsGroupHeartbeatResponse {
            member_id: request.member_id.clone(),
            heartbeat_interval_ms: state.heartbeat_interval_ms,
            status: Some(state.statuses.clone()),
            topology_description_id: if version >= 2 {
                state.topology_description_id
            } else {
                None
            },
            topology_description_required: version == 1 && state.topology_description_required,
            ..Default::default()
        };
        let target = state
            .targets
            .get(&request.member_id)
            .cloned()
            .unwrap_or_default();
        match request.member_epoch {
            -1 | -2 => {
                state.members.remove(&request.member_id);
                response.member_epoch = request.member_epoch;
                response.status = Some(Vec::new());
                return response;
            }
            0 => {
                let member = Member {
                    epoch: state.group_epoch,
                    assigned: target.clone(),
                    revoking: false,
                };
                response.member_epoch = member.epoch;
                response.active_tasks = Some(wire(&target));
                response.standby_tasks = Some(Vec::new());
                response.warmup_tasks = Some(Vec::new());
                state.members.insert(request.member_id.clone(), member);
                return response;
            }
            _ => {}
        }
        let Some(member) = state.members.get_mut(&request.member_id) else {
            response.error_code = 25; // UNKNOWN_MEMBER_ID
            return response;
        };
        if request.member_epoch != member.epoch {
            response.error_code = 110; // FENCED_MEMBER_EPOCH
            return response;
        }
        let owned = reported(&request.active_tasks);
        let mut changed = false;
        if member.revoking {
            if owned.as_ref().is_some_and(|o| subset(o, &member.assigned)) {
                member.revoking = false;
                member.assigned = target;
                member.epoch = state.group_epoch;
                changed = true;
            }
        } else if member.assigned != target {
            if subset(&member.assigned, &target) {
                member.assigned = target;
                member.epoch = state.group_epoch;
            } else {
                member.revoking = true;
                member.assigned = intersection(&member.assigned, &target);
            }
            changed = true;
        }
        response.member_epoch = member.epoch;
        if changed {
            response.active_tasks = Some(wire(&member.assigned));
            response.standby_tasks = Some(Vec::new());
            response.warmup_tasks = Some(Vec::new());
        }
        response
    }
}

/// Answers FindCoordinator with the ports of `coordinators` in turn (the last one repeated)
/// on 127.0.0.1, node ids 1, 2, ...
#[derive(Clone)]
pub struct CoordinatorSequence(Arc<Mutex<(Vec<i32>, usize)>>);

impl CoordinatorSequence {
    pub fn new(ports: Vec<i32>) -> Self {
        CoordinatorSequence(Arc::new(Mutex::new((ports, 0))))
    }

    pub fn answer(&self, request: &Received) -> Reply {
        let (port, node_id) = {
            let mut guard = self.0.lock().unwrap();
            let (ports, next) = &mut *guard;
            let i = (*next).min(ports.len() - 1);
            *next += 1;
            (ports[i], i as i32 + 1)
        };
        let find = request.decode::<FindCoordinatorRequest>();
        let answer = if request.version() >= 4 {
            let coordinators = find
                .coordinator_keys
                .into_iter()
                .map(|key| CoordinatorResult {
                    key,
                    node_id,
                    host: "127.0.0.1".into(),
                    port,
                    ..Default::default()
                })
                .collect();
            FindCoordinatorResponse {
                coordinators,
                ..Default::default()
            }
        } else {
            FindCoordinatorResponse {
                node_id,
                host: "127.0.0.1".into(),
                port,
                ..Default::default()
            }
        };
        response(request, &answer)
    }
}

/// A server handler: ApiVersions with `apis`, FindCoordinator from `coordinators`, streams
/// heartbeats from `fake`; anything else closes the connection.
pub fn streams_handler(
    apis: Vec<(ApiKey, i16, i16)>,
    coordinators: CoordinatorSequence,
    fake: FakeStreamsCoordinator,
) -> impl Fn(&Received) -> Reply + Send + Sync + 'static {
    move |request| match ApiKey::from_i16(request.api_key()) {
        Some(ApiKey::ApiVersions) => response(request, &api_versions(&apis)),
        Some(ApiKey::FindCoordinator) => coordinators.answer(request),
        Some(ApiKey::StreamsGroupHeartbeat) => response(
            request,
            &fake.heartbeat(&request.decode(), request.version()),
        ),
        _ => Reply::Close,
    }
}
