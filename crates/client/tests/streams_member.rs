//! The streams member against a fake coordinator: joining, reconciliation, fencing, coordinator
//! moves, leaving, and the running member's handle. Stepped with `heartbeat_once` where the
//! order matters; the running member uses 20 ms heartbeats and bounded waits.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kcoord_client::streams::{
    HeartbeatOutcome, MemberState, OwnedTasksReporting, StatusCode, StreamsMember,
    StreamsMemberConfig, TopologyBuilder, TopologyDescriptionRequest,
};
use kcoord_client::{Client, ClientConfig, ClientError};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::{StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse};
use kcoord_wire::ErrorCode;
use support::streams::{
    reported, streams_handler, tasks, CoordinatorSequence, FakeStreamsCoordinator, Tasks,
};
use support::{every_api, every_api_but, FakeServer, Log, Reply};

const WAIT: Duration = Duration::from_secs(10);

/// One fake server that is bootstrap and coordinator at once.
async fn cluster(
    apis: Vec<(ApiKey, i16, i16)>,
    interval_ms: i32,
) -> (Client, Log, FakeStreamsCoordinator) {
    let server = FakeServer::bind().await;
    let fake = FakeStreamsCoordinator::new(interval_ms);
    let coordinators = CoordinatorSequence::new(vec![server.port()]);
    let (addr, log, _) = server.serve(streams_handler(apis, coordinators, fake.clone()));
    let client = Client::connect(&addr, ClientConfig::new("streams-test"))
        .await
        .unwrap();
    (client, log, fake)
}

fn config() -> StreamsMemberConfig {
    let topology = TopologyBuilder::stateless(0, ["orders"]).build().unwrap();
    StreamsMemberConfig::new("orders-app", topology)
}

fn heartbeats(log: &Log) -> Vec<StreamsGroupHeartbeatRequest> {
    log.of(ApiKey::StreamsGroupHeartbeat)
        .iter()
        .map(|r| r.decode())
        .collect()
}

fn last_heartbeat(log: &Log) -> StreamsGroupHeartbeatRequest {
    heartbeats(log).pop().expect("a heartbeat")
}

