//! A bound on the memory one decode may materialise.
//!
//! The wire format is compact: a one-byte compact array prefix becomes a 24-byte `Vec`, two
//! bytes of unknown tagged field become a map entry, so a frame of valid Kafka can decode to
//! more than twenty times its size. The server decodes each request under a budget
//! ([`for_frame`]); the generated decoders charge it (through [`charge`]) for every element,
//! string and tagged field they allocate, and fail the decode once it is spent.
//!
//! The budget is a thread-local counter because decoding is synchronous and kafka-protocol's
//! `Decodable::decode` has no room for a context: [`with_limit`] sets it around one decode on
//! the calling thread and restores what was there before. Outside [`with_limit`] nothing is
//! counted (trusted input: our own logs, a broker's responses); the decoders still never
//! reserve more than the input can back.

use std::cell::Cell;

/// Every request may decode to this much, whatever its size: small requests are never refused
/// for their shape (a topology with many empty arrays grows about ten times when decoded).
pub const REQUEST_FLOOR: usize = 16 << 20;

/// Beyond the floor, a request may decode to this many times its own size. Legitimate large
/// requests (Metadata or DeleteTopics naming many topics, OffsetCommit or ListOffsets with many
/// partitions, CreateTopics with replica assignments) grow two to six times; Produce's and
/// tagged fields' bytes are slices of the frame and cost nothing.
pub const REQUEST_MULTIPLE: usize = 8;

/// The most any one request may decode to, whatever `socket.request.max.bytes` allows.
pub const REQUEST_CAP: usize = 1 << 30;

thread_local! {
    /// What is left of the current budget and the limit it started from.
    static BUDGET: Cell<Option<Budget>> = const { Cell::new(None) };
}

#[derive(Debug, Clone, Copy)]
struct Budget {
    left: usize,
    limit: usize,
}

/// The budget for decoding a request of `frame_len` bytes.
pub fn for_frame(frame_len: usize) -> usize {
    frame_len
        .saturating_mul(REQUEST_MULTIPLE)
        .saturating_add(REQUEST_FLOOR)
        .min(REQUEST_CAP)
}

/// A request body decoded under the budget of a frame its size: how the server reads a
/// request it only looks into (to route it) before its handler decodes it. `None` when it does
/// not decode (the handler then answers it as Kafka would).
pub fn decode_request<M: crate::Decodable>(body: &bytes::Bytes, version: i16) -> Option<M> {
    let mut body = body.clone();
    with_limit(for_frame(body.len()), || M::decode(&mut body, version)).ok()
}

/// The decode ran out of budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("decoding needs more than the {limit} bytes of memory allowed for this input")]
pub struct BudgetExceeded {
    pub limit: usize,
}

/// Runs `decode` with at most `limit` bytes to spend; [`charge`] fails once they are spent.
/// The previous budget of this thread is restored afterwards, even on a panic.
pub fn with_limit<T>(limit: usize, decode: impl FnOnce() -> T) -> T {
    struct Restore(Option<Budget>);
    impl Drop for Restore {
        fn drop(&mut self) {
            BUDGET.with(|b| b.set(self.0));
        }
    }
    let _restore = Restore(BUDGET.with(|b| b.replace(Some(Budget { left: limit, limit }))));
    decode()
}

/// Takes `bytes` from the current budget; an error once it is spent. Free outside
/// [`with_limit`].
pub fn charge(bytes: usize) -> Result<(), BudgetExceeded> {
    BUDGET.with(|b| {
        let Some(budget) = b.get() else {
            return Ok(());
        };
        match budget.left.checked_sub(bytes) {
            Some(left) => {
                b.set(Some(Budget { left, ..budget }));
                Ok(())
            }
            None => {
                b.set(Some(Budget { left: 0, ..budget }));
                Err(BudgetExceeded {
                    limit: budget.limit,
                })
            }
        }
    })
}

/// What is left of the current budget (`None` outside [`with_limit`]).
pub fn remaining() -> Option<usize> {
    BUDGET.with(|b| b.get().map(|b| b.left))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_count_down_and_fail_once_spent() {
        with_limit(10, || {
            assert_eq!(charge(4), Ok(()));
            assert_eq!(remaining(), Some(6));
            assert_eq!(charge(7), Err(BudgetExceeded { limit: 10 }));
            assert_eq!(charge(1), Err(BudgetExceeded { limit: 10 }), "stays spent");
        });
        assert_eq!(remaining(), None);
        assert_eq!(charge(usize::MAX), Ok(()), "no budget, no limit");
    }

    #[test]
    fn nested_limits_restore_the_outer_one() {
        with_limit(100, || {
            charge(10).unwrap();
            with_limit(5, || assert!(charge(6).is_err()));
            assert_eq!(remaining(), Some(90));
            assert_eq!(charge(91), Err(BudgetExceeded { limit: 100 }));
        });
    }

    #[test]
    fn a_panic_inside_restores_the_budget() {
        let r = std::panic::catch_unwind(|| with_limit(1, || panic!("boom")));
        assert!(r.is_err());
        assert_eq!(remaining(), None);
    }

    #[test]
    fn the_request_budget_has_a_floor_a_multiple_and_a_cap() {
        assert_eq!(for_frame(0), REQUEST_FLOOR);
        assert_eq!(for_frame(1 << 20), REQUEST_FLOOR + (8 << 20));
        assert_eq!(for_frame(usize::MAX), REQUEST_CAP);
    }
}
