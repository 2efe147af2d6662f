//! The authorization matrix (docs/kafka-security-facts.md §1.2; docs/operations.md, "Authorization"): every
//! RPC a listener serves, sent through dispatch to a running node, as
//!
//! - `User:admin`, a super user: allowed;
//! - `User:alice`, granted exactly what the row needs by ACLs that the super user created with
//!   CreateAcls (so through the controller and `Authorizer::acls_changed`): allowed;
//! - `User:mallory`, granted the same and denied it too (DENY wins): refused;
//! - `User:ANONYMOUS`, a client that did not authenticate, with no ACL: refused;
//!
//! against Kafka's `StandardAuthorizer` (`super.users=User:admin`). Each RPC's rows are in its
//! file (`authorization_rows`, collected by [`crate::rpc::apis::authorization_rows`]; the row
//! format is [`rows::Row`]); tests check that each RPC's rows ask exactly what its declaration
//! says, that every API a listener serves has rows, and that the user guide's table says what
//! each asks. Two more runs check that each row asks its
//! question (an authorizer that records what it is asked), and that a refusal is the same
//! where nothing exists.

pub(crate) mod requests;
pub(crate) mod rows;
pub(crate) mod seen;

/// What an RPC file's `authorization_rows` needs in scope to write its rows with `row!`.
pub(crate) mod prelude {
    pub(crate) use super::requests::*;
    pub(crate) use super::rows::{
        body, decode, on_every_listener, row, Row, AUTO_TOPIC, CHANGELOG, CLUSTER, CONSUMER,
        CONSUMER_JOINING, GROUP, JOINING, MEMBER, NEW_TOPIC, OPEN_TRANSACTION, STREAMS, TOPIC,
        TRANSACTIONAL_ID,
    };
    pub(crate) use super::seen::*;
    pub(crate) use crate::config::ListenerKind;
    pub(crate) use crate::rpc::authorize::{AclOperation, ResourceType};
    pub(crate) use kcoord_wire::api::ApiKey;
    pub(crate) use kcoord_wire::messages::*;
}

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use kcoord_acl::{AclPermissionType, KafkaPrincipal, PatternType};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::*;
use kcoord_wire::{Decodable, Encodable, ErrorCode};

use self::rows::{decode, Grant, Row};
use super::{AclOperation, ResourceType};
use crate::config::ListenerKind;
use crate::rpc::apis::authorization_rows;
use crate::rpc::authentication::SaslSession;
use crate::rpc::dispatch::{dispatch, Connection, Reply};
use crate::rpc::testing::{listener, running_adjusted, Running, FAST_GROUPS};
use crate::rpc::versions::supported_versions;
use crate::runtime::topology_plugin::TopologyDescriptions;
use crate::security::Authorizer;

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
    let consumer: ConsumerGroupHeartbeatResponse = send(
        &admin,
        ApiKey::ConsumerGroupHeartbeat,
        1,
        &requests::consumer_join(rows::CONSUMER),
    )
    .await;
    assert_eq!(consumer.error_code, 0, "{:?}", consumer.error_message);
    open_transaction(&admin).await;

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

