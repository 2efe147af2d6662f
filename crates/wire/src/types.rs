//! Kafka's small shared types, defined once for the daemon and the tools: Kafka's text form of a
//! `Uuid`, `AclOperation`, `TopicPartition` and the group states.

use std::fmt;

use uuid::Uuid;

/// A `Uuid` as Kafka's `Uuid.toString()` writes it: base64url of its 16 bytes without padding
/// (22 characters). Kafka prints topic ids, directory ids and cluster ids this way, and its
/// streams client makes its member ids this way.
pub fn kafka_uuid(id: &Uuid) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(22);
    for chunk in id.as_bytes().chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        // 3 bytes give 4 characters; the last chunk (1 byte) gives 2.
        for k in 0..=chunk.len() {
            out.push(char::from(ALPHABET[((n >> (18 - 6 * k)) & 63) as usize]));
        }
    }
    out
}

/// An ACL operation: Kafka's `org.apache.kafka.common.acl.AclOperation`, with its codes as the
/// discriminants (bit `code` of an AuthorizedOperations field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum AclOperation {
    Unknown = 0,
    Any = 1,
    All = 2,
    Read = 3,
    Write = 4,
    Create = 5,
    Delete = 6,
    Alter = 7,
    Describe = 8,
    ClusterAction = 9,
    DescribeConfigs = 10,
    AlterConfigs = 11,
    IdempotentWrite = 12,
    CreateTokens = 13,
    DescribeTokens = 14,
    TwoPhaseCommit = 15,
}

impl AclOperation {
    /// Every operation, in code order.
    pub const BY_CODE: [AclOperation; 16] = [
        AclOperation::Unknown,
        AclOperation::Any,
        AclOperation::All,
        AclOperation::Read,
        AclOperation::Write,
        AclOperation::Create,
        AclOperation::Delete,
        AclOperation::Alter,
        AclOperation::Describe,
        AclOperation::ClusterAction,
        AclOperation::DescribeConfigs,
        AclOperation::AlterConfigs,
        AclOperation::IdempotentWrite,
        AclOperation::CreateTokens,
        AclOperation::DescribeTokens,
        AclOperation::TwoPhaseCommit,
    ];

    /// Kafka's `AclOperation.fromCode`: `Unknown` for a code it does not know.
    pub fn from_code(code: u8) -> AclOperation {
        Self::BY_CODE
            .get(usize::from(code))
            .copied()
            .unwrap_or(AclOperation::Unknown)
    }

    /// Kafka's code.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// Kafka's name, e.g. `DESCRIBE_CONFIGS`.
    pub fn name(self) -> &'static str {
        match self {
            AclOperation::Unknown => "UNKNOWN",
            AclOperation::Any => "ANY",
            AclOperation::All => "ALL",
            AclOperation::Read => "READ",
            AclOperation::Write => "WRITE",
            AclOperation::Create => "CREATE",
            AclOperation::Delete => "DELETE",
            AclOperation::Alter => "ALTER",
            AclOperation::Describe => "DESCRIBE",
            AclOperation::ClusterAction => "CLUSTER_ACTION",
            AclOperation::DescribeConfigs => "DESCRIBE_CONFIGS",
            AclOperation::AlterConfigs => "ALTER_CONFIGS",
            AclOperation::IdempotentWrite => "IDEMPOTENT_WRITE",
            AclOperation::CreateTokens => "CREATE_TOKENS",
            AclOperation::DescribeTokens => "DESCRIBE_TOKENS",
            AclOperation::TwoPhaseCommit => "TWO_PHASE_COMMIT",
        }
    }

    /// The operations in an AuthorizedOperations bit field (bit n set = operation code n);
    /// `None` for Kafka's "not requested" value, `i32::MIN`.
    pub fn from_bit_field(bits: i32) -> Option<Vec<AclOperation>> {
        if bits == i32::MIN {
            return None;
        }
        Some(
            (0u8..31)
                .filter(|code| bits & (1 << code) != 0)
                .map(AclOperation::from_code)
                .filter(|op| *op != AclOperation::Unknown)
                .collect(),
        )
    }
}

