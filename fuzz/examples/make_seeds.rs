//! Writes the fuzz targets' seed inputs to `fuzz/seeds/<target>/` from real encodings:
//! random values of every request, response and header type at every version; a session of
//! real requests (topics, produce, fetch, a streams group, offsets); the durable logs a node
//! writes while it serves that session; the record batch fixtures Kafka 4.1 wrote; the config
//! file and every documented config key. Deterministic (fixed seeds), so re-running it rewrites
//! the same files.
//!
//! `cargo run --manifest-path fuzz/Cargo.toml --example make_seeds`

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use kcoord_fuzz::{dispatch_input, request_frame, Selector};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::*;
use rand::SeedableRng;

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let seeds = root.join("seeds");
    let session = session_frames();
    request_seeds(&seeds.join("request_decode"));
    dispatch_seeds(&seeds.join("dispatch"), &session);
    frame_seeds(&seeds.join("frame_decode"), &session);
    config_seeds(&seeds.join("config_parse"), &root.join(".."));
    record_seeds(&seeds.join("record_batch"), &root.join(".."));
    log_seeds(&seeds.join("metadata_log"), &session);
}

/// Empties `dir` of generated seeds. Inputs named `regression-*` are kept: they are what
/// fuzzing found (FUZZING.md), written by hand, not by this program.
fn fresh(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with("regression-") {
            let path = entry.path();
            std::fs::remove_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
    }
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// The API a generated type belongs to, and whether it is the response.
fn api_of(type_name: &str) -> Option<(Option<ApiKey>, bool)> {
    match type_name {
        "RequestHeader" => return Some((None, false)),
        "ResponseHeader" => return Some((None, true)),
        _ => {}
    }
    ApiKey::ALL.iter().find_map(|api| {
        if type_name == format!("{}Request", api.name()) {
            Some((Some(*api), false))
        } else if type_name == format!("{}Response", api.name()) {
            Some((Some(*api), true))
        } else {
            None
        }
    })
}

/// One random value of every request, response and header at every version.
fn request_seeds(dir: &Path) {
    fresh(dir);
    let mut rng = rand::rngs::StdRng::seed_from_u64(13);
    for case in kcoord_wire::messages::round_trip_cases() {
        let Some((api, response)) = api_of(case.name) else {
            continue;
        };
        for version in case.versions.0..=case.versions.1 {
            let body = (case.sample)(&mut rng, version)
                .unwrap_or_else(|e| panic!("{} v{version}: {e}", case.name));
            let mut input = Selector::bytes(response, api, version).to_vec();
            input.extend_from_slice(&body);
            write(dir, &format!("{}-v{version}", case.name), &input);
        }
    }
}

fn batch(records: &[(&str, &str)]) -> Bytes {
    let mut builder = kcoord_record_batches::BatchBuilder::new(kcoord_record_batches::BatchOptions::default());
    for (key, value) in records {
        builder
            .push(
                1_700_000_000_000,
                Some(key.as_bytes()),
                Some(value.as_bytes()),
                &[],
            )
            .expect("a record");
    }
    builder.build().expect("a batch")
}

/// A session of real requests: create a topic, produce to it, read it back, run a streams
/// group over it and commit its offsets, describe, delete.
fn session_frames() -> Vec<Bytes> {
    use kcoord_wire::messages::create_topics_request::CreatableTopic;
    use kcoord_wire::messages::fetch_request::{FetchPartition, FetchTopic};
    use kcoord_wire::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    use kcoord_wire::messages::metadata_request::MetadataRequestTopic;
    use kcoord_wire::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use kcoord_wire::messages::offset_fetch_request::{
        OffsetFetchRequestGroup, OffsetFetchRequestTopics,
    };
    use kcoord_wire::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kcoord_wire::messages::streams_group_heartbeat_request::{Subtopology, Topology};

    let topic = "words";
    let mut frames = Vec::new();
    let mut id = 0;
    let mut next = || {
        id += 1;
        id
    };
    frames.push(request_frame(
        ApiKey::ApiVersions,
        3,
        next(),
        &ApiVersionsRequest {
            client_software_name: "fuzz".into(),
            client_software_version: "1".into(),
            ..Default::default()
        },
    ));
    frames.push(request_frame(
        ApiKey::CreateTopics,
        7,
        next(),
        &CreateTopicsRequest {
            topics: vec![CreatableTopic {
                name: topic.into(),
                num_partitions: 2,
                replication_factor: 1,
                ..Default::default()
            }],
            timeout_ms: 30_000,
            ..Default::default()
        },
    ));
    frames.push(request_frame(
        ApiKey::Metadata,
        12,
        next(),
        &MetadataRequest {
            topics: Some(vec![MetadataRequestTopic {
                name: Some(topic.into()),
                ..Default::default()
            }]),
            ..Default::default()
        },
    ));
    frames.push(request_frame(
        ApiKey::Produce,
        9,
        next(),
        &ProduceRequest {
            acks: -1,
            timeout_ms: 30_000,
            topic_data: vec![TopicProduceData {
                name: topic.into(),
                partition_data: vec![PartitionProduceData {
                    index: 0,
                    records: Some(batch(&[("a", "one"), ("b", "two")]).into()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        },
    ));
    frames.push(request_frame(
        ApiKey::Fetch,
        12,
        next(),
        &FetchRequest {
            replica_id: -1,
            max_wait_ms: 100,
            min_bytes: 1,
            max_bytes: 1 << 20,
            session_epoch: -1,
            topics: vec![FetchTopic {
                topic: topic.into(),
                partitions: vec![FetchPartition {
                    partition: 0,
                    fetch_offset: 0,
                    partition_max_bytes: 1 << 20,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        },
    ));
    frames.push(request_frame(
        ApiKey::ListOffsets,
        7,
        next(),
        &ListOffsetsRequest {
            replica_id: -1,
            topics: vec![ListOffsetsTopic {
                name: topic.into(),
                partitions: vec![ListOffsetsPartition {
                    partition_index: 0,
                    timestamp: -1,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        },
    ));
    frames.push(request_frame(
        ApiKey::InitProducerId,
        4,
        next(),
        &InitProducerIdRequest {
            transaction_timeout_ms: 60_000,
            producer_id: -1,
            producer_epoch: -1,
            ..Default::default()
        },
    ));
    frames.push(request_frame(
        ApiKey::StreamsGroupHeartbeat,
        0,
        next(),
        &StreamsGroupHeartbeatRequest {
            group_id: "app".into(),
            member_id: "member-1".into(),
            member_epoch: 0,
            rebalance_timeout_ms: 30_000,
            topology: Some(Topology {
                epoch: 1,
                subtopologies: vec![Subtopology {
                    subtopology_id: "0".into(),
                    source_topics: vec![topic.into()],
                    ..Default::default()
                }],
                ..Default::default()
            }),
            active_tasks: Some(vec![]),
            standby_tasks: Some(vec![]),
            warmup_tasks: Some(vec![]),
            process_id: Some("process-1".into()),
            ..Default::default()
        },
    ));
    frames.push(request_frame(
        ApiKey::OffsetCommit,
        9,
        next(),
        &OffsetCommitRequest {
            group_id: "app".into(),
            generation_id_or_member_epoch: 1,
            member_id: "member-1".into(),
            topics: vec![OffsetCommitRequestTopic {
                name: topic.into(),
                partitions: vec![OffsetCommitRequestPartition {
                    partition_index: 0,
                    committed_offset: 2,
                    committed_metadata: Some(String::new()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        },
    ));
    frames.push(request_frame(
        ApiKey::OffsetFetch,
        9,
        next(),
        &OffsetFetchRequest {
            groups: vec![OffsetFetchRequestGroup {
                group_id: "app".into(),
                member_epoch: -1,
                topics: Some(vec![OffsetFetchRequestTopics {
                    name: topic.into(),
                    partition_indexes: vec![0, 1],
                    ..Default::default()
                }]),
                ..Default::default()
            }],
            ..Default::default()
        },
    ));
    frames.push(request_frame(
        ApiKey::StreamsGroupDescribe,
        0,
        next(),
        &StreamsGroupDescribeRequest {
            group_ids: vec!["app".into()],
            ..Default::default()
        },
    ));
    frames.push(request_frame(
        ApiKey::ListGroups,
        5,
        next(),
        &ListGroupsRequest::default(),
    ));
    frames
}

/// The session as one input; every request the broker listener serves, at every version it
/// serves, as a random value (one input each); the controller listener's likewise.
fn dispatch_seeds(dir: &Path, session: &[Bytes]) {
    use kcoord_server::config::ListenerKind;
    use kcoord_server::rpc::versions::supported_versions;
    fresh(dir);
    write(dir, "session", &dispatch_input(false, session));
    let mut rng = rand::rngs::StdRng::seed_from_u64(88);
    for case in kcoord_wire::messages::round_trip_cases() {
        let Some((Some(api), false)) = api_of(case.name) else {
            continue;
        };
        for (kind, controller) in [
            (ListenerKind::Broker, false),
            (ListenerKind::Controller, true),
        ] {
            let Some(range) = supported_versions(api, kind) else {
                continue;
            };
            for version in range.min..=range.max {
                let body = (case.sample)(&mut rng, version)
                    .unwrap_or_else(|e| panic!("{} v{version}: {e}", case.name));
                let mut frame = kcoord_fuzz::request_header(api, version, 7);
                frame.extend_from_slice(&body);
                let name = format!("{}-v{version}-{kind}", api.name());
                write(dir, &name, &dispatch_input(controller, &[frame.freeze()]));
            }
        }
    }
}

/// The session's frames as one stream, read with a few frame maxima and chunk sizes.
fn frame_seeds(dir: &Path, session: &[Bytes]) {
    fresh(dir);
    let mut stream = Vec::new();
    for f in session {
        stream.extend_from_slice(&(f.len() as u32).to_be_bytes());
        stream.extend_from_slice(f);
    }
    for (max, chunk) in [(1u32 << 20, 255u8), (200, 7), (64, 1)] {
        let mut input = max.to_be_bytes()[1..].to_vec();
        input.push(chunk);
        input.extend_from_slice(&stream);
        write(dir, &format!("session-max{max}-chunk{chunk}"), &input);
    }
}

/// The shipped config, the fuzz node's, and one line per key of config/README.md's reference
/// at its documented default.
fn config_seeds(dir: &Path, repo: &Path) {
    fresh(dir);
    let shipped = std::fs::read(repo.join("config/server.properties")).expect("server.properties");
    write(dir, "server.properties", &shipped);
    write(dir, "fuzz-node", kcoord_fuzz::NODE_CONFIG.as_bytes());
    let readme = std::fs::read_to_string(repo.join("config/README.md")).expect("config/README.md");
    let mut every = String::from(kcoord_fuzz::NODE_CONFIG);
    for line in readme.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let [_, key, _, default, ..] = cells[..] else {
            continue;
        };
        let (Some(key), Some(default)) = (unquote(key), unquote(default)) else {
            continue;
        };
        if key.contains('.') && !key.contains(' ') && !every.contains(&format!("\n{key}=")) {
            every.push_str(&format!("{key}={default}\n"));
        }
    }
    write(dir, "every-documented-key", every.as_bytes());
}

fn unquote(cell: &str) -> Option<&str> {
    cell.strip_prefix('`')?.strip_suffix('`')
}

/// Kafka 4.1's batches (crates/record-batches/testdata), with CRC fixing off and on, and a batch of
/// ours per codec.
fn record_seeds(dir: &Path, repo: &Path) {
    fresh(dir);
    let fixtures = repo.join("crates/record-batches/testdata/kafka-4.1.0");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&fixtures)
        .expect("the record fixtures")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "hex"))
        .collect();
    names.sort();
    for path in names {
        let text = std::fs::read_to_string(&path).expect("a fixture");
        let hex: String = text.chars().filter(char::is_ascii_hexdigit).collect();
        let bytes: Vec<u8> = (0..hex.len() / 2)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex"))
            .collect();
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        let stem = stem.unwrap_or_default();
        let mode = if stem.contains("large") { 0x90 } else { 0x91 };
        let mut input = vec![mode];
        input.extend_from_slice(&bytes);
        write(dir, &stem, &input);
    }
    for codec in [
        kcoord_record_batches::Compression::None,
        kcoord_record_batches::Compression::Gzip,
        kcoord_record_batches::Compression::Snappy,
        kcoord_record_batches::Compression::Lz4,
        kcoord_record_batches::Compression::Zstd,
    ] {
        let mut builder = kcoord_record_batches::BatchBuilder::new(kcoord_record_batches::BatchOptions {
            compression: codec,
            ..Default::default()
        });
        for i in 0..3 {
            let value = format!("value-{i}");
            let header = kcoord_record_batches::RecordHeader::new("h", Some(Bytes::from_static(b"v")));
            builder
                .push(
                    1_700_000_000_000 + i,
                    Some(b"key"),
                    Some(value.as_bytes()),
                    &[header],
                )
                .expect("a record");
        }
        let batch = builder.build().expect("a batch");
        let mut input = vec![0x91];
        input.extend_from_slice(&batch);
        write(dir, &format!("ours-{}", codec.name()), &input);
    }
}

/// The logs a node writes while serving the session: its controller's `metadata.log` and its
/// coordinator shards' logs (as files, with checksum fixing off and on).
fn log_seeds(dir: &Path, session: &[Bytes]) {
    fresh(dir);
    let data = tempfile::tempdir().expect("a temp dir");
    let metadata = data.path().join("metadata");
    let logs = data.path().join("logs");
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let config = format!(
        "{}metadata.log.dir={}\nlog.dirs={}\n",
        kcoord_fuzz::NODE_CONFIG
            .replace(":9092", ":0")
            .replace(":9093", ":0"),
        metadata.display(),
        logs.display()
    );
    let config = kcoord_server::Config::parse("seeds", &config).expect("the seed node's config");
    let server = runtime
        .block_on(kcoord_server::start(config))
        .expect("the seed node starts");
    let addr = server.broker_addr().expect("a broker listener");
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    for frame in session {
        stream
            .write_all(&(frame.len() as u32).to_be_bytes())
            .and_then(|()| stream.write_all(frame))
            .expect("send");
        let mut size = [0u8; 4];
        stream.read_exact(&mut size).expect("a response");
        let mut response = vec![0u8; u32::from_be_bytes(size) as usize];
        stream.read_exact(&mut response).expect("a response");
    }
    drop(stream);
    runtime.block_on(server.shutdown());
    let mut found = Vec::new();
    collect_logs(data.path(), &mut found);
    found.sort();
    assert!(!found.is_empty(), "the node wrote no log");
    for (i, path) in found.iter().enumerate() {
        let bytes = std::fs::read(path).expect("a log file");
        for mode in [0u8, 1] {
            let mut input = vec![mode];
            input.extend_from_slice(&bytes);
            let owner = path
                .strip_prefix(data.path())
                .map(|p| p.display().to_string().replace('/', "_"))
                .unwrap_or_else(|_| i.to_string());
            write(dir, &format!("{owner}-mode{mode}"), &input);
        }
    }
}

fn collect_logs(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_logs(&path, found);
        } else if path.file_name().is_some_and(|n| n == "metadata.log") {
            found.push(path);
        }
    }
}
