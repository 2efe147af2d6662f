//! The few pieces of Java behaviour Kafka's tool output depends on, so our bytes match its bytes:
//! `String.length()` (UTF-16 code units) for column widths and `%-Ns` padding, `String.compareTo`
//! (UTF-16 code unit order) for `TreeSet` sorting, and `Throwable.toString()` for the exception
//! texts Kafka prints.

use kcoord_wire::ErrorCode;

/// Java's `String.length()`: UTF-16 code units, which is what `%-Ns` and the tool's width
/// calculations count.
pub fn java_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// Java's `String.format("%-Ns", s)`: left-justified, padded with spaces to `width` code units,
/// never truncated.
pub fn pad(s: &str, width: usize) -> String {
    let len = java_len(s);
    let mut out = String::with_capacity(s.len() + width.saturating_sub(len));
    out.push_str(s);
    out.extend(std::iter::repeat_n(' ', width.saturating_sub(len)));
    out
}

/// Java's `String.compareTo` and a `TreeSet<String>`'s order, shared with the topology crate's
/// renderings.
pub use kcoord_topology::java::{java_cmp, tree_set};

/// `AbstractCollection.toString()` of a `TreeSet<String>`: `[a, b]`, or `[]` when empty.
pub fn tree_set_string<'a>(values: impl IntoIterator<Item = &'a String>) -> String {
    format!("[{}]", tree_set(values).join(", "))
}

/// The Java exception class Kafka's `Errors` maps a code to, for the codes the group APIs this
/// tool calls can return. `None` for the rest (and for kcoord's own codes, which have no class).
fn exception_class(code: ErrorCode) -> Option<&'static str> {
    Some(match code {
        ErrorCode::UNKNOWN_SERVER_ERROR => "UnknownServerException",
        ErrorCode::REQUEST_TIMED_OUT => "TimeoutException",
        ErrorCode::COORDINATOR_LOAD_IN_PROGRESS => "CoordinatorLoadInProgressException",
        ErrorCode::COORDINATOR_NOT_AVAILABLE => "CoordinatorNotAvailableException",
        ErrorCode::NOT_COORDINATOR => "NotCoordinatorException",
        ErrorCode::INVALID_GROUP_ID => "InvalidGroupIdException",
        ErrorCode::TOPIC_AUTHORIZATION_FAILED => "TopicAuthorizationException",
        ErrorCode::GROUP_AUTHORIZATION_FAILED => "GroupAuthorizationException",
        ErrorCode::CLUSTER_AUTHORIZATION_FAILED => "ClusterAuthorizationException",
        ErrorCode::UNSUPPORTED_VERSION => "UnsupportedVersionException",
        ErrorCode::INVALID_REQUEST => "InvalidRequestException",
        ErrorCode::NON_EMPTY_GROUP => "GroupNotEmptyException",
        ErrorCode::GROUP_ID_NOT_FOUND => "GroupIdNotFoundException",
        _ => return None,
    })
}

/// What Java prints for `Errors.forCode(code).exception(message).toString()`:
/// `org.apache.kafka.common.errors.GroupIdNotFoundException: <message>`, with Kafka's default
/// message when the server sent none. A code without a Java class prints as its constant name
/// (`GROUP_DELETION_FAILED: ...`); an unknown code as Java does, an UnknownServerException.
pub fn kafka_exception_text(code: i16, message: Option<&str>) -> String {
    let known = ErrorCode::from_code(code);
    let message = match message {
        Some(m) if !m.is_empty() => m,
        _ => known.map_or(
            ErrorCode::UNKNOWN_SERVER_ERROR.message(),
            ErrorCode::message,
        ),
    };
    match known {
        None => format!("org.apache.kafka.common.errors.UnknownServerException: {message}"),
        Some(known) => match exception_class(known) {
            Some(class) => format!("org.apache.kafka.common.errors.{class}: {message}"),
            None => format!("{}: {message}", known.name()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_counts_utf16_code_units_and_never_truncates() {
        assert_eq!(pad("GROUP", 8), "GROUP   ");
        assert_eq!(pad("a-very-long-name", 4), "a-very-long-name");
        // U+1F600 is two UTF-16 code units, so Java pads it to width 3 with one space.
        assert_eq!(pad("\u{1F600}", 3), "\u{1F600} ");
        assert_eq!(java_len("é"), 1);
    }

    #[test]
    fn sorting_follows_java_string_compare_to() {
        // In UTF-8 byte order U+FF01 sorts before U+1F600; in UTF-16 the surrogate 0xD83D comes first.
        let values = [
            "\u{FF01}".to_string(),
            "\u{1F600}".to_string(),
            "b".to_string(),
            "a".to_string(),
            "b".to_string(),
        ];
        assert_eq!(tree_set(&values), vec!["a", "b", "\u{1F600}", "\u{FF01}"]);
        assert_eq!(tree_set_string(&[] as &[String]), "[]");
        assert_eq!(
            tree_set_string(&["t2".to_string(), "t1".to_string()]),
            "[t1, t2]"
        );
    }

    #[test]
    fn exception_texts_match_java_to_string() {
        assert_eq!(
            kafka_exception_text(69, None),
            "org.apache.kafka.common.errors.GroupIdNotFoundException: The group id does not exist."
        );
        assert_eq!(
            kafka_exception_text(30, Some("Not allowed.")),
            "org.apache.kafka.common.errors.GroupAuthorizationException: Not allowed."
        );
        assert!(kafka_exception_text(-999, None)
            .starts_with("org.apache.kafka.common.errors.UnknownServerException: "));
    }
}
