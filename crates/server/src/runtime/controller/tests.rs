//! The runtime's contract: a batch reaches the durable log before memory, a batch the log
//! refuses changes nothing and answers a retriable error, and a panicking handler changes
//! nothing and leaves the task serving.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use kcoord_controller::Outcome;
use kcoord_metadata::{LogRecord, Record};
use kcoord_wire::messages::broker_registration_request::{Feature, Listener};
use kcoord_wire::messages::create_topics_request::CreatableTopic;
use kcoord_wire::records::{PartitionRecord, TopicRecord};
use uuid::Uuid;

use super::*;
use crate::config::Config;
use crate::state::ServerState;
use kcoord_controller::group_configs::GroupConfigChange;
use kcoord_controller::TopicAccess;
use kcoord_metadata::file_log::FileLogError;
use kcoord_wire::messages::{
    BrokerHeartbeatRequest, BrokerRegistrationRequest, CreateTopicsRequest, DeleteTopicsRequest,
};
use kcoord_wire::ErrorCode;

/// A durable log that keeps what it is given, or fails while `failing` is set.
#[derive(Debug, Default, Clone)]
struct FlakyLog {
    failing: Arc<AtomicBool>,
    written: Arc<Mutex<Vec<LogRecord>>>,
    path: PathBuf,
}

impl DurableLog for FlakyLog {
    fn append(&mut self, records: &[LogRecord]) -> Result<(), FileLogError> {
        if self.failing.load(Ordering::SeqCst) {
            return Err(FileLogError::Io {
                path: self.path.display().to_string(),
                source: std::io::Error::other("No space left on device"),
            });
        }
        self.written
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(records);
        Ok(())
    }

