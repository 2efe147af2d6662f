//! Pushing the topology description to the coordinator: the client side of KIP-1331.
//!
//! The coordinator asks for a push in a heartbeat response: heartbeat v2+ carries a
//! TopologyDescriptionId (pushed back with UpdateStreamsGroupTopologyDescription, key 95), v1
//! sets TopologyDescriptionRequired (Kafka 4.4; pushed with
//! StreamsGroupTopologyDescriptionUpdate, key 93, tagged with the member's topology epoch),
//! v0 never asks. The member keeps the latest request and pushes when
//! - a coordinator is known (the heartbeat loop finds it; a push never looks it up),
//! - a request is pending,
//! - a description is stored (push enabled and one configured),
//! - no push is in flight, and no throttle or back-off is running.
//!
//! A push is a [`TopologyPush`] detached from the member: whoever drives the member sends it
//! on the side ([`TopologyPush::send`]) and hands the [`PushCompletion`] back, so a push whose
//! answer is slow or never comes holds up no heartbeat. How a completion is treated
//! (specification, "Error Handling and Retries"; Kafka's
//! `StreamsGroupTopologyDescriptionRequestManager`):
//! - NONE: stored; the request is done.
//! - NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE: the coordinator is forgotten (the next
//!   heartbeat looks it up again); the request is kept.
//! - COORDINATOR_LOAD_IN_PROGRESS, no answer (connection lost, timeout): the request is kept.
//! - anything else (TOPOLOGY_DESCRIPTION_TOO_LARGE, TOPOLOGY_DESCRIPTION_UPDATE_FAILED,
//!   INVALID_REQUEST, UNSUPPORTED_VERSION, GROUP_ID_NOT_FOUND, GROUP_AUTHORIZATION_FAILED,
//!   UNKNOWN_MEMBER_ID, an API the coordinator does not offer, ...): the request is dropped
//!   and logged at WARN; nothing is retried until a heartbeat asks again.
//!
//! A kept request is retried after the member's retry back-off (exponential, as Kafka's
//! request managers do); a non-zero ThrottleTimeMs holds the next push back by that long.

use std::sync::Arc;
use std::time::Duration;

use kcoord_wire::messages::streams_group_topology_description_update_request::TopologyDescription as KafkaTopologyDescription;
use kcoord_wire::messages::update_streams_group_topology_description_request::TopologyDescription as SpecTopologyDescription;
use kcoord_wire::messages::{
    StreamsGroupTopologyDescriptionUpdateRequest, UpdateStreamsGroupTopologyDescriptionRequest,
};
use kcoord_wire::{ErrorCode, Request};
use tokio::time::Instant;
use tracing::{debug, info, warn};

use crate::connection::Connection;
use crate::error::{api_name, ClientError};
use crate::streams::member::TopologyDescriptionRequest;
use crate::topology::WireTopology;

/// The client configuration key (Kafka Streams' name) behind
/// [`StreamsMemberConfig::topology_description_push_enabled`](crate::streams::StreamsMemberConfig).
pub const TOPOLOGY_DESCRIPTION_PUSH_ENABLED_CONFIG: &str = "topology.description.push.enabled";

/// One push on its way, detached from the member that prepared it.
#[derive(Debug)]
pub struct TopologyPush {
    conn: Connection,
    id: TopologyDescriptionRequest,
    request: PushRequest,
}

#[derive(Debug)]
enum PushRequest {
    /// Key 95, the specification's RPC, for a TopologyDescriptionId.
    Spec(UpdateStreamsGroupTopologyDescriptionRequest),
    /// Key 93, Kafka 4.4's RPC, for TopologyDescriptionRequired.
    Kafka(StreamsGroupTopologyDescriptionUpdateRequest),
}

/// The answer to a push, whatever the error code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushResponse {
    pub throttle_time_ms: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
}

/// A finished push, to hand back to [`StreamsMember::handle_push_completion`](crate::streams::StreamsMember::handle_push_completion).
#[derive(Debug)]
pub struct PushCompletion {
    /// The request the push answered.
    pub id: TopologyDescriptionRequest,
    /// Key 95 or 93.
    pub api_key: i16,
    /// `Err` when no answer came (or the coordinator does not offer the API).
    pub result: Result<PushResponse, ClientError>,
}

/// What a push achieved.
#[derive(Debug)]
pub enum PushOutcome {
    /// The coordinator stored the description.
    Stored,
    /// A retriable error; the request is kept and the next push waits `after`.
    Retry { error: ClientError, after: Duration },
    /// Any other error; the request was dropped until the coordinator asks again.
    Dropped { error: ClientError },
}

