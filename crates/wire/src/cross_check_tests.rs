//! Independent check of the generated codecs: for the messages kafka-protocol also ships,
//! bytes written by our encoder are read by kafka-protocol's decoder and written back by its
//! encoder; the bytes must not change. A field in the wrong place, a wrong width or a wrong
//! nullability shows up as different bytes or a decode error.
use bytes::BytesMut;
use kafka_protocol::messages as kp;
use kafka_protocol::protocol::{Decodable, Encodable};
use rand::SeedableRng;

use crate::messages as ours;

fn check<O, T>(
    name: &str,
    versions: std::ops::RangeInclusive<i16>,
    make: fn(&mut rand::rngs::StdRng, i16) -> O,
) where
    O: Encodable,
    T: Encodable + Decodable,
{
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x6b636f6f7264);
    for version in versions {
        for _ in 0..48 {
            let value = make(&mut rng, version);
            let mut ours_bytes = BytesMut::new();
            value.encode(&mut ours_bytes, version).unwrap();
            let ours_bytes = ours_bytes.freeze();
            let mut input = ours_bytes.clone();
            let theirs = T::decode(&mut input, version).unwrap_or_else(|e| {
                panic!("{name} v{version}: kafka-protocol cannot decode our bytes: {e}")
            });
            assert!(
                input.is_empty(),
                "{name} v{version}: kafka-protocol left {} bytes",
                input.len()
            );
            let mut theirs_bytes = BytesMut::new();
            theirs.encode(&mut theirs_bytes, version).unwrap();
            assert_eq!(
                theirs_bytes.freeze(),
                ours_bytes,
                "{name} v{version}: bytes differ after kafka-protocol round trip"
            );
        }
    }
}

macro_rules! cross_check {
    ($test:ident, $ours:ident, $theirs:path, $versions:expr) => {
        #[test]
        fn $test() {
            check::<ours::$ours, $theirs>(stringify!($ours), $versions, |rng, v| {
                ours::$ours::arbitrary(rng, v)
            });
        }
    };
}

