//! Private harness of the data-plane tests: librdkafka (the `rdkafka` crate) producing to and
//! consuming from the real daemon, and typed requests over our own client's connection.
#![allow(dead_code)] // each test binary uses its own part

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Header, Headers, Message, OwnedHeaders};
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};
use rdkafka::{ClientContext, Offset, TopicPartitionList};

use crate::common::Daemon;

/// Bound on every wait of these tests.
pub const WAIT: Duration = Duration::from_secs(30);

/// A record as produced and as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rec {
    pub partition: i32,
    pub offset: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(String, Option<Vec<u8>>)>,
    pub timestamp: Option<i64>,
}

impl Rec {
    pub fn new(partition: i32, key: &str, value: &str) -> Rec {
        Rec {
            partition,
            offset: -1,
            key: Some(key.as_bytes().to_vec()),
            value: Some(value.as_bytes().to_vec()),
            headers: Vec::new(),
            timestamp: None,
        }
    }
}

/// Creates a topic with the admin client (CreateTopics as librdkafka sends it).
pub fn create_topic(daemon: &Daemon, name: &str, partitions: i32, configs: &[(&str, &str)]) {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", daemon.bootstrap())
        .set("broker.address.family", "v4")
        .create()
        .expect("admin client");
    let mut topic = NewTopic::new(name, partitions, TopicReplication::Fixed(1));
    for (k, v) in configs {
        topic = topic.set(k, v);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let results = runtime
        .block_on(admin.create_topics([&topic], &AdminOptions::new().operation_timeout(Some(WAIT))))
        .expect("CreateTopics");
    for r in results {
        r.unwrap_or_else(|(t, e)| panic!("creating {t}: {e}"));
    }
}

/// One delivery report: (partition, offset), or why it failed.
pub type Delivery = Result<(i32, i64), String>;

/// Delivery reports, collected.
#[derive(Default, Clone)]
pub struct Deliveries {
    pub results: Arc<Mutex<Vec<Delivery>>>,
}

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = ();
    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        let r = match result {
            Ok(m) => Ok((m.partition(), m.offset())),
            Err((e, _)) => Err(e.to_string()),
        };
        self.results
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(r);
    }
}

impl Deliveries {
    pub fn taken(&self) -> Vec<Delivery> {
        std::mem::take(&mut *self.results.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// An idempotent producer with acks=all (librdkafka's defaults otherwise), plus `extra`.
pub fn producer(daemon: &Daemon, extra: &[(&str, &str)]) -> BaseProducer<Deliveries> {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", daemon.bootstrap())
        .set("broker.address.family", "v4")
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .set("linger.ms", "5")
        .set("message.timeout.ms", "30000");
    for (k, v) in extra {
        config.set(*k, *v);
    }
    config
        .create_with_context(Deliveries::default())
        .expect("producer")
}

/// Sends `records`, waits for every delivery report, and returns the records with the offset
/// each got. Panics on a failed delivery.
pub fn produce(producer: &BaseProducer<Deliveries>, topic: &str, records: &[Rec]) -> Vec<Rec> {
    let mut sent = Vec::with_capacity(records.len());
    for r in records {
        let mut headers = OwnedHeaders::new();
        for (k, v) in &r.headers {
            headers = headers.insert(Header {
                key: k,
                value: v.as_deref(),
            });
        }
        let mut record: BaseRecord<'_, [u8], [u8]> = BaseRecord::to(topic)
            .partition(r.partition)
            .headers(headers);
        if let Some(k) = &r.key {
            record = record.key(k);
        }
        if let Some(v) = &r.value {
            record = record.payload(v);
        }
        if let Some(ts) = r.timestamp {
            record = record.timestamp(ts);
        }
        let mut pending = record;
        loop {
            match producer.send(pending) {
                Ok(()) => break,
                Err((e, back)) => {
                    assert!(format!("{e}").contains("Queue full"), "send failed: {e}");
                    producer.poll(Duration::from_millis(10));
                    pending = back;
                }
            }
        }
        sent.push(r.clone());
    }
    producer.flush(WAIT).expect("flush");
    let reports = producer.context().taken();
    assert_eq!(
        reports.len(),
        records.len(),
        "one delivery report per record"
    );
    // Reports of one partition arrive in produce order.
    let mut by_partition: std::collections::HashMap<i32, Vec<i64>> = Default::default();
    for r in reports {
        let (p, o) = r.unwrap_or_else(|e| panic!("delivery failed: {e}"));
        by_partition.entry(p).or_default().push(o);
    }
    let mut next: std::collections::HashMap<i32, usize> = Default::default();
    for r in &mut sent {
        let i = next.entry(r.partition).or_default();
        r.offset = by_partition[&r.partition][*i];
        *i += 1;
    }
    sent
}

/// A consumer without a group, reading assigned partitions.
pub fn consumer(daemon: &Daemon, extra: &[(&str, &str)]) -> BaseConsumer {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", daemon.bootstrap())
        .set("broker.address.family", "v4")
        .set("group.id", "data-plane-tests")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "false");
    for (k, v) in extra {
        config.set(*k, *v);
    }
    config.create().expect("consumer")
}

/// Reads partitions `partitions` of `topic` from the start until `count` records came back.
pub fn consume(
    daemon: &Daemon,
    topic: &str,
    partitions: &[i32],
    count: usize,
    extra: &[(&str, &str)],
) -> Vec<Rec> {
    consume_from(daemon, topic, partitions, Offset::Beginning, count, extra)
}

pub fn consume_from(
    daemon: &Daemon,
    topic: &str,
    partitions: &[i32],
    from: Offset,
    count: usize,
    extra: &[(&str, &str)],
) -> Vec<Rec> {
    let consumer = consumer(daemon, extra);
    let mut tpl = TopicPartitionList::new();
    for p in partitions {
        tpl.add_partition_offset(topic, *p, from)
            .expect("assign offset");
    }
    consumer.assign(&tpl).expect("assign");
    let deadline = Instant::now() + WAIT;
    let mut out = Vec::new();
    while out.len() < count {
        assert!(
            Instant::now() < deadline,
            "only {} of {count} records came back:\n{}",
            out.len(),
            daemon.stderr_log()
        );
        match consumer.poll(Duration::from_millis(100)) {
            None => {}
            Some(Err(e)) => panic!("consumer error: {e}"),
            Some(Ok(m)) => out.push(Rec {
                partition: m.partition(),
                offset: m.offset(),
                key: m.key().map(<[u8]>::to_vec),
                value: m.payload().map(<[u8]>::to_vec),
                headers: m
                    .headers()
                    .map(|h| {
                        h.iter()
                            .map(|h| (h.key.to_owned(), h.value.map(<[u8]>::to_vec)))
                            .collect()
                    })
                    .unwrap_or_default(),
                timestamp: m.timestamp().to_millis(),
            }),
        }
    }
    out
}

/// The low and high watermarks of a partition, as librdkafka asks (ListOffsets).
pub fn watermarks(daemon: &Daemon, topic: &str, partition: i32) -> (i64, i64) {
    consumer(daemon, &[])
        .fetch_watermarks(topic, partition, WAIT)
        .expect("watermarks")
}

/// Milliseconds since the epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
