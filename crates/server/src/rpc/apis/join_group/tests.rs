//! JoinGroup, SyncGroup, Heartbeat and LeaveGroup through their handlers on a running node:
//! parked requests answered by other members' requests and by the shard's timers.
use bytes::Bytes;
use kcoord_wire::messages::join_group_request::JoinGroupRequestProtocol;
use kcoord_wire::messages::leave_group_request::MemberIdentity;
use kcoord_wire::messages::sync_group_request::SyncGroupRequestAssignment;
use kcoord_wire::messages::{
    DescribeGroupsRequest, HeartbeatRequest, JoinGroupRequest, JoinGroupResponse,
    LeaveGroupRequest, ListGroupsRequest, SyncGroupRequest,
};
use kcoord_wire::ErrorCode;

use crate::config::ListenerKind;
use crate::rpc::apis::{
    describe_groups, heartbeat, join_group, leave_group, list_groups, sync_group,
};
use crate::rpc::testing::{encodes, running, Ctx};
use crate::state::ServerState;

const NO_DELAY: &str = "group.initial.rebalance.delay.ms=0\n";

pub(crate) fn join_request(member_id: &str, group: &str) -> JoinGroupRequest {
    JoinGroupRequest {
        group_id: group.into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 20_000,
        member_id: member_id.into(),
        protocol_type: "consumer".into(),
        protocols: vec![JoinGroupRequestProtocol {
            name: "range".into(),
            metadata: Bytes::from_static(b"subscription"),
            ..Default::default()
        }],
        ..Default::default()
    }
}

async fn join(state: &ServerState, member_id: &str, version: i16) -> JoinGroupResponse {
    let c = Ctx::new(state, ListenerKind::Broker);
    let resp = join_group::handle(&c.ctx(state), join_request(member_id, "g"), version).await;
    encodes(&resp, version);
    resp
}

/// A new member's id, from the MEMBER_ID_REQUIRED round trip.
async fn member_id(state: &ServerState) -> String {
    let first = join(state, "", 9).await;
    assert_eq!(first.error_code, ErrorCode::MEMBER_ID_REQUIRED.code());
    assert!(
        first.member_id.starts_with("test-client-"),
        "{}",
        first.member_id
    );
    first.member_id
}

