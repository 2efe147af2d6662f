//! The decision: Kafka's `StandardAuthorizerData.authorize`, the `authorizedOperations` bit
//! field and `Authorizer.authorizeByResourceType`.

use std::collections::HashSet;
use std::net::IpAddr;

use kcoord_wire::AclOperation;
use thiserror::Error;

use crate::binding::AclBinding;
use crate::principal::{KafkaPrincipal, MalformedPrincipal};
use crate::resource::{AclPermissionType, PatternType, ResourceType, WILDCARD_RESOURCE};
use crate::store::{Acls, CompiledAcl};

/// The config key naming the principals allowed everything.
pub const SUPER_USERS_CONFIG: &str = "super.users";
/// The config key choosing the result when no ACL covers a resource.
pub const ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG: &str = "allow.everyone.if.no.acl.found";

/// A `super.users` entry that is not `type:name`; Kafka fails its startup on it.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invalid {SUPER_USERS_CONFIG}: {0}")]
pub struct InvalidSuperUsers(#[from] pub MalformedPrincipal);

/// The StandardAuthorizer's configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorizerConfig {
    /// The principals allowed everything, as written (`User:admin`): Kafka compares the
    /// session principal's string form with them, case-sensitively, with no wildcard.
    pub super_users: HashSet<String>,
    /// The result when no ACL at all covers the resource.
    pub allow_everyone_if_no_acl_found: bool,
}

impl AuthorizerConfig {
    /// Kafka's `StandardAuthorizer.configure` from the two config values (`None` when unset).
    pub fn from_config(
        super_users: Option<&str>,
        allow_everyone_if_no_acl_found: Option<&str>,
    ) -> Result<AuthorizerConfig, InvalidSuperUsers> {
        Ok(AuthorizerConfig {
            super_users: super_users
                .map(parse_super_users)
                .transpose()?
                .unwrap_or_default(),
            allow_everyone_if_no_acl_found: allow_everyone_if_no_acl_found
                .is_some_and(|value| java_trim(value).eq_ignore_ascii_case("true")),
        })
    }
}

/// `super.users`: `;`-separated, each piece trimmed, empty pieces skipped, each one `type:name`.
pub fn parse_super_users(value: &str) -> Result<HashSet<String>, InvalidSuperUsers> {
    let mut super_users = HashSet::new();
    for piece in value.split(';').map(java_trim).filter(|p| !p.is_empty()) {
        KafkaPrincipal::parse(piece)?;
        super_users.insert(piece.to_owned());
    }
    Ok(super_users)
}

/// Java's `String.trim`: strips every char up to U+0020, and nothing else.
fn java_trim(text: &str) -> &str {
    text.trim_matches(|c: char| c <= ' ')
}

/// The operations Kafka reports in AuthorizedOperations for a resource type
/// (`AclEntry.supportedOperations`); empty for the filter-only types.
pub fn supported_operations(resource_type: ResourceType) -> &'static [AclOperation] {
    use AclOperation::*;
    match resource_type {
        ResourceType::Topic => &[
            Read,
            Write,
            Create,
            Describe,
            Delete,
            Alter,
            DescribeConfigs,
            AlterConfigs,
        ],
        ResourceType::Group => &[Read, Describe, Delete, DescribeConfigs, AlterConfigs],
        ResourceType::Cluster => &[
            Create,
            ClusterAction,
            DescribeConfigs,
            AlterConfigs,
            IdempotentWrite,
            Alter,
            Describe,
        ],
        ResourceType::TransactionalId => &[Describe, Write, TwoPhaseCommit],
        ResourceType::DelegationToken => &[Describe],
        ResourceType::User => &[CreateTokens, DescribeTokens],
        ResourceType::Unknown | ResourceType::Any => &[],
    }
}

/// The AuthorizedOperations bit field with every supported operation set: what a super user
/// gets, and what every principal gets when no authorizer is configured.
pub fn all_operations_bit_field(resource_type: ResourceType) -> i32 {
    bit_field(supported_operations(resource_type).iter().copied())
}

fn bit_field(operations: impl Iterator<Item = AclOperation>) -> i32 {
    operations.fold(0, |bits, op| bits | (1 << op.code()))
}

/// `authorizeByResourceType` was asked about a filter value.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NotConcrete {
    #[error("Must specify a non-filter resource type for authorizeByResourceType")]
    AnyResourceType,
    #[error("Unknown resource type")]
    UnknownResourceType,
    #[error("Must specify a non-filter operation type for authorizeByResourceType")]
    AnyOperation,
    #[error("Unknown operation type")]
    UnknownOperation,
}

