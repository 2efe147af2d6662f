//! `kafka-console-producer` and `kafka-console-consumer` against a kcoord daemon started in
//! this process: lines in, records out, keys and partitions, compression and acks, and how
//! they stop.

use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use kcoord_client::admin::NewTopic;
use kcoord_client::produce::partition_for_key;
use kcoord_client::{Client, ClientConfig, Consumer, FetchOptions};
use kcoord_record_batches::Compression;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// Bound on every wait.
const WAIT: Duration = Duration::from_secs(30);

struct Node {
    handle: kcoord_server::ServerHandle,
    broker: String,
}

async fn start(extra: &str) -> Node {
    let text = format!("node.id=1\nlisteners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\noffsets.topic.num.partitions=1\n{extra}");
    let config =
        kcoord_server::Config::parse("console-test", &text).unwrap_or_else(|e| panic!("{e}"));
    let handle = kcoord_server::start(config)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let broker = handle.broker_addr().expect("broker listener").to_string();
    Node { handle, broker }
}

async fn create_topic(bootstrap: &str, name: &str, partitions: i32) {
    let client = Client::connect(bootstrap, ClientConfig::new("console-test"))
        .await
        .unwrap();
    for result in client
        .create_topics(&[NewTopic::new(name, partitions, 1)], false)
        .await
        .unwrap()
    {
        result
            .result
            .unwrap_or_else(|e| panic!("{}: {e}", result.name));
    }
}

async fn producer(args: &[&str], input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kafka-console-producer"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("run kafka-console-producer");
    let mut stdin = child.stdin.take().expect("stdin");
    // A producer that fails before reading (a bad flag) closes its stdin early.
    let _ = stdin.write_all(input.as_bytes()).await;
    drop(stdin);
    tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .expect("the producer finished")
        .unwrap()
}

