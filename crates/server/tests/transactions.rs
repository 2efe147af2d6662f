//! Transactions against the real daemon, over the wire: InitProducerId, AddPartitionsToTxn,
//! transactional batches, EndTxn, and the markers the coordinator's marker task then writes;
//! what READ_COMMITTED and READ_UNCOMMITTED consumers see in Fetch and ListOffsets (the last
//! stable offset, the aborted transactions, a long-polling read_committed fetch woken by the
//! marker); the markers the data plane refuses; and what `kafka-transactions` asks to list,
//! describe and abort a transaction left open in a partition.

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use kcoord_record_batches::{BatchBuilder, BatchOptions};
use kcoord_server::{Config, ServerHandle};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kcoord_wire::messages::create_topics_request::CreatableTopic;
use kcoord_wire::messages::fetch_request::{FetchPartition, FetchTopic};
use kcoord_wire::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kcoord_wire::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kcoord_wire::messages::write_txn_markers_request::{WritableTxnMarker, WritableTxnMarkerTopic};
use kcoord_wire::messages::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, CreateTopicsRequest,
    CreateTopicsResponse, DescribeProducersRequest, DescribeProducersResponse,
    DescribeTransactionsRequest, DescribeTransactionsResponse, EndTxnRequest, EndTxnResponse,
    FetchRequest, FetchResponse, InitProducerIdRequest, InitProducerIdResponse, ListOffsetsRequest,
    ListOffsetsResponse, ListTransactionsRequest, ListTransactionsResponse, ProduceRequest,
    ProduceResponse, RequestHeader, ResponseHeader, WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
};
use kcoord_wire::{Decodable, Encodable};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const TIMEOUT: Duration = Duration::from_secs(10);
const TOPIC: &str = "payments";
const NOW: i64 = 1_700_000_000_000;

async fn start() -> ServerHandle {
    let text = "node.id=1\n\
         listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n\
         controller.listener.names=CONTROLLER\n\
         listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n\
         offsets.topic.num.partitions=1\n";
    kcoord_server::start(Config::parse("transactions-test", text).unwrap())
        .await
        .unwrap()
}

/// A Kafka client connection sending hand-built frames.
struct Kafka {
    stream: TcpStream,
    correlation_id: i32,
}

impl Kafka {
    async fn connect(server: &ServerHandle) -> Kafka {
        let stream = TcpStream::connect(server.broker_addr().unwrap())
            .await
            .unwrap();
        Kafka {
            stream,
            correlation_id: 0,
        }
    }

    async fn call<Req: Encodable, Resp: Decodable>(
        &mut self,
        api: ApiKey,
        version: i16,
        request: &Req,
    ) -> Resp {
        self.correlation_id += 1;
        let header = RequestHeader {
            request_api_key: api.key(),
            request_api_version: version,
            correlation_id: self.correlation_id,
            client_id: Some("transactions-test".to_owned()),
            ..Default::default()
        };
        let mut buf = BytesMut::new();
        header
            .encode(&mut buf, api.request_header_version(version))
            .unwrap();
        request.encode(&mut buf, version).unwrap();
        let mut frame = (buf.len() as i32).to_be_bytes().to_vec();
        frame.extend_from_slice(&buf);
        self.stream.write_all(&frame).await.unwrap();
        let mut size = [0u8; 4];
        tokio::time::timeout(TIMEOUT, self.stream.read_exact(&mut size))
            .await
            .expect("a response")
            .unwrap();
        let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
        self.stream.read_exact(&mut body).await.unwrap();
        let mut body = Bytes::from(body);
        ResponseHeader::decode(&mut body, api.response_header_version(version)).unwrap();
        Resp::decode(&mut body, version).unwrap()
    }

    async fn create_topic(&mut self, name: &str) {
        let request = CreateTopicsRequest {
            topics: vec![CreatableTopic {
                name: name.into(),
                num_partitions: 1,
                replication_factor: -1,
                ..Default::default()
            }],
            timeout_ms: 5000,
            ..Default::default()
        };
        let response: CreateTopicsResponse = self.call(ApiKey::CreateTopics, 7, &request).await;
        assert_eq!(response.topics[0].error_code, 0, "{response:?}");
    }