/// The StandardAuthorizer: its configuration and the ACLs of the metadata log.
#[derive(Debug, Clone, Default)]
pub struct Authorizer {
    config: AuthorizerConfig,
    acls: Acls,
}

/// What decided an authorization, for the audit log (Kafka's rule names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    SuperUser,
    DefaultAllow,
    DefaultDeny,
    /// An ACL matched; `allowed` is its permission.
    MatchingAcl {
        id: uuid::Uuid,
        allowed: bool,
    },
}

impl Rule {
    pub fn allowed(self) -> bool {
        match self {
            Rule::SuperUser | Rule::DefaultAllow => true,
            Rule::DefaultDeny => false,
            Rule::MatchingAcl { allowed, .. } => allowed,
        }
    }
}

impl Authorizer {
    pub fn new(config: AuthorizerConfig) -> Authorizer {
        Authorizer::with_acls(config, Acls::new())
    }

    pub fn with_acls(config: AuthorizerConfig, acls: Acls) -> Authorizer {
        Authorizer { config, acls }
    }

    pub fn config(&self) -> &AuthorizerConfig {
        &self.config
    }

    pub fn acls(&self) -> &Acls {
        &self.acls
    }

    /// For replaying ACL records.
    pub fn acls_mut(&mut self) -> &mut Acls {
        &mut self.acls
    }

    pub fn is_super_user(&self, principal: &KafkaPrincipal) -> bool {
        self.config
            .super_users
            .iter()
            .any(|s| principal.is_written_as(s))
    }

    /// Whether `principal`, connected from `client`, may do `operation` on the LITERAL
    /// resource `resource_type`:`resource_name`.
    pub fn authorize(
        &self,
        principal: &KafkaPrincipal,
        client: IpAddr,
        operation: AclOperation,
        resource_type: ResourceType,
        resource_name: &str,
    ) -> bool {
        self.decide(principal, client, operation, resource_type, resource_name)
            .allowed()
    }

    /// [`Authorizer::authorize`], saying which rule decided.
    ///
    /// Super users first; then the ACLs whose pattern covers the resource (LITERAL with its
    /// name, PREFIXED with a prefix of it, LITERAL `*`): any that matches the session and
    /// denies wins, else any that allows allows; if none matches, the configured default
    /// applies only when no ACL at all covers the resource, whoever it is for.
    pub fn decide(
        &self,
        principal: &KafkaPrincipal,
        client: IpAddr,
        operation: AclOperation,
        resource_type: ResourceType,
        resource_name: &str,
    ) -> Rule {
        if self.is_super_user(principal) {
            return Rule::SuperUser;
        }
        let mut covered = false;
        let mut allowed_by = None;
        for acl in self.acls.covering(resource_type, resource_name).flatten() {
            covered = true;
            if !acl.applies_to(principal, client) || !grants_or_denies(acl, operation) {
                continue;
            }
            if acl.permission == AclPermissionType::Deny {
                return Rule::MatchingAcl {
                    id: acl.id(),
                    allowed: false,
                };
            }
            allowed_by.get_or_insert(acl.id());
        }
        match allowed_by {
            Some(id) => Rule::MatchingAcl { id, allowed: true },
            None if covered => Rule::DefaultDeny,
            None => self.default_rule(),
        }
    }

    fn default_rule(&self) -> Rule {
        if self.config.allow_everyone_if_no_acl_found {
            Rule::DefaultAllow
        } else {
            Rule::DefaultDeny
        }
    }

    /// Kafka's AuthorizedOperations for one resource: bit `code` set for each supported
    /// operation of its type that [`Authorizer::authorize`] allows.
    pub fn authorized_operations(
        &self,
        principal: &KafkaPrincipal,
        client: IpAddr,
        resource_type: ResourceType,
        resource_name: &str,
    ) -> i32 {
        let allowed = supported_operations(resource_type)
            .iter()
            .copied()
            .filter(|op| self.authorize(principal, client, *op, resource_type, resource_name));
        bit_field(allowed)
    }