fn consumer_command(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kafka-console-consumer"));
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

async fn consumer(args: &[&str]) -> Output {
    tokio::time::timeout(WAIT, consumer_command(args).output())
        .await
        .expect("the consumer finished")
        .expect("run kafka-console-consumer")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// (exit status, stdout, stderr)
fn outcome(output: &Output) -> (Option<i32>, String, String) {
    (
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lines_produced_come_back_from_the_beginning() {
    let node = start("auto.create.topics.enable=true\n").await;
    let b = node.broker.as_str();
    // The topic does not exist: the producer has it created.
    let (code, out, err) = outcome(
        &producer(
            &["--bootstrap-server", b, "--topic", "lines"],
            "one\ntwo\r\n\nthree\n",
        )
        .await,
    );
    assert_eq!((code, out.as_str(), err.as_str()), (Some(0), "", ""));

    let (code, out, err) = outcome(
        &consumer(&[
            "--bootstrap-server",
            b,
            "--topic",
            "lines",
            "--from-beginning",
            "--max-messages",
            "4",
        ])
        .await,
    );
    assert_eq!(
        (code, out.as_str()),
        (Some(0), "one\ntwo\n\nthree\n"),
        "{err}"
    );
    assert_eq!(err, "Processed a total of 4 messages\n");

    // --max-messages stops early; timestamps print as Kafka prints them.
    let (code, out, _) = outcome(
        &consumer(&[
            "--bootstrap-server",
            b,
            "--topic",
            "lines",
            "--from-beginning",
            "--max-messages",
            "1",
            "--property",
            "print.timestamp=true",
        ])
        .await,
    );
    assert_eq!(code, Some(0));
    let (timestamp, value) = out
        .trim_end()
        .split_once('\t')
        .expect("timestamp, tab, value");
    assert!(
        timestamp.starts_with("CreateTime:")
            && timestamp["CreateTime:".len()..].parse::<i64>().is_ok(),
        "{out}"
    );
    assert_eq!(value, "one");

    // A partition from an offset.
    let (code, out, _) = outcome(
        &consumer(&[
            "--bootstrap-server",
            b,
            "--topic",
            "lines",
            "--partition",
            "0",
            "--offset",
            "2",
            "--max-messages",
            "2",
        ])
        .await,
    );
    assert_eq!((code, out.as_str()), (Some(0), "\nthree\n"));
    node.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyed_lines_go_to_the_default_partitioners_partition() {
    let node = start("").await;
    let b = node.broker.as_str();
    create_topic(b, "keyed", 3).await;
    let keys = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"];
    let input: String = keys
        .iter()
        .enumerate()
        .map(|(i, k)| format!("{k}:value {i}\n"))
        .collect();
    let (code, _, err) = outcome(
        &producer(
            &[
                "--bootstrap-server",
                b,
                "--topic",
                "keyed",
                "--property",
                "parse.key=true",
                "--property",
                "key.separator=:",
            ],
            &input,
        )
        .await,
    );
    assert_eq!((code, err.as_str()), (Some(0), ""));

    // Each key is in the partition murmur2 picks.
    let client = Client::connect(b, ClientConfig::new("console-test"))
        .await
        .unwrap();
    let reader = Consumer::new(client);
    for partition in 0..3 {
        let fetched = reader
            .fetch(
                "keyed",
                partition,
                0,
                &FetchOptions {
                    max_wait_ms: 10,
                    ..FetchOptions::default()
                },
            )
            .await
            .unwrap();
        for record in fetched.records {
            let key = record.key.expect("a key");
            assert_eq!(partition_for_key(&key, 3), partition, "{}", text(&key));
        }
    }

    let (code, out, err) = outcome(
        &consumer(&[
            "--bootstrap-server",
            b,
            "--topic",
            "keyed",
            "--from-beginning",
            "--max-messages",
            "6",
            "--property",
            "print.key=true",
            "--property",
            "key.separator=|",
        ])
        .await,
    );
    assert_eq!(code, Some(0), "{err}");
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort_unstable();
    let mut expected: Vec<String> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| format!("{k}|value {i}"))
        .collect();
    expected.sort();
    assert_eq!(lines, expected);

    // A line without the separator stops the producer, as Kafka's reader does.
    let (code, _, err) = outcome(
        &producer(
            &[
                "--bootstrap-server",
                b,
                "--topic",
                "keyed",
                "--property",
                "parse.key=true",
            ],
            "k\tv\nno separator\n",
        )
        .await,
    );
    assert_eq!(
        (code, err.as_str()),
        (
            Some(1),
            "No key separator found on line number 2: 'no separator'\n"
        )
    );
    node.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compression_and_acks_flags_are_honoured() {
    let node = start("").await;
    let b = node.broker.as_str();
    create_topic(b, "flags", 1).await;
    // --compression-codec without a value is gzip.
    let runs: [(&[&str], &str); 4] = [
        (&["--compression-codec"], "gzip\n"),
        (
            &[
                "--compression-codec",
                "zstd",
                "--request-required-acks",
                "1",
            ],
            "zstd\n",
        ),
        (
            &[
                "--compression-codec",
                "lz4",
                "--request-required-acks",
                "all",
            ],
            "lz4\n",
        ),
        (&["--request-required-acks", "0"], "acks0\n"),
    ];
    for (flags, line) in runs {
        let mut args = vec!["--bootstrap-server", b, "--topic", "flags"];
        args.extend_from_slice(flags);
        let (code, _, err) = outcome(&producer(&args, line).await);
        assert_eq!((code, err.as_str()), (Some(0), ""), "{flags:?}");
    }
    let (code, out, _) = outcome(
        &consumer(&[
            "--bootstrap-server",
            b,
            "--topic",
            "flags",
            "--from-beginning",
            "--max-messages",
            "4",
        ])
        .await,
    );
    assert_eq!((code, out.as_str()), (Some(0), "gzip\nzstd\nlz4\nacks0\n"));

    // The codecs were used on the wire: each batch says so in its header.
    let client = Client::connect(b, ClientConfig::new("console-test"))
        .await
        .unwrap();
    let conn = client.bootstrap_connection().await.unwrap();
    let metadata = client.metadata(Some(vec!["flags".into()])).await.unwrap();
    let topic_id = metadata.topics[0].topic_id;
    let request = kcoord_wire::messages::FetchRequest {
        max_wait_ms: 10,
        min_bytes: 1,
        topics: vec![kcoord_wire::messages::fetch_request::FetchTopic {
            topic: "flags".into(),
            topic_id,
            partitions: vec![kcoord_wire::messages::fetch_request::FetchPartition {
                partition: 0,
                fetch_offset: 0,
                partition_max_bytes: 1 << 20,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let response = conn.send_negotiated(request).await.unwrap();
    let records = response.responses[0].partitions[0]
        .records
        .as_ref()
        .unwrap()
        .to_bytes();
    let codecs: Vec<Compression> = kcoord_record_batches::split_batches(records)
        .map(|b| b.unwrap().0.compression().unwrap())
        .collect();
    assert_eq!(
        codecs,
        vec![
            Compression::Gzip,
            Compression::Zstd,
            Compression::Lz4,
            Compression::None
        ]
    );

    let (code, _, err) = outcome(
        &producer(
            &[
                "--bootstrap-server",
                b,
                "--topic",
                "flags",
                "--compression-codec",
                "brotli",
            ],
            "x\n",
        )
        .await,
    );
    assert_eq!(code, Some(1));
    assert!(
        err.contains("Invalid value brotli for configuration compression.type"),
        "{err}"
    );
    let (code, _, err) = outcome(
        &producer(
            &[
                "--bootstrap-server",
                b,
                "--topic",
                "flags",
                "--request-required-acks",
                "2",
            ],
            "x\n",
        )
        .await,
    );
    assert_eq!(code, Some(1));
    assert!(
        err.contains("Invalid value 2 for configuration acks"),
        "{err}"
    );
    node.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_topic_stops_the_producer_when_the_server_does_not_create_it() {
    let node = start("").await;
    let b = node.broker.as_str();
    let (code, out, err) =
        outcome(&producer(&["--bootstrap-server", b, "--topic", "missing"], "x\n").await);
    assert_eq!((code, out.as_str()), (Some(1), ""));
    assert!(
        err.starts_with("Topic missing does not exist and the server did not create it")
            && err.contains("auto.create.topics.enable"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");

    let (code, _, err) = outcome(
        &consumer(&[
            "--bootstrap-server",
            b,
            "--topic",
            "missing",
            "--timeout-ms",
            "100",
        ])
        .await,
    );
    assert_eq!(code, Some(1));
    assert!(
        err.contains("UNKNOWN_TOPIC_OR_PARTITION") && err.contains("missing"),
        "{err}"
    );
    node.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_consumer_exits_after_timeout_ms_without_a_record() {
    let node = start("").await;
    let b = node.broker.as_str();
    create_topic(b, "quiet", 2).await;
    let started = Instant::now();
    let (code, out, err) = outcome(
        &consumer(&[
            "--bootstrap-server",
            b,
            "--topic",
            "quiet",
            "--timeout-ms",
            "300",
        ])
        .await,
    );
    let took = started.elapsed();
    assert_eq!((code, out.as_str()), (Some(0), ""));
    assert_eq!(err, "Error processing message, terminating consumer process: TimeoutException: no message for 300 ms\nProcessed a total of 0 messages\n");
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(10),
        "{took:?}"
    );

    // Records, then silence: the timeout counts from the last record.
    let (code, _, _) =
        outcome(&producer(&["--bootstrap-server", b, "--topic", "quiet"], "a\nb\n").await);
    assert_eq!(code, Some(0));
    let (code, out, err) = outcome(
        &consumer(&[
            "--bootstrap-server",
            b,
            "--topic",
            "quiet",
            "--from-beginning",
            "--timeout-ms",
            "300",
        ])
        .await,
    );
    assert_eq!(code, Some(0));
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines, ["a", "b"]);
    assert!(err.ends_with("Processed a total of 2 messages\n"), "{err}");
    node.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_from_beginning_the_consumer_starts_at_the_end() {
    let node = start("").await;
    let b = node.broker.as_str();
    create_topic(b, "tail", 1).await;
    let (code, _, _) =
        outcome(&producer(&["--bootstrap-server", b, "--topic", "tail"], "early\n").await);
    assert_eq!(code, Some(0));
    let running = consumer_command(&[
        "--bootstrap-server",
        b,
        "--topic",
        "tail",
        "--max-messages",
        "1",
        "--timeout-ms",
        "20000",
    ])
    .spawn()
    .unwrap();
    let output = running.wait_with_output();
    tokio::pin!(output);
    // Keep producing until the consumer, once at the end, sees one.
    let deadline = Instant::now() + WAIT;
    let output = loop {
        tokio::select! {
            output = &mut output => break output.unwrap(),
            _ = tokio::time::sleep(Duration::from_millis(300)) => {
                assert!(Instant::now() < deadline, "the consumer saw nothing");
                let (code, _, _) = outcome(&producer(&["--bootstrap-server", b, "--topic", "tail"], "late\n").await);
                assert_eq!(code, Some(0));
            }
        }
    };
    assert_eq!(
        outcome(&output),
        (
            Some(0),
            "late\n".into(),
            "Processed a total of 1 messages\n".into()
        )
    );
    node.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_errors_exit_1() {
    let (code, _, err) = outcome(
        &consumer(&[
            "--bootstrap-server",
            "127.0.0.1:1",
            "--topic",
            "t",
            "--offset",
            "5",
        ])
        .await,
    );
    assert_eq!(
        (code, err.as_str()),
        (
            Some(1),
            "The partition is required when offset is specified.\n"
        )
    );
    let (code, _, err) = outcome(&consumer(&["--topic", "t"]).await);
    assert_eq!(code, Some(1));
    assert!(err.contains("--bootstrap-server"), "{err}");
    let (code, _, err) = outcome(&producer(&["--bootstrap-server", "127.0.0.1:1"], "").await);
    assert_eq!(code, Some(1));
    assert!(err.contains("--topic"), "{err}");
    let (code, out, _) = outcome(&producer(&["--help"], "").await);
    assert_eq!(code, Some(0));
    assert!(
        out.contains("--request-required-acks") && out.contains("--compression-codec"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_stdout_ends_the_consumer_as_kafkas() {
    let node = start("").await;
    let b = node.broker.as_str();
    create_topic(b, "piped", 1).await;
    let (code, _, _) =
        outcome(&producer(&["--bootstrap-server", b, "--topic", "piped"], "a\nb\n").await);
    assert_eq!(code, Some(0));
    let mut child = consumer_command(&[
        "--bootstrap-server",
        b,
        "--topic",
        "piped",
        "--from-beginning",
        "--timeout-ms",
        "20000",
    ])
    .spawn()
    .unwrap();
    // Nobody reads what it prints (`kafka-console-consumer ... | head -0`).
    drop(child.stdout.take());
    let output = tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .expect("the consumer finished")
        .unwrap();
    let (code, _, err) = outcome(&output);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.starts_with(
            "Unable to write to standard out, closing consumer.\nProcessed a total of "
        ),
        "{err}"
    );
    node.handle.shutdown().await;
}
