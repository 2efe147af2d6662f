//! Topics created on a client's behalf, after Kafka's `DefaultAutoTopicCreationManager`:
//! unknown topics named in Metadata (with `auto.create.topics.enable`), and the internal topics
//! a streams group needs (KIP-1071, docs/kafka-coordinator-facts.md §9).
//!
//! A topic already being created is not asked for again (the in-flight set). A streams internal
//! topic whose creation failed is not retried while its error is cached (2 × the heartbeat
//! interval); meanwhile the error is shown to the group's members in the MISSING_INTERNAL_TOPICS
//! status. The lock guards two small maps and is never held across an await; steady-state
//! heartbeats (no topic to create) never take it.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use kcoord_coordinator::configured_topology::CreatableTopic;
use kcoord_wire::messages::create_topics_request::{self as req, CreateTopicsRequest};
use kcoord_wire::messages::create_topics_response::CreatableTopicResult;
use kcoord_wire::ErrorCode;
use tracing::{debug, info, warn};

use crate::runtime::controller::ControllerHandle;
use crate::support::clock;
use crate::support::logging::capped;

/// Kafka's `DEFAULT_TOPIC_ERROR_CACHE_CAPACITY`.
pub const ERROR_CACHE_CAPACITY: usize = 1000;

/// Kafka's `config.requestTimeoutMs()` default, sent as the CreateTopics timeout.
const REQUEST_TIMEOUT_MS: i32 = 30_000;

#[derive(Debug, Default)]
pub struct AutoTopicCreation {
    inner: Mutex<Inner>,
    /// Where streams internal topics are created instead of this node's controller: the
    /// upstream cluster in gateway mode.
    elsewhere: OnceLock<Arc<dyn TopicCreator>>,
}

/// What a streams group's internal topics are created with when not by this node's
/// controller. The error is the reason shown to the group's members.
pub trait TopicCreator: Send + Sync + std::fmt::Debug {
    fn create_topics(&self, request: CreateTopicsRequest) -> CreatedTopics;
}

/// The results of a [`TopicCreator`]'s creation, one per topic asked for.
pub type CreatedTopics =
    Pin<Box<dyn Future<Output = Result<Vec<CreatableTopicResult>, String>> + Send>>;

#[derive(Debug, Default)]
struct Inner {
    inflight: HashSet<String>,
    errors: ErrorCache,
}

/// Kafka's `ExpiringErrorCache`: the last creation error per topic until it expires, at most
/// [`ERROR_CACHE_CAPACITY`] entries (the soonest to expire go first).
#[derive(Debug)]
struct ErrorCache {
    capacity: usize,
    by_topic: HashMap<String, (String, i64)>,
    /// (expiry, topic) of every entry put, stale ones included.
    expiry: BTreeSet<(i64, String)>,
}

impl Default for ErrorCache {
    fn default() -> Self {
        ErrorCache {
            capacity: ERROR_CACHE_CAPACITY,
            by_topic: HashMap::new(),
            expiry: BTreeSet::new(),
        }
    }
}

impl ErrorCache {
    fn put(&mut self, topic: &str, message: String, ttl_ms: i64, now: i64) {
        let expires = now.saturating_add(ttl_ms);
        if let Some((_, old)) = self.by_topic.insert(topic.to_owned(), (message, expires)) {
            self.expiry.remove(&(old, topic.to_owned()));
        }
        self.expiry.insert((expires, topic.to_owned()));
        while let Some((at, name)) = self.expiry.first().cloned() {
            if at > now && self.by_topic.len() <= self.capacity {
                break;
            }
            self.expiry.remove(&(at, name.clone()));
            if self.by_topic.get(&name).is_some_and(|(_, e)| *e == at) {
                self.by_topic.remove(&name);
            }
        }
    }

    fn get(&self, topic: &str, now: i64) -> Option<&str> {
        self.by_topic
            .get(topic)
            .filter(|(_, expires)| *expires > now)
            .map(|(m, _)| m.as_str())
    }
}

