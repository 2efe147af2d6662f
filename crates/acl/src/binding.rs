//! `AclBinding`: one ACL as Kafka stores it (its `StandardAcl`), a resource pattern plus an
//! access control entry.

use std::fmt;

use kcoord_wire::AclOperation;

use crate::resource::{AclPermissionType, PatternType, ResourceType};

/// Kafka's `AclOperation.fromCode` for a wire `int8`: `Unknown` for a code it does not know.
pub fn operation_from_code(code: i8) -> AclOperation {
    u8::try_from(code)
        .map(AclOperation::from_code)
        .unwrap_or(AclOperation::Unknown)
}

/// One ACL. The strings are kept exactly as they were written (Kafka validates little of them:
/// see [`crate::create`]); matching interprets them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AclBinding {
    pub resource_type: ResourceType,
    pub resource_name: String,
    pub pattern_type: PatternType,
    /// `Type:name`, e.g. `User:alice`; `User:*` for every principal.
    pub principal: String,
    /// `*`, a client address as Java writes it, or a CIDR range.
    pub host: String,
    pub operation: AclOperation,
    pub permission: AclPermissionType,
}

impl AclBinding {
    /// A binding from the fields of an `AccessControlEntryRecord`, codes mapped as Kafka's
    /// `StandardAcl.fromRecord` maps them (an unknown code becomes `Unknown`).
    #[allow(clippy::too_many_arguments)]
    pub fn from_record_fields(
        resource_type: i8,
        resource_name: impl Into<String>,
        pattern_type: i8,
        principal: impl Into<String>,
        host: impl Into<String>,
        operation: i8,
        permission: i8,
    ) -> AclBinding {
        AclBinding {
            resource_type: ResourceType::from_code(resource_type),
            resource_name: resource_name.into(),
            pattern_type: PatternType::from_code(pattern_type),
            principal: principal.into(),
            host: host.into(),
            operation: operation_from_code(operation),
            permission: AclPermissionType::from_code(permission),
        }
    }
}

/// Kafka's `AclBinding.toString()` form, for logs.
impl fmt::Display for AclBinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "(pattern=ResourcePattern(resourceType={}, name={}, patternType={}), \
             entry=(principal={}, host={}, operation={}, permissionType={}))",
            self.resource_type,
            self.resource_name,
            self.pattern_type,
            self.principal,
            self.host,
            self.operation.name(),
            self.permission
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_fields_map_unknown_codes_to_unknown() {
        let binding = AclBinding::from_record_fields(99, "t", 3, "User:a", "*", -3, 3);
        assert_eq!(binding.resource_type, ResourceType::Unknown);
        assert_eq!(binding.pattern_type, PatternType::Literal);
        assert_eq!(binding.operation, AclOperation::Unknown);
        assert_eq!(binding.permission, AclPermissionType::Allow);
    }

    #[test]
    fn operation_codes_are_kafkas() {
        assert_eq!(operation_from_code(3), AclOperation::Read);
        assert_eq!(operation_from_code(15), AclOperation::TwoPhaseCommit);
        assert_eq!(operation_from_code(16), AclOperation::Unknown);
        assert_eq!(operation_from_code(-1), AclOperation::Unknown);
    }

    #[test]
    fn a_binding_prints_as_kafkas_acl_binding() {
        let binding = AclBinding::from_record_fields(2, "t", 3, "User:a", "*", 3, 3);
        assert_eq!(
            binding.to_string(),
            "(pattern=ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL), \
             entry=(principal=User:a, host=*, operation=READ, permissionType=ALLOW))"
        );
    }
}