    /// InitProducerId for `transactional_id` and AddPartitionsToTxn of the topic's partition:
    /// (producer id, epoch).
    async fn begin(&mut self, transactional_id: &str) -> (i64, i16) {
        let init = InitProducerIdRequest {
            transactional_id: Some(transactional_id.into()),
            transaction_timeout_ms: 60_000,
            producer_id: -1,
            producer_epoch: -1,
            ..Default::default()
        };
        let got: InitProducerIdResponse = self.call(ApiKey::InitProducerId, 4, &init).await;
        assert_eq!(got.error_code, 0, "{got:?}");
        let add = AddPartitionsToTxnRequest {
            v3_and_below_transactional_id: transactional_id.into(),
            v3_and_below_producer_id: got.producer_id,
            v3_and_below_producer_epoch: got.producer_epoch,
            v3_and_below_topics: vec![AddPartitionsToTxnTopic {
                name: TOPIC.into(),
                partitions: vec![0],
                ..Default::default()
            }],
            ..Default::default()
        };
        let added: AddPartitionsToTxnResponse =
            self.call(ApiKey::AddPartitionsToTxn, 3, &add).await;
        let code =
            added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code;
        assert_eq!(code, 0, "{added:?}");
        (got.producer_id, got.producer_epoch)
    }

    async fn end(&mut self, transactional_id: &str, producer: (i64, i16), commit: bool) {
        let request = EndTxnRequest {
            transactional_id: transactional_id.into(),
            producer_id: producer.0,
            producer_epoch: producer.1,
            committed: commit,
            ..Default::default()
        };
        let ended: EndTxnResponse = self.call(ApiKey::EndTxn, 3, &request).await;
        assert_eq!(ended.error_code, 0, "{ended:?}");
    }

    /// [`Kafka::produce`] for the transactional id `transactional_id`.
    async fn produce_as(
        &mut self,
        transactional_id: &str,
        options: BatchOptions,
        records: usize,
    ) -> (i16, i64) {
        self.produce_with(Some(transactional_id), options, records)
            .await
    }

    /// Produces one batch of `records` records; (error code, base offset).
    async fn produce(&mut self, options: BatchOptions, records: usize) -> (i16, i64) {
        self.produce_with(None, options, records).await
    }

