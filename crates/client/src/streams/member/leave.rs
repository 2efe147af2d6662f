//! Leaving the group: a heartbeat with a leave epoch, retried while the coordinator moves or
//! loads.

use kcoord_wire::messages::StreamsGroupHeartbeatRequest;
use kcoord_wire::{ErrorCode, Request};
use tracing::{debug, info};

use super::{MemberState, StreamsMember, LEAVE_EPOCH, STATIC_LEAVE_EPOCH};
use crate::error::ClientError;
use crate::streams::assignment::Assignment;

/// Attempts a leave makes before giving up on a coordinator that moves or is loading.
const LEAVE_ATTEMPTS: u32 = 3;

impl StreamsMember {
    /// Leaves the group as Kafka Streams' `close()` does by default: a static member with
    /// epoch -2 (it may come back under its instance id), a dynamic one with -1. The member
    /// is [`MemberState::Left`] afterwards whatever the answer.
    pub async fn leave(&mut self) -> Result<(), ClientError> {
        let epoch = if self.config.instance_id.is_some() {
            STATIC_LEAVE_EPOCH
        } else {
            LEAVE_EPOCH
        };
        self.leave_with_epoch(epoch).await
    }

    /// Leaves with epoch -1, which also removes a static member for good.
    pub async fn leave_permanently(&mut self) -> Result<(), ClientError> {
        self.leave_with_epoch(LEAVE_EPOCH).await
    }

    async fn leave_with_epoch(&mut self, epoch: i32) -> Result<(), ClientError> {
        match self.state {
            MemberState::Left | MemberState::Failed => return Ok(()),
            _ if self.requests == 0 => {
                self.state = MemberState::Left;
                return Ok(());
            }
            _ => {}
        }
        let mut result = Ok(());
        for attempt in 1..=LEAVE_ATTEMPTS {
            result = self.send_leave(epoch).await;
            match &result {
                Err(e)
                    if attempt < LEAVE_ATTEMPTS
                        && (e.is_coordinator_moved()
                            || e.is_transport()
                            || e.error_code() == Some(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS)) =>
                {
                    if e.error_code() != Some(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS) {
                        self.forget_coordinator();
                    }
                    let after = self.backoff();
                    debug!(group = %self.config.group_id, member = %self.config.member_id, error = %e, retry_in = ?after, "leave failed; retrying");
                    tokio::time::sleep(after).await;
                }
                _ => break,
            }
        }
        info!(group = %self.config.group_id, member = %self.config.member_id, epoch, ok = result.is_ok(), "left the group");
        self.state = MemberState::Left;
        self.owned = Assignment::default();
        self.member_epoch = epoch;
        self.coordinator = None;
        result
    }

    async fn send_leave(&mut self, epoch: i32) -> Result<(), ClientError> {
        let (conn, version) = self.coordinator().await?;
        let request = StreamsGroupHeartbeatRequest {
            group_id: self.config.group_id.clone(),
            member_id: self.config.member_id.clone(),
            member_epoch: epoch,
            endpoint_information_epoch: self.endpoint_information_epoch,
            instance_id: self.config.instance_id.clone(),
            rebalance_timeout_ms: -1,
            shutdown_application: self.shutdown_requested,
            ..Default::default()
        };
        self.requests += 1;
        let response = conn.send(request, version).await?;
        if let Some(hook) = &self.config.on_response {
            hook(&response, version);
        }
        ClientError::check(
            StreamsGroupHeartbeatRequest::KEY,
            response.error_code,
            response.error_message.as_deref(),
        )
    }
}
