//! `AclBindingFilter`: which ACLs a DescribeAcls or DeleteAcls filter selects, by Kafka's
//! `ResourcePatternFilter.matches` and `AccessControlEntryFilter.matches`.

use kcoord_wire::AclOperation;

use crate::binding::{operation_from_code, AclBinding};
use crate::resource::{AclPermissionType, PatternType, ResourceType, WILDCARD_RESOURCE};

/// A filter over ACLs. `None` strings and the `Any` values match everything; `Match` selects
/// the ACLs that would apply to the named resource.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AclBindingFilter {
    pub resource_type: ResourceType,
    pub resource_name: Option<String>,
    pub pattern_type: PatternType,
    pub principal: Option<String>,
    pub host: Option<String>,
    pub operation: AclOperation,
    pub permission: AclPermissionType,
}

impl AclBindingFilter {
    /// The filter that matches every ACL (Kafka's `AclBindingFilter.ANY`).
    pub fn any() -> AclBindingFilter {
        AclBindingFilter {
            resource_type: ResourceType::Any,
            resource_name: None,
            pattern_type: PatternType::Any,
            principal: None,
            host: None,
            operation: AclOperation::Any,
            permission: AclPermissionType::Any,
        }
    }

    /// A filter from the fields of a DescribeAcls request or a DeleteAcls filter, codes mapped
    /// as Kafka's `fromCode` maps them.
    #[allow(clippy::too_many_arguments)]
    pub fn from_codes(
        resource_type: i8,
        resource_name: Option<String>,
        pattern_type: i8,
        principal: Option<String>,
        host: Option<String>,
        operation: i8,
        permission: i8,
    ) -> AclBindingFilter {
        AclBindingFilter {
            resource_type: ResourceType::from_code(resource_type),
            resource_name,
            pattern_type: PatternType::from_code(pattern_type),
            principal,
            host,
            operation: operation_from_code(operation),
            permission: AclPermissionType::from_code(permission),
        }
    }

    /// Kafka's `AclBindingFilter.matches`.
    pub fn matches(&self, acl: &AclBinding) -> bool {
        self.pattern_matches(acl) && self.entry_matches(acl)
    }

    /// Kafka's `ResourcePatternFilter.isUnknown`.
    pub fn pattern_filter_is_unknown(&self) -> bool {
        self.resource_type == ResourceType::Unknown || self.pattern_type == PatternType::Unknown
    }

    /// Kafka's `AccessControlEntryFilter.isUnknown`.
    pub fn entry_filter_is_unknown(&self) -> bool {
        self.operation == AclOperation::Unknown || self.permission == AclPermissionType::Unknown
    }

    fn pattern_matches(&self, acl: &AclBinding) -> bool {
        if self.resource_type != ResourceType::Any && self.resource_type != acl.resource_type {
            return false;
        }
        let any_pattern = matches!(self.pattern_type, PatternType::Any | PatternType::Match);
        if !any_pattern && self.pattern_type != acl.pattern_type {
            return false;
        }
        let Some(name) = &self.resource_name else {
            return true;
        };
        if self.pattern_type == PatternType::Any || self.pattern_type == acl.pattern_type {
            return *name == acl.resource_name;
        }
        // MATCH: the ACLs that would apply to a resource of this name.
        match acl.pattern_type {
            PatternType::Literal => {
                *name == acl.resource_name || acl.resource_name == WILDCARD_RESOURCE
            }
            PatternType::Prefixed => name.starts_with(acl.resource_name.as_str()),
            // Kafka throws here ("Unsupported PatternType"); only a corrupt record can hold
            // such an ACL, and selecting it would be no better.
            _ => false,
        }
    }

