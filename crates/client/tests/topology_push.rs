//! Topology description pushes (KIP-1331, the client side: R50-R55, R65-R67) against a fake
//! coordinator. Stepped with `heartbeat_once` / `maybe_push` / `push_once` where the order
//! matters; the running member uses 20 ms heartbeats and bounded waits.

mod support;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kcoord_client::streams::{
    MemberState, PushOutcome, PushResult, StreamsMember, StreamsMemberConfig, TopologyBuilder,
    TopologyDescriptionRequest,
};
use kcoord_client::topology::streams::{Node, Subtopology, TopologyDescription};
use kcoord_client::topology::WireTopology;
use kcoord_client::{Client, ClientConfig, ClientError};
use kcoord_wire::api::ApiKey;
use kcoord_wire::ErrorCode;
use support::push::{push_handler, FakePushCoordinator, PushReply, Pushed};
use support::streams::{CoordinatorSequence, FakeStreamsCoordinator};
use support::{every_api, every_api_but, FakeServer, Log};
use uuid::Uuid;

const WAIT: Duration = Duration::from_secs(10);

struct Cluster {
    client: Client,
    log: Log,
    streams: FakeStreamsCoordinator,
    pushes: FakePushCoordinator,
}

/// One fake server that is bootstrap and coordinator at once.
async fn cluster(apis: Vec<(ApiKey, i16, i16)>, interval_ms: i32) -> Cluster {
    let server = FakeServer::bind().await;
    let (streams, pushes) = (
        FakeStreamsCoordinator::new(interval_ms),
        FakePushCoordinator::default(),
    );
    let coordinators = CoordinatorSequence::new(vec![server.port()]);
    let (addr, log, _) = server.serve(push_handler(
        apis,
        coordinators,
        streams.clone(),
        pushes.clone(),
    ));
    let client = Client::connect(&addr, ClientConfig::new("push-test"))
        .await
        .unwrap();
    Cluster {
        client,
        log,
        streams,
        pushes,
    }
}

/// The specification's example: orders -> filter -> valid-orders.
fn orders() -> TopologyDescription {
    TopologyDescription {
        subtopologies: vec![Subtopology {
            id: 0,
            nodes: vec![
                Node::source(
                    "KSTREAM-SOURCE-0000000000",
                    &["orders"],
                    &["KSTREAM-FILTER-0000000001"],
                ),
                Node::processor(
                    "KSTREAM-FILTER-0000000001",
                    &[],
                    &["KSTREAM-SINK-0000000002"],
                ),
                Node::sink("KSTREAM-SINK-0000000002", Some("valid-orders")),
            ],
        }],
        global_stores: vec![],
    }
}

/// A member config with the orders description and 10-20 ms retry back-offs.
fn config() -> StreamsMemberConfig {
    let topology = TopologyBuilder::stateless(3, ["orders"]).build().unwrap();
    StreamsMemberConfig::new("orders-app", topology)
        .with_topology_description(&orders())
        .unwrap()
        .with_retry_backoff(Duration::from_millis(10), Duration::from_millis(20))
}

fn wire_orders() -> WireTopology {
    orders().to_wire().unwrap()
}

/// Sleeps past the member's push back-off or throttle.
async fn wait_for_push_window(member: &StreamsMember) {
    if let Some(delay) = member.next_push_delay() {
        tokio::time::sleep(delay + Duration::from_millis(5)).await;
    }
}

fn stored(outcome: Option<PushOutcome>) {
    assert!(matches!(outcome, Some(PushOutcome::Stored)), "{outcome:?}");
}

