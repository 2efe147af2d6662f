//! The authorization matrix (docs/kafka-security-facts.md §1.2; docs/operations.md, "Authorization"): every
//! RPC a listener serves, sent through dispatch to a running node, as
//!
//! - `User:admin`, a super user: allowed;
//! - `User:alice`, granted exactly what the row needs by ACLs that the super user created with
//!   CreateAcls (so through the controller and `Authorizer::acls_changed`): allowed;
//! - `User:mallory`, granted the same and denied it too (DENY wins): refused;
//! - `User:ANONYMOUS`, a client that did not authenticate, with no ACL: refused;
//!
//! against Kafka's `StandardAuthorizer` (`super.users=User:admin`). The rows are in
//! [`rows`]; a test checks that the table of docs/operations.md lists exactly their APIs, and one that
//! every API a listener serves has a row there. Two more runs check that each row asks its
//! question (an authorizer that records what it is asked), and that a refusal is the same
//! where nothing exists.

mod requests;
mod rows;
mod seen;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use kcoord_acl::{AclPermissionType, KafkaPrincipal, PatternType};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::*;
use kcoord_wire::{Decodable, Encodable, ErrorCode};

use super::{AclOperation, ResourceType};
use crate::config::ListenerKind;
use crate::rpc::authentication::SaslSession;
use crate::rpc::dispatch::{dispatch, Connection, Reply};
use crate::rpc::testing::{listener, running_adjusted, Running, FAST_GROUPS};
use crate::rpc::versions::supported_versions;
use crate::runtime::topology_plugin::TopologyDescriptions;
use crate::security::Authorizer;
use rows::{decode, rows, Grant, Row};

/// Kafka's StandardAuthorizer with one super user, and what the rows need of the node.
const CONFIG: &str = "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:admin
auto.create.topics.enable=true
";

/// Who sends a row's request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    SuperUser,
    Allowed,
    Denied,
    Anonymous,
}

impl Who {
    const ALL: [Who; 4] = [Who::SuperUser, Who::Allowed, Who::Denied, Who::Anonymous];

    /// The SASL user; `None` for a connection that did not authenticate.
    fn user(self) -> Option<&'static str> {
        match self {
            Who::SuperUser => Some("admin"),
            Who::Allowed => Some("alice"),
            Who::Denied => Some("mallory"),
            Who::Anonymous => None,
        }
    }
}

/// A connection of `who` to a `kind` listener: authenticated by SASL as its user, or a
/// PLAINTEXT client (`User:ANONYMOUS`).
fn connection(node: &Running, kind: ListenerKind, who: Who) -> Connection {
    let mut conn = Connection::new(
        Arc::clone(&node.state),
        listener(&node.state, kind),
        std::net::SocketAddr::from(([127, 0, 0, 1], 50000)),
    );
    if let Some(user) = who.user() {
        conn.sasl = Some(Arc::new(SaslSession::authenticated(KafkaPrincipal::user(
            user,
        ))));
    }
    conn
}

/// Sends one request and returns the response body.
async fn call(conn: &Connection, api: ApiKey, version: i16, body: &Bytes) -> Bytes {
    let mut frame = BytesMut::new();
    RequestHeader {
        request_api_key: api.key(),
        request_api_version: version,
        correlation_id: 7,
        client_id: Some("matrix".into()),
        ..Default::default()
    }
    .encode(&mut frame, api.request_header_version(version))
    .unwrap_or_else(|e| panic!("{e}"));
    frame.extend_from_slice(body);
    let Reply::Respond(response) = dispatch(conn, frame.freeze()).await else {
        panic!("{} v{version}: no response", api.name());
    };
    let mut response = response.to_bytes();
    response.advance(4);
    ResponseHeader::decode(&mut response, api.response_header_version(version))
        .unwrap_or_else(|e| panic!("{e}"));
    response
}

async fn send<Req: Encodable, Resp: Decodable>(
    conn: &Connection,
    api: ApiKey,
    version: i16,
    request: &Req,
) -> Resp {
    let mut body = BytesMut::new();
    request
        .encode(&mut body, version)
        .unwrap_or_else(|e| panic!("{e}"));
    decode(call(conn, api, version, &body.freeze()).await, version)
}

/// A node with the StandardAuthorizer and the `memory` topology description plugin.
fn node() -> Running {
    running_adjusted(&format!("{CONFIG}{FAST_GROUPS}"), |state, _| {
        let plugin = Arc::new(kcoord_plugins::MemoryPlugin::default());
        state.topology = TopologyDescriptions::new(plugin, "memory", Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("{e}"));
    })
}

fn acl(
    principal: &str,
    (op, resource, name): Grant,
    permission: AclPermissionType,
) -> create_acls_request::AclCreation {
    create_acls_request::AclCreation {
        resource_type: resource.to_acl().code(),
        resource_name: name.into(),
        resource_pattern_type: PatternType::Literal.code(),
        principal: principal.into(),
        host: "*".into(),
        operation: i8::try_from(op.code()).unwrap_or_else(|e| panic!("{e}")),
        permission_type: permission.code(),
        ..Default::default()
    }
}

