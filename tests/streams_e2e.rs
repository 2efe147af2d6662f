//! Issue 3 end to end against the real `kcoord` binary: streams members running their own
//! heartbeat loops (the client library's spawned `StreamsMember`), and librdkafka creating the
//! source topics and listing the groups.
mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use common::Daemon;
use kcoord_client::admin::NewTopic;
use kcoord_client::streams::{
    MemberSnapshot, StreamsMemberConfig, StreamsMemberHandle, TopologyBuilder,
};
use kcoord_client::{Client, ClientConfig};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic as RdNewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::ClientConfig as RdConfig;

/// Fast timers, so convergence and expiry take well under a second per step.
const FAST: &[&str] = &[
    "group.streams.initial.rebalance.delay.ms=0",
    "group.streams.assignment.interval.ms=0",
    "group.streams.min.heartbeat.interval.ms=100",
    "group.streams.heartbeat.interval.ms=100",
    "group.streams.min.session.timeout.ms=1000",
    "group.streams.session.timeout.ms=1500",
];

const WAIT: Duration = Duration::from_secs(30);

async fn client(daemon: &Daemon) -> Client {
    Client::connect(&daemon.bootstrap(), ClientConfig::new("streams-e2e"))
        .await
        .expect("connects")
}

fn start_member(client: &Client, group: &str, topic: &str, process: &str) -> StreamsMemberHandle {
    let topology = TopologyBuilder::stateless(1, [topic])
        .build()
        .expect("a valid topology");
    let config = StreamsMemberConfig::new(group, topology).with_process_id(process);
    kcoord_client::streams::StreamsMember::start(client, config)
}

/// Waits until every member of `members` is stable at one epoch and their active tasks of
/// sub-topology "0" are exactly 0..tasks, each on one member.
async fn wait_converged(members: &[StreamsMemberHandle], tasks: i32) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let snapshots: Vec<MemberSnapshot> =
            members.iter().map(StreamsMemberHandle::snapshot).collect();
        let epochs: BTreeSet<i32> = snapshots.iter().map(|s| s.member_epoch).collect();
        let mut owners: BTreeMap<i32, usize> = BTreeMap::new();
        for s in &snapshots {
            for p in s.assignment.active.get("0").into_iter().flatten() {
                *owners.entry(*p).or_default() += 1;
            }
        }
        let complete = owners.keys().copied().collect::<Vec<_>>() == (0..tasks).collect::<Vec<_>>();
        let disjoint = owners.values().all(|n| *n == 1);
        if epochs.len() == 1 && epochs.iter().all(|e| *e > 0) && complete && disjoint {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no stable, complete, disjoint assignment: {snapshots:#?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_members_in_three_groups_converge_to_complete_non_overlapping_assignments() {
    let daemon = Daemon::start(FAST);
    let client = client(&daemon).await;
    let topics = [("orders", 12), ("payments", 7), ("clicks", 5)];
    let specs: Vec<NewTopic> = topics
        .iter()
        .map(|(name, partitions)| NewTopic {
            name: name.to_string(),
            num_partitions: *partitions,
            replication_factor: -1,
            configs: vec![],
        })
        .collect();
    for result in client
        .create_topics(&specs, false)
        .await
        .expect("CreateTopics answers")
    {
        assert!(result.result.is_ok(), "{result:?}");
    }
    let groups = [
        ("orders-app", "orders", 4),
        ("payments-app", "payments", 3),
        ("clicks-app", "clicks", 3),
    ];
    let mut all = Vec::new();
    for (group, topic, count) in groups {
        let members: Vec<StreamsMemberHandle> = (0..count)
            .map(|i| start_member(&client, group, topic, &format!("{group}-p{i}")))
            .collect();
        all.push((group, topic, members));
    }
    for (group, topic, members) in &all {
        let tasks = topics
            .iter()
            .find(|(t, _)| t == topic)
            .map(|(_, p)| *p)
            .unwrap_or_default();
        wait_converged(members, tasks).await;
        let listed = client
            .list_groups(&["streams"], &[])
            .await
            .expect("ListGroups");
        assert!(
            listed.iter().any(|g| g.group_id == *group),
            "{group} is listed: {listed:?}"
        );
    }
    for (_, _, members) in all {
        for m in members {
            m.leave().await.expect("leaves");
        }
    }
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_killed_without_leaving_is_expired_and_its_tasks_move() {
    let daemon = Daemon::start(FAST);
    let client = client(&daemon).await;
    let spec = NewTopic {
        name: "input".into(),
        num_partitions: 6,
        replication_factor: -1,
        configs: vec![],
    };
    client
        .create_topics(&[spec], false)
        .await
        .expect("CreateTopics answers");
    let mut members: Vec<StreamsMemberHandle> = (0..3)
        .map(|i| start_member(&client, "app", "input", &format!("p{i}")))
        .collect();
    wait_converged(&members, 6).await;
    // A crash: the member stops heartbeating and never leaves.
    let victim = members.remove(0);
    victim.kill();
    // The session (1.5 s) expires; the survivors take over all six tasks.
    wait_converged(&members, 6).await;
    let counts: Vec<usize> = members
        .iter()
        .map(|m| m.assignment().active.values().map(BTreeSet::len).sum())
        .collect();
    assert_eq!(counts, vec![3, 3]);
    daemon.wait_for_log("session timeout expired", WAIT);
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn librdkafka_creates_the_source_topics_and_lists_the_streams_groups() {
    let daemon = Daemon::start(FAST);
    let admin: AdminClient<DefaultClientContext> = RdConfig::new()
        .set("bootstrap.servers", daemon.bootstrap())
        .create()
        .expect("an admin client");
    let topic = RdNewTopic::new("rd-source", 4, TopicReplication::Fixed(1));
    let results = admin
        .create_topics(
            [&topic],
            &AdminOptions::new().operation_timeout(Some(Duration::from_secs(10))),
        )
        .await
        .expect("CreateTopics");
    assert!(results.iter().all(|r| r.is_ok()), "{results:?}");

    let client = client(&daemon).await;
    let member = start_member(&client, "rd-app", "rd-source", "p0");
    wait_converged(std::slice::from_ref(&member), 4).await;

    // librdkafka's group listing: ListGroups, then DescribeGroups per group (which, as in
    // Kafka, says a streams group is not a classic group).
    let bootstrap = daemon.bootstrap();
    let groups = tokio::task::spawn_blocking(move || {
        let consumer: BaseConsumer = RdConfig::new()
            .set("bootstrap.servers", bootstrap)
            .create()
            .expect("a consumer");
        consumer
            .fetch_group_list(None, Duration::from_secs(10))
            .map(|list| {
                list.groups()
                    .iter()
                    .map(|g| (g.name().to_string(), g.protocol_type().to_string()))
                    .collect::<Vec<_>>()
            })
    })
    .await
    .expect("the blocking task ran");
    let groups = groups.expect("librdkafka lists the groups");
    assert!(
        groups.iter().any(|(name, _)| name == "rd-app"),
        "rd-app is listed by librdkafka: {groups:?}"
    );
    member.leave().await.expect("leaves");
    daemon.stop();
}
