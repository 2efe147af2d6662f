//! StreamsGroupDescribe, answered as Kafka's `StreamsGroupDescription`, with the topology
//! description (KIP-1331) when asked for: IncludeTopologyDescription exists from v1, so it is
//! set only when v1 is negotiated, and asking for it from an older coordinator fails.

use kcoord_wire::messages::streams_group_describe_response::{
    DescribedGroup, Member, Subtopology, TopicInfo as WireTopicInfo,
};
use kcoord_wire::messages::StreamsGroupDescribeRequest;
use kcoord_wire::Request;

use crate::admin::{AclOperation, GroupResult};
use crate::client::{Client, Coordinator};
use crate::error::ClientError;
use crate::streams::{Assignment, Endpoint};
use crate::topology::{self, StreamsGroupTopologyDescription, TopologyDescriptionStatus};

/// StreamsGroupDescribe's first version with IncludeTopologyDescription.
const DESCRIBE_WITH_TOPOLOGY_DESCRIPTION: i16 = 1;

/// Options of [`Client::describe_streams_groups`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DescribeStreamsGroupsOptions {
    /// Ask for each group's topology description (Kafka's `includeTopologyDescription`).
    /// Needs StreamsGroupDescribe v1; against an older coordinator every group fails with
    /// [`ClientError::Unsupported`].
    pub include_topology_description: bool,
    pub include_authorized_operations: bool,
}

/// A streams group as its coordinator describes it (Kafka's `StreamsGroupDescription`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamsGroupDescription {
    pub group_id: String,
    /// `Empty`, `NotReady`, `Assigning`, `Reconciling`, `Stable` or `Dead`.
    pub group_state: String,
    pub group_epoch: i32,
    /// The AssignmentEpoch: the group epoch the target assignment was computed for.
    pub target_assignment_epoch: i32,
    /// -1 while the group has no topology.
    pub topology_epoch: i32,
    pub subtopologies: Vec<StreamsGroupSubtopologyDescription>,
    pub members: Vec<StreamsGroupMemberDescription>,
    /// The node that answered.
    pub coordinator: Coordinator,
    /// `None` unless asked for (and then only if the server reported them).
    pub authorized_operations: Option<Vec<AclOperation>>,
    /// StreamsGroupDescribe v1+; `None` before or when the server did not say.
    pub assignor_name: Option<String>,
    /// Why `topology_description` is or is not there.
    pub topology_description_status: TopologyDescriptionStatus,
    /// Present iff the status is AVAILABLE.
    pub topology_description: Option<StreamsGroupTopologyDescription>,
}

impl StreamsGroupDescription {
    /// The group's topology description (Kafka's `topologyDescription()`): `None` unless it
    /// was asked for and the coordinator had one.
    pub fn topology_description(&self) -> Option<&StreamsGroupTopologyDescription> {
        self.topology_description.as_ref()
    }

    /// Kafka's `topologyDescriptionStatus()`.
    pub fn topology_description_status(&self) -> TopologyDescriptionStatus {
        self.topology_description_status
    }
}

/// One subtopology of the group's topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamsGroupSubtopologyDescription {
    pub subtopology_id: String,
    pub source_topics: Vec<String>,
    pub repartition_sink_topics: Vec<String>,
    pub state_changelog_topics: Vec<TopicInfo>,
    pub repartition_source_topics: Vec<TopicInfo>,
}

/// An internal topic of a subtopology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicInfo {
    pub name: String,
    pub partitions: i32,
    pub replication_factor: i16,
    pub topic_configs: Vec<(String, String)>,
}

/// A member's reported offset for one task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskOffset {
    pub subtopology_id: String,
    pub partition: i32,
    pub offset: i64,
}

/// One member (Kafka's `StreamsGroupMemberDescription`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamsGroupMemberDescription {
    pub member_id: String,
    pub member_epoch: i32,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub topology_epoch: i32,
    pub process_id: String,
    pub user_endpoint: Option<Endpoint>,
    pub client_tags: Vec<(String, String)>,
    pub task_offsets: Vec<TaskOffset>,
    pub task_end_offsets: Vec<TaskOffset>,
    /// The tasks the member owns now.
    pub assignment: Assignment,
    /// The tasks the member is moving towards.
    pub target_assignment: Assignment,
    pub is_classic: bool,
}

impl Client {
    /// Describes streams groups at their coordinators, one result per group in request
    /// order. A group error (e.g. GROUP_ID_NOT_FOUND, or a group that is not a streams group)
    /// is that group's [`ClientError::Kafka`].
    pub async fn describe_streams_groups(
        &self,
        group_ids: &[&str],
        options: DescribeStreamsGroupsOptions,
    ) -> Vec<GroupResult<StreamsGroupDescription>> {
        self.per_coordinator(group_ids, |coordinator, conn, groups| async move {
            let version = describe_version(&conn, options).await?;
            let request = StreamsGroupDescribeRequest {
                group_ids: groups,
                include_authorized_operations: options.include_authorized_operations,
                include_topology_description: options.include_topology_description,
                ..Default::default()
            };
            let response = conn.send(request, version).await?;
            Ok(response
                .groups
                .into_iter()
                .map(|group| {
                    let id = group.group_id.clone();
                    (id, description(group, &coordinator, options))
                })
                .collect())
        })
        .await
    }
}

