//! An independent client's classic consumer group: librdkafka (through the `rdkafka` crate),
//! whose consumers join with JoinGroup/SyncGroup/Heartbeat/LeaveGroup (its default
//! `group.protocol=classic`, its own range assignor run by the group leader), against the real
//! daemon. Two members split the partitions, consume everything once and commit; when one
//! leaves, the other is given every partition and resumes at the committed offsets.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::Daemon;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::{Message, Offset, TopicPartitionList};

const TIMEOUT: Duration = Duration::from_secs(30);
const TOPIC: &str = "rd-classic";
const GROUP: &str = "rd-classic-group";
const PARTITIONS: i32 = 4;

async fn create_topic(daemon: &Daemon) {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", daemon.bootstrap())
        .create()
        .expect("admin client");
    let topic = NewTopic::new(TOPIC, PARTITIONS, TopicReplication::Fixed(1));
    let created = admin
        .create_topics([&topic], &AdminOptions::new())
        .await
        .expect("CreateTopics");
    assert!(created.iter().all(|r| r.is_ok()), "{created:?}");
}

/// Sends values `v{from}`..`v{to}` round-robin over the partitions and waits for them all.
fn produce(daemon: &Daemon, from: usize, to: usize) {
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", daemon.bootstrap())
        .create()
        .expect("producer");
    for i in from..to {
        let value = format!("v{i}");
        let record = BaseRecord::to(TOPIC)
            .partition(i as i32 % PARTITIONS)
            .key(&value)
            .payload(&value);
        producer.send(record).map_err(|(e, _)| e).expect("send");
    }
    producer.flush(TIMEOUT).expect("flush");
}

fn values(from: usize, to: usize) -> BTreeSet<String> {
    (from..to).map(|i| format!("v{i}")).collect()
}

/// A group member. A session longer than the test's deadlines: a member that left must have
/// sent LeaveGroup to be gone in time.
fn member(daemon: &Daemon, client_id: &str) -> BaseConsumer {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", daemon.bootstrap())
        .set("group.id", GROUP)
        .set("client.id", client_id)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("session.timeout.ms", "45000")
        .set("heartbeat.interval.ms", "300")
        .create()
        .expect("consumer");
    consumer.subscribe(&[TOPIC]).expect("subscribe");
    consumer
}

/// What one member consumed: each value with how often it came.
#[derive(Default)]
struct Seen(BTreeMap<String, usize>);

impl Seen {
    /// One poll of `consumer`: a record is counted, an error fails the test.
    fn poll(&mut self, consumer: &BaseConsumer) {
        match consumer.poll(Duration::from_millis(50)) {
            Some(Ok(m)) => {
                let value = String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned();
                *self.0.entry(value).or_default() += 1;
            }
            Some(Err(e)) => panic!("consumer error: {e}"),
            None => {}
        }
    }

    fn values(&self) -> BTreeSet<String> {
        self.0.keys().cloned().collect()
    }

    fn assert_once(&self) {
        let twice: Vec<_> = self.0.iter().filter(|(_, n)| **n > 1).collect();
        assert!(twice.is_empty(), "consumed more than once: {twice:?}");
    }
}

fn assigned(consumer: &BaseConsumer) -> BTreeSet<i32> {
    let tpl = consumer.assignment().expect("assignment");
    tpl.elements().iter().map(|e| e.partition()).collect()
}

/// Polls every member until `done` holds, or fails after the deadline.
fn poll_until(
    members: &[&BaseConsumer],
    seen: &mut [Seen],
    what: &str,
    mut done: impl FnMut(&[Seen]) -> bool,
) {
    let deadline = Instant::now() + TIMEOUT;
    while !done(seen) {
        assert!(Instant::now() < deadline, "timed out: {what}");
        for (consumer, seen) in members.iter().zip(seen.iter_mut()) {
            seen.poll(consumer);
        }
    }
}

/// The group as DescribeGroups shows it: state, protocol type, protocol, member client ids.
fn describe(consumer: &BaseConsumer) -> (String, String, String, BTreeSet<String>) {
    let list = consumer
        .fetch_group_list(Some(GROUP), TIMEOUT)
        .expect("ListGroups/DescribeGroups");
    let group = &list.groups()[0];
    let clients = group.members().iter().map(|m| m.client_id().to_owned());
    (
        group.state().to_owned(),
        group.protocol_type().to_owned(),
        group.protocol().to_owned(),
        clients.collect(),
    )
}

/// The committed offset of each partition.
fn committed(consumer: &BaseConsumer) -> Vec<Offset> {
    let mut tpl = TopicPartitionList::new();
    for p in 0..PARTITIONS {
        tpl.add_partition(TOPIC, p);
    }
    let got = consumer
        .committed_offsets(tpl, TIMEOUT)
        .expect("OffsetFetch");
    got.elements().iter().map(|e| e.offset()).collect()
}

#[tokio::test]
async fn two_members_share_the_partitions_and_one_takes_over_when_the_other_leaves() {
    let daemon = Daemon::start(&["group.initial.rebalance.delay.ms=0"]);
    create_topic(&daemon).await;

    // The records come once the group is settled: a record read before a rebalance and not
    // committed is read again after it (at least once), which is not what this test is about.
    let a = member(&daemon, "rd-a");
    let b = member(&daemon, "rd-b");
    let mut seen = [Seen::default(), Seen::default()];
    poll_until(
        &[&a, &b],
        &mut seen,
        "two members of two partitions",
        |_| {
            let (pa, pb) = (assigned(&a), assigned(&b));
            pa.len() == 2 && pb.len() == 2 && pa.is_disjoint(&pb)
        },
    );
    produce(&daemon, 0, 100);
    poll_until(&[&a, &b], &mut seen, "both members consume", |seen| {
        let union: BTreeSet<String> = seen[0].values().union(&seen[1].values()).cloned().collect();
        union == values(0, 100)
    });
    seen.iter().for_each(Seen::assert_once);
    assert!(seen[0].values().is_disjoint(&seen[1].values()));
    a.commit_consumer_state(CommitMode::Sync).expect("commit a");
    b.commit_consumer_state(CommitMode::Sync).expect("commit b");
    assert_eq!(committed(&a), vec![Offset::Offset(25); 4]);
    let both = BTreeSet::from(["rd-a".to_owned(), "rd-b".to_owned()]);
    assert_eq!(
        describe(&a),
        ("Stable".into(), "consumer".into(), "range".into(), both)
    );

    // `a` leaves (librdkafka's close sends LeaveGroup): `b` rejoins and is given every
    // partition, then reads only what comes after the committed offsets (none of the first
    // hundred again).
    drop(a);
    let mut after = [Seen::default()];
    poll_until(&[&b], &mut after, "b takes over", |_| {
        assigned(&b).len() == 4
    });
    produce(&daemon, 100, 140);
    poll_until(&[&b], &mut after, "b reads the new records", |after| {
        after[0].values() == values(100, 140)
    });
    after[0].assert_once();
    b.commit_consumer_state(CommitMode::Sync).expect("commit b");
    assert_eq!(committed(&b), vec![Offset::Offset(35); 4]);
    let only_b = BTreeSet::from(["rd-b".to_owned()]);
    assert_eq!(
        describe(&b),
        ("Stable".into(), "consumer".into(), "range".into(), only_b)
    );
}
