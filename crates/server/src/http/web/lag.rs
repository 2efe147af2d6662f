//! `/api/v1/groups/{groupId}/lag`: a streams group's lag on its graph. Per source partition
//! (each sub-topology's source and repartition source topics) the committed offset, the log
//! end offset, the lag and its recent rate; per sub-topology their sums; and the sub-topology
//! with the most lag, which the page flags. Offsets come from OffsetFetch and ListOffsets as
//! for the consumer groups ([`super::offsets`]); the rate from the samples this listener kept
//! of the group's earlier answers ([`LagSamples`]).
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Json, Router};
use kcoord_metadata::TopicsImage;
use kcoord_wire::messages::streams_group_describe_response::DescribedGroup;
use serde::Serialize;

use super::api::{describe_one, Peer};
use super::error::ApiError;
use super::no_store;
use super::offsets::{self, TopicPartition};
use crate::state::ServerState;
use crate::support::clock;

pub fn routes() -> Router<Arc<ServerState>> {
    Router::new()
        .route("/api/v1/groups/{group_id}/lag", get(group_lag))
        // One per listener: the lag its clients were shown.
        .layer(Extension(Arc::new(LagSamples::default())))
}

/// `GET .../lag`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupLag {
    pub group_id: String,
    /// When the offsets were read, in milliseconds since the Unix epoch.
    pub sampled_ms: i64,
    pub total_lag: i64,
    /// The sub-topology with the most lag; none while no sub-topology lags.
    pub worst_subtopology_id: Option<String>,
    pub subtopologies: Vec<SubtopologyLag>,
    pub partitions: Vec<SourcePartitionLag>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubtopologyLag {
    pub subtopology_id: String,
    /// The sum of its partitions' known lags.
    pub lag: i64,
    /// Lag change per second (negative while it drains); none before two samples.
    pub lag_rate_per_second: Option<f64>,
    pub partitions: usize,
    /// Partitions whose lag is not known (nothing committed, or the end not readable).
    pub partitions_without_lag: usize,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SourcePartitionLag {
    pub subtopology_id: String,
    pub topic: String,
    pub partition: i32,
    pub committed_offset: Option<i64>,
    pub log_end_offset: Option<i64>,
    pub lag: Option<i64>,
    pub lag_rate_per_second: Option<f64>,
}

async fn group_lag(
    State(server): State<Arc<ServerState>>,
    Extension(samples): Extension<Arc<LagSamples>>,
    Peer(peer): Peer,
    Path(group_id): Path<String>,
) -> Result<Response, ApiError> {
    let group = describe_one(&server, peer, group_id, false).await?;
    let sources = source_partitions(&group, &server.topics.snapshot());
    let committed = offsets::committed(&server, peer, &group.group_id).await?;
    let ends = offsets::log_ends(&server, peer, sources.iter().map(|(tp, _)| tp)).await;
    let now = clock::now_ms();
    let partitions: Vec<SourcePartitionLag> = sources
        .into_iter()
        .map(|((topic, partition), subtopology_id)| {
            let tp = (topic, partition);
            let committed_offset = committed.get(&tp).copied();
            let log_end_offset = ends.get(&tp).copied();
            SourcePartitionLag {
                subtopology_id,
                topic: tp.0,
                partition,
                committed_offset,
                log_end_offset,
                lag: offsets::lag(committed_offset, log_end_offset),
                lag_rate_per_second: None,
            }
        })
        .collect();
    let document = with_rates(&group.group_id, now, partitions, &samples);
    Ok((no_store(), Json(document)).into_response())
}

/// Every source partition of the group's sub-topologies, with its sub-topology, in order.
fn source_partitions(
    group: &DescribedGroup,
    topics: &TopicsImage,
) -> Vec<(TopicPartition, String)> {
    let mut out = Vec::new();
    for s in super::tasks::subtopologies(group) {
        for (topic, count) in super::tasks::input_topics(s, topics) {
            for partition in 0..count {
                out.push(((topic.to_owned(), partition), s.subtopology_id.clone()));
            }
        }
    }
    out
}

/// The partitions with their rates (from the listener's samples of the group, which this one
/// joins), summed per sub-topology.
fn with_rates(
    group_id: &str,
    now: i64,
    mut partitions: Vec<SourcePartitionLag>,
    samples: &LagSamples,
) -> GroupLag {
    let lags = partitions
        .iter()
        .filter_map(|p| Some(((p.topic.clone(), p.partition), p.lag?)))
        .collect();
    let rates = samples.record(group_id, now, lags);
    let mut subtopologies: BTreeMap<&str, SubtopologyLag> = BTreeMap::new();
    for p in &mut partitions {
        p.lag_rate_per_second = rates.get(&(p.topic.clone(), p.partition)).copied();
        let s = subtopologies
            .entry(&p.subtopology_id)
            .or_insert_with(|| SubtopologyLag {
                subtopology_id: p.subtopology_id.clone(),
                lag: 0,
                lag_rate_per_second: None,
                partitions: 0,
                partitions_without_lag: 0,
            });
        s.partitions += 1;
        s.lag += p.lag.unwrap_or(0);
        s.partitions_without_lag += usize::from(p.lag.is_none());
        if let Some(rate) = p.lag_rate_per_second {
            *s.lag_rate_per_second.get_or_insert(0.0) += rate;
        }
    }
    let subtopologies: Vec<SubtopologyLag> = subtopologies.into_values().collect();
    let worst = subtopologies
        .iter()
        .filter(|s| s.lag > 0)
        .max_by_key(|s| s.lag)
        .map(|s| s.subtopology_id.clone());
    GroupLag {
        group_id: group_id.to_owned(),
        sampled_ms: now,
        total_lag: subtopologies.iter().map(|s| s.lag).sum(),
        worst_subtopology_id: worst,
        subtopologies,
        partitions,
    }
}

/// Samples kept per group: with the page reading every 3 seconds, about a minute's worth.
const MAX_SAMPLES: usize = 20;
/// Groups sampled per listener; the one sampled longest ago goes first.
const MAX_GROUPS: usize = 256;
/// Samples closer than this are not kept (several pages open at once), and a rate is taken
/// over at least this long.
const MIN_GAP_MS: i64 = 1_000;
/// A rate is taken against the oldest sample at most this old.
const WINDOW_MS: i64 = 60_000;

struct Sample {
    at_ms: i64,
    lags: BTreeMap<TopicPartition, i64>,
}

/// The recent lags of each group the API was asked about: a small ring per group, and a
/// bounded number of groups, so the rate costs the coordinator nothing.
#[derive(Default)]
pub struct LagSamples {
    groups: Mutex<HashMap<String, VecDeque<Sample>>>,
}

impl LagSamples {
    /// Keeps `lags` as the group's sample at `now` and answers each partition's lag change per
    /// second since the oldest sample of the last minute that is at least a second old.
    pub fn record(
        &self,
        group_id: &str,
        now: i64,
        lags: BTreeMap<TopicPartition, i64>,
    ) -> BTreeMap<TopicPartition, f64> {
        let mut groups = self.groups.lock().unwrap_or_else(|p| p.into_inner());
        if !groups.contains_key(group_id) && groups.len() >= MAX_GROUPS {
            let stalest = groups
                .iter()
                .min_by_key(|(_, ring)| ring.back().map_or(i64::MIN, |s| s.at_ms))
                .map(|(g, _)| g.clone());
            if let Some(g) = stalest {
                groups.remove(&g);
            }
        }
        let ring = groups.entry(group_id.to_owned()).or_default();
        while ring.front().is_some_and(|s| now - s.at_ms > WINDOW_MS) {
            ring.pop_front();
        }
        let rates = match ring.iter().find(|s| now - s.at_ms >= MIN_GAP_MS) {
            Some(base) => rates_since(base, now, &lags),
            None => BTreeMap::new(),
        };
        if ring.back().is_none_or(|s| now - s.at_ms >= MIN_GAP_MS) {
            if ring.len() == MAX_SAMPLES {
                ring.pop_front();
            }
            ring.push_back(Sample { at_ms: now, lags });
        }
        rates
    }
}

fn rates_since(
    base: &Sample,
    now: i64,
    lags: &BTreeMap<TopicPartition, i64>,
) -> BTreeMap<TopicPartition, f64> {
    let seconds = (now - base.at_ms) as f64 / 1000.0;
    lags.iter()
        .filter_map(|(tp, lag)| {
            let before = base.lags.get(tp)?;
            Some((tp.clone(), (lag - before) as f64 / seconds))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lags(entries: &[(&str, i32, i64)]) -> BTreeMap<TopicPartition, i64> {
        entries
            .iter()
            .map(|(t, p, l)| ((t.to_string(), *p), *l))
            .collect()
    }

    #[test]
    fn the_rate_is_the_lag_change_per_second_since_the_oldest_recent_sample() {
        let samples = LagSamples::default();
        let first = samples.record("g", 10_000, lags(&[("in", 0, 100), ("in", 1, 5)]));
        assert!(first.is_empty(), "one sample has no rate");
        // Too soon after the first: no rate, and not kept.
        assert!(samples
            .record("g", 10_500, lags(&[("in", 0, 900)]))
            .is_empty());
        let rates = samples.record("g", 14_000, lags(&[("in", 0, 300), ("in", 1, 1)]));
        assert_eq!(rates[&("in".to_string(), 0)], 50.0);
        assert_eq!(rates[&("in".to_string(), 1)], -1.0);
        // The base is still the first sample until it leaves the window.
        let rates = samples.record("g", 20_000, lags(&[("in", 0, 100)]));
        assert_eq!(rates[&("in".to_string(), 0)], 0.0);
        let rates = samples.record("g", 74_000, lags(&[("in", 0, 100)]));
        assert_eq!(rates[&("in".to_string(), 0)], -200.0 / 60.0, "since 14 s");
    }

    #[test]
    fn sub_topologies_sum_their_partitions_and_the_one_lagging_most_is_named() {
        let partition = |s: &str, t: &str, p, lag: Option<i64>| SourcePartitionLag {
            subtopology_id: s.into(),
            topic: t.into(),
            partition: p,
            committed_offset: lag.map(|_| 0),
            log_end_offset: lag,
            lag,
            lag_rate_per_second: None,
        };
        let samples = LagSamples::default();
        let read = |at, lags: [Option<i64>; 3]| {
            let partitions = vec![
                partition("0", "in", 0, lags[0]),
                partition("0", "in", 1, lags[1]),
                partition("1", "rekey", 0, lags[2]),
            ];
            with_rates("g", at, partitions, &samples)
        };
        let first = read(1_000, [Some(4), None, Some(3)]);
        assert_eq!(first.worst_subtopology_id.as_deref(), Some("0"));
        assert_eq!(first.total_lag, 7);
        let sums: Vec<(i64, usize, usize)> = first
            .subtopologies
            .iter()
            .map(|s| (s.lag, s.partitions, s.partitions_without_lag))
            .collect();
        assert_eq!(sums, [(4, 2, 1), (3, 1, 0)]);
        let later = read(3_000, [Some(0), None, Some(9)]);
        assert_eq!(later.worst_subtopology_id.as_deref(), Some("1"));
        let rates: Vec<Option<f64>> = later
            .subtopologies
            .iter()
            .map(|s| s.lag_rate_per_second)
            .collect();
        assert_eq!(rates, [Some(-2.0), Some(3.0)]);
        let drained = read(5_000, [Some(0), None, Some(0)]);
        assert_eq!(drained.worst_subtopology_id, None, "nothing lags");
    }

    #[test]
    fn rings_and_groups_stay_within_their_bounds() {
        let samples = LagSamples::default();
        for i in 0..(MAX_SAMPLES as i64 + 5) {
            samples.record("g", i * MIN_GAP_MS, lags(&[("in", 0, i)]));
        }
        assert_eq!(samples.groups.lock().unwrap()["g"].len(), MAX_SAMPLES);
        for g in 0..MAX_GROUPS {
            samples.record(&format!("other{g}"), 1_000_000, BTreeMap::new());
        }
        let groups = samples.groups.lock().unwrap();
        assert_eq!(groups.len(), MAX_GROUPS);
        assert!(
            !groups.contains_key("g"),
            "the group sampled longest ago went"
        );
    }
}