/// What every row acts on, made by the super user, and the row's ACLs.
async fn prepare(node: &Running, row: &Row) {
    let admin = connection(node, ListenerKind::Broker, Who::SuperUser);
    let created: CreateTopicsResponse = send(
        &admin,
        ApiKey::CreateTopics,
        7,
        &CreateTopicsRequest {
            topics: vec![create_topics_request::CreatableTopic {
                name: rows::TOPIC.into(),
                num_partitions: 1,
                replication_factor: 1,
                ..Default::default()
            }],
            timeout_ms: 1000,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(created.topics[0].error_code, 0, "{:?}", created.topics[0]);
    let committed: OffsetCommitResponse =
        send(&admin, ApiKey::OffsetCommit, 9, &requests::offset_commit()).await;
    assert_eq!(committed.topics[0].partitions[0].error_code, 0);
    let joined: StreamsGroupHeartbeatResponse = send(
        &admin,
        ApiKey::StreamsGroupHeartbeat,
        1,
        &requests::streams_join(rows::STREAMS, false),
    )
    .await;
    assert_eq!(joined.error_code, 0, "{:?}", joined.error_message);

    let mut creations = Vec::new();
    for grant in &row.also {
        creations.push(acl("User:*", *grant, AclPermissionType::Allow));
    }
    for grant in &row.needs {
        creations.push(acl("User:alice", *grant, AclPermissionType::Allow));
        creations.push(acl("User:mallory", *grant, AclPermissionType::Allow));
        creations.push(acl("User:mallory", *grant, AclPermissionType::Deny));
    }
    if creations.is_empty() {
        return;
    }
    let controller = connection(node, ListenerKind::Controller, Who::SuperUser);
    let acls: CreateAclsResponse = send(
        &controller,
        ApiKey::CreateAcls,
        3,
        &CreateAclsRequest {
            creations,
            ..Default::default()
        },
    )
    .await;
    for result in &acls.results {
        assert_eq!(result.error_code, 0, "{:?}", result.error_message);
    }
}

#[tokio::test]
async fn every_rpc_gives_each_principal_exactly_the_expected_answer() {
    let mut wrong = Vec::new();
    for row in rows() {
        for who in Who::ALL {
            // A node per request: what one principal's request changes (a deleted topic, a
            // created ACL) never decides another's answer.
            let node = node();
            prepare(&node, &row).await;
            let conn = connection(&node, row.kind, who);
            let seen = (row.seen)(
                call(&conn, row.api, row.version, &row.body).await,
                row.version,
            );
            let expected = match who {
                Who::SuperUser | Who::Allowed => row.allowed,
                Who::Denied | Who::Anonymous => row.denied,
            };
            if seen != expected {
                wrong.push(format!(
                    "{} as {who:?}: expected \"{expected}\", answered \"{seen}\"",
                    row.label()
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

/// Allows the super user, denies everyone else and remembers what it was asked for them.
#[derive(Debug, Default)]
struct Recording {
    asked: Mutex<Vec<(AclOperation, ResourceType, String)>>,
}

impl Authorizer for Recording {
    fn authorize(
        &self,
        ctx: &crate::security::Requester<'_>,
        operation: AclOperation,
        resource: ResourceType,
        name: &str,
    ) -> bool {
        if *ctx.principal == KafkaPrincipal::user("admin") {
            return true;
        }
        self.asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((operation, resource, name.to_owned()));
        false
    }

    /// Recorded as a question about [`ANY_NAME`].
    fn authorize_any(
        &self,
        ctx: &crate::security::Requester<'_>,
        operation: AclOperation,
        resource: ResourceType,
    ) -> bool {
        self.authorize(ctx, operation, resource, ANY_NAME)
    }
}

/// What [`Recording`] records for a question about any resource of a type (Kafka's
/// `authorizeByResourceType`): it answers a row's question about any name.
const ANY_NAME: &str = "<any>";

/// Each row asks its first question (the first of `also`, else of `needs`), and a row that
/// asks nothing asks nothing; refused, a row whose refusal that question decides is answered
/// as the matrix says.
#[tokio::test]
async fn every_rpc_asks_kafkas_question() {
    for row in rows() {
        let recording = Arc::new(Recording::default());
        let authorizer = Arc::clone(&recording) as Arc<dyn Authorizer>;
        let node = running_adjusted(FAST_GROUPS, |state, background| {
            state.authorizer = Some(Arc::clone(&authorizer));
            background.controller.attach_authorizer(Some(authorizer));
        });
        prepare(&node, &row).await;
        let conn = connection(&node, row.kind, Who::Anonymous);
        let seen = (row.seen)(
            call(&conn, row.api, row.version, &row.body).await,
            row.version,
        );
        let asked = recording
            .asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let label = row.label();
        let Some((op, resource, name)) = row.also.first().or(row.needs.first()).copied() else {
            assert!(asked.is_empty(), "{label}: asked {asked:?}");
            assert_eq!(seen, row.denied, "{label}");
            continue;
        };
        assert!(
            asked
                .iter()
                .any(|(o, r, n)| *o == op && *r == resource && (n == name || n == ANY_NAME)),
            "{label}: {op:?} on {resource:?} {name} not asked; asked {asked:?}"
        );
        if row.also.is_empty() {
            assert_eq!(seen, row.denied, "{label}");
        }
    }
}

/// A refused principal learns nothing of whether a resource exists: on a node where nothing
/// does, anonymous gets the same refusal as where everything does (rows whose refusal needs
/// `also` granted are left out: without ACLs they are refused earlier).
#[tokio::test]
async fn refusals_do_not_depend_on_whether_the_resource_exists() {
    for row in rows().into_iter().filter(|r| r.also.is_empty()) {
        let node = node();
        let conn = connection(&node, row.kind, Who::Anonymous);
        let seen = (row.seen)(
            call(&conn, row.api, row.version, &row.body).await,
            row.version,
        );
        assert_eq!(seen, row.denied, "{}", row.label());
    }
}

/// Every API a listener serves, on every listener kind that serves it, has a row.
#[test]
fn the_matrix_covers_every_api_on_every_listener() {
    let covered: BTreeSet<(i16, &str)> = rows()
        .iter()
        .map(|r| (r.api.key(), r.kind.as_str()))
        .collect();
    let mut missing = Vec::new();
    for api in ApiKey::ALL {
        for kind in [ListenerKind::Broker, ListenerKind::Controller] {
            if supported_versions(*api, kind).is_some()
                && !covered.contains(&(api.key(), kind.as_str()))
            {
                missing.push(format!("{} on {kind}", api.name()));
            }
        }
    }
    assert!(missing.is_empty(), "no matrix row for {missing:?}");
    for row in rows() {
        assert!(
            supported_versions(row.api, row.kind)
                .is_some_and(|v| v.min <= row.version && row.version <= v.max),
            "{}: not served",
            row.label()
        );
    }
}

/// The APIs the "Authorization" table of docs/operations.md names: the first cell of each row,
/// a list of API names separated by commas, each maybe followed by a remark in parentheses.
fn documented_authorization_apis(guide: &str) -> Vec<String> {
    let section = guide
        .split("\n## ")
        .find(|s| s.starts_with("Authorization\n"))
        .unwrap_or_else(|| panic!("docs/operations.md has no \"## Authorization\" section"));
    let mut apis = Vec::new();
    for line in section.lines().filter(|l| l.starts_with('|')).skip(2) {
        let first = line.split('|').nth(1).unwrap_or_default();
        for name in first.split(',') {
            let name = name.split('(').next().unwrap_or_default().trim();
            apis.push(name.to_owned());
        }
    }
    apis
}

/// The operations guide's table lists exactly the matrix's APIs, each once, by Kafka's name.
#[test]
fn the_operations_guide_table_lists_exactly_the_apis_of_the_matrix() {
    let guide = include_str!("../../../../../docs/operations.md");
    let listed = documented_authorization_apis(guide);
    let unique: BTreeSet<&str> = listed.iter().map(String::as_str).collect();
    assert_eq!(
        unique.len(),
        listed.len(),
        "an API listed twice: {listed:?}"
    );
    let matrix: BTreeSet<&str> = rows().iter().map(|r| r.api.name()).collect();
    assert_eq!(
        unique, matrix,
        "docs/operations.md \"Authorization\" vs. the matrix"
    );
}

#[test]
fn the_table_parser_reads_grouped_rows_and_remarks() {
    let guide = "x\n## Authorization\n\ntext\n\n| API | asks | refused |\n| --- | --- | --- |\n\
        | ListOffsets, OffsetForLeaderEpoch | DESCRIBE | TAF |\n| ListTopics (KIP-142) | x | |\n\
        \nmore | not a row\n## Next\n| Fetch | no |\n";
    assert_eq!(
        documented_authorization_apis(guide),
        vec!["ListOffsets", "OffsetForLeaderEpoch", "ListTopics"]
    );
}

/// The error code names used by the rows exist (a typo would fail every row, but say less).
#[test]
fn the_rows_name_known_codes() {
    for row in rows() {
        for seen in [row.allowed, row.denied] {
            let name = seen.split([':', ' ', ',']).next().unwrap_or_default();
            let known = ErrorCode::ALL.iter().any(|e| e.name() == name)
                || seen.ends_with("listed")
                || seen.ends_with("left out");
            assert!(known, "{}: {seen}", row.label());
        }
    }
}
