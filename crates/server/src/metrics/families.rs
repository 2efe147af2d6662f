//! Metric families written by hand, for the collectors whose counts live in [`super::striped`]
//! counters rather than in the `prometheus` crate's own types.

use prometheus::proto::{Bucket, Counter, Histogram, LabelPair, Metric, MetricFamily, MetricType};

/// A family of `kind` named `name` with these metrics.
pub(super) fn family(
    name: &str,
    help: &str,
    kind: MetricType,
    metrics: Vec<Metric>,
) -> MetricFamily {
    let mut family = MetricFamily::default();
    family.set_name(name.to_owned());
    family.set_help(help.to_owned());
    family.set_field_type(kind);
    family.set_metric(metrics);
    family
}

/// A counter sample with `labels`.
pub(super) fn counter(labels: &[(&str, &str)], value: u64) -> Metric {
    let mut counter = Counter::default();
    counter.set_value(value as f64);
    let mut metric = Metric::from_label(label_pairs(labels));
    metric.set_counter(counter);
    metric
}

/// A histogram sample with `labels`: `counts[i]` observations fell in bucket `i` (at most
/// `bounds[i]`, the last one past every bound), summing to `sum`.
pub(super) fn histogram(
    labels: &[(&str, &str)],
    bounds: &[f64],
    counts: &[u64],
    sum: f64,
) -> Metric {
    let mut cumulative = 0u64;
    let buckets = bounds
        .iter()
        .zip(counts)
        .map(|(bound, count)| {
            cumulative += count;
            let mut bucket = Bucket::default();
            bucket.set_upper_bound(*bound);
            bucket.set_cumulative_count(cumulative);
            bucket
        })
        .collect();
    let mut histogram = Histogram::default();
    histogram.set_bucket(buckets);
    histogram.set_sample_count(counts.iter().sum());
    histogram.set_sample_sum(sum);
    let mut metric = Metric::from_label(label_pairs(labels));
    metric.set_histogram(histogram);
    metric
}

fn label_pairs(labels: &[(&str, &str)]) -> Vec<LabelPair> {
    labels
        .iter()
        .map(|(name, value)| {
            let mut pair = LabelPair::default();
            pair.set_name((*name).to_owned());
            pair.set_value((*value).to_owned());
            pair
        })
        .collect()
}
