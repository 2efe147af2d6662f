//! One Kafka Streams member (KIP-1071) as a heartbeat state machine.
//!
//! The member is driven one heartbeat at a time ([`StreamsMember::heartbeat_once`]), or split
//! further into [`StreamsMember::prepare_heartbeat`] + a send of the caller's choosing +
//! [`StreamsMember::handle_response`] / [`StreamsMember::handle_error`], so that tests step it
//! deterministically and benches pipeline thousands of members over a few connections without
//! a task each. [`StreamsMember::spawn`] runs it on its own task with timers instead.
//!
//! Reconciliation follows Kafka's Java client, with task processing taken as instantaneous: a
//! response that carries task lists replaces the owned tasks at once (revoked tasks are
//! dropped, new ones taken), and the next heartbeat, sent without waiting for the interval,
//! reports the new owned set, which is how a revocation is acknowledged.
//!
//! Topology description pushes (KIP-1331) ride alongside: [`StreamsMember::maybe_push`] hands
//! out a detached [`TopologyPush`] when the coordinator asked for one, and
//! [`StreamsMember::handle_push_completion`] takes its answer back (see `push.rs`).

use std::time::Duration;

use kcoord_wire::messages::streams_group_heartbeat_request::{
    Endpoint as WireEndpoint, KeyValue, Topology,
};
use kcoord_wire::messages::streams_group_heartbeat_response::EndpointToPartitions;
use kcoord_wire::messages::{StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse};
use kcoord_wire::{ErrorCode, Request};
use tracing::{debug, info, warn};
use uuid::Uuid;

use crate::client::Client;
use crate::connection::Connection;
use crate::error::ClientError;
use crate::streams::assignment::{from_response, to_request, Assignment, Tasks};
use crate::streams::member_config::{OwnedTasksReporting, StreamsMemberConfig};
use crate::streams::push::{PushReport, PushState};
use crate::streams::status::StreamsGroupStatus;

mod description_push;
mod leave;

/// MemberEpoch of a join.
pub const JOIN_EPOCH: i32 = 0;
/// MemberEpoch of a leave.
pub const LEAVE_EPOCH: i32 = -1;
/// MemberEpoch of a static member's temporary leave.
pub const STATIC_LEAVE_EPOCH: i32 = -2;

/// Where a member is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemberState {
    /// The next heartbeat joins (epoch 0, with the topology): at start and after being fenced.
    Joining,
    /// The owned tasks changed and the coordinator has not heard about it; the next heartbeat
    /// goes out at once and reports them (Kafka's ACKNOWLEDGING).
    Acknowledging,
    /// In the group; heartbeats every HeartbeatIntervalMs.
    Stable,
    /// Left the group (or never joined and was told to leave); sends nothing more.
    Left,
    /// Stopped by an error that retrying cannot fix; sends nothing more.
    Failed,
}

/// What one heartbeat achieved.
#[derive(Debug)]
pub enum HeartbeatOutcome {
    /// The coordinator accepted the heartbeat. `assignment_changed` when it carried tasks that
    /// differ from the owned ones (they are owned now, and reported by the next heartbeat).
    Accepted { assignment_changed: bool },
    /// FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID: every task was dropped and the next heartbeat
    /// rejoins with epoch 0, right away.
    Fenced { error: ClientError },
    /// A retriable error: the coordinator moved or is unavailable (it is looked up again), is
    /// loading, or the request got no answer. The next heartbeat is due after `after`.
    Retry { error: ClientError, after: Duration },
}

/// What the coordinator asked for regarding the topology description in the latest heartbeat
/// response that asked for something; consumed by the push logic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TopologyDescriptionRequest {
    /// Heartbeat v2+: push the description under this TopologyDescriptionId.
    Id(Uuid),
    /// Heartbeat v1: TopologyDescriptionRequired was true (push keyed by topology epoch).
    Required,
}

/// A copy of what a member knows, as published by a running member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberSnapshot {
    pub state: MemberState,
    pub member_epoch: i32,
    pub assignment: Assignment,
    pub statuses: Vec<StreamsGroupStatus>,
    pub heartbeat_interval: Duration,
    /// Successful heartbeat responses so far.
    pub responses: u64,
    /// Join heartbeats sent so far (1 + rejoins after fencing, retried joins included).
    pub joins: u32,
    /// The last error seen, retriable or not, until a heartbeat succeeds.
    pub last_error: Option<String>,
    pub topology_description_id: Option<Uuid>,
    pub topology_description_required: bool,
    /// The coordinator's request for a push not yet satisfied.
    pub pending_topology_description: Option<TopologyDescriptionRequest>,
    /// The push on its way, if any.
    pub topology_push_in_flight: Option<TopologyDescriptionRequest>,
    /// Pushes sent so far.
    pub topology_pushes_sent: u64,
    /// How the last finished push went.
    pub last_topology_push: Option<PushReport>,
}

