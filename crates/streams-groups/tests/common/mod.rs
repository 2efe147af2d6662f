//! Shared by the integration tests: topology fixtures, a fake admin client, golden files and a
//! way to run a command line against the fake.

#![allow(dead_code)]

pub mod broker;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;

use kcoord_streams_groups::admin::{OffsetSpec, StreamsAdmin};
use kcoord_streams_groups::model::{
    CommittedOffset, CoordinatorNode, GroupListing, GroupState, MemberAssignment,
    MemberDescription, StreamsGroupDescription, SubtopologyDescription, TaskIds, TopicPartition,
};
use kcoord_streams_groups::options::Options;
use kcoord_streams_groups::topology::{StreamsGroupTopologyDescription, TopologyDescriptionStatus};
use kcoord_streams_groups::AdminError;
use kcoord_wire::messages::streams_group_describe_response::{
    TopologyDescription, TopologyDescriptionGlobalStore, TopologyDescriptionNode,
    TopologyDescriptionSubtopology,
};

// ---------------------------------------------------------------------------------------------
// Topology fixtures, as the wire carries them (Kafka Streams sends nodes sorted by name).

pub fn source(name: &str, topics: &[&str], successors: &[&str]) -> TopologyDescriptionNode {
    TopologyDescriptionNode {
        name: name.into(),
        node_type: 1,
        source_topics: topics.iter().map(|t| t.to_string()).collect(),
        successors: successors.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

pub fn processor(name: &str, stores: &[&str], successors: &[&str]) -> TopologyDescriptionNode {
    TopologyDescriptionNode {
        name: name.into(),
        node_type: 2,
        stores: stores.iter().map(|s| s.to_string()).collect(),
        successors: successors.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

pub fn sink(name: &str, topic: Option<&str>) -> TopologyDescriptionNode {
    TopologyDescriptionNode {
        name: name.into(),
        node_type: 3,
        sink_topic: topic.map(str::to_string),
        ..Default::default()
    }
}

pub fn subtopology(
    id: &str,
    nodes: Vec<TopologyDescriptionNode>,
) -> TopologyDescriptionSubtopology {
    TopologyDescriptionSubtopology {
        subtopology_id: id.into(),
        nodes,
        ..Default::default()
    }
}

pub fn global_store(
    source: TopologyDescriptionNode,
    processor: TopologyDescriptionNode,
) -> TopologyDescriptionGlobalStore {
    TopologyDescriptionGlobalStore {
        source,
        processor,
        ..Default::default()
    }
}

/// The specification's example: orders → filter → valid-orders.
pub fn orders_wire() -> TopologyDescription {
    TopologyDescription {
        subtopologies: vec![subtopology(
            "0",
            vec![
                processor(
                    "KSTREAM-FILTER-0000000001",
                    &[],
                    &["KSTREAM-SINK-0000000002"],
                ),
                sink("KSTREAM-SINK-0000000002", Some("valid-orders")),
                source(
                    "KSTREAM-SOURCE-0000000000",
                    &["orders"],
                    &["KSTREAM-FILTER-0000000001"],
                ),
            ],
        )],
        ..Default::default()
    }
}

/// Several sub-topologies and two global stores, shaped like what Kafka Streams sends for an
/// app with two global tables: the global stores took ids 1 and 4 in Streams, so the
/// sub-topologies are "0", "2" and "3" (and Kafka's formatter numbers the global stores 3 and
/// 4). Covers fan-out and fan-in, a store shared by two processors, a multi-topic source, a
/// dynamic sink, a repartition topic linking two sub-topologies and unsorted wire lists.
pub fn complex_wire() -> TopologyDescription {
    TopologyDescription {
        subtopologies: vec![
            subtopology(
                "0",
                vec![
                    processor(
                        "KSTREAM-BRANCH-0000000006",
                        &[],
                        &[
                            "KSTREAM-BRANCH-0000000006-express",
                            "KSTREAM-BRANCH-0000000006-standard",
                        ],
                    ),
                    processor(
                        "KSTREAM-BRANCH-0000000006-express",
                        &[],
                        &["KSTREAM-SINK-0000000007"],
                    ),
                    processor(
                        "KSTREAM-BRANCH-0000000006-standard",
                        &[],
                        &["KSTREAM-KEY-SELECT-0000000008"],
                    ),
                    processor(
                        "KSTREAM-KEY-SELECT-0000000008",
                        &[],
                        &["KSTREAM-SINK-0000000009"],
                    ),
                    processor(
                        "KSTREAM-LEFTJOIN-0000000005",
                        &[],
                        &["KSTREAM-BRANCH-0000000006"],
                    ),
                    sink("KSTREAM-SINK-0000000007", None),
                    sink(
                        "KSTREAM-SINK-0000000009",
                        Some("orders-app-by-region-repartition"),
                    ),
                    source(
                        "KSTREAM-SOURCE-0000000000",
                        &["orders"],
                        &["KSTREAM-LEFTJOIN-0000000005"],
                    ),
                ],
            ),
            subtopology(
                "2",
                vec![
                    processor(
                        "KSTREAM-AGGREGATE-0000000011",
                        &["region-totals", "region-counts"],
                        &["KTABLE-TOSTREAM-0000000012"],
                    ),
                    processor("KSTREAM-PEEK-0000000014", &["region-counts"], &[]),
                    source(
                        "KSTREAM-SOURCE-0000000010",
                        &["orders-app-by-region-repartition"],
                        &["KSTREAM-AGGREGATE-0000000011", "KSTREAM-PEEK-0000000014"],
                    ),
                    processor(
                        "KTABLE-TOSTREAM-0000000012",
                        &[],
                        &["KSTREAM-SINK-0000000013"],
                    ),
                    sink("KSTREAM-SINK-0000000013", Some("region-totals")),
                ],
            ),
            subtopology(
                "3",
                vec![
                    processor(
                        "KSTREAM-MAPVALUES-0000000016",
                        &[],
                        &["KSTREAM-SINK-0000000017"],
                    ),
                    sink("KSTREAM-SINK-0000000017", Some("adjustments")),
                    source(
                        "KSTREAM-SOURCE-0000000015",
                        &["returns", "refunds"],
                        &["KSTREAM-MAPVALUES-0000000016"],
                    ),
                ],
            ),
        ],
        global_stores: vec![
            global_store(
                source(
                    "KSTREAM-SOURCE-0000000001",
                    &["customers"],
                    &["KTABLE-SOURCE-0000000002"],
                ),
                processor("KTABLE-SOURCE-0000000002", &["customers-store"], &[]),
            ),
            global_store(
                source(
                    "KSTREAM-SOURCE-0000000003",
                    &["products"],
                    &["KTABLE-SOURCE-0000000004"],
                ),
                processor("KTABLE-SOURCE-0000000004", &["products-store"], &[]),
            ),
        ],
        ..Default::default()
    }
}

pub fn model(wire: &TopologyDescription) -> StreamsGroupTopologyDescription {
    StreamsGroupTopologyDescription::try_from(wire).expect("fixture converts")
}

// ---------------------------------------------------------------------------------------------
// Group fixtures.

pub fn tasks(subtopology_id: &str, partitions: &[i32]) -> TaskIds {
    TaskIds {
        subtopology_id: subtopology_id.into(),
        partitions: partitions.to_vec(),
    }
}

pub fn coordinator() -> CoordinatorNode {
    CoordinatorNode {
        id: 1,
        host: "localhost".into(),
        port: 9092,
    }
}

/// A stable two-member group running the complex topology's sub-topologies 0 and 2.
pub fn orders_app() -> StreamsGroupDescription {
    StreamsGroupDescription {
        group_id: "orders-app".into(),
        group_epoch: 7,
        target_assignment_epoch: 7,
        topology_epoch: 0,
        subtopologies: vec![
            SubtopologyDescription {
                subtopology_id: "0".into(),
                source_topics: vec!["orders".into()],
                repartition_sink_topics: vec!["orders-app-by-region-repartition".into()],
                ..Default::default()
            },
            SubtopologyDescription {
                subtopology_id: "2".into(),
                repartition_source_topics: vec!["orders-app-by-region-repartition".into()],
                state_changelog_topics: vec!["orders-app-region-totals-changelog".into()],
                ..Default::default()
            },
        ],
        members: vec![
            MemberDescription {
                member_id: "q7F2mTt0R1mAm6iS0nXh1w".into(),
                member_epoch: 7,
                client_id: "orders-app-5c1f-StreamThread-1-consumer".into(),
                client_host: "/10.0.0.5".into(),
                process_id: "5c1f7d2e-9f8a-4c3b-b1a2-3d4e5f607182".into(),
                topology_epoch: 0,
                is_classic: false,
                assignment: MemberAssignment {
                    active_tasks: vec![tasks("0", &[0, 1]), tasks("2", &[0])],
                    standby_tasks: vec![tasks("2", &[1])],
                    warmup_tasks: vec![],
                },
                target_assignment: MemberAssignment {
                    active_tasks: vec![tasks("0", &[0, 1]), tasks("2", &[0])],
                    standby_tasks: vec![tasks("2", &[1])],
                    warmup_tasks: vec![],
                },
            },
            MemberDescription {
                member_id: "Zk2wq9bXTKu0m2d8Y4c3Vg".into(),
                member_epoch: 6,
                client_id: "orders-app-8a2b-StreamThread-1-consumer".into(),
                client_host: "/10.0.0.6".into(),
                process_id: "8a2b3c4d-0e1f-4a5b-8c6d-7e8f90a1b2c3".into(),
                topology_epoch: 0,
                is_classic: true,
                assignment: MemberAssignment {
                    active_tasks: vec![tasks("0", &[2]), tasks("2", &[1])],
                    standby_tasks: vec![],
                    warmup_tasks: vec![tasks("2", &[0])],
                },
                target_assignment: MemberAssignment {
                    active_tasks: vec![tasks("0", &[2]), tasks("2", &[1, 2])],
                    standby_tasks: vec![],
                    warmup_tasks: vec![],
                },
            },
        ],
        state: GroupState::Stable,
        coordinator: coordinator(),
        assignor_name: Some("sticky".into()),
        topology_description_status: TopologyDescriptionStatus::NotRequested,
        topology_description: None,
    }
}

/// A group with no members.
pub fn empty_group(group_id: &str) -> StreamsGroupDescription {
    StreamsGroupDescription {
        group_id: group_id.into(),
        group_epoch: 3,
        target_assignment_epoch: 3,
        topology_epoch: 1,
        subtopologies: vec![],
        members: vec![],
        state: GroupState::Empty,
        coordinator: coordinator(),
        assignor_name: None,
        topology_description_status: TopologyDescriptionStatus::NotRequested,
        topology_description: None,
    }
}

pub fn with_topology(
    mut d: StreamsGroupDescription,
    status: TopologyDescriptionStatus,
    topology: Option<StreamsGroupTopologyDescription>,
) -> StreamsGroupDescription {
    d.topology_description_status = status;
    d.topology_description = topology;
    d
}

// ---------------------------------------------------------------------------------------------
// The fake admin.

/// What describing a group returns.
#[derive(Clone)]
pub enum Described {
    Ok(StreamsGroupDescription),
    /// A non-zero group ErrorCode (and optional ErrorMessage).
    GroupError(i16, Option<String>),
    /// A coordinator without StreamsGroupDescribe v1.
    TopologyUnsupported,
}

#[derive(Default)]
pub struct FakeAdmin {
    pub listings: Vec<GroupListing>,
    pub groups: HashMap<String, Described>,
    pub committed: BTreeMap<TopicPartition, CommittedOffset>,
    pub earliest: BTreeMap<TopicPartition, i64>,
    pub latest: BTreeMap<TopicPartition, i64>,
    /// Groups whose DeleteGroups result carries this error code.
    pub delete_errors: HashMap<String, i16>,
}

impl FakeAdmin {
    pub fn with_group(mut self, described: Described) -> Self {
        let id = match &described {
            Described::Ok(d) => d.group_id.clone(),
            _ => "orders-app".to_string(),
        };
        self.groups.insert(id, described);
        self
    }
}

#[async_trait::async_trait]
impl StreamsAdmin for FakeAdmin {
    async fn list_streams_groups(
        &self,
        states: &[GroupState],
    ) -> Result<Vec<GroupListing>, AdminError> {
        Ok(self
            .listings
            .iter()
            .filter(|g| states.is_empty() || g.state.is_some_and(|s| states.contains(&s)))
            .cloned()
            .collect())
    }

    async fn describe_streams_group(
        &self,
        group_id: &str,
        include_topology_description: bool,
    ) -> Result<StreamsGroupDescription, AdminError> {
        match self.groups.get(group_id) {
            Some(Described::Ok(d)) => {
                let mut d = d.clone();
                if !include_topology_description {
                    d.topology_description_status = TopologyDescriptionStatus::NotRequested;
                    d.topology_description = None;
                }
                Ok(d)
            }
            Some(Described::GroupError(code, message)) => Err(AdminError::Group {
                group_id: group_id.into(),
                code: *code,
                message: message.clone(),
            }),
            Some(Described::TopologyUnsupported) => Err(AdminError::TopologyUnsupported),
            None => Err(AdminError::Group {
                group_id: group_id.into(),
                code: 69,
                message: Some(format!("Group {group_id} not found.")),
            }),
        }
    }

    async fn list_streams_group_offsets(
        &self,
        _group_id: &str,
    ) -> Result<BTreeMap<TopicPartition, CommittedOffset>, AdminError> {
        Ok(self.committed.clone())
    }

    async fn list_offsets(
        &self,
        partitions: &BTreeSet<TopicPartition>,
        spec: OffsetSpec,
    ) -> Result<BTreeMap<TopicPartition, i64>, AdminError> {
        let source = match spec {
            OffsetSpec::Earliest => &self.earliest,
            OffsetSpec::Latest => &self.latest,
        };
        Ok(source
            .iter()
            .filter(|(tp, _)| partitions.contains(*tp))
            .map(|(tp, o)| (tp.clone(), *o))
            .collect())
    }

    async fn delete_streams_groups(
        &self,
        group_ids: &[String],
    ) -> Result<Vec<(String, Result<(), AdminError>)>, AdminError> {
        Ok(group_ids
            .iter()
            .map(|g| {
                let result = match self.delete_errors.get(g) {
                    Some(code) => Err(AdminError::Group {
                        group_id: g.clone(),
                        code: *code,
                        message: None,
                    }),
                    None => Ok(()),
                };
                (g.clone(), result)
            })
            .collect())
    }
}

// ---------------------------------------------------------------------------------------------
// Running commands and golden files.

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Parses `args` (without the program name) like the binary and runs them against `admin`.
pub async fn run(admin: &FakeAdmin, args: &[&str]) -> Run {
    use clap::Parser;
    let argv = [
        "kafka-streams-groups",
        "--bootstrap-server",
        "localhost:9092",
    ]
    .into_iter()
    .chain(args.iter().copied());
    let command = Options::try_parse_from(argv)
        .expect("arguments parse")
        .check()
        .expect("arguments check");
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code =
        kcoord_streams_groups::run_with_admin(&command.action, admin, &mut out, &mut err).await;
    Run {
        code,
        stdout: String::from_utf8(out).expect("utf-8 stdout"),
        stderr: String::from_utf8(err).expect("utf-8 stderr"),
    }
}

pub fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Compares `actual` with the fixture byte for byte. `UPDATE_GOLDEN=1` rewrites the fixture
/// instead (review the diff before committing it).
pub fn assert_golden(name: &str, actual: &str) {
    let path = fixture_path(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).expect("write fixture");
        return;
    }
    let expected =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    if expected != actual {
        panic!("{name} differs from the fixture\n--- expected ---\n{expected:?}\n--- actual ---\n{actual:?}\n--- actual (plain) ---\n{actual}");
    }
}
