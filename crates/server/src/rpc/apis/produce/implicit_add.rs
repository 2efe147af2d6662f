//! Transaction version 2 for Produce (v12+, KIP-890 part 2): the producer sends no
//! AddPartitionsToTxn, and the broker adds a partition to the transaction when the
//! transaction's first batch for it arrives (Kafka's `AddPartitionsToTxnManager` with the
//! add-partition operation: AddPartitionsToTxn v5 to the coordinator). Here the coordinator's
//! shard adds them before the request is validated, and waits for its log; the verification
//! that follows (`verify.rs`) then finds them in the transaction, or answers the coordinator's
//! refusal.

use std::collections::BTreeMap;

use kcoord_coordinator::transactions::TV_2;
use kcoord_record_batches::BatchHeader;
use kcoord_wire::messages::ProduceRequest;
use tracing::debug;

use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::state::RequestContext;

/// The first Produce version whose transactional batches add their partition.
pub(super) const IMPLICIT_ADD_VERSION: i16 = 12;

/// Adds to their producer's transaction the partitions where a transactional batch of `req`
/// would start it.
pub(super) async fn add_partitions(ctx: &RequestContext<'_>, req: &ProduceRequest, version: i16) {
    // Whatever `transaction.partition.verification.enable` says: at version 2 this is how a
    // partition joins the transaction, as in Kafka.
    if version < IMPLICIT_ADD_VERSION {
        return;
    }
    let Some(id) = req.transactional_id.as_deref() else {
        return;
    };
    // Refused later, with Kafka's answer (`whole_request_refusal`).
    if !authorize(ctx, AclOperation::Write, ResourceType::TransactionalId, id) {
        return;
    }
    for ((producer_id, epoch), partitions) in starting_partitions(ctx, req, version) {
        let shard = ctx.server.coordinators.for_transactional_id(id);
        let added = shard
            .call(|s, now| {
                s.add_partitions_to_transaction(id, producer_id, epoch, &partitions, TV_2, now)
            })
            .await;
        debug!(transactional_id = id, producer_id, epoch, partitions = partitions.len(), answer = ?added, "partitions added by Produce");
    }
}

/// Per producer id and epoch, the partitions whose transactional batch would start its
/// transaction there (its log has no transaction of that producer going on).
fn starting_partitions(
    ctx: &RequestContext<'_>,
    req: &ProduceRequest,
    version: i16,
) -> BTreeMap<(i64, i16), Vec<(String, i32)>> {
    let image = ctx.server.topics.snapshot();
    let mut starting: BTreeMap<(i64, i16), Vec<(String, i32)>> = BTreeMap::new();
    for t in &req.topic_data {
        let topic = if version >= super::TOPIC_ID_VERSION {
            image.get_by_id(&t.topic_id)
        } else {
            image.get(&t.name)
        };
        let Some(topic) = topic else { continue };
        for p in &t.partition_data {
            let Some(header) = p
                .records
                .as_ref()
                .and_then(|r| BatchHeader::parse(&r.to_bytes()).ok())
                .filter(|h| h.is_transactional() && h.has_producer_id())
            else {
                continue;
            };
            let Some(partition) = ctx.server.partitions.get(topic.id, p.index) else {
                continue;
            };
            let (pid, epoch) = (header.producer_id, header.producer_epoch);
            if !partition.log().has_ongoing_transaction(pid, epoch) {
                starting
                    .entry((pid, epoch))
                    .or_default()
                    .push((topic.name.clone(), p.index));
            }
        }
    }
    starting
}