    fn entry_matches(&self, acl: &AclBinding) -> bool {
        self.principal.as_ref().is_none_or(|p| *p == acl.principal)
            && self.host.as_ref().is_none_or(|h| *h == acl.host)
            && (self.operation == AclOperation::Any || self.operation == acl.operation)
            && (self.permission == AclPermissionType::Any || self.permission == acl.permission)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acl(resource_type: ResourceType, name: &str, pattern_type: PatternType) -> AclBinding {
        AclBinding {
            resource_type,
            resource_name: name.into(),
            pattern_type,
            principal: "User:alice".into(),
            host: "*".into(),
            operation: AclOperation::Read,
            permission: AclPermissionType::Allow,
        }
    }

    fn topic_filter(name: Option<&str>, pattern_type: PatternType) -> AclBindingFilter {
        AclBindingFilter {
            resource_type: ResourceType::Topic,
            resource_name: name.map(str::to_owned),
            pattern_type,
            ..AclBindingFilter::any()
        }
    }

    #[test]
    fn the_any_filter_matches_every_acl() {
        let filter = AclBindingFilter::any();
        assert!(filter.matches(&acl(ResourceType::Topic, "t", PatternType::Literal)));
        assert!(filter.matches(&acl(ResourceType::Group, "g", PatternType::Prefixed)));
        assert!(filter.matches(&acl(
            ResourceType::Cluster,
            "kafka-cluster",
            PatternType::Literal
        )));
    }

    #[test]
    fn a_resource_type_filter_matches_only_that_type() {
        let filter = topic_filter(None, PatternType::Any);
        assert!(filter.matches(&acl(ResourceType::Topic, "t", PatternType::Literal)));
        assert!(!filter.matches(&acl(ResourceType::Group, "t", PatternType::Literal)));
    }

    #[test]
    fn pattern_type_any_with_a_name_matches_that_exact_name_of_any_pattern_type() {
        let filter = topic_filter(Some("foo"), PatternType::Any);
        assert!(filter.matches(&acl(ResourceType::Topic, "foo", PatternType::Literal)));
        assert!(filter.matches(&acl(ResourceType::Topic, "foo", PatternType::Prefixed)));
        assert!(!filter.matches(&acl(ResourceType::Topic, "fo", PatternType::Prefixed)));
        assert!(!filter.matches(&acl(ResourceType::Topic, "*", PatternType::Literal)));
    }

    #[test]
    fn literal_and_prefixed_filters_need_the_same_pattern_type_and_the_exact_name() {
        let literal = topic_filter(Some("foo"), PatternType::Literal);
        assert!(literal.matches(&acl(ResourceType::Topic, "foo", PatternType::Literal)));
        assert!(!literal.matches(&acl(ResourceType::Topic, "foo", PatternType::Prefixed)));
        assert!(!literal.matches(&acl(ResourceType::Topic, "*", PatternType::Literal)));
        let prefixed = topic_filter(Some("fo"), PatternType::Prefixed);
        assert!(prefixed.matches(&acl(ResourceType::Topic, "fo", PatternType::Prefixed)));
        assert!(!prefixed.matches(&acl(ResourceType::Topic, "f", PatternType::Prefixed)));
        let any_prefixed = topic_filter(None, PatternType::Prefixed);
        assert!(any_prefixed.matches(&acl(ResourceType::Topic, "x", PatternType::Prefixed)));
        assert!(!any_prefixed.matches(&acl(ResourceType::Topic, "x", PatternType::Literal)));
    }

    #[test]
    fn match_selects_the_literal_the_wildcard_and_every_covering_prefix() {
        let filter = topic_filter(Some("foobar"), PatternType::Match);
        assert!(filter.matches(&acl(ResourceType::Topic, "foobar", PatternType::Literal)));
        assert!(filter.matches(&acl(ResourceType::Topic, "*", PatternType::Literal)));
        assert!(filter.matches(&acl(ResourceType::Topic, "foo", PatternType::Prefixed)));
        assert!(filter.matches(&acl(ResourceType::Topic, "foobar", PatternType::Prefixed)));
        assert!(!filter.matches(&acl(ResourceType::Topic, "foo", PatternType::Literal)));
        assert!(!filter.matches(&acl(
            ResourceType::Topic,
            "foobarbaz",
            PatternType::Prefixed
        )));
        assert!(!filter.matches(&acl(ResourceType::Topic, "*", PatternType::Prefixed)));
    }

    #[test]
    fn match_without_a_name_matches_everything_of_the_type() {
        let filter = topic_filter(None, PatternType::Match);
        assert!(filter.matches(&acl(ResourceType::Topic, "x", PatternType::Literal)));
        assert!(filter.matches(&acl(ResourceType::Topic, "y", PatternType::Prefixed)));
    }

    #[test]
    fn principal_and_host_filters_compare_strings_exactly() {
        let mut wildcard = acl(ResourceType::Topic, "t", PatternType::Literal);
        wildcard.principal = "User:*".into();
        let alice_filter = AclBindingFilter {
            principal: Some("User:alice".into()),
            ..AclBindingFilter::any()
        };
        assert!(!alice_filter.matches(&wildcard));
        assert!(alice_filter.matches(&acl(ResourceType::Topic, "t", PatternType::Literal)));
        let host_filter = AclBindingFilter {
            host: Some("10.0.0.1".into()),
            ..AclBindingFilter::any()
        };
        assert!(!host_filter.matches(&acl(ResourceType::Topic, "t", PatternType::Literal)));
    }

    #[test]
    fn an_operation_filter_of_all_matches_only_acls_written_with_all() {
        let filter = AclBindingFilter {
            operation: AclOperation::All,
            ..AclBindingFilter::any()
        };
        let read = acl(ResourceType::Topic, "t", PatternType::Literal);
        assert!(!filter.matches(&read));
        let all = AclBinding {
            operation: AclOperation::All,
            ..read.clone()
        };
        assert!(filter.matches(&all));
        let deny_filter = AclBindingFilter {
            permission: AclPermissionType::Deny,
            ..AclBindingFilter::any()
        };
        assert!(!deny_filter.matches(&read));
    }

    #[test]
    fn unknown_parts_are_reported_separately_for_pattern_and_entry() {
        let filter = AclBindingFilter::from_codes(99, None, 1, None, None, 1, 1);
        assert!(filter.pattern_filter_is_unknown());
        assert!(!filter.entry_filter_is_unknown());
        let filter = AclBindingFilter::from_codes(1, None, 1, None, None, 1, 42);
        assert!(!filter.pattern_filter_is_unknown());
        assert!(filter.entry_filter_is_unknown());
    }
}
