//! Gateway mode's mirror of what the upstream cluster keeps for the shards. The coordinator
//! shards (and every handler reading the topic catalog) see the cluster's topics, fetched with
//! a Metadata for all topics every [`MIRROR_INTERVAL`], and early (at most every
//! [`MIN_SPACING`]) after kcoord created streams internal topics upstream or a streams group
//! found a source topic missing. The catalog is replaced only by a fetch that succeeded: an
//! empty one would make the shards drop the committed offsets of every topic, as if all were
//! deleted. The shards run their groups with the cluster's group configs
//! ([`crate::gateway::group_configs`]), fetched at the same pace, so a group config altered
//! through any node (or at the cluster) applies on every node within a second or so. With an
//! authorizer, the cluster's ACLs ([`crate::gateway::acls`]) are read at the same pace and
//! decide what this node serves itself: loaded once before the listeners open
//! ([`load_acls`]), then kept up to date.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::debug;

use kcoord_acl::AclBinding;
use kcoord_coordinator::GroupConfigRules;
use kcoord_metadata::GroupConfigsImage;

use crate::gateway::topics::UpstreamTopicCreator;
use crate::gateway::Gateway;
use crate::state::ServerState;

/// How often the upstream topics are fetched: a streams group learns of a topic created
/// outside kcoord within this long.
pub(super) const MIRROR_INTERVAL: Duration = Duration::from_secs(1);

/// The least time between two looks when the mirror is asked for one early.
const MIN_SPACING: Duration = Duration::from_millis(100);

/// Creates streams internal topics upstream from now on, and mirrors the upstream topics
/// until shutdown.
pub(super) fn spawn(
    gateway: Arc<Gateway>,
    state: Arc<ServerState>,
    mut shutdown: watch::Receiver<bool>,
) -> JoinHandle<()> {
    state
        .auto_topics
        .create_elsewhere(Arc::new(UpstreamTopicCreator(Arc::clone(&gateway))));
    tokio::spawn(async move {
        let rules = GroupConfigRules::new(state.config.streams.group_config_broker_settings());
        let mut group_configs = GroupConfigsImage::default();
        let mut acls = Vec::new();
        loop {
            mirror_once(&gateway, &state).await;
            mirror_group_configs(&gateway, &state, &rules, &mut group_configs).await;
            mirror_acls(&gateway, &state, &mut acls).await;
            let looked = tokio::time::Instant::now();
            tokio::select! {
                _ = crate::support::shutdown::stopped(&mut shutdown) => break,
                () = tokio::time::sleep(MIRROR_INTERVAL) => {}
                () = gateway.look_wanted() => {
                    // Woken early (many groups may ask at once): one look per MIN_SPACING.
                    tokio::time::sleep_until(looked + MIN_SPACING).await;
                }
            }
        }
    })
}

/// Fetches the upstream topics and publishes them when they changed.
async fn mirror_once(gateway: &Gateway, state: &ServerState) {
    let image = match gateway.topics_image().await {
        Ok(image) => image,
        Err(e) => {
            gateway.log_failure(
                "any",
                "cannot fetch the upstream topics; keeping the last ones",
                &e,
            );
            return;
        }
    };
    if *state.topics.snapshot() == image {
        return;
    }
    debug!(topics = image.len(), "the upstream topics changed");
    let image = Arc::new(image);
    state.topics.publish(Arc::clone(&image));
    state.coordinators.topics_changed(&image).await;
}

/// Fetches the cluster's group configs and hands them to the shards when they differ from
/// `published`, the ones they were last given. A failed fetch keeps the last ones.
async fn mirror_group_configs(
    gateway: &Gateway,
    state: &ServerState,
    rules: &GroupConfigRules,
    published: &mut GroupConfigsImage,
) {
    let image = match gateway.group_configs_image().await {
        Ok(Some(image)) => image,
        // The cluster keeps no group configs kcoord could read (before Kafka 4.1).
        Ok(None) => return,
        Err(e) => {
            gateway.log_failure(
                "any",
                "cannot fetch the upstream group configs; keeping the last ones",
                &e,
            );
            return;
        }
    };
    if image == *published {
        return;
    }
    debug!(
        groups = image.iter().count(),
        "the upstream group configs changed"
    );
    state
        .coordinators
        .group_configs_changed(&image, rules)
        .await;
    *published = image;
}

/// Reads the cluster's ACLs into the authorizer, if there is one: before the listeners open,
/// so that no request is decided without them.
pub(super) async fn load_acls(
    gateway: &Gateway,
    state: &ServerState,
) -> Result<(), crate::gateway::GatewayError> {
    let Some(authorizer) = &state.authorizer else {
        return Ok(());
    };
    let bindings = gateway
        .acls()
        .await
        .map_err(crate::gateway::GatewayError::Acls)?;
    authorizer.acls_loaded(&crate::gateway::acls::index(&bindings));
    debug!(acls = bindings.len(), "read the upstream ACLs");
    Ok(())
}

/// Fetches the cluster's ACLs and hands them to the authorizer when they differ from
/// `published`, the ones it was last given. A failed fetch keeps the last ones.
async fn mirror_acls(gateway: &Gateway, state: &ServerState, published: &mut Vec<AclBinding>) {
    let Some(authorizer) = &state.authorizer else {
        return;
    };
    let bindings = match gateway.acls().await {
        Ok(bindings) => bindings,
        Err(e) => {
            gateway.log_failure(
                "any",
                "cannot fetch the upstream ACLs; keeping the last ones",
                &e,
            );
            return;
        }
    };
    if bindings == *published {
        return;
    }
    debug!(acls = bindings.len(), "the upstream ACLs changed");
    authorizer.acls_loaded(&crate::gateway::acls::index(&bindings));
    *published = bindings;
}
