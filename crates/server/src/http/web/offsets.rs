//! A group's committed offsets and the log end offsets of partitions, read as a Kafka client of
//! the HTTP listener reads them (OffsetFetch and ListOffsets, [`super::kafka`]; in gateway mode
//! from the cluster, `gateway/offsets.rs`): what the consumer groups' and the streams groups'
//! lag are computed from.
use std::collections::BTreeMap;
use std::net::SocketAddr;

use kcoord_wire::ErrorCode;

use super::error::ApiError;
use super::kafka;
use crate::state::ServerState;

/// (topic, partition).
pub type TopicPartition = (String, i32);

/// Every offset `group_id` committed.
pub async fn committed(
    server: &ServerState,
    peer: Option<SocketAddr>,
    group_id: &str,
) -> Result<BTreeMap<TopicPartition, i64>, ApiError> {
    if let Some(gateway) = &server.gateway {
        return gateway
            .committed_offsets(group_id)
            .await
            .map_err(|e| ApiError::upstream(&e));
    }
    let fetched = kafka::committed_offsets(server, peer, group_id).await;
    if fetched.error_code != ErrorCode::NONE.code() {
        return Err(ApiError::kafka(fetched.error_code, None));
    }
    let mut committed = BTreeMap::new();
    for topic in fetched.topics {
        for p in topic
            .partitions
            .into_iter()
            .filter(|p| p.error_code == 0 && p.committed_offset >= 0)
        {
            committed.insert((topic.name.clone(), p.partition_index), p.committed_offset);
        }
    }
    Ok(committed)
}

/// The log end offsets of `partitions` that could be read (a partition this node does not
/// lead, or may not be described by the caller, is left out). In gateway mode the cluster's.
pub async fn log_ends<'a>(
    server: &ServerState,
    peer: Option<SocketAddr>,
    partitions: impl IntoIterator<Item = &'a TopicPartition>,
) -> BTreeMap<TopicPartition, i64> {
    if let Some(gateway) = &server.gateway {
        let partitions = partitions.into_iter().cloned().collect();
        return gateway
            .log_end_offsets(partitions)
            .await
            .unwrap_or_default();
    }
    let mut by_topic: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    for (topic, partition) in partitions {
        by_topic.entry(topic.clone()).or_default().push(*partition);
    }
    let ends = kafka::log_end_offsets(server, peer, by_topic.into_iter().collect());
    let mut end_of = BTreeMap::new();
    for topic in ends.topics {
        for p in topic.partitions.into_iter().filter(|p| p.error_code == 0) {
            end_of.insert((topic.name.clone(), p.partition_index), p.offset);
        }
    }
    end_of
}

/// How far `committed` is behind `end`, never negative (an end read before a commit).
pub fn lag(committed: Option<i64>, end: Option<i64>) -> Option<i64> {
    Some((end? - committed?).max(0))
}
