//! File integrity end to end (issue 12 item 8), with the real `kcoord` binary: a second daemon
//! on the same log directory is refused while the first serves on; a torn tail of the metadata
//! log is cut at startup with a WARN saying how many bytes, and a batch a crash cut short goes
//! whole (no topic without its partitions); a corrupt entry in the middle of the metadata log
//! stops the start (status 1, the file and position named); a corrupt coordinator shard log
//! leaves that shard's groups unavailable with an ERROR naming the file while the other shards
//! serve.

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{config_text, run_to_exit, Daemon};
use kcoord_client::admin::{NewTopic, OffsetAndMetadata, TopicPartition};
use kcoord_client::{Client, ClientConfig, Connection};
use kcoord_wire::messages::OffsetFetchRequest;
use kcoord_wire::ErrorCode;

const WAIT: Duration = Duration::from_secs(30);
/// Format 3's header: magic, next offset, CRC.
const HEADER: usize = 8 + 8 + 4;
/// Bit 31 of an entry's length field: the next entry belongs to the same batch.
const MORE: u32 = 1 << 31;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn client(daemon: &Daemon) -> Client {
    Client::connect(
        &daemon.bootstrap(),
        ClientConfig::new("log-integrity").with_request_timeout(WAIT),
    )
    .await
    .unwrap()
}

fn create_topic(daemon: &Daemon, name: &str) {
    runtime().block_on(async {
        let client = client(daemon).await;
        for r in client
            .create_topics(&[NewTopic::new(name, 2, 1)], false)
            .await
            .unwrap()
        {
            r.result.unwrap_or_else(|e| panic!("{}: {e}", r.name));
        }
    });
}

fn topic_names(daemon: &Daemon) -> Vec<String> {
    runtime().block_on(async {
        let metadata = client(daemon).await.metadata(None).await.unwrap();
        let mut names: Vec<String> = metadata.topics.into_iter().filter_map(|t| t.name).collect();
        names.sort();
        names
    })
}

fn metadata_log(log_dir: &Path) -> PathBuf {
    log_dir
        .join("__cluster_metadata-0")
        .join(kcoord_metadata::file_log::FILE_NAME)
}

fn log_dirs_line(dir: &Path) -> String {
    format!("log.dirs={}", dir.display())
}

/// Runs the binary on a config file in `dir` to its exit: (status code, stderr).
fn start_to_exit(dir: &Path, config: &str) -> (Option<i32>, String) {
    let path = dir.join("second.properties");
    std::fs::write(&path, config).unwrap();
    let (status, _stdout, stderr) = run_to_exit(&[path.to_str().unwrap()], WAIT);
    (status.code(), stderr)
}

#[test]
fn a_second_daemon_on_the_same_log_dirs_fails_and_the_first_serves_on() {
    let data = tempfile::tempdir().unwrap();
    let line = log_dirs_line(data.path());
    let first = Daemon::start(&[&line]);
    create_topic(&first, "before");

    let scratch = tempfile::tempdir().unwrap();
    let (code, stderr) = start_to_exit(scratch.path(), &config_text(&[&line]));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("another kcoord holds this log directory")
            && stderr.contains(
                &data
                    .path()
                    .join("__cluster_metadata-0")
                    .display()
                    .to_string()
            ),
        "{stderr}"
    );

    // The first one noticed nothing.
    first.assert_alive();
    create_topic(&first, "after");
    assert_eq!(topic_names(&first), vec!["after", "before"]);
    first.stop();

    // The same with metadata.log.dir alone.
    let metadata = tempfile::tempdir().unwrap();
    let line = format!("metadata.log.dir={}", metadata.path().display());
    let first = Daemon::start(&[&line]);
    let (code, stderr) = start_to_exit(scratch.path(), &config_text(&[&line]));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("another kcoord holds this log directory"),
        "{stderr}"
    );
    first.assert_alive();
    create_topic(&first, "still-served");
    first.stop();

    // The same log.dirs with metadata logs of their own: the coordinator logs' lock stops the
    // second before it touches a partition.
    let first_metadata = tempfile::tempdir().unwrap();
    let own = format!("metadata.log.dir={}", first_metadata.path().display());
    let line = log_dirs_line(data.path());
    let first = Daemon::start(&[&line, &own]);
    let second_metadata = tempfile::tempdir().unwrap();
    let other = format!("metadata.log.dir={}", second_metadata.path().display());
    let (code, stderr) = start_to_exit(scratch.path(), &config_text(&[&line, &other]));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("another kcoord holds this log directory")
            && stderr.contains(&data.path().join("group-coordinator").display().to_string()),
        "{stderr}"
    );
    first.assert_alive();
    first.stop();
}

