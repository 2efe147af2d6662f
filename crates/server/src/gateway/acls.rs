//! The cluster's ACLs, for what a gateway serves itself. Through a gateway, `kafka-acls` is
//! forwarded: the cluster keeps the ACLs, and with `gateway.authentication=upstream` it
//! authorizes every forwarded request with them. kcoord authorizes what it serves itself
//! (streams groups, the KIP-1331 pushes, ListTopics) with the same ACLs, read back from the
//! cluster with one DescribeAcls matching every binding.

use kcoord_acl::{AclBinding, AclBindingFilter, Acls};
use kcoord_client::{ClientError, Connection};

/// Every ACL the cluster keeps, in one order (so two reads of the same ACLs are equal), asked
/// on `conn`. The cluster refuses without DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED)
/// and without an authorizer (SECURITY_DISABLED).
pub async fn fetch(conn: &Connection) -> Result<Vec<AclBinding>, ClientError> {
    let mut bindings =
        kcoord_client::admin::describe_acls_on(conn, &AclBindingFilter::any()).await?;
    bindings.sort();
    bindings.dedup();
    Ok(bindings)
}

/// `bindings` as an authorizer's index. The cluster's ids are not on the wire (nor needed):
/// each binding gets its place in the list.
pub fn index(bindings: &[AclBinding]) -> Acls {
    let mut acls = Acls::new();
    for (at, binding) in bindings.iter().enumerate() {
        // Distinct ids of distinct bindings: neither error can happen.
        let _ = acls.add(uuid::Uuid::from_u128(at as u128 + 1), binding.clone());
    }
    acls
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcoord_acl::{AclOperation, AclPermissionType, PatternType, ResourceType};

    #[test]
    fn every_binding_is_indexed_once() {
        let binding = |principal: &str| AclBinding {
            resource_type: ResourceType::Group,
            resource_name: "app".into(),
            pattern_type: PatternType::Literal,
            principal: principal.into(),
            host: "*".into(),
            operation: AclOperation::Read,
            permission: AclPermissionType::Allow,
        };
        let bindings = [binding("User:alice"), binding("User:bob")];
        let acls = index(&bindings);
        assert_eq!(acls.len(), 2);
        assert!(bindings.iter().all(|b| acls.contains(b)));
    }
}