/// One streams member. See the module documentation.
pub struct StreamsMember {
    client: Client,
    config: StreamsMemberConfig,
    state: MemberState,
    member_epoch: i32,
    owned: Assignment,
    /// The owned tasks changed since the last heartbeat was prepared.
    owned_unreported: bool,
    /// Send every optional field on the next heartbeat: after a failed one, as Kafka does,
    /// since the coordinator may not have seen the last one.
    send_full_state: bool,
    /// Send the next heartbeat without waiting for the interval.
    prompt: bool,
    shutdown_requested: bool,
    heartbeat_interval: Duration,
    statuses: Vec<StreamsGroupStatus>,
    endpoint_information_epoch: i32,
    partitions_by_user_endpoint: Option<Vec<EndpointToPartitions>>,
    topology_description_id: Option<Uuid>,
    topology_description_required: bool,
    /// Topology description pushes: the pending request, the push in flight, throttling.
    push: PushState,
    /// The coordinator's connection and the heartbeat version used on it.
    coordinator: Option<(Connection, i16)>,
    /// Back-off before the next heartbeat, after a retriable error.
    retry_after: Option<Duration>,
    consecutive_errors: u32,
    requests: u64,
    responses: u64,
    joins: u32,
    last_error: Option<String>,
}

impl std::fmt::Debug for StreamsMember {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamsMember")
            .field("group_id", &self.config.group_id)
            .field("member_id", &self.config.member_id)
            .field("state", &self.state)
            .field("member_epoch", &self.member_epoch)
            .field("owned", &self.owned)
            .finish_non_exhaustive()
    }
}

impl StreamsMember {
    /// A member that has not sent anything yet; drive it with [`StreamsMember::heartbeat_once`]
    /// or run it with [`StreamsMember::spawn`].
    pub fn new(client: &Client, config: StreamsMemberConfig) -> StreamsMember {
        let push = PushState::new(
            config.topology_description_push_enabled,
            config.topology_description.clone(),
        );
        StreamsMember {
            client: client.clone(),
            config,
            state: MemberState::Joining,
            member_epoch: JOIN_EPOCH,
            owned: Assignment::default(),
            owned_unreported: false,
            send_full_state: true,
            prompt: false,
            shutdown_requested: false,
            // Kafka's group.streams.heartbeat.interval.ms default, until a response says otherwise.
            heartbeat_interval: Duration::from_secs(5),
            statuses: Vec::new(),
            endpoint_information_epoch: 0,
            partitions_by_user_endpoint: None,
            topology_description_id: None,
            topology_description_required: false,
            push,
            coordinator: None,
            retry_after: None,
            consecutive_errors: 0,
            requests: 0,
            responses: 0,
            joins: 0,
            last_error: None,
        }
    }

    pub fn config(&self) -> &StreamsMemberConfig {
        &self.config
    }

    pub fn group_id(&self) -> &str {
        &self.config.group_id
    }

    pub fn member_id(&self) -> &str {
        &self.config.member_id
    }

    pub fn state(&self) -> MemberState {
        self.state
    }

    pub fn member_epoch(&self) -> i32 {
        self.member_epoch
    }

    /// The tasks the member owns now.
    pub fn assignment(&self) -> &Assignment {
        &self.owned
    }

    /// The statuses of the last successful heartbeat response.
    pub fn statuses(&self) -> &[StreamsGroupStatus] {
        &self.statuses
    }

    pub fn heartbeat_interval(&self) -> Duration {
        self.heartbeat_interval
    }

    pub fn endpoint_information_epoch(&self) -> i32 {
        self.endpoint_information_epoch
    }

    /// The last PartitionsByUserEndpoint the coordinator sent (it sends them only when the
    /// member's EndpointInformationEpoch is behind).
    pub fn partitions_by_user_endpoint(&self) -> Option<&[EndpointToPartitions]> {
        self.partitions_by_user_endpoint.as_deref()
    }

    /// TopologyDescriptionId of the last successful response (heartbeat v2+).
    pub fn topology_description_id(&self) -> Option<Uuid> {
        self.topology_description_id
    }

    /// TopologyDescriptionRequired of the last successful response (heartbeat v1).
    pub fn topology_description_required(&self) -> bool {
        self.topology_description_required
    }