impl AutoTopicCreation {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // The maps stay consistent even if a holder panicked: every update is one call.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Metadata auto-creation: asks the controller for the topics not already being created and
    /// waits for it, so that the next Metadata sees them. The caller answers
    /// UNKNOWN_TOPIC_OR_PARTITION for all of them either way, as Kafka does.
    pub async fn create_for_metadata(&self, controller: &ControllerHandle, names: &[String]) {
        let to_create: Vec<String> = {
            let mut inner = self.lock();
            names
                .iter()
                .filter(|n| inner.inflight.insert((*n).clone()))
                .cloned()
                .collect()
        };
        if to_create.is_empty() {
            return;
        }
        info!(topics = to_create.len(), first = %first_name(&to_create), "auto-creating topics requested in Metadata");
        let request = CreateTopicsRequest {
            topics: to_create
                .iter()
                .map(|name| req::CreatableTopic {
                    name: name.clone(),
                    num_partitions: -1,
                    replication_factor: -1,
                    ..Default::default()
                })
                .collect(),
            timeout_ms: REQUEST_TIMEOUT_MS,
            ..Default::default()
        };
        let results = controller.create_topics(request).await;
        {
            let mut inner = self.lock();
            for name in &to_create {
                inner.inflight.remove(name);
            }
        }
        match results {
            Ok(results) => {
                for r in results.iter().filter(|r| r.error_code != 0) {
                    warn!(topic = %capped(&r.name), error = error_name(r.error_code), message = r.error_message.as_deref().unwrap_or(""), "auto topic creation failed");
                }
            }
            Err(e) => {
                warn!(topics = to_create.len(), first = %first_name(&to_create), error = %e, "auto topic creation failed")
            }
        }
    }

    /// Creates streams internal topics with `creator` from now on, not the controller.
    pub fn create_elsewhere(&self, creator: Arc<dyn TopicCreator>) {
        let _ = self.elsewhere.set(creator);
    }

    /// Streams internal topics: starts creating the ones neither in flight nor failed recently,
    /// without waiting (the heartbeat is answered at once; a later heartbeat sees the topics).
    /// Errors are cached for `ttl_ms`.
    pub fn create_streams_internal_topics(
        self: &Arc<Self>,
        controller: &ControllerHandle,
        topics: &[CreatableTopic],
        ttl_ms: i64,
        now: i64,
    ) {
        let to_create: Vec<&CreatableTopic> = {
            let mut guard = self.lock();
            let inner = &mut *guard;
            topics
                .iter()
                .filter(|t| {
                    inner.errors.get(&t.name, now).is_none()
                        && inner.inflight.insert(t.name.clone())
                })
                .collect()
        };
        if to_create.is_empty() {
            return;
        }
        let names: Vec<String> = to_create.iter().map(|t| t.name.clone()).collect();
        let request = internal_topics_request(&to_create);
        info!(topics = names.len(), first = %first_name(&names), "creating streams internal topics");
        let this = Arc::clone(self);
        let controller = controller.clone();
        tokio::spawn(async move {
            let results = match this.elsewhere.get() {
                Some(creator) => creator.create_topics(request).await,
                None => controller
                    .create_topics(request)
                    .await
                    .map_err(|e| e.to_string()),
            };
            let now = clock::now_ms();
            let mut inner = this.lock();
            for name in &names {
                inner.inflight.remove(name);
            }
            match results {
                Ok(results) => {
                    for r in results.iter().filter(|r| r.error_code != 0) {
                        // Kafka falls back to the code's default message.
                        let message = r
                            .error_message
                            .clone()
                            .filter(|m| !m.is_empty())
                            .unwrap_or_else(|| default_message(r.error_code));
                        warn!(topic = %capped(&r.name), error = error_name(r.error_code), %message, "streams internal topic creation failed");
                        inner.errors.put(&r.name, message, ttl_ms, now);
                    }
                    debug!(topics = names.len(), "streams internal topic creation done");
                }
                Err(e) => {
                    warn!(topics = names.len(), first = %first_name(&names), error = %e, "streams internal topic creation failed");
                    for name in &names {
                        inner.errors.put(name, e.to_string(), ttl_ms, now);
                    }
                }
            }
        });
    }

    /// The cached creation errors of `topics`, by topic name.
    pub fn creation_errors<'a>(
        &self,
        topics: impl IntoIterator<Item = &'a str>,
        now: i64,
    ) -> Vec<(String, String)> {
        let inner = self.lock();
        let mut errors: Vec<(String, String)> = topics
            .into_iter()
            .filter_map(|t| {
                inner
                    .errors
                    .get(t, now)
                    .map(|m| (t.to_owned(), m.to_owned()))
            })
            .collect();
        errors.sort();
        errors.dedup();
        errors
    }

    #[cfg(test)]
    pub(crate) fn cache_error(&self, topic: &str, message: &str, ttl_ms: i64, now: i64) {
        self.lock()
            .errors
            .put(topic, message.to_owned(), ttl_ms, now);
    }
}