/// Polls `condition` every 5 ms for up to [`WAIT`].
async fn eventually(what: &str, condition: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {WAIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Captures this thread's log output (the tests run on a current-thread runtime).
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn install(&self) -> tracing::subscriber::DefaultGuard {
        let writer = self.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_max_level(tracing::Level::INFO)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_default(subscriber)
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

#[tokio::test]
async fn r50_push_disabled_never_pushes() {
    let c = cluster(every_api(), 20).await;
    let id = Uuid::new_v4();
    c.streams.set_topology_description(Some(id), true);
    let mut member = StreamsMember::new(&c.client, config().with_topology_description_push(false));
    assert!(
        !member.has_topology_description(),
        "no description is stored when the push is disabled"
    );
    member.heartbeat_once().await.unwrap();
    assert_eq!(
        member.topology_description_id(),
        Some(id),
        "the coordinator asked"
    );
    assert_eq!(
        member.pending_topology_description(),
        None,
        "and was ignored"
    );
    assert!(member.maybe_push().is_none());
    assert_eq!(member.next_push_delay(), None);

    // A running member with pushes disabled sends none over many heartbeats.
    let handle = StreamsMember::start(&c.client, config().with_topology_description_push(false));
    handle.wait_for(|s| s.responses >= 10, WAIT).await.unwrap();
    assert_eq!(handle.snapshot().topology_pushes_sent, 0);
    handle.leave().await.unwrap();
    assert_eq!(c.pushes.count(), 0);
    assert!(c
        .log
        .of(ApiKey::UpdateStreamsGroupTopologyDescription)
        .is_empty());
}

#[tokio::test]
async fn r51_pushes_only_when_coordinator_known_id_set_description_stored_and_none_in_flight() {
    let c = cluster(every_api(), 5000).await;
    let mut member = StreamsMember::new(&c.client, config());
    assert!(member.has_topology_description());
    let id = Uuid::new_v4();
    c.streams.set_topology_description(Some(id), false);
    assert!(
        member.maybe_push().is_none(),
        "no coordinator known, no id yet"
    );

    // No id in the response: nothing to push.
    c.streams.set_topology_description(None, false);
    member.heartbeat_once().await.unwrap();
    assert!(member.coordinator_connection().is_some());
    assert!(member.maybe_push().is_none());

    // The id comes: one push, and no second while it is in flight.
    c.streams.set_topology_description(Some(id), false);
    member.heartbeat_once().await.unwrap();
    let push = member.maybe_push().expect("a push");
    assert_eq!(push.id(), TopologyDescriptionRequest::Id(id));
    assert_eq!(
        push.api_key(),
        ApiKey::UpdateStreamsGroupTopologyDescription.key()
    );
    assert_eq!(
        member.topology_push_in_flight(),
        Some(TopologyDescriptionRequest::Id(id))
    );
    assert!(member.maybe_push().is_none(), "one push at a time");
    assert_eq!(member.next_push_delay(), None);
    let completion = push.send().await;
    assert!(matches!(
        member.handle_push_completion(completion),
        PushOutcome::Stored
    ));

    let pushed = c.pushes.pushed();
    let [Pushed::Spec(request)] = pushed.as_slice() else {
        panic!("{pushed:?}")
    };
    assert_eq!(
        (request.group_id.as_str(), request.topology_description_id),
        ("orders-app", id)
    );
    assert_eq!(
        WireTopology::from(&request.topology_description),
        wire_orders()
    );

    // Done: the id is cleared, the next responses (still asking under the same id, as a
    // plugin might) bring it back, responses without it do not.
    assert_eq!(member.pending_topology_description(), None);
    assert!(member.maybe_push().is_none());
    c.streams.set_topology_description(None, false);
    member.heartbeat_once().await.unwrap();
    assert!(member.maybe_push().is_none());

    // A member without a description keeps the id but has nothing to push.
    let topology = TopologyBuilder::stateless(0, ["orders"]).build().unwrap();
    let mut bare = StreamsMember::new(&c.client, StreamsMemberConfig::new("orders-app", topology));
    c.streams.set_topology_description(Some(id), false);
    bare.heartbeat_once().await.unwrap();
    assert_eq!(
        bare.pending_topology_description(),
        Some(TopologyDescriptionRequest::Id(id))
    );
    assert!(bare.maybe_push().is_none());
    assert_eq!(c.pushes.count(), 1);
}

#[tokio::test]
async fn r51_a_push_that_is_never_answered_does_not_hold_up_heartbeats() {
    // Stepped: the push is in flight (sent on another task, never answered) while the member
    // heartbeats on.
    let c = cluster(every_api(), 5000).await;
    c.pushes.script(PushReply::Silence);
    let mut member = StreamsMember::new(&c.client, config());
    c.streams
        .set_topology_description(Some(Uuid::new_v4()), false);
    member.heartbeat_once().await.unwrap();
    let push = member.maybe_push().expect("a push");
    let sending = tokio::spawn(push.send());
    eventually("the push reaches the coordinator", || c.pushes.count() == 1).await;
    for _ in 0..3 {
        tokio::time::timeout(Duration::from_secs(2), member.heartbeat_once())
            .await
            .expect("a heartbeat in time")
            .unwrap();
        assert!(member.maybe_push().is_none(), "still in flight");
    }
    assert!(!sending.is_finished());
    sending.abort();

    // Running: 20 ms heartbeats go on while the push waits for its answer.
    let c = cluster(every_api(), 20).await;
    c.pushes.script(PushReply::Silence);
    c.streams
        .set_topology_description(Some(Uuid::new_v4()), false);
    let handle = StreamsMember::start(&c.client, config());
    let snapshot = handle
        .wait_for(|s| s.topology_push_in_flight.is_some(), WAIT)
        .await
        .unwrap();
    let responses = snapshot.responses;
    handle
        .wait_for(|s| s.responses >= responses + 10, WAIT)
        .await
        .expect("heartbeats go on");
    let snapshot = handle.snapshot();
    assert!(snapshot.topology_push_in_flight.is_some() && snapshot.last_topology_push.is_none());
    assert_eq!(
        (snapshot.topology_pushes_sent, c.pushes.count()),
        (1, 1),
        "no second push while one is in flight"
    );
    assert_eq!(snapshot.state, MemberState::Stable);
    handle.leave().await.unwrap();
}

#[tokio::test]
async fn a_running_member_pushes_when_asked_and_reports_it() {
    let c = cluster(every_api(), 20).await;
    let handle = StreamsMember::start(&c.client, config());
    handle.wait_for(|s| s.responses >= 3, WAIT).await.unwrap();
    assert_eq!(c.pushes.count(), 0, "not asked yet");
    let id = Uuid::new_v4();
    c.streams.set_topology_description(Some(id), false);
    let snapshot = handle
        .wait_for(|s| s.last_topology_push.is_some(), WAIT)
        .await
        .unwrap();
    let report = snapshot.last_topology_push.unwrap();
    assert_eq!(
        (report.id, report.result),
        (TopologyDescriptionRequest::Id(id), PushResult::Stored)
    );
    // The fake keeps asking under the same id (a plugin would not): each ask is one push.
    c.streams.set_topology_description(None, false);
    handle
        .wait_for(
            |s| s.pending_topology_description.is_none() && s.topology_push_in_flight.is_none(),
            WAIT,
        )
        .await
        .unwrap();
    let pushed = c.pushes.count();
    let responses = handle.snapshot().responses;
    handle
        .wait_for(|s| s.responses >= responses + 5, WAIT)
        .await
        .unwrap();
    assert_eq!(c.pushes.count(), pushed, "nothing more once nobody asks");
    handle.leave().await.unwrap();
}

#[tokio::test]
async fn r52_not_coordinator_and_coordinator_not_available_rediscover_and_keep_the_id() {
    for error in [
        ErrorCode::NOT_COORDINATOR,
        ErrorCode::COORDINATOR_NOT_AVAILABLE,
    ] {
        let (old, new) = (FakeServer::bind().await, FakeServer::bind().await);
        let coordinators = CoordinatorSequence::new(vec![old.port(), new.port()]);
        let (streams, old_pushes, new_pushes) = (
            FakeStreamsCoordinator::new(5000),
            FakePushCoordinator::default(),
            FakePushCoordinator::default(),
        );
        let id = Uuid::new_v4();
        streams.set_topology_description(Some(id), false);
        old_pushes.script(PushReply::error(error.code()));
        let (addr, old_log, _) = old.serve(push_handler(
            every_api(),
            coordinators.clone(),
            streams.clone(),
            old_pushes.clone(),
        ));
        new.serve(push_handler(
            every_api(),
            coordinators,
            streams.clone(),
            new_pushes.clone(),
        ));
        let client = Client::connect(&addr, ClientConfig::new("push-test"))
            .await
            .unwrap();
        let mut member = StreamsMember::new(&client, config());
        member.heartbeat_once().await.unwrap();
        streams.set_topology_description(None, false);

        match member.push_once().await {
            Some(PushOutcome::Retry { error: e, .. }) => assert_eq!(e.error_code(), Some(error)),
            other => panic!("{error:?}: {other:?}"),
        }
        assert_eq!(
            member.pending_topology_description(),
            Some(TopologyDescriptionRequest::Id(id)),
            "{error:?}: the id is kept"
        );
        assert!(
            member.coordinator_connection().is_none(),
            "{error:?}: the coordinator is forgotten"
        );
        wait_for_push_window(&member).await;
        assert!(
            member.maybe_push().is_none(),
            "{error:?}: no push before a coordinator is known again"
        );

        // The heartbeat finds the new coordinator; the push follows it with the same id.
        member.heartbeat_once().await.unwrap();
        assert_eq!(
            old_log.of(ApiKey::FindCoordinator).len(),
            2,
            "{error:?}: looked up again"
        );
        stored(member.push_once().await);
        let pushed = new_pushes.pushed();
        let [Pushed::Spec(request)] = pushed.as_slice() else {
            panic!("{error:?}: {pushed:?}")
        };
        assert_eq!(request.topology_description_id, id);
        assert_eq!(old_pushes.count(), 1);
    }
}

#[tokio::test]
async fn r53_load_in_progress_keeps_the_id() {
    let c = cluster(every_api(), 5000).await;
    let id = Uuid::new_v4();
    c.streams.set_topology_description(Some(id), false);
    c.pushes.script(PushReply::error(
        ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.code(),
    ));
    let mut member = StreamsMember::new(&c.client, config());
    member.heartbeat_once().await.unwrap();
    c.streams.set_topology_description(None, false);

    match member.push_once().await {
        Some(PushOutcome::Retry { error, after }) => {
            assert_eq!(
                error.error_code(),
                Some(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS)
            );
            assert!(
                after >= Duration::from_millis(8) && after <= Duration::from_millis(12),
                "the retry back-off: {after:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        member.pending_topology_description(),
        Some(TopologyDescriptionRequest::Id(id))
    );
    assert!(
        member.coordinator_connection().is_some(),
        "the coordinator stays"
    );
    wait_for_push_window(&member).await;
    stored(member.push_once().await);
    assert_eq!(c.pushes.count(), 2);
    assert_eq!(member.pending_topology_description(), None);
}

#[tokio::test]
async fn r53_network_errors_keep_the_id() {
    let c = cluster(every_api(), 5000).await;
    let id = Uuid::new_v4();
    c.streams.set_topology_description(Some(id), false);
    c.pushes.script(PushReply::Close);
    let mut member = StreamsMember::new(&c.client, config());
    member.heartbeat_once().await.unwrap();
    c.streams.set_topology_description(None, false);

    match member.push_once().await {
        Some(PushOutcome::Retry { error, .. }) => assert!(error.is_transport(), "{error}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        member.pending_topology_description(),
        Some(TopologyDescriptionRequest::Id(id))
    );
    // The next heartbeat connects again; the push goes out again with the same id.
    member.heartbeat_once().await.unwrap();
    wait_for_push_window(&member).await;
    stored(member.push_once().await);
    assert_eq!(c.pushes.count(), 2);

    // A push that times out keeps the id too.
    let c = cluster(every_api(), 5000).await;
    c.streams.set_topology_description(Some(id), false);
    c.pushes.script(PushReply::Silence);
    let client = Client::connect(
        c.client.bootstrap().addr(),
        ClientConfig::new("push-test").with_request_timeout(Duration::from_millis(200)),
    )
    .await
    .unwrap();
    let mut member = StreamsMember::new(&client, config());
    member.heartbeat_once().await.unwrap();
    match member.push_once().await {
        Some(PushOutcome::Retry {
            error: ClientError::Timeout { .. },
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(
        member.pending_topology_description(),
        Some(TopologyDescriptionRequest::Id(id))
    );
}

#[tokio::test]
async fn r54_every_other_error_clears_the_id_warns_and_waits_for_a_new_request() {
    let codes = [
        135, // TOPOLOGY_DESCRIPTION_UPDATE_FAILED
        137, // TOPOLOGY_DESCRIPTION_TOO_LARGE
        ErrorCode::INVALID_REQUEST.code(),
        ErrorCode::UNSUPPORTED_VERSION.code(),
        ErrorCode::GROUP_ID_NOT_FOUND.code(),
        ErrorCode::GROUP_AUTHORIZATION_FAILED.code(),
        ErrorCode::UNKNOWN_MEMBER_ID.code(),
        -1, // UNKNOWN_SERVER_ERROR
    ];
    for code in codes {
        let c = cluster(every_api(), 5000).await;
        let id = Uuid::new_v4();
        c.streams.set_topology_description(Some(id), false);
        c.pushes.script(PushReply::error(code));
        let mut member = StreamsMember::new(&c.client, config());
        member.heartbeat_once().await.unwrap();
        c.streams.set_topology_description(None, false);

        let captured = Captured::default();
        let guard = captured.install();
        let outcome = member.push_once().await;
        drop(guard);
        match outcome {
            Some(PushOutcome::Dropped { error }) => assert!(
                error.to_string().contains(&format!("({code})")),
                "{code}: {error}"
            ),
            other => panic!("{code}: {other:?}"),
        }
        let logged = captured.text();
        assert!(
            logged.lines().any(|l| l.contains("WARN")
                && l.contains("topology description push failed")
                && l.contains(&format!("({code})"))),
            "{code}: {logged}"
        );
        assert_eq!(
            member.pending_topology_description(),
            None,
            "{code}: the id is cleared"
        );
        assert!(
            member.coordinator_connection().is_some(),
            "{code}: the coordinator stays"
        );

        // No retry of its own, whatever the time and however many heartbeats without an id.
        tokio::time::sleep(Duration::from_millis(50)).await;
        member.heartbeat_once().await.unwrap();
        assert!(member.maybe_push().is_none(), "{code}: no retry");
        assert_eq!(c.pushes.count(), 1);

        // The coordinator asks again (a new id): a new push.
        let next = Uuid::new_v4();
        c.streams.set_topology_description(Some(next), false);
        member.heartbeat_once().await.unwrap();
        stored(member.push_once().await);
        match c.pushes.pushed().last() {
            Some(Pushed::Spec(request)) => assert_eq!(request.topology_description_id, next),
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn r55_throttle_time_delays_the_next_push() {
    let c = cluster(every_api(), 5000).await;
    let first = Uuid::new_v4();
    c.streams.set_topology_description(Some(first), false);
    c.pushes.script(PushReply::Answer {
        error_code: 0,
        throttle_time_ms: 300,
    });
    let mut member = StreamsMember::new(&c.client, config());
    member.heartbeat_once().await.unwrap();
    stored(member.push_once().await);

    // A new id right away: the push waits out the throttle.
    let second = Uuid::new_v4();
    c.streams.set_topology_description(Some(second), false);
    member.heartbeat_once().await.unwrap();
    let delay = member.next_push_delay().expect("a push is due");
    // 300 ms from the answer, less the heartbeat since (slow on a busy machine).
    assert!(
        delay > Duration::from_millis(100) && delay <= Duration::from_millis(300),
        "{delay:?}"
    );
    assert!(member.maybe_push().is_none(), "throttled");
    tokio::time::sleep(delay + Duration::from_millis(5)).await;
    assert_eq!(member.next_push_delay(), Some(Duration::ZERO));

    // A throttled retriable error waits for the longer of throttle and back-off (10 ms).
    c.pushes.script(PushReply::Answer {
        error_code: ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.code(),
        throttle_time_ms: 250,
    });
    match member.push_once().await {
        Some(PushOutcome::Retry { after, .. }) => assert_eq!(after, Duration::from_millis(250)),
        other => panic!("{other:?}"),
    }
    assert!(member.maybe_push().is_none());
    tokio::time::sleep(Duration::from_millis(255)).await;
    stored(member.push_once().await);
    assert_eq!(c.pushes.count(), 3);
}

#[tokio::test]
async fn r67_heartbeat_v1_pushes_with_key_93_and_the_topology_epoch() {
    let c = cluster(every_api(), 5000).await;
    c.streams
        .set_topology_description(Some(Uuid::new_v4()), true);
    let mut member = StreamsMember::new(&c.client, config().with_heartbeat_version(1));
    member.heartbeat_once().await.unwrap();
    assert_eq!(
        member.pending_topology_description(),
        Some(TopologyDescriptionRequest::Required)
    );
    let push = member.maybe_push().expect("a push");
    assert_eq!(
        push.api_key(),
        ApiKey::StreamsGroupTopologyDescriptionUpdate.key()
    );
    let outcome = member.handle_push_completion(push.send().await);
    assert!(matches!(outcome, PushOutcome::Stored), "{outcome:?}");

    let pushed = c.pushes.pushed();
    let [Pushed::Kafka(request)] = pushed.as_slice() else {
        panic!("{pushed:?}")
    };
    assert_eq!(
        (
            request.group_id.as_str(),
            request.member_id.as_str(),
            request.topology_epoch
        ),
        ("orders-app", member.member_id(), 3)
    );
    assert_eq!(
        WireTopology::from(&request.topology_description),
        wire_orders()
    );
    assert_eq!(
        c.log.of(ApiKey::StreamsGroupTopologyDescriptionUpdate)[0].version(),
        0
    );
    assert!(c
        .log
        .of(ApiKey::UpdateStreamsGroupTopologyDescription)
        .is_empty());
    assert_eq!(member.pending_topology_description(), None);
}

#[tokio::test]
async fn r67_heartbeat_v2_pushes_with_key_95() {
    let c = cluster(every_api(), 5000).await;
    let id = Uuid::new_v4();
    c.streams.set_topology_description(Some(id), true);
    let mut member = StreamsMember::new(&c.client, config().with_heartbeat_version(2));
    member.heartbeat_once().await.unwrap();
    stored(member.push_once().await);
    assert_eq!(
        c.log
            .of(ApiKey::UpdateStreamsGroupTopologyDescription)
            .len(),
        1
    );
    assert!(c
        .log
        .of(ApiKey::StreamsGroupTopologyDescriptionUpdate)
        .is_empty());
}

#[tokio::test]
async fn r65_heartbeat_v0_never_pushes() {
    let c = cluster(
        every_api_but(ApiKey::StreamsGroupHeartbeat, Some((0, 0))),
        20,
    )
    .await;
    c.streams
        .set_topology_description(Some(Uuid::new_v4()), true);
    let mut member = StreamsMember::new(&c.client, config());
    member.heartbeat_once().await.unwrap();
    assert_eq!(c.log.of(ApiKey::StreamsGroupHeartbeat)[0].version(), 0);
    assert_eq!(member.pending_topology_description(), None);
    assert!(member.maybe_push().is_none());

    let handle = StreamsMember::start(&c.client, config());
    handle.wait_for(|s| s.responses >= 10, WAIT).await.unwrap();
    handle.leave().await.unwrap();
    assert_eq!(c.pushes.count(), 0);
}

#[tokio::test]
async fn r66_a_coordinator_without_the_push_rpc_gets_no_retry_until_asked_again() {
    // The coordinator does not advertise key 95: the push is not even sent, and dropped.
    let c = cluster(
        every_api_but(ApiKey::UpdateStreamsGroupTopologyDescription, None),
        5000,
    )
    .await;
    let id = Uuid::new_v4();
    c.streams.set_topology_description(Some(id), false);
    let mut member = StreamsMember::new(&c.client, config());
    member.heartbeat_once().await.unwrap();
    c.streams.set_topology_description(None, false);
    match member.push_once().await {
        Some(PushOutcome::Dropped {
            error: ClientError::UnsupportedVersion { api, .. },
        }) => assert_eq!(api, 95),
        other => panic!("{other:?}"),
    }
    assert!(c
        .log
        .of(ApiKey::UpdateStreamsGroupTopologyDescription)
        .is_empty());
    assert_eq!(member.pending_topology_description(), None);
    member.heartbeat_once().await.unwrap();
    assert!(member.maybe_push().is_none());

    // A coordinator that moved to a plugin-less broker mid-push answers UNSUPPORTED_VERSION;
    // a plugin-equipped one asking again gets the push.
    let c = cluster(every_api(), 5000).await;
    c.streams.set_topology_description(Some(id), false);
    c.pushes
        .script(PushReply::error(ErrorCode::UNSUPPORTED_VERSION.code()));
    let mut member = StreamsMember::new(&c.client, config());
    member.heartbeat_once().await.unwrap();
    c.streams.set_topology_description(None, false);
    assert!(matches!(
        member.push_once().await,
        Some(PushOutcome::Dropped { .. })
    ));
    member.heartbeat_once().await.unwrap();
    assert!(member.push_once().await.is_none(), "no retry");
    c.streams
        .set_topology_description(Some(Uuid::new_v4()), false);
    member.heartbeat_once().await.unwrap();
    stored(member.push_once().await);
}

#[tokio::test]
async fn a_newer_id_that_arrives_during_a_push_is_pushed_next() {
    let c = cluster(every_api(), 5000).await;
    let (first, second) = (Uuid::new_v4(), Uuid::new_v4());
    c.streams.set_topology_description(Some(first), false);
    let mut member = StreamsMember::new(&c.client, config());
    member.heartbeat_once().await.unwrap();
    let push = member.maybe_push().expect("a push");
    c.streams.set_topology_description(Some(second), false);
    member.heartbeat_once().await.unwrap();
    assert!(matches!(
        member.handle_push_completion(push.send().await),
        PushOutcome::Stored
    ));
    assert_eq!(
        member.pending_topology_description(),
        Some(TopologyDescriptionRequest::Id(second)),
        "the newer request survives"
    );
    stored(member.push_once().await);
    let ids: Vec<Uuid> = c
        .pushes
        .pushed()
        .iter()
        .map(|p| match p {
            Pushed::Spec(r) => r.topology_description_id,
            Pushed::Kafka(_) => panic!("v2 pushes with key 95"),
        })
        .collect();
    assert_eq!(ids, vec![first, second]);
}

#[tokio::test]
async fn fencing_drops_the_pending_request() {
    let c = cluster(every_api(), 5000).await;
    c.streams
        .set_topology_description(Some(Uuid::new_v4()), false);
    let mut member = StreamsMember::new(&c.client, config());
    member.heartbeat_once().await.unwrap();
    c.streams.set_topology_description(None, false);
    c.streams.fail_next(ErrorCode::FENCED_MEMBER_EPOCH.code());
    member.heartbeat_once().await.unwrap();
    assert_eq!(member.pending_topology_description(), None);
    assert!(member.maybe_push().is_none());
}
