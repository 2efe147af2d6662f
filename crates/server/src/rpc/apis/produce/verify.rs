//! KIP-890 part 1 for Produce: before a partition takes the first transactional batch of a
//! producer's transaction, the transaction coordinator must confirm that the transaction
//! includes the partition (Kafka's `ReplicaManager.appendRecords` with
//! `transaction.partition.verification.enable`: AddPartitionsToTxn with `VerifyOnly`).
//! The partition's side of it is `kcoord_storage::producer_state::verification`.

use kcoord_storage::{IncomingBatch, VerificationGuard};
use kcoord_wire::ErrorCode;
use tracing::debug;

use super::Refusal;
use crate::runtime::partitions::Partition;
use crate::state::RequestContext;

/// The guard a transactional batch is appended with: `None` for a batch that needs none (not
/// transactional, or its producer's transaction is already ongoing in the partition), or the
/// refusal of the batch (an older producer epoch, or the coordinator's answer).
pub(super) fn verified(
    ctx: &RequestContext<'_>,
    transactional_id: Option<&str>,
    partition: &Partition,
    batch: &IncomingBatch,
    now_ms: i64,
) -> Result<Option<VerificationGuard>, Refusal> {
    if !batch.is_transactional || batch.producer_id < 0 {
        return Ok(None);
    }
    let started = partition.log().maybe_start_transaction_verification(
        batch.producer_id,
        batch.base_sequence,
        batch.producer_epoch,
        now_ms,
    );
    let guard = match started {
        Ok(None) => return Ok(None),
        Ok(Some(guard)) => guard,
        Err(e) => {
            debug!(partition = %partition.name(), error = %e, "transactional produce refused");
            let code = ErrorCode::from_code(e.error_code()).unwrap_or(ErrorCode::INVALID_TXN_STATE);
            return Err(Refusal::code(code));
        }
    };
    // Asked without the partition's lock: the coordinator may take its time.
    let refusal = transaction_refusal(
        ctx,
        transactional_id.unwrap_or_default(),
        batch.producer_id,
        batch.producer_epoch,
        &partition.topic,
        partition.index,
    );
    match refusal {
        None => Ok(Some(guard)),
        Some(code) => Err(Refusal::code(code)),
    }
}

/// THE HOOK: the transaction coordinator fills this in. Asks the coordinator of
/// `transactional_id` whether `producer_id` at `producer_epoch` has an ongoing transaction
/// that includes `topic`-`partition` (Kafka's AddPartitionsToTxn v4+ with `VerifyOnly`), and
/// answers the error to refuse the batch with: `None` when verified; else Kafka's answers,
/// such as INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE (the partition is not in the
/// transaction), NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE / COORDINATOR_LOAD_IN_PROGRESS
/// (Kafka maps these to NOT_ENOUGH_REPLICAS for the producer to retry). Called only for a
/// batch that would start the producer's transaction in this partition, without the
/// partition's lock.
///
/// Until the coordinator is wired in, every transaction counts as verified.
pub(crate) fn transaction_refusal(
    _ctx: &RequestContext<'_>,
    _transactional_id: &str,
    _producer_id: i64,
    _producer_epoch: i16,
    _topic: &str,
    _partition: i32,
) -> Option<ErrorCode> {
    None
}
