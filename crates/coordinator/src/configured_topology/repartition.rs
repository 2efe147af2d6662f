//! Step 2 of the module docs: the partition counts of repartition topics.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use kcoord_wire::records::StreamsGroupTopologyValue;

use super::{InvalidTopology, TopicPartitions};

/// Kafka's `RepartitionTopics.setup`: the partition counts of all repartition topics (fixed ones
/// as given, the others inferred from the sub-topology writing them).
///
/// Kafka resolves a sink as soon as *any* input of its writer is known, so with several
/// sub-topologies its result can depend on their iteration order. Here a pass first resolves
/// only sinks whose writer's inputs are all known (which makes the result for any loop-free
/// topology the true max, independent of order); only when such a pass makes no progress does a
/// pass apply Kafka's any-known-input rule (which is what resolves loops). The set of topologies
/// rejected as unresolvable is the same as Kafka's.
///
/// The passes are not run over every sub-topology again and again (quadratic in the topology,
/// which a heartbeat may make as large as a request frame): [`SinkResolution`] computes when
/// each sub-topology would resolve its sinks in that sequence of passes, and resolves them in
/// that order, with the same answers (`reference_counts` in the tests is the pass-by-pass form).
pub(super) fn repartition_partition_counts(
    topology: &StreamsGroupTopologyValue,
    topics: &impl TopicPartitions,
) -> Result<BTreeMap<String, i32>, InvalidTopology> {
    let mut counts: BTreeMap<String, i32> = BTreeMap::new();
    for sub in &topology.subtopologies {
        for info in &sub.repartition_source_topics {
            if info.partitions != 0 {
                counts.insert(info.name.clone(), info.partitions);
            }
        }
    }
    let mut resolution = SinkResolution::new(topology, topics, &counts);
    resolution.run(&mut counts)?;

    let unresolved = topology
        .subtopologies
        .iter()
        .flat_map(|s| s.repartition_source_topics.iter())
        .any(|t| !counts.contains_key(&t.name));
    if unresolved {
        return Err(InvalidTopology::new(
            "Failed to compute number of partitions for all repartition topics, because a repartition source topic is never used as a sink topic.",
        ));
    }
    Ok(counts)
}

/// One sub-topology while its repartition sinks are resolved.
struct Writer<'a> {
    /// Its repartition sinks, each once.
    sinks: Vec<&'a str>,
    /// Its repartition sources not known yet, and whether a source topic is missing from the
    /// catalog (then it is never complete).
    unknown: usize,
    missing_source: bool,
    /// The largest count among its known inputs (source topics, known repartition sources).
    known_max: Option<i32>,
    /// The first strict pass in which all its inputs are known when it is reached.
    ready_pass: usize,
}

/// The passes of `repartition_partition_counts`, event by event. Pass `p` reaches writer `i`
/// at "time" `(p, i)`; a sink resolved at `(p, i)` is known to writer `j` in pass `p` when
/// `i < j` and the pass is strict, else from pass `p + 1` (a strict pass follows every pass
/// that resolved something). Strict passes fire the writers whose inputs are all known, in
/// time order (a heap); when one makes no progress, one lenient pass fires, in index order,
/// the writers with any known input, those it makes eligible further on included. Each writer
/// fires at most once (firing resolves all its unresolved sinks), so the whole costs
/// O((sub-topologies + topic references) log sub-topologies).
struct SinkResolution<'a> {
    writers: Vec<Writer<'a>>,
    /// Repartition topic (not fixed) -> the writers reading it.
    readers: HashMap<&'a str, Vec<usize>>,
    /// Sinks without a count.
    remaining: usize,
    /// Strict firings to come: (pass, writer).
    strict: std::collections::BinaryHeap<std::cmp::Reverse<(usize, usize)>>,
    /// Writers with a known input and maybe an unresolved sink, for lenient passes.
    eligible: BTreeSet<usize>,
}