/// The last push as a running member publishes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushReport {
    /// Which push this is (1 for the member's first), so that two equal results in a row
    /// are told apart.
    pub seq: u64,
    pub id: TopologyDescriptionRequest,
    pub api_key: i16,
    pub result: PushResult,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushResult {
    Stored,
    Retrying { error: String, after: Duration },
    Dropped { error: String },
}

impl std::fmt::Display for PushResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PushResult::Stored => f.write_str("stored"),
            PushResult::Retrying { error, after } => {
                write!(f, "failed, retrying in {after:?}: {error}")
            }
            PushResult::Dropped { error } => {
                write!(f, "dropped until the coordinator asks again: {error}")
            }
        }
    }
}

impl TopologyPush {
    /// The coordinator request this push answers.
    pub fn id(&self) -> TopologyDescriptionRequest {
        self.id
    }

    /// Key 95 (UpdateStreamsGroupTopologyDescription) or 93 (StreamsGroupTopologyDescriptionUpdate).
    pub fn api_key(&self) -> i16 {
        match self.request {
            PushRequest::Spec(_) => UpdateStreamsGroupTopologyDescriptionRequest::KEY,
            PushRequest::Kafka(_) => StreamsGroupTopologyDescriptionUpdateRequest::KEY,
        }
    }

    /// The coordinator's address.
    pub fn coordinator(&self) -> &str {
        self.conn.addr()
    }

    /// Sends the push and waits for its answer (up to the request timeout). Never fails: a
    /// missing answer is the completion's `Err`. An API the coordinator did not advertise is
    /// not sent at all and completes as UnsupportedVersion, which a push would get anyway.
    pub async fn send(self) -> PushCompletion {
        let (id, api_key) = (self.id, self.api_key());
        let result = match self.request {
            PushRequest::Spec(request) => {
                send_one(&self.conn, request, |r| {
                    (r.throttle_time_ms, r.error_code, r.error_message)
                })
                .await
            }
            PushRequest::Kafka(request) => {
                send_one(&self.conn, request, |r| {
                    (r.throttle_time_ms, r.error_code, r.error_message)
                })
                .await
            }
        };
        PushCompletion {
            id,
            api_key,
            result,
        }
    }
}

async fn send_one<R: Request>(
    conn: &Connection,
    request: R,
    fields: impl FnOnce(R::Response) -> (i32, i16, Option<String>),
) -> Result<PushResponse, ClientError> {
    let Some(version) = conn.version_for::<R>() else {
        let server = conn.server_versions().and_then(|v| v.range(R::KEY));
        return Err(ClientError::UnsupportedVersion {
            api: R::KEY,
            requested: None,
            client: R::VERSIONS,
            server,
        });
    };
    let (throttle_time_ms, error_code, error_message) = fields(conn.send(request, version).await?);
    Ok(PushResponse {
        throttle_time_ms,
        error_code,
        error_message,
    })
}

/// What the member needs to prepare a push.
pub(crate) struct PushContext<'a> {
    pub group_id: &'a str,
    pub member_id: &'a str,
    pub topology_epoch: i32,
    /// The coordinator's connection, if one is known and open.
    pub coordinator: Option<&'a Connection>,
}

/// How a completion is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Disposition {
    Stored,
    /// Keep the request, forget the coordinator.
    Rediscover,
    /// Keep the request.
    Retry,
    /// Drop the request.
    Drop,
}

fn disposition(result: &Result<PushResponse, ClientError>) -> Disposition {
    match result {
        Ok(response) => match ErrorCode::from_code(response.error_code) {
            Some(ErrorCode::NONE) => Disposition::Stored,
            Some(ErrorCode::NOT_COORDINATOR | ErrorCode::COORDINATOR_NOT_AVAILABLE) => {
                Disposition::Rediscover
            }
            Some(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS) => Disposition::Retry,
            _ => Disposition::Drop,
        },
        // A broken connection: the coordinator may have moved; a timeout: it may be busy.
        Err(ClientError::Io { .. } | ClientError::ConnectionClosed { .. }) => {
            Disposition::Rediscover
        }
        Err(ClientError::Timeout { .. }) => Disposition::Retry,
        Err(_) => Disposition::Drop,
    }
}

