//! The request context a topology description plugin sees (KIP-1331's `RequestContext`),
//! built from the request being handled.
use std::fmt::Write as _;

use kcoord_plugin_api::{RequestContext as PluginContext, Uuid};

use crate::runtime::topology_plugin::{set_str, PushAnswer, TopologyDescriptions};
use crate::state::RequestContext;

/// The request context a plugin sees for the request being handled ([`refill`] must agree).
pub fn plugin_context(ctx: &RequestContext<'_>) -> PluginContext {
    PluginContext {
        principal: ctx.principal.to_string(),
        client_id: ctx.header.client_id.clone().unwrap_or_default(),
        client_address: ctx.peer.ip(),
        listener_name: ctx.listener.name.clone(),
        api_key: ctx.header.request_api_key,
        api_version: ctx.header.request_api_version,
        correlation_id: ctx.header.correlation_id,
    }
}

/// Makes `pctx` what [`plugin_context`] would build for `ctx`, reusing its buffers.
fn refill(pctx: &mut PluginContext, ctx: &RequestContext<'_>) {
    let set = set_str;
    // Every field named, so a field added to the context cannot be left stale here.
    let PluginContext {
        principal,
        client_id,
        client_address,
        listener_name,
        api_key,
        api_version,
        correlation_id,
    } = pctx;
    principal.clear();
    // Into the reused buffer: no allocation on the heartbeat path.
    let _ = write!(principal, "{}", ctx.principal);
    set(
        client_id,
        ctx.header.client_id.as_deref().unwrap_or_default(),
    );
    *client_address = ctx.peer.ip();
    set(listener_name, &ctx.listener.name);
    *api_key = ctx.header.request_api_key;
    *api_version = ctx.header.request_api_version;
    *correlation_id = ctx.header.correlation_id;
}

/// `requires_topology_push` for the request being handled, with the plugin's context built as
/// [`plugin_context`] builds it, into reused buffers: the heartbeat path.
pub fn requires_push(
    topology: &TopologyDescriptions,
    ctx: &RequestContext<'_>,
    group_id: &str,
    id: Uuid,
) -> PushAnswer {
    topology.requires_push_with(group_id, id, |pctx| refill(pctx, ctx))
}

#[cfg(test)]
mod context_tests {
    use std::net::SocketAddr;

    use kcoord_wire::messages::RequestHeader;

    use std::sync::{Arc, Mutex, PoisonError};
    use std::time::Duration;

    use kcoord_plugin_api::{
        PluginError, StreamsGroupTopologyDescription, StreamsGroupTopologyDescriptionPlugin, Uuid,
    };

    use super::*;
    use crate::config::ListenerKind;
    use crate::rpc::testing;
    use crate::runtime::topology_plugin::{copy_context, TopologyDescriptions};

    #[tokio::test]
    async fn the_reused_context_is_the_one_plugin_context_builds() {
        let server = testing::server();
        let c = testing::Ctx::new(&server, ListenerKind::Broker);
        let first = c.ctx(&server);
        let controller = testing::listener(&server, ListenerKind::Controller);
        let header = RequestHeader {
            request_api_key: 88,
            request_api_version: 2,
            correlation_id: 42,
            client_id: Some("a-much-longer-client-id-than-the-first-one".to_owned()),
            ..Default::default()
        };
        let alice = kcoord_acl::KafkaPrincipal::user("alice");
        let second = RequestContext {
            listener: &controller,
            principal: &alice,
            peer: SocketAddr::from(([10, 0, 0, 9], 50000)),
            header: &header,
            mute: None,
            ..first
        };
        let no_client_id = RequestHeader {
            client_id: None,
            ..header.clone()
        };
        let third = RequestContext {
            header: &no_client_id,
            mute: None,
            ..first
        };
        let mut reused = PluginContext::internal(0, 0);
        for ctx in [first, second, third, first, first] {
            refill(&mut reused, &ctx);
            assert_eq!(reused, plugin_context(&ctx));
        }
        let mut copied = PluginContext::internal(0, 0);
        for ctx in [second, third, first] {
            copy_context(&mut copied, &plugin_context(&ctx));
            assert_eq!(copied, plugin_context(&ctx));
        }
        // The guarded call hands the plugin that same context.
        struct Recording(Mutex<Vec<PluginContext>>);
        #[async_trait::async_trait]
        impl StreamsGroupTopologyDescriptionPlugin for Recording {
            fn requires_topology_push(&self, ctx: &PluginContext, _: &str, _: Uuid) -> bool {
                self.0
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(ctx.clone());
                true
            }
            async fn set_topology(
                &self,
                _: &PluginContext,
                _: &str,
                _: Uuid,
                _: StreamsGroupTopologyDescription,
            ) -> Result<(), PluginError> {
                Ok(())
            }
            async fn delete_topology(&self, _: &PluginContext, _: &str) -> Result<(), PluginError> {
                Ok(())
            }
            async fn get_topology(
                &self,
                _: &PluginContext,
                _: &str,
                _: Uuid,
            ) -> Result<Option<StreamsGroupTopologyDescription>, PluginError> {
                Ok(None)
            }
        }
        let plugin = Arc::new(Recording(Mutex::new(Vec::new())));
        let t = TopologyDescriptions::new(plugin.clone(), "recording", Duration::from_secs(1))
            .expect("threads");
        // The second question reuses the first one's buffers (this thread's spare).
        assert!(requires_push(&t, &second, "g", Uuid::from_u128(1)).await);
        assert!(requires_push(&t, &first, "g", Uuid::from_u128(1)).await);
        let seen = plugin
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        assert_eq!(seen, [plugin_context(&second), plugin_context(&first)]);
        assert!(
            !requires_push(
                &TopologyDescriptions::disabled(),
                &first,
                "g",
                Uuid::from_u128(1)
            )
            .await
        );
    }
}
