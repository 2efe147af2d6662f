//! Apache Kafka 4.4's StandardAuthorizer as a pure data structure, sans-IO.
//!
//! - [`Acls`]: the ACLs of the metadata log by id (`AccessControlEntryRecord` adds one,
//!   `RemoveAccessControlEntryRecord` removes one), indexed so that a decision looks at the
//!   ACLs covering the resource only.
//! - [`Authorizer`]: `super.users` and `allow.everyone.if.no.acl.found` over those ACLs;
//!   [`Authorizer::authorize`] decides as Kafka's `StandardAuthorizerData.authorize`,
//!   [`Authorizer::authorized_operations`] fills AuthorizedOperations fields and
//!   [`Authorizer::authorize_by_resource_type`] answers idempotent InitProducerId.
//! - [`AclBinding`] and [`AclBindingFilter`] with Kafka's matching rules, and [`requests`]:
//!   what CreateAcls, DescribeAcls and DeleteAcls check, with Kafka's codes and messages.
//!
//! The facts behind each rule are in `docs/kafka-security-facts.md`, section 2.
//!
//! Not modelled: Kafka's "not ready" state before the first ACL load (the runtime decides
//! when to serve), the audit log (the runtime logs, [`Authorizer::decide`] names the rule),
//! and IPv6 scope ids in ACL hosts (a client address here has none).

pub mod authorizer;
pub mod binding;
pub mod filter;
pub mod host;
pub mod principal;
pub mod requests;
pub mod resource;
pub mod store;

pub use authorizer::{
    all_operations_bit_field, parse_super_users, supported_operations, Authorizer,
    AuthorizerConfig, InvalidSuperUsers, NotConcrete, Rule, ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG,
    SUPER_USERS_CONFIG,
};
pub use binding::{operation_from_code, AclBinding};
pub use filter::AclBindingFilter;
pub use host::{java_host_address, Cidr, WILDCARD_HOST};
pub use kcoord_wire::AclOperation;
pub use principal::{KafkaPrincipal, MalformedPrincipal, USER_TYPE, WILDCARD_PRINCIPAL};
pub use requests::{AclApiError, AclCreation, DeleteAclsPlan, UnknownElements};
pub use resource::{AclPermissionType, PatternType, ResourceType, CLUSTER_NAME, WILDCARD_RESOURCE};
pub use store::{AclStoreError, Acls, MAX_RECORDS_PER_USER_OP};

#[cfg(test)]
mod authorizer_tests;
#[cfg(test)]
mod requests_tests;