    async fn produce_with(
        &mut self,
        transactional_id: Option<&str>,
        options: BatchOptions,
        records: usize,
    ) -> (i16, i64) {
        let mut b = BatchBuilder::new(options);
        for i in 0..records {
            b.push(NOW, Some(b"k"), Some(format!("v{i}").as_bytes()), &[])
                .unwrap();
        }
        let request = ProduceRequest {
            transactional_id: transactional_id.map(str::to_owned),
            acks: -1,
            timeout_ms: 5000,
            topic_data: vec![TopicProduceData {
                name: TOPIC.into(),
                partition_data: vec![PartitionProduceData {
                    index: 0,
                    records: Some(b.build().unwrap().into()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let response: ProduceResponse = self.call(ApiKey::Produce, 9, &request).await;
        let p = &response.responses[0].partition_responses[0];
        (p.error_code, p.base_offset)
    }

    async fn fetch(&mut self, isolation_level: i8, min_bytes: i32, max_wait_ms: i32) -> Fetched {
        let request = FetchRequest {
            replica_id: -1,
            max_wait_ms,
            min_bytes,
            max_bytes: 1 << 20,
            isolation_level,
            topics: vec![FetchTopic {
                topic: TOPIC.into(),
                partitions: vec![FetchPartition {
                    partition_max_bytes: 1 << 20,
                    current_leader_epoch: -1,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let response: FetchResponse = self.call(ApiKey::Fetch, 12, &request).await;
        let p = &response.responses[0].partitions[0];
        assert_eq!(p.error_code, 0, "{p:?}");
        Fetched {
            high_watermark: p.high_watermark,
            last_stable_offset: p.last_stable_offset,
            bytes: p.records.as_ref().map_or(0, |r| r.to_bytes().len()),
            aborted: p
                .aborted_transactions
                .as_ref()
                .map(|a| a.iter().map(|t| (t.producer_id, t.first_offset)).collect()),
        }
    }

    async fn latest(&mut self, isolation_level: i8) -> i64 {
        let request = ListOffsetsRequest {
            replica_id: -1,
            isolation_level,
            topics: vec![ListOffsetsTopic {
                name: TOPIC.into(),
                partitions: vec![ListOffsetsPartition {
                    partition_index: 0,
                    current_leader_epoch: -1,
                    timestamp: -1,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let response: ListOffsetsResponse = self.call(ApiKey::ListOffsets, 7, &request).await;
        response.topics[0].partitions[0].offset
    }
}

#[derive(Debug)]
struct Fetched {
    high_watermark: i64,
    last_stable_offset: i64,
    bytes: usize,
    aborted: Option<Vec<(i64, i64)>>,
}

fn transactional(producer_id: i64, epoch: i16, seq: i32) -> BatchOptions {
    BatchOptions {
        producer_id,
        producer_epoch: epoch,
        base_sequence: seq,
        transactional: true,
        ..BatchOptions::default()
    }
}

#[tokio::test]
async fn read_committed_consumers_see_the_lso_and_the_aborted_transactions() {
    let server = start().await;
    let mut client = Kafka::connect(&server).await;
    client.create_topic(TOPIC).await;
    let mut setup = Kafka::connect(&server).await;
    let (pid, epoch) = setup.begin("payments-a").await;
    let a = (pid, epoch);
    assert_eq!(
        client
            .produce_as("payments-a", transactional(pid, epoch, 0), 2)
            .await,
        (0, 0)
    );
    assert_eq!(client.produce(BatchOptions::default(), 1).await, (0, 2));

    let uncommitted = client.fetch(0, 0, 0).await;
    assert_eq!(
        (uncommitted.high_watermark, uncommitted.last_stable_offset),
        (3, 0)
    );
    assert!(uncommitted.bytes > 0);
    assert_eq!(uncommitted.aborted, None, "READ_UNCOMMITTED gets no list");
    let committed = client.fetch(1, 0, 0).await;
    assert_eq!((committed.last_stable_offset, committed.bytes), (0, 0));
    assert_eq!(committed.aborted, Some(vec![]));
    assert_eq!(client.latest(0).await, 3);
    assert_eq!(client.latest(1).await, 0);

    // A read_committed consumer waits for data; the ABORT marker the coordinator writes after
    // EndTxn wakes it.
    let mut waiter = Kafka::connect(&server).await;
    let started = Instant::now();
    let waiting = tokio::spawn(async move { waiter.fetch(1, 1, 8_000).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    setup.end("payments-a", a, false).await;
    let woken = tokio::time::timeout(TIMEOUT, waiting)
        .await
        .unwrap()
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "woken by the marker"
    );
    assert_eq!(woken.last_stable_offset, 4);
    assert!(woken.bytes > 0);
    assert_eq!(woken.aborted, Some(vec![(pid, 0)]));
    assert_eq!(client.latest(1).await, 4);

    // A committed transaction is listed nowhere.
    let b = setup.begin("payments-b").await;
    assert_eq!(
        client
            .produce_as("payments-b", transactional(b.0, b.1, 0), 1)
            .await,
        (0, 4)
    );
    assert_eq!(client.latest(1).await, 4);
    setup.end("payments-b", b, true).await;
    let deadline = Instant::now() + TIMEOUT;
    while client.latest(1).await != 6 {
        assert!(
            Instant::now() < deadline,
            "the COMMIT marker was not written"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let after = client.fetch(1, 0, 0).await;
    assert_eq!((after.high_watermark, after.last_stable_offset), (6, 6));
    assert_eq!(after.aborted, Some(vec![(pid, 0)]));

    // Markers the data plane refuses: an older producer epoch, a partition it does not have.
    let partitions = &server.state().partitions;
    let stale = partitions
        .write_txn_marker(TOPIC, 0, b.0, -1, 0, true, NOW)
        .unwrap_err();
    assert_eq!(stale.error_code(), 47);
    let offsets = partitions
        .write_txn_marker("__consumer_offsets", 0, b.0, 0, 0, true, NOW)
        .unwrap_err();
    assert_eq!(offsets.error_code(), 3);
    server.shutdown().await;
}

#[tokio::test]
async fn a_batch_outside_the_producers_transaction_is_refused() {
    let server = start().await;
    let mut client = Kafka::connect(&server).await;
    client.create_topic(TOPIC).await;
    // No transaction at all: the coordinator knows no such producer.
    assert_eq!(
        client
            .produce_as("payments-z", transactional(77, 0, 0), 1)
            .await
            .0,
        49
    );
    // A transaction that does not hold the partition: INVALID_TXN_STATE before Produce v11.
    let init = InitProducerIdRequest {
        transactional_id: Some("payments-z".into()),
        transaction_timeout_ms: 60_000,
        producer_id: -1,
        producer_epoch: -1,
        ..Default::default()
    };
    let got: InitProducerIdResponse = client.call(ApiKey::InitProducerId, 4, &init).await;
    let batch = transactional(got.producer_id, got.producer_epoch, 0);
    assert_eq!(client.produce_as("payments-z", batch, 1).await.0, 48);
    server.shutdown().await;
}

impl Kafka {
    /// ListTransactions v2: (transactional id, producer id, state) of each, and the unknown
    /// state filters; the error code must be NONE.
    async fn list_transactions(
        &mut self,
        states: &[&str],
        pattern: Option<&str>,
    ) -> (Vec<(String, i64, String)>, Vec<String>) {
        let request = ListTransactionsRequest {
            state_filters: states.iter().map(|s| (*s).to_owned()).collect(),
            duration_filter: -1,
            transactional_id_pattern: pattern.map(str::to_owned),
            ..Default::default()
        };
        let listed: ListTransactionsResponse =
            self.call(ApiKey::ListTransactions, 2, &request).await;
        assert_eq!(listed.error_code, 0, "{listed:?}");
        let states = listed
            .transaction_states
            .into_iter()
            .map(|t| (t.transactional_id, t.producer_id, t.transaction_state))
            .collect();
        (states, listed.unknown_state_filters)
    }

    /// DescribeProducers of the topic's partition: (producer id, epoch, last sequence,
    /// coordinator epoch, open transaction's first offset) of each.
    async fn producers(&mut self) -> Vec<(i64, i32, i32, i32, i64)> {
        let request = DescribeProducersRequest {
            topics: vec![
                kcoord_wire::messages::describe_producers_request::TopicRequest {
                    name: TOPIC.into(),
                    partition_indexes: vec![0],
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let described: DescribeProducersResponse =
            self.call(ApiKey::DescribeProducers, 0, &request).await;
        let p = &described.topics[0].partitions[0];
        assert_eq!(p.error_code, 0, "{p:?}");
        p.active_producers
            .iter()
            .map(|s| {
                let txn = s.current_txn_start_offset;
                (
                    s.producer_id,
                    s.producer_epoch,
                    s.last_sequence,
                    s.coordinator_epoch,
                    txn,
                )
            })
            .collect()
    }
}

/// `kafka-transactions list`, `describe`, `describe-producers` and `abort`: a transaction left
/// open in the partition is found by its producer's open offset and closed by an ABORT marker
/// (WriteTxnMarkers, as `Admin.abortTransaction` sends it), after which read_committed readers
/// move on; the coordinator's own abort then completes the transaction.
#[tokio::test]
async fn a_transaction_open_in_its_partition_is_listed_described_and_aborted() {
    let server = start().await;
    let mut client = Kafka::connect(&server).await;
    client.create_topic(TOPIC).await;
    let (pid, epoch) = client.begin("payments-h").await;
    let batch = transactional(pid, epoch, 0);
    assert_eq!(client.produce_as("payments-h", batch, 2).await, (0, 0));
    let open = ("payments-h".to_owned(), pid, "Ongoing".to_owned());

    let (listed, unknown) = client
        .list_transactions(&["Ongoing", "Hanging"], Some("payments-.*"))
        .await;
    assert_eq!(
        (listed, unknown),
        (vec![open.clone()], vec!["Hanging".to_owned()])
    );
    let (listed, _) = client.list_transactions(&[], Some("payments")).await;
    assert!(listed.is_empty(), "the pattern matches the whole id");
    let invalid: ListTransactionsResponse = client
        .call(
            ApiKey::ListTransactions,
            2,
            &ListTransactionsRequest {
                duration_filter: -1,
                transactional_id_pattern: Some("payments-(".into()),
                ..Default::default()
            },
        )
        .await;
    assert_eq!(invalid.error_code, 128, "INVALID_REGULAR_EXPRESSION");

    let request = DescribeTransactionsRequest {
        transactional_ids: vec!["payments-h".into(), "nobody".into()],
        ..Default::default()
    };
    let described: DescribeTransactionsResponse =
        client.call(ApiKey::DescribeTransactions, 0, &request).await;
    let (h, nobody) = (
        &described.transaction_states[0],
        &described.transaction_states[1],
    );
    assert_eq!((h.error_code, nobody.error_code), (0, 105));
    assert_eq!(
        (
            h.producer_id,
            h.producer_epoch,
            h.transaction_state.as_str()
        ),
        (pid, epoch, "Ongoing")
    );
    assert_eq!(h.transaction_timeout_ms, 60_000);
    assert_eq!(h.topics.len(), 1);
    assert_eq!(
        (h.topics[0].topic.as_str(), &h.topics[0].partitions[..]),
        (TOPIC, &[0][..])
    );

    // The producer's transaction is open from offset 0; read_committed readers wait there.
    let e = i32::from(epoch);
    assert_eq!(client.producers().await, [(pid, e, 1, -1, 0)]);
    assert_eq!(client.latest(1).await, 0);

    // `kafka-transactions abort --start-offset 0`: the producer's epoch, and its coordinator
    // epoch (-1: none yet) raised to 0.
    let abort = WriteTxnMarkersRequest {
        markers: vec![WritableTxnMarker {
            producer_id: pid,
            producer_epoch: epoch,
            transaction_result: false,
            topics: vec![WritableTxnMarkerTopic {
                name: TOPIC.into(),
                partition_indexes: vec![0],
                ..Default::default()
            }],
            coordinator_epoch: 0,
            ..Default::default()
        }],
        ..Default::default()
    };
    let written: WriteTxnMarkersResponse = client.call(ApiKey::WriteTxnMarkers, 1, &abort).await;
    let m = &written.markers[0];
    assert_eq!((m.producer_id, m.topics[0].name.as_str()), (pid, TOPIC));
    assert_eq!(m.topics[0].partitions[0].error_code, 0, "{written:?}");
    assert_eq!(client.producers().await, [(pid, e, 1, 0, -1)]);
    assert_eq!(
        client.latest(1).await,
        3,
        "past the two records and the marker"
    );
    assert_eq!(client.fetch(1, 0, 0).await.aborted, Some(vec![(pid, 0)]));

    // The coordinator still holds the transaction; its own abort completes it.
    client.end("payments-h", (pid, epoch), false).await;
    let done = ("payments-h".to_owned(), pid, "CompleteAbort".to_owned());
    let deadline = Instant::now() + TIMEOUT;
    while client.list_transactions(&[], None).await.0 != [done.clone()] {
        assert!(
            Instant::now() < deadline,
            "the transaction did not complete"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.shutdown().await;
}
