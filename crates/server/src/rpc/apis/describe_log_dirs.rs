//! DescribeLogDirs (key 35), v1-5 (Kafka 4.0 removed v0), on broker listeners, after Kafka
//! 4.4's `KafkaApis.handleDescribeLogDirsRequest` and `ReplicaManager.describeLogDirs`
//! (`kafka-log-dirs --describe`):
//!
//! - DESCRIBE on the cluster, else no directory at all and (v3+) the top-level ErrorCode
//!   CLUSTER_AUTHORIZATION_FAILED;
//! - one result per directory of `log.dirs`, in the config's order, named by its absolute path:
//!   the requested partitions it holds (Topics null: every partition), grouped by topic, each
//!   with its size in bytes (every segment), offset lag 0 (this node is the only replica: its
//!   high watermark is its log end offset) and IsFutureKey false (kcoord has no future logs);
//!   a topic none of whose requested partitions are there is left out; from v4 the volume's
//!   total and usable bytes (Java's `FileStore.getTotalSpace` / `getUsableSpace`: blocks and
//!   blocks available to unprivileged users), -1 when they cannot be read; v5's IsCordoned false.
//!
//! Without `log.dirs` every partition lives in memory, which a Kafka broker cannot do. kcoord
//! then answers one pseudo-directory, [`IN_MEMORY_DIR`], holding every partition with the bytes
//! it keeps in memory and -1 for the volume's bytes: what `kafka-log-dirs --describe` users
//! look for is the partitions and their sizes (docs/decisions.md, "DescribeLogDirs without log
//! directories").

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kcoord_wire::messages::{DescribeLogDirsRequest, DescribeLogDirsResponse};
use kcoord_wire::ErrorCode;

use super::broker_registration::KAFKA_CLUSTER;
use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::runtime::partitions::Partition;
use crate::state::RequestContext;

/// DescribeLogDirs as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::DescribeLogDirs, 1, 5)
    .asks(&[Check::new(AclOperation::Describe, ResourceType::Cluster)]);

serve!(sync handle);

/// The name of the one pseudo-directory of a node without `log.dirs`.
pub const IN_MEMORY_DIR: &str = "(in memory)";

pub fn handle(
    ctx: &RequestContext<'_>,
    req: DescribeLogDirsRequest,
    _version: i16,
) -> DescribeLogDirsResponse {
    if !authorize(
        ctx,
        AclOperation::Describe,
        ResourceType::Cluster,
        KAFKA_CLUSTER,
    ) {
        return DescribeLogDirsResponse {
            error_code: ErrorCode::CLUSTER_AUTHORIZATION_FAILED.code(),
            ..Default::default()
        };
    }
    let wanted: Option<HashSet<(String, i32)>> = req.topics.map(|topics| {
        topics
            .into_iter()
            .flat_map(|t| {
                let topic = t.topic;
                t.partitions.into_iter().map(move |p| (topic.clone(), p))
            })
            .collect()
    });
    let partitions: Vec<_> = ctx
        .server
        .partitions
        .all()
        .into_iter()
        .filter(|p| {
            wanted
                .as_ref()
                .is_none_or(|w| w.contains(&(p.topic.clone(), p.index)))
        })
        .collect();
    let dirs = &ctx.server.config.log.log_dirs;
    let results = if dirs.is_empty() {
        vec![result(IN_MEMORY_DIR.to_owned(), &partitions, (-1, -1))]
    } else {
        let mut seen = HashSet::new();
        dirs.iter()
            .filter(|d| seen.insert(d.as_path()))
            .map(|dir| {
                let inside: Vec<_> = partitions
                    .iter()
                    .filter(|p| {
                        p.log()
                            .dir()
                            .is_some_and(|d| d.parent() == Some(dir.as_path()))
                    })
                    .cloned()
                    .collect();
                result(absolute(dir), &inside, volume_bytes(dir))
            })
            .collect()
    };
    DescribeLogDirsResponse {
        throttle_time_ms: 0,
        error_code: 0,
        results,
        ..Default::default()
    }
}

fn result(
    log_dir: String,
    partitions: &[std::sync::Arc<Partition>],
    (total_bytes, usable_bytes): (i64, i64),
) -> DescribeLogDirsResult {
    let mut by_topic: BTreeMap<&str, Vec<DescribeLogDirsPartition>> = BTreeMap::new();
    for p in partitions {
        let log = p.log();
        by_topic
            .entry(p.topic.as_str())
            .or_default()
            .push(DescribeLogDirsPartition {
                partition_index: p.index,
                partition_size: i64::try_from(log.size()).unwrap_or(i64::MAX),
                offset_lag: (log.log_end_offset() - log.high_watermark()).max(0),
                is_future_key: false,
                ..Default::default()
            });
    }
    DescribeLogDirsResult {
        error_code: 0,
        log_dir,
        topics: by_topic
            .into_iter()
            .map(|(name, mut partitions)| {
                partitions.sort_by_key(|p| p.partition_index);
                DescribeLogDirsTopic {
                    name: name.to_owned(),
                    partitions,
                    ..Default::default()
                }
            })
            .collect(),
        total_bytes,
        usable_bytes,
        is_cordoned: false,
        ..Default::default()
    }
}

/// Java's `toAbsolutePath`: relative paths resolved against the working directory.
fn absolute(dir: &Path) -> String {
    std::path::absolute(dir)
        .unwrap_or_else(|_| dir.to_path_buf())
        .display()
        .to_string()
}

/// The volume's total and usable bytes, or -1 each when they cannot be read.
fn volume_bytes(dir: &Path) -> (i64, i64) {
    match rustix::fs::statvfs(dir) {
        Ok(s) => {
            let bytes =
                |blocks: u64| i64::try_from(blocks.saturating_mul(s.f_frsize)).unwrap_or(i64::MAX);
            (bytes(s.f_blocks), bytes(s.f_bavail))
        }
        Err(_) => (-1, -1),
    }
}

/// The authorization matrix's rows of DescribeLogDirs ([`crate::rpc::authorize`]'s matrix
/// tests): each request with the ACLs that allow it and what an allowed and a refused principal
/// get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        row!(DescribeLogDirs 4 on Broker, DescribeLogDirsRequest::default(),
        needs [(Describe, Cluster, CLUSTER)],
        DescribeLogDirsResponse => |r| format!("{} dirs {}", code(r.error_code), r.results.len()),
        allowed "NONE dirs 1", denied "CLUSTER_AUTHORIZATION_FAILED dirs 0"),
    ]
}

#[cfg(test)]
mod tests;
