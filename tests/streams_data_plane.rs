//! The streams path end to end against kcoord alone: our streams member (the client library's
//! heartbeat loop) runs the specification's filter application (`orders` -> filter ->
//! `valid-orders`) over the data plane: it fetches its tasks' partitions from the committed
//! offsets, produces what passes the filter with an idempotent producer, and commits as a
//! member. librdkafka writes the input and reads the output. Every valid order arrives once,
//! in order per partition, across the member leaving and a new one joining; the changelog
//! topic the coordinator creates for the topology is a real partition.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use common::Daemon;
use kcoord_client::admin::{GroupMember, NewTopic, OffsetAndMetadata, TopicPartition};
use kcoord_client::streams::{
    StreamsMember, StreamsMemberConfig, StreamsMemberHandle, SubtopologyBuilder, TopologyBuilder,
};
use kcoord_client::{
    Client, ClientConfig, Consumer, FetchOptions, ProducedRecord, Producer, ProducerConfig,
};

mod data_plane_support;
use data_plane_support::{consume, produce as rd_produce, producer as rd_producer, Rec, WAIT};

const GROUP: &str = "orders-app";
const CHANGELOG: &str = "orders-app-store-changelog";
const FAST: &[&str] = &[
    "group.streams.initial.rebalance.delay.ms=0",
    "group.streams.assignment.interval.ms=0",
    "group.streams.min.heartbeat.interval.ms=100",
    "group.streams.heartbeat.interval.ms=100",
];

fn start_member(client: &Client, process: &str) -> StreamsMemberHandle {
    let topology = TopologyBuilder::new(1)
        .subtopology(
            SubtopologyBuilder::new("0")
                .source_topics(["orders"])
                .state_changelog_topic(CHANGELOG),
        )
        .build()
        .expect("a valid topology");
    StreamsMember::start(
        client,
        StreamsMemberConfig::new(GROUP, topology).with_process_id(process),
    )
}

/// One pass of the application over the partitions `member` owns now: from each committed
/// offset, the records that came; the valid ones to `valid-orders`, then the commit. Returns
/// how many input records it processed.
async fn process_once(
    client: &Client,
    member: &StreamsMemberHandle,
    consumer: &Consumer,
    producer: &Producer,
) -> usize {
    let snapshot = member.snapshot();
    let owned: Vec<i32> = snapshot
        .assignment
        .active
        .get("0")
        .into_iter()
        .flatten()
        .copied()
        .collect();
    if owned.is_empty() || snapshot.member_epoch <= 0 {
        return 0;
    }
    let partitions: Vec<TopicPartition> = owned
        .iter()
        .map(|p| TopicPartition::new("orders", *p))
        .collect();
    let committed = client
        .fetch_offsets(GROUP, Some(&partitions), false)
        .await
        .expect("OffsetFetch");
    let mut processed = 0;
    let mut commits = BTreeMap::new();
    for tp in partitions {
        let from = committed
            .get(&tp)
            .and_then(|r| r.as_ref().ok())
            .and_then(|o| o.as_ref())
            .map_or(0, |o| o.offset);
        let options = FetchOptions {
            max_wait_ms: 0,
            ..FetchOptions::default()
        };
        let fetched = consumer
            .fetch("orders", tp.partition, from, &options)
            .await
            .expect("Fetch");
        if fetched.records.is_empty() {
            continue;
        }
        let valid: Vec<ProducedRecord> = fetched
            .records
            .iter()
            .filter(|r| r.value.as_deref().is_some_and(|v| v.starts_with(b"valid")))
            .map(|r| ProducedRecord {
                key: r.key.clone(),
                value: r.value.clone(),
                timestamp: Some(r.timestamp),
                headers: Vec::new(),
            })
            .collect();
        if !valid.is_empty() {
            producer
                .send("valid-orders", tp.partition, &valid)
                .await
                .expect("Produce");
        }
        processed += fetched.records.len();
        commits.insert(tp, OffsetAndMetadata::new(fetched.next_offset));
    }
    if !commits.is_empty() {
        let me = GroupMember {
            member_id: member.member_id().to_owned(),
            member_epoch: member.snapshot().member_epoch,
            instance_id: None,
        };
        let results = client
            .commit_offsets(GROUP, &commits, Some(&me))
            .await
            .expect("OffsetCommit");
        assert!(
            results.values().all(Result::is_ok),
            "commits as a member: {results:?}"
        );
    }
    processed
}

