//! `/api/v1/groups/{groupId}/tasks`: who runs what. Each sub-topology's tasks (one per
//! partition) with the member and process running each as active, standby or warm-up, each
//! state store's partitions with the instances holding them, and each instance with its task
//! counts: the graph with the running application on it. Built from the StreamsGroupDescribe
//! answer ([`super::api::describe_one`]): the members' current assignments, not the target.
use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use kcoord_metadata::TopicsImage;
use kcoord_wire::messages::streams_group_describe_response::{
    DescribedGroup, Member, Subtopology, TaskIds,
};
use serde::Serialize;

use super::api::{describe_one, Peer};
use super::error::ApiError;
use super::no_store;
use crate::state::ServerState;

pub fn routes() -> Router<Arc<ServerState>> {
    Router::new().route("/api/v1/groups/{group_id}/tasks", get(tasks))
}

/// `GET .../tasks`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupTasks {
    pub group_id: String,
    pub group_epoch: i32,
    pub target_assignment_epoch: i32,
    pub subtopologies: Vec<SubtopologyTasks>,
    pub state_stores: Vec<StoreHolders>,
    pub instances: Vec<Instance>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubtopologyTasks {
    pub subtopology_id: String,
    /// Its tasks, partition 0 up: every partition of its source topics, run or not.
    pub tasks: Vec<Task>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub partition: i32,
    /// None while no member runs it as active.
    pub active: Option<Runner>,
    pub standbys: Vec<Runner>,
    pub warmups: Vec<Runner>,
}

/// A member running a task or holding a store's partition.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Runner {
    pub member_id: String,
    pub process_id: String,
    pub instance_id: Option<String>,
}

/// A state store (named after its changelog topic, `<application.id>-<store>-changelog`) and
/// which instances hold which of its partitions.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StoreHolders {
    pub store_name: String,
    pub changelog_topic: String,
    pub subtopology_id: String,
    pub holders: Vec<StoreHolder>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StoreHolder {
    #[serde(flatten)]
    pub runner: Runner,
    /// `active`, `standby` or `warmup`: how its task of the sub-topology holds the store.
    pub role: &'static str,
    pub partitions: Vec<i32>,
}

/// One member and how many tasks it runs.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Instance {
    #[serde(flatten)]
    pub runner: Runner,
    pub client_host: String,
    pub member_epoch: i32,
    pub active_tasks: usize,
    pub standby_tasks: usize,
    pub warmup_tasks: usize,
}

async fn tasks(
    State(server): State<Arc<ServerState>>,
    Peer(peer): Peer,
    Path(group_id): Path<String>,
) -> Result<Response, ApiError> {
    let group = describe_one(&server, peer, group_id, false).await?;
    let topics = server.topics.snapshot();
    Ok((no_store(), Json(group_tasks(&group, &topics))).into_response())
}

/// The three roles, in the order a task lists them.
const ROLES: [&str; 3] = ["active", "standby", "warmup"];

fn role_tasks<'a>(member: &'a Member, role: &str) -> &'a [TaskIds] {
    let a = &member.assignment;
    match role {
        "active" => &a.active_tasks,
        "standby" => &a.standby_tasks,
        _ => &a.warmup_tasks,
    }
}

fn runner(member: &Member) -> Runner {
    Runner {
        member_id: member.member_id.clone(),
        process_id: member.process_id.clone(),
        instance_id: member.instance_id.clone(),
    }
}

/// The group's sub-topologies (none before a member joined with a topology).
pub fn subtopologies(group: &DescribedGroup) -> Vec<&Subtopology> {
    group
        .topology
        .iter()
        .flat_map(|t| t.subtopologies.iter().flatten())
        .collect()
}

pub fn group_tasks(group: &DescribedGroup, topics: &TopicsImage) -> GroupTasks {
    let subtopologies = subtopologies(group);
    GroupTasks {
        group_id: group.group_id.clone(),
        group_epoch: group.group_epoch,
        target_assignment_epoch: group.assignment_epoch,
        subtopologies: subtopologies
            .iter()
            .map(|s| subtopology_tasks(s, &group.members, topics))
            .collect(),
        state_stores: subtopologies
            .iter()
            .flat_map(|s| store_holders(&group.group_id, s, &group.members))
            .collect(),
        instances: group.members.iter().map(instance).collect(),
    }
}

