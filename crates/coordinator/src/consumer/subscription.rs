//! What a consumer group subscribes to: topic names and resolved regular expressions, the
//! metadata hash over them (KIP-1101), and the resolution of regular expressions.
//!
//! Kafka compiles subscriptions with RE2J and matches whole topic names; this uses the `regex`
//! crate (also RE2-like, linear time) anchored at both ends. The syntaxes agree on what
//! consumers use (classes, alternation, repetition); they differ at the edges (RE2J accepts
//! Java's `\p{javaLowerCase}` classes, the `regex` crate accepts `\z`), so a rare expression may
//! be valid on one and INVALID_REGULAR_EXPRESSION on the other.
use std::collections::BTreeSet;

use kcoord_metadata::{ConsumerGroup, ConsumerGroupMember, ResolvedRegex, TopicsImage};
use kcoord_wire::ErrorCode;

use crate::error::CoordinatorError;

/// Compiles a subscription regex as Kafka matches it: against the whole topic name.
/// The error names the fault in RE2J's words when there are such (Kafka answers with RE2J's
/// `PatternSyntaxException.getDescription()`), else in the `regex` crate's.
pub fn compile(regex: &str) -> Result<regex::Regex, CoordinatorError> {
    regex::Regex::new(&format!("^(?:{regex})$")).map_err(|e| {
        let description = re2j_description(regex).map_or_else(|| e.to_string(), str::to_owned);
        CoordinatorError::new(
            ErrorCode::INVALID_REGULAR_EXPRESSION,
            format!(
                "SubscribedTopicRegex `{regex}` is not a valid regular expression: {description}."
            ),
        )
    })
}

/// RE2J's description of why `regex` does not parse, for the faults both parsers see alike
/// (RE2J's texts are Go's `regexp/syntax` error codes). `None` when the `regex` crate's parser
/// accepts the syntax (the fault is found later, e.g. an unknown Unicode class) or has no
/// RE2J counterpart.
fn re2j_description(regex: &str) -> Option<&'static str> {
    use regex_syntax::ast::ErrorKind as K;
    let error = regex_syntax::ast::parse::Parser::new().parse(regex).err()?;
    Some(match error.kind() {
        K::ClassUnclosed => "missing closing ]",
        K::GroupUnclosed => "missing closing )",
        K::GroupUnopened => "unexpected )",
        K::RepetitionMissing => "missing argument to repetition operator",
        K::RepetitionCountInvalid => "invalid repeat count",
        K::ClassRangeInvalid | K::ClassRangeLiteral => "invalid character class range",
        K::EscapeUnexpectedEof => "trailing backslash at end of expression",
        K::EscapeUnrecognized
        | K::EscapeHexEmpty
        | K::EscapeHexInvalid
        | K::EscapeHexInvalidDigit
        | K::ClassEscapeInvalid => "invalid escape sequence",
        K::GroupNameDuplicate { .. } => "duplicate capture group name",
        K::GroupNameEmpty | K::GroupNameInvalid | K::GroupNameUnexpectedEof => {
            "invalid named capture"
        }
        K::FlagUnrecognized
        | K::FlagDanglingNegation
        | K::FlagDuplicate { .. }
        | K::FlagRepeatedNegation { .. }
        | K::FlagUnexpectedEof
        | K::UnsupportedLookAround
        | K::UnsupportedBackreference => "invalid or unsupported Perl syntax",
        _ => return None,
    })
}

/// The topics of the catalog that `regex` matches and the requester may describe.
pub fn resolve(
    regex: &str,
    topics: &TopicsImage,
    may_describe: &dyn Fn(&str) -> bool,
    now: i64,
) -> ResolvedRegex {
    let matched = match compile(regex) {
        Ok(compiled) => topics
            .iter()
            .filter(|t| compiled.is_match(&t.name) && may_describe(&t.name))
            .map(|t| t.name.clone())
            .collect(),
        // Validated when a member brought it; an expression that no longer compiles matches
        // nothing, as Kafka logs and ignores it.
        Err(_) => BTreeSet::new(),
    };
    ResolvedRegex {
        topics: matched,
        version: catalog_version(topics),
        timestamp: now,
    }
}

/// A version of the topic catalog for the regex record: Kafka stores the metadata image's
/// offset; the shard has no such offset, so this is a hash of the topic names, which changes
/// exactly when a topic comes or goes (what can change a resolution).
pub fn catalog_version(topics: &TopicsImage) -> i64 {
    let mut h = Fnv64::new();
    let mut names: Vec<&str> = topics.iter().map(|t| t.name.as_str()).collect();
    names.sort_unstable();
    for name in names {
        h.write(&(name.len() as u32).to_be_bytes());
        h.write(name.as_bytes());
    }
    (h.0 >> 1) as i64
}

/// Every topic name the members subscribe to, by name or through a resolved regex.
pub fn subscribed_topic_names<'a>(
    members: impl Iterator<Item = &'a ConsumerGroupMember>,
    group: &ConsumerGroup,
) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for m in members {
        out.extend(member_topic_names(m, group));
    }
    out
}

/// A member's topics: its names and its regex's resolution (none while unresolved).
pub fn member_topic_names(m: &ConsumerGroupMember, group: &ConsumerGroup) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = m.subscribed_topic_names.iter().cloned().collect();
    if !m.subscribed_topic_regex.is_empty() {
        if let Some(resolved) = group.resolved_regexes.get(&m.subscribed_topic_regex) {
            out.extend(resolved.topics.iter().cloned());
        }
    }
    out
}

/// The group's metadata hash: over each subscribed topic that exists, its name, id and
/// partition count, in name order; 0 when none exists. Kafka hashes the same facts (and the
/// partitions' racks) with XXH3; the value is only ever compared with itself.
pub fn metadata_hash(names: &BTreeSet<String>, topics: &TopicsImage) -> i64 {
    let mut h = Fnv64::new();
    let mut any = false;
    h.write(&[0]);
    for name in names {
        let Some(topic) = topics.get(name) else {
            continue;
        };
        any = true;
        h.write(&(name.len() as u32).to_be_bytes());
        h.write(name.as_bytes());
        h.write(topic.id.as_bytes());
        h.write(&topic.partition_count().to_be_bytes());
    }
    if !any {
        return 0;
    }
    mix(h.0) as i64
}

struct Fnv64(u64);

impl Fnv64 {
    fn new() -> Self {
        Fnv64(0xcbf2_9ce4_8422_2325)
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// SplitMix64's finalizer, so that near inputs give far hashes.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
