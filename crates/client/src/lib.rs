//! An async Kafka-protocol client for kcoord's tests, benchmarks and tools.
//!
//! - [`Connection`]: one TCP connection with pipelined requests (any number in flight, from
//!   any number of tasks, answered in any order), typed sends of the `kcoord_wire` messages,
//!   raw sends of hand-built bodies, and ApiVersions negotiation; secured as
//!   [`ClientConfig::security`] says ([`security`]: `security.protocol` PLAINTEXT,
//!   SASL_PLAINTEXT, SSL or SASL_SSL, with SASL PLAIN/SCRAM and rustls).
//! - [`Client`]: connects through a bootstrap list and finds group coordinators, keeping one
//!   connection per node; the home of admin calls ([`admin`]: groups, streams group
//!   descriptions, topics, committed offsets).
//! - [`broker::register_broker`]: the broker side of KIP-1326, registering a broker with a
//!   controller (static configs without the sensitive ones) and heartbeating for it.
//! - [`streams::StreamsMember`]: a simulated Kafka Streams client that joins a streams group
//!   with a topology, reconciles its tasks, pushes its topology description (KIP-1331) and
//!   leaves, stepped by hand or run on a task.
//! - [`topology`]: topology descriptions, as Kafka Streams writes them and as Kafka's Admin
//!   reads them back (with predecessors rebuilt from successors).
//! - [`Producer`] ([`produce`]): one record batch per send, idempotent by default (producer id,
//!   per-partition sequences, retries answered as duplicates), any codec, acks -1/1/0.
//! - [`Consumer`] ([`consume`]): sessionless Fetch of partitions from offsets the caller keeps,
//!   ListOffsets, and the partitions of a topic.
//!
//! Nothing the server sends can make the client panic: bad bytes become
//! [`ClientError::Protocol`] or a closed connection.
//!
//! ```no_run
//! # async fn example() -> Result<(), kcoord_client::ClientError> {
//! use kcoord_client::{Client, ClientConfig};
//! use kcoord_wire::messages::StreamsGroupDescribeRequest;
//!
//! let client = Client::connect("127.0.0.1:9092", ClientConfig::new("my-tool")).await?;
//! let coordinator = client.coordinator("orders-app").await?;
//! let request = StreamsGroupDescribeRequest { group_ids: vec!["orders-app".into()], ..Default::default() };
//! let described = coordinator.send_negotiated(request).await?;
//! # let _ = described;
//! # Ok(())
//! # }
//! ```

pub mod admin;
pub mod broker;
mod client;
pub mod client_config;
mod connection;
pub mod consume;
mod error;
mod inflight;
pub mod produce;
pub mod security;
pub mod streams;
mod topic_meta;
mod versions;

pub use admin::{GroupResult, TopicResult};
pub use client::{Client, Coordinator};
pub use client_config::ClientConfig;
pub use connection::{Connection, PendingResponse};
pub use consume::{ConsumedRecord, Consumer, FetchOptions, Fetched, IsolationLevel};
pub use error::{api_name, ClientError};
pub use produce::{ProducedRecord, Producer, ProducerConfig, SendResult};
pub use security::{SecurityConfig, SecurityConfigError, SecurityProtocol};
pub use versions::ServerVersions;

/// Topology descriptions, as Kafka Streams writes them and as Kafka's Admin reads them back:
/// the `kcoord-topology` crate, under the path this library has always offered.
pub use kcoord_topology as topology;