impl<'a> SinkResolution<'a> {
    fn new(
        topology: &'a StreamsGroupTopologyValue,
        topics: &impl TopicPartitions,
        fixed: &BTreeMap<String, i32>,
    ) -> SinkResolution<'a> {
        let mut readers: HashMap<&'a str, Vec<usize>> = HashMap::new();
        let mut needed: BTreeSet<&'a str> = BTreeSet::new();
        let mut writers = Vec::with_capacity(topology.subtopologies.len());
        for (i, sub) in topology.subtopologies.iter().enumerate() {
            let mut known_max = None;
            let mut unknown = 0;
            let mut inputs: BTreeSet<&str> = BTreeSet::new();
            for info in &sub.repartition_source_topics {
                if !inputs.insert(info.name.as_str()) {
                    continue;
                }
                match fixed.get(&info.name) {
                    Some(&c) => known_max = known_max.max(Some(c)),
                    None => {
                        unknown += 1;
                        readers.entry(info.name.as_str()).or_default().push(i);
                    }
                }
            }
            let mut missing_source = false;
            for topic in &sub.source_topics {
                match topics.partitions(topic) {
                    Some(c) => known_max = known_max.max(Some(c)),
                    None => missing_source = true,
                }
            }
            let sinks: BTreeSet<&'a str> = sub
                .repartition_sink_topics
                .iter()
                .map(String::as_str)
                .filter(|t| !fixed.contains_key(*t))
                .collect();
            needed.extend(sinks.iter().copied());
            writers.push(Writer {
                sinks: sinks.into_iter().collect(),
                unknown,
                missing_source,
                known_max,
                ready_pass: 0,
            });
        }
        let mut strict = std::collections::BinaryHeap::new();
        let mut eligible = BTreeSet::new();
        for (i, w) in writers.iter().enumerate() {
            if w.unknown == 0 && !w.missing_source {
                strict.push(std::cmp::Reverse((0, i)));
            }
            if w.known_max.is_some() {
                eligible.insert(i);
            }
        }
        SinkResolution {
            writers,
            readers,
            remaining: needed.len(),
            strict,
            eligible,
        }
    }

    fn run(&mut self, counts: &mut BTreeMap<String, i32>) -> Result<(), InvalidTopology> {
        let mut pass = 0;
        while self.remaining > 0 {
            let mut progress = false;
            while let Some(&std::cmp::Reverse((p, i))) = self.strict.peek() {
                if p != pass {
                    break;
                }
                self.strict.pop();
                progress |= self.fire(i, pass, true, counts);
            }
            pass += 1;
            if progress {
                continue;
            }
            // A strict pass without progress: one lenient pass.
            let mut next = 0;
            while let Some(&i) = self.eligible.range(next..).next() {
                self.eligible.remove(&i);
                next = i + 1;
                progress |= self.fire(i, pass, false, counts);
            }
            if !progress {
                return Err(InvalidTopology::new(
                    "Failed to compute number of partitions for all repartition topics. There may be loops in the topology that cannot be resolved.",
                ));
            }
            pass += 1;
        }
        Ok(())
    }

    /// Writer `i` reached in `pass`: its unresolved sinks take the largest count among its
    /// known inputs (all of them, in a strict pass). Whether it resolved any.
    fn fire(
        &mut self,
        i: usize,
        pass: usize,
        strict: bool,
        counts: &mut BTreeMap<String, i32>,
    ) -> bool {
        let Some(value) = self.writers[i].known_max else {
            return false;
        };
        let sinks = std::mem::take(&mut self.writers[i].sinks);
        let mut resolved = false;
        for sink in sinks {
            if counts.contains_key(sink) {
                continue;
            }
            counts.insert(sink.to_owned(), value);
            self.remaining -= 1;
            resolved = true;
            let Some(readers) = self.readers.get(sink) else {
                continue;
            };
            for &j in readers {
                let known_in = if strict && i < j { pass } else { pass + 1 };
                let w = &mut self.writers[j];
                w.unknown -= 1;
                w.known_max = w.known_max.max(Some(value));
                w.ready_pass = w.ready_pass.max(known_in);
                if w.unknown == 0 && !w.missing_source {
                    self.strict.push(std::cmp::Reverse((w.ready_pass, j)));
                }
                if !w.sinks.is_empty() {
                    self.eligible.insert(j);
                }
            }
        }
        resolved
    }
}
