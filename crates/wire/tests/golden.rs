//! Golden byte tests: encodings checked against bytes written out by hand from the
//! specification and from docs/kafka-coordinator-facts.md §13, not against our own encoder.
use bytes::{Bytes, BytesMut};
use kcoord_wire::messages::streams_group_heartbeat_response::{
    StreamsGroupHeartbeatResponse, TaskIds,
};
use kcoord_wire::messages::update_streams_group_topology_description_request::{
    Subtopology, TopologyDescription, TopologyNode, UpdateStreamsGroupTopologyDescriptionRequest,
};
use kcoord_wire::{Decodable, Encodable};
use uuid::Uuid;

fn encode<T: Encodable>(value: &T, version: i16) -> Vec<u8> {
    let mut buf = BytesMut::new();
    value.encode(&mut buf, version).expect("encodes");
    assert_eq!(value.compute_size(version).expect("sizes"), buf.len());
    buf.to_vec()
}

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn node(
    name: &str,
    node_type: i8,
    sources: &[&str],
    sink: Option<&str>,
    successors: &[&str],
) -> TopologyNode {
    TopologyNode {
        name: name.into(),
        node_type,
        source_topics: sources.iter().map(|s| s.to_string()).collect(),
        sink_topic: sink.map(String::from),
        stores: vec![],
        successors: successors.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

/// The specification's appendix: the `orders-app` UpdateStreamsGroupTopologyDescription request
/// (orders -> filter -> valid-orders), v0, flexible encoding.
fn orders_app() -> UpdateStreamsGroupTopologyDescriptionRequest {
    UpdateStreamsGroupTopologyDescriptionRequest {
        group_id: "orders-app".into(),
        topology_description_id: Uuid::parse_str("8d7e3c2a-4f6b-4d9a-9c1b-7e5f3a8d2c4e")
            .expect("uuid"),
        topology_description: TopologyDescription {
            subtopologies: vec![Subtopology {
                subtopology_id: "0".into(),
                nodes: vec![
                    node(
                        "KSTREAM-SOURCE-0000000000",
                        1,
                        &["orders"],
                        None,
                        &["KSTREAM-FILTER-0000000001"],
                    ),
                    node(
                        "KSTREAM-FILTER-0000000001",
                        2,
                        &[],
                        None,
                        &["KSTREAM-SINK-0000000002"],
                    ),
                    node("KSTREAM-SINK-0000000002", 3, &[], Some("valid-orders"), &[]),
                ],
                ..Default::default()
            }],
            global_stores: vec![],
            ..Default::default()
        },
        ..Default::default()
    }
}

const ORDERS_APP_BYTES: &str = "
    0b 6f72646572732d617070                                  GroupId 'orders-app' (compact: len+1 = 11)
    8d7e3c2a4f6b4d9a9c1b7e5f3a8d2c4e                         TopologyDescriptionId
    02                                                       Subtopologies: 1 element
      02 30                                                  SubtopologyId '0'
      04                                                     Nodes: 3 elements
        1a 4b53545245414d2d534f555243452d30303030303030303030   Name KSTREAM-SOURCE-0000000000
        01                                                   NodeType SOURCE
        02 07 6f7264657273                                   SourceTopics ['orders']
        00                                                   SinkTopic null
        01                                                   Stores []
        02 1a 4b53545245414d2d46494c5445522d30303030303030303031 Successors ['KSTREAM-FILTER-0000000001']
        00                                                   tagged fields
        1a 4b53545245414d2d46494c5445522d30303030303030303031   Name KSTREAM-FILTER-0000000001
        02 01 00 01                                          PROCESSOR, SourceTopics [], SinkTopic null, Stores []
        02 18 4b53545245414d2d53494e4b2d30303030303030303032  Successors ['KSTREAM-SINK-0000000002']
        00
        18 4b53545245414d2d53494e4b2d30303030303030303032     Name KSTREAM-SINK-0000000002
        03 01                                                SINK, SourceTopics []
        0d 76616c69642d6f7264657273                          SinkTopic 'valid-orders'
        01 01 00                                             Stores [], Successors [], tagged fields
      00                                                     Subtopology tagged fields
    01                                                       GlobalStores []
    00                                                       TopologyDescription tagged fields
    00                                                       request tagged fields
";

fn strip_comments(annotated: &str) -> String {
    annotated
        .lines()
        .map(|l| {
            l.split_whitespace()
                .take_while(|t| t.chars().all(|c| c.is_ascii_hexdigit()))
                .collect::<String>()
        })
        .collect()
}

#[test]
fn spec_appendix_orders_app_push_is_byte_exact() {
    let expected = hex(&strip_comments(ORDERS_APP_BYTES));
    assert_eq!(expected.len(), 198);
    assert_eq!(encode(&orders_app(), 0), expected);
    let decoded =
        UpdateStreamsGroupTopologyDescriptionRequest::decode(&mut Bytes::from(expected), 0)
            .expect("decodes");
    assert_eq!(decoded, orders_app());
}

// ---- StreamsGroupHeartbeatResponse v0 / v1 / v2 against docs/kafka-coordinator-facts.md §13 ----

const ID: &str = "8d7e3c2a-4f6b-4d9a-9c1b-7e5f3a8d2c4e";

fn heartbeat_response() -> StreamsGroupHeartbeatResponse {
    StreamsGroupHeartbeatResponse {
        throttle_time_ms: 7,
        error_code: 0,
        error_message: None,
        member_id: "m1".into(),
        member_epoch: 3,
        heartbeat_interval_ms: 5000,
        acceptable_recovery_lag_legacy: 0,
        task_offset_interval_ms: 60000,
        acceptable_recovery_lag: 10000,
        status: Some(vec![]),
        active_tasks: Some(vec![TaskIds {
            subtopology_id: "0".into(),
            partitions: vec![0, 1],
            ..Default::default()
        }]),
        standby_tasks: Some(vec![]),
        warmup_tasks: Some(vec![]),
        topology_description_required: false,
        topology_description_id: None,
        endpoint_information_epoch: 2,
        partitions_by_user_endpoint: None,
        ..Default::default()
    }
}

/// Fields shared by all versions up to HeartbeatIntervalMs.
const HEAD: &str = "00000007 0000 00 03 6d31 00000003 00001388";
/// Status [], ActiveTasks [{'0', [0, 1]}], StandbyTasks [], WarmupTasks [].
const TASKS: &str = "01 02 02 30 03 00000000 00000001 00 01 01";
/// EndpointInformationEpoch 2, PartitionsByUserEndpoint null, tagged fields.
const TAIL: &str = "00000002 00 00";

#[test]
fn heartbeat_response_v0_layout() {
    // v0: AcceptableRecoveryLagLegacy int32 before TaskOffsetIntervalMs; the int64
    // AcceptableRecoveryLag (v1+, ignorable) is dropped; no KIP-1331 field.
    let expected = hex(&format!("{HEAD} 00000000 0000ea60 {TASKS} {TAIL}"));
    assert_eq!(encode(&heartbeat_response(), 0), expected);
}

#[test]
fn heartbeat_response_v1_layout() {
    // v1: TaskOffsetIntervalMs, then AcceptableRecoveryLag as int64, and the
    // TopologyDescriptionRequired bool after WarmupTasks.
    let mut r = heartbeat_response();
    r.topology_description_required = true;
    let expected = hex(&format!(
        "{HEAD} 0000ea60 0000000000002710 {TASKS} 01 {TAIL}"
    ));
    assert_eq!(encode(&r, 1), expected);
}

#[test]
fn heartbeat_response_v2_layout() {
    // v2: like v1 without the bool; the nullable uuid TopologyDescriptionId sits where the
    // bool was (after WarmupTasks, before EndpointInformationEpoch).
    let mut r = heartbeat_response();
    r.topology_description_id = Some(Uuid::parse_str(ID).expect("uuid"));
    let expected = hex(&format!(
        "{HEAD} 0000ea60 0000000000002710 {TASKS} 8d7e3c2a4f6b4d9a9c1b7e5f3a8d2c4e {TAIL}"
    ));
    assert_eq!(encode(&r, 2), expected);
    // A null id is the all-zero uuid on the wire.
    let expected_null = hex(&format!(
        "{HEAD} 0000ea60 0000000000002710 {TASKS} 00000000000000000000000000000000 {TAIL}"
    ));
    assert_eq!(encode(&heartbeat_response(), 2), expected_null);
    let decoded =
        StreamsGroupHeartbeatResponse::decode(&mut Bytes::from(expected_null), 2).expect("decodes");
    assert_eq!(decoded.topology_description_id, None);
}

#[test]
fn heartbeat_response_fields_stay_in_their_versions() {
    // Non-ignorable fields a version lacks cannot carry a non-default value.
    let mut required = heartbeat_response();
    required.topology_description_required = true;
    assert!(required.encode(&mut BytesMut::new(), 0).is_err());
    assert!(required.encode(&mut BytesMut::new(), 2).is_err());
    let mut with_id = heartbeat_response();
    with_id.topology_description_id = Some(Uuid::parse_str(ID).expect("uuid"));
    assert!(with_id.encode(&mut BytesMut::new(), 0).is_err());
    assert!(with_id.encode(&mut BytesMut::new(), 1).is_err());
    let mut legacy = heartbeat_response();
    legacy.acceptable_recovery_lag_legacy = 5;
    assert!(legacy.encode(&mut BytesMut::new(), 1).is_err());
}

/// The SCRAM credential record as Kafka 4.4's UserScramCredentialRecord (type 11, v0,
/// flexible) lays it out: compact strings and bytes (length + 1), then no tagged fields.
#[test]
fn user_scram_credential_record_v0_layout() {
    use kcoord_wire::records::UserScramCredentialRecord;
    let record = UserScramCredentialRecord {
        name: "alice".into(),
        mechanism: 2,
        salt: Bytes::from_static(&[1, 2, 3]),
        stored_key: Bytes::from_static(&[4, 5]),
        server_key: Bytes::from_static(&[6]),
        iterations: 4096,
        ..Default::default()
    };
    let expected = hex("06 616c696365  02  04 010203  03 0405  02 06  00001000  00");
    assert_eq!(encode(&record, 0), expected);
    let decoded =
        UserScramCredentialRecord::decode(&mut Bytes::from(expected), 0).expect("decodes");
    assert_eq!(decoded, record);
}

/// Kafka 4.4's AccessControlEntryRecord (type 18, v0, flexible): the uuid's 16 bytes, then the
/// resource, the principal, the host, the operation and the permission, then no tagged fields.
#[test]
fn access_control_entry_record_v0_layout() {
    use kcoord_wire::records::AccessControlEntryRecord;
    let record = AccessControlEntryRecord {
        id: Uuid::from_u128(0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10),
        resource_type: 2,
        resource_name: "t".into(),
        pattern_type: 3,
        principal: "User:a".into(),
        host: "*".into(),
        operation: 3,
        permission_type: 3,
        ..Default::default()
    };
    let expected =
        hex("0102030405060708090a0b0c0d0e0f10  02  02 74  03  07 557365723a61  02 2a  03  03  00");
    assert_eq!(encode(&record, 0), expected);
    let decoded = AccessControlEntryRecord::decode(&mut Bytes::from(expected), 0).expect("decodes");
    assert_eq!(decoded, record);
}

/// Kafka 4.4's TransactionLogKey (`__transaction_state` record type 0, v0, not flexible): the
/// transactional id as a classic string (int16 length).
#[test]
fn transaction_log_key_v0_layout() {
    use kcoord_wire::records::TransactionLogKey;
    let key = TransactionLogKey {
        transactional_id: "tx".into(),
        ..Default::default()
    };
    let expected = hex("0002 7478");
    assert_eq!(encode(&key, 0), expected);
    let decoded = TransactionLogKey::decode(&mut Bytes::from(expected), 0).expect("decodes");
    assert_eq!(decoded, key);
}

fn transaction_log_value() -> kcoord_wire::records::TransactionLogValue {
    use kcoord_wire::records::transaction_log_value::{PartitionsSchema, TransactionLogValue};
    TransactionLogValue {
        producer_id: 1000,
        producer_epoch: 5,
        transaction_timeout_ms: 60_000,
        transaction_status: 1,
        transaction_partitions: Some(vec![PartitionsSchema {
            topic: "t".into(),
            partition_ids: vec![0, 2],
            ..Default::default()
        }]),
        transaction_last_update_timestamp_ms: 0x10,
        transaction_start_timestamp_ms: 0x08,
        ..Default::default()
    }
}

/// Kafka 4.4's TransactionLogValue v0 (not flexible): producer id, epoch, timeout, status, the
/// nullable partitions array (int32 count; topic as int16-length string, ids as int32 count +
/// int32s), last update and start times.
#[test]
fn transaction_log_value_v0_layout() {
    use kcoord_wire::records::TransactionLogValue;
    let value = transaction_log_value();
    let expected = hex(concat!(
        "00000000000003e8  0005  0000ea60  01 ",
        "00000001  0001 74  00000002 00000000 00000002 ",
        "0000000000000010  0000000000000008",
    ));
    assert_eq!(encode(&value, 0), expected);
    let decoded = TransactionLogValue::decode(&mut Bytes::from(expected), 0).expect("decodes");
    assert_eq!(decoded, value);
    let null = TransactionLogValue {
        transaction_partitions: None,
        ..value
    };
    assert_eq!(
        encode(&null, 0),
        hex("00000000000003e8 0005 0000ea60 01 ffffffff 0000000000000010 0000000000000008")
    );
}

/// TransactionLogValue v1 (flexible): compact arrays and strings, and the tagged fields in tag
/// order, not declaration order: PreviousProducerId (0), ClientTransactionVersion (2),
/// NextProducerEpoch (3); NextProducerId (1) is at its default (-1), so absent.
#[test]
fn transaction_log_value_v1_layout() {
    use kcoord_wire::records::TransactionLogValue;
    let value = TransactionLogValue {
        previous_producer_id: 999,
        client_transaction_version: 2,
        next_producer_epoch: 6,
        ..transaction_log_value()
    };
    let expected = hex(concat!(
        "00000000000003e8  0005  0000ea60  01 ",
        "02  02 74  03 00000000 00000002  00 ",
        "0000000000000010  0000000000000008 ",
        "03  00 08 00000000000003e7  02 02 0002  03 02 0006",
    ));
    assert_eq!(encode(&value, 1), expected);
    let decoded = TransactionLogValue::decode(&mut Bytes::from(expected), 1).expect("decodes");
    assert_eq!(decoded, value);
    assert_eq!(TransactionLogValue::default().next_producer_id, -1);
}
