//! An independent client's transactions: librdkafka (through the `rdkafka` crate) as a
//! transactional producer against the real daemon: a committed and an aborted transaction,
//! what read_committed and read_uncommitted consumers then see, offsets sent to a transaction
//! (visible to the group only after the commit), and a producer fenced by a second one with
//! the same transactional id.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::Daemon;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::{Message, Offset, TopicPartitionList};

const TIMEOUT: Duration = Duration::from_secs(20);
const TOPIC: &str = "orders";
const PARTITIONS: i32 = 3;

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

fn producer(daemon: &Daemon, transactional_id: &str) -> ThreadedProducer<DefaultProducerContext> {
    ClientConfig::new()
        .set("bootstrap.servers", daemon.bootstrap())
        .set("transactional.id", transactional_id)
        .set("transaction.timeout.ms", "30000")
        .create()
        .expect("transactional producer")
}

/// Sends `values` round-robin over the partitions and waits until librdkafka has them.
fn send(producer: &ThreadedProducer<DefaultProducerContext>, values: &[&str]) {
    for (i, value) in values.iter().enumerate() {
        let record = BaseRecord::to(TOPIC)
            .partition(i as i32 % PARTITIONS)
            .key(*value)
            .payload(*value);
        producer.send(record).map_err(|(e, _)| e).expect("send");
    }
    producer.flush(TIMEOUT).expect("flush");
}

/// Every data record value of the topic a consumer with `isolation.level` reads from the start.
fn read_all(daemon: &Daemon, isolation: &str, expected: usize) -> Vec<String> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", daemon.bootstrap())
        .set("isolation.level", isolation)
        .set("enable.auto.commit", "false")
        .set("group.id", format!("reader-{isolation}"))
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    for p in 0..PARTITIONS {
        tpl.add_partition_offset(TOPIC, p, Offset::Beginning)
            .expect("partition");
    }
    consumer.assign(&tpl).expect("assign");
    let mut values = Vec::new();
    let deadline = Instant::now() + TIMEOUT;
    // Read past `expected` for a while, so that a record too many would be seen.
    let mut quiet_until = None;
    while Instant::now() < deadline {
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                let value = m.payload().map(|p| String::from_utf8_lossy(p).into_owned());
                values.push(value.unwrap_or_default());
            }
            Some(Err(e)) => panic!("consumer error: {e}"),
            None => {}
        }
        if values.len() >= expected {
            let until = *quiet_until.get_or_insert_with(|| Instant::now() + Duration::from_secs(1));
            if Instant::now() > until {
                break;
            }
        }
    }
    values.sort();
    values
}

#[tokio::test]
async fn committed_and_aborted_transactions_as_consumers_see_them() {
    let daemon = Daemon::start(&[]);
    create_topic(&daemon).await;
    let p = producer(&daemon, "orders-tx");
    p.init_transactions(TIMEOUT).expect("init_transactions");
    p.begin_transaction().expect("begin");
    send(&p, &["c1", "c2", "c3"]);
    p.commit_transaction(TIMEOUT).expect("commit");
    p.begin_transaction().expect("begin");
    send(&p, &["a1", "a2"]);
    p.abort_transaction(TIMEOUT).expect("abort");
    p.begin_transaction().expect("begin");
    send(&p, &["c4"]);
    p.commit_transaction(TIMEOUT).expect("commit");

    assert_eq!(
        read_all(&daemon, "read_committed", 4),
        ["c1", "c2", "c3", "c4"]
    );
    assert_eq!(
        read_all(&daemon, "read_uncommitted", 6),
        ["a1", "a2", "c1", "c2", "c3", "c4"]
    );
}

#[tokio::test]
async fn offsets_sent_to_a_transaction_are_committed_with_it() {
    let daemon = Daemon::start(&[]);
    create_topic(&daemon).await;
    // read_uncommitted: librdkafka asks OffsetFetch with RequireStable otherwise, and waits
    // while a transaction holds an offset (checked below).
    let group: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", daemon.bootstrap())
        .set("group.id", "eos-group")
        .set("enable.auto.commit", "false")
        .set("isolation.level", "read_uncommitted")
        .create()
        .expect("consumer");
    let stable: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", daemon.bootstrap())
        .set("group.id", "eos-group")
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    let committed = |group: &BaseConsumer| -> BTreeMap<i32, Offset> {
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition(TOPIC, 0);
        let got = group.committed_offsets(tpl, TIMEOUT).expect("OffsetFetch");
        got.elements()
            .iter()
            .map(|e| (e.partition(), e.offset()))
            .collect()
    };
    let p = producer(&daemon, "eos-tx");
    p.init_transactions(TIMEOUT).expect("init_transactions");
    let mut offsets = TopicPartitionList::new();
    offsets
        .add_partition_offset(TOPIC, 0, Offset::Offset(42))
        .expect("offset");

    p.begin_transaction().expect("begin");
    send(&p, &["x"]);
    let metadata = group.group_metadata().expect("group metadata");
    p.send_offsets_to_transaction(&offsets, &metadata, TIMEOUT)
        .expect("send_offsets_to_transaction");
    assert_eq!(committed(&group).get(&0), Some(&Offset::Invalid));
    p.abort_transaction(TIMEOUT).expect("abort");
    assert_eq!(committed(&group).get(&0), Some(&Offset::Invalid));

    p.begin_transaction().expect("begin");
    send(&p, &["y"]);
    p.send_offsets_to_transaction(&offsets, &metadata, TIMEOUT)
        .expect("send_offsets_to_transaction");
    // A read_committed consumer's OffsetFetch (RequireStable) gets UNSTABLE_OFFSET_COMMIT while
    // the transaction holds the offset, and librdkafka retries until its timeout.
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition(TOPIC, 0);
    let unstable = stable.committed_offsets(tpl, Duration::from_secs(2));
    assert!(unstable.is_err(), "{unstable:?}");
    p.commit_transaction(TIMEOUT).expect("commit");
    // The group's shard settles the offsets when the marker reaches it, just after the answer.
    let deadline = Instant::now() + TIMEOUT;
    while committed(&group).get(&0) != Some(&Offset::Offset(42)) {
        assert!(Instant::now() < deadline, "the offset was not committed");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test]
async fn a_second_producer_with_the_same_id_fences_the_first() {
    let daemon = Daemon::start(&[]);
    create_topic(&daemon).await;
    let first = producer(&daemon, "fenced-tx");
    first.init_transactions(TIMEOUT).expect("init_transactions");
    first.begin_transaction().expect("begin");
    send(&first, &["old"]);
    let second = producer(&daemon, "fenced-tx");
    // The first producer's open transaction is aborted before the second gets its epoch.
    second
        .init_transactions(TIMEOUT)
        .expect("init_transactions");
    let refused = first.commit_transaction(TIMEOUT).expect_err("fenced");
    let fatal = matches!(&refused, KafkaError::Transaction(e) if e.is_fatal());
    assert!(fatal, "a fenced producer's error is fatal: {refused:?}");
    second.begin_transaction().expect("begin");
    send(&second, &["new"]);
    second.commit_transaction(TIMEOUT).expect("commit");
    assert_eq!(read_all(&daemon, "read_committed", 1), ["new"]);
}
