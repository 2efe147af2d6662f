//! Kafka's `ResourceType`, `PatternType` and `AclPermissionType`, with their wire codes.
//!
//! Each has the filter-only values (`Any`, and `Match` for patterns) beside the concrete ones, and
//! `Unknown`, which is what Kafka's `fromCode` makes of a code it does not know.

use std::fmt;

/// The name of the one cluster resource (Kafka's `Resource.CLUSTER_NAME`).
pub const CLUSTER_NAME: &str = "kafka-cluster";

/// The resource name of a LITERAL ACL that covers every resource of its type.
pub const WILDCARD_RESOURCE: &str = "*";

macro_rules! kafka_enum {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $code:literal, $text:literal;)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(i8)]
        pub enum $name {
            $($variant = $code,)*
        }

        impl $name {
            /// Kafka's `fromCode`: `Unknown` for a code it does not know.
            pub fn from_code(code: i8) -> $name {
                match code {
                    $($code => $name::$variant,)*
                    _ => $name::Unknown,
                }
            }

            /// Kafka's code.
            pub fn code(self) -> i8 {
                self as i8
            }

            /// Kafka's name, e.g. `TRANSACTIONAL_ID`.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

kafka_enum! {
    /// Kafka's `org.apache.kafka.common.resource.ResourceType`.
    ResourceType {
        Unknown = 0, "UNKNOWN";
        Any = 1, "ANY";
        Topic = 2, "TOPIC";
        Group = 3, "GROUP";
        Cluster = 4, "CLUSTER";
        TransactionalId = 5, "TRANSACTIONAL_ID";
        DelegationToken = 6, "DELEGATION_TOKEN";
        User = 7, "USER";
    }
}

kafka_enum! {
    /// Kafka's `org.apache.kafka.common.resource.PatternType`.
    PatternType {
        Unknown = 0, "UNKNOWN";
        Any = 1, "ANY";
        Match = 2, "MATCH";
        Literal = 3, "LITERAL";
        Prefixed = 4, "PREFIXED";
    }
}

kafka_enum! {
    /// Kafka's `org.apache.kafka.common.acl.AclPermissionType`.
    AclPermissionType {
        Unknown = 0, "UNKNOWN";
        Any = 1, "ANY";
        Deny = 2, "DENY";
        Allow = 3, "ALLOW";
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_kafkas() {
        assert_eq!(ResourceType::Topic.code(), 2);
        assert_eq!(ResourceType::Group.code(), 3);
        assert_eq!(ResourceType::Cluster.code(), 4);
        assert_eq!(ResourceType::TransactionalId.code(), 5);
        assert_eq!(ResourceType::DelegationToken.code(), 6);
        assert_eq!(ResourceType::User.code(), 7);
        assert_eq!(PatternType::Match.code(), 2);
        assert_eq!(PatternType::Literal.code(), 3);
        assert_eq!(PatternType::Prefixed.code(), 4);
        assert_eq!(AclPermissionType::Deny.code(), 2);
        assert_eq!(AclPermissionType::Allow.code(), 3);
    }

    #[test]
    fn every_code_round_trips_and_unmapped_codes_are_unknown() {
        for code in 0..=7 {
            assert_eq!(ResourceType::from_code(code).code(), code);
        }
        for code in 0..=4 {
            assert_eq!(PatternType::from_code(code).code(), code);
        }
        for code in 0..=3 {
            assert_eq!(AclPermissionType::from_code(code).code(), code);
        }
        assert_eq!(ResourceType::from_code(8), ResourceType::Unknown);
        assert_eq!(ResourceType::from_code(-1), ResourceType::Unknown);
        assert_eq!(PatternType::from_code(5), PatternType::Unknown);
        assert_eq!(AclPermissionType::from_code(99), AclPermissionType::Unknown);
    }

    #[test]
    fn names_are_kafkas_constant_names() {
        assert_eq!(
            ResourceType::TransactionalId.to_string(),
            "TRANSACTIONAL_ID"
        );
        assert_eq!(PatternType::Prefixed.to_string(), "PREFIXED");
        assert_eq!(AclPermissionType::Allow.to_string(), "ALLOW");
    }
}
