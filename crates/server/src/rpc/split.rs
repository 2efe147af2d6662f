//! In gateway mode a batched group request (DescribeGroups, DeleteGroups, OffsetFetch v8+,
//! StreamsGroupDescribe) may name groups served in different places: streams groups of this
//! node, streams groups of another kcoord node, and the cluster's own groups. Sent to any one
//! of them whole, the others' groups would be answered wrongly: the cluster knows a streams
//! group only as a group without members that keeps its offsets, so it would describe it as
//! Empty and delete it (its offsets with it) while the app runs. Such a request is split into
//! one request per place, naming only that place's groups (every other field kept), each
//! routed as a request naming only those groups would be; the answers are put back together,
//! the groups in the order the request named them, with the longest throttle time.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use kcoord_wire::api::ApiKey;
use kcoord_wire::budget::decode_request;
use kcoord_wire::messages::{
    delete_groups_response::DeletableGroupResult, describe_groups_response::DescribedGroup,
    offset_fetch_response::OffsetFetchResponseGroup,
    streams_group_describe_response::DescribedGroup as DescribedStreamsGroup, DeleteGroupsResponse,
    DescribeGroupsResponse, OffsetFetchResponse, StreamsGroupDescribeResponse,
};
use kcoord_wire::messages::{
    DeleteGroupsRequest, DescribeGroupsRequest, OffsetFetchRequest, StreamsGroupDescribeRequest,
};
use kcoord_wire::{encoded, Decodable, Encodable};

use crate::gateway::forward::PendingFrame;
use crate::rpc::Gateway;
use crate::state::ServerState;

/// Where a group of a batch is served.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Place {
    /// By this node (its streams groups; for StreamsGroupDescribe, every group of its shards).
    Here,
    /// By the cluster (a group that is not one of kcoord's streams groups).
    Cluster,
    /// By the kcoord node at this address, which serves the group's shard.
    Node(String),
}

/// A batch request split by where its groups are served.
#[derive(Debug)]
pub(crate) struct Split {
    api: ApiKey,
    version: i16,
    /// The groups as the request named them.
    named: Vec<String>,
    /// One request per place, naming only that place's groups.
    parts: Vec<Bytes>,
}

/// A part's answer body (its response header taken off), once it is there; `None` when the
/// part failed, which closes the client's connection.
pub(crate) type PartAnswer = Pin<Box<dyn Future<Output = Option<Bytes>> + Send>>;

impl Split {
    /// The request split by the places of its groups; `None` when one place serves them all,
    /// or the request is not a batch of groups or does not decode. `passed_on`: another node
    /// sent it, so it is not passed on again (groups of other nodes' shards are this node's
    /// to answer NOT_COORDINATOR). `broker`: the upstream broker the client's port stands for.
    pub(crate) fn of(
        server: &ServerState,
        (api, version): (ApiKey, i16),
        body: &Bytes,
        passed_on: bool,
        broker: Option<i32>,
    ) -> Option<Split> {
        let gateway = server.gateway.as_ref()?;
        let by_group = crate::rpc::versions::declaration(api)?.gateway == Gateway::ByGroup;
        let named = batch_groups(api, version, body)?;
        let ownership = (!passed_on && gateway.has_other_nodes()).then(|| gateway.ownership());
        let shards = server.coordinators.len();
        let mut places: Vec<(Place, Vec<usize>)> = Vec::new();
        for (position, group) in named.iter().enumerate() {
            let elsewhere = ownership
                .as_ref()
                .and_then(|o| crate::rpc::owner_proxy::node_serving(o, group, shards, broker));
            let place = match elsewhere {
                Some(node) => Place::Node(node),
                None if by_group && !crate::rpc::by_group::is_streams_group(server, group) => {
                    Place::Cluster
                }
                None => Place::Here,
            };
            match places.iter_mut().find(|(p, _)| *p == place) {
                Some((_, positions)) => positions.push(position),
                None => places.push((place, vec![position])),
            }
        }
        if places.len() < 2 {
            return None;
        }
        let positions: Vec<Vec<usize>> = places.into_iter().map(|(_, p)| p).collect();
        let parts = parts(api, version, body, &positions)?;
        Some(Split {
            api,
            version,
            named,
            parts,
        })
    }

    /// The requests to route, one per place.
    pub(crate) fn parts(&self) -> &[Bytes] {
        &self.parts
    }

    /// The client's answer: the parts' answers (in the order of [`Split::parts`]) put together,
    /// framed behind `correlation_id`.
    pub(crate) fn answer(self, answers: Vec<PartAnswer>, correlation_id: i32) -> PendingFrame {
        Box::pin(async move {
            let mut bodies = Vec::with_capacity(answers.len());
            for answer in answers {
                bodies.push(answer.await?);
            }
            let merged = match merge(self.api, self.version, &self.named, bodies) {
                Ok(merged) => merged,
                Err(e) => {
                    tracing::warn!(api = self.api.name(), error = %e, "cannot put a split request's answers together; closing the client connection");
                    return None;
                }
            };
            crate::gateway::forward::frame(self.api, self.version, correlation_id, merged)
        })
    }
}

/// A batch request about groups: its groups, and the same request naming some of them; its
/// answer's entries, one per group.
trait Batch: Decodable + Encodable + Clone {
    type Answer: Decodable + Encodable;
    type Entry;
    fn groups(&self) -> Vec<String>;
    fn keep(&mut self, positions: &[usize]);
    fn entries(answer: Self::Answer) -> (i32, Vec<Self::Entry>);
    fn entry_group(entry: &Self::Entry) -> &str;
    fn answer(throttle_time_ms: i32, entries: Vec<Self::Entry>) -> Self::Answer;
}