cross_check!(request_header, RequestHeader, kp::RequestHeader, 1..=2);
cross_check!(response_header, ResponseHeader, kp::ResponseHeader, 0..=1);
cross_check!(
    api_versions_request,
    ApiVersionsRequest,
    kp::ApiVersionsRequest,
    0..=4
);
cross_check!(
    api_versions_response,
    ApiVersionsResponse,
    kp::ApiVersionsResponse,
    0..=4
);
cross_check!(
    metadata_request,
    MetadataRequest,
    kp::MetadataRequest,
    0..=13
);
cross_check!(
    metadata_response,
    MetadataResponse,
    kp::MetadataResponse,
    0..=13
);
cross_check!(
    find_coordinator_request,
    FindCoordinatorRequest,
    kp::FindCoordinatorRequest,
    0..=6
);
cross_check!(
    find_coordinator_response,
    FindCoordinatorResponse,
    kp::FindCoordinatorResponse,
    0..=6
);
cross_check!(
    describe_cluster_request,
    DescribeClusterRequest,
    kp::DescribeClusterRequest,
    0..=2
);
cross_check!(
    describe_cluster_response,
    DescribeClusterResponse,
    kp::DescribeClusterResponse,
    0..=2
);
cross_check!(
    broker_registration_request,
    BrokerRegistrationRequest,
    kp::BrokerRegistrationRequest,
    0..=4
);
cross_check!(
    broker_registration_response,
    BrokerRegistrationResponse,
    kp::BrokerRegistrationResponse,
    0..=4
);
cross_check!(
    broker_heartbeat_request,
    BrokerHeartbeatRequest,
    kp::BrokerHeartbeatRequest,
    0..=1
);
cross_check!(
    broker_heartbeat_response,
    BrokerHeartbeatResponse,
    kp::BrokerHeartbeatResponse,
    0..=1
);
cross_check!(
    create_topics_request,
    CreateTopicsRequest,
    kp::CreateTopicsRequest,
    2..=7
);
cross_check!(
    create_topics_response,
    CreateTopicsResponse,
    kp::CreateTopicsResponse,
    2..=7
);
cross_check!(
    delete_topics_request,
    DeleteTopicsRequest,
    kp::DeleteTopicsRequest,
    1..=6
);
cross_check!(
    delete_topics_response,
    DeleteTopicsResponse,
    kp::DeleteTopicsResponse,
    1..=6
);
cross_check!(
    list_groups_request,
    ListGroupsRequest,
    kp::ListGroupsRequest,
    0..=5
);
cross_check!(
    list_groups_response,
    ListGroupsResponse,
    kp::ListGroupsResponse,
    0..=5
);
cross_check!(
    delete_groups_request,
    DeleteGroupsRequest,
    kp::DeleteGroupsRequest,
    0..=2
);
cross_check!(
    delete_groups_response,
    DeleteGroupsResponse,
    kp::DeleteGroupsResponse,
    0..=2
);
cross_check!(
    describe_groups_request,
    DescribeGroupsRequest,
    kp::DescribeGroupsRequest,
    0..=5
);
cross_check!(
    describe_groups_response,
    DescribeGroupsResponse,
    kp::DescribeGroupsResponse,
    0..=5
);
cross_check!(
    offset_commit_request,
    OffsetCommitRequest,
    kp::OffsetCommitRequest,
    2..=9
);
cross_check!(
    offset_commit_response,
    OffsetCommitResponse,
    kp::OffsetCommitResponse,
    2..=9
);
cross_check!(
    offset_fetch_request,
    OffsetFetchRequest,
    kp::OffsetFetchRequest,
    1..=9
);
cross_check!(
    offset_fetch_response,
    OffsetFetchResponse,
    kp::OffsetFetchResponse,
    1..=9
);
cross_check!(
    describe_configs_request,
    DescribeConfigsRequest,
    kp::DescribeConfigsRequest,
    1..=4
);
cross_check!(
    describe_configs_response,
    DescribeConfigsResponse,
    kp::DescribeConfigsResponse,
    1..=4
);
cross_check!(produce_request, ProduceRequest, kp::ProduceRequest, 3..=13);
cross_check!(
    produce_response,
    ProduceResponse,
    kp::ProduceResponse,
    3..=13
);
cross_check!(fetch_request, FetchRequest, kp::FetchRequest, 4..=18);
cross_check!(fetch_response, FetchResponse, kp::FetchResponse, 4..=18);
// kafka-protocol 0.18 stops ListOffsets at v10; our v11 (same body as v10) is not cross-checked.
cross_check!(
    list_offsets_request,
    ListOffsetsRequest,
    kp::ListOffsetsRequest,
    1..=10
);
cross_check!(
    list_offsets_response,
    ListOffsetsResponse,
    kp::ListOffsetsResponse,
    1..=10
);
cross_check!(
    offset_for_leader_epoch_request,
    OffsetForLeaderEpochRequest,
    kp::OffsetForLeaderEpochRequest,
    2..=4
);
cross_check!(
    offset_for_leader_epoch_response,
    OffsetForLeaderEpochResponse,
    kp::OffsetForLeaderEpochResponse,
    2..=4
);
cross_check!(
    delete_records_request,
    DeleteRecordsRequest,
    kp::DeleteRecordsRequest,
    0..=2
);
cross_check!(
    delete_records_response,
    DeleteRecordsResponse,
    kp::DeleteRecordsResponse,
    0..=2
);
cross_check!(
    init_producer_id_request,
    InitProducerIdRequest,
    kp::InitProducerIdRequest,
    0..=5
);
// kafka-protocol 0.18 also has the unstable v6 of the response; our schema stops at v5.
cross_check!(
    init_producer_id_response,
    InitProducerIdResponse,
    kp::InitProducerIdResponse,
    0..=5
);

