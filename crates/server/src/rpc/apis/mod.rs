//! One module per RPC. Each handler is a function
//! `fn handle(&RequestContext, Request, version) -> Response` (`async` when it waits for the
//! controller or a coordinator shard), testable without sockets; `dispatch.rs` decodes, calls
//! and encodes.

mod acls;
pub mod alter_user_scram_credentials;
pub mod api_versions;
pub mod broker_heartbeat;
pub mod broker_registration;
pub mod create_acls;
pub mod create_topics;
pub mod delete_acls;
pub mod delete_groups;
pub mod delete_records;
pub mod delete_topics;
pub mod describe_acls;
pub mod describe_cluster;
pub mod describe_configs;
pub mod describe_groups;
pub mod describe_user_scram_credentials;
pub mod fetch;
pub mod find_coordinator;
mod groups;
pub mod incremental_alter_configs;
pub mod init_producer_id;
pub mod list_groups;
pub mod list_offsets;
pub mod list_topics;
pub mod metadata;
pub mod offset_commit;
pub mod offset_delete;
pub mod offset_fetch;
pub mod offset_for_leader_epoch;
pub mod produce;
pub mod sasl;
pub mod streams_group_describe;
pub mod streams_group_heartbeat;
pub mod streams_group_topology_description_update;
mod topology_push;
pub mod update_streams_group_topology_description;

/// The "not requested" value of the `*AuthorizedOperations` fields.
pub const AUTHORIZED_OPERATIONS_OMITTED: i32 = i32::MIN;

/// Without an authorizer Kafka grants every operation the resource type supports
/// (`AuthHelper.authorizedOperations`, `AclEntry.supportedOperations`), as a bit field of
/// `AclOperation` codes. CLUSTER: CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9,
/// DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12.
pub const CLUSTER_AUTHORIZED_OPERATIONS: i32 = bits(&[5, 7, 8, 9, 10, 11, 12]);

/// TOPIC: READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8, DESCRIBE_CONFIGS 10,
/// ALTER_CONFIGS 11.
pub const TOPIC_AUTHORIZED_OPERATIONS: i32 = bits(&[3, 4, 5, 6, 7, 8, 10, 11]);

const fn bits(codes: &[u8]) -> i32 {
    let mut field = 0i32;
    let mut i = 0;
    while i < codes.len() {
        field |= 1 << codes[i];
        i += 1;
    }
    field
}

/// A request's list without repeats: the first occurrence of each item, in order (Kafka reads
/// these lists into sets). Linear in the list, where a scan per item would be quadratic.
pub(crate) fn first_occurrences<T: std::hash::Hash + Eq + Clone>(
    items: impl IntoIterator<Item = T>,
) -> Vec<T> {
    let mut seen = std::collections::HashSet::new();
    items
        .into_iter()
        .filter(|item| seen.insert(item.clone()))
        .collect()
}

#[cfg(test)]
pub(crate) mod testing;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorized_operation_bit_fields() {
        assert_eq!(CLUSTER_AUTHORIZED_OPERATIONS, 0x1fa0);
        assert_eq!(TOPIC_AUTHORIZED_OPERATIONS, 0x0df8);
    }
}
