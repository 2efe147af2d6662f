//! What the controller logs about CreateTopics and DeleteTopics results.
//!
//! Every topic created or deleted gets its own line, as Kafka's controller logs them. Refusals
//! and validate-only answers do not: one request can name hundreds of thousands of bad topics,
//! so they are summed up in one line per request (counts by error, the first name, capped).

use std::collections::BTreeMap;

use kcoord_wire::ErrorCode;
use tracing::info;

use crate::support::logging::capped;

/// One topic's result, as the two APIs report it.
pub struct TopicOutcome<'a> {
    pub name: &'a str,
    pub topic_id: uuid::Uuid,
    pub error_code: i16,
    pub message: Option<&'a str>,
    /// Partitions and replication factor of a created topic.
    pub layout: Option<(i32, i16)>,
}

/// Logs the topics `api` changed one by one, and everything else it answered in one line.
pub fn log_topic_outcomes<'a>(
    api: &'static str,
    validate_only: bool,
    outcomes: impl IntoIterator<Item = TopicOutcome<'a>>,
) {
    let mut not_changed = Summary::default();
    for outcome in outcomes {
        if outcome.error_code == ErrorCode::NONE.code() && !validate_only {
            let (partitions, replication_factor) = outcome.layout.unzip();
            info!(
                topic = %capped(outcome.name),
                topic_id = %outcome.topic_id,
                partitions,
                replication_factor,
                "{api}"
            );
        } else {
            not_changed.add(&outcome);
        }
    }
    not_changed.log(api, validate_only);
}

#[derive(Default)]
struct Summary {
    by_error: BTreeMap<&'static str, usize>,
    first: Option<(String, String)>,
}

impl Summary {
    fn add(&mut self, outcome: &TopicOutcome<'_>) {
        let error = ErrorCode::from_code(outcome.error_code).map_or("UNKNOWN", ErrorCode::name);
        *self.by_error.entry(error).or_default() += 1;
        if self.first.is_none() {
            self.first = Some((
                capped(outcome.name).to_string(),
                capped(outcome.message.unwrap_or("")).to_string(),
            ));
        }
    }

    fn log(self, api: &'static str, validate_only: bool) {
        let Some((first_topic, first_message)) = self.first else {
            return;
        };
        let topics: usize = self.by_error.values().sum();
        let outcomes = self
            .by_error
            .iter()
            .map(|(error, n)| format!("{error}:{n}"))
            .collect::<Vec<_>>()
            .join(",");
        info!(
            topics,
            outcomes = %outcomes,
            validate_only,
            first_topic = %first_topic,
            first_message = %first_message,
            "{api}: topics not changed"
        );
    }
}
