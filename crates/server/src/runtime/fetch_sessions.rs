//! KIP-227 incremental fetch sessions, as Kafka's `FetchManager` / `FetchSession` keep them: a
//! client that sends epoch 0 gets a session id; its later fetches name only the partitions
//! that changed (new offsets, added, or forgotten), and the answer leaves out the partitions
//! with nothing new (no records, same high watermark and log start offset, no error).
//!
//! `session_id` 0 with epoch -1 is a sessionless full fetch (librdkafka only sends these);
//! epoch -1 with a session id closes that session; epoch 0 (re)starts one. A full cache gives
//! no session (id 0: the client goes on with full fetches) unless one can be evicted
//! ([`FetchSessions`]'s `create`). docs/kafka-data-plane-facts.md §4 has Kafka's rules.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use kcoord_wire::ErrorCode;
use uuid::Uuid;

/// Kafka's `FetchMetadata.INITIAL_EPOCH` / `FINAL_EPOCH`.
pub const INITIAL_EPOCH: i32 = 0;
pub const FINAL_EPOCH: i32 = -1;
/// Kafka's `min.incremental.fetch.session.eviction.ms` default.
pub const EVICTION_IDLE_MS: i64 = 120_000;

/// A partition of a fetch, as the request (or the session) gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchPartition {
    /// The name (empty when a v13+ request names an unknown topic id).
    pub topic: String,
    /// All zero before v13.
    pub topic_id: Uuid,
    pub partition: i32,
    pub fetch_offset: i64,
    pub max_bytes: i32,
    pub current_leader_epoch: i32,
}

impl FetchPartition {
    fn key(&self) -> (Uuid, String, i32) {
        (self.topic_id, self.topic.clone(), self.partition)
    }
}

/// What was last sent for a partition of a session.
#[derive(Debug, Clone)]
struct Cached {
    partition: FetchPartition,
    high_watermark: i64,
    last_stable_offset: i64,
    log_start_offset: i64,
}

#[derive(Debug)]
struct Session {
    /// Read in this order; partitions that returned records move to the end, so that each
    /// gets its turn at the front of a full response.
    partitions: Vec<Cached>,
    next_epoch: i32,
    created_ms: i64,
    last_used_ms: i64,
    /// Created by a v13+ fetch (topic ids): later fetches must be too.
    uses_topic_ids: bool,
}

/// How a fetch relates to a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionFetch {
    /// A full fetch of the request's partitions; answer with this session id (0: none).
    Full { session_id: i32 },
    /// An incremental fetch: the session's partitions, with the request's changes applied.
    Incremental {
        session_id: i32,
        partitions: Vec<FetchPartition>,
    },
    /// Answer with this top-level error and no partitions.
    Error(ErrorCode),
}

/// One partition's answer, for deciding whether an incremental response carries it.
#[derive(Debug, Clone, Copy)]
pub struct PartitionOutcome {
    pub has_records: bool,
    pub error: bool,
    pub high_watermark: i64,
    /// Kafka's session sends a partition again when it moved (a transaction ended).
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
}

#[derive(Debug)]
pub struct FetchSessions {
    max_sessions: usize,
    inner: Mutex<HashMap<i32, Session>>,
}

