//! Gateway mode's topic mirror: the coordinator shards (and every handler reading the topic
//! catalog) see the upstream cluster's topics, fetched with a Metadata for all topics every
//! [`MIRROR_INTERVAL`], and early (at most every [`MIN_SPACING`]) after kcoord created streams
//! internal topics upstream or a streams group found a source topic missing. The
//! catalog is replaced only by a fetch that succeeded: an empty one would make the shards
//! drop the committed offsets of every topic, as if all were deleted.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::debug;

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
        loop {
            mirror_once(&gateway, &state).await;
            let looked = tokio::time::Instant::now();
            tokio::select! {
                _ = crate::support::shutdown::stopped(&mut shutdown) => break,
                () = tokio::time::sleep(MIRROR_INTERVAL) => {}
                () = gateway.topics_wanted() => {
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