/// The member's push state. Sans-IO: the member feeds it heartbeat requests and completions.
#[derive(Debug)]
pub(crate) struct PushState {
    /// `topology.description.push.enabled`; when false nothing is stored or kept.
    enabled: bool,
    /// The description converted at start; `None` when disabled or none was configured.
    description: Option<Arc<WireTopology>>,
    /// The latest request from the coordinator not yet satisfied.
    pending: Option<TopologyDescriptionRequest>,
    in_flight: Option<TopologyDescriptionRequest>,
    /// Throttle or back-off: no push before this.
    not_before: Option<Instant>,
    consecutive_failures: u32,
    sent: u64,
    last: Option<PushReport>,
}

impl PushState {
    pub(crate) fn new(enabled: bool, description: Option<Arc<WireTopology>>) -> PushState {
        PushState {
            enabled,
            description: description.filter(|_| enabled),
            pending: None,
            in_flight: None,
            not_before: None,
            consecutive_failures: 0,
            sent: 0,
            last: None,
        }
    }

    /// A heartbeat response asked for a push (ignored when pushing is disabled).
    pub(crate) fn requested(&mut self, request: TopologyDescriptionRequest) {
        if self.enabled {
            self.pending = Some(request);
        }
    }

    pub(crate) fn pending(&self) -> Option<TopologyDescriptionRequest> {
        self.pending
    }

    pub(crate) fn take_pending(&mut self) -> Option<TopologyDescriptionRequest> {
        self.pending.take()
    }

    /// The member was fenced: the request was for a membership that is gone (as Kafka).
    pub(crate) fn fenced(&mut self) {
        self.pending = None;
    }

    pub(crate) fn in_flight(&self) -> Option<TopologyDescriptionRequest> {
        self.in_flight
    }

    pub(crate) fn sent(&self) -> u64 {
        self.sent
    }

    pub(crate) fn last(&self) -> Option<&PushReport> {
        self.last.as_ref()
    }

    pub(crate) fn has_description(&self) -> bool {
        self.description.is_some()
    }

    /// How long until a push could go: `None` when there is nothing to push or one is in
    /// flight, zero when one may go now (given a coordinator).
    pub(crate) fn delay(&self, now: Instant) -> Option<Duration> {
        if self.in_flight.is_some() || self.pending.is_none() || self.description.is_none() {
            return None;
        }
        Some(
            self.not_before
                .map_or(Duration::ZERO, |at| at.saturating_duration_since(now)),
        )
    }

    /// The push to send now, if every condition holds; it is then in flight.
    pub(crate) fn next(&mut self, now: Instant, ctx: PushContext<'_>) -> Option<TopologyPush> {
        if self.delay(now) != Some(Duration::ZERO) {
            return None;
        }
        let conn = ctx.coordinator.filter(|c| !c.is_closed())?;
        let (id, description) = (self.pending?, self.description.as_deref()?);
        let request = match id {
            TopologyDescriptionRequest::Id(uuid) => {
                PushRequest::Spec(UpdateStreamsGroupTopologyDescriptionRequest {
                    group_id: ctx.group_id.to_string(),
                    topology_description_id: uuid,
                    topology_description: SpecTopologyDescription::from(description),
                    ..Default::default()
                })
            }
            TopologyDescriptionRequest::Required => {
                PushRequest::Kafka(StreamsGroupTopologyDescriptionUpdateRequest {
                    group_id: ctx.group_id.to_string(),
                    member_id: ctx.member_id.to_string(),
                    topology_epoch: ctx.topology_epoch,
                    topology_description: KafkaTopologyDescription::from(description),
                    ..Default::default()
                })
            }
        };
        self.in_flight = Some(id);
        self.sent += 1;
        let push = TopologyPush {
            conn: conn.clone(),
            id,
            request,
        };
        info!(group = ctx.group_id, member = ctx.member_id, ?id, api = %api_name(push.api_key()), coordinator = conn.addr(), "pushing the topology description");
        Some(push)
    }

