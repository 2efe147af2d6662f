//! The requests of the matrix's rows ([`super::rows`]).

use bytes::Bytes;
use kcoord_wire::messages::*;

use super::rows::{CHANGELOG, CONSUMER, GROUP, MEMBER, NEW_TOPIC, STREAMS, TOPIC};

pub fn with<T: Default>(f: impl FnOnce(&mut T)) -> T {
    let mut t = T::default();
    f(&mut t);
    t
}

pub fn produce() -> ProduceRequest {
    produce_with(kcoord_record_batches::BatchOptions::default(), None)
}

/// A transactional batch from `transactional_id`.
pub fn produce_transactional(transactional_id: &str) -> ProduceRequest {
    let options = kcoord_record_batches::BatchOptions {
        producer_id: 1,
        producer_epoch: 0,
        base_sequence: 0,
        transactional: true,
        ..Default::default()
    };
    produce_with(options, Some(transactional_id))
}

fn produce_with(
    options: kcoord_record_batches::BatchOptions,
    transactional_id: Option<&str>,
) -> ProduceRequest {
    let mut batch = kcoord_record_batches::BatchBuilder::new(options);
    batch
        .push(0, Some(b"k"), Some(b"v"), &[])
        .unwrap_or_else(|e| panic!("{e}"));
    let batch = batch.build().unwrap_or_else(|e| panic!("{e}"));
    ProduceRequest {
        transactional_id: transactional_id.map(String::from),
        acks: 1,
        timeout_ms: 1000,
        topic_data: vec![with(|t: &mut produce_request::TopicProduceData| {
            t.name = TOPIC.into();
            t.partition_data = vec![produce_request::PartitionProduceData {
                index: 0,
                records: Some(batch.into()),
                ..Default::default()
            }];
        })],
        ..Default::default()
    }
}

pub fn fetch(replica_id: i32) -> FetchRequest {
    FetchRequest {
        replica_id,
        max_wait_ms: 0,
        max_bytes: 1 << 20,
        topics: vec![with(|t: &mut fetch_request::FetchTopic| {
            t.topic = TOPIC.into();
            t.partitions = vec![fetch_request::FetchPartition {
                partition: 0,
                current_leader_epoch: -1,
                last_fetched_epoch: -1,
                log_start_offset: -1,
                partition_max_bytes: 1 << 20,
                ..Default::default()
            }];
        })],
        ..Default::default()
    }
}

pub fn metadata(names: Option<&[&str]>) -> MetadataRequest {
    MetadataRequest {
        topics: names.map(|names| {
            names
                .iter()
                .map(|n| metadata_request::MetadataRequestTopic {
                    name: Some((*n).into()),
                    ..Default::default()
                })
                .collect()
        }),
        allow_auto_topic_creation: true,
        ..Default::default()
    }
}

