//! In gateway mode, the group RPCs that both kcoord and the upstream cluster serve
//! (OffsetCommit, OffsetFetch, OffsetDelete, DescribeGroups, DeleteGroups): a request goes to
//! kcoord's own coordinator when every group it names is a streams group kcoord coordinates,
//! and upstream otherwise. A batch naming both kinds is split first (`split.rs`).

use bytes::Bytes;
use kcoord_wire::api::ApiKey;
use kcoord_wire::budget::decode_request;
use kcoord_wire::messages::{OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest};

use crate::state::ServerState;

/// Whether kcoord serves this request itself: it names at least one group, and each is a
/// streams group of kcoord's. A body that does not decode goes upstream, whose answer to it
/// is Kafka's own.
pub(crate) fn served_locally(
    server: &ServerState,
    api: ApiKey,
    version: i16,
    body: &Bytes,
) -> bool {
    let groups = named_groups(api, version, body.clone());
    !groups.is_empty() && groups.iter().all(|group| is_streams_group(server, group))
}

/// The groups a request names; none when it names none or does not decode.
pub(crate) fn named_groups(api: ApiKey, version: i16, body: Bytes) -> Vec<String> {
    let groups = match api {
        ApiKey::OffsetCommit => {
            decode_request::<OffsetCommitRequest>(&body, version).map(|r| vec![r.group_id])
        }
        ApiKey::OffsetDelete => {
            decode_request::<OffsetDeleteRequest>(&body, version).map(|r| vec![r.group_id])
        }
        // One group before v8; from v8 on a batch, as DescribeGroups and DeleteGroups are.
        ApiKey::OffsetFetch if version < 8 => {
            decode_request::<OffsetFetchRequest>(&body, version).map(|r| vec![r.group_id])
        }
        _ => crate::rpc::split::batch_groups(api, version, &body),
    };
    groups.unwrap_or_default()
}

/// Whether `group` is a streams group kcoord coordinates. A shard still loading cannot tell
/// yet, so it keeps the request: it answers COORDINATOR_LOAD_IN_PROGRESS and the client retries,
/// where upstream a streams group's offsets would be missing (an app restarted from
/// `auto.offset.reset`). A shard another kcoord node serves keeps it too (NOT_COORDINATOR: the
/// client asks FindCoordinator again, which names that node). A stopped shard says no.
pub(crate) fn is_streams_group(server: &ServerState, group: &str) -> bool {
    match server
        .coordinators
        .for_group(group)
        .peek(|shard| shard.group(group).is_some())
    {
        Ok(known) => known,
        Err(e) => matches!(
            e,
            crate::runtime::shards::ShardError::Loading
                | crate::runtime::shards::ShardError::NotOwned
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use kcoord_wire::messages::offset_fetch_request::OffsetFetchRequestGroup;
    use kcoord_wire::messages::{DeleteGroupsRequest, DescribeGroupsRequest};
    use kcoord_wire::Encodable;

    fn encode<M: Encodable>(m: &M, version: i16) -> Bytes {
        let mut out = BytesMut::new();
        m.encode(&mut out, version).unwrap();
        out.freeze()
    }

    #[test]
    fn every_group_rpc_names_its_groups_in_each_shape() {
        let commit = OffsetCommitRequest {
            group_id: "a".to_owned(),
            ..Default::default()
        };
        assert_eq!(
            named_groups(ApiKey::OffsetCommit, 8, encode(&commit, 8)),
            ["a"]
        );
        let delete = OffsetDeleteRequest {
            group_id: "d".to_owned(),
            ..Default::default()
        };
        assert_eq!(
            named_groups(ApiKey::OffsetDelete, 0, encode(&delete, 0)),
            ["d"]
        );
        let fetch_one = OffsetFetchRequest {
            group_id: "b".to_owned(),
            ..Default::default()
        };
        assert_eq!(
            named_groups(ApiKey::OffsetFetch, 7, encode(&fetch_one, 7)),
            ["b"]
        );
        let fetch_many = OffsetFetchRequest {
            groups: vec![
                OffsetFetchRequestGroup {
                    group_id: "b".to_owned(),
                    ..Default::default()
                },
                OffsetFetchRequestGroup {
                    group_id: "c".to_owned(),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        assert_eq!(
            named_groups(ApiKey::OffsetFetch, 9, encode(&fetch_many, 9)),
            ["b", "c"]
        );
        let describe = DescribeGroupsRequest {
            groups: vec!["x".to_owned(), "y".to_owned()],
            ..Default::default()
        };
        assert_eq!(
            named_groups(ApiKey::DescribeGroups, 5, encode(&describe, 5)),
            ["x", "y"]
        );
        let delete_groups = DeleteGroupsRequest {
            groups_names: vec!["z".to_owned()],
            ..Default::default()
        };
        assert_eq!(
            named_groups(ApiKey::DeleteGroups, 2, encode(&delete_groups, 2)),
            ["z"]
        );
    }

    #[test]
    fn a_body_that_does_not_decode_names_no_group() {
        assert!(named_groups(ApiKey::OffsetCommit, 8, Bytes::from_static(&[1, 2])).is_empty());
        assert!(named_groups(ApiKey::Produce, 9, Bytes::new()).is_empty());
    }
}