/// Processes until `total` input records have gone through.
async fn run_until(
    client: &Client,
    member: &StreamsMemberHandle,
    consumer: &Consumer,
    producer: &Producer,
    done: &mut usize,
    total: usize,
) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while *done < total {
        assert!(
            tokio::time::Instant::now() < deadline,
            "processed {done} of {total}"
        );
        let n = process_once(client, member, consumer, producer).await;
        *done += n;
        if n == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filter_application_moves_every_valid_order_once_across_a_rejoin() {
    let daemon = Daemon::start(FAST);
    let client = Client::connect(&daemon.bootstrap(), ClientConfig::new("streams-data-plane"))
        .await
        .expect("connects");
    let topics = ["orders", "valid-orders"].map(|name| NewTopic {
        name: name.into(),
        num_partitions: 3,
        replication_factor: -1,
        configs: vec![],
    });
    for r in client
        .create_topics(&topics, false)
        .await
        .expect("CreateTopics")
    {
        assert!(r.result.is_ok(), "{r:?}");
    }
    let input = |from: usize, to: usize| -> Vec<Rec> {
        (from..to)
            .map(|i| {
                let kind = if i % 3 == 0 { "invalid" } else { "valid" };
                Rec::new(
                    (i % 3) as i32,
                    &format!("order-{i}"),
                    &format!("{kind} order {i}"),
                )
            })
            .collect()
    };
    let d = &daemon;
    // librdkafka's calls block; these are short.
    let rd = rd_producer(d, &[]);
    rd_produce(&rd, "orders", &input(0, 300));

    let consumer = Consumer::new(client.clone());
    let producer = Producer::new(client.clone(), ProducerConfig::default()).expect("a producer");
    let member = start_member(&client, "process-a");
    let mut done = 0;
    run_until(&client, &member, &consumer, &producer, &mut done, 300).await;
    // The member leaves; more orders come; a new member takes over from the commits.
    member.leave().await.expect("leaves");
    rd_produce(&rd, "orders", &input(300, 600));
    let member = start_member(&client, "process-b");
    run_until(&client, &member, &consumer, &producer, &mut done, 600).await;
    assert_eq!(done, 600, "every input record was processed once");

    let expected: Vec<Rec> = input(0, 600)
        .into_iter()
        .filter(|r| r.value.as_deref().is_some_and(|v| v.starts_with(b"valid")))
        .collect();
    let out = consume(d, "valid-orders", &[0, 1, 2], expected.len(), &[]);
    for p in 0..3 {
        let got: Vec<Option<Vec<u8>>> = out
            .iter()
            .filter(|r| r.partition == p)
            .map(|r| r.value.clone())
            .collect();
        let want: Vec<Option<Vec<u8>>> = expected
            .iter()
            .filter(|r| r.partition == p)
            .map(|r| r.value.clone())
            .collect();
        assert_eq!(got, want, "partition {p}: each valid order once, in order");
    }

    // The coordinator created the store's changelog with one partition per task, and it is a
    // real log: what is written there is read back.
    let partitions = consumer
        .partitions(CHANGELOG)
        .await
        .expect("the changelog topic exists");
    assert_eq!(partitions, vec![0, 1, 2]);
    let sent = producer
        .send(
            CHANGELOG,
            1,
            &[ProducedRecord::keyed(
                Bytes::from_static(b"k"),
                Bytes::from_static(b"count=3"),
            )],
        )
        .await
        .expect("changelog write");
    let back = consumer
        .fetch(CHANGELOG, 1, sent.base_offset, &FetchOptions::default())
        .await
        .expect("changelog read");
    assert_eq!(back.records[0].value.as_deref(), Some(&b"count=3"[..]));
    member.leave().await.expect("leaves");
    daemon.stop();
}