/// The CreateTopics request of a streams group's internal topics, with their settings.
fn internal_topics_request(to_create: &[&CreatableTopic]) -> CreateTopicsRequest {
    CreateTopicsRequest {
        topics: to_create
            .iter()
            .map(|t| req::CreatableTopic {
                name: t.name.clone(),
                num_partitions: t.partitions,
                replication_factor: t.replication_factor,
                configs: t
                    .configs
                    .iter()
                    .map(|(k, v)| req::CreatableTopicConfig {
                        name: k.clone(),
                        value: Some(v.clone()),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        timeout_ms: REQUEST_TIMEOUT_MS,
        ..Default::default()
    }
}

fn error_name(code: i16) -> &'static str {
    ErrorCode::from_code(code).map_or("UNKNOWN", ErrorCode::name)
}

fn default_message(code: i16) -> String {
    ErrorCode::from_code(code)
        .map_or("Unknown error.", ErrorCode::message)
        .to_owned()
}

/// Kafka's suffix to the MISSING_INTERNAL_TOPICS detail: `"; Creation failed: t1 (msg), t2
/// (msg)[ and N more]."`, at most three errors spelled out.
pub fn creation_failed_suffix(errors: &[(String, String)]) -> Option<String> {
    const MAX_ERRORS_TO_INCLUDE: usize = 3;
    if errors.is_empty() {
        return None;
    }
    let listed: Vec<String> = errors
        .iter()
        .take(MAX_ERRORS_TO_INCLUDE)
        .map(|(topic, error)| format!("{topic} ({error})"))
        .collect();
    let mut details = listed.join(", ");
    if errors.len() > MAX_ERRORS_TO_INCLUDE {
        details.push_str(&format!(
            " and {} more",
            errors.len() - MAX_ERRORS_TO_INCLUDE
        ));
    }
    Some(format!("; Creation failed: {details}."))
}

/// The first of `names`, capped, for a log line that counts the rest: a request may name
/// thousands of topics, a log line should not.
fn first_name(names: &[String]) -> crate::support::logging::Capped<'_> {
    capped(names.first().map_or("", String::as_str))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_expire_and_the_cache_is_bounded() {
        let mut cache = ErrorCache {
            capacity: 2,
            ..Default::default()
        };
        cache.put("a", "ea".into(), 100, 1000);
        assert_eq!(cache.get("a", 1099), Some("ea"));
        assert_eq!(cache.get("a", 1100), None);
        cache.put("b", "eb".into(), 500, 1000);
        cache.put("c", "ec".into(), 500, 1001);
        // Over capacity: the soonest to expire ("a") went first.
        assert_eq!(cache.get("a", 1050), None);
        assert_eq!(
            (cache.get("b", 1050), cache.get("c", 1050)),
            (Some("eb"), Some("ec"))
        );
        // A newer error replaces the old one and its expiry.
        cache.put("b", "eb2".into(), 1000, 1200);
        assert_eq!(cache.get("b", 1600), Some("eb2"));
        assert!(cache.by_topic.len() <= 2);
    }

    #[test]
    fn creation_failed_suffix_is_kafkas() {
        let e = |t: &str, m: &str| (t.to_owned(), m.to_owned());
        assert_eq!(creation_failed_suffix(&[]), None);
        assert_eq!(
            creation_failed_suffix(&[e("t1", "boom")]).as_deref(),
            Some("; Creation failed: t1 (boom).")
        );
        assert_eq!(
            creation_failed_suffix(&[
                e("a", "1"),
                e("b", "2"),
                e("c", "3"),
                e("d", "4"),
                e("e", "5")
            ])
            .as_deref(),
            Some("; Creation failed: a (1), b (2), c (3) and 2 more.")
        );
    }

    #[test]
    fn creation_errors_are_sorted_and_unexpired() {
        let auto = AutoTopicCreation::default();
        auto.cache_error("z", "late", 1000, 0);
        auto.cache_error("a", "early", 1000, 0);
        auto.cache_error("gone", "old", 10, 0);
        assert_eq!(
            auto.creation_errors(["z", "a", "gone", "none"], 500),
            vec![
                ("a".to_owned(), "early".to_owned()),
                ("z".to_owned(), "late".to_owned())
            ]
        );
    }
}