    /// Kafka's `Authorizer.authorizeByResourceType` (InitProducerId without a transactional id
    /// asks it for WRITE on any topic): whether `operation` is allowed on at least one
    /// resource of the type.
    ///
    /// First a probe of a resource named `hardcode` (so super users, and a default of allow
    /// when no ACL covers that name, pass); then, over the type's ACLs for this session with
    /// exactly this operation or ALL (no implication here): a DENY on LITERAL `*` denies; an
    /// ALLOW on LITERAL `*` allows; else some allowed name or prefix must survive the denials
    /// (a literal denied by the same literal, or any name under a denied prefix, does not).
    pub fn authorize_by_resource_type(
        &self,
        principal: &KafkaPrincipal,
        client: IpAddr,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> Result<bool, NotConcrete> {
        check_concrete(operation, resource_type)?;
        if self.authorize(principal, client, operation, resource_type, "hardcode") {
            return Ok(true);
        }
        let mut patterns = SessionPatterns::default();
        for (acl, compiled) in self.acls.of_type(resource_type) {
            let same_operation =
                compiled.operation == operation || compiled.operation == AclOperation::All;
            if !same_operation || !compiled.applies_to(principal, client) {
                continue;
            }
            if patterns.add(acl) {
                return Ok(false);
            }
        }
        Ok(patterns.any_allowed())
    }
}

/// Whether an ACL's operation speaks to the requested one. ALL speaks to everything. An ALLOW
/// of READ, WRITE, DELETE or ALTER also allows DESCRIBE, and an ALLOW of ALTER_CONFIGS also
/// allows DESCRIBE_CONFIGS; a DENY never reaches beyond its own operation.
fn grants_or_denies(acl: &CompiledAcl, requested: AclOperation) -> bool {
    use AclOperation::*;
    if acl.operation == All || acl.operation == requested {
        return true;
    }
    if acl.permission != AclPermissionType::Allow {
        return false;
    }
    match requested {
        Describe => matches!(acl.operation, Read | Write | Delete | Alter),
        DescribeConfigs => acl.operation == AlterConfigs,
        _ => false,
    }
}

fn check_concrete(operation: AclOperation, resource_type: ResourceType) -> Result<(), NotConcrete> {
    match (resource_type, operation) {
        (ResourceType::Any, _) => Err(NotConcrete::AnyResourceType),
        (ResourceType::Unknown, _) => Err(NotConcrete::UnknownResourceType),
        (_, AclOperation::Any) => Err(NotConcrete::AnyOperation),
        (_, AclOperation::Unknown) => Err(NotConcrete::UnknownOperation),
        _ => Ok(()),
    }
}

/// The names and prefixes a session is allowed and denied on one resource type.
#[derive(Debug, Default)]
struct SessionPatterns<'a> {
    denied_literals: HashSet<&'a str>,
    denied_prefixes: HashSet<&'a str>,
    allowed_literals: HashSet<&'a str>,
    allowed_prefixes: HashSet<&'a str>,
    wildcard_allowed: bool,
}

impl<'a> SessionPatterns<'a> {
    /// Records one ACL; true for a DENY of every name, which settles the question.
    fn add(&mut self, acl: &'a AclBinding) -> bool {
        let name = acl.resource_name.as_str();
        let literal = acl.pattern_type == PatternType::Literal;
        let prefixed = acl.pattern_type == PatternType::Prefixed;
        match acl.permission {
            AclPermissionType::Deny if literal && name == WILDCARD_RESOURCE => return true,
            AclPermissionType::Deny if literal => {
                self.denied_literals.insert(name);
            }
            AclPermissionType::Deny if prefixed => {
                self.denied_prefixes.insert(name);
            }
            AclPermissionType::Allow if literal && name == WILDCARD_RESOURCE => {
                self.wildcard_allowed = true;
            }
            AclPermissionType::Allow if literal => {
                self.allowed_literals.insert(name);
            }
            AclPermissionType::Allow if prefixed => {
                self.allowed_prefixes.insert(name);
            }
            _ => {}
        }
        false
    }

    fn any_allowed(&self) -> bool {
        if self.wildcard_allowed {
            return true;
        }
        let literal_survives = self
            .allowed_literals
            .iter()
            .any(|name| !self.denied_literals.contains(name) && !self.under_denied_prefix(name));
        literal_survives
            || self
                .allowed_prefixes
                .iter()
                .any(|name| !self.under_denied_prefix(name))
    }

    /// Whether a denied prefix of at least one character is a prefix of `name`.
    fn under_denied_prefix(&self, name: &str) -> bool {
        name.char_indices()
            .map(|(i, c)| &name[..i + c.len_utf8()])
            .any(|prefix| self.denied_prefixes.contains(prefix))
    }
}
