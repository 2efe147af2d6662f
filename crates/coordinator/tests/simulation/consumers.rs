//! The consumer group's simulated KIP-848 consumers (the shared [`Consumer`] of the consumer
//! group tests, which owns exactly what its last answer assigned it, as Kafka's consumer does
//! once it has revoked and assigned): joins, heartbeats that report the owned partitions or
//! (steady) nothing, leaves (-1, then back under the same member id or a new one, as an
//! unsubscribe or a restart; -2 for the static member, which comes back under a new member
//! id and its instance id), and a rejoin at epoch 0 with nothing owned when fenced or unknown.
use std::collections::BTreeSet;

use kcoord_wire::messages::consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest;
use kcoord_wire::messages::consumer_group_heartbeat_response::ConsumerGroupHeartbeatResponse;

use super::clients::TOPICS;
use crate::consumer_support::Consumer;

pub const CONSUMER_GROUP: &str = "consumers";
pub const CONSUMERS: usize = 3;
/// How long a consumer may take to revoke: short, so that slow ones are fenced.
const REBALANCE_TIMEOUT_MS: i32 = 2_000;

pub struct ConsumerClient {
    pub name: String,
    pub group: &'static str,
    pub consumer: Consumer,
    pub waiting: bool,
    /// The incarnation of the group its epoch and partitions are of.
    pub incarnation: u64,
    restarts: u32,
}

impl ConsumerClient {
    pub fn all() -> Vec<ConsumerClient> {
        let topics: Vec<&str> = TOPICS.iter().map(|(t, _)| *t).collect();
        Self::of(CONSUMER_GROUP, CONSUMERS, &topics, true)
    }

    /// `count` consumers of `group` subscribed to `topics`, the last static if `with_static`.
    pub fn of(
        group: &'static str,
        count: usize,
        topics: &[&str],
        with_static: bool,
    ) -> Vec<ConsumerClient> {
        (0..count)
            .map(|i| {
                let name = format!("{group}/m{i}");
                let mut consumer = Consumer::new(&member_id(&name, 0), topics);
                if with_static && i + 1 == count {
                    consumer.instance_id = Some(format!("{group}-static"));
                }
                ConsumerClient {
                    name,
                    group,
                    consumer,
                    waiting: false,
                    incarnation: 0,
                    restarts: 0,
                }
            })
            .collect()
    }

    pub fn is_static(&self) -> bool {
        self.consumer.instance_id.is_some()
    }

    pub fn epoch(&self) -> i32 {
        self.consumer.epoch
    }

    /// A heartbeat (a join at epoch 0); `report` false sends the owned partitions as null, as
    /// Kafka's consumer does when they did not change.
    pub fn heartbeat(&self, report: bool) -> ConsumerGroupHeartbeatRequest {
        let mut request = self.consumer.request();
        request.group_id = self.group.into();
        if self.consumer.epoch == 0 {
            request.rebalance_timeout_ms = REBALANCE_TIMEOUT_MS;
        } else if !report {
            request.topic_partitions = None;
        }
        request
    }

    /// A leave (-1, or -2 for the static member); the consumer then starts over, under a new
    /// member id if `restart` (always for the static member).
    pub fn leave(&mut self, restart: bool) -> ConsumerGroupHeartbeatRequest {
        let request = ConsumerGroupHeartbeatRequest {
            group_id: self.group.into(),
            member_id: self.consumer.id.clone(),
            member_epoch: if self.is_static() { -2 } else { -1 },
            instance_id: self.consumer.instance_id.clone(),
            ..Default::default()
        };
        if restart || self.is_static() {
            self.restarts += 1;
            self.consumer.id = member_id(&self.name, self.restarts);
        }
        self.forget();
        request
    }

    pub fn adopt(&mut self, response: &ConsumerGroupHeartbeatResponse, incarnation: u64) {
        self.consumer.adopt(response);
        self.incarnation = incarnation;
    }

    /// Fenced or unknown: it lets everything go and joins again at epoch 0.
    pub fn forget(&mut self) {
        self.consumer.epoch = 0;
        self.consumer.owned.clear();
    }

    /// The partitions it owns, as (topic index, partition).
    pub fn owned(&self) -> BTreeSet<(uuid::Uuid, i32)> {
        self.consumer
            .owned
            .iter()
            .flat_map(|(t, ps)| ps.iter().map(move |p| (*t, *p)))
            .collect()
    }

    /// The partitions it owns, as (topic name, partition), for a commit.
    pub fn owned_partitions(&self) -> Vec<(&'static str, i32)> {
        self.owned()
            .into_iter()
            .map(|(t, p)| (topic_name(t), p))
            .collect()
    }
}

/// A consumer's own member id (KIP-1082: the client makes it up).
fn member_id(name: &str, restarts: u32) -> String {
    format!("{}-r{restarts}", name.replace('/', "-"))
}

/// The catalog's topic ids are 1, 2, ... in [`TOPICS`] order (`clients::catalog`).
pub fn topic_id(index: usize) -> uuid::Uuid {
    uuid::Uuid::from_u128(index as u128 + 1)
}

fn topic_name(id: uuid::Uuid) -> &'static str {
    TOPICS[(id.as_u128() - 1) as usize].0
}
