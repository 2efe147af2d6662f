//! Kafka wire types for kcoord.
//!
//! Every message and record the daemon speaks is generated from the JSON schemas in `schemas/`
//! by `kcoord-codegen` (see `build.rs`). The generated types implement kafka-protocol's
//! [`Encodable`], [`Decodable`], [`Message`] and [`HeaderVersion`] traits, so they are handled
//! exactly like the messages kafka-protocol ships.
//!
//! The server decodes untrusted bytes only with the generated codecs: they refuse an array
//! count the remaining input cannot hold, never reserve more memory than about the input's size,
//! and charge what they materialise to a per-request budget ([`budget`]), so neither a hostile
//! length nor a valid but amplifying request can make the process allocate without bound.

pub mod budget;
pub mod codec;
pub mod error;
pub mod frame;
mod record_set;
pub mod types;

pub use record_set::RecordSet;

/// Generated request/response types, one module per schema file.
#[allow(
    clippy::all,
    unused_mut,
    unused_variables,
    unused_parens,
    non_snake_case,
    dead_code
)]
pub mod messages {
    include!(concat!(env!("OUT_DIR"), "/messages.rs"));
}

/// Generated metadata-log and coordinator record types.
#[allow(
    clippy::all,
    unused_mut,
    unused_variables,
    unused_parens,
    non_snake_case,
    dead_code
)]
pub mod records {
    include!(concat!(env!("OUT_DIR"), "/records.rs"));
}

/// The ApiKey table generated from the request schemas.
#[allow(clippy::all, dead_code)]
pub mod api {
    include!(concat!(env!("OUT_DIR"), "/api.rs"));
}

pub use error::{ErrorCode, ErrorCodes};
pub use kafka_protocol::protocol::{
    Decodable, Encodable, HeaderVersion, Message, Request, VersionRange,
};
pub use types::{kafka_uuid, AclOperation, GroupState, TopicPartition};

/// `message` encoded at `version`, a body without its header; `None` when it cannot be (a
/// field set that the version lacks).
pub fn encoded<M: Encodable>(message: &M, version: i16) -> Option<bytes::Bytes> {
    let mut out = bytes::BytesMut::with_capacity(256);
    message.encode(&mut out, version).ok()?;
    Some(out.freeze())
}

#[cfg(test)]
mod round_trip_tests;

#[cfg(test)]
mod cross_check_tests;
