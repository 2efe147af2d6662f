//! `--describe --offsets` against the real daemon (in this process): the log end offsets come
//! from ListOffsets, so LOG-END-OFFSET and OFFSET-LAG are filled in.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use bytes::Bytes;
use kcoord_client::admin::{GroupMember, NewTopic, OffsetAndMetadata, TopicPartition};
use kcoord_client::streams::{StreamsMember, StreamsMemberConfig, TopologyBuilder};
use kcoord_client::{Client, ClientConfig, ProducedRecord, Producer, ProducerConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_offsets_and_lag_come_from_list_offsets() {
    let config = kcoord_server::Config::parse(
        "end-offsets",
        "node.id=1\nlisteners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\noffsets.topic.num.partitions=2\ngroup.streams.initial.rebalance.delay.ms=0\ngroup.streams.assignment.interval.ms=0\n",
    )
    .unwrap();
    let server = kcoord_server::start(config).await.unwrap();
    let bootstrap = server.broker_addr().unwrap().to_string();
    let client = Client::connect(&bootstrap, ClientConfig::new("end-offsets"))
        .await
        .unwrap();
    let topic = NewTopic {
        name: "orders".into(),
        num_partitions: 1,
        replication_factor: -1,
        configs: vec![],
    };
    client.create_topics(&[topic], false).await.unwrap();
    let producer = Producer::new(client.clone(), ProducerConfig::default()).unwrap();
    let records: Vec<ProducedRecord> = (0..10)
        .map(|i| ProducedRecord::value(Bytes::from(format!("v{i}"))))
        .collect();
    producer.send("orders", 0, &records).await.unwrap();

    let topology = TopologyBuilder::stateless(1, ["orders"]).build().unwrap();
    let member = StreamsMember::start(&client, StreamsMemberConfig::new("app", topology));
    let snapshot = member
        .wait_for(
            |s| s.assignment.active.get("0").is_some_and(|t| t.contains(&0)),
            Duration::from_secs(20),
        )
        .await
        .unwrap();
    let me = GroupMember {
        member_id: member.member_id().to_owned(),
        member_epoch: snapshot.member_epoch,
        instance_id: None,
    };
    let commit = BTreeMap::from([(TopicPartition::new("orders", 0), OffsetAndMetadata::new(4))]);
    client
        .commit_offsets("app", &commit, Some(&me))
        .await
        .unwrap();

    let run = |verbose: bool| {
        let bootstrap = bootstrap.clone();
        tokio::task::spawn_blocking(move || {
            let mut args = vec![
                "--bootstrap-server",
                bootstrap.as_str(),
                "--describe",
                "--offsets",
                "--group",
                "app",
            ];
            if verbose {
                args.push("--verbose");
            }
            Command::new(env!("CARGO_BIN_EXE_kafka-streams-groups"))
                .args(args)
                .output()
                .unwrap()
        })
    };
    let row = |out: std::process::Output| -> Vec<String> {
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line = stdout
            .lines()
            .find(|l| l.contains("orders"))
            .unwrap_or_else(|| panic!("no orders row:\n{stdout}"));
        line.split_whitespace().map(str::to_owned).collect()
    };
    // GROUP TOPIC PARTITION OFFSET-LAG: 10 in the log, 4 committed.
    assert_eq!(row(run(false).await.unwrap()), ["app", "orders", "0", "6"]);
    // --verbose: ... CURRENT-OFFSET LEADER-EPOCH LOG-END-OFFSET OFFSET-LAG.
    let verbose = row(run(true).await.unwrap());
    assert_eq!(
        &verbose[verbose.len() - 4..],
        ["4", "-", "10", "6"],
        "{verbose:?}"
    );
    member.leave().await.unwrap();
    server.shutdown().await;
}