    /// The connection to the coordinator currently in use and the heartbeat version on it.
    pub fn coordinator_connection(&self) -> Option<(&Connection, i16)> {
        self.coordinator.as_ref().map(|(c, v)| (c, *v))
    }

    /// Requests sent so far (heartbeats and leaves).
    pub fn requests_sent(&self) -> u64 {
        self.requests
    }

    /// How long to wait, after the last heartbeat, before the next one: the back-off after a
    /// retriable error, zero when joining, acknowledging or asked to hurry, else the
    /// coordinator's heartbeat interval.
    pub fn next_heartbeat_delay(&self) -> Duration {
        if let Some(after) = self.retry_after {
            return after;
        }
        if self.state == MemberState::Joining || self.owned_unreported || self.prompt {
            return Duration::ZERO;
        }
        self.heartbeat_interval
    }

    pub fn snapshot(&self) -> MemberSnapshot {
        MemberSnapshot {
            state: self.state,
            member_epoch: self.member_epoch,
            assignment: self.owned.clone(),
            statuses: self.statuses.clone(),
            heartbeat_interval: self.heartbeat_interval,
            responses: self.responses,
            joins: self.joins,
            last_error: self.last_error.clone(),
            topology_description_id: self.topology_description_id,
            topology_description_required: self.topology_description_required,
            pending_topology_description: self.push.pending(),
            topology_push_in_flight: self.push.in_flight(),
            topology_pushes_sent: self.push.sent(),
            last_topology_push: self.push.last().cloned(),
        }
    }

    /// Sets ShutdownApplication on this and every later heartbeat (Kafka Streams'
    /// `SHUTDOWN_APPLICATION` uncaught-exception response), sent without waiting.
    pub fn shutdown_application(&mut self) {
        self.shutdown_requested = true;
        self.prompt = true;
    }

    /// Asks for the next heartbeat to go out without waiting for the interval.
    pub fn hurry(&mut self) {
        self.prompt = true;
    }

    /// Sends one heartbeat to the group coordinator (looking it up first if needed) and
    /// applies the answer. `Err` means the member failed for good (see [`MemberState::Failed`]);
    /// every retriable condition is an `Ok` outcome.
    pub async fn heartbeat_once(&mut self) -> Result<HeartbeatOutcome, ClientError> {
        self.ensure_active()?;
        let (conn, version) = match self.coordinator().await {
            Ok(found) => found,
            Err(e) => return self.handle_error(e),
        };
        let request = self.prepare_heartbeat()?;
        match conn.send(request, version).await {
            Ok(response) => self.handle_response(response, version),
            Err(e) => self.handle_error(e),
        }
    }

    /// The next heartbeat request. Marks the owned tasks as reported, so call it only for a
    /// request that is sent, and hand what comes back to `handle_response` or `handle_error`.
    pub fn prepare_heartbeat(&mut self) -> Result<StreamsGroupHeartbeatRequest, ClientError> {
        self.ensure_active()?;
        // Epoch 0 is a (re)join on the coordinator's side, whatever our state: it still needs
        // the topology and the rebalance timeout (a new group's first members stay at epoch 0
        // until the initial rebalance delay ends).
        let joining = self.state == MemberState::Joining || self.member_epoch == JOIN_EPOCH;
        let full = joining || self.send_full_state;
        let config = &self.config;
        let report_owned =
            full || self.owned_unreported || config.owned_tasks == OwnedTasksReporting::Always;
        // A join owns nothing: Kafka requires empty lists with epoch 0 (null is refused).
        let owned = |tasks: &Tasks| {
            if joining {
                Some(Vec::new())
            } else {
                report_owned.then(|| to_request(tasks))
            }
        };
        let request = StreamsGroupHeartbeatRequest {
            group_id: config.group_id.clone(),
            member_id: config.member_id.clone(),
            member_epoch: if joining {
                JOIN_EPOCH
            } else {
                self.member_epoch
            },
            endpoint_information_epoch: self.endpoint_information_epoch,
            // Kafka sends the instance id in every heartbeat of a static member.
            instance_id: config.instance_id.clone(),
            rack_id: if full { config.rack_id.clone() } else { None },
            rebalance_timeout_ms: if full {
                millis(config.rebalance_timeout)
            } else {
                -1
            },
            // The topology goes with the join only; the coordinator refuses it otherwise.
            topology: joining.then(|| Topology::clone(&config.topology)),
            active_tasks: owned(&self.owned.active),
            standby_tasks: owned(&self.owned.standby),
            warmup_tasks: owned(&self.owned.warmup),
            process_id: full.then(|| config.process_id.clone()),
            user_endpoint: if full {
                wire_user_endpoint(config)
            } else {
                None
            },
            client_tags: full.then(|| wire_client_tags(config)),
            // Task offsets are not simulated; null means "not reported" (as Java's v0 builder).
            task_offsets: None,
            task_end_offsets: None,
            shutdown_application: self.shutdown_requested,
            ..Default::default()
        };
        if joining {
            self.joins += 1;
        }
        self.requests += 1;
        self.owned_unreported = false;
        self.send_full_state = false;
        self.prompt = false;
        self.retry_after = None;
        Ok(request)
    }

