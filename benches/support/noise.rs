//! Whether a set of measurements stands out from another (an attacked phase's p99 from the quiet
//! phases'), by ranks rather than by one ratio: on a shared two-core machine a single 20 s
//! phase's p99 moves by a third with nothing changed, so "within noise" is asked of several
//! phases of each kind at once.
#![allow(dead_code)] // each bench uses its own part

/// How `measured` compares with `baseline`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Comparison {
    pub median: f64,
    pub baseline_median: f64,
    /// The Mann-Whitney statistic as a share of the pairs: the chance that a value of
    /// `measured` exceeds one of `baseline` (ties count half). 0.5 is no difference.
    pub above_share: f64,
    /// One-sided permutation p-value of "`measured` is higher": the share of relabellings of
    /// the pooled values whose statistic is at least the one observed.
    pub p_value: f64,
}

/// Relabellings drawn when they are too many to enumerate (a fixed seed: the same inputs give
/// the same p-value).
const SHUFFLES: usize = 20_000;

pub fn compare(measured: &[f64], baseline: &[f64]) -> Option<Comparison> {
    if measured.is_empty() || baseline.is_empty() {
        return None;
    }
    let observed = above(measured, baseline);
    let mut pooled: Vec<f64> = measured.iter().chain(baseline).copied().collect();
    let mut rng = 0x9E37_79B9_7F4A_7C15_u64;
    let mut at_least = 0;
    for _ in 0..SHUFFLES {
        shuffle(&mut pooled, &mut rng);
        let (a, b) = pooled.split_at(measured.len());
        if above(a, b) >= observed {
            at_least += 1;
        }
    }
    let pairs = (measured.len() * baseline.len()) as f64;
    Some(Comparison {
        median: median(measured),
        baseline_median: median(baseline),
        above_share: observed / pairs,
        p_value: at_least as f64 / SHUFFLES as f64,
    })
}

/// Pairs `(x, y)` with `x > y`, ties counting half.
fn above(xs: &[f64], ys: &[f64]) -> f64 {
    let mut u = 0.0;
    for x in xs {
        for y in ys {
            if x > y {
                u += 1.0;
            } else if x == y {
                u += 0.5;
            }
        }
    }
    u
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// Fisher-Yates with xorshift64.
fn shuffle(values: &mut [f64], state: &mut u64) {
    for i in (1..values.len()).rev() {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        let j = (*state % (i as u64 + 1)) as usize;
        values.swap(i, j);
    }
}
