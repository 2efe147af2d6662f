//! Images: the state that replaying records builds. Nothing else mutates them.
pub mod broker_configs;
pub mod brokers;
pub mod classic_groups;
pub mod client_quotas;
pub mod consumer_groups;
pub mod features;
pub mod group_configs;
pub mod keyed_map;
pub mod offsets;
pub mod process_id;
pub mod producer_ids;
pub mod security;
pub mod streams;
pub mod tasks;
pub mod topics;
pub mod transactions;
pub mod txn_offsets;
pub mod vec_map;

/// Changes what `slot` holds, boxed on first use: a value left at its default is not kept
/// boxed, so a member whose last rare field was cleared equals one that never had any (as its
/// replayed record makes it).
pub(crate) fn change_boxed<T: Default + PartialEq>(
    slot: &mut Option<Box<T>>,
    change: impl FnOnce(&mut T),
) {
    let mut value = slot.take().unwrap_or_default();
    change(&mut value);
    *slot = (*value != T::default()).then_some(value);
}