/// Polls `condition` every 5 ms for up to [`WAIT`].
async fn eventually(condition: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition not met within {WAIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn accepted(outcome: HeartbeatOutcome) -> bool {
    match outcome {
        HeartbeatOutcome::Accepted { assignment_changed } => assignment_changed,
        other => panic!("expected an accepted heartbeat, got {other:?}"),
    }
}

#[tokio::test]
async fn the_member_joins_with_its_topology_and_adopts_the_assignment() {
    let (client, log, fake) = cluster(every_api(), 5000).await;
    let config = config()
        .with_rack_id("rack-1")
        .with_user_endpoint("app-host", 8080)
        .with_client_tag("zone", "a");
    fake.set_target(&config.member_id, tasks(&[("0", &[0, 1])]));
    let mut member = StreamsMember::new(&client, config);
    let base64url = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    assert!(
        member.member_id().len() == 22 && member.member_id().chars().all(base64url),
        "a random uuid as Kafka's Uuid.toString() writes it: {}",
        member.member_id()
    );

    assert!(
        accepted(member.heartbeat_once().await.unwrap()),
        "the join brings tasks"
    );
    let join = last_heartbeat(&log);
    assert_eq!(
        log.of(ApiKey::StreamsGroupHeartbeat)[0].version(),
        2,
        "the highest negotiated version"
    );
    assert_eq!(
        (join.group_id.as_str(), join.member_epoch),
        ("orders-app", 0)
    );
    assert_eq!(
        join.topology
            .as_ref()
            .map(|t| t.subtopologies[0].source_topics.clone()),
        Some(vec!["orders".to_string()])
    );
    assert_eq!(
        reported(&join.active_tasks),
        Some(Tasks::new()),
        "a join owns nothing, as empty lists"
    );
    assert_eq!(
        (join.rebalance_timeout_ms, join.rack_id.as_deref()),
        (300_000, Some("rack-1"))
    );
    assert_eq!(
        join.process_id.as_deref(),
        Some(member.config().process_id.as_str())
    );
    assert_eq!(
        join.user_endpoint
            .as_ref()
            .map(|e| (e.host.as_str(), e.port)),
        Some(("app-host", 8080))
    );
    assert_eq!(join.client_tags.as_ref().map(Vec::len), Some(1));

    assert_eq!(member.member_epoch(), 2);
    assert_eq!(member.assignment().active, tasks(&[("0", &[0, 1])]));
    assert_eq!(member.state(), MemberState::Acknowledging);
    assert_eq!(
        member.next_heartbeat_delay(),
        Duration::ZERO,
        "new tasks are reported at once"
    );

    assert!(!accepted(member.heartbeat_once().await.unwrap()));
    let next = last_heartbeat(&log);
    assert_eq!(next.member_epoch, 2);
    assert!(
        next.topology.is_none() && next.process_id.is_none() && next.rebalance_timeout_ms == -1,
        "only the join carries the metadata"
    );
    assert_eq!(reported(&next.active_tasks), Some(tasks(&[("0", &[0, 1])])));
    assert_eq!(member.state(), MemberState::Stable);
    assert_eq!(
        member.next_heartbeat_delay(),
        Duration::from_millis(5000),
        "the coordinator's interval"
    );
}

#[tokio::test]
async fn a_revocation_is_acknowledged_by_reporting_the_reduced_owned_set() {
    let (client, log, fake) = cluster(every_api(), 5000).await;
    let mut member = StreamsMember::new(&client, config());
    let id = member.member_id().to_string();
    fake.set_target(&id, tasks(&[("0", &[0, 1, 2])]));
    member.heartbeat_once().await.unwrap();
    member.heartbeat_once().await.unwrap();
    assert_eq!(member.member_epoch(), 2);

    // Task 0-1 and 0-2 move away, 0-3 comes: the coordinator revokes first, at the same epoch.
    fake.set_target(&id, tasks(&[("0", &[0, 3])]));
    assert!(accepted(member.heartbeat_once().await.unwrap()));
    assert_eq!(
        member.assignment().active,
        tasks(&[("0", &[0])]),
        "revoked tasks are dropped"
    );
    assert_eq!(member.member_epoch(), 2);
    assert_eq!(member.next_heartbeat_delay(), Duration::ZERO);

    assert!(
        accepted(member.heartbeat_once().await.unwrap()),
        "the acknowledgement brings the new task"
    );
    let ack = last_heartbeat(&log);
    assert_eq!(
        reported(&ack.active_tasks),
        Some(tasks(&[("0", &[0])])),
        "the reduced set acknowledges the revocation"
    );
    assert_eq!(member.member_epoch(), 3);
    assert_eq!(member.assignment().active, tasks(&[("0", &[0, 3])]));

    member.heartbeat_once().await.unwrap();
    assert_eq!(
        reported(&last_heartbeat(&log).active_tasks),
        Some(tasks(&[("0", &[0, 3])]))
    );
    assert_eq!(member.state(), MemberState::Stable);
}

#[tokio::test]
async fn owned_tasks_can_be_reported_only_when_they_change() {
    let (client, log, fake) = cluster(every_api(), 5000).await;
    let mut member = StreamsMember::new(
        &client,
        config().with_owned_tasks(OwnedTasksReporting::WhenChanged),
    );
    fake.set_target(member.member_id(), tasks(&[("0", &[0])]));
    member.heartbeat_once().await.unwrap();
    member.heartbeat_once().await.unwrap();
    assert_eq!(
        reported(&last_heartbeat(&log).active_tasks),
        Some(tasks(&[("0", &[0])])),
        "changed: reported"
    );
    member.heartbeat_once().await.unwrap();
    let steady = last_heartbeat(&log);
    assert!(
        steady.active_tasks.is_none()
            && steady.standby_tasks.is_none()
            && steady.warmup_tasks.is_none(),
        "unchanged: null"
    );

    // After a failed heartbeat everything is sent again.
    fake.fail_next(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.code());
    member.heartbeat_once().await.unwrap();
    member.heartbeat_once().await.unwrap();
    assert_eq!(
        reported(&last_heartbeat(&log).active_tasks),
        Some(tasks(&[("0", &[0])]))
    );
}

#[tokio::test]
async fn a_fenced_member_drops_its_tasks_and_rejoins_with_epoch_zero() {
    for error in [ErrorCode::FENCED_MEMBER_EPOCH, ErrorCode::UNKNOWN_MEMBER_ID] {
        let (client, log, fake) = cluster(every_api(), 5000).await;
        let mut member = StreamsMember::new(&client, config());
        fake.set_target(member.member_id(), tasks(&[("0", &[0, 1])]));
        member.heartbeat_once().await.unwrap();
        member.heartbeat_once().await.unwrap();

        fake.fail_next(error.code());
        match member.heartbeat_once().await.unwrap() {
            HeartbeatOutcome::Fenced { error: e } => assert_eq!(e.error_code(), Some(error)),
            other => panic!("{error:?}: {other:?}"),
        }
        assert!(member.assignment().is_empty(), "{error:?}: tasks dropped");
        assert_eq!(
            (member.state(), member.member_epoch()),
            (MemberState::Joining, 0)
        );
        assert_eq!(
            member.next_heartbeat_delay(),
            Duration::ZERO,
            "rejoins at once"
        );

        assert!(accepted(member.heartbeat_once().await.unwrap()));
        let rejoin = last_heartbeat(&log);
        assert_eq!(rejoin.member_epoch, 0);
        assert!(rejoin.topology.is_some());
        assert_eq!(
            rejoin.member_id,
            member.member_id(),
            "the member id is kept"
        );
        assert_eq!(member.assignment().active, tasks(&[("0", &[0, 1])]));
        assert_eq!(member.snapshot().joins, 2);
    }
}

#[tokio::test]
async fn not_coordinator_sends_the_member_to_the_new_coordinator() {
    let old = FakeServer::bind().await;
    let new = FakeServer::bind().await;
    let coordinators = CoordinatorSequence::new(vec![old.port(), new.port()]);
    let (old_fake, new_fake) = (
        FakeStreamsCoordinator::new(5000),
        FakeStreamsCoordinator::new(5000),
    );
    old_fake.fail_next(ErrorCode::NOT_COORDINATOR.code());
    let (addr, old_log, _) =
        old.serve(streams_handler(every_api(), coordinators.clone(), old_fake));
    let (_, new_log, _) = new.serve(streams_handler(every_api(), coordinators, new_fake));
    let client = Client::connect(&addr, ClientConfig::new("streams-test"))
        .await
        .unwrap();
    let mut member = StreamsMember::new(
        &client,
        config().with_retry_backoff(Duration::from_millis(10), Duration::from_millis(50)),
    );

    match member.heartbeat_once().await.unwrap() {
        HeartbeatOutcome::Retry { error, after } => {
            assert_eq!(error.error_code(), Some(ErrorCode::NOT_COORDINATOR));
            assert!(
                after >= Duration::from_millis(8) && after <= Duration::from_millis(12),
                "{after:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(member.state(), MemberState::Joining);
    assert!(member.next_heartbeat_delay() > Duration::ZERO, "backs off");

    accepted(member.heartbeat_once().await.unwrap());
    assert_eq!(
        old_log.of(ApiKey::FindCoordinator).len(),
        2,
        "looked up again"
    );
    assert_eq!(old_log.of(ApiKey::StreamsGroupHeartbeat).len(), 1);
    assert_eq!(
        heartbeats(&new_log).len(),
        1,
        "the join went to the new coordinator"
    );
    assert_eq!(member.state(), MemberState::Stable);
    assert_eq!(
        member.next_heartbeat_delay(),
        Duration::from_millis(5000),
        "a success ends the back-off"
    );
}

#[tokio::test]
async fn retriable_errors_back_off_and_a_broken_connection_is_replaced() {
    let server = FakeServer::bind().await;
    let fake = FakeStreamsCoordinator::new(5000);
    let coordinators = CoordinatorSequence::new(vec![server.port()]);
    let heartbeats_seen = Arc::new(AtomicUsize::new(0));
    let handler = streams_handler(every_api(), coordinators, fake.clone());
    let seen = heartbeats_seen.clone();
    let (addr, log, accepted_conns) = server.serve(move |request| {
        // The second heartbeat gets no answer: the connection is closed instead.
        if request.api_key() == ApiKey::StreamsGroupHeartbeat.key()
            && seen.fetch_add(1, Ordering::SeqCst) == 1
        {
            return Reply::Close;
        }
        handler(request)
    });
    let client = Client::connect(&addr, ClientConfig::new("streams-test"))
        .await
        .unwrap();
    let mut member = StreamsMember::new(
        &client,
        config().with_retry_backoff(Duration::from_millis(100), Duration::from_millis(250)),
    );
    member.heartbeat_once().await.unwrap();

    match member.heartbeat_once().await.unwrap() {
        HeartbeatOutcome::Retry { error, .. } => assert!(error.is_transport(), "{error}"),
        other => panic!("{other:?}"),
    }
    fake.fail_next(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.code());
    let mut delays = Vec::new();
    for _ in 0..3 {
        match member.heartbeat_once().await.unwrap() {
            HeartbeatOutcome::Retry { after, .. } => delays.push(after),
            other => panic!("{other:?}"),
        }
        if delays.len() < 3 {
            fake.fail_next(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.code());
        }
    }
    // 100 ms then doubled, capped at 250 ms, each ±20 %.
    assert!(
        delays[0] >= Duration::from_millis(160) && delays[0] <= Duration::from_millis(240),
        "{delays:?}"
    );
    assert!(
        delays[2] >= Duration::from_millis(200) && delays[2] <= Duration::from_millis(300),
        "{delays:?}"
    );
    accepted(member.heartbeat_once().await.unwrap());
    assert!(
        accepted_conns.count() >= 2,
        "a new connection after the old one broke"
    );
    assert_eq!(
        log.of(ApiKey::FindCoordinator).len(),
        2,
        "and the coordinator looked up again"
    );
}

#[tokio::test]
async fn errors_that_retrying_cannot_fix_stop_the_member() {
    let (client, _, fake) = cluster(every_api(), 5000).await;
    let mut member = StreamsMember::new(&client, config());
    fake.fail_next(ErrorCode::GROUP_MAX_SIZE_REACHED.code());
    let err = member.heartbeat_once().await.unwrap_err();
    assert_eq!(err.error_code(), Some(ErrorCode::GROUP_MAX_SIZE_REACHED));
    assert_eq!(member.state(), MemberState::Failed);
    let again = member.heartbeat_once().await.unwrap_err();
    assert!(
        matches!(again, ClientError::MemberNotActive { .. }),
        "{again}"
    );
    member.leave().await.unwrap();
}

#[tokio::test]
async fn leaving_sends_minus_one_or_minus_two_for_a_static_member() {
    for (instance, permanently, epoch) in [
        (None, false, -1),
        (Some("instance-1"), false, -2),
        (Some("instance-1"), true, -1),
    ] {
        let (client, log, fake) = cluster(every_api(), 5000).await;
        let mut config = config();
        if let Some(instance) = instance {
            config = config.with_instance_id(instance);
        }
        fake.set_target(&config.member_id, tasks(&[("0", &[0])]));
        let mut member = StreamsMember::new(&client, config);
        member.heartbeat_once().await.unwrap();
        member.shutdown_application();
        if permanently {
            member.leave_permanently().await.unwrap()
        } else {
            member.leave().await.unwrap()
        }

        let leave = last_heartbeat(&log);
        assert_eq!(
            leave.member_epoch, epoch,
            "{instance:?} permanently={permanently}"
        );
        assert_eq!(leave.instance_id.as_deref(), instance);
        assert!(leave.topology.is_none() && leave.active_tasks.is_none());
        assert!(
            leave.shutdown_application,
            "a requested shutdown rides on the leave too"
        );
        assert_eq!(member.state(), MemberState::Left);
        assert!(member.assignment().is_empty());
        assert!(matches!(
            member.heartbeat_once().await,
            Err(ClientError::MemberNotActive { .. })
        ));
        let sent = heartbeats(&log).len();
        member.leave().await.unwrap();
        assert_eq!(heartbeats(&log).len(), sent, "leaving twice sends nothing");
    }
}

#[tokio::test]
async fn a_member_that_never_joined_leaves_without_a_word() {
    let (client, log, _) = cluster(every_api(), 5000).await;
    let mut member = StreamsMember::new(&client, config());
    member.leave().await.unwrap();
    assert_eq!(member.state(), MemberState::Left);
    assert!(heartbeats(&log).is_empty());
}

#[tokio::test]
async fn statuses_and_topology_description_requests_are_kept() {
    let id = uuid::Uuid::new_v4();
    for (version, expected) in [
        (2, Some(TopologyDescriptionRequest::Id(id))),
        (1, Some(TopologyDescriptionRequest::Required)),
        (0, None),
    ] {
        let (client, log, fake) = cluster(every_api(), 5000).await;
        fake.set_statuses(&[(1, "Source topics orders are missing."), (5, "delayed")]);
        fake.set_topology_description(Some(id), true);
        let mut member = StreamsMember::new(&client, config().with_heartbeat_version(version));
        member.heartbeat_once().await.unwrap();
        assert_eq!(log.of(ApiKey::StreamsGroupHeartbeat)[0].version(), version);
        let codes: Vec<StatusCode> = member.statuses().iter().map(|s| s.code).collect();
        assert_eq!(
            codes,
            vec![
                StatusCode::MissingSourceTopics,
                StatusCode::AssignmentDelayed
            ]
        );
        assert_eq!(
            member.statuses()[0].detail,
            "Source topics orders are missing."
        );
        assert_eq!(
            member.pending_topology_description(),
            expected,
            "v{version}"
        );
        assert_eq!(
            member.topology_description_id(),
            (version >= 2).then_some(id)
        );
        assert_eq!(member.topology_description_required(), version == 1);

        // A response asking for nothing leaves the request pending until taken.
        fake.set_topology_description(None, false);
        member.heartbeat_once().await.unwrap();
        assert_eq!(member.topology_description_id(), None);
        assert_eq!(member.take_pending_topology_description(), expected);
        assert_eq!(member.pending_topology_description(), None);
    }
}

#[tokio::test]
async fn the_preferred_version_is_lowered_to_what_the_server_has() {
    let (client, log, _) = cluster(
        every_api_but(ApiKey::StreamsGroupHeartbeat, Some((0, 1))),
        5000,
    )
    .await;
    let mut member = StreamsMember::new(&client, config().with_heartbeat_version(2));
    member.heartbeat_once().await.unwrap();
    assert_eq!(log.of(ApiKey::StreamsGroupHeartbeat)[0].version(), 1);

    let (client, _, _) = cluster(
        every_api_but(ApiKey::StreamsGroupHeartbeat, Some((1, 2))),
        5000,
    )
    .await;
    let mut member = StreamsMember::new(&client, config().with_heartbeat_version(0));
    let err = member.heartbeat_once().await.unwrap_err();
    assert!(
        matches!(err, ClientError::UnsupportedVersion { .. }),
        "{err}"
    );
}

#[tokio::test]
async fn the_response_hook_sees_every_response() {
    let (client, _, fake) = cluster(every_api(), 5000).await;
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let hook_seen = seen.clone();
    let config =
        config().with_on_response(move |response: &StreamsGroupHeartbeatResponse, version| {
            hook_seen
                .lock()
                .unwrap()
                .push((response.error_code, version));
        });
    let mut member = StreamsMember::new(&client, config);
    member.heartbeat_once().await.unwrap();
    fake.fail_next(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.code());
    member.heartbeat_once().await.unwrap();
    assert_eq!(*seen.lock().unwrap(), vec![(0, 2), (14, 2)]);
}

#[tokio::test]
async fn a_running_member_follows_its_target_and_leaves() {
    let (client, log, fake) = cluster(every_api(), 20).await;
    let config = config();
    let id = config.member_id.clone();
    fake.set_target(&id, tasks(&[("0", &[0, 1, 2])]));
    let handle = StreamsMember::start(&client, config);
    assert_eq!(handle.member_id(), id);

    let want = tasks(&[("0", &[0, 1, 2])]);
    let snapshot = handle
        .wait_for(
            |s| s.assignment.active == want && s.state == MemberState::Stable,
            WAIT,
        )
        .await
        .unwrap();
    assert_eq!(snapshot.member_epoch, 2);
    assert_eq!(handle.member_epoch(), 2);

    fake.set_target(&id, tasks(&[("0", &[2]), ("1", &[0])]));
    let want = tasks(&[("0", &[2]), ("1", &[0])]);
    handle
        .wait_for(
            |s| s.assignment.active == want && s.state == MemberState::Stable,
            WAIT,
        )
        .await
        .unwrap();
    assert_eq!(handle.assignment().active, want);
    assert!(
        heartbeats(&log)
            .iter()
            .any(|h| reported(&h.active_tasks) == Some(tasks(&[("0", &[2])]))),
        "the revocation was acknowledged on the way"
    );

    handle.shutdown_application();
    eventually(|| heartbeats(&log).iter().any(|h| h.shutdown_application)).await;

    handle.leave().await.unwrap();
    assert_eq!(last_heartbeat(&log).member_epoch, -1);
    assert_eq!(fake.member_epoch(&id), None, "the fake forgot the member");
}

#[tokio::test]
async fn a_killed_member_sends_nothing_more() {
    let (client, log, _) = cluster(every_api(), 20).await;
    let handle = StreamsMember::start(&client, config());
    handle.wait_for(|s| s.responses >= 3, WAIT).await.unwrap();
    let at_kill = heartbeats(&log).len();
    handle.kill();
    // One heartbeat may already be queued on the connection; nothing after it, over 15
    // intervals.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let sent = heartbeats(&log).len();
    assert!(sent <= at_kill + 1, "{at_kill} at kill, {sent} after");
    assert!(
        heartbeats(&log).iter().all(|h| h.member_epoch >= 0),
        "no leave"
    );
}

#[tokio::test]
async fn waiting_reports_the_last_state_on_timeout_and_failure() {
    let (client, _, fake) = cluster(every_api(), 20).await;
    let handle = StreamsMember::start(&client, config());
    let err = handle
        .wait_for(|s| s.member_epoch == 99, Duration::from_millis(100))
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::WaitTimeout { .. }), "{err}");

    fake.fail_next(ErrorCode::GROUP_AUTHORIZATION_FAILED.code());
    let err = handle
        .wait_for(|s| s.member_epoch == 99, WAIT)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("GROUP_AUTHORIZATION_FAILED"),
        "{err}"
    );
    assert_eq!(handle.state(), MemberState::Failed);
    assert!(
        handle.is_finished()
            || handle
                .wait_for(|_| false, Duration::from_millis(10))
                .await
                .is_err()
    );
}
