//! The simulated clients: Streams members (the shared test harness's [`Member`], which adopts
//! every assignment it is sent and reports what it owns), with one request in flight at a
//! time, as a Streams client's heartbeat thread has.
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kcoord_metadata::{Record, Store, TopicsImage};
use kcoord_wire::messages::streams_group_heartbeat_request::{
    StreamsGroupHeartbeatRequest, Subtopology, Topology,
};
use kcoord_wire::records::{PartitionRecord, TopicRecord};

use crate::support::Member;

/// The streams groups; members commit offsets in their own group.
pub const STREAMS_GROUPS: [&str; 2] = ["g0", "g1"];
/// The group that only commits offsets (a plain consumer's manual commits: member id "",
/// epoch -1).
pub const SIMPLE_GROUP: &str = "simple";
/// Members per streams group; the last of each group is static.
pub const MEMBERS_PER_GROUP: usize = 3;
/// The topics of the catalog and their partition counts at the start; sub-topology `i` reads
/// topic `i`.
pub const TOPICS: [(&str, i32); 2] = [("input", 4), ("events", 3)];
/// The most partitions a topic grows to.
pub const MAX_PARTITIONS: i32 = 6;
/// The rebalance timeout members join with: short, so that members slow to revoke are fenced.
pub const REBALANCE_TIMEOUT_MS: i32 = 2_000;

/// The topic catalog the controller publishes: the topics of [`TOPICS`] with `partitions`
/// partitions each (their ids never change: no topic is deleted).
pub fn catalog(partitions: [i32; TOPICS.len()]) -> Arc<TopicsImage> {
    let mut store = Store::new();
    for (i, ((name, _), count)) in TOPICS.iter().zip(partitions).enumerate() {
        let id = uuid::Uuid::from_u128(i as u128 + 1);
        let mut records = vec![Record::Topic(TopicRecord {
            name: (*name).into(),
            topic_id: id,
            ..Default::default()
        })];
        records.extend((0..count).map(|p| {
            Record::Partition(PartitionRecord {
                partition_id: p,
                topic_id: id,
                leader: 1,
                replicas: vec![1],
                isr: vec![1],
                ..Default::default()
            })
        }));
        store.append(records).expect("the catalog replays");
    }
    Arc::new(store.state().topics.clone())
}

/// The topology at `epoch`: odd epochs read `input`, even ones `input` and `events`, so an
/// upgrade changes the tasks.
pub fn topology(epoch: i32) -> Topology {
    let subtopologies = if epoch % 2 == 0 { 2 } else { 1 };
    Topology {
        epoch,
        subtopologies: TOPICS[..subtopologies]
            .iter()
            .enumerate()
            .map(|(i, (topic, _))| Subtopology {
                subtopology_id: i.to_string(),
                source_topics: vec![(*topic).into()],
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// The topic sub-topology `subtopology` reads.
pub fn topic_of(subtopology: &str) -> &'static str {
    let index: usize = subtopology.parse().expect("sub-topology ids are numbers");
    TOPICS[index].0
}

/// One Streams client.
pub struct Client {
    pub group: &'static str,
    /// Stable name, for traces ("g0/m2").
    pub name: String,
    /// Bumped when the client leaves and comes back under a new member id, as a restarted
    /// Streams client does.
    restarts: u32,
    pub member: Member,
    /// A request of this client is waiting for its answer.
    pub waiting: bool,
}

impl Client {
    pub fn all() -> Vec<Client> {
        let mut clients = Vec::new();
        for group in STREAMS_GROUPS {
            for i in 0..MEMBERS_PER_GROUP {
                let process = format!("{group}-p{}", i % 2);
                let mut member = Member::new("", &process, topology(1));
                if i + 1 == MEMBERS_PER_GROUP {
                    member.instance = Some(format!("{group}-static-{i}"));
                }
                let mut client = Client {
                    group,
                    name: format!("{group}/m{i}"),
                    restarts: 0,
                    member,
                    waiting: false,
                };
                client.member.id = client.member_id();
                clients.push(client);
            }
        }
        clients
    }

    fn member_id(&self) -> String {
        format!("{}-r{}", self.name.replace('/', "-"), self.restarts)
    }

    pub fn is_static(&self) -> bool {
        self.member.instance.is_some()
    }

    /// A heartbeat (a join at epoch 0). `report_tasks` false sends the owned-task lists as null,
    /// as a Streams client does when they did not change, which the steady-state path answers.
    pub fn heartbeat(&self, report_tasks: bool) -> StreamsGroupHeartbeatRequest {
        let mut request = self.member.request();
        request.group_id = self.group.into();
        if self.member.epoch == 0 {
            request.rebalance_timeout_ms = REBALANCE_TIMEOUT_MS;
        } else if !report_tasks {
            request.active_tasks = None;
            request.standby_tasks = None;
            request.warmup_tasks = None;
        }
        request
    }

    /// A leave: epoch -1, or -2 for a static member, which keeps its assignment for the member
    /// that takes its instance id over. The client then starts afresh, under a new member id
    /// (a static member may come back under its old one), with `upgrade_to`'s topology if
    /// given (a KIP-1331 push, seen from the core).
    pub fn leave(
        &mut self,
        upgrade_to: Option<i32>,
        same_id: bool,
    ) -> StreamsGroupHeartbeatRequest {
        let mut request = self.member.request();
        request.group_id = self.group.into();
        request.member_epoch = if self.is_static() { -2 } else { -1 };
        request.topology = None;
        if !(same_id && self.is_static()) {
            self.restarts += 1;
            self.member.id = self.member_id();
        }
        self.forget();
        if let Some(epoch) = upgrade_to {
            self.member.topology = topology(epoch);
        }
        request
    }

    /// Drops what the client owns; its next heartbeat joins.
    pub fn forget(&mut self) {
        self.member.epoch = 0;
        self.member.active.clear();
        self.member.standby.clear();
    }

    /// The active tasks the client owns, as (topic, partition).
    pub fn owned_partitions(&self) -> Vec<(&'static str, i32)> {
        owned(&self.member.active)
    }
}

fn owned(tasks: &BTreeMap<String, BTreeSet<i32>>) -> Vec<(&'static str, i32)> {
    tasks
        .iter()
        .flat_map(|(sub, partitions)| partitions.iter().map(move |p| (topic_of(sub), *p)))
        .collect()
}
