//! Counters for the request path, striped over [`SLOTS`] slots: each thread adds to the slot it
//! was given (round-robin, on its first count), and a scrape sums the slots. The daemon's
//! workers answer the same kind of request at the same moment all the time; one shared atomic
//! per counter made their cores pass its cache line back and forth on every request (about
//! 250 ns a request with two threads, measured), a slot of its own costs a thread a plain
//! uncontended add.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Slots per counter set: more threads than this share slots (and only then contend).
pub(super) const SLOTS: usize = 8;

/// `width` counters, striped.
#[derive(Debug)]
pub(super) struct Striped {
    /// One allocation per slot, so that two slots never share a cache line but at their ends.
    slots: Box<[Box<[AtomicU64]>]>,
}

static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static SLOT: usize = NEXT_SLOT.fetch_add(1, Ordering::Relaxed) % SLOTS;
}

impl Striped {
    pub(super) fn new(width: usize) -> Striped {
        Striped {
            slots: (0..SLOTS)
                .map(|_| (0..width).map(|_| AtomicU64::new(0)).collect())
                .collect(),
        }
    }

    /// The calling thread's slot, to add to (`fetch_add` with `Relaxed`).
    #[inline]
    pub(super) fn here(&self) -> &[AtomicU64] {
        let slot = SLOT.try_with(|s| *s).unwrap_or(0);
        &self.slots[slot % SLOTS]
    }

    /// Adds `n` to counter `index` (ignored past the width).
    #[inline]
    pub(super) fn add(&self, index: usize, n: u64) {
        if let Some(counter) = self.here().get(index) {
            counter.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Counter `index` summed over the slots.
    pub(super) fn get(&self, index: usize) -> u64 {
        self.slots
            .iter()
            .filter_map(|slot| slot.get(index))
            .map(|c| c.load(Ordering::Relaxed))
            .fold(0u64, u64::wrapping_add)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_from_many_threads_add_up() {
        let striped = Striped::new(3);
        std::thread::scope(|s| {
            for _ in 0..(SLOTS + 3) {
                s.spawn(|| {
                    for _ in 0..1000 {
                        striped.add(1, 2);
                    }
                    striped.add(7, 1); // past the width: ignored
                });
            }
        });
        assert_eq!(striped.get(1), 2 * 1000 * (SLOTS as u64 + 3));
        assert_eq!((striped.get(0), striped.get(2), striped.get(7)), (0, 0, 0));
    }
}