    /// Applies the response to the last prepared heartbeat, decoded at `version`.
    pub fn handle_response(
        &mut self,
        response: StreamsGroupHeartbeatResponse,
        version: i16,
    ) -> Result<HeartbeatOutcome, ClientError> {
        if let Some(hook) = &self.config.on_response {
            hook(&response, version);
        }
        if response.error_code != ErrorCode::NONE.code() {
            let error = ClientError::Kafka {
                api: StreamsGroupHeartbeatRequest::KEY,
                code: response.error_code,
                message: response.error_message,
            };
            return self.handle_error(error);
        }
        self.consecutive_errors = 0;
        self.last_error = None;
        self.responses += 1;
        self.member_epoch = response.member_epoch;
        if let Ok(ms) = u64::try_from(response.heartbeat_interval_ms) {
            if ms > 0 {
                self.heartbeat_interval = Duration::from_millis(ms);
            }
        }
        self.statuses = response
            .status
            .iter()
            .flatten()
            .map(StreamsGroupStatus::from_wire)
            .collect();
        self.endpoint_information_epoch = response.endpoint_information_epoch;
        if response.partitions_by_user_endpoint.is_some() {
            self.partitions_by_user_endpoint = response.partitions_by_user_endpoint;
        }
        self.note_topology_description(
            response.topology_description_id,
            response.topology_description_required,
            version,
        );

        // Null task lists mean "unchanged"; Kafka sends all three or none.
        let mut assignment_changed = false;
        if response.active_tasks.is_some()
            || response.standby_tasks.is_some()
            || response.warmup_tasks.is_some()
        {
            let adopt = |wire: Option<Vec<_>>, owned: &Tasks| {
                wire.map_or_else(|| owned.clone(), |ids| from_response(&ids))
            };
            let target = Assignment {
                active: adopt(response.active_tasks, &self.owned.active),
                standby: adopt(response.standby_tasks, &self.owned.standby),
                warmup: adopt(response.warmup_tasks, &self.owned.warmup),
            };
            if target != self.owned {
                debug!(
                    group = %self.config.group_id,
                    member = %self.config.member_id,
                    epoch = self.member_epoch,
                    active = target.active_count(),
                    total = target.task_count(),
                    "adopting new assignment"
                );
                self.owned = target;
                self.owned_unreported = true;
                assignment_changed = true;
            }
        }
        self.state = if self.owned_unreported {
            MemberState::Acknowledging
        } else {
            MemberState::Stable
        };
        Ok(HeartbeatOutcome::Accepted { assignment_changed })
    }

    /// Applies a failed heartbeat: an error answer, a failed coordinator lookup or a request
    /// that got no answer.
    pub fn handle_error(&mut self, error: ClientError) -> Result<HeartbeatOutcome, ClientError> {
        self.last_error = Some(error.to_string());
        // The coordinator may not have seen what was sent; tell it everything next time.
        self.send_full_state = true;
        match error.error_code() {
            Some(ErrorCode::FENCED_MEMBER_EPOCH | ErrorCode::UNKNOWN_MEMBER_ID) => {
                info!(group = %self.config.group_id, member = %self.config.member_id, epoch = self.member_epoch, error = %error, "fenced; dropping all tasks and rejoining");
                self.fence();
                return Ok(HeartbeatOutcome::Fenced { error });
            }
            Some(ErrorCode::NOT_COORDINATOR | ErrorCode::COORDINATOR_NOT_AVAILABLE) => {
                self.forget_coordinator()
            }
            Some(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS) => {}
            _ if error.is_transport() => self.forget_coordinator(),
            _ => return Err(self.fail(error)),
        }
        let after = self.backoff();
        debug!(group = %self.config.group_id, member = %self.config.member_id, error = %error, retry_in = ?after, "heartbeat failed; retrying");
        self.retry_after = Some(after);
        Ok(HeartbeatOutcome::Retry { error, after })
    }

