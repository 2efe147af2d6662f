//! Helpers shared by the group handlers: fanning a list of group ids out to the shards that own
//! them and putting the answers back in request order.

use std::collections::BTreeMap;

use kcoord_coordinator::CoordinatorShard;
use kcoord_metadata::TopicsImage;

use crate::shards::{Coordinators, ShardError};

/// Runs `f` once per shard with that shard's share of `group_ids`, and returns one answer per
/// group id, in the order given: `f`'s answers (it must return one per id it was given, in
/// order), or the shard's error.
pub async fn per_group<R, F>(
    coordinators: &Coordinators,
    group_ids: &[String],
    f: F,
) -> Vec<Result<R, ShardError>>
where
    R: Send + 'static,
    F: Fn(&mut CoordinatorShard, &TopicsImage, i64, &[String]) -> Vec<R> + Clone + Send + 'static,
{
    let mut by_shard: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, id) in group_ids.iter().enumerate() {
        by_shard
            .entry(coordinators.for_group(id).index())
            .or_default()
            .push(i);
    }
    let mut answers: Vec<Option<Result<R, ShardError>>> = std::iter::repeat_with(|| None)
        .take(group_ids.len())
        .collect();
    for positions in by_shard.into_values() {
        let ids: Vec<String> = positions.iter().map(|i| group_ids[*i].clone()).collect();
        let shard = coordinators.for_group(&ids[0]);
        let f = f.clone();
        match shard
            .call(move |s, topics, now| f(s, topics, now, &ids))
            .await
        {
            Ok(results) => {
                for (i, r) in positions.iter().zip(results) {
                    answers[*i] = Some(Ok(r));
                }
            }
            Err(e) => {
                for i in &positions {
                    answers[*i] = Some(Err(e));
                }
            }
        }
    }
    // A closure that answered too few ids leaves holes: treat them as a failed shard.
    answers
        .into_iter()
        .map(|a| a.unwrap_or(Err(ShardError::Failed)))
        .collect()
}
