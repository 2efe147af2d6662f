//! Simulated KIP-848 consumers for the consumer group tests: each reports as owned exactly
//! what its last answer assigned it, as Kafka's consumer does once it has revoked and
//! assigned.
#![allow(dead_code)]
use std::collections::{BTreeMap, BTreeSet};

use kcoord_coordinator::consumer::admin::consumer_group_state;
use kcoord_coordinator::{ConsumerHeartbeatContext, CoordinatorError, GroupState};
use kcoord_wire::messages::consumer_group_heartbeat_request::{
    ConsumerGroupHeartbeatRequest, TopicPartitions,
};
use kcoord_wire::messages::consumer_group_heartbeat_response::ConsumerGroupHeartbeatResponse;
use uuid::Uuid;

use crate::support::Harness;

pub const GROUP: &str = "orders";

pub struct Consumer {
    pub id: String,
    pub epoch: i32,
    pub instance_id: Option<String>,
    pub rack: Option<String>,
    pub topics: Option<Vec<String>>,
    pub regex: Option<String>,
    pub assignor: Option<String>,
    pub owned: BTreeMap<Uuid, BTreeSet<i32>>,
    pub version: i16,
}

impl Consumer {
    pub fn new(id: &str, topics: &[&str]) -> Consumer {
        Consumer {
            id: id.into(),
            epoch: 0,
            instance_id: None,
            rack: None,
            topics: Some(topics.iter().map(|t| t.to_string()).collect()),
            regex: None,
            assignor: None,
            owned: BTreeMap::new(),
            version: 1,
        }
    }

    pub fn request(&self) -> ConsumerGroupHeartbeatRequest {
        let joining = self.epoch == 0;
        ConsumerGroupHeartbeatRequest {
            group_id: GROUP.into(),
            member_id: self.id.clone(),
            member_epoch: self.epoch,
            instance_id: self.instance_id.clone(),
            rack_id: self.rack.clone(),
            rebalance_timeout_ms: if joining { 60_000 } else { -1 },
            subscribed_topic_names: if joining { self.topics.clone() } else { None },
            subscribed_topic_regex: if joining { self.regex.clone() } else { None },
            server_assignor: self.assignor.clone(),
            topic_partitions: Some(
                self.owned
                    .iter()
                    .map(|(t, ps)| TopicPartitions {
                        topic_id: *t,
                        partitions: ps.iter().copied().collect(),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }
    }

    pub fn adopt(&mut self, r: &ConsumerGroupHeartbeatResponse) {
        if let Some(id) = &r.member_id {
            self.id = id.clone();
        }
        self.epoch = r.member_epoch;
        if let Some(a) = &r.assignment {
            self.owned = a
                .topic_partitions
                .iter()
                .map(|t| (t.topic_id, t.partitions.iter().copied().collect()))
                .collect();
        }
    }

    pub fn send(
        &self,
        h: &mut Harness,
        req: &ConsumerGroupHeartbeatRequest,
    ) -> Result<ConsumerGroupHeartbeatResponse, CoordinatorError> {
        let allow = |_: &str| true;
        let ctx = ConsumerHeartbeatContext {
            client_id: "consumer",
            client_host: "/127.0.0.1",
            api_version: self.version,
            may_describe: &allow,
        };
        h.run(|s, now| s.consumer_group_heartbeat(&ctx, req, now))
    }

    /// One heartbeat; the answer is adopted.
    pub fn beat(&mut self, h: &mut Harness) -> ConsumerGroupHeartbeatResponse {
        let req = self.request();
        let r = self
            .send(h, &req)
            .unwrap_or_else(|e| panic!("{}: {e}", self.id));
        self.adopt(&r);
        r
    }

    pub fn count(&self) -> usize {
        self.owned.values().map(BTreeSet::len).sum()
    }

    pub fn leave(&mut self, h: &mut Harness, epoch: i32) -> ConsumerGroupHeartbeatResponse {
        let req = ConsumerGroupHeartbeatRequest {
            group_id: GROUP.into(),
            member_id: self.id.clone(),
            member_epoch: epoch,
            instance_id: self.instance_id.clone(),
            ..Default::default()
        };
        self.send(h, &req).unwrap()
    }
}

pub fn state(h: &Harness) -> GroupState {
    consumer_group_state(
        h.shard
            .state()
            .consumer_groups
            .get(GROUP)
            .expect("the group"),
    )
}

/// Heartbeats every consumer until the group is Stable (at most 20 rounds).
pub fn settle(h: &mut Harness, members: &mut [Consumer]) {
    for _ in 0..20 {
        for m in members.iter_mut() {
            m.beat(h);
        }
        if state(h) == GroupState::Stable {
            for m in members.iter_mut() {
                m.beat(h);
            }
            return;
        }
    }
    panic!("the group did not settle: {:?}", state(h));
}

/// Every partition of `topic` (`partitions` of them) is owned by exactly one consumer.
pub fn assert_disjoint_and_complete(members: &[Consumer], topic: Uuid, partitions: i32) {
    let mut seen = BTreeSet::new();
    for m in members {
        for p in m.owned.get(&topic).into_iter().flatten() {
            assert!(seen.insert(*p), "partition {p} owned twice");
        }
    }
    assert_eq!(seen, (0..partitions).collect::<BTreeSet<_>>());
}
