//! Who may do what: the authorizer a request's principal is checked against. Without
//! `authorizer.class.name` everything is allowed, as in a Kafka broker without one; with
//! Kafka's StandardAuthorizer named, [`StandardAuthorizer`] decides with its semantics
//! (`kcoord-acl`), with the ACLs of the metadata log the controller feeds it. A test or an
//! embedding program may inject its own ([`crate::daemon::Extensions::authorizer`]). The RPCs
//! ask it where Kafka's `KafkaApis` asks ([`crate::rpc::authorize`]).

use std::sync::{Arc, PoisonError, RwLock};

use kcoord_acl::{AclBinding, AclBindingFilter, Acls};
use kcoord_controller::AclChange;
use tracing::{info, warn};

use crate::config::authorizer::{AuthorizerKind, STANDARD_AUTHORIZER};
use crate::config::Config;

/// Who sent a request.
pub use kcoord_acl::KafkaPrincipal;
/// Kafka's `AclOperation`, defined once in kcoord-wire.
pub use kcoord_wire::AclOperation;

/// Who asks, as an authorizer sees it (Kafka's `AuthorizableRequestContext`, with what
/// kcoord's authorizers read).
#[derive(Debug, Clone, Copy)]
pub struct Requester<'a> {
    pub principal: &'a KafkaPrincipal,
    pub peer: std::net::SocketAddr,
    /// The listener's name (`HTTP` for the JSON API's requests).
    pub listener: &'a str,
    pub client_id: &'a str,
}

/// Kafka's `ResourceType` values the handlers use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceType {
    Topic,
    Group,
    Cluster,
    TransactionalId,
}

impl ResourceType {
    pub(crate) fn to_acl(self) -> kcoord_acl::ResourceType {
        match self {
            ResourceType::Topic => kcoord_acl::ResourceType::Topic,
            ResourceType::Group => kcoord_acl::ResourceType::Group,
            ResourceType::Cluster => kcoord_acl::ResourceType::Cluster,
            ResourceType::TransactionalId => kcoord_acl::ResourceType::TransactionalId,
        }
    }
}

/// An authorizer (Kafka's `Authorizer.authorize` for one action). None is configured by
/// default; an embedding program or a test injects one with
/// [`crate::daemon::Extensions::authorizer`].
pub trait Authorizer: Send + Sync + std::fmt::Debug {
    fn authorize(
        &self,
        ctx: &Requester<'_>,
        operation: AclOperation,
        resource: ResourceType,
        name: &str,
    ) -> bool;

    /// Kafka's `authorizeByResourceType`: whether `operation` is allowed on at least one
    /// resource of the type (idempotent InitProducerId asks it for WRITE on any topic). An
    /// authorizer that keeps no ACLs allows it where it allows the operation on a resource of
    /// that type named `hardcode`, as Kafka's default implementation first asks.
    fn authorize_any(
        &self,
        ctx: &Requester<'_>,
        operation: AclOperation,
        resource: ResourceType,
    ) -> bool {
        self.authorize(ctx, operation, resource, "hardcode")
    }

    /// The ACLs of the metadata log when the daemon starts, before any request.
    fn acls_loaded(&self, _acls: &Acls) {}

    /// ACL changes the controller applied (CreateAcls, DeleteAcls), in log order.
    fn acls_changed(&self, _changes: &[AclChange]) {}

    /// The ACLs a DescribeAcls filter selects (Kafka's `Authorizer.acls`). An authorizer that
    /// keeps no ACLs has none to show.
    fn acls(&self, _filter: &AclBindingFilter) -> Vec<AclBinding> {
        Vec::new()
    }
}

/// Kafka's StandardAuthorizer: `super.users`, `allow.everyone.if.no.acl.found` and the ACLs of
/// the metadata log, loaded at startup and changed by the controller runtime after every batch
/// that creates or deletes ACLs, before that request is answered.
#[derive(Debug)]
pub struct StandardAuthorizer {
    inner: RwLock<kcoord_acl::Authorizer>,
}

impl StandardAuthorizer {
    pub fn new(config: kcoord_acl::AuthorizerConfig) -> Self {
        StandardAuthorizer {
            inner: RwLock::new(kcoord_acl::Authorizer::new(config)),
        }
    }
}

impl Authorizer for StandardAuthorizer {
    fn authorize(
        &self,
        ctx: &Requester<'_>,
        operation: AclOperation,
        resource: ResourceType,
        name: &str,
    ) -> bool {
        // A poisoned lock only means a writer panicked between two complete ACL changes.
        let inner = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        inner.authorize(
            ctx.principal,
            ctx.peer.ip(),
            operation,
            resource.to_acl(),
            name,
        )
    }

    fn authorize_any(
        &self,
        ctx: &Requester<'_>,
        operation: AclOperation,
        resource: ResourceType,
    ) -> bool {
        let inner = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        inner
            .authorize_by_resource_type(ctx.principal, ctx.peer.ip(), operation, resource.to_acl())
            .unwrap_or(false)
    }

    fn acls_loaded(&self, acls: &Acls) {
        let mut inner = self.inner.write().unwrap_or_else(PoisonError::into_inner);
        *inner.acls_mut() = acls.clone();
    }

    fn acls_changed(&self, changes: &[AclChange]) {
        let mut inner = self.inner.write().unwrap_or_else(PoisonError::into_inner);
        for change in changes {
            // The controller applied the same change to its own index first.
            if let Err(e) = change.clone().apply(inner.acls_mut()) {
                tracing::error!(error = %e, "an ACL change does not apply to the authorizer's ACLs");
            }
        }
    }

    fn acls(&self, filter: &AclBindingFilter) -> Vec<AclBinding> {
        let inner = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        inner
            .acls()
            .matching(filter)
            .map(|(_, acl)| acl.clone())
            .collect()
    }
}

/// Denies everything: what a principal without any ACL gets from Kafka's `StandardAuthorizer`.
#[derive(Debug, Clone, Copy, Default)]
pub struct DenyAll;

impl Authorizer for DenyAll {
    fn authorize(&self, _: &Requester<'_>, _: AclOperation, _: ResourceType, _: &str) -> bool {
        false
    }
}

/// The authorizer `authorizer.class.name` names; none, said loudly, when it names none.
pub fn configured(config: &Config) -> Option<Arc<dyn Authorizer>> {
    let settings = &config.authorizer;
    match settings.kind {
        Some(AuthorizerKind::Standard) => {
            info!(
                authorizer = STANDARD_AUTHORIZER,
                super_users = settings.config.super_users.len(),
                allow_everyone_if_no_acl_found = settings.config.allow_everyone_if_no_acl_found,
                "requests are authorized by ACLs"
            );
            Some(Arc::new(StandardAuthorizer::new(settings.config.clone())))
        }
        None => {
            warn!(
                "no authorizer is configured (authorizer.class.name): every client that can \
                 reach a listener may do everything, as in Kafka without one"
            );
            None
        }
    }
}
