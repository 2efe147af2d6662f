//! The data plane when the disk refuses writes: a file size limit (RLIMIT_FSIZE, set on the
//! running daemon with `prlimit`) makes appends fail as a full disk does. The write is refused
//! with KAFKA_STORAGE_ERROR, reads go on, the daemon stays up, and after a restart every
//! acknowledged record is there and the log goes on without a gap.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::Daemon;
use kcoord_client::Connection;
use kcoord_record_batches::{BatchBuilder, BatchOptions};
use kcoord_wire::messages::fetch_request::{FetchPartition, FetchTopic};
use kcoord_wire::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kcoord_wire::messages::{CreateTopicsRequest, FetchRequest, ProduceRequest};

const WAIT: Duration = Duration::from_secs(20);

async fn connect(daemon: &Daemon) -> Connection {
    daemon.client_connection("faults", WAIT).await
}

fn batch(value: &[u8]) -> Bytes {
    let mut b = BatchBuilder::new(BatchOptions::default());
    b.push(0, Some(b"k"), Some(value), &[]).unwrap();
    b.build().unwrap()
}

/// (error code, base offset) of one Produce.
async fn produce(conn: &Connection, value: &[u8]) -> (i16, i64) {
    let req = ProduceRequest {
        acks: -1,
        timeout_ms: 5000,
        topic_data: vec![TopicProduceData {
            name: "disk".into(),
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(batch(value).into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let resp = conn.send(req, 12).await.unwrap();
    let p = &resp.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

/// How many records a fetch from offset 0 returns, and the high watermark.
async fn fetch_count(conn: &Connection) -> (usize, i64) {
    let req = FetchRequest {
        replica_id: -1,
        max_bytes: 50 << 20,
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic: "disk".into(),
            partitions: vec![FetchPartition {
                partition: 0,
                fetch_offset: 0,
                partition_max_bytes: 50 << 20,
                current_leader_epoch: -1,
                log_start_offset: -1,
                last_fetched_epoch: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let resp = conn.send(req, 12).await.unwrap();
    let p = &resp.responses[0].partitions[0];
    assert_eq!(p.error_code, 0);
    let bytes = p.records.as_ref().map(|r| r.to_bytes()).unwrap_or_default();
    let mut count = 0;
    for b in kcoord_record_batches::split_batches(bytes) {
        let (h, _) = b.unwrap();
        count += h.record_count as usize;
    }
    (count, p.high_watermark)
}

#[tokio::test]
async fn a_full_disk_refuses_writes_keeps_reads_and_loses_nothing_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let config = [format!("log.dirs={}", dir.path().display())];
    let config: Vec<&str> = config.iter().map(String::as_str).collect();
    let daemon = Daemon::start(&config);
    let conn = connect(&daemon).await;
    use kcoord_wire::messages::create_topics_request::CreatableTopic;
    let created = conn
        .send(
            CreateTopicsRequest {
                topics: vec![CreatableTopic {
                    name: "disk".into(),
                    num_partitions: 1,
                    replication_factor: 1,
                    ..Default::default()
                }],
                timeout_ms: 5000,
                ..Default::default()
            },
            7,
        )
        .await
        .unwrap();
    assert_eq!(created.topics[0].error_code, 0);
    let value = vec![b'v'; 1000];
    for i in 0..20 {
        assert_eq!(produce(&conn, &value).await, (0, i));
    }
    // The disk is now "full" a little past what is written.
    let segment = dir.path().join("disk-0").join("00000000000000000000.log");
    let limit = std::fs::metadata(&segment).unwrap().len() + 5_000;
    let pid = daemon.pid().unwrap().to_string();
    let status = std::process::Command::new("prlimit")
        .args(["--pid", &pid, &format!("--fsize={limit}")])
        .status()
        .expect("prlimit (util-linux) runs");
    assert!(status.success());
    let mut acknowledged = 20;
    let mut refused = false;
    for _ in 0..50 {
        match produce(&conn, &value).await {
            (0, offset) => {
                assert_eq!(offset, acknowledged);
                acknowledged += 1;
            }
            (56, -1) => {
                refused = true;
                break;
            }
            other => panic!("unexpected answer {other:?}"),
        }
    }
    assert!(refused, "the file size limit never refused a write");
    assert_eq!(
        produce(&conn, &value).await.0,
        56,
        "refused again, not half-written"
    );
    assert_eq!(
        fetch_count(&conn).await,
        (acknowledged as usize, acknowledged),
        "reads are still served"
    );
    daemon.assert_alive();
    daemon.stop();

    let again = Daemon::start(&config);
    let conn = connect(&again).await;
    assert_eq!(
        fetch_count(&conn).await,
        (acknowledged as usize, acknowledged),
        "every acknowledged record is there"
    );
    assert_eq!(
        produce(&conn, &value).await,
        (0, acknowledged),
        "the log goes on where it was"
    );
    again.stop();
}