    fn rewrite(&mut self, log: &kcoord_metadata::MetadataLog) -> Result<(), FileLogError> {
        if self.failing.load(Ordering::SeqCst) {
            return Err(FileLogError::Io {
                path: self.path.display().to_string(),
                source: std::io::Error::other("No space left on device"),
            });
        }
        *self.written.lock().unwrap_or_else(|e| e.into_inner()) = log.records();
        Ok(())
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

impl FlakyLog {
    fn fail(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }

    fn written(&self) -> Vec<LogRecord> {
        self.written
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

fn runtime() -> (ServerState, ControllerRuntime, FlakyLog) {
    runtime_with("")
}

fn runtime_with(extra: &str) -> (ServerState, ControllerRuntime, FlakyLog) {
    let config = Config::parse(
        "test",
        &format!("node.id=1\nlisteners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n{extra}"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (state, background) = ServerState::build(Arc::new(config), Vec::new());
    let mut runtime = background.controller;
    let log = FlakyLog::default();
    runtime.controller.log_mut().durable = Some(Box::new(log.clone()));
    (state, runtime, log)
}

fn create(name: &str) -> CreateTopicsRequest {
    CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: name.into(),
            num_partitions: 2,
            replication_factor: -1,
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn registration(state: &ServerState, broker_id: i32) -> BrokerRegistrationRequest {
    BrokerRegistrationRequest {
        broker_id,
        cluster_id: state.config.cluster_id.clone(),
        incarnation_id: Uuid::from_u128(broker_id as u128 + 1),
        listeners: vec![Listener {
            name: "PLAINTEXT".into(),
            host: "localhost".into(),
            port: 19092,
            ..Default::default()
        }],
        features: vec![Feature {
            name: "metadata.version".into(),
            min_supported_version: 7,
            max_supported_version: 34,
            ..Default::default()
        }],
        log_dirs: vec![Uuid::from_u128(((broker_id as u128) << 64) | 1000)],
        ..Default::default()
    }
}

fn heartbeat(broker_id: i32, epoch: i64) -> BrokerHeartbeatRequest {
    BrokerHeartbeatRequest {
        broker_id,
        broker_epoch: epoch,
        current_metadata_offset: epoch,
        ..Default::default()
    }
}

fn set_standbys(group: &str) -> Vec<GroupConfigChange> {
    vec![GroupConfigChange {
        group: group.into(),
        ops: vec![(
            "streams.num.standby.replicas".into(),
            kcoord_controller::group_configs::SET,
            Some("1".into()),
        )],
    }]
}

#[tokio::test]
async fn a_failed_append_changes_nothing_and_answers_not_controller_until_the_log_recovers() {
    let (state, mut runtime, log) = runtime();
    let epoch = runtime
        .register_broker(&registration(&state, 2), 6)
        .await
        .broker_epoch;
    assert!(epoch >= 0);
    let records = runtime.controller.store().log().len();
    let controller_state = runtime.controller.state().clone();
    let cluster = state.cluster.snapshot();
    let topics = state.topics.snapshot();

    log.fail(true);
    let created = runtime.create_topics(&create("orders")).await;
    assert_eq!(
        (created[0].name.as_str(), created[0].error_code),
        ("orders", ErrorCode::NOT_CONTROLLER.code())
    );
    let registered = runtime.register_broker(&registration(&state, 3), 6).await;
    assert_eq!(
        (registered.error_code, registered.broker_epoch),
        (ErrorCode::NOT_CONTROLLER.code(), -1)
    );
    // The heartbeat would unfence broker 2.
    let beat = runtime.broker_heartbeat(&heartbeat(2, epoch), 2).await;
    assert_eq!(beat.error_code, ErrorCode::NOT_CONTROLLER.code());
    let altered = runtime.alter_group_configs(&set_standbys("g"), false).await;
    assert!(matches!(
        &altered[..],
        [Err((ErrorCode::NOT_CONTROLLER, Some(_)))]
    ));
    assert!(runtime.allocate_producer_ids().await.is_err());

    assert_eq!(runtime.controller.store().log().len(), records);
    assert_eq!(runtime.controller.state(), &controller_state);
    assert!(runtime.controller.broker(2).is_some_and(|b| b.fenced));
    assert!(
        Arc::ptr_eq(&state.cluster.snapshot(), &cluster),
        "no image published"
    );
    assert!(Arc::ptr_eq(&state.topics.snapshot(), &topics));

    log.fail(false);
    let created = runtime.create_topics(&create("orders")).await;
    assert_eq!(created[0].error_code, 0);
    assert_eq!(
        state
            .topics
            .snapshot()
            .get("orders")
            .map(|t| t.partition_count()),
        Some(2)
    );
    let beat = runtime.broker_heartbeat(&heartbeat(2, epoch), 2).await;
    assert_eq!((beat.error_code, beat.is_fenced), (0, false));
    assert!(!state.cluster.snapshot().brokers.get(2).unwrap().fenced);
    // What reached the durable log is exactly what the in-memory log holds, offsets included.
    let written = log.written();
    let first = written[0].offset;
    let in_memory: Vec<LogRecord> = runtime
        .controller
        .store()
        .log()
        .records_from(first)
        .map(|r| r.to_record())
        .collect();
    assert_eq!(written, in_memory);
}

#[tokio::test]
async fn a_refused_fencing_batch_leaves_the_broker_unfenced_and_is_retried() {
    let (state, mut runtime, log) = runtime();
    let epoch = runtime
        .register_broker(&registration(&state, 2), 6)
        .await
        .broker_epoch;
    runtime.broker_heartbeat(&heartbeat(2, epoch), 2).await;
    assert!(!runtime.controller.broker(2).unwrap().fenced);
    let later = now_ms() + 60_000;

    log.fail(true);
    runtime.tick(later).await;
    assert!(!runtime.controller.broker(2).unwrap().fenced);
    assert_eq!(runtime.tick_retry_at, Some(later + TICK_RETRY_MS));
    assert!(
        runtime.next_wake() >= Some(later + TICK_RETRY_MS),
        "no busy loop"
    );

    log.fail(false);
    runtime.tick(later + TICK_RETRY_MS).await;
    assert!(runtime.controller.broker(2).unwrap().fenced);
    assert!(state.cluster.snapshot().brokers.get(2).unwrap().fenced);
    assert_eq!(runtime.tick_retry_at, None);
}

#[tokio::test]
async fn a_panicking_handler_answers_unknown_server_error_and_the_runtime_keeps_serving() {
    let (state, mut runtime, log) = runtime();
    let records = runtime.controller.store().log().len();
    let refused = runtime
        .handle::<()>("CreateTopics", |_| panic!("a bug in a handler"))
        .await
        .unwrap_err();
    assert_eq!(refused.error.code, ErrorCode::UNKNOWN_SERVER_ERROR);
    assert!(refused.error.message.contains("a bug in a handler"));
    assert_eq!(runtime.controller.store().log().len(), records);
    assert!(log.written().is_empty());

    let created = runtime.create_topics(&create("orders")).await;
    assert_eq!(created[0].error_code, 0);
    assert!(state.topics.snapshot().get("orders").is_some());
}

#[tokio::test]
async fn a_batch_that_does_not_replay_never_reaches_the_log() {
    let (_state, mut runtime, log) = runtime();
    let records = runtime.controller.store().log().len();
    let outcome = Outcome {
        records: vec![
            Record::Topic(TopicRecord {
                name: "t".into(),
                topic_id: Uuid::from_u128(7),
                ..Default::default()
            })
            .at_latest_version(),
            // A partition of a topic that does not exist: the batch does not replay.
            Record::Partition(PartitionRecord {
                topic_id: Uuid::from_u128(8),
                ..Default::default()
            })
            .at_latest_version(),
        ],
        response: (),
        effects: Vec::new(),
    };
    let refused = runtime.commit("test", outcome).await.unwrap_err();
    assert_eq!(refused.error.code, ErrorCode::UNKNOWN_SERVER_ERROR);
    assert!(log.written().is_empty());
    assert_eq!(runtime.controller.store().log().len(), records);
    assert!(runtime.controller.state().topics.get("t").is_none());
}

#[test]
fn a_log_failure_answers_kafkas_not_controller() {
    let e = CommitError::Log(FileLogError::Io {
        path: "metadata.log".into(),
        source: std::io::Error::other("No space left on device"),
    });
    assert_eq!(e.error_code(), ErrorCode::NOT_CONTROLLER);
}

fn delete(name: &str) -> DeleteTopicsRequest {
    DeleteTopicsRequest {
        topic_names: vec![name.into()],
        ..Default::default()
    }
}

#[tokio::test]
async fn a_snapshot_replaces_the_log_and_keeps_state_offsets_and_sessions() {
    let (state, mut runtime, log) =
        runtime_with("metadata.log.max.record.bytes.between.snapshots=2048\n");
    let epoch = runtime
        .register_broker(&registration(&state, 2), 6)
        .await
        .broker_epoch;
    let beat = runtime.broker_heartbeat(&heartbeat(2, epoch), 2).await;
    assert_eq!((beat.error_code, beat.is_fenced), (0, false));
    let block = runtime.allocate_producer_ids().await.unwrap();
    assert_eq!(
        runtime.create_topics(&create("kept")).await[0].error_code,
        0
    );
    let mut snapshots = 0;
    for _ in 0..50 {
        assert_eq!(
            runtime.create_topics(&create("loop")).await[0].error_code,
            0
        );
        assert_eq!(
            runtime
                .delete_topics(&delete("loop"), &TopicAccess::All)
                .await[0]
                .error_code,
            0
        );
        let now = now_ms();
        if runtime.snapshots.due(now) {
            let before = (
                runtime.controller.state().clone(),
                runtime.controller.next_deadline(),
                runtime.controller.store().log().next_offset(),
            );
            assert!(runtime.snapshot(now));
            snapshots += 1;
            let after = (
                runtime.controller.state().clone(),
                runtime.controller.next_deadline(),
                runtime.controller.store().log().next_offset(),
            );
            assert_eq!(after, before, "same state, sessions and next offset");
            // Memory holds the snapshot, and the durable log was rewritten with it.
            let records = runtime.controller.store().log().records();
            assert_eq!(log.written(), records);
            assert!(records.len() <= 8, "{records:?}");
        }
    }
    assert!(snapshots >= 2, "{snapshots} snapshots");
    // The broker still heartbeats with its epoch, caught up, without registering again.
    let beat = runtime.broker_heartbeat(&heartbeat(2, epoch), 2).await;
    assert_eq!(
        (beat.error_code, beat.is_fenced, beat.is_caught_up),
        (0, false, true)
    );
    assert_eq!(
        runtime.controller.broker(2).unwrap().registration_offset,
        epoch as u64
    );
    let next = runtime.allocate_producer_ids().await.unwrap();
    assert_eq!(next.first, block.first + block.size);
    // What the durable log holds replays to the controller's state.
    let mut replayed = kcoord_metadata::MetadataLog::new();
    for r in log.written() {
        replayed
            .push_at(r.offset, r.record_type, r.version, r.key, r.value)
            .unwrap();
    }
    assert_eq!(
        kcoord_metadata::Store::replay_log(&replayed)
            .unwrap()
            .state(),
        runtime.controller.state()
    );
    assert!(state.topics.snapshot().get("kept").is_some());
    assert!(state.topics.snapshot().get("loop").is_none());
}

#[tokio::test]
async fn a_snapshot_the_log_refuses_changes_nothing_and_waits_before_the_next_try() {
    let (_state, mut runtime, log) =
        runtime_with("metadata.log.max.record.bytes.between.snapshots=1\n");
    assert_eq!(runtime.create_topics(&create("a")).await[0].error_code, 0);
    assert_eq!(
        runtime.delete_topics(&delete("a"), &TopicAccess::All).await[0].error_code,
        0
    );
    let now = now_ms();
    assert!(runtime.snapshots.due(now));
    let records = runtime.controller.store().log().len();
    let written = log.written();
    log.fail(true);
    assert!(!runtime.snapshot(now));
    assert_eq!(runtime.controller.store().log().len(), records);
    assert_eq!(log.written(), written);
    assert!(!runtime.snapshots.due(now + 1), "no retry at once");
    assert!(runtime
        .snapshots
        .due(now + snapshots::RETRY_AFTER_FAILURE_MS));
    log.fail(false);
    assert!(runtime.snapshot(now + snapshots::RETRY_AFTER_FAILURE_MS));
    assert!(runtime.controller.store().log().len() < records);
    assert!(!runtime
        .snapshots
        .due(now + snapshots::RETRY_AFTER_FAILURE_MS));
}
