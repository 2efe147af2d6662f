//! `/api/v1/consumer-groups` and `/api/v1/consumer-groups/{groupId}`: the groups consumers join
//! (classic and KIP-848 consumer groups) with their members, what each is assigned, and the
//! group's committed offsets against the log end offsets (its lag). Read with ListGroups,
//! DescribeGroups or ConsumerGroupDescribe, OffsetFetch and ListOffsets ([`super::kafka`]), as
//! a Kafka client of the HTTP listener would read them. Documents named after Kafka's Admin
//! model (`ConsumerGroupDescription`, `MemberDescription`), in camelCase.
use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use kcoord_wire::messages::consumer_group_describe_response as cgd;
use kcoord_wire::messages::describe_groups_response as dg;
use kcoord_wire::ErrorCode;
use serde::Serialize;

use super::api::Peer;
use super::error::ApiError;
use super::{kafka, no_store, offsets};
use crate::state::ServerState;

pub fn routes() -> Router<Arc<ServerState>> {
    Router::new()
        .route("/api/v1/consumer-groups", get(list))
        .route("/api/v1/consumer-groups/{group_id}", get(describe))
}

/// `GET /api/v1/consumer-groups`.
#[derive(Debug, Serialize)]
pub struct ConsumerGroupList {
    pub groups: Vec<ConsumerGroupSummary>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerGroupSummary {
    pub group_id: String,
    /// `classic` or `consumer`.
    pub group_type: String,
    pub group_state: String,
    /// A classic group's protocol type (`consumer` for Kafka's consumers, empty for a group
    /// that only has committed offsets).
    pub protocol_type: String,
}

/// `GET /api/v1/consumer-groups/{groupId}`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerGroupDescription {
    pub group_id: String,
    pub group_type: String,
    pub group_state: String,
    /// The classic group's selected protocol (its assignor), or the consumer group's server
    /// assignor; empty when there is none.
    pub partition_assignor: String,
    pub members: Vec<ConsumerMember>,
    pub offsets: Vec<PartitionLag>,
    /// The sum of the partitions' lags.
    pub total_lag: i64,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    /// Topic name -> partitions, sorted (a classic member's when its assignment is in Kafka's
    /// consumer protocol).
    pub assignment: BTreeMap<String, Vec<i32>>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PartitionLag {
    pub topic: String,
    pub partition: i32,
    pub committed_offset: i64,
    /// None when the partition's end could not be read.
    pub log_end_offset: Option<i64>,
    pub lag: Option<i64>,
}

async fn list(
    State(server): State<Arc<ServerState>>,
    Peer(peer): Peer,
) -> Result<Response, ApiError> {
    let listed = kafka::list_consumer_groups(&server, peer).await;
    if listed.error_code != ErrorCode::NONE.code() {
        return Err(ApiError::kafka(listed.error_code, None));
    }
    let groups = listed
        .groups
        .into_iter()
        .map(|g| ConsumerGroupSummary {
            group_id: g.group_id,
            group_type: g.group_type,
            group_state: g.group_state,
            protocol_type: g.protocol_type,
        })
        .collect();
    Ok((no_store(), Json(ConsumerGroupList { groups })).into_response())
}

async fn describe(
    State(server): State<Arc<ServerState>>,
    Peer(peer): Peer,
    Path(group_id): Path<String>,
) -> Result<Response, ApiError> {
    let consumer = kafka::describe_kip848_groups(&server, peer, vec![group_id.clone()]).await;
    let mut described = match consumer.into_iter().next() {
        Some(g) if g.error_code == ErrorCode::NONE.code() => from_consumer_group(g),
        _ => from_classic_group(classic(&server, peer, &group_id).await?),
    };
    described.offsets = lags(&server, peer, &group_id).await?;
    described.total_lag = described.offsets.iter().filter_map(|o| o.lag).sum();
    Ok((no_store(), Json(described)).into_response())
}

/// DescribeGroups of one group; its error, if any, as the API's (an unknown group is 404).
async fn classic(
    server: &ServerState,
    peer: Option<std::net::SocketAddr>,
    group_id: &str,
) -> Result<dg::DescribedGroup, ApiError> {
    let group = kafka::describe_classic_groups(server, peer, vec![group_id.to_owned()])
        .await
        .pop()
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                ErrorCode::UNKNOWN_SERVER_ERROR.name(),
                "DescribeGroups answered no group",
            )
        })?;
    if group.error_code != ErrorCode::NONE.code() {
        return Err(ApiError::kafka(
            group.error_code,
            group.error_message.as_deref(),
        ));
    }
    // DescribeGroups v5 answers an unknown group Dead, without an error.
    if group.group_state == "Dead" {
        return Err(ApiError::kafka(
            ErrorCode::GROUP_ID_NOT_FOUND.code(),
            Some(&format!("Group {group_id} not found.")),
        ));
    }
    Ok(group)
}