/// The StreamsGroupDescribe version to use; with `include_topology_description`, v1 or a clear
/// refusal (the flag cannot be sent at v0, and dropping it would silently answer NOT_REQUESTED).
async fn describe_version(
    conn: &crate::Connection,
    options: DescribeStreamsGroupsOptions,
) -> Result<i16, ClientError> {
    let negotiated = conn
        .negotiated_version::<StreamsGroupDescribeRequest>()
        .await;
    if !options.include_topology_description {
        return negotiated;
    }
    let offered = match &negotiated {
        Ok(v) => format!("it offers StreamsGroupDescribe up to v{v}"),
        Err(_) => "it offers no usable StreamsGroupDescribe version".to_string(),
    };
    match negotiated {
        Ok(version) if version >= DESCRIBE_WITH_TOPOLOGY_DESCRIPTION => Ok(version),
        _ => Err(ClientError::Unsupported {
            api: StreamsGroupDescribeRequest::KEY,
            reason: format!(
                "topology descriptions are unsupported by the coordinator at {} (StreamsGroupDescribe v{DESCRIBE_WITH_TOPOLOGY_DESCRIPTION} required; {offered})",
                conn.addr()
            ),
        }),
    }
}

fn description(
    group: DescribedGroup,
    coordinator: &Coordinator,
    options: DescribeStreamsGroupsOptions,
) -> Result<StreamsGroupDescription, ClientError> {
    ClientError::check(
        StreamsGroupDescribeRequest::KEY,
        group.error_code,
        group.error_message.as_deref(),
    )?;
    let (topology_description_status, topology_description) = topology::from_wire(
        group.topology_description_status,
        group.topology_description.as_ref(),
    )
    .map_err(|e| {
        ClientError::Protocol(format!(
            "StreamsGroupDescribe: the topology description of group {:?} is invalid: {e}",
            group.group_id
        ))
    })?;
    let (topology_epoch, subtopologies) = match group.topology {
        Some(t) => (
            t.epoch,
            t.subtopologies
                .unwrap_or_default()
                .into_iter()
                .map(subtopology)
                .collect(),
        ),
        None => (-1, Vec::new()),
    };
    Ok(StreamsGroupDescription {
        group_id: group.group_id,
        group_state: group.group_state,
        group_epoch: group.group_epoch,
        target_assignment_epoch: group.assignment_epoch,
        topology_epoch,
        subtopologies,
        members: group.members.into_iter().map(member).collect(),
        coordinator: coordinator.clone(),
        authorized_operations: if options.include_authorized_operations {
            AclOperation::from_bit_field(group.authorized_operations)
        } else {
            None
        },
        assignor_name: group.assignor_name,
        topology_description_status,
        topology_description,
    })
}

fn subtopology(s: Subtopology) -> StreamsGroupSubtopologyDescription {
    StreamsGroupSubtopologyDescription {
        subtopology_id: s.subtopology_id,
        source_topics: s.source_topics,
        repartition_sink_topics: s.repartition_sink_topics,
        state_changelog_topics: s
            .state_changelog_topics
            .into_iter()
            .map(topic_info)
            .collect(),
        repartition_source_topics: s
            .repartition_source_topics
            .into_iter()
            .map(topic_info)
            .collect(),
    }
}

fn topic_info(t: WireTopicInfo) -> TopicInfo {
    TopicInfo {
        name: t.name,
        partitions: t.partitions,
        replication_factor: t.replication_factor,
        topic_configs: t
            .topic_configs
            .into_iter()
            .map(|kv| (kv.key, kv.value))
            .collect(),
    }
}

fn member(m: Member) -> StreamsGroupMemberDescription {
    let offsets =
        |offsets: Vec<kcoord_wire::messages::streams_group_describe_response::TaskOffset>| {
            offsets
                .into_iter()
                .map(|o| TaskOffset {
                    subtopology_id: o.subtopology_id,
                    partition: o.partition,
                    offset: o.offset,
                })
                .collect()
        };
    StreamsGroupMemberDescription {
        assignment: Assignment::from_describe(&m.assignment),
        target_assignment: Assignment::from_describe(&m.target_assignment),
        member_id: m.member_id,
        member_epoch: m.member_epoch,
        instance_id: m.instance_id,
        rack_id: m.rack_id,
        client_id: m.client_id,
        client_host: m.client_host,
        topology_epoch: m.topology_epoch,
        process_id: m.process_id,
        user_endpoint: m.user_endpoint.map(|e| Endpoint {
            host: e.host,
            port: e.port,
        }),
        client_tags: m
            .client_tags
            .into_iter()
            .map(|kv| (kv.key, kv.value))
            .collect(),
        task_offsets: offsets(m.task_offsets),
        task_end_offsets: offsets(m.task_end_offsets),
        is_classic: m.is_classic,
    }
}