/// The sub-topology's input topics (source and repartition source) with their partition
/// counts: the catalog's, or for a repartition topic not created yet, the topology's.
pub fn input_topics<'a>(
    s: &'a Subtopology,
    topics: &'a TopicsImage,
) -> impl Iterator<Item = (&'a str, i32)> + 'a {
    let catalog = |name: &str| topics.get(name).map(|t| t.partition_count());
    let sources = s
        .source_topics
        .iter()
        .map(move |t| (t.as_str(), catalog(t).unwrap_or(0)));
    let repartition = s
        .repartition_source_topics
        .iter()
        .map(move |t| (t.name.as_str(), catalog(&t.name).unwrap_or(t.partitions)));
    sources.chain(repartition)
}

/// The sub-topology's tasks: as many as its input topics' largest partition count, and any
/// assigned beyond it.
fn subtopology_tasks(
    s: &Subtopology,
    members: &[Member],
    topics: &TopicsImage,
) -> SubtopologyTasks {
    let id = &s.subtopology_id;
    let mut tasks: BTreeMap<i32, Task> = BTreeMap::new();
    let count = input_topics(s, topics)
        .map(|(_, partitions)| partitions)
        .max()
        .unwrap_or(0);
    let empty = |partition| Task {
        partition,
        active: None,
        standbys: Vec::new(),
        warmups: Vec::new(),
    };
    for partition in 0..count {
        tasks.insert(partition, empty(partition));
    }
    for member in members {
        for role in ROLES {
            let held = role_tasks(member, role);
            let partitions = held.iter().filter(|t| &t.subtopology_id == id);
            for &p in partitions.flat_map(|t| &t.partitions) {
                let task = tasks.entry(p).or_insert_with(|| empty(p));
                match role {
                    "active" => task.active = Some(runner(member)),
                    "standby" => task.standbys.push(runner(member)),
                    _ => task.warmups.push(runner(member)),
                }
            }
        }
    }
    SubtopologyTasks {
        subtopology_id: id.clone(),
        tasks: tasks.into_values().collect(),
    }
}

/// The stores of a sub-topology with a changelog topic, and who holds which partitions.
fn store_holders(group_id: &str, s: &Subtopology, members: &[Member]) -> Vec<StoreHolders> {
    let prefix = format!("{group_id}-");
    s.state_changelog_topics
        .iter()
        .map(|topic| {
            let name = topic
                .name
                .strip_prefix(&prefix)
                .and_then(|n| n.strip_suffix("-changelog"))
                .unwrap_or(&topic.name);
            let holders = members
                .iter()
                .flat_map(|m| {
                    ROLES.into_iter().filter_map(move |role| {
                        let mut partitions: Vec<i32> = role_tasks(m, role)
                            .iter()
                            .filter(|t| t.subtopology_id == s.subtopology_id)
                            .flat_map(|t| t.partitions.iter().copied())
                            .collect();
                        partitions.sort_unstable();
                        (!partitions.is_empty()).then(|| StoreHolder {
                            runner: runner(m),
                            role,
                            partitions,
                        })
                    })
                })
                .collect();
            StoreHolders {
                store_name: name.to_owned(),
                changelog_topic: topic.name.clone(),
                subtopology_id: s.subtopology_id.clone(),
                holders,
            }
        })
        .collect()
}

fn instance(member: &Member) -> Instance {
    let count = |role| -> usize {
        role_tasks(member, role)
            .iter()
            .map(|t| t.partitions.len())
            .sum()
    };
    Instance {
        runner: runner(member),
        client_host: member.client_host.clone(),
        member_epoch: member.member_epoch,
        active_tasks: count("active"),
        standby_tasks: count("standby"),
        warmup_tasks: count("warmup"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcoord_metadata::{PartitionImage, TopicImage};
    use kcoord_wire::messages::streams_group_describe_response::{Assignment, TopicInfo, Topology};

    fn ids(subtopology: &str, partitions: &[i32]) -> Vec<TaskIds> {
        vec![TaskIds {
            subtopology_id: subtopology.into(),
            partitions: partitions.to_vec(),
            ..Default::default()
        }]
    }

    fn member(id: &str, active: &[i32], standby: &[i32]) -> Member {
        Member {
            member_id: id.into(),
            process_id: format!("process-{id}"),
            assignment: Assignment {
                active_tasks: ids("0", active),
                standby_tasks: ids("0", standby),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn catalog(name: &str, partitions: i32) -> TopicsImage {
        let partition = |p| {
            let image = PartitionImage {
                partition: p,
                leader: 1,
                leader_epoch: 0,
                replicas: vec![1],
                isr: vec![1],
            };
            (p, image)
        };
        TopicsImage::from_topics([TopicImage {
            id: uuid::Uuid::from_u128(1),
            name: name.into(),
            requested_replication_factor: 1,
            partitions: (0..partitions).map(partition).collect(),
            configs: BTreeMap::new(),
        }])
    }

    #[test]
    fn every_task_is_listed_with_its_runners_and_every_store_partition_with_its_holders() {
        let group = DescribedGroup {
            group_id: "app".into(),
            topology: Some(Topology {
                subtopologies: Some(vec![Subtopology {
                    subtopology_id: "0".into(),
                    source_topics: vec!["in".into()],
                    state_changelog_topics: vec![TopicInfo {
                        name: "app-counts-changelog".into(),
                        ..Default::default()
                    }],
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            members: vec![member("m1", &[2, 0], &[1]), member("m2", &[], &[0])],
            ..Default::default()
        };
        let doc = group_tasks(&group, &catalog("in", 3));
        let tasks = &doc.subtopologies[0].tasks;
        let summary: Vec<(i32, Option<&str>, Vec<&str>)> = tasks
            .iter()
            .map(|t| {
                let standbys = t.standbys.iter().map(|r| r.member_id.as_str()).collect();
                (
                    t.partition,
                    t.active.as_ref().map(|r| r.member_id.as_str()),
                    standbys,
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (0, Some("m1"), vec!["m2"]),
                (1, None, vec!["m1"]),
                (2, Some("m1"), vec![])
            ]
        );
        let store = &doc.state_stores[0];
        assert_eq!(store.store_name, "counts");
        let holders: Vec<(&str, &str, &[i32])> = store
            .holders
            .iter()
            .map(|h| (h.runner.member_id.as_str(), h.role, h.partitions.as_slice()))
            .collect();
        assert_eq!(
            holders,
            [
                ("m1", "active", &[0, 2][..]),
                ("m1", "standby", &[1][..]),
                ("m2", "standby", &[0][..])
            ]
        );
        let counts: Vec<(usize, usize)> = doc
            .instances
            .iter()
            .map(|i| (i.active_tasks, i.standby_tasks))
            .collect();
        assert_eq!(counts, [(2, 1), (0, 1)]);
    }
}
