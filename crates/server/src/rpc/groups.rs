//! Helpers shared by the group handlers: fanning a list of group ids out to the shards that own
//! them in small jobs, and answering a request that names the same thing more than once.
//!
//! A request's list is the client's to choose, so no request may hold a shard for work
//! proportional to it: [`per_group`] runs at most [`GROUPS_PER_JOB`] groups per job and lets the
//! other tasks run (heartbeats of the same shard among them) between two jobs. A name the
//! request repeats is worked out once ([`Distinct`]); its copies are bounded by
//! [`RepeatBudget`].

use std::collections::{BTreeMap, HashMap};

use kcoord_coordinator::{CoordinatorShard, Outcome};

use crate::runtime::shards::{Coordinators, ShardError};

/// The most groups one shard job handles. A group's answer costs at most its own size (its
/// members, its topology, its offsets); between two jobs the shard's lock is released and the
/// connection task yields, so a heartbeat waits for at most one job.
pub const GROUPS_PER_JOB: usize = 16;

/// Bytes of copies one response may carry for the names its request repeats (the answers of
/// the first occurrences are not counted). Kafka answers every occurrence in full; a client
/// that sends a name twice gets two full answers here too, but a request that would turn a few
/// bytes of repeats into a response many times its size gets INVALID_REQUEST for the repeats
/// past this bound. No Kafka client repeats names (the admin client keys its requests by group).
pub const MAX_REPEATED_ANSWER_BYTES: usize = 1 << 20;

/// A request's list with each name once: `ids` in order of first occurrence, and for each
/// position of the request the index of its name in `ids`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Distinct {
    pub ids: Vec<String>,
    pub of: Vec<usize>,
}

impl Distinct {
    pub fn of(names: &[String]) -> Distinct {
        let mut index: HashMap<&str, usize> = HashMap::with_capacity(names.len().min(1024));
        let mut ids = Vec::new();
        let of = names
            .iter()
            .map(|name| {
                *index.entry(name.as_str()).or_insert_with(|| {
                    ids.push(name.clone());
                    ids.len() - 1
                })
            })
            .collect();
        Distinct { ids, of }
    }

    /// One answer per position of the request, from one answer per distinct name: the first
    /// occurrence gets the answer, each repeat a copy while `budget` (charged `size` of each
    /// copy) allows, else `refused(name)`.
    pub fn expand<R: Clone>(
        &self,
        answers: Vec<R>,
        budget: &mut RepeatBudget,
        size: impl Fn(&R) -> usize,
        refused: impl Fn(&str) -> R,
    ) -> Vec<R> {
        let mut answers: Vec<Option<R>> = answers.into_iter().map(Some).collect();
        let mut remaining = vec![0usize; self.ids.len()];
        for d in &self.of {
            remaining[*d] += 1;
        }
        let mut seen = vec![false; self.ids.len()];
        let mut out = Vec::with_capacity(self.of.len());
        for d in self.of.iter().copied() {
            remaining[d] -= 1;
            let first = !std::mem::replace(&mut seen[d], true);
            let Some(slot) = answers.get_mut(d) else {
                out.push(refused(&self.ids[d]));
                continue;
            };
            let answer = if first && remaining[d] == 0 {
                slot.take()
            } else {
                slot.as_ref()
                    .filter(|answer| first || budget.take_with(|| size(answer)))
                    .cloned()
            };
            out.push(answer.unwrap_or_else(|| refused(&self.ids[d])));
        }
        out
    }
}

/// What is left of [`MAX_REPEATED_ANSWER_BYTES`] for one response.
#[derive(Debug, Clone)]
pub struct RepeatBudget {
    left: usize,
}

impl Default for RepeatBudget {
    fn default() -> Self {
        RepeatBudget::new(MAX_REPEATED_ANSWER_BYTES)
    }
}

impl RepeatBudget {
    pub fn new(bytes: usize) -> RepeatBudget {
        RepeatBudget { left: bytes }
    }

    /// For answers no larger than an error entry, whose copies cost no more than refusals.
    pub fn unbounded() -> RepeatBudget {
        RepeatBudget::new(usize::MAX)
    }

    /// Takes `bytes` if they are left; once refused, every later copy is refused too (the
    /// budget is not handed to a smaller copy that happens to fit).
    pub fn take(&mut self, bytes: usize) -> bool {
        self.take_with(|| bytes)
    }

    /// [`take`](Self::take) of a size computed only while something is left.
    pub fn take_with(&mut self, bytes: impl FnOnce() -> usize) -> bool {
        if self.left == 0 {
            return false;
        }
        let bytes = bytes();
        if bytes <= self.left {
            self.left -= bytes;
            true
        } else {
            self.left = 0;
            false
        }
    }
}

