//! Checks made before the group is touched (docs/kafka-coordinator-facts.md §8): the service-level
//! INVALID_REQUEST rules and the topology checks Kafka makes in `KafkaApis`.
use kcoord_metadata::{is_internal_topic, validate_topic_name};
use kcoord_wire::messages::streams_group_heartbeat_request::{
    StreamsGroupHeartbeatRequest, Topology,
};
use kcoord_wire::ErrorCode;

use crate::error::{CoordinatorError, Result};
use std::collections::HashSet;

pub const JOIN_EPOCH: i32 = 0;
pub const LEAVE_EPOCH: i32 = -1;
pub const STATIC_LEAVE_EPOCH: i32 = -2;

/// Java's `String.trim().isEmpty()`: `trim` drops every char up to U+0020 at both ends, so a
/// value made only of spaces, tabs, newlines or other control characters counts as empty.
pub fn blank(value: &str) -> bool {
    value.chars().all(|c| c <= ' ')
}

/// `Utils.throwIfEmptyString`: null passes, blank fails.
fn empty_string(value: Option<&str>, message: &str) -> Result<()> {
    match value {
        Some(v) if blank(v) => Err(CoordinatorError::invalid_request(message)),
        _ => Ok(()),
    }
}

/// `Utils.throwIfNotEmptyCollection`: null fails as well as a non-empty list.
fn non_empty<T>(tasks: &Option<Vec<T>>, message: &str) -> Result<()> {
    match tasks {
        Some(t) if t.is_empty() => Ok(()),
        _ => Err(CoordinatorError::invalid_request(message)),
    }
}

/// `GroupCoordinatorService.throwIfStreamsGroupHeartbeatRequestIsInvalid` and the
/// not-yet-supported features check, in Kafka's order.
pub fn heartbeat_request(req: &StreamsGroupHeartbeatRequest) -> Result<()> {
    if let Some(topology) = &req.topology {
        if topology
            .subtopologies
            .iter()
            .any(|s| !s.source_topic_regex.is_empty())
        {
            return Err(CoordinatorError::invalid_request(
                "Regular expressions for source topics are not supported yet.",
            ));
        }
    }
    empty_string(Some(&req.member_id), "MemberId can't be empty.")?;
    empty_string(Some(&req.group_id), "GroupId can't be empty.")?;
    empty_string(req.instance_id.as_deref(), "InstanceId can't be empty.")?;
    empty_string(req.rack_id.as_deref(), "RackId can't be empty.")?;
    match req.member_epoch {
        JOIN_EPOCH => {
            if req.rebalance_timeout_ms == -1 {
                return Err(CoordinatorError::invalid_request(
                    "RebalanceTimeoutMs must be provided in first request.",
                ));
            }
            non_empty(
                &req.active_tasks,
                "ActiveTasks must be empty when (re-)joining.",
            )?;
            non_empty(
                &req.standby_tasks,
                "StandbyTasks must be empty when (re-)joining.",
            )?;
            non_empty(
                &req.warmup_tasks,
                "WarmupTasks must be empty when (re-)joining.",
            )?;
            let Some(topology) = &req.topology else {
                return Err(CoordinatorError::invalid_request(
                    "Topology must be non-null when (re-)joining.",
                ));
            };
            changelog_partitions(topology)?;
        }
        STATIC_LEAVE_EPOCH if req.instance_id.is_none() => {
            return Err(CoordinatorError::invalid_request(
                "InstanceId can't be null.",
            ));
        }
        e if e < STATIC_LEAVE_EPOCH => {
            return Err(CoordinatorError::invalid_request(format!(
                "MemberEpoch is {e}, but must be greater than or equal to -2."
            )));
        }
        _ => {}
    }
    let nulls = [
        req.active_tasks.is_none(),
        req.standby_tasks.is_none(),
        req.warmup_tasks.is_none(),
    ];
    if nulls.contains(&true) && nulls.contains(&false) {
        return Err(CoordinatorError::invalid_request(
            "If one task-type is non-null, all must be non-null.",
        ));
    }
    if req.member_epoch != JOIN_EPOCH && req.topology.is_some() {
        return Err(CoordinatorError::invalid_request(
            "Topology can only be provided when (re-)joining.",
        ));
    }
    Ok(())
}

