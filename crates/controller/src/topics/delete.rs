//! DeleteTopics, all versions: names (`TopicNames` before v6, `Topics[].Name` from v6) and ids
//! (v6), with Kafka's duplicate and ambiguity checks.

use std::collections::HashSet;

use kcoord_metadata::{Record, TopicsImage};
use kcoord_wire::messages::delete_topics_request::DeleteTopicState;
use kcoord_wire::messages::delete_topics_response::DeletableTopicResult;
use kcoord_wire::messages::DeleteTopicsRequest;
use kcoord_wire::records::RemoveTopicRecord;
use kcoord_wire::ErrorCode;
use uuid::Uuid;

use super::{error, split_duplicates, Decision, TopicError};

/// What the principal of a DeleteTopics may do to each topic, decided by the caller (which
/// knows the principal) before the controller decides. Kafka's `ControllerApis.deleteTopics`:
/// DELETE on the cluster allows everything; without it, DESCRIBE and DELETE on each topic.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TopicAccess {
    #[default]
    All,
    /// The topic names the principal may DESCRIBE and may DELETE; any other name may neither.
    Topics {
        describable: HashSet<String>,
        deletable: HashSet<String>,
    },
}

impl TopicAccess {
    fn describe(&self, name: &str) -> bool {
        match self {
            TopicAccess::All => true,
            TopicAccess::Topics { describable, .. } => describable.contains(name),
        }
    }

    fn delete(&self, name: &str) -> bool {
        match self {
            TopicAccess::All => true,
            TopicAccess::Topics { deletable, .. } => deletable.contains(name),
        }
    }
}

/// DeleteTopics with every topic allowed (see [`delete_topics_as`]).
pub fn delete_topics(
    image: &TopicsImage,
    request: &DeleteTopicsRequest,
) -> Decision<DeletableTopicResult> {
    delete_topics_as(image, request, &TopicAccess::All)
}

/// DeleteTopics as Kafka's controller decides it. Authorization (`access`) comes after the
/// request's own checks and after the ids are resolved (an unknown id is UNKNOWN_TOPIC_ID
/// whoever asks: ids are not secret): a topic named by id that may not be deleted is
/// TOPIC_AUTHORIZATION_FAILED, its name shown only if it may be described; a topic named by name
/// that may not be described is TOPIC_AUTHORIZATION_FAILED before its existence is looked at,
/// and one that exists but may not be deleted is TOPIC_AUTHORIZATION_FAILED too.
pub fn delete_topics_as(
    image: &TopicsImage,
    request: &DeleteTopicsRequest,
    access: &TopicAccess,
) -> Decision<DeletableTopicResult> {
    let mut results: Vec<DeletableTopicResult> =
        request.topics.iter().filter_map(malformed_state).collect();
    let (names, duplicate_names) = split_duplicates(requested_names(request));
    let (ids, duplicate_ids) = split_duplicates(requested_ids(request));
    for name in duplicate_names {
        results.push(failed(
            Some(name),
            Uuid::nil(),
            error(ErrorCode::INVALID_REQUEST, "Duplicate topic name."),
        ));
    }
    for id in &duplicate_ids {
        results.push(failed(
            None,
            *id,
            error(ErrorCode::INVALID_REQUEST, "Duplicate topic id."),
        ));
    }

    let mut deletion = Deletion {
        image,
        access,
        results,
        duplicate_ids: duplicate_ids.into_iter().collect(),
        to_delete: Vec::new(),
        deleting: HashSet::new(),
    };
    for id in ids {
        deletion.resolve_id(id);
    }
    for name in names {
        deletion.resolve_name(name);
    }
    deletion.decide()
}

/// The answer to a `Topics[]` entry that names neither a name nor an id, or both.
fn malformed_state(topic: &DeleteTopicState) -> Option<DeletableTopicResult> {
    match (&topic.name, topic.topic_id.is_nil()) {
        (None, true) => Some(failed(
            None,
            Uuid::nil(),
            error(
                ErrorCode::INVALID_REQUEST,
                "Neither topic name nor id were specified.",
            ),
        )),
        (Some(name), false) => Some(failed(
            Some(name),
            topic.topic_id,
            error(
                ErrorCode::INVALID_REQUEST,
                "You may not specify both topic name and topic id.",
            ),
        )),
        _ => None,
    }
}