/// Starts a daemon on `dir`, creates `topic`, stops it, and appends `tail` to the metadata log;
/// then the daemon starts again with a WARN about the cut and the topic.
fn restart_after_tail(tail: &[u8], reason: &str) {
    let data = tempfile::tempdir().unwrap();
    let line = log_dirs_line(data.path());
    let daemon = Daemon::start(&[&line]);
    create_topic(&daemon, "kept");
    daemon.stop();

    let path = metadata_log(data.path());
    let whole = std::fs::metadata(&path).unwrap().len();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(tail)
        .unwrap();

    let daemon = Daemon::start(&[&line]);
    let warn = daemon.wait_for_log_line(WAIT, "warning about the torn tail", |l| {
        l.contains("WARN") && l.contains("torn tail of the metadata log")
    });
    assert!(
        warn.contains(&format!("torn_bytes={}", tail.len()))
            && warn.contains(&format!("cut {} bytes at byte {whole}", tail.len()))
            && warn.contains(reason)
            && warn.contains(&path.display().to_string()),
        "{warn}"
    );
    assert_eq!(topic_names(&daemon), vec!["kept"]);
    // The file was cut back to its whole entries, and appends go on after them.
    assert_eq!(std::fs::metadata(&path).unwrap().len(), whole);
    create_topic(&daemon, "later");
    daemon.stop();
    let daemon = Daemon::start(&[&line]);
    assert_eq!(topic_names(&daemon), vec!["kept", "later"]);
    assert!(!daemon.stderr_log().contains("torn tail"));
    daemon.stop();
}

#[test]
fn a_torn_entry_at_the_end_of_the_metadata_log_is_cut_with_a_warn() {
    // Half an entry: a length of 120 bytes, a checksum and the first 20 bytes of a body.
    let mut half = 120u32.to_be_bytes().to_vec();
    half.extend_from_slice(&[0xab; 24]);
    restart_after_tail(&half, "the file ends inside it");
}

#[test]
fn zeros_at_the_end_of_the_metadata_log_are_cut_with_a_warn() {
    restart_after_tail(&[0u8; 4096], "zero bytes after the last whole entry");
}

/// Where each batch of a format 3 log file starts, and how many entries it has.
fn batches(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut batches = Vec::new();
    let (mut at, mut open) = (HEADER, false);
    while at < bytes.len() {
        let field = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
        if !open {
            batches.push((at, 0));
        }
        batches.last_mut().unwrap().1 += 1;
        open = field & MORE != 0;
        at += 4 + (field & !MORE) as usize;
    }
    batches
}

#[test]
fn a_batch_cut_short_at_the_end_of_the_metadata_log_is_cut_whole_with_a_warn() {
    let data = tempfile::tempdir().unwrap();
    let line = log_dirs_line(data.path());
    let daemon = Daemon::start(&[&line]);
    create_topic(&daemon, "kept");
    create_topic(&daemon, "torn");
    daemon.stop();

    // The last batch is the CreateTopics of `torn`: its TopicRecord and two PartitionRecords.
    // A crash that wrote its first entry only leaves a topic without partitions, unless the
    // whole batch goes.
    let path = metadata_log(data.path());
    let bytes = std::fs::read(&path).unwrap();
    let &(start, entries) = batches(&bytes).last().unwrap();
    assert_eq!(entries, 3, "{:?}", batches(&bytes));
    let first_len = 4 + (u32::from_be_bytes(bytes[start..start + 4].try_into().unwrap()) & !MORE);
    let torn_end = start + first_len as usize;
    std::fs::write(&path, &bytes[..torn_end]).unwrap();

    let daemon = Daemon::start(&[&line]);
    let warn = daemon.wait_for_log_line(WAIT, "warning about the torn batch", |l| {
        l.contains("WARN") && l.contains("torn tail of the metadata log")
    });
    let cut = torn_end - start;
    assert!(
        warn.contains(&format!("torn_bytes={cut}"))
            && warn.contains(&format!(
                "cut {cut} bytes at byte {start}: the first records of a batch whose end never \
                 reached the file (1 whole record)"
            )),
        "{warn}"
    );
    assert_eq!(topic_names(&daemon), vec!["kept"]);
    assert_eq!(std::fs::metadata(&path).unwrap().len() as usize, start);
    create_topic(&daemon, "torn");
    daemon.stop();
    let daemon = Daemon::start(&[&line]);
    assert_eq!(topic_names(&daemon), vec!["kept", "torn"]);
    daemon.stop();
}

#[test]
fn a_corrupt_entry_in_the_middle_of_the_metadata_log_stops_the_start() {
    let data = tempfile::tempdir().unwrap();
    let line = log_dirs_line(data.path());
    let daemon = Daemon::start(&[&line]);
    create_topic(&daemon, "a");
    create_topic(&daemon, "b");
    daemon.stop();

    // A byte inside the body of the first entry (the FeatureLevelRecord), with entries after it.
    let path = metadata_log(data.path());
    let mut bytes = std::fs::read(&path).unwrap();
    let position = HEADER + 4 + 4 + 10;
    bytes[position] ^= 0x5a;
    std::fs::write(&path, &bytes).unwrap();

    let scratch = tempfile::tempdir().unwrap();
    let (code, stderr) = start_to_exit(scratch.path(), &config_text(&[&line]));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&path.display().to_string())
            && stderr.contains(&format!("the entry at byte {HEADER}"))
            && stderr.contains("is corrupt"),
        "{stderr}"
    );
    // Nothing was cut: the file is as it was left.
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