    /// The coordinator's connection and the heartbeat version to use on it, looked up when
    /// the member has none (or its connection closed). For callers that send the requests of
    /// `prepare_heartbeat` themselves.
    pub async fn coordinator(&mut self) -> Result<(Connection, i16), ClientError> {
        if let Some((conn, version)) = &self.coordinator {
            if !conn.is_closed() {
                return Ok((conn.clone(), *version));
            }
        }
        let conn = self.client.coordinator(&self.config.group_id).await?;
        let version = heartbeat_version(&conn, self.config.heartbeat_version).await?;
        debug!(group = %self.config.group_id, member = %self.config.member_id, coordinator = conn.addr(), version, "using coordinator");
        self.coordinator = Some((conn.clone(), version));
        Ok((conn, version))
    }

    fn forget_coordinator(&mut self) {
        self.coordinator = None;
        self.client.forget_coordinator(&self.config.group_id);
    }

    fn fence(&mut self) {
        self.owned = Assignment::default();
        self.owned_unreported = false;
        self.member_epoch = JOIN_EPOCH;
        self.state = MemberState::Joining;
        self.retry_after = None;
        self.push.fenced();
    }

    fn fail(&mut self, error: ClientError) -> ClientError {
        warn!(group = %self.config.group_id, member = %self.config.member_id, epoch = self.member_epoch, error = %error, "streams member failed");
        self.state = MemberState::Failed;
        self.last_error = Some(error.to_string());
        error
    }

    fn ensure_active(&self) -> Result<(), ClientError> {
        match self.state {
            MemberState::Left | MemberState::Failed => Err(ClientError::MemberNotActive {
                member_id: self.config.member_id.clone(),
                reason: match &self.last_error {
                    Some(e) if self.state == MemberState::Failed => format!("it failed: {e}"),
                    _ => "it left the group".to_string(),
                },
            }),
            _ => Ok(()),
        }
    }

    /// Kafka's exponential back-off: `retry_backoff * 2^(n-1)` capped at `retry_backoff_max`,
    /// with ±20 % jitter.
    fn backoff(&mut self) -> Duration {
        self.consecutive_errors = self.consecutive_errors.saturating_add(1);
        backoff(
            self.config.retry_backoff,
            self.config.retry_backoff_max,
            self.consecutive_errors,
        )
    }
}

/// The back-off after `failures` consecutive failures: `first * 2^(failures-1)` capped at `max`,
/// with ±20 % jitter so that many members do not retry in lockstep.
fn backoff(first: Duration, max: Duration, failures: u32) -> Duration {
    let exponent = failures.saturating_sub(1).min(20);
    let base = first.saturating_mul(1 << exponent).min(max);
    base.mul_f64(rand::random_range(0.8..=1.2))
}

/// The heartbeat version for `conn`: the highest common one, lowered to `preferred`.
async fn heartbeat_version(conn: &Connection, preferred: Option<i16>) -> Result<i16, ClientError> {
    let highest = conn
        .negotiated_version::<StreamsGroupHeartbeatRequest>()
        .await?;
    let Some(preferred) = preferred else {
        return Ok(highest);
    };
    let server = conn
        .server_versions()
        .and_then(|v| v.range(StreamsGroupHeartbeatRequest::KEY));
    let client = <StreamsGroupHeartbeatRequest as kcoord_wire::Message>::VERSIONS;
    let lowest = server.map_or(client.min, |s| s.min.max(client.min));
    if preferred < lowest {
        return Err(ClientError::UnsupportedVersion {
            api: StreamsGroupHeartbeatRequest::KEY,
            requested: Some(preferred),
            client,
            server,
        });
    }
    Ok(preferred.min(highest))
}

/// The configured user endpoint as the heartbeat carries it.
fn wire_user_endpoint(config: &StreamsMemberConfig) -> Option<WireEndpoint> {
    config.user_endpoint.as_ref().map(|e| WireEndpoint {
        host: e.host.clone(),
        port: e.port,
        ..Default::default()
    })
}

/// The configured client tags as the heartbeat carries them.
fn wire_client_tags(config: &StreamsMemberConfig) -> Vec<KeyValue> {
    config
        .client_tags
        .iter()
        .map(|(key, value)| KeyValue {
            key: key.clone(),
            value: value.clone(),
            ..Default::default()
        })
        .collect()
}

fn millis(d: Duration) -> i32 {
    i32::try_from(d.as_millis()).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_stays_small() {
        // Benches run 10,000 members; the topology is shared, the rest is a few strings and
        // small collections.
        let size = std::mem::size_of::<StreamsMember>();
        println!("StreamsMember is {size} bytes");
        assert!(size <= 768, "{size}");
    }
}
