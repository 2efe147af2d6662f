//! The RPCs: one file per RPC in `apis/`, each declaring itself once ([`Rpc`]); the one
//! dispatch, version negotiation, authorization as Kafka's `KafkaApis` asks it, and SASL
//! before a connection is authenticated.
//!
//! An RPC's declaration is the one place its key, served versions, listeners and the questions
//! it asks the authorizer are written. Dispatch ([`apis::serve`]), ApiVersions
//! ([`versions`]) and the checks of the authorization matrix all come from the declarations,
//! which `build.rs` collects from the files of `apis/` ([`apis::ALL`]).
pub mod acls;
pub mod apis;
pub mod authentication;
pub mod authorize;
pub mod bulk;
pub mod by_group;
pub mod configs;
pub mod dispatch;
pub mod groups;
pub mod lists;
pub mod merged;
pub mod owner_proxy;
pub mod plugin_context;
pub(crate) mod quotas;
pub mod split;
pub mod streams_offsets;
#[cfg(test)]
pub(crate) mod testing;
pub mod topology_push;
pub mod versions;

use kcoord_wire::api::ApiKey;

use crate::config::ListenerKind;
use authorize::{AclOperation, ResourceType};

/// Which listeners serve an RPC (within what its schema allows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listeners {
    Broker,
    Controller,
    BrokerAndController,
}

impl Listeners {
    pub fn include(self, kind: ListenerKind) -> bool {
        match self {
            Listeners::Broker => kind == ListenerKind::Broker,
            Listeners::Controller => kind == ListenerKind::Controller,
            Listeners::BrokerAndController => true,
        }
    }
}

/// What a gateway (kcoord with `upstream.bootstrap.servers`, docs/gateway.md) does with an
/// RPC that arrives on a broker listener. The controller listener serves everything itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gateway {
    /// Served by kcoord, as in standalone mode.
    Local,
    /// Sent to the upstream cluster as it came, the answer returned as it comes back.
    Forwarded,
    /// Forwarded, and the answer's brokers mapped onto kcoord's endpoints.
    Rewritten,
    /// Served by kcoord when every group the request names is a streams group it
    /// coordinates, forwarded otherwise ([`by_group`]).
    ByGroup,
    /// Forwarded, and kcoord's own answer for its streams groups merged into the cluster's
    /// ([`merged`]).
    Merged,
    /// Forwarded; it changes what kcoord mirrors from the cluster (topics, group configs,
    /// ACLs), so the mirror looks again as soon as the answer is back, not at its next turn.
    Mirrored,
    /// Forwarded; it changes what kcoord learns of the cluster at a refresh (its finalized
    /// features, which kcoord's ApiVersions lists), so once the answer is back kcoord learns the
    /// cluster again each second for a few seconds, until the change shows.
    Refreshed,
    /// SASL credentials: kcoord's own, served by kcoord, while it checks its clients'
    /// credentials itself; the cluster's, forwarded, once the cluster checks them
    /// (`gateway.authentication=upstream`).
    Credentials,
}

impl Gateway {
    /// Whether kcoord serves the RPC itself, `upstream_authenticates` as
    /// `gateway.authentication` says.
    pub fn is_local(self, upstream_authenticates: bool) -> bool {
        match self {
            Gateway::Local => true,
            Gateway::Credentials => !upstream_authenticates,
            Gateway::Forwarded
            | Gateway::Mirrored
            | Gateway::Refreshed
            | Gateway::Rewritten
            | Gateway::ByGroup
            | Gateway::Merged => false,
        }
    }
}

/// A question an RPC may ask the authorizer: an operation on a type of resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Check {
    pub operation: AclOperation,
    pub resource: ResourceType,
}

impl Check {
    pub const fn new(operation: AclOperation, resource: ResourceType) -> Check {
        Check {
            operation,
            resource,
        }
    }
}

/// One RPC as kcoord serves it.
#[derive(Debug, Clone, Copy)]
pub struct Rpc {
    pub api: ApiKey,
    /// The versions served, both included; anything else closes the connection (ApiVersions
    /// answers UNSUPPORTED_VERSION).
    pub min_version: i16,
    pub max_version: i16,
    /// The lowest version ApiVersions lists (below `min_version` only for Produce).
    pub advertised_min_version: i16,
    pub listeners: Listeners,
    /// Listed by ApiVersions only when a topology description plugin is configured
    /// (KIP-1331's pushes, which are still accepted without one, to answer
    /// UNSUPPORTED_VERSION in a response).
    pub only_with_topology_plugin: bool,
    /// Every question the RPC may ask the authorizer; the authorization matrix checks that
    /// its rows ask exactly these.
    pub asks: &'static [Check],
    /// What a gateway does with it (forwarded unless the file says otherwise: a broker's RPC
    /// is the cluster's business unless kcoord coordinates it).
    pub gateway: Gateway,
    /// Served by a standalone node too; `false` for the cluster-administration RPCs a gateway
    /// forwards and a standalone node has nothing to answer with ([`Rpc::gateway_only`]).
    pub standalone: bool,
}

impl Rpc {
    /// `api` at versions `min` to `max`, on broker listeners, asking nothing.
    pub const fn new(api: ApiKey, min: i16, max: i16) -> Rpc {
        Rpc {
            api,
            min_version: min,
            max_version: max,
            advertised_min_version: min,
            listeners: Listeners::Broker,
            only_with_topology_plugin: false,
            asks: &[],
            gateway: Gateway::Forwarded,
            standalone: true,
        }
    }