/// The topics named by name: `TopicNames` (before v6), then the `Topics[]` entries without an id.
fn requested_names(request: &DeleteTopicsRequest) -> impl Iterator<Item = &str> {
    request.topic_names.iter().map(String::as_str).chain(
        request
            .topics
            .iter()
            .filter(|t| t.topic_id.is_nil())
            .filter_map(|t| t.name.as_deref()),
    )
}

/// The topics named by id alone.
fn requested_ids(request: &DeleteTopicsRequest) -> impl Iterator<Item = Uuid> + '_ {
    request
        .topics
        .iter()
        .filter(|t| t.name.is_none() && !t.topic_id.is_nil())
        .map(|t| t.topic_id)
}

fn failed(name: Option<&str>, id: Uuid, (code, message): TopicError) -> DeletableTopicResult {
    DeletableTopicResult {
        name: name.map(str::to_owned),
        topic_id: id,
        error_code: code.code(),
        error_message: message,
        ..Default::default()
    }
}

/// The error `code` with Kafka's own message for it.
fn error_with_default_message(code: ErrorCode) -> TopicError {
    (code, Some(code.message().to_owned()))
}

/// A DeleteTopics while its ids and names are resolved to topics, one after another.
struct Deletion<'a> {
    image: &'a TopicsImage,
    access: &'a TopicAccess,
    results: Vec<DeletableTopicResult>,
    /// Ids given twice, or under a name as well: none of them is deleted.
    duplicate_ids: HashSet<Uuid>,
    /// (id, name) of every topic to delete, in the order they were resolved; `deleting` holds the
    /// ids still to delete (an id later found under a name too is taken out of it).
    to_delete: Vec<(Uuid, String)>,
    deleting: HashSet<Uuid>,
}

impl Deletion<'_> {
    fn refuse(&mut self, name: Option<&str>, id: Uuid, e: TopicError) {
        self.results.push(failed(name, id, e));
    }

    fn resolve_id(&mut self, id: Uuid) {
        match self.image.get_by_id(&id) {
            Some(t) if !self.access.delete(&t.name) => {
                let name = self.access.describe(&t.name).then_some(t.name.as_str());
                let denied = error_with_default_message(ErrorCode::TOPIC_AUTHORIZATION_FAILED);
                self.refuse(name, id, denied);
            }
            Some(t) => {
                self.deleting.insert(id);
                self.to_delete.push((id, t.name.clone()));
            }
            None => self.refuse(
                None,
                id,
                error_with_default_message(ErrorCode::UNKNOWN_TOPIC_ID),
            ),
        }
    }

    fn resolve_name(&mut self, name: &str) {
        let denied = || error_with_default_message(ErrorCode::TOPIC_AUTHORIZATION_FAILED);
        if !self.access.describe(name) {
            return self.refuse(Some(name), Uuid::nil(), denied());
        }
        let Some(topic) = self.image.get(name) else {
            let unknown = error_with_default_message(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
            return self.refuse(Some(name), Uuid::nil(), unknown);
        };
        let id = topic.id;
        if !self.access.delete(name) {
            return self.refuse(Some(name), Uuid::nil(), denied());
        }
        if self.duplicate_ids.contains(&id) || self.deleting.remove(&id) {
            // A name and an id of the same topic: neither is deleted.
            self.duplicate_ids.insert(id);
            self.refuse(
                Some(name),
                id,
                error(
                    ErrorCode::INVALID_REQUEST,
                    "The provided topic name maps to an ID that was already supplied.",
                ),
            );
        } else {
            self.deleting.insert(id);
            self.to_delete.push((id, name.to_owned()));
        }
    }

    /// A RemoveTopicRecord and a success for every topic still to delete, after the refusals.
    fn decide(self) -> Decision<DeletableTopicResult> {
        let Deletion {
            mut results,
            mut to_delete,
            deleting,
            ..
        } = self;
        to_delete.retain(|(id, _)| deleting.contains(id));
        let mut records = Vec::with_capacity(to_delete.len());
        for (id, name) in to_delete {
            records.push(Record::RemoveTopic(RemoveTopicRecord {
                topic_id: id,
                ..Default::default()
            }));
            results.push(DeletableTopicResult {
                name: Some(name),
                topic_id: id,
                error_code: ErrorCode::NONE.code(),
                error_message: None,
                ..Default::default()
            });
        }
        Decision { records, results }
    }
}
