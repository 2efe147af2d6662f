//! `max.connections`, counted across all listeners.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[derive(Debug, Clone)]
pub(crate) struct ConnectionLimiter {
    open: Arc<AtomicUsize>,
    max: usize,
}

/// One open connection; dropping it frees the slot.
#[derive(Debug)]
pub(crate) struct ConnectionPermit {
    open: Arc<AtomicUsize>,
}

impl ConnectionLimiter {
    pub(crate) fn new(max: usize) -> Self {
        ConnectionLimiter {
            open: Arc::new(AtomicUsize::new(0)),
            max,
        }
    }

    pub(crate) fn try_acquire(&self) -> Option<ConnectionPermit> {
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |open| {
                (open < self.max).then_some(open + 1)
            })
            .ok()
            .map(|_| ConnectionPermit {
                open: Arc::clone(&self.open),
            })
    }

    pub(crate) fn max(&self) -> usize {
        self.max
    }

    #[cfg(test)]
    pub(crate) fn open(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }
}

impl Drop for ConnectionPermit {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_and_frees_slots() {
        let limiter = ConnectionLimiter::new(2);
        let a = limiter.try_acquire().unwrap();
        let b = limiter.clone().try_acquire().unwrap();
        assert!(limiter.try_acquire().is_none());
        assert_eq!(limiter.open(), 2);
        drop(a);
        let c = limiter.try_acquire().unwrap();
        assert!(limiter.try_acquire().is_none());
        drop((b, c));
        assert_eq!(limiter.open(), 0);
    }

    #[test]
    fn zero_allows_nothing() {
        assert!(ConnectionLimiter::new(0).try_acquire().is_none());
    }
}
