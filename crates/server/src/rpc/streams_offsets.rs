//! In gateway mode a streams group's committed offsets live in the upstream cluster's
//! `__consumer_offsets`, not in kcoord's log: kcoord checks an OffsetCommit, TxnOffsetCommit or
//! OffsetFetch against the streams group it coordinates (its members and epochs, KIP-447's
//! fencing of zombies), then sends it to the cluster as a commit or fetch of a group without
//! members (generation -1, no member id), which the cluster keeps as Kafka keeps any simple
//! group's offsets. So Kafka's own tools read a streams app's offsets from the cluster where
//! they look for them, and an `exactly_once_v2` app's offsets are committed by the cluster's
//! transaction coordinator together with its output, as with Kafka alone.
//!
//! A request that does not pass kcoord's checks is served by kcoord's own handler, which
//! answers Kafka's error for it; one naming a group kcoord does not coordinate as a streams
//! group is left to the rules of `by_group.rs`.

use bytes::Bytes;
use kcoord_coordinator::commits::OffsetToCommit;
use kcoord_coordinator::txn_offsets::TxnOffsetCommit;
use kcoord_wire::api::ApiKey;
use kcoord_wire::budget::decode_request;
use kcoord_wire::encoded;
use kcoord_wire::messages::{OffsetCommitRequest, OffsetFetchRequest, TxnOffsetCommitRequest};
use uuid::Uuid;

use crate::state::ServerState;

/// The request rewritten for the cluster, when it is about streams groups kcoord coordinates
/// and passes kcoord's checks; `None` otherwise (kcoord's usual rules then apply).
pub(crate) fn for_the_cluster(
    server: &ServerState,
    api: ApiKey,
    version: i16,
    body: &Bytes,
) -> Option<Bytes> {
    server.gateway.as_ref()?;
    match api {
        ApiKey::OffsetCommit => offset_commit(server, version, body),
        ApiKey::TxnOffsetCommit => txn_offset_commit(server, version, body),
        ApiKey::OffsetFetch => offset_fetch(server, version, body),
        _ => None,
    }
}

fn offset_commit(server: &ServerState, version: i16, body: &Bytes) -> Option<Bytes> {
    let mut req = decode_request::<OffsetCommitRequest>(body, version)?;
    let offsets = offsets(
        server,
        req.topics.iter().flat_map(|t| {
            t.partitions.iter().map(|p| {
                let metadata = p.committed_metadata.as_deref();
                (t.name.as_str(), t.topic_id, p.partition_index, metadata)
            })
        }),
    )?;
    let checked = streams_group_shard(server, &req.group_id)?.peek(|s| {
        s.check_commit(
            &req.group_id,
            &req.member_id,
            req.generation_id_or_member_epoch,
            version,
            &offsets,
        )
    });
    checked.ok()?.ok()?;
    req.generation_id_or_member_epoch = -1;
    req.member_id.clear();
    req.group_instance_id = None;
    encoded(&req, version)
}

fn txn_offset_commit(server: &ServerState, version: i16, body: &Bytes) -> Option<Bytes> {
    let mut req = decode_request::<TxnOffsetCommitRequest>(body, version)?;
    let offsets = offsets(
        server,
        req.topics.iter().flat_map(|t| {
            t.partitions.iter().map(|p| {
                let metadata = p.committed_metadata.as_deref();
                (t.name.as_str(), t.topic_id, p.partition_index, metadata)
            })
        }),
    )?;
    let commit = TxnOffsetCommit {
        group_id: &req.group_id,
        producer_id: req.producer_id,
        member_id: &req.member_id,
        group_instance_id: req.group_instance_id.as_deref(),
        generation_id_or_member_epoch: req.generation_id_or_member_epoch,
        api_version: version,
        offsets: &offsets,
    };
    let shard = streams_group_shard(server, &req.group_id)?;
    shard
        .peek(|s| s.check_transactional_commit(&commit))
        .ok()?
        .ok()?;
    req.generation_id_or_member_epoch = -1;
    req.member_id.clear();
    req.group_instance_id = None;
    encoded(&req, version)
}

fn offset_fetch(server: &ServerState, version: i16, body: &Bytes) -> Option<Bytes> {
    let mut req = decode_request::<OffsetFetchRequest>(body, version)?;
    if version < 8 {
        streams_group_shard(server, &req.group_id)?;
        return encoded(&req, version);
    }
    for group in &mut req.groups {
        let (member, epoch) = (group.member_id.as_deref(), group.member_epoch);
        let shard = streams_group_shard(server, &group.group_id)?;
        let checked = shard.peek(|s| s.validate_offset_fetch(&group.group_id, member, epoch));
        checked.ok()?.ok()?;
        group.member_id = None;
        group.member_epoch = -1;
    }
    (!req.groups.is_empty()).then_some(())?;
    encoded(&req, version)
}

/// The shard of `group` when it is a streams group kcoord coordinates, its shard loaded here.
fn streams_group_shard<'a>(
    server: &'a ServerState,
    group: &str,
) -> Option<&'a crate::runtime::shards::ShardHandle> {
    let shard = server.coordinators.for_group(group);
    shard
        .peek(|s| s.group(group).is_some())
        .ok()?
        .then_some(shard)
}

/// The offsets as the coordinator checks them, topics by name (a topic named by an id the
/// catalog does not know: `None`, for kcoord's own handler to answer).
fn offsets<'a>(
    server: &ServerState,
    named: impl Iterator<Item = (&'a str, Uuid, i32, Option<&'a str>)>,
) -> Option<Vec<OffsetToCommit>> {
    let catalog = server.topics.snapshot();
    named
        .map(|(name, id, partition, metadata)| {
            let topic = match name {
                "" => catalog.get_by_id(&id)?.name.clone(),
                name => name.to_owned(),
            };
            Some(OffsetToCommit {
                topic,
                topic_id: id,
                partition,
                offset: 0,
                leader_epoch: -1,
                metadata: metadata.map(str::to_owned),
            })
        })
        .collect()
}