/// Kafka's `Utils.abs(groupId.hashCode()) % partitions` (Java's `String.hashCode`).
fn shard_of(group: &str, shards: usize) -> usize {
    let hash = group.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    });
    (hash & 0x7fff_ffff) as usize % shards
}

/// A group id of each of the two shards.
fn groups() -> [String; 2] {
    let find = |shard| {
        (0..)
            .map(|i| format!("group-{i}"))
            .find(|g| shard_of(g, 2) == shard)
            .unwrap()
    };
    [find(0), find(1)]
}

/// OffsetFetch v7 (one group, every offset) straight to the daemon: (error, offsets).
fn fetch(daemon: &Daemon, group: &str) -> (i16, Vec<(String, i32, i64)>) {
    runtime().block_on(async {
        let conn = Connection::connect(
            &daemon.bootstrap(),
            ClientConfig::new("log-integrity").with_request_timeout(WAIT),
        )
        .await
        .unwrap();
        let request = OffsetFetchRequest {
            group_id: group.to_owned(),
            topics: None,
            ..Default::default()
        };
        let response = conn.send(request, 7).await.unwrap();
        let offsets = response
            .topics
            .iter()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .map(|p| (t.name.clone(), p.partition_index, p.committed_offset))
            })
            .collect();
        (response.error_code, offsets)
    })
}

/// Commits `offsets` for `group`, retrying while the just-started daemon is still loading the
/// group's shard (COORDINATOR_LOAD_IN_PROGRESS, which clients retry).
async fn commit_once_loaded(
    client: &Client,
    group: &str,
    offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>,
) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let results = client.commit_offsets(group, offsets, None).await.unwrap();
        let loading = results.values().any(|r| {
            r.as_ref()
                .is_err_and(|e| e.error_code() == Some(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS))
        });
        if !loading {
            for (tp, r) in results {
                r.unwrap_or_else(|e| panic!("{group} {tp:?}: {e}"));
            }
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{group}: never loaded"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[test]
fn a_corrupt_shard_log_leaves_its_groups_unavailable_and_the_other_shard_serves() {
    let data = tempfile::tempdir().unwrap();
    let lines = [
        log_dirs_line(data.path()),
        "offsets.topic.num.partitions=2".to_owned(),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let daemon = Daemon::start(&lines);
    create_topic(&daemon, "t");
    let [broken, healthy] = groups();
    runtime().block_on(async {
        let client = client(&daemon).await;
        for (group, offset) in [(&broken, 5), (&healthy, 7)] {
            for round in 0..3 {
                let offsets = BTreeMap::from([(
                    TopicPartition::new("t", 0),
                    OffsetAndMetadata::new(offset + round),
                )]);
                commit_once_loaded(&client, group, &offsets).await;
            }
        }
    });
    assert_eq!(fetch(&daemon, &healthy), (0, vec![("t".into(), 0, 9)]));
    daemon.stop();

    // A byte in the body of the first entry of shard 0's log, with entries after it.
    let shard_log = data
        .path()
        .join("group-coordinator")
        .join("0")
        .join(kcoord_metadata::file_log::FILE_NAME);
    let mut bytes = std::fs::read(&shard_log).unwrap();
    assert!(bytes.len() > HEADER + 200, "{} bytes", bytes.len());
    bytes[HEADER + 4 + 4 + 12] ^= 0x5a;
    std::fs::write(&shard_log, &bytes).unwrap();

    let daemon = Daemon::start(&lines);
    let error = daemon.wait_for_log_line(WAIT, "about the corrupt shard log", |l| {
        l.contains("ERROR") && l.contains("coordinator shard")
    });
    assert!(
        error.contains("shard=0")
            && error.contains(&shard_log.display().to_string())
            && error.contains(&format!("the entry at byte {HEADER}"))
            && error.contains("is corrupt"),
        "{error}"
    );
    // The healthy shard loads on its own task, which may finish after the broken one failed.
    daemon.wait_for_log_line(WAIT, "the healthy shard loaded", |l| {
        l.contains("coordinator shard loaded") && l.contains("shard=1")
    });
    let unavailable = ErrorCode::COORDINATOR_NOT_AVAILABLE.code();
    assert_eq!(fetch(&daemon, &broken), (unavailable, vec![]));
    assert_eq!(fetch(&daemon, &healthy), (0, vec![("t".into(), 0, 9)]));
    // The controller and the data plane serve on.
    create_topic(&daemon, "u");
    assert_eq!(topic_names(&daemon), vec!["t", "u"]);
    daemon.stop();
    // The corrupt file was left for a look, not cut or rewritten.
    assert_eq!(std::fs::read(&shard_log).unwrap(), bytes);
}