    /// Neither listed nor served by a standalone node; forwarded by a gateway, which lists it
    /// at the versions the cluster serves too.
    pub const fn gateway_only(self) -> Rpc {
        Rpc {
            gateway: Gateway::Forwarded,
            standalone: false,
            ..self
        }
    }

    /// Served by kcoord itself in gateway mode.
    pub const fn local_in_gateway(self) -> Rpc {
        Rpc {
            gateway: Gateway::Local,
            ..self
        }
    }

    /// Forwarded in gateway mode, the mirror woken by its answer ([`Gateway::Mirrored`]).
    pub const fn mirrored_in_gateway(self) -> Rpc {
        Rpc {
            gateway: Gateway::Mirrored,
            ..self
        }
    }

    /// Forwarded in gateway mode, kcoord learning the cluster again after its answer
    /// ([`Gateway::Refreshed`]).
    pub const fn refreshed_in_gateway(self) -> Rpc {
        Rpc {
            gateway: Gateway::Refreshed,
            ..self
        }
    }

    /// In gateway mode, kcoord's or the cluster's as the credentials are ([`Gateway::Credentials`]).
    pub const fn credentials_in_gateway(self) -> Rpc {
        Rpc {
            gateway: Gateway::Credentials,
            ..self
        }
    }

    /// In gateway mode, served or forwarded by the groups it names ([`Gateway::ByGroup`]).
    pub const fn by_group_in_gateway(self) -> Rpc {
        Rpc {
            gateway: Gateway::ByGroup,
            ..self
        }
    }

    /// Forwarded in gateway mode with kcoord's own answer merged in ([`Gateway::Merged`]).
    pub const fn merged_in_gateway(self) -> Rpc {
        Rpc {
            gateway: Gateway::Merged,
            ..self
        }
    }

    /// Forwarded in gateway mode with the brokers of its answer mapped onto kcoord's.
    pub const fn rewritten_in_gateway(self) -> Rpc {
        Rpc {
            gateway: Gateway::Rewritten,
            ..self
        }
    }

    pub const fn served_on(self, listeners: Listeners) -> Rpc {
        Rpc { listeners, ..self }
    }

    pub const fn asks(self, asks: &'static [Check]) -> Rpc {
        Rpc { asks, ..self }
    }

    pub const fn advertised_from(self, version: i16) -> Rpc {
        Rpc {
            advertised_min_version: version,
            ..self
        }
    }

    pub const fn only_with_topology_plugin(self) -> Rpc {
        Rpc {
            only_with_topology_plugin: true,
            ..self
        }
    }
}

/// Writes an RPC file's `serve`: decodes the request, runs `handle`, encodes its response.
/// `sync` and `async` handlers return the response; `checked` ones return `Err` for a request
/// Kafka's parser refuses (an UNKNOWN code in an ACL request), which closes the connection.
macro_rules! serve {
    (sync $handler:path) => {
        $crate::rpc::serve!(@fn respond [&], $handler,);
    };
    (async $handler:path) => {
        $crate::rpc::serve!(@fn respond [&], $handler, .await);
    };
    (checked async $handler:path) => {
        $crate::rpc::serve!(@fn respond_checked [], $handler, .await);
    };
    (checked $handler:path) => {
        $crate::rpc::serve!(@fn respond_checked [], $handler,);
    };
    (@fn $respond:ident [$($ref:tt)?], $handler:path, $($await:tt)*) => {
        /// Decodes the request, runs the handler, encodes its response.
        pub(crate) async fn serve(
            ctx: &$crate::state::RequestContext<'_>,
            api: kcoord_wire::api::ApiKey,
            version: i16,
            body: bytes::Bytes,
        ) -> $crate::rpc::dispatch::Reply {
            match $crate::rpc::dispatch::decode(ctx, api, version, body) {
                Ok(request) => {
                    let response = $handler(ctx, request, version)$($await)*;
                    $crate::rpc::dispatch::$respond(ctx, api, version, $($ref)? response)
                }
                Err(reply) => reply,
            }
        }
    };
}
pub(crate) use serve;

/// Writes the `serve` and matrix rows of an RPC only a gateway forwards ([`Rpc::gateway_only`]):
/// dispatch forwards it before `serve` could run, and a standalone node closes a connection
/// that asks for it before dispatch, so `serve` only answers a disagreement of the two.
macro_rules! forwarded_only {
    () => {
        /// Never reached: a gateway forwards this RPC, a standalone node does not serve it.
        pub(crate) async fn serve(
            ctx: &$crate::state::RequestContext<'_>,
            api: kcoord_wire::api::ApiKey,
            _version: i16,
            _body: bytes::Bytes,
        ) -> $crate::rpc::dispatch::Reply {
            $crate::rpc::dispatch::not_served(ctx, api)
        }

        /// None: the cluster authorizes what a gateway forwards, and a standalone node does not
        /// serve it.
        #[cfg(test)]
        pub(crate) fn authorization_rows() -> Vec<$crate::rpc::authorize::matrix_tests::rows::Row> {
            Vec::new()
        }
    };
}
pub(crate) use forwarded_only;
