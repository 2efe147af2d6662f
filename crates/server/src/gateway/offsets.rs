//! A group's committed offsets and partitions' log end offsets as the upstream cluster has them:
//! in gateway mode both live there (a streams group's offsets too, `rpc/streams_offsets.rs`),
//! so the HTTP listener's lag is read from the cluster, as a Kafka admin client reads it.

use std::collections::BTreeMap;
use std::sync::Arc;

use kcoord_client::consume::LATEST_TIMESTAMP;
use kcoord_client::{ClientError, Consumer};

use super::Gateway;

/// How many ListOffsets are in flight at once while the end offsets are read.
const IN_FLIGHT: usize = 32;

impl Gateway {
    /// Every offset `group_id` has committed in the cluster, by (topic, partition).
    pub async fn committed_offsets(
        &self,
        group_id: &str,
    ) -> Result<BTreeMap<(String, i32), i64>, ClientError> {
        let fetched = self
            .cluster_client()
            .await?
            .fetch_offsets(group_id, None, false)
            .await?;
        Ok(fetched
            .into_iter()
            .filter_map(|(tp, result)| {
                let offset = result.ok().flatten()?.offset;
                (offset >= 0).then_some(((tp.topic, tp.partition), offset))
            })
            .collect())
    }

    /// The log end offsets of `partitions` in the cluster; a partition that cannot be read
    /// (no leader at the moment, unknown) is left out.
    pub async fn log_end_offsets(
        &self,
        partitions: Vec<(String, i32)>,
    ) -> Result<BTreeMap<(String, i32), i64>, ClientError> {
        let consumer = Arc::new(Consumer::new(self.cluster_client().await?));
        let mut ends = BTreeMap::new();
        for chunk in partitions.chunks(IN_FLIGHT) {
            let mut reads = tokio::task::JoinSet::new();
            for (topic, partition) in chunk.iter().cloned() {
                let consumer = Arc::clone(&consumer);
                reads.spawn(async move {
                    let end = consumer
                        .list_offsets(&topic, partition, LATEST_TIMESTAMP)
                        .await;
                    end.ok().map(|(offset, _)| ((topic, partition), offset))
                });
            }
            while let Some(read) = reads.join_next().await {
                if let Ok(Some((tp, offset))) = read {
                    ends.insert(tp, offset);
                }
            }
        }
        Ok(ends)
    }
}