// Issue 14's security RPCs (SASL, ACLs, SCRAM credentials).
cross_check!(
    sasl_handshake_request,
    SaslHandshakeRequest,
    kp::SaslHandshakeRequest,
    0..=1
);
cross_check!(
    sasl_handshake_response,
    SaslHandshakeResponse,
    kp::SaslHandshakeResponse,
    0..=1
);
cross_check!(
    sasl_authenticate_request,
    SaslAuthenticateRequest,
    kp::SaslAuthenticateRequest,
    0..=2
);
cross_check!(
    sasl_authenticate_response,
    SaslAuthenticateResponse,
    kp::SaslAuthenticateResponse,
    0..=2
);
cross_check!(
    describe_acls_request,
    DescribeAclsRequest,
    kp::DescribeAclsRequest,
    1..=3
);
cross_check!(
    describe_acls_response,
    DescribeAclsResponse,
    kp::DescribeAclsResponse,
    1..=3
);
cross_check!(
    create_acls_request,
    CreateAclsRequest,
    kp::CreateAclsRequest,
    1..=3
);
cross_check!(
    create_acls_response,
    CreateAclsResponse,
    kp::CreateAclsResponse,
    1..=3
);
cross_check!(
    delete_acls_request,
    DeleteAclsRequest,
    kp::DeleteAclsRequest,
    1..=3
);
cross_check!(
    delete_acls_response,
    DeleteAclsResponse,
    kp::DeleteAclsResponse,
    1..=3
);
cross_check!(
    describe_user_scram_credentials_request,
    DescribeUserScramCredentialsRequest,
    kp::DescribeUserScramCredentialsRequest,
    0..=0
);
cross_check!(
    describe_user_scram_credentials_response,
    DescribeUserScramCredentialsResponse,
    kp::DescribeUserScramCredentialsResponse,
    0..=0
);
cross_check!(
    alter_user_scram_credentials_request,
    AlterUserScramCredentialsRequest,
    kp::AlterUserScramCredentialsRequest,
    0..=0
);
cross_check!(
    alter_user_scram_credentials_response,
    AlterUserScramCredentialsResponse,
    kp::AlterUserScramCredentialsResponse,
    0..=0
);
cross_check!(
    describe_client_quotas_request,
    DescribeClientQuotasRequest,
    kp::DescribeClientQuotasRequest,
    0..=1
);
cross_check!(
    describe_client_quotas_response,
    DescribeClientQuotasResponse,
    kp::DescribeClientQuotasResponse,
    0..=1
);
cross_check!(
    alter_client_quotas_request,
    AlterClientQuotasRequest,
    kp::AlterClientQuotasRequest,
    0..=1
);
cross_check!(
    alter_client_quotas_response,
    AlterClientQuotasResponse,
    kp::AlterClientQuotasResponse,
    0..=1
);

// The transaction RPCs. kafka-protocol 0.18 stops at WriteTxnMarkers v1 and TxnOffsetCommit
// v5; our v2 and v6 (Kafka 4.4) are checked against Kafka's files only (schemas/README.md).
cross_check!(
    add_partitions_to_txn_request,
    AddPartitionsToTxnRequest,
    kp::AddPartitionsToTxnRequest,
    0..=5
);
cross_check!(
    add_partitions_to_txn_response,
    AddPartitionsToTxnResponse,
    kp::AddPartitionsToTxnResponse,
    0..=5
);
cross_check!(
    add_offsets_to_txn_request,
    AddOffsetsToTxnRequest,
    kp::AddOffsetsToTxnRequest,
    0..=4
);
cross_check!(
    add_offsets_to_txn_response,
    AddOffsetsToTxnResponse,
    kp::AddOffsetsToTxnResponse,
    0..=4
);
cross_check!(end_txn_request, EndTxnRequest, kp::EndTxnRequest, 0..=5);
cross_check!(end_txn_response, EndTxnResponse, kp::EndTxnResponse, 0..=5);
cross_check!(
    write_txn_markers_request,
    WriteTxnMarkersRequest,
    kp::WriteTxnMarkersRequest,
    1..=1
);
cross_check!(
    write_txn_markers_response,
    WriteTxnMarkersResponse,
    kp::WriteTxnMarkersResponse,
    1..=1
);
cross_check!(
    txn_offset_commit_request,
    TxnOffsetCommitRequest,
    kp::TxnOffsetCommitRequest,
    0..=5
);
cross_check!(
    txn_offset_commit_response,
    TxnOffsetCommitResponse,
    kp::TxnOffsetCommitResponse,
    0..=5
);
cross_check!(
    describe_producers_request,
    DescribeProducersRequest,
    kp::DescribeProducersRequest,
    0..=0
);
cross_check!(
    describe_producers_response,
    DescribeProducersResponse,
    kp::DescribeProducersResponse,
    0..=0
);
cross_check!(
    describe_transactions_request,
    DescribeTransactionsRequest,
    kp::DescribeTransactionsRequest,
    0..=0
);
cross_check!(
    describe_transactions_response,
    DescribeTransactionsResponse,
    kp::DescribeTransactionsResponse,
    0..=0
);
cross_check!(
    list_transactions_request,
    ListTransactionsRequest,
    kp::ListTransactionsRequest,
    0..=2
);
cross_check!(
    list_transactions_response,
    ListTransactionsResponse,
    kp::ListTransactionsResponse,
    0..=2
);