/// A partition of a topic (Kafka's `TopicPartition`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopicPartition {
    pub topic: String,
    pub partition: i32,
}

impl TopicPartition {
    pub fn new(topic: impl Into<String>, partition: i32) -> Self {
        TopicPartition {
            topic: topic.into(),
            partition,
        }
    }
}

/// Kafka's `GroupState`: the states a streams group can be in, plus `Unknown` (what a client
/// makes of anything else, or of no state at all).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GroupState {
    Empty,
    NotReady,
    Assigning,
    Reconciling,
    Stable,
    Dead,
    /// Anything else, or no state reported (ListGroups before v4). The coordinator never
    /// reports it.
    Unknown,
}

impl GroupState {
    /// The states a streams group can be in (Kafka's `groupStatesForType(STREAMS)`), in the
    /// order `kafka-streams-groups` lists them.
    pub const STREAMS: [GroupState; 6] = [
        GroupState::Empty,
        GroupState::NotReady,
        GroupState::Assigning,
        GroupState::Reconciling,
        GroupState::Stable,
        GroupState::Dead,
    ];

    /// Kafka's `GroupState.parse`, over the streams states: case-insensitive, `Unknown` for
    /// anything unrecognised (the classic-group states too; they never describe a streams
    /// group).
    pub fn parse(name: &str) -> GroupState {
        GroupState::STREAMS
            .into_iter()
            .find(|s| s.as_str().eq_ignore_ascii_case(name))
            .unwrap_or(GroupState::Unknown)
    }

    /// Kafka's `GroupState.toString()`, as DescribeGroups / ListGroups / StreamsGroupDescribe
    /// carry it.
    pub fn as_str(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::NotReady => "NotReady",
            GroupState::Assigning => "Assigning",
            GroupState::Reconciling => "Reconciling",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
            GroupState::Unknown => "Unknown",
        }
    }
}

impl fmt::Display for GroupState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_print_as_kafka_prints_them() {
        assert_eq!(kafka_uuid(&Uuid::nil()), "AAAAAAAAAAAAAAAAAAAAAA");
        assert_eq!(kafka_uuid(&Uuid::from_u128(1)), "AAAAAAAAAAAAAAAAAAAAAQ");
        // The dev cluster id of config/server.properties is the base64url of "kcoord-dev-clust".
        assert_eq!(
            kafka_uuid(&Uuid::from_bytes(*b"kcoord-dev-clust")),
            "a2Nvb3JkLWRldi1jbHVzdA"
        );
        let id = |s: &str| kafka_uuid(&s.parse().unwrap());
        assert_eq!(
            id("5f3b1c2a-9d4e-4b7a-8c1d-0e2f3a4b5c6d"),
            "XzscKp1OS3qMHQ4vOktcbQ"
        );
        assert_eq!(
            id("ffffffff-ffff-ffff-ffff-fffffffffffe"),
            "_____________________g"
        );
    }

    #[test]
    fn acl_bit_fields_decode_as_kafka_encodes_them() {
        assert_eq!(AclOperation::from_bit_field(i32::MIN), None);
        let ops = AclOperation::from_bit_field((1 << 3) | (1 << 6) | (1 << 8)).unwrap();
        assert_eq!(
            ops,
            vec![
                AclOperation::Read,
                AclOperation::Delete,
                AclOperation::Describe
            ]
        );
        assert_eq!(AclOperation::from_code(10).name(), "DESCRIBE_CONFIGS");
        assert_eq!(AclOperation::from_code(99), AclOperation::Unknown);
        for code in 0..16u8 {
            assert_eq!(AclOperation::from_code(code).code(), code);
        }
    }

    #[test]
    fn group_states_parse_as_kafka_parses_them() {
        assert_eq!(GroupState::parse("stable"), GroupState::Stable);
        assert_eq!(GroupState::parse("NOTREADY"), GroupState::NotReady);
        assert_eq!(GroupState::parse("PreparingRebalance"), GroupState::Unknown);
        assert_eq!(GroupState::parse(""), GroupState::Unknown);
        for s in GroupState::STREAMS {
            assert_eq!(GroupState::parse(s.as_str()), s);
        }
    }
}
