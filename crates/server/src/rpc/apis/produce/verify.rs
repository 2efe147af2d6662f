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
            return Err(Refusal::unverified(code, None));
        }
    };
    if !ctx.server.config.transaction_partition_verification {
        return Ok(Some(guard));
    }
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
        Some(ErrorCode::INVALID_TXN_STATE) => Err(Refusal::unverified(
            ErrorCode::INVALID_TXN_STATE,
            Some("Partition was not added to the transaction".to_owned()),
        )),
        Some(code) => Err(Refusal::unverified(code, None)),
    }
}

/// The first Produce version whose clients know TRANSACTION_ABORTABLE.
const ABORTABLE_VERSION: i16 = 11;

/// Asks the coordinator of `transactional_id` whether `producer_id` at `producer_epoch` has an
/// ongoing transaction that includes `topic`-`partition` (Kafka's AddPartitionsToTxn with
/// `VerifyOnly`), and answers the error to refuse the batch with, translated as Kafka's
/// `AddPartitionsToTxnManager` and `ReplicaManager` translate it for producers: PRODUCER_FENCED
/// is INVALID_PRODUCER_EPOCH, TRANSACTION_ABORTABLE is INVALID_TXN_STATE before Produce v11,
/// and a coordinator that cannot answer yet (loading, busy with the transaction's markers) is
/// NOT_ENOUGH_REPLICAS, which producers retry without a metadata refresh. The coordinator's
/// state is read under its lock without waiting for its log: Kafka verifies against its
/// in-memory state too.
pub(crate) fn transaction_refusal(
    ctx: &RequestContext<'_>,
    transactional_id: &str,
    producer_id: i64,
    producer_epoch: i16,
    topic: &str,
    partition: i32,
) -> Option<ErrorCode> {
    let partitions = [(topic.to_owned(), partition)];
    let shard = ctx
        .server
        .coordinators
        .for_transactional_id(transactional_id);
    let answer = shard.peek(|s| {
        s.verify_partitions_in_transaction(
            transactional_id,
            producer_id,
            producer_epoch,
            &partitions,
        )
    });
    let code = match answer {
        Ok(codes) => codes.first().copied().unwrap_or(ErrorCode::NONE),
        Err(e) => e.error_code(),
    };
    match code {
        ErrorCode::NONE => None,
        ErrorCode::PRODUCER_FENCED => Some(ErrorCode::INVALID_PRODUCER_EPOCH),
        ErrorCode::TRANSACTION_ABORTABLE if ctx.header.request_api_version < ABORTABLE_VERSION => {
            Some(ErrorCode::INVALID_TXN_STATE)
        }
        // Transaction version 2 (Produce v12+) keeps it: it is common while a commit's
        // markers are written, and clients retry it.
        ErrorCode::CONCURRENT_TRANSACTIONS
            if ctx.header.request_api_version >= super::implicit_add::IMPLICIT_ADD_VERSION =>
        {
            Some(ErrorCode::CONCURRENT_TRANSACTIONS)
        }
        ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
        | ErrorCode::COORDINATOR_NOT_AVAILABLE
        | ErrorCode::NOT_COORDINATOR
        | ErrorCode::CONCURRENT_TRANSACTIONS => Some(ErrorCode::NOT_ENOUGH_REPLICAS),
        other => Some(other),
    }
}
