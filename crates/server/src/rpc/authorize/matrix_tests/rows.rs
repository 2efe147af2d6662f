//! The rows of the authorization matrix: one request per RPC, listener and way of being
//! allowed (Kafka's "on the cluster, else on each topic" is two rows), each with the ACLs that
//! allow it and what an allowed and a refused principal are answered (docs/operations.md,
//! "Authorization"; docs/kafka-security-facts.md §1).
//!
//! Every node the matrix starts holds the topic [`TOPIC`] (one partition), the group [`GROUP`]
//! with a committed offset of it, and the streams group [`STREAMS`] whose member [`MEMBER`]
//! reads it (topology epoch 1), and the transaction of [`OPEN_TRANSACTION`] holding [`TOPIC`]-0,
//! all made by the super user; the rows act on those, or create
//! [`NEW_TOPIC`], [`AUTO_TOPIC`] and the streams group [`JOINING`].

use bytes::{Bytes, BytesMut};
use kcoord_wire::api::ApiKey;
use kcoord_wire::Encodable;

use super::super::{AclOperation, ResourceType};
use crate::config::ListenerKind;

pub const TOPIC: &str = "t";
pub const GROUP: &str = "g";
pub const STREAMS: &str = "s";
pub const MEMBER: &str = "m";
/// A streams group the rows' heartbeats create.
pub const JOINING: &str = "h";
/// The consumer group whose member [`MEMBER`] reads [`TOPIC`].
pub const CONSUMER: &str = "cg";
/// A consumer group the rows' heartbeats create.
pub const CONSUMER_JOINING: &str = "c";
/// The changelog topic [`JOINING`]'s topology asks the coordinator to create.
pub const CHANGELOG: &str = "h-store-changelog";
pub const NEW_TOPIC: &str = "new";
/// A topic Metadata creates (`auto.create.topics.enable=true`).
pub const AUTO_TOPIC: &str = "auto";
pub const TRANSACTIONAL_ID: &str = "tx";
/// A transactional id whose transaction holds [`TOPIC`]-0 (Ongoing), for the rows that describe
/// or list transactions.
pub const OPEN_TRANSACTION: &str = "open";
pub const CLUSTER: &str = "kafka-cluster";

/// One permission: an operation on a LITERAL resource.
pub type Grant = (AclOperation, ResourceType, &'static str);

/// One request of the matrix and what each principal gets.
#[derive(Clone)]
pub struct Row {
    pub api: ApiKey,
    /// Which of the API's rows this is ("" when it has one).
    pub variant: &'static str,
    pub version: i16,
    pub kind: ListenerKind,
    pub body: Bytes,
    /// Granted to `User:*`: what every principal may do, so that the row decides on `needs`.
    pub also: Vec<Grant>,
    /// What the row asks, the first question first: granted to the allowed user; granted and
    /// denied to the denied user (DENY wins); not granted to anonymous.
    pub needs: Vec<Grant>,
    /// The part of the response body that shows the decision.
    pub seen: fn(Bytes, i16) -> String,
    /// What the super user and the allowed user see.
    pub allowed: &'static str,
    /// What the denied user and anonymous see.
    pub denied: &'static str,
}

impl Row {
    pub fn label(&self) -> String {
        let variant = if self.variant.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.variant)
        };
        format!(
            "{}{variant} v{} on {}",
            self.api.name(),
            self.version,
            self.kind
        )
    }
}

/// The same row on a broker and on a controller listener (an RPC both serve).
pub fn on_every_listener(row: Row) -> Vec<Row> {
    [ListenerKind::Broker, ListenerKind::Controller]
        .into_iter()
        .map(|kind| Row {
            kind,
            ..row.clone()
        })
        .collect()
}

pub fn body<R: Encodable>(request: &R, version: i16) -> Bytes {
    let mut buf = BytesMut::new();
    request
        .encode(&mut buf, version)
        .unwrap_or_else(|e| panic!("{e}"));
    buf.freeze()
}

pub fn decode<R: kcoord_wire::Decodable>(mut bytes: Bytes, version: i16) -> R {
    R::decode(&mut bytes, version).unwrap_or_else(|e| panic!("{e}"))
}

/// One row: `API ("variant") version on Kind, request, [also [...],] needs [...], Response =>
/// |r| what shows the decision, allowed "...", denied "..."`.
macro_rules! row {
    ($api:ident $(($variant:literal))? $v:literal on $kind:ident, $request:expr,
     $(also [$(($aop:ident, $ares:ident, $aname:expr)),*],)?
     needs [$(($op:ident, $res:ident, $name:expr)),*],
     $response:ty => |$r:ident| $seen:expr,
     allowed $allowed:literal, denied $denied:literal) => {
        Row {
            api: ApiKey::$api,
            variant: concat!("" $(, $variant)?),
            version: $v,
            kind: ListenerKind::$kind,
            body: body(&$request, $v),
            also: vec![$($((AclOperation::$aop, ResourceType::$ares, $aname)),*)?],
            needs: vec![$((AclOperation::$op, ResourceType::$res, $name)),*],
            seen: |bytes, version| {
                let $r: $response = decode(bytes, version);
                $seen
            },
            allowed: $allowed,
            denied: $denied,
        }
    };
}
pub(crate) use row;