/// Runs `f` on the shard that owns each id, at most [`GROUPS_PER_JOB`] ids per job, and returns
/// one answer per id, in the order given: `f`'s answers (it must return one per id it was
/// given, in order), or the shard's error. Each id is worked on once per occurrence: callers
/// de-duplicate first ([`Distinct`]).
pub async fn per_group<R, F>(
    coordinators: &Coordinators,
    group_ids: &[String],
    f: F,
) -> Vec<Result<R, ShardError>>
where
    R: Send + 'static,
    F: Fn(&CoordinatorShard, i64, &[String]) -> Outcome<Vec<R>> + Clone + Send + 'static,
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
    let mut jobs = 0usize;
    for positions in by_shard.values() {
        for chunk in positions.chunks(GROUPS_PER_JOB) {
            if jobs > 0 {
                // Let the shard's other requests (and this worker's other tasks) in.
                tokio::task::yield_now().await;
            }
            jobs += 1;
            let ids: Vec<String> = chunk.iter().map(|i| group_ids[*i].clone()).collect();
            let shard = coordinators.for_group(&ids[0]);
            let f = f.clone();
            match shard.call(move |s, now| f(s, now, &ids)).await {
                Ok(results) => {
                    for (i, r) in chunk.iter().zip(results) {
                        answers[*i] = Some(Ok(r));
                    }
                }
                Err(e) => {
                    for i in chunk {
                        answers[*i] = Some(Err(e));
                    }
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use kcoord_coordinator::StreamsGroupConfig;

    use super::*;

    fn names(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn distinct_keeps_first_occurrences_and_maps_every_position() {
        let d = Distinct::of(&names(&["b", "a", "b", "", "a", "b"]));
        assert_eq!(d.ids, names(&["b", "a", ""]));
        assert_eq!(d.of, vec![0, 1, 0, 2, 1, 0]);
    }

    #[test]
    fn repeats_are_copied_within_the_budget_then_refused() {
        let d = Distinct::of(&names(&["a", "b", "a", "a", "b", "a"]));
        // Each copy costs its length; 10 bytes pay for two copies of "aaaa" and nothing more.
        let mut budget = RepeatBudget::new(10);
        let out = d.expand(
            vec!["aaaa".to_owned(), "bbbbbbb".to_owned()],
            &mut budget,
            |s| s.len(),
            |name| format!("refused {name}"),
        );
        assert_eq!(
            out,
            names(&["aaaa", "bbbbbbb", "aaaa", "aaaa", "refused b", "refused a"])
        );
    }

    #[test]
    fn a_million_repeats_cost_the_budget_not_a_million_copies() {
        let requested = vec!["g".to_owned(); 1_000_000];
        let d = Distinct::of(&requested);
        assert_eq!(d.ids.len(), 1);
        let copies = AtomicUsize::new(0);
        let out = d.expand(
            vec![vec![0u8; 1000]],
            &mut RepeatBudget::new(MAX_REPEATED_ANSWER_BYTES),
            |v| {
                copies.fetch_add(1, Ordering::Relaxed);
                v.len()
            },
            |_| Vec::new(),
        );
        assert_eq!(out.len(), 1_000_000);
        let full = out.iter().filter(|v| v.len() == 1000).count();
        assert_eq!(full, 1 + MAX_REPEATED_ANSWER_BYTES / 1000);
        // Sized until the budget ran out, then refused without being looked at.
        assert_eq!(copies.load(Ordering::Relaxed), full);
    }

    #[tokio::test]
    async fn jobs_are_small_and_each_id_is_answered_in_order() {
        let (coordinators, _tasks) = Coordinators::new(3, &StreamsGroupConfig::default());
        let ids: Vec<String> = (0..1000).map(|i| format!("group-{i}")).collect();
        let largest = Arc::new(AtomicUsize::new(0));
        let jobs = Arc::new(AtomicUsize::new(0));
        let (l, j) = (Arc::clone(&largest), Arc::clone(&jobs));
        let answers = per_group(&coordinators, &ids, move |_, _, ids| {
            l.fetch_max(ids.len(), Ordering::Relaxed);
            j.fetch_add(1, Ordering::Relaxed);
            Outcome::answer(ids.to_vec())
        })
        .await;
        let answers: Vec<String> = answers.into_iter().map(|a| a.expect("served")).collect();
        assert_eq!(answers, ids);
        assert_eq!(largest.load(Ordering::Relaxed), GROUPS_PER_JOB);
        assert!(jobs.load(Ordering::Relaxed) >= 1000 / GROUPS_PER_JOB);
    }
}
