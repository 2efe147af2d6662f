//! DeleteTopics, all versions: names (`TopicNames` before v6, `Topics[].Name` from v6) and ids
//! (v6), with Kafka's duplicate and ambiguity checks.

use std::collections::HashSet;

use kcoord_metadata::{Record, TopicsImage};
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
    let denied = || {
        (
            ErrorCode::TOPIC_AUTHORIZATION_FAILED,
            Some(ErrorCode::TOPIC_AUTHORIZATION_FAILED.message().to_owned()),
        )
    };
    let mut results = Vec::new();
    let respond =
        |results: &mut Vec<DeletableTopicResult>, name: Option<&str>, id: Uuid, e: TopicError| {
            results.push(DeletableTopicResult {
                name: name.map(str::to_owned),
                topic_id: id,
                error_code: e.0.code(),
                error_message: e.1,
                ..Default::default()
            });
        };

    for t in &request.topics {
        match (&t.name, t.topic_id.is_nil()) {
            (None, true) => respond(
                &mut results,
                None,
                Uuid::nil(),
                error(
                    ErrorCode::INVALID_REQUEST,
                    "Neither topic name nor id were specified.",
                ),
            ),
            (Some(name), false) => respond(
                &mut results,
                Some(name),
                t.topic_id,
                error(
                    ErrorCode::INVALID_REQUEST,
                    "You may not specify both topic name and topic id.",
                ),
            ),
            _ => {}
        }
    }
    let (names, duplicate_names) = split_duplicates(
        request.topic_names.iter().map(String::as_str).chain(
            request
                .topics
                .iter()
                .filter(|t| t.topic_id.is_nil())
                .filter_map(|t| t.name.as_deref()),
        ),
    );
    let (ids, duplicate_ids) = split_duplicates(
        request
            .topics
            .iter()
            .filter(|t| t.name.is_none() && !t.topic_id.is_nil())
            .map(|t| t.topic_id),
    );
    for name in duplicate_names {
        respond(
            &mut results,
            Some(name),
            Uuid::nil(),
            error(ErrorCode::INVALID_REQUEST, "Duplicate topic name."),
        );
    }
    for id in &duplicate_ids {
        respond(
            &mut results,
            None,
            *id,
            error(ErrorCode::INVALID_REQUEST, "Duplicate topic id."),
        );
    }

    let mut duplicate_ids: HashSet<Uuid> = duplicate_ids.into_iter().collect();

    // (id, name) of every topic to delete, in the order they were resolved; `deleting` holds the
    // ids still to delete (an id later found under a name too is taken out of it).
    let mut to_delete: Vec<(Uuid, String)> = Vec::new();
    let mut deleting: HashSet<Uuid> = HashSet::new();
    for id in ids {
        match image.get_by_id(&id) {
            Some(t) if !access.delete(&t.name) => {
                let name = access.describe(&t.name).then_some(t.name.as_str());
                respond(&mut results, name, id, denied());
            }
            Some(t) => {
                deleting.insert(id);
                to_delete.push((id, t.name.clone()));
            }
            None => respond(
                &mut results,
                None,
                id,
                (
                    ErrorCode::UNKNOWN_TOPIC_ID,
                    Some(ErrorCode::UNKNOWN_TOPIC_ID.message().to_owned()),
                ),
            ),
        }
    }
    for name in names {
        if !access.describe(name) {
            respond(&mut results, Some(name), Uuid::nil(), denied());
            continue;
        }
        let Some(topic) = image.get(name) else {
            let code = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION;
            respond(
                &mut results,
                Some(name),
                Uuid::nil(),
                (code, Some(code.message().to_owned())),
            );
            continue;
        };
        let id = topic.id;
        if !access.delete(name) {
            respond(&mut results, Some(name), Uuid::nil(), denied());
            continue;
        }
        if duplicate_ids.contains(&id) || deleting.remove(&id) {
            // A name and an id of the same topic: neither is deleted.
            duplicate_ids.insert(id);
            respond(
                &mut results,
                Some(name),
                id,
                error(
                    ErrorCode::INVALID_REQUEST,
                    "The provided topic name maps to an ID that was already supplied.",
                ),
            );
        } else {
            deleting.insert(id);
            to_delete.push((id, name.to_owned()));
        }
    }
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
