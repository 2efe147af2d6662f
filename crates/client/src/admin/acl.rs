//! Kafka's `AclOperation`, for the AuthorizedOperations bit fields of describe responses.

/// An ACL operation (Kafka's `org.apache.kafka.common.acl.AclOperation`, same codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AclOperation {
    Unknown,
    Any,
    All,
    Read,
    Write,
    Create,
    Delete,
    Alter,
    Describe,
    ClusterAction,
    DescribeConfigs,
    AlterConfigs,
    IdempotentWrite,
    CreateTokens,
    DescribeTokens,
    TwoPhaseCommit,
}

impl AclOperation {
    const BY_CODE: [AclOperation; 16] = [
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

    pub fn from_code(code: u8) -> AclOperation {
        Self::BY_CODE
            .get(usize::from(code))
            .copied()
            .unwrap_or(AclOperation::Unknown)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_fields_decode_as_kafka_encodes_them() {
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
    }
}