fn from_consumer_group(g: cgd::DescribedGroup) -> ConsumerGroupDescription {
    ConsumerGroupDescription {
        group_id: g.group_id,
        group_type: "consumer".into(),
        group_state: g.group_state,
        partition_assignor: g.assignor_name,
        members: g
            .members
            .into_iter()
            .map(|m| ConsumerMember {
                member_id: m.member_id,
                group_instance_id: m.instance_id,
                client_id: m.client_id,
                client_host: m.client_host,
                assignment: m
                    .assignment
                    .topic_partitions
                    .into_iter()
                    .map(|t| (t.topic_name, sorted(t.partitions)))
                    .collect(),
            })
            .collect(),
        offsets: Vec::new(),
        total_lag: 0,
    }
}

fn from_classic_group(g: dg::DescribedGroup) -> ConsumerGroupDescription {
    let consumer_protocol = g.protocol_type == "consumer";
    ConsumerGroupDescription {
        group_id: g.group_id,
        group_type: "classic".into(),
        group_state: g.group_state,
        partition_assignor: g.protocol_data,
        members: g
            .members
            .into_iter()
            .map(|m| ConsumerMember {
                assignment: if consumer_protocol {
                    consumer_assignment(&m.member_assignment).unwrap_or_default()
                } else {
                    BTreeMap::new()
                },
                member_id: m.member_id,
                group_instance_id: m.group_instance_id,
                client_id: m.client_id,
                client_host: m.client_host,
            })
            .collect(),
        offsets: Vec::new(),
        total_lag: 0,
    }
}

fn sorted(mut partitions: Vec<i32>) -> Vec<i32> {
    partitions.sort_unstable();
    partitions
}

/// A consumer-protocol assignment as topics and their sorted partitions.
fn consumer_assignment(bytes: &[u8]) -> Option<BTreeMap<String, Vec<i32>>> {
    let read = kcoord_coordinator::consumer_protocol::read_assignment(bytes).ok()?;
    let mut out: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    for (topic, partitions) in read.partitions {
        out.entry(topic).or_default().extend(partitions);
    }
    Some(out.into_iter().map(|(t, p)| (t, sorted(p))).collect())
}

/// The group's committed offsets with each partition's log end offset and lag.
async fn lags(
    server: &ServerState,
    peer: Option<std::net::SocketAddr>,
    group_id: &str,
) -> Result<Vec<PartitionLag>, ApiError> {
    let committed = offsets::committed(server, peer, group_id).await?;
    let end_of = offsets::log_ends(server, peer, committed.keys()).await;
    Ok(committed
        .into_iter()
        .map(|((topic, partition), committed_offset)| {
            let log_end_offset = end_of.get(&(topic.clone(), partition)).copied();
            PartitionLag {
                lag: offsets::lag(Some(committed_offset), log_end_offset),
                topic,
                partition,
                committed_offset,
                log_end_offset,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_consumer_protocol_assignment_reads_as_topics_and_sorted_partitions() {
        let mut bytes = vec![0u8, 1];
        bytes.extend(1i32.to_be_bytes());
        bytes.extend(2i16.to_be_bytes());
        bytes.extend(b"in");
        bytes.extend(2i32.to_be_bytes());
        bytes.extend(3i32.to_be_bytes());
        bytes.extend(1i32.to_be_bytes());
        bytes.extend((-1i32).to_be_bytes());
        let read = consumer_assignment(&bytes).unwrap();
        assert_eq!(read, BTreeMap::from([("in".to_string(), vec![1, 3])]));
        assert_eq!(consumer_assignment(&bytes[..9]), None, "cut short");
        assert_eq!(consumer_assignment(b""), None);
    }
}
