//! The admin calls the tool makes, behind a trait so the command logic can be driven by a fake
//! in tests. [`ClientAdmin`] is the real one, over `kcoord_client`.

mod client;

use std::collections::{BTreeMap, BTreeSet};

pub use client::ClientAdmin;

use crate::error::AdminError;
use crate::model::{
    CommittedOffset, GroupListing, GroupState, StreamsGroupDescription, TopicPartition,
};

/// Which offset ListOffsets is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetSpec {
    Earliest,
    Latest,
}

/// The subset of Kafka's `Admin` interface that `kafka-streams-groups` uses.
#[async_trait::async_trait]
pub trait StreamsAdmin: Send + Sync {
    /// ListGroups with types `["streams"]` (and the given states, when any), from every broker.
    async fn list_streams_groups(
        &self,
        states: &[GroupState],
    ) -> Result<Vec<GroupListing>, AdminError>;

    /// StreamsGroupDescribe for one group. With `include_topology_description` the request is
    /// sent at v1 with IncludeTopologyDescription set, or fails with
    /// [`AdminError::TopologyUnsupported`]. A non-zero group ErrorCode is
    /// [`AdminError::Group`].
    async fn describe_streams_group(
        &self,
        group_id: &str,
        include_topology_description: bool,
    ) -> Result<StreamsGroupDescription, AdminError>;

    /// The group's committed offsets (OffsetFetch for all topics).
    async fn list_streams_group_offsets(
        &self,
        group_id: &str,
    ) -> Result<BTreeMap<TopicPartition, CommittedOffset>, AdminError>;

    /// Earliest or latest offsets of partitions. Partitions whose offset is unknown are left out.
    async fn list_offsets(
        &self,
        partitions: &BTreeSet<TopicPartition>,
        spec: OffsetSpec,
    ) -> Result<BTreeMap<TopicPartition, i64>, AdminError>;

    /// DeleteGroups, one result per requested group, in the order given.
    async fn delete_streams_groups(
        &self,
        group_ids: &[String],
    ) -> Result<Vec<(String, Result<(), AdminError>)>, AdminError>;
}
