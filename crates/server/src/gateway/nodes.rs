//! Several kcoord nodes in front of one cluster share the coordinator shards without a
//! consensus of their own: they are the members of a classic group in the cluster
//! (`kcoord-coordinator-nodes-<topic>`, protocol type `kcoord`), and the group's assignment says
//! which node serves which shard. The cluster's group coordinator notices a node that leaves or
//! stops heartbeating (its session timeout) and rebalances; the member it names leader computes
//! the assignment ([`assign`]), which every member gets whole, so each node knows every shard's
//! owner (FindCoordinator points clients at it).
//!
//! The assignment keeps a shard where it is while its node stays and carries no more than its
//! share, so adding a node moves only the shards it takes. A node serves its shards as soon as
//! it learns them; the previous owner of a moved shard learns it lost the shard at the same
//! rebalance, and the new owner's claim fences it in any case (`runtime/upstream_log.rs`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kcoord_client::{Client, ClientError, Connection};
use kcoord_wire::messages::join_group_request::JoinGroupRequestProtocol;
use kcoord_wire::messages::leave_group_request::MemberIdentity;
use kcoord_wire::messages::sync_group_request::SyncGroupRequestAssignment;
use kcoord_wire::messages::{
    HeartbeatRequest, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, SyncGroupRequest,
};
use kcoord_wire::{ErrorCode, Request};
use serde::{Deserialize, Serialize};

pub use crate::runtime::ownership::{NodeEndpoints, Ownership, ShardOwners};
use tokio::sync::watch;
use tracing::{info, warn};

/// The group's protocol type and its one protocol.
const PROTOCOL_TYPE: &str = "kcoord";
const PROTOCOL: &str = "coordinator-shards-v1";
/// JoinGroup v4 and on want a member id first (KIP-394); v5 is what every cluster since 2.3
/// serves.
const JOIN_GROUP_VERSION: i16 = 5;
const SYNC_GROUP_VERSION: i16 = 3;
const HEARTBEAT_VERSION: i16 = 3;
const LEAVE_GROUP_VERSION: i16 = 3;

/// What a node says of itself when it joins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct JoinMetadata {
    endpoints: NodeEndpoints,
    /// The shards it serves now, kept where possible.
    owned: Vec<usize>,
}

/// The nodes' membership settings.
#[derive(Debug, Clone)]
pub struct Membership {
    pub group_id: String,
    pub shards: usize,
    pub endpoints: NodeEndpoints,
    pub session_timeout: Duration,
}

/// Assigns `shards` shards to the members (each with the shards it serves now): a shard stays
/// with its node while that node is a member and under its share (the shard count over the
/// members, rounded up for the first ones); the others go to the members with the fewest.
pub fn assign(shards: usize, members: &BTreeMap<String, Vec<usize>>) -> Vec<String> {
    let ids: Vec<&String> = members.keys().collect();
    if ids.is_empty() {
        return Vec::new();
    }
    let base = shards / ids.len();
    let extra = shards % ids.len();
    // The first `extra` members (in id order) may hold one more.
    let share =
        |member: &String| base + usize::from(ids.iter().position(|m| *m == member) < Some(extra));
    let mut owners: Vec<Option<String>> = vec![None; shards];
    let mut held: BTreeMap<&String, usize> = ids.iter().map(|m| (*m, 0)).collect();
    for (member, owned) in members {
        for &shard in owned {
            let count = held.get(member).copied().unwrap_or(0);
            if shard < shards && owners[shard].is_none() && count < share(member) {
                owners[shard] = Some(member.clone());
                held.insert(member, count + 1);
            }
        }
    }
    for owner in owners.iter_mut().filter(|o| o.is_none()) {
        let Some((member, _)) = held
            .iter()
            .filter(|(m, count)| **count < share(m))
            .min_by_key(|(m, count)| (**count, **m))
        else {
            break;
        };
        let member = *member;
        *owner = Some(member.clone());
        if let Some(count) = held.get_mut(member) {
            *count += 1;
        }
    }
    owners.into_iter().map(Option::unwrap_or_default).collect()
}

