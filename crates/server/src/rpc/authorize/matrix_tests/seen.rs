//! What the matrix's rows read from a response: the part that shows the decision, as text.

use kcoord_wire::messages::*;
use kcoord_wire::ErrorCode;

use super::super::AclOperation;

/// A code by Kafka's name.
pub fn code(code: i16) -> String {
    ErrorCode::from_code(code).map_or_else(|| format!("code {code}"), |e| e.name().to_owned())
}

/// A code, and the message when the code is an authorization failure: Kafka's refusals name
/// the API and the operation ("Request … needs ALTER permission."), the principal left out
/// here so that every refused principal's answer reads the same.
pub fn refusal(c: i16, message: Option<&str>) -> String {
    let refused = [
        ErrorCode::TOPIC_AUTHORIZATION_FAILED,
        ErrorCode::GROUP_AUTHORIZATION_FAILED,
        ErrorCode::CLUSTER_AUTHORIZATION_FAILED,
        ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ]
    .iter()
    .any(|e| e.code() == c);
    match message {
        Some(m) if refused => {
            let m = match (m.find(" from "), m.find(" needs ")) {
                (Some(from), Some(needs)) if from < needs => {
                    format!("{}{}", &m[..from], &m[needs..])
                }
                _ => m.to_owned(),
            };
            format!("{}: {m}", code(c))
        }
        _ => code(c),
    }
}

/// Whether `name` is among `names` (NONE at the top), or the top-level error.
pub fn listed<'a>(c: i16, mut names: impl Iterator<Item = &'a str>, name: &str) -> String {
    if c != 0 {
        code(c)
    } else if names.any(|n| n == name) {
        format!("{name} listed")
    } else {
        format!("{name} left out")
    }
}

/// "NONE configs NONE": the topic's result and its TopicConfigErrorCode.
pub fn created(r: &CreateTopicsResponse) -> String {
    let t = &r.topics[0];
    format!(
        "{} configs {}",
        refusal(t.error_code, t.error_message.as_deref()),
        code(t.topic_config_error_code)
    )
}

pub fn offset_deleted(r: &OffsetDeleteResponse) -> String {
    if r.error_code != 0 {
        code(r.error_code)
    } else {
        code(r.topics[0].partitions[0].error_code)
    }
}

/// A heartbeat's code, and the principal's part of a MISSING_INTERNAL_TOPICS status.
pub fn joined(r: &StreamsGroupHeartbeatResponse) -> String {
    let unauthorized = r
        .status
        .iter()
        .flatten()
        .filter_map(|s| {
            s.status_detail
                .find("Unauthorized")
                .map(|at| &s.status_detail[at..])
        })
        .next();
    match unauthorized {
        Some(text) => format!("{}, {text}", code(r.error_code)),
        None => code(r.error_code),
    }
}

/// ClusterAuthorizedOperations: whether DESCRIBE is among them, else the bits.
pub fn operations(ops: i32) -> String {
    if ops > 0 && ops & (1 << AclOperation::Describe.code()) != 0 {
        "operations with DESCRIBE".to_owned()
    } else {
        format!("operations {ops}")
    }
}