pub fn offset_fetch(topics: bool) -> OffsetFetchRequest {
    OffsetFetchRequest {
        groups: vec![offset_fetch_request::OffsetFetchRequestGroup {
            group_id: GROUP.into(),
            member_epoch: -1,
            topics: topics.then(|| {
                vec![offset_fetch_request::OffsetFetchRequestTopics {
                    name: TOPIC.into(),
                    partition_indexes: vec![0],
                    ..Default::default()
                }]
            }),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// The committed offset of [`TOPIC`]-0 in [`GROUP`], for the group's setup and the rows.
pub fn offset_commit() -> OffsetCommitRequest {
    OffsetCommitRequest {
        group_id: GROUP.into(),
        generation_id_or_member_epoch: -1,
        topics: vec![offset_commit_request::OffsetCommitRequestTopic {
            name: TOPIC.into(),
            partitions: vec![offset_commit_request::OffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: 1,
                committed_leader_epoch: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

pub fn find_coordinator(key_type: i8, key: &str) -> FindCoordinatorRequest {
    FindCoordinatorRequest {
        key_type,
        coordinator_keys: vec![key.into()],
        ..Default::default()
    }
}

pub fn create_topics() -> CreateTopicsRequest {
    CreateTopicsRequest {
        topics: vec![with(|t: &mut create_topics_request::CreatableTopic| {
            t.name = NEW_TOPIC.into();
            t.num_partitions = 1;
            t.replication_factor = 1;
        })],
        timeout_ms: 1000,
        ..Default::default()
    }
}

/// [`TOPIC`] grown from one partition to two.
pub fn create_partitions() -> CreatePartitionsRequest {
    CreatePartitionsRequest {
        topics: vec![with(
            |t: &mut create_partitions_request::CreatePartitionsTopic| {
                t.name = TOPIC.into();
                t.count = 2;
                t.assignments = None;
            },
        )],
        timeout_ms: 1000,
        ..Default::default()
    }
}

pub fn delete_topics() -> DeleteTopicsRequest {
    DeleteTopicsRequest {
        topic_names: vec![TOPIC.into()],
        timeout_ms: 1000,
        ..Default::default()
    }
}

pub fn offset_delete() -> OffsetDeleteRequest {
    OffsetDeleteRequest {
        group_id: GROUP.into(),
        topics: vec![offset_delete_request::OffsetDeleteRequestTopic {
            name: TOPIC.into(),
            partitions: vec![offset_delete_request::OffsetDeleteRequestPartition {
                partition_index: 0,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

pub fn init_producer_id(transactional_id: Option<&str>) -> InitProducerIdRequest {
    InitProducerIdRequest {
        transactional_id: transactional_id.map(String::from),
        transaction_timeout_ms: 60_000,
        producer_id: -1,
        producer_epoch: -1,
        ..Default::default()
    }
}

pub fn describe_configs(resource_type: i8, name: &str) -> DescribeConfigsRequest {
    DescribeConfigsRequest {
        resources: vec![describe_configs_request::DescribeConfigsResource {
            resource_type,
            resource_name: name.into(),
            configuration_keys: None,
            ..Default::default()
        }],
        ..Default::default()
    }
}

pub fn alter_configs(
    resource_type: i8,
    name: &str,
    key: &str,
    value: &str,
) -> IncrementalAlterConfigsRequest {
    IncrementalAlterConfigsRequest {
        resources: vec![incremental_alter_configs_request::AlterConfigsResource {
            resource_type,
            resource_name: name.into(),
            configs: vec![incremental_alter_configs_request::AlterableConfig {
                name: key.into(),
                config_operation: 0,
                value: Some(value.into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

pub fn legacy_alter_configs(
    resource_type: i8,
    name: &str,
    key: &str,
    value: &str,
) -> AlterConfigsRequest {
    AlterConfigsRequest {
        resources: vec![alter_configs_request::AlterConfigsResource {
            resource_type,
            resource_name: name.into(),
            configs: vec![alter_configs_request::AlterableConfig {
                name: key.into(),
                value: Some(value.into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

pub fn describe_acls() -> DescribeAclsRequest {
    DescribeAclsRequest {
        resource_type_filter: 1,
        pattern_type_filter: 1,
        operation: 1,
        permission_type: 1,
        ..Default::default()
    }
}

/// An ACL for a principal no row uses.
pub fn create_acls() -> CreateAclsRequest {
    CreateAclsRequest {
        creations: vec![create_acls_request::AclCreation {
            resource_type: 2,
            resource_name: "x".into(),
            resource_pattern_type: 3,
            principal: "User:bob".into(),
            host: "*".into(),
            operation: 3,
            permission_type: 3,
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// The ACLs of [`create_acls`]: none, in the rows' nodes.
pub fn delete_acls() -> DeleteAclsRequest {
    DeleteAclsRequest {
        filters: vec![delete_acls_request::DeleteAclsFilter {
            resource_type_filter: 2,
            resource_name_filter: Some("x".into()),
            pattern_type_filter: 3,
            principal_filter: Some("User:bob".into()),
            operation: 1,
            permission_type: 1,
            ..Default::default()
        }],
        ..Default::default()
    }
}

pub fn alter_scram() -> AlterUserScramCredentialsRequest {
    AlterUserScramCredentialsRequest {
        upsertions: vec![
            alter_user_scram_credentials_request::ScramCredentialUpsertion {
                name: "bob".into(),
                mechanism: 1,
                iterations: 4096,
                salt: Bytes::from_static(b"0123456789abcdef"),
                salted_password: Bytes::from_static(&[7; 32]),
                ..Default::default()
            },
        ],
        ..Default::default()
    }
}

/// A KIP-848 consumer joining `group`, subscribed to [`TOPIC`].
pub fn consumer_join(group: &str) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest {
        group_id: group.into(),
        member_id: MEMBER.into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(vec![TOPIC.into()]),
        topic_partitions: Some(Vec::new()),
        ..Default::default()
    }
}

/// ConsumerGroupDescribe of [`CONSUMER`].
pub fn consumer_describe() -> ConsumerGroupDescribeRequest {
    ConsumerGroupDescribeRequest {
        group_ids: vec![CONSUMER.into()],
        ..Default::default()
    }
}

/// A member joining `group` with a topology reading [`TOPIC`], and with the state store
/// whose changelog is [`CHANGELOG`] when `changelog`.
pub fn streams_join(group: &str, changelog: bool) -> StreamsGroupHeartbeatRequest {
    use streams_group_heartbeat_request::{Subtopology, TopicInfo, Topology};
    StreamsGroupHeartbeatRequest {
        group_id: group.into(),
        member_id: MEMBER.into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        topology: Some(Topology {
            epoch: 1,
            subtopologies: vec![Subtopology {
                subtopology_id: "0".into(),
                source_topics: vec![TOPIC.into()],
                state_changelog_topics: if changelog {
                    vec![TopicInfo {
                        name: CHANGELOG.into(),
                        ..Default::default()
                    }]
                } else {
                    Vec::new()
                },
                ..Default::default()
            }],
            ..Default::default()
        }),
        process_id: Some("process".into()),
        active_tasks: Some(Vec::new()),
        standby_tasks: Some(Vec::new()),
        warmup_tasks: Some(Vec::new()),
        ..Default::default()
    }
}

pub fn streams_describe() -> StreamsGroupDescribeRequest {
    StreamsGroupDescribeRequest {
        group_ids: vec![STREAMS.into()],
        ..Default::default()
    }
}

pub fn api_versions() -> ApiVersionsRequest {
    ApiVersionsRequest {
        client_software_name: "matrix".into(),
        client_software_version: "1.0".into(),
        ..Default::default()
    }
}

/// DescribeConfigs' and IncrementalAlterConfigs' resource types.
pub const TOPIC_RESOURCE: i8 = 2;
pub const BROKER_RESOURCE: i8 = 4;
pub const GROUP_RESOURCE: i8 = 32;

/// Sets user bob's producer_byte_rate.
pub fn alter_client_quotas() -> AlterClientQuotasRequest {
    use alter_client_quotas_request::{EntityData, EntryData, OpData};
    AlterClientQuotasRequest {
        entries: vec![EntryData {
            entity: vec![EntityData {
                entity_type: "user".into(),
                entity_name: Some("bob".into()),
                ..Default::default()
            }],
            ops: vec![OpData {
                key: "producer_byte_rate".into(),
                value: 1024.0,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}