fn changelog_partitions(topology: &Topology) -> Result<()> {
    for s in &topology.subtopologies {
        for t in &s.state_changelog_topics {
            if t.partitions != 0 {
                return Err(CoordinatorError::new(
                    ErrorCode::STREAMS_INVALID_TOPOLOGY,
                    format!("Changelog topic {} must have an undefined partition count, but it is set to {}.", t.name, t.partitions),
                ));
            }
        }
    }
    Ok(())
}

/// Every topic a topology names, without duplicates, in first-seen order.
pub fn topology_topics(topology: &Topology) -> Vec<String> {
    let mut seen: HashSet<&str> = HashSet::new();
    topology
        .subtopologies
        .iter()
        .flat_map(|s| {
            let sources = s.source_topics.iter().map(String::as_str);
            let sinks = s.repartition_sink_topics.iter().map(String::as_str);
            let repartition = s.repartition_source_topics.iter().map(|t| t.name.as_str());
            let changelogs = s.state_changelog_topics.iter().map(|t| t.name.as_str());
            sources.chain(sinks).chain(repartition).chain(changelogs)
        })
        .filter(|t| seen.insert(t))
        .map(str::to_owned)
        .collect()
}

/// `KafkaApis.handleStreamsGroupHeartbeat`: no Kafka-internal topics, only valid topic names.
pub fn topology_topic_names(topology: &Topology) -> Result<()> {
    let topics = topology_topics(topology);
    let prohibited: Vec<&str> = topics
        .iter()
        .map(String::as_str)
        .filter(|t| is_internal_topic(t))
        .collect();
    if !prohibited.is_empty() {
        return Err(CoordinatorError::new(
            ErrorCode::STREAMS_INVALID_TOPOLOGY,
            format!(
                "Use of Kafka internal topics {} in a Kafka Streams topology is prohibited.",
                prohibited.join(",")
            ),
        ));
    }
    let invalid: Vec<&str> = topics
        .iter()
        .map(String::as_str)
        .filter(|t| validate_topic_name(t).is_err())
        .collect();
    if !invalid.is_empty() {
        return Err(CoordinatorError::new(
            ErrorCode::STREAMS_INVALID_TOPOLOGY,
            format!(
                "Topic names {} are not valid topic names.",
                invalid.join(",")
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcoord_wire::messages::streams_group_heartbeat_request::{Subtopology, TaskIds, TopicInfo};

    fn join() -> StreamsGroupHeartbeatRequest {
        StreamsGroupHeartbeatRequest {
            group_id: "g".into(),
            member_id: "m".into(),
            member_epoch: 0,
            rebalance_timeout_ms: 1000,
            topology: Some(Topology {
                epoch: 1,
                ..Default::default()
            }),
            active_tasks: Some(vec![]),
            standby_tasks: Some(vec![]),
            warmup_tasks: Some(vec![]),
            ..Default::default()
        }
    }

    fn rejects(req: StreamsGroupHeartbeatRequest, code: ErrorCode, text: &str) {
        let err = heartbeat_request(&req).unwrap_err();
        assert_eq!(err.code, code);
        assert_eq!(err.message.as_deref(), Some(text));
    }

    #[test]
    fn a_valid_join_passes() {
        assert!(heartbeat_request(&join()).is_ok());
    }

    #[test]
    fn each_invalid_request_case_is_rejected() {
        let bad = ErrorCode::INVALID_REQUEST;
        rejects(
            StreamsGroupHeartbeatRequest {
                member_id: "".into(),
                ..join()
            },
            bad,
            "MemberId can't be empty.",
        );
        rejects(
            StreamsGroupHeartbeatRequest {
                group_id: "".into(),
                ..join()
            },
            bad,
            "GroupId can't be empty.",
        );
        rejects(
            StreamsGroupHeartbeatRequest {
                instance_id: Some("".into()),
                ..join()
            },
            bad,
            "InstanceId can't be empty.",
        );
        rejects(
            StreamsGroupHeartbeatRequest {
                rack_id: Some("".into()),
                ..join()
            },
            bad,
            "RackId can't be empty.",
        );
        rejects(
            StreamsGroupHeartbeatRequest {
                rebalance_timeout_ms: -1,
                ..join()
            },
            bad,
            "RebalanceTimeoutMs must be provided in first request.",
        );
        let task = || {
            Some(vec![TaskIds {
                subtopology_id: "0".into(),
                partitions: vec![0],
                ..Default::default()
            }])
        };
        rejects(
            StreamsGroupHeartbeatRequest {
                active_tasks: task(),
                standby_tasks: Some(vec![]),
                warmup_tasks: Some(vec![]),
                ..join()
            },
            bad,
            "ActiveTasks must be empty when (re-)joining.",
        );
        rejects(
            StreamsGroupHeartbeatRequest {
                active_tasks: Some(vec![]),
                standby_tasks: task(),
                warmup_tasks: Some(vec![]),
                ..join()
            },
            bad,
            "StandbyTasks must be empty when (re-)joining.",
        );
        rejects(
            StreamsGroupHeartbeatRequest {
                active_tasks: Some(vec![]),
                standby_tasks: Some(vec![]),
                warmup_tasks: task(),
                ..join()
            },
            bad,
            "WarmupTasks must be empty when (re-)joining.",
        );
        rejects(
            StreamsGroupHeartbeatRequest {
                topology: None,
                ..join()
            },
            bad,
            "Topology must be non-null when (re-)joining.",
        );
        rejects(
            StreamsGroupHeartbeatRequest {
                member_epoch: -2,
                topology: None,
                ..join()
            },
            bad,
            "InstanceId can't be null.",
        );
        rejects(
            StreamsGroupHeartbeatRequest {
                member_epoch: -3,
                topology: None,
                ..join()
            },
            bad,
            "MemberEpoch is -3, but must be greater than or equal to -2.",
        );
        rejects(
            StreamsGroupHeartbeatRequest {
                member_epoch: 3,
                topology: None,
                active_tasks: Some(vec![]),
                standby_tasks: None,
                warmup_tasks: None,
                ..join()
            },
            bad,
            "If one task-type is non-null, all must be non-null.",
        );
        rejects(
            StreamsGroupHeartbeatRequest {
                member_epoch: 3,
                ..join()
            },
            bad,
            "Topology can only be provided when (re-)joining.",
        );
        let regex = Topology {
            epoch: 1,
            subtopologies: vec![Subtopology {
                source_topic_regex: vec!["a.*".into()],
                ..Default::default()
            }],
            ..Default::default()
        };
        rejects(
            StreamsGroupHeartbeatRequest {
                topology: Some(regex),
                ..join()
            },
            bad,
            "Regular expressions for source topics are not supported yet.",
        );
    }

    #[test]
    fn blank_ids_are_rejected_as_empty_ones() {
        let bad = ErrorCode::INVALID_REQUEST;
        rejects(
            StreamsGroupHeartbeatRequest {
                member_id: " \t".into(),
                ..join()
            },
            bad,
            "MemberId can't be empty.",
        );
        rejects(
            StreamsGroupHeartbeatRequest {
                group_id: "  ".into(),
                ..join()
            },
            bad,
            "GroupId can't be empty.",
        );
        rejects(
            StreamsGroupHeartbeatRequest {
                instance_id: Some("\n".into()),
                ..join()
            },
            bad,
            "InstanceId can't be empty.",
        );
        rejects(
            StreamsGroupHeartbeatRequest {
                rack_id: Some(" ".into()),
                ..join()
            },
            bad,
            "RackId can't be empty.",
        );
        // Only surrounding blanks are trimmed: an id with a visible character is fine.
        assert!(heartbeat_request(&StreamsGroupHeartbeatRequest {
            member_id: " m ".into(),
            ..join()
        })
        .is_ok());
    }

    #[test]
    fn a_join_without_task_lists_is_rejected() {
        rejects(
            StreamsGroupHeartbeatRequest {
                active_tasks: None,
                standby_tasks: None,
                warmup_tasks: None,
                ..join()
            },
            ErrorCode::INVALID_REQUEST,
            "ActiveTasks must be empty when (re-)joining.",
        );
        rejects(
            StreamsGroupHeartbeatRequest {
                standby_tasks: None,
                ..join()
            },
            ErrorCode::INVALID_REQUEST,
            "StandbyTasks must be empty when (re-)joining.",
        );
        rejects(
            StreamsGroupHeartbeatRequest {
                warmup_tasks: None,
                ..join()
            },
            ErrorCode::INVALID_REQUEST,
            "WarmupTasks must be empty when (re-)joining.",
        );
        // Not joining: null lists are fine (the member did not report them).
        assert!(heartbeat_request(&StreamsGroupHeartbeatRequest {
            member_epoch: 3,
            topology: None,
            active_tasks: None,
            standby_tasks: None,
            warmup_tasks: None,
            ..join()
        })
        .is_ok());
    }

    #[test]
    fn changelog_topics_must_not_fix_partitions() {
        let t = Topology {
            epoch: 1,
            subtopologies: vec![Subtopology {
                state_changelog_topics: vec![TopicInfo {
                    name: "c".into(),
                    partitions: 3,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        rejects(
            StreamsGroupHeartbeatRequest {
                topology: Some(t),
                ..join()
            },
            ErrorCode::STREAMS_INVALID_TOPOLOGY,
            "Changelog topic c must have an undefined partition count, but it is set to 3.",
        );
    }

    #[test]
    fn internal_and_invalid_topic_names_are_rejected() {
        let with = |name: &str| Topology {
            epoch: 1,
            subtopologies: vec![Subtopology {
                source_topics: vec!["ok".into(), name.into()],
                ..Default::default()
            }],
            ..Default::default()
        };
        let err = topology_topic_names(&with("__consumer_offsets")).unwrap_err();
        assert_eq!(err.code, ErrorCode::STREAMS_INVALID_TOPOLOGY);
        assert_eq!(err.message.as_deref(), Some("Use of Kafka internal topics __consumer_offsets in a Kafka Streams topology is prohibited."));
        let err = topology_topic_names(&with("bad name")).unwrap_err();
        assert_eq!(
            err.message.as_deref(),
            Some("Topic names bad name are not valid topic names.")
        );
        assert!(topology_topic_names(&with("fine")).is_ok());
    }

    #[test]
    fn a_huge_topology_names_each_topic_once_in_first_seen_order() {
        let t = |i: usize| format!("t-{i}");
        let c = |i: usize| format!("c-{i}");
        let info = |name: String| TopicInfo {
            name,
            ..Default::default()
        };
        let mut changelogs: Vec<TopicInfo> = (0..50_000).map(|i| info(c(i))).collect();
        changelogs.push(info("bad name".into()));
        let mut repartition: Vec<TopicInfo> = (0..50_000).rev().map(|i| info(c(i))).collect();
        repartition.push(info("bad name".into()));
        let topology = Topology {
            epoch: 1,
            subtopologies: vec![
                Subtopology {
                    subtopology_id: "0".into(),
                    source_topics: (0..100_000).map(t).collect(),
                    repartition_sink_topics: (0..100_000).rev().map(t).collect(),
                    ..Default::default()
                },
                Subtopology {
                    subtopology_id: "1".into(),
                    source_topics: (0..100_000).step_by(2).map(t).collect(),
                    repartition_source_topics: repartition,
                    state_changelog_topics: changelogs,
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let mut expected: Vec<String> = (0..100_000).map(t).collect();
        expected.extend((0..50_000).rev().map(c));
        expected.push("bad name".into());
        assert!(topology_topics(&topology) == expected, "topics differ");
        let err = topology_topic_names(&topology).unwrap_err();
        assert_eq!(
            err.message.as_deref(),
            Some("Topic names bad name are not valid topic names.")
        );
    }
}
