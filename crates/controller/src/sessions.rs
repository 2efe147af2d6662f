//! Broker sessions: what Kafka's `BrokerHeartbeatTracker` and `BrokerHeartbeatManager` keep
//! only in memory. The last contact of each (broker id, epoch), which decides whether a
//! session is live, and which brokers are in controlled shutdown. Everything lasting lives in
//! the log; a restarted controller starts every unfenced broker's session afresh.
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Default, Clone)]
pub(crate) struct Sessions {
    timeout_ms: i64,
    /// (broker id, broker epoch) -> time of the last heartbeat, in ms.
    contacts: BTreeMap<(i32, i64), i64>,
    /// Brokers that entered controlled shutdown and still lead partitions.
    controlled_shutdown: BTreeSet<i32>,
}

impl Sessions {
    pub(crate) fn new(timeout_ms: i64) -> Self {
        Sessions {
            timeout_ms,
            ..Default::default()
        }
    }

    /// Kafka's `isExpired`: strictly more than the timeout has passed.
    fn is_expired(&self, contact: i64, now: i64) -> bool {
        now > contact && contact.saturating_add(self.timeout_ms) < now
    }

    pub(crate) fn touch(&mut self, broker_id: i32, epoch: i64, now: i64) {
        self.contacts.insert((broker_id, epoch), now);
    }

    /// Kafka's `hasValidSession`: a heartbeat for this epoch within the timeout.
    pub(crate) fn has_valid_session(&self, broker_id: i32, epoch: i64, now: i64) -> bool {
        self.contacts
            .get(&(broker_id, epoch))
            .is_some_and(|contact| !self.is_expired(*contact, now))
    }

    /// Forgets every session of `broker_id` (a new incarnation registered, or it was
    /// unregistered).
    pub(crate) fn remove(&mut self, broker_id: i32) {
        self.contacts.retain(|(id, _), _| *id != broker_id);
        self.controlled_shutdown.remove(&broker_id);
    }

    /// The sessions that expired at `now`, oldest contact first.
    pub(crate) fn expired(&self, now: i64) -> Vec<(i32, i64)> {
        let mut expired: Vec<((i32, i64), i64)> = self
            .contacts
            .iter()
            .filter(|(_, contact)| self.is_expired(**contact, now))
            .map(|(k, v)| (*k, *v))
            .collect();
        expired.sort_by_key(|(key, contact)| (*contact, *key));
        expired.into_iter().map(|(key, _)| key).collect()
    }

    /// Forgets the session of (`broker_id`, `epoch`).
    pub(crate) fn end(&mut self, broker_id: i32, epoch: i64) {
        self.contacts.remove(&(broker_id, epoch));
    }

    /// The first time at which some session will have expired.
    pub(crate) fn next_deadline(&self) -> Option<i64> {
        self.contacts
            .values()
            .min()
            .map(|contact| contact.saturating_add(self.timeout_ms).saturating_add(1))
    }

    pub(crate) fn in_controlled_shutdown(&self, broker_id: i32) -> bool {
        self.controlled_shutdown.contains(&broker_id)
    }

    pub(crate) fn set_controlled_shutdown(&mut self, broker_id: i32, on: bool) {
        if on {
            self.controlled_shutdown.insert(broker_id);
        } else {
            self.controlled_shutdown.remove(&broker_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_lasts_exactly_the_timeout() {
        let mut s = Sessions::new(9_000);
        s.touch(1, 5, 1_000);
        assert!(
            s.has_valid_session(1, 5, 10_000),
            "9000 ms later it is still live (Kafka: expired only after more than the timeout)"
        );
        assert!(!s.has_valid_session(1, 5, 10_001));
        assert!(
            !s.has_valid_session(1, 4, 1_000),
            "another epoch has no session"
        );
        assert_eq!(s.next_deadline(), Some(10_001));
        assert!(s.expired(10_000).is_empty());
        assert_eq!(s.expired(10_001), vec![(1, 5)]);
        assert_eq!(s.expired(10_001), vec![(1, 5)], "until it is ended");
        s.end(1, 5);
        assert_eq!(s.next_deadline(), None);
    }

    #[test]
    fn expired_sessions_come_oldest_first_and_remove_forgets_a_broker() {
        let mut s = Sessions::new(10);
        s.touch(2, 1, 5);
        s.touch(1, 1, 3);
        s.touch(3, 1, 100);
        assert_eq!(s.expired(50), vec![(1, 1), (2, 1)]);
        s.set_controlled_shutdown(3, true);
        assert!(s.in_controlled_shutdown(3));
        s.remove(3);
        assert!(!s.in_controlled_shutdown(3));
        assert!(!s.has_valid_session(3, 1, 100));
    }
}