/// Takes part in the nodes' group until `stop` (then leaves it), publishing every assignment
/// to `gateway`'s [`super::Gateway::ownership`].
pub async fn run(
    bootstrap: String,
    config: kcoord_client::ClientConfig,
    membership: Membership,
    gateway: Arc<super::Gateway>,
    mut stop: watch::Receiver<bool>,
) {
    let published = gateway.ownership_sender();
    let Some(client) = connect(&bootstrap, config, &mut stop).await else {
        return;
    };
    let mut member = Member {
        client,
        membership,
        member_id: String::new(),
        generation: -1,
    };
    let mut backoff = Duration::from_millis(100);
    loop {
        let outcome = tokio::select! {
            outcome = member.rebalance_and_heartbeat(published) => outcome,
            _ = crate::support::shutdown::stopped(&mut stop) => break,
        };
        match outcome {
            Ok(()) => backoff = Duration::from_millis(100),
            Err(e) => {
                // A coordinator that is loading or moving is routine (a fresh cluster, a broker
                // restarting); anything else is worth a WARN.
                if e.is_retriable() {
                    info!(error = %e, group = %member.membership.group_id, "the kcoord nodes' group is not reachable yet; joining again");
                } else {
                    warn!(error = %e, group = %member.membership.group_id, "the kcoord nodes' group failed; joining again");
                }
                if e.error_code() == Some(ErrorCode::UNKNOWN_MEMBER_ID) {
                    member.member_id.clear();
                }
                member
                    .client
                    .forget_coordinator(&member.membership.group_id);
                tokio::select! {
                    () = tokio::time::sleep(backoff) => {}
                    _ = crate::support::shutdown::stopped(&mut stop) => break,
                }
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
    member.leave().await;
}

/// A client of the cluster, connecting again with a growing backoff until it answers;
/// `None` on `stop`.
async fn connect(
    bootstrap: &str,
    config: kcoord_client::ClientConfig,
    stop: &mut watch::Receiver<bool>,
) -> Option<Client> {
    let mut backoff = Duration::from_millis(100);
    loop {
        let connected = tokio::select! {
            connected = Client::connect(bootstrap, config.clone()) => connected,
            _ = crate::support::shutdown::stopped(stop) => return None,
        };
        match connected {
            Ok(client) => return Some(client),
            Err(e) => warn!(error = %e, "cannot reach the cluster for the kcoord nodes' group yet"),
        }
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            _ = crate::support::shutdown::stopped(stop) => return None,
        }
        backoff = (backoff * 2).min(Duration::from_secs(5));
    }
}

struct Member {
    client: Client,
    membership: Membership,
    member_id: String,
    generation: i32,
}

impl Member {
    /// Joins, syncs, publishes the assignment, then heartbeats until the group rebalances
    /// (`Ok`) or fails.
    async fn rebalance_and_heartbeat(
        &mut self,
        published: &watch::Sender<Ownership>,
    ) -> Result<(), ClientError> {
        let conn = self.client.coordinator(&self.membership.group_id).await?;
        let owned = {
            let now = published.borrow();
            (0..self.membership.shards)
                .filter(|s| now.owns(*s) == Some(true))
                .collect()
        };
        let joined = self.join(&conn, owned).await?;
        let owners = self.sync(&conn, &joined).await?;
        let mine: Vec<usize> = (0..owners.owners.len())
            .filter(|s| owners.owners[*s] == self.member_id)
            .collect();
        info!(
            group = %self.membership.group_id,
            generation = self.generation,
            member = %self.member_id,
            nodes = owners.nodes.len(),
            owned = ?mine,
            "the kcoord nodes' group assigned the coordinator shards"
        );
        published.send_replace(Ownership {
            owners: Some(Arc::new(owners)),
            me: self.member_id.clone(),
        });
        self.heartbeat_until_rebalance(&conn).await
    }

    async fn join(
        &mut self,
        conn: &Connection,
        owned: Vec<usize>,
    ) -> Result<JoinGroupResponse, ClientError> {
        let metadata = serde_json::to_vec(&JoinMetadata {
            endpoints: self.membership.endpoints.clone(),
            owned,
        })
        .map_err(|e| ClientError::InvalidArgument(e.to_string()))?;
        let session = millis(self.membership.session_timeout);
        loop {
            let request = JoinGroupRequest {
                group_id: self.membership.group_id.clone(),
                session_timeout_ms: session,
                rebalance_timeout_ms: session,
                member_id: self.member_id.clone(),
                protocol_type: PROTOCOL_TYPE.to_owned(),
                protocols: vec![JoinGroupRequestProtocol {
                    name: PROTOCOL.to_owned(),
                    metadata: Bytes::from(metadata.clone()),
                    ..Default::default()
                }],
                ..Default::default()
            };
            let response = conn.send(request, JOIN_GROUP_VERSION).await?;
            if response.error_code == ErrorCode::MEMBER_ID_REQUIRED.code() {
                self.member_id = response.member_id;
                continue;
            }
            ClientError::check(JoinGroupRequest::KEY, response.error_code, None)?;
            self.member_id = response.member_id.clone();
            self.generation = response.generation_id;
            return Ok(response);
        }
    }

    /// SyncGroup; as the leader, with the assignment of every member.
    async fn sync(
        &self,
        conn: &Connection,
        joined: &JoinGroupResponse,
    ) -> Result<ShardOwners, ClientError> {
        let assignments = if joined.leader == self.member_id {
            leader_assignments(self.membership.shards, joined)?
        } else {
            Vec::new()
        };
        let request = SyncGroupRequest {
            group_id: self.membership.group_id.clone(),
            generation_id: self.generation,
            member_id: self.member_id.clone(),
            protocol_type: Some(PROTOCOL_TYPE.to_owned()),
            protocol_name: Some(PROTOCOL.to_owned()),
            assignments,
            ..Default::default()
        };
        let response = conn.send(request, SYNC_GROUP_VERSION).await?;
        ClientError::check(SyncGroupRequest::KEY, response.error_code, None)?;
        serde_json::from_slice(&response.assignment).map_err(|e| {
            ClientError::Protocol(format!("the kcoord nodes' assignment does not decode: {e}"))
        })
    }

    async fn heartbeat_until_rebalance(&self, conn: &Connection) -> Result<(), ClientError> {
        let interval = (self.membership.session_timeout / 5).max(Duration::from_millis(100));
        loop {
            tokio::time::sleep(interval).await;
            let request = HeartbeatRequest {
                group_id: self.membership.group_id.clone(),
                generation_id: self.generation,
                member_id: self.member_id.clone(),
                ..Default::default()
            };
            let response = conn.send(request, HEARTBEAT_VERSION).await?;
            if response.error_code == ErrorCode::REBALANCE_IN_PROGRESS.code() {
                return Ok(());
            }
            ClientError::check(HeartbeatRequest::KEY, response.error_code, None)?;
        }
    }

    /// Leaves the group, so the others take this node's shards without waiting for its
    /// session to time out.
    async fn leave(&self) {
        if self.member_id.is_empty() {
            return;
        }
        let left = async {
            let conn = self.client.coordinator(&self.membership.group_id).await?;
            let request = LeaveGroupRequest {
                group_id: self.membership.group_id.clone(),
                members: vec![MemberIdentity {
                    member_id: self.member_id.clone(),
                    ..Default::default()
                }],
                ..Default::default()
            };
            conn.send(request, LEAVE_GROUP_VERSION).await
        };
        match tokio::time::timeout(Duration::from_secs(5), left).await {
            Ok(Ok(_)) => info!(group = %self.membership.group_id, "left the kcoord nodes' group"),
            Ok(Err(e)) => warn!(error = %e, "could not leave the kcoord nodes' group; the others take its shards after its session timeout"),
            Err(_) => warn!("leaving the kcoord nodes' group timed out; the others take its shards after its session timeout"),
        }
    }
}

/// The leader's SyncGroup assignments: every member gets the whole map.
fn leader_assignments(
    shards: usize,
    joined: &JoinGroupResponse,
) -> Result<Vec<SyncGroupRequestAssignment>, ClientError> {
    let mut owned = BTreeMap::new();
    let mut nodes = BTreeMap::new();
    for member in &joined.members {
        let metadata: JoinMetadata = serde_json::from_slice(&member.metadata).map_err(|e| {
            ClientError::Protocol(format!(
                "member {} of the kcoord nodes' group sent metadata that does not decode: {e}",
                member.member_id
            ))
        })?;
        owned.insert(member.member_id.clone(), metadata.owned);
        nodes.insert(member.member_id.clone(), metadata.endpoints);
    }
    let owners = ShardOwners {
        owners: assign(shards, &owned),
        nodes,
    };
    let encoded = Bytes::from(
        serde_json::to_vec(&owners).map_err(|e| ClientError::InvalidArgument(e.to_string()))?,
    );
    Ok(joined
        .members
        .iter()
        .map(|m| SyncGroupRequestAssignment {
            member_id: m.member_id.clone(),
            assignment: encoded.clone(),
            ..Default::default()
        })
        .collect())
}

fn millis(d: Duration) -> i32 {
    i32::try_from(d.as_millis()).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(entries: &[(&str, &[usize])]) -> BTreeMap<String, Vec<usize>> {
        entries
            .iter()
            .map(|(m, owned)| ((*m).to_owned(), owned.to_vec()))
            .collect()
    }

    fn counts(owners: &[String]) -> BTreeMap<&str, usize> {
        let mut counts = BTreeMap::new();
        for o in owners {
            *counts.entry(o.as_str()).or_default() += 1;
        }
        counts
    }

    #[test]
    fn one_node_serves_every_shard() {
        let owners = assign(4, &members(&[("a", &[])]));
        assert_eq!(owners, ["a", "a", "a", "a"]);
    }

    #[test]
    fn shards_spread_evenly_and_stay_where_they_are() {
        let owners = assign(5, &members(&[("a", &[0, 1, 2, 3, 4]), ("b", &[])]));
        // a keeps its first three (its share of 5 over 2, rounded up), b takes the rest.
        assert_eq!(owners, ["a", "a", "a", "b", "b"]);
        let third = members(&[("a", &[0, 1, 2]), ("b", &[3, 4]), ("c", &[])]);
        let owners = assign(5, &third);
        assert_eq!(
            counts(&owners),
            BTreeMap::from([("a", 2), ("b", 2), ("c", 1)])
        );
        // Only the shard c needed moved: a's 0 and 1, b's 3 and 4 stay.
        assert_eq!(owners[0], "a");
        assert_eq!(owners[1], "a");
        assert_eq!(owners[3], "b");
        assert_eq!(owners[4], "b");
    }

    #[test]
    fn a_node_that_left_gives_its_shards_to_the_others() {
        let owners = assign(4, &members(&[("a", &[0, 1]), ("c", &[])]));
        assert_eq!(owners[0], "a");
        assert_eq!(owners[1], "a");
        assert_eq!(counts(&owners), BTreeMap::from([("a", 2), ("c", 2)]));
        // Shards claimed twice (a stale view) or past the count are given once.
        let owners = assign(2, &members(&[("a", &[0, 1, 7]), ("b", &[0, 1])]));
        assert_eq!(counts(&owners), BTreeMap::from([("a", 1), ("b", 1)]));
        assert!(assign(3, &BTreeMap::new()).is_empty());
    }
}
