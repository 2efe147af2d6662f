//! `--protocol consumer`: the same live-heap measure for KIP-848 consumer group members. The
//! groups join one shard as Kafka's consumer joins (its own member id, the topic subscribed by
//! name, owned partitions reported when they changed), heartbeat until every group is Stable and
//! every member owns what it was assigned, and the shard's heap is split as for streams members
//! (no timeline: consumer groups have none).
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;

use kcoord_coordinator::consumer::admin::consumer_group_state;
use kcoord_coordinator::{ConsumerHeartbeatContext, CoordinatorShard, GroupState};
use kcoord_runtime::{Runtime, Volatile};
use kcoord_wire::messages::consumer_group_heartbeat_request::{
    ConsumerGroupHeartbeatRequest, TopicPartitions,
};
use kcoord_wire::messages::consumer_group_heartbeat_response::ConsumerGroupHeartbeatResponse;
use uuid::Uuid;

use super::{json_f, Settings, LIVE, TOPIC};

/// A simulated consumer: owns what its last answer assigned it.
struct Consumer {
    group: String,
    id: String,
    epoch: i32,
    owned: BTreeMap<Uuid, BTreeSet<i32>>,
    changed: bool,
}

impl Consumer {
    fn request(&self) -> ConsumerGroupHeartbeatRequest {
        let joining = self.epoch == 0;
        let owned = (joining || self.changed).then(|| {
            self.owned
                .iter()
                .map(|(topic, partitions)| TopicPartitions {
                    topic_id: *topic,
                    partitions: partitions.iter().copied().collect(),
                    ..Default::default()
                })
                .collect()
        });
        ConsumerGroupHeartbeatRequest {
            group_id: self.group.clone(),
            member_id: self.id.clone(),
            member_epoch: self.epoch,
            rebalance_timeout_ms: if joining { 300_000 } else { -1 },
            subscribed_topic_names: joining.then(|| vec![TOPIC.to_owned()]),
            topic_partitions: owned,
            ..Default::default()
        }
    }

    fn adopt(&mut self, r: &ConsumerGroupHeartbeatResponse) {
        self.epoch = r.member_epoch;
        self.changed = false;
        if let Some(a) = &r.assignment {
            let new: BTreeMap<Uuid, BTreeSet<i32>> = a
                .topic_partitions
                .iter()
                .filter(|t| !t.partitions.is_empty())
                .map(|t| (t.topic_id, t.partitions.iter().copied().collect()))
                .collect();
            if new != self.owned {
                self.owned = new;
                self.changed = true;
            }
        }
    }
}

fn heartbeat(
    shard: &mut Runtime<CoordinatorShard, Volatile>,
    ctx: &ConsumerHeartbeatContext,
    request: &ConsumerGroupHeartbeatRequest,
    now: i64,
) -> Result<ConsumerGroupHeartbeatResponse, String> {
    let done = shard
        .run(|s| s.consumer_group_heartbeat(ctx, request, now))
        .map_err(|refused| refused.error.to_string())?;
    done.response.map_err(|e| e.to_string())
}

/// Joins `s.groups` groups of `s.members` consumers on `shard` (whose catalog holds [`TOPIC`])
/// and reports their live heap per member.
pub(super) fn run(
    s: &Settings,
    mut shard: Runtime<CoordinatorShard, Volatile>,
) -> Result<String, String> {
    let ctx = ConsumerHeartbeatContext {
        client_id: "kcoord-bench",
        client_host: "/127.0.0.1",
        api_version: 1,
        may_describe: &|_| true,
    };
    let mut consumers: Vec<Consumer> = (0..s.groups * s.members)
        .map(|i| Consumer {
            group: format!("bench-{:05}", i / s.members),
            // As Kafka's consumer makes them: a UUID in Kafka's 22-character base64 form.
            id: kcoord_wire::kafka_uuid(&Uuid::from_u128(1_000_000 + i as u128)),
            epoch: 0,
            owned: BTreeMap::new(),
            changed: false,
        })
        .collect();
    let live_start = LIVE.load(Ordering::Relaxed);
    let mut now: i64 = 1_000_000;
    let mut passes = 0;
    loop {
        passes += 1;
        if passes > 50 {
            return Err("the consumer groups did not converge in 50 passes".into());
        }
        for c in consumers.iter_mut() {
            let response = heartbeat(&mut shard, &ctx, &c.request(), now)
                .map_err(|e| format!("{} in {}: {e}", c.id, c.group))?;
            c.adopt(&response);
        }
        now += 1;
        let state = shard.state();
        let stable = consumers.chunks(s.members).all(|group| {
            state
                .consumer_groups
                .get(&group[0].group)
                .is_some_and(|g| consumer_group_state(g) == GroupState::Stable)
                && group.iter().all(|c| !c.changed && c.epoch > 0)
        });
        if stable {
            break;
        }
    }
    let n = consumers.len();
    let live_after = LIVE.load(Ordering::Relaxed);
    // What the simulated consumers learnt during the join is theirs, not the shard's.
    let before_copies = LIVE.load(Ordering::Relaxed);
    let copies: Vec<_> = consumers.iter().map(|c| c.owned.clone()).collect();
    let consumers_heap = LIVE.load(Ordering::Relaxed) - before_copies;
    drop(copies);
    let shard_heap = live_after - live_start - consumers_heap;
    let before_clone = LIVE.load(Ordering::Relaxed);
    let state_copy = shard.state().clone();
    let state_heap = LIVE.load(Ordering::Relaxed) - before_clone;
    drop(state_copy);
    let log = shard.store().log();
    let log_heap = log.heap_bytes() as i64;
    let per = |bytes: i64| json_f(bytes as f64 / n as f64);
    Ok(format!(
        r#"{{"bench":"coordinator","protocol":"consumer","groups":{},"members":{n},"partitions":{},"setup_passes":{passes},"heap_bytes_per_member":{},"state_bytes_per_member":{},"log_bytes_per_member":{},"log_records_per_member":{:.2},"other_bytes_per_member":{}}}"#,
        s.groups,
        s.partitions,
        per(shard_heap),
        per(state_heap),
        per(log_heap),
        log.len() as f64 / n as f64,
        per(shard_heap - state_heap - log_heap),
    ))
}
