//! Topology description pushes (KIP-1331) as the member sees them: what the coordinator asked
//! for, and the push that answers it (the push itself is `streams/push.rs`).

use std::time::Duration;

use tracing::debug;
use uuid::Uuid;

use super::{backoff, MemberState, StreamsMember, TopologyDescriptionRequest};
use crate::streams::push::{PushCompletion, PushContext, PushOutcome, TopologyPush};

impl StreamsMember {
    /// The latest request for a topology description push not yet satisfied: set by each
    /// successful response that carries a TopologyDescriptionId (v2) or
    /// TopologyDescriptionRequired = true (v1), left alone by responses that carry neither,
    /// cleared by a stored push, a push failing for good, or fencing. Never set when
    /// `topology.description.push.enabled` is false.
    pub fn pending_topology_description(&self) -> Option<TopologyDescriptionRequest> {
        self.push.pending()
    }

    /// Takes the pending request, so that nothing is pushed for it.
    pub fn take_pending_topology_description(&mut self) -> Option<TopologyDescriptionRequest> {
        self.push.take_pending()
    }

    /// Whether a topology description is stored for pushing (push enabled and one configured).
    pub fn has_topology_description(&self) -> bool {
        self.push.has_description()
    }

    /// The push on its way, if any.
    pub fn topology_push_in_flight(&self) -> Option<TopologyDescriptionRequest> {
        self.push.in_flight()
    }

    /// How long until a push may go: `None` when there is nothing to push or one is in
    /// flight; zero when [`StreamsMember::maybe_push`] would push now (given a coordinator).
    pub fn next_push_delay(&self) -> Option<Duration> {
        self.push.delay(tokio::time::Instant::now())
    }

    /// The push to send now, when the coordinator is known, it asked for a push, a
    /// description is stored, no push is in flight and no throttle or back-off runs. The push
    /// is then in flight: send it however suits the caller (on another task, or later) and
    /// hand its completion to [`StreamsMember::handle_push_completion`]; heartbeats go on
    /// meanwhile. Never looks the coordinator up (heartbeats do).
    pub fn maybe_push(&mut self) -> Option<TopologyPush> {
        if matches!(self.state, MemberState::Left | MemberState::Failed) {
            return None;
        }
        let ctx = PushContext {
            group_id: &self.config.group_id,
            member_id: &self.config.member_id,
            topology_epoch: self.config.topology.epoch,
            coordinator: self.coordinator.as_ref().map(|(conn, _)| conn),
        };
        self.push.next(tokio::time::Instant::now(), ctx)
    }

    /// Applies the answer to a push from [`StreamsMember::maybe_push`].
    pub fn handle_push_completion(&mut self, completion: PushCompletion) -> PushOutcome {
        let (first, max) = (self.config.retry_backoff, self.config.retry_backoff_max);
        let log = (
            self.config.group_id.as_str(),
            self.config.member_id.as_str(),
        );
        let (outcome, rediscover) =
            self.push
                .complete(completion, tokio::time::Instant::now(), log, |failures| {
                    backoff(first, max, failures)
                });
        if rediscover {
            self.forget_coordinator();
        }
        outcome
    }

    /// [`StreamsMember::maybe_push`], then sends the push and applies its answer, waiting for
    /// it. `None` when no push was due. For tests and tools that step the member; a running
    /// member pushes on the side instead.
    pub async fn push_once(&mut self) -> Option<PushOutcome> {
        let push = self.maybe_push()?;
        let completion = push.send().await;
        Some(self.handle_push_completion(completion))
    }

    pub(super) fn note_topology_description(
        &mut self,
        id: Option<Uuid>,
        required: bool,
        version: i16,
    ) {
        // The all-zero uuid is Kafka's null uuid.
        let id = id.filter(|id| !id.is_nil());
        self.topology_description_id = id;
        self.topology_description_required = required;
        let request = match (id, required) {
            (Some(id), _) => Some(TopologyDescriptionRequest::Id(id)),
            (None, true) => Some(TopologyDescriptionRequest::Required),
            (None, false) => None,
        };
        if let Some(request) = request {
            debug!(group = %self.config.group_id, member = %self.config.member_id, version, ?request, "coordinator asks for the topology description");
            self.push.requested(request);
        }
    }
}