impl FetchSessions {
    pub fn new(max_sessions: usize) -> FetchSessions {
        FetchSessions {
            max_sessions,
            inner: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i32, Session>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Starts a fetch: `partitions` are the request's, `forgotten` its forgotten topics;
    /// `uses_topic_ids` says whether the request is v13+.
    pub fn begin(
        &self,
        session_id: i32,
        epoch: i32,
        uses_topic_ids: bool,
        partitions: &[FetchPartition],
        forgotten: &[(Uuid, String, i32)],
        now_ms: i64,
    ) -> SessionFetch {
        let mut sessions = self.lock();
        match epoch {
            FINAL_EPOCH => {
                sessions.remove(&session_id);
                SessionFetch::Full { session_id: 0 }
            }
            INITIAL_EPOCH => {
                sessions.remove(&session_id);
                let id = self.create(&mut sessions, partitions, uses_topic_ids, now_ms);
                SessionFetch::Full { session_id: id }
            }
            _ => {
                let Some(session) = sessions.get_mut(&session_id) else {
                    return SessionFetch::Error(ErrorCode::FETCH_SESSION_ID_NOT_FOUND);
                };
                if session.next_epoch != epoch {
                    return SessionFetch::Error(ErrorCode::INVALID_FETCH_SESSION_EPOCH);
                }
                if session.uses_topic_ids != uses_topic_ids {
                    return SessionFetch::Error(ErrorCode::FETCH_SESSION_TOPIC_ID_ERROR);
                }
                session.next_epoch = next_epoch(epoch);
                session.last_used_ms = now_ms;
                session
                    .partitions
                    .retain(|c| !forgotten.contains(&c.partition.key()));
                for p in partitions {
                    match session
                        .partitions
                        .iter_mut()
                        .find(|c| c.partition.key() == p.key())
                    {
                        Some(c) => c.partition = p.clone(),
                        None => session.partitions.push(Cached {
                            partition: p.clone(),
                            high_watermark: -1,
                            last_stable_offset: -1,
                            log_start_offset: -1,
                        }),
                    }
                }
                if session.partitions.is_empty() {
                    // Kafka drops a session left without partitions and answers sessionless.
                    sessions.remove(&session_id);
                    return SessionFetch::Full { session_id: 0 };
                }
                SessionFetch::Incremental {
                    session_id,
                    partitions: session
                        .partitions
                        .iter()
                        .map(|c| c.partition.clone())
                        .collect(),
                }
            }
        }
    }

    /// A new session, evicting one if the cache is full (Kafka's `tryEvict`): the least
    /// recently used if idle for [`EVICTION_IDLE_MS`], else the smallest session older than
    /// that with strictly fewer partitions than the new one; when none can go, no session.
    fn create(
        &self,
        sessions: &mut HashMap<i32, Session>,
        partitions: &[FetchPartition],
        uses_topic_ids: bool,
        now_ms: i64,
    ) -> i32 {
        if self.max_sessions == 0 || partitions.is_empty() {
            return 0;
        }
        if sessions.len() >= self.max_sessions {
            let idle = sessions
                .iter()
                .min_by_key(|(_, s)| s.last_used_ms)
                .filter(|(_, s)| now_ms - s.last_used_ms >= EVICTION_IDLE_MS)
                .map(|(id, _)| *id);
            let smaller = || {
                sessions
                    .iter()
                    .filter(|(_, s)| {
                        now_ms - s.created_ms >= EVICTION_IDLE_MS
                            && s.partitions.len() < partitions.len()
                    })
                    .min_by_key(|(id, s)| (s.partitions.len(), **id))
                    .map(|(id, _)| *id)
            };
            match idle.or_else(smaller) {
                Some(id) => {
                    sessions.remove(&id);
                }
                None => return 0,
            }
        }
        let id = loop {
            let id: i32 = rand::random::<i32>() & i32::MAX;
            if id != 0 && !sessions.contains_key(&id) {
                break id;
            }
        };
        sessions.insert(
            id,
            Session {
                partitions: partitions
                    .iter()
                    .map(|p| Cached {
                        partition: p.clone(),
                        high_watermark: -1,
                        last_stable_offset: -1,
                        log_start_offset: -1,
                    })
                    .collect(),
                next_epoch: next_epoch(INITIAL_EPOCH),
                created_ms: now_ms,
                last_used_ms: now_ms,
                uses_topic_ids,
            },
        );
        id
    }

    /// After a fetch of a session: which partitions the answer carries. A full fetch carries
    /// every one (and records what was sent); an incremental one only those with records, an
    /// error, or a high watermark or log start offset other than last sent (Kafka's
    /// `CachedPartition.maybeUpdateResponseData`). `outcomes` follow the partitions given to the
    /// fetch, in order.
    pub fn finish(
        &self,
        session_id: i32,
        incremental: bool,
        outcomes: &[PartitionOutcome],
    ) -> Vec<bool> {
        let mut sessions = self.lock();
        let Some(session) = sessions.get_mut(&session_id) else {
            return vec![true; outcomes.len()];
        };
        let included: Vec<bool> = session
            .partitions
            .iter_mut()
            .zip(outcomes)
            .map(|(cached, o)| {
                let changed = o.has_records
                    || o.error
                    || cached.high_watermark != o.high_watermark
                    || cached.last_stable_offset != o.last_stable_offset
                    || cached.log_start_offset != o.log_start_offset;
                // An error is always sent, and sent again once it is gone.
                cached.high_watermark = if o.error { -1 } else { o.high_watermark };
                cached.last_stable_offset = o.last_stable_offset;
                cached.log_start_offset = o.log_start_offset;
                !incremental || changed
            })
            .collect();
        // Those that returned records go to the back of the line, in order.
        let mut with_records = Vec::new();
        let mut i = 0;
        session.partitions.retain(|c| {
            let moved = outcomes.get(i).is_some_and(|o| o.has_records);
            i += 1;
            if moved {
                with_records.push(c.clone());
            }
            !moved
        });
        session.partitions.extend(with_records);
        included
    }
}

/// Epochs wrap from `i32::MAX` to 1 (Kafka's `FetchMetadata.nextEpoch`).
fn next_epoch(epoch: i32) -> i32 {
    if epoch < 0 {
        FINAL_EPOCH
    } else if epoch == i32::MAX {
        1
    } else {
        epoch + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(partition: i32, offset: i64) -> FetchPartition {
        FetchPartition {
            topic: "t".into(),
            topic_id: Uuid::from_u128(1),
            partition,
            fetch_offset: offset,
            max_bytes: 1 << 20,
            current_leader_epoch: -1,
        }
    }

    fn outcome(hw: i64, records: bool) -> PartitionOutcome {
        PartitionOutcome {
            has_records: records,
            error: false,
            high_watermark: hw,
            last_stable_offset: hw,
            log_start_offset: 0,
        }
    }

    #[test]
    fn a_session_answers_only_what_changed() {
        let s = FetchSessions::new(10);
        let SessionFetch::Full { session_id } = s.begin(0, 0, true, &[p(0, 0), p(1, 0)], &[], 0)
        else {
            panic!()
        };
        assert_ne!(session_id, 0);
        assert_eq!(
            s.finish(session_id, false, &[outcome(0, false), outcome(5, true)]),
            vec![true, true]
        );

        // Epoch 1: partition 1 returned records, so it is now read last; nothing new anywhere.
        let SessionFetch::Incremental { partitions, .. } =
            s.begin(session_id, 1, true, &[p(1, 5)], &[], 1)
        else {
            panic!()
        };
        assert_eq!(partitions, vec![p(0, 0), p(1, 5)]);
        assert_eq!(
            s.finish(session_id, true, &[outcome(0, false), outcome(5, false)]),
            vec![false, false]
        );

        // Epoch 2: partition 0 got data; partition 1 is forgotten.
        let SessionFetch::Incremental { partitions, .. } = s.begin(
            session_id,
            2,
            true,
            &[],
            &[(Uuid::from_u128(1), "t".into(), 1)],
            2,
        ) else {
            panic!()
        };
        assert_eq!(partitions, vec![p(0, 0)]);
        assert_eq!(s.finish(session_id, true, &[outcome(3, true)]), vec![true]);

        assert_eq!(
            s.begin(session_id, 2, true, &[], &[], 3),
            SessionFetch::Error(ErrorCode::INVALID_FETCH_SESSION_EPOCH)
        );
        assert_eq!(
            s.begin(session_id, 3, false, &[], &[], 3),
            SessionFetch::Error(ErrorCode::FETCH_SESSION_TOPIC_ID_ERROR)
        );
        assert_eq!(
            s.begin(7, 1, true, &[], &[], 3),
            SessionFetch::Error(ErrorCode::FETCH_SESSION_ID_NOT_FOUND)
        );
        assert_eq!(
            s.begin(session_id, FINAL_EPOCH, true, &[], &[], 3),
            SessionFetch::Full { session_id: 0 }
        );
        assert!(s.is_empty(), "epoch -1 closes the session");
    }

    #[test]
    fn a_full_cache_evicts_only_idle_sessions() {
        let s = FetchSessions::new(1);
        let SessionFetch::Full { session_id: first } = s.begin(0, 0, true, &[p(0, 0)], &[], 0)
        else {
            panic!()
        };
        assert_eq!(
            s.begin(0, 0, true, &[p(0, 0)], &[], 1_000),
            SessionFetch::Full { session_id: 0 },
            "no room"
        );
        let SessionFetch::Full { session_id: second } =
            s.begin(0, 0, true, &[p(0, 0)], &[], EVICTION_IDLE_MS)
        else {
            panic!()
        };
        assert!(second != 0 && second != first);
        assert_eq!(s.len(), 1);
        // A busy but old session with fewer partitions makes room for a bigger one.
        s.begin(second, 1, true, &[], &[], 2 * EVICTION_IDLE_MS - 1);
        let SessionFetch::Full { session_id: third } =
            s.begin(0, 0, true, &[p(0, 0), p(1, 0)], &[], 2 * EVICTION_IDLE_MS)
        else {
            panic!()
        };
        assert!(third != 0 && third != second);
        assert_eq!(
            FetchSessions::new(0).begin(0, 0, true, &[p(0, 0)], &[], 0),
            SessionFetch::Full { session_id: 0 }
        );
    }

    #[test]
    fn errors_are_always_sent_and_sent_again_once_gone() {
        let s = FetchSessions::new(10);
        let SessionFetch::Full { session_id } = s.begin(0, 0, true, &[p(0, 0)], &[], 0) else {
            panic!()
        };
        s.finish(session_id, false, &[outcome(5, false)]);
        s.begin(session_id, 1, true, &[], &[], 0);
        let err = PartitionOutcome {
            error: true,
            ..outcome(5, false)
        };
        assert_eq!(s.finish(session_id, true, &[err]), vec![true]);
        s.begin(session_id, 2, true, &[], &[], 0);
        assert_eq!(
            s.finish(session_id, true, &[outcome(5, false)]),
            vec![true],
            "the recovered partition is sent"
        );
    }
}