macro_rules! batch {
    ($request:ty, $groups:ident, |$g:ident| $group_id:expr, $answer:ty, $entries:ident, $entry:ty) => {
        impl Batch for $request {
            type Answer = $answer;
            type Entry = $entry;

            fn groups(&self) -> Vec<String> {
                self.$groups.iter().map(|$g| $group_id.clone()).collect()
            }

            fn keep(&mut self, positions: &[usize]) {
                let all = std::mem::take(&mut self.$groups);
                self.$groups = positions
                    .iter()
                    .filter_map(|&i| all.get(i).cloned())
                    .collect();
            }

            fn entries(answer: $answer) -> (i32, Vec<$entry>) {
                (answer.throttle_time_ms, answer.$entries)
            }

            fn entry_group(entry: &$entry) -> &str {
                &entry.group_id
            }

            fn answer(throttle_time_ms: i32, $entries: Vec<$entry>) -> $answer {
                Self::Answer {
                    throttle_time_ms,
                    $entries,
                    ..Default::default()
                }
            }
        }
    };
}

batch!(
    DescribeGroupsRequest,
    groups,
    |g| g,
    DescribeGroupsResponse,
    groups,
    DescribedGroup
);
batch!(
    DeleteGroupsRequest,
    groups_names,
    |g| g,
    DeleteGroupsResponse,
    results,
    DeletableGroupResult
);
batch!(
    OffsetFetchRequest,
    groups,
    |g| g.group_id,
    OffsetFetchResponse,
    groups,
    OffsetFetchResponseGroup
);
batch!(
    StreamsGroupDescribeRequest,
    group_ids,
    |g| g,
    StreamsGroupDescribeResponse,
    groups,
    DescribedStreamsGroup
);

/// Runs `f` with the batch type of `api`; `None` for an API that is not a batch of groups at
/// `version` (OffsetFetch names one group before v8).
macro_rules! with_batch {
    ($api:expr, $version:expr, $f:ident($($arg:expr),*)) => {
        match $api {
            ApiKey::DescribeGroups => Some($f::<DescribeGroupsRequest>($($arg),*)),
            ApiKey::DeleteGroups => Some($f::<DeleteGroupsRequest>($($arg),*)),
            ApiKey::OffsetFetch if $version >= 8 => Some($f::<OffsetFetchRequest>($($arg),*)),
            ApiKey::StreamsGroupDescribe => Some($f::<StreamsGroupDescribeRequest>($($arg),*)),
            _ => None,
        }
    };
}

/// The groups a batch request names, in its order; `None` for a request that is not a batch
/// of groups at `version` or does not decode.
pub(crate) fn batch_groups(api: ApiKey, version: i16, body: &Bytes) -> Option<Vec<String>> {
    fn groups<B: Batch>(body: &Bytes, version: i16) -> Option<Vec<String>> {
        decode_request::<B>(body, version).map(|b| b.groups())
    }
    with_batch!(api, version, groups(body, version))?
}

/// The request once per place, each naming only the groups at its positions (decoded once).
fn parts(api: ApiKey, version: i16, body: &Bytes, places: &[Vec<usize>]) -> Option<Vec<Bytes>> {
    fn kept<B: Batch>(body: &Bytes, version: i16, places: &[Vec<usize>]) -> Option<Vec<Bytes>> {
        let whole = decode_request::<B>(body, version)?;
        places
            .iter()
            .map(|positions| {
                let mut part = whole.clone();
                part.keep(positions);
                encoded(&part, version)
            })
            .collect()
    }
    with_batch!(api, version, kept(body, version, places))?
}

/// The parts' answers as one: each named group's entry in the request's order (an entry no
/// named group claims, which no place should send, is kept at the end), the longest throttle.
fn merge(api: ApiKey, version: i16, named: &[String], bodies: Vec<Bytes>) -> Result<Bytes, String> {
    fn merged<B: Batch>(
        version: i16,
        named: &[String],
        bodies: Vec<Bytes>,
    ) -> Result<Bytes, String> {
        let mut throttle = 0;
        let mut entries = Vec::new();
        for mut body in bodies {
            let answer = B::Answer::decode(&mut body, version).map_err(|e| e.to_string())?;
            let (throttle_time_ms, part) = B::entries(answer);
            throttle = throttle.max(throttle_time_ms);
            entries.extend(part.into_iter().map(Some));
        }
        let mut by_group: HashMap<&str, VecDeque<usize>> = HashMap::new();
        for (i, entry) in entries.iter().enumerate() {
            if let Some(entry) = entry {
                by_group
                    .entry(B::entry_group(entry))
                    .or_default()
                    .push_back(i);
            }
        }
        let order: Vec<usize> = named
            .iter()
            .filter_map(|g| by_group.get_mut(g.as_str())?.pop_front())
            .collect();
        let mut ordered: Vec<B::Entry> = Vec::with_capacity(entries.len());
        for i in order {
            ordered.extend(entries[i].take());
        }
        ordered.extend(entries.into_iter().flatten());
        encoded(&B::answer(throttle, ordered), version).ok_or_else(|| "cannot encode".to_owned())
    }
    with_batch!(api, version, merged(version, named, bodies))
        .unwrap_or_else(|| Err(format!("{} is not a batch of groups", api.name())))
}

#[cfg(test)]
mod tests;