/// [`rows::OPEN_TRANSACTION`]'s producer and its transaction holding [`rows::TOPIC`]-0.
async fn open_transaction(admin: &Connection) {
    let init: InitProducerIdResponse = send(
        admin,
        ApiKey::InitProducerId,
        4,
        &InitProducerIdRequest {
            transactional_id: Some(rows::OPEN_TRANSACTION.into()),
            transaction_timeout_ms: 60_000,
            producer_id: -1,
            producer_epoch: -1,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(init.error_code, 0, "{init:?}");
    let added: AddPartitionsToTxnResponse = send(
        admin,
        ApiKey::AddPartitionsToTxn,
        3,
        &AddPartitionsToTxnRequest {
            v3_and_below_transactional_id: rows::OPEN_TRANSACTION.into(),
            v3_and_below_producer_id: init.producer_id,
            v3_and_below_producer_epoch: init.producer_epoch,
            v3_and_below_topics: vec![add_partitions_to_txn_request::AddPartitionsToTxnTopic {
                name: rows::TOPIC.into(),
                partitions: vec![0],
                ..Default::default()
            }],
            ..Default::default()
        },
    )
    .await;
    let code = added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code;
    assert_eq!(code, 0, "{added:?}");
}

#[tokio::test]
async fn every_rpc_gives_each_principal_exactly_the_expected_answer() {
    let mut wrong = Vec::new();
    for row in authorization_rows() {
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
    for row in authorization_rows() {
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
    for row in authorization_rows()
        .into_iter()
        .filter(|r| r.also.is_empty())
    {
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
    let covered: BTreeSet<(i16, &str)> = authorization_rows()
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
    for row in authorization_rows() {
        assert!(
            supported_versions(row.api, row.kind)
                .is_some_and(|v| v.min <= row.version && row.version <= v.max),
            "{}: not served",
            row.label()
        );
    }
}

/// The APIs the "Authorization" table of docs/operations.md names: the first cell of each row,
/// The (API, what it asks) of each row of the user guide's "Supported APIs" table.
fn documented_authorization(guide: &str) -> Vec<(String, String)> {
    let section = guide
        .split("\n## ")
        .find(|s| s.starts_with("Supported APIs\n"))
        .unwrap_or_else(|| panic!("docs/user-guide.md has no \"## Supported APIs\" section"));
    section
        .lines()
        .filter(|l| l.starts_with('|'))
        .skip(2)
        .map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let cell = |i: usize| cells.get(i).copied().unwrap_or_default().to_owned();
            (cell(1), cell(5))
        })
        .collect()
}

/// The user guide's table says what every RPC of the matrix asks, each once, naming every
/// operation its declaration asks about.
#[test]
fn the_user_guide_says_what_each_rpc_asks_the_authorizer() {
    let guide = include_str!("../../../../../docs/user-guide.md");
    let listed = documented_authorization(guide);
    let unique: BTreeSet<&str> = listed.iter().map(|(api, _)| api.as_str()).collect();
    assert_eq!(unique.len(), listed.len(), "an API listed twice");
    let matrix: BTreeSet<&str> = authorization_rows().iter().map(|r| r.api.name()).collect();
    assert_eq!(
        unique, matrix,
        "docs/user-guide.md \"Supported APIs\" vs. the matrix"
    );
    for (api, asks) in &listed {
        assert!(
            !asks.is_empty(),
            "{api}: the table does not say what it asks"
        );
        let Some(rpc) = crate::rpc::apis::ALL.iter().find(|r| r.api.name() == api) else {
            continue;
        };
        for check in rpc.asks {
            let operation = check.operation.name();
            assert!(
                asks.contains(operation),
                "{api}: the table's \"{asks}\" does not name {operation}, which it asks"
            );
        }
    }
}

#[test]
fn the_table_parser_reads_the_name_and_the_authorization_cell() {
    let guide = "x\n## Supported APIs\n\ntext\n\n| API | key | versions | notes | asks | refused |\n\
        | --- | --- | --- | --- | --- | --- |\n| ListTopics | 96 | 0-1 | KIP-142 | DESCRIBE on each topic | left out |\n\
        \nmore | not a row\n## Next\n| Fetch | no |\n";
    assert_eq!(
        documented_authorization(guide),
        vec![("ListTopics".to_owned(), "DESCRIBE on each topic".to_owned())]
    );
}

/// The error code names used by the rows exist (a typo would fail every row, but say less).
#[test]
fn the_rows_name_known_codes() {
    for row in authorization_rows() {
        for seen in [row.allowed, row.denied] {
            let name = seen.split([':', ' ', ',']).next().unwrap_or_default();
            let known = ErrorCode::ALL.iter().any(|e| e.name() == name)
                || seen.ends_with("listed")
                || seen.ends_with("left out");
            assert!(known, "{}: {seen}", row.label());
        }
    }
}

/// Each RPC's declaration names exactly the questions its rows ask the authorizer: what an
/// RPC may ask is written once, in its declaration, and the matrix proves it.
#[test]
fn each_rpcs_rows_ask_exactly_what_its_declaration_says() {
    let mut wrong = Vec::new();
    for rpc in crate::rpc::apis::ALL {
        let declared: BTreeSet<String> = rpc
            .asks
            .iter()
            .map(|c| format!("{:?} on {:?}", c.operation, c.resource))
            .collect();
        let asked: BTreeSet<String> = authorization_rows()
            .iter()
            .filter(|row| row.api == rpc.api)
            .flat_map(|row| row.needs.iter().chain(&row.also))
            .map(|(operation, resource, _)| format!("{operation:?} on {resource:?}"))
            .collect();
        if declared != asked {
            wrong.push(format!(
                "{}: declared {declared:?}, the rows ask {asked:?}",
                rpc.api.name()
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