    /// Applies a completion. Returns the outcome and whether the coordinator must be looked up
    /// again. `backoff` gives the next retry back-off (the member's exponential schedule for
    /// `failures` consecutive failures).
    pub(crate) fn complete(
        &mut self,
        completion: PushCompletion,
        now: Instant,
        log: (&str, &str),
        backoff: impl FnOnce(u32) -> Duration,
    ) -> (PushOutcome, bool) {
        let (group, member) = log;
        let PushCompletion {
            id,
            api_key,
            result,
        } = completion;
        if self.in_flight == Some(id) {
            self.in_flight = None;
        }
        let throttle = match &result {
            Ok(r) => Duration::from_millis(u64::try_from(r.throttle_time_ms).unwrap_or(0)),
            Err(_) => Duration::ZERO,
        };
        let disposition = disposition(&result);
        let error = result
            .and_then(|r| ClientError::check(api_key, r.error_code, r.error_message.as_deref()));
        let mut hold = throttle;
        let outcome = match (disposition, error) {
            (Disposition::Stored, _) => {
                info!(group, member, ?id, api = %api_name(api_key), "topology description stored");
                self.consecutive_failures = 0;
                self.clear(id);
                PushOutcome::Stored
            }
            (Disposition::Rediscover | Disposition::Retry, Err(error)) => {
                self.consecutive_failures = self.consecutive_failures.saturating_add(1);
                let after = backoff(self.consecutive_failures).max(throttle);
                hold = after;
                debug!(group, member, ?id, error = %error, retry_in = ?after, "topology description push failed; the request is kept");
                PushOutcome::Retry { error, after }
            }
            (_, Err(error)) => {
                warn!(group, member, ?id, error = %error, "topology description push failed; not retrying until the coordinator asks again");
                self.consecutive_failures = 0;
                self.clear(id);
                PushOutcome::Dropped { error }
            }
            // A non-stored disposition always comes with an error.
            (_, Ok(())) => PushOutcome::Stored,
        };
        self.not_before = (hold > Duration::ZERO).then(|| now + hold);
        let result = match &outcome {
            PushOutcome::Stored => PushResult::Stored,
            PushOutcome::Retry { error, after } => PushResult::Retrying {
                error: error.to_string(),
                after: *after,
            },
            PushOutcome::Dropped { error } => PushResult::Dropped {
                error: error.to_string(),
            },
        };
        self.last = Some(PushReport {
            seq: self.sent,
            id,
            api_key,
            result,
        });
        (outcome, disposition == Disposition::Rediscover)
    }

    /// Done with `id`: forget it, unless a newer request came in the meantime (that one still
    /// needs its push).
    fn clear(&mut self, id: TopologyDescriptionRequest) {
        if self.pending == Some(id) {
            self.pending = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use kcoord_wire::Message;

    fn response(error_code: i16) -> Result<PushResponse, ClientError> {
        Ok(PushResponse {
            throttle_time_ms: 0,
            error_code,
            error_message: None,
        })
    }

    #[test]
    fn completions_are_classified_as_the_specification_says() {
        use Disposition::*;
        let cases = [
            (0, Stored),
            (16, Rediscover), // NOT_COORDINATOR
            (15, Rediscover), // COORDINATOR_NOT_AVAILABLE
            (14, Retry),      // COORDINATOR_LOAD_IN_PROGRESS
            (135, Drop),      // TOPOLOGY_DESCRIPTION_UPDATE_FAILED
            (137, Drop),      // TOPOLOGY_DESCRIPTION_TOO_LARGE
            (42, Drop),       // INVALID_REQUEST
            (35, Drop),       // UNSUPPORTED_VERSION
            (69, Drop),       // GROUP_ID_NOT_FOUND
            (30, Drop),       // GROUP_AUTHORIZATION_FAILED
            (25, Drop),       // UNKNOWN_MEMBER_ID
            (-1, Drop),       // UNKNOWN_SERVER_ERROR
            (999, Drop),      // a code this client does not know
        ];
        for (code, expected) in cases {
            assert_eq!(disposition(&response(code)), expected, "error code {code}");
        }
        let closed = ClientError::ConnectionClosed {
            addr: "a".into(),
            reason: "gone".into(),
        };
        assert_eq!(disposition(&Err(closed)), Rediscover);
        let timeout = ClientError::Timeout {
            addr: "a".into(),
            operation: "x".into(),
            after: Duration::from_secs(1),
        };
        assert_eq!(disposition(&Err(timeout)), Retry);
        let unsupported = ClientError::UnsupportedVersion {
            api: 95,
            requested: None,
            client: UpdateStreamsGroupTopologyDescriptionRequest::VERSIONS,
            server: None,
        };
        assert_eq!(disposition(&Err(unsupported)), Drop);
    }

    #[test]
    fn nothing_is_pushed_when_disabled_or_without_a_description() {
        let mut disabled = PushState::new(false, Some(Arc::new(WireTopology::default())));
        disabled.requested(TopologyDescriptionRequest::Required);
        assert_eq!(
            (disabled.pending(), disabled.has_description()),
            (None, false)
        );
        let mut empty = PushState::new(true, None);
        empty.requested(TopologyDescriptionRequest::Required);
        assert_eq!(empty.delay(Instant::now()), None);
    }
}
