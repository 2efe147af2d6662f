//! Producer ids for InitProducerId: taken from a block the controller recorded in the metadata
//! log (Kafka's `RPCProducerIdManager`), a new block asked for when one runs out. Ids are never
//! handed out twice, across restarts too, because a block is in the log before any id of it is
//! used.

use std::sync::{Mutex, PoisonError};

use tracing::warn;

use crate::runtime::controller::ControllerHandle;

#[derive(Debug, Default)]
pub struct ProducerIds {
    /// `next..end` of the current block.
    block: Mutex<(i64, i64)>,
    /// Held while a new block is asked for, so only one request goes to the controller.
    refill: tokio::sync::Mutex<()>,
}

/// No id could be allocated; InitProducerId answers COORDINATOR_NOT_AVAILABLE (retriable).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no producer id could be allocated: {0}")]
pub struct NoProducerId(pub String);

impl ProducerIds {
    fn take(&self) -> Option<i64> {
        let mut block = self.block.lock().unwrap_or_else(PoisonError::into_inner);
        (block.0 < block.1).then(|| {
            block.0 += 1;
            block.0 - 1
        })
    }

    pub async fn next(&self, controller: &ControllerHandle) -> Result<i64, NoProducerId> {
        if let Some(id) = self.take() {
            return Ok(id);
        }
        let _refilling = self.refill.lock().await;
        if let Some(id) = self.take() {
            return Ok(id);
        }
        let block = controller
            .allocate_producer_ids()
            .await
            .map_err(|e| NoProducerId(e.to_string()))?
            .map_err(|e| {
                warn!(error = %e, "the controller could not allocate producer ids");
                NoProducerId(e)
            })?;
        *self.block.lock().unwrap_or_else(PoisonError::into_inner) =
            (block.first, block.first + block.size);
        self.take()
            .ok_or_else(|| NoProducerId("the controller returned an empty block".into()))
    }
}