async fn sync(
    state: &ServerState,
    member: &str,
    generation: i32,
    assign: &[(&str, &'static [u8])],
) -> (i16, Bytes) {
    let c = Ctx::new(state, ListenerKind::Broker);
    let req = SyncGroupRequest {
        group_id: "g".into(),
        generation_id: generation,
        member_id: member.into(),
        protocol_type: Some("consumer".into()),
        protocol_name: Some("range".into()),
        assignments: assign
            .iter()
            .map(|(m, a)| SyncGroupRequestAssignment {
                member_id: (*m).into(),
                assignment: Bytes::from_static(a),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let resp = sync_group::handle(&c.ctx(state), req, 5).await;
    encodes(&resp, 5);
    (resp.error_code, resp.assignment)
}

async fn beat(state: &ServerState, member: &str, generation: i32) -> i16 {
    let c = Ctx::new(state, ListenerKind::Broker);
    let req = HeartbeatRequest {
        group_id: "g".into(),
        generation_id: generation,
        member_id: member.into(),
        ..Default::default()
    };
    heartbeat::handle(&c.ctx(state), req, 4).await.error_code
}

#[tokio::test]
async fn two_members_rebalance_through_the_rpcs_and_leave() {
    let r = running(NO_DELAY);
    let state = &*r.state;
    let a = member_id(state).await;
    let joined = join(state, &a, 9).await;
    assert_eq!((joined.error_code, joined.generation_id), (0, 1));
    assert_eq!(joined.leader, a);
    assert_eq!(
        sync(state, &a, 1, &[(&a, b"all")]).await,
        (0, Bytes::from_static(b"all"))
    );

    // b joins; its JoinGroup waits until a rejoins, which a does after its heartbeat says so.
    let b = member_id(state).await;
    let b_join = join(state, &b, 9);
    let a_rejoin = async {
        while beat(state, &a, 1).await != ErrorCode::REBALANCE_IN_PROGRESS.code() {
            tokio::task::yield_now().await;
        }
        join(state, &a, 9).await
    };
    let (jb, ja) = tokio::join!(b_join, a_rejoin);
    assert_eq!((ja.generation_id, jb.generation_id), (2, 2));
    assert_eq!((ja.members.len(), jb.members.len()), (2, 0));

    // b's SyncGroup waits for the leader's.
    let assignment = [(a.as_str(), &b"a-part"[..]), (b.as_str(), &b"b-part"[..])];
    let (sb, sa) = tokio::join!(sync(state, &b, 2, &[]), sync(state, &a, 2, &assignment));
    assert_eq!(sb, (0, Bytes::from_static(b"b-part")));
    assert_eq!(sa, (0, Bytes::from_static(b"a-part")));
    assert_eq!(beat(state, &b, 2).await, 0);

    let c = Ctx::new(state, ListenerKind::Broker);
    let described = describe_groups::handle(
        &c.ctx(state),
        DescribeGroupsRequest {
            groups: vec!["g".into()],
            ..Default::default()
        },
        5,
    )
    .await;
    let g = &described.groups[0];
    assert_eq!(
        (
            g.group_state.as_str(),
            g.protocol_type.as_str(),
            g.protocol_data.as_str()
        ),
        ("Stable", "consumer", "range")
    );
    assert_eq!(g.members.len(), 2);
    let listed = list_groups::handle(&c.ctx(state), ListGroupsRequest::default(), 5).await;
    let entry = listed
        .groups
        .iter()
        .find(|l| l.group_id == "g")
        .expect("listed");
    assert_eq!(
        (
            entry.group_state.as_str(),
            entry.group_type.as_str(),
            entry.protocol_type.as_str()
        ),
        ("Stable", "classic", "consumer")
    );

    // a leaves (v5 batch, and an unknown member); b's heartbeat then asks it to rejoin.
    let leave = LeaveGroupRequest {
        group_id: "g".into(),
        members: vec![
            MemberIdentity {
                member_id: a.clone(),
                ..Default::default()
            },
            MemberIdentity {
                member_id: "nobody".into(),
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let left = leave_group::handle(&c.ctx(state), leave, 5).await;
    let codes: Vec<i16> = left.members.iter().map(|m| m.error_code).collect();
    assert_eq!(codes, vec![0, ErrorCode::UNKNOWN_MEMBER_ID.code()]);
    assert_eq!(
        beat(state, &b, 2).await,
        ErrorCode::REBALANCE_IN_PROGRESS.code()
    );
    let alone = join(state, &b, 9).await;
    assert_eq!(
        (
            alone.generation_id,
            alone.leader.as_str(),
            alone.members.len()
        ),
        (3, b.as_str(), 1)
    );
}

#[tokio::test]
async fn old_versions_join_without_the_member_id_round_trip_and_name_no_null_protocol() {
    let r = running(NO_DELAY);
    let state = &*r.state;
    let joined = join(state, "", 3).await;
    assert_eq!((joined.error_code, joined.generation_id), (0, 1));
    assert_eq!(joined.protocol_name.as_deref(), Some("range"));
    // An unknown member of an unknown group: UNKNOWN_MEMBER_ID, and v0-6 carry "" as the
    // protocol name.
    let c = Ctx::new(state, ListenerKind::Broker);
    let resp = join_group::handle(&c.ctx(state), join_request("ghost", "other"), 2).await;
    encodes(&resp, 2);
    assert_eq!(resp.error_code, ErrorCode::UNKNOWN_MEMBER_ID.code());
    assert_eq!(resp.protocol_name.as_deref(), Some(""));
    // Outside the session timeout bounds.
    let mut req = join_request("", "g");
    req.session_timeout_ms = 1;
    let resp = join_group::handle(&c.ctx(state), req, 9).await;
    assert_eq!(resp.error_code, ErrorCode::INVALID_SESSION_TIMEOUT.code());
}

#[tokio::test]
async fn a_v5_sync_without_its_protocol_is_inconsistent() {
    let r = running(NO_DELAY);
    let state = &*r.state;
    let c = Ctx::new(state, ListenerKind::Broker);
    let req = SyncGroupRequest {
        group_id: "g".into(),
        member_id: "m".into(),
        ..Default::default()
    };
    let resp = sync_group::handle(&c.ctx(state), req, 5).await;
    assert_eq!(
        resp.error_code,
        ErrorCode::INCONSISTENT_GROUP_PROTOCOL.code()
    );
}
