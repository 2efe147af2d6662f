//! ListTopics (KIP-142, key 96) against the real daemon started in-process: both versions
//! with and without internal topics (R80, R81), a deny-DESCRIBE authorizer (R82), and the
//! admin client's fallback to Metadata when ApiVersions does not offer key 96 (R83), shown
//! through a proxy that removes key 96 from the daemon's ApiVersions answers.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use kcoord_client::admin::{ListTopicsSource, NewTopic, TopicListing};
use kcoord_client::{Client, ClientConfig, Connection};
use kcoord_server::security::{AclOperation, Authorizer, ResourceType};
use kcoord_wire::messages::{ApiVersionsResponse, ListTopicsRequest, ResponseHeader};
use kcoord_wire::{Decodable, Encodable};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const WAIT: Duration = Duration::from_secs(20);
const TOPICS: &[&str] = &[
    "orders",
    "__consumer_offsets",
    "payments",
    "secret-payroll",
    "__transaction_state",
];

async fn start(extensions: kcoord_server::Extensions) -> kcoord_server::ServerHandle {
    let text = "node.id=1\nlisteners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\noffsets.topic.num.partitions=1\n";
    let config =
        kcoord_server::Config::parse("list-topics-e2e", text).unwrap_or_else(|e| panic!("{e}"));
    let node = kcoord_server::start_with(config, extensions)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // Internal topics can be created by name, as with a Kafka KRaft controller (only
    // __cluster_metadata is refused).
    let client = client(&node.broker_addr().unwrap().to_string()).await;
    let topics: Vec<NewTopic> = TOPICS.iter().map(|n| NewTopic::new(*n, 1, 1)).collect();
    for created in client.create_topics(&topics, false).await.unwrap() {
        created
            .result
            .unwrap_or_else(|e| panic!("{}: {e}", created.name));
    }
    node
}

async fn client(addr: &str) -> Client {
    Client::connect(
        addr,
        ClientConfig::new("list-topics-e2e").with_request_timeout(WAIT),
    )
    .await
    .unwrap()
}

fn listing(name: &str, internal: bool) -> TopicListing {
    TopicListing {
        name: name.into(),
        internal,
    }
}

/// ListTopics at `version` on a fresh connection: (name, internal) in answer order.
async fn list(addr: &str, version: i16, list_internal: bool) -> Vec<(String, bool)> {
    let conn = Connection::connect(addr, ClientConfig::new("list-topics-e2e"))
        .await
        .unwrap();
    let response = conn
        .send(
            ListTopicsRequest {
                list_internal,
                ..Default::default()
            },
            version,
        )
        .await
        .unwrap();
    assert_eq!((response.error_code, response.throttle_time_ms), (0, 0));
    response
        .topics
        .into_iter()
        .map(|t| (t.name, t.internal))
        .collect()
}

fn pairs(list: &[(&str, bool)]) -> Vec<(String, bool)> {
    list.iter().map(|(n, i)| (n.to_string(), *i)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r80_list_topics_returns_names_and_internal_flags() {
    let node = start(Default::default()).await;
    let addr = node.broker_addr().unwrap().to_string();
    let all = pairs(&[
        ("__consumer_offsets", true),
        ("__transaction_state", true),
        ("orders", false),
        ("payments", false),
        ("secret-payroll", false),
    ]);
    for version in 0..=1 {
        assert_eq!(list(&addr, version, true).await, all, "v{version}");
    }
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r81_list_internal_false_omits_internal_topics() {
    let node = start(Default::default()).await;
    let addr = node.broker_addr().unwrap().to_string();
    for version in 0..=1 {
        assert_eq!(
            list(&addr, version, false).await,
            pairs(&[
                ("orders", false),
                ("payments", false),
                ("secret-payroll", false)
            ]),
            "v{version}"
        );
    }
    node.shutdown().await;
}

/// DESCRIBE denied on topics whose name starts with `secret` or `__transaction`.
#[derive(Debug)]
struct DenySomeTopics;

impl Authorizer for DenySomeTopics {
    fn authorize(
        &self,
        _: &kcoord_server::security::Requester<'_>,
        operation: AclOperation,
        resource: ResourceType,
        name: &str,
    ) -> bool {
        let hidden = name.starts_with("secret") || name.starts_with("__transaction");
        !(operation == AclOperation::Describe && resource == ResourceType::Topic && hidden)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r82_topics_the_caller_may_not_describe_are_omitted() {
    let extensions = kcoord_server::Extensions {
        authorizer: Some(Arc::new(DenySomeTopics)),
        ..Default::default()
    };
    let node = start(extensions).await;
    let addr = node.broker_addr().unwrap().to_string();
    for version in 0..=1 {
        assert_eq!(
            list(&addr, version, true).await,
            pairs(&[
                ("__consumer_offsets", true),
                ("orders", false),
                ("payments", false)
            ]),
            "v{version}"
        );
    }
    let listed = client(&addr).await.list_topics(true).await.unwrap();
    assert_eq!(
        listed.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        vec!["__consumer_offsets", "orders", "payments"]
    );
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r83_the_admin_client_uses_list_topics_when_offered_and_metadata_otherwise() {
    let node = start(Default::default()).await;
    let addr = node.broker_addr().unwrap().to_string();
    let expected_all = vec![
        listing("__consumer_offsets", true),
        listing("__transaction_state", true),
        listing("orders", false),
        listing("payments", false),
        listing("secret-payroll", false),
    ];
    let direct = client(&addr).await;
    let (topics, source) = direct.list_topics_via(true).await.unwrap();
    assert_eq!(
        (topics, source),
        (
            expected_all.clone(),
            ListTopicsSource::ListTopics { version: 1 }
        )
    );

    // The same daemon behind a proxy that hides key 96 from ApiVersions.
    let proxy = Proxy::start(&addr).await;
    let hidden = client(&proxy.addr).await;
    assert!(
        hidden
            .bootstrap()
            .server_versions()
            .unwrap()
            .range(96)
            .is_none(),
        "the proxy hid ListTopics"
    );
    let (topics, source) = hidden.list_topics_via(true).await.unwrap();
    assert_eq!(topics, expected_all);
    assert_eq!(source, ListTopicsSource::Metadata { version: 13 });
    let (topics, _) = hidden.list_topics_via(false).await.unwrap();
    assert_eq!(
        topics,
        vec![
            listing("orders", false),
            listing("payments", false),
            listing("secret-payroll", false)
        ]
    );
    assert!(proxy.rewritten.load(Ordering::SeqCst) >= 1);
    node.shutdown().await;
}

/// A TCP proxy in front of the daemon that removes API key 96 from every ApiVersions
/// response and passes everything else through untouched.
struct Proxy {
    addr: String,
    rewritten: Arc<AtomicUsize>,
}

impl Proxy {
    async fn start(upstream: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let rewritten = Arc::new(AtomicUsize::new(0));
        let (upstream, counter) = (upstream.to_string(), Arc::clone(&rewritten));
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let server = TcpStream::connect(&upstream).await.unwrap();
                tokio::spawn(pump(client, server, Arc::clone(&counter)));
            }
        });
        Proxy { addr, rewritten }
    }
}

async fn read_frame(stream: &mut (impl AsyncReadExt + Unpin)) -> Option<Bytes> {
    let size = stream.read_u32().await.ok()? as usize;
    let mut frame = vec![0; size];
    stream.read_exact(&mut frame).await.ok()?;
    Some(Bytes::from(frame))
}

async fn write_frame(stream: &mut (impl AsyncWriteExt + Unpin), frame: &[u8]) -> Option<()> {
    stream
        .write_u32(u32::try_from(frame.len()).ok()?)
        .await
        .ok()?;
    stream.write_all(frame).await.ok()
}

async fn pump(client: TcpStream, server: TcpStream, rewritten: Arc<AtomicUsize>) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    // Correlation id -> ApiVersions request version, for the answers to rewrite.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(i32, i16)>();
    let requests = async move {
        while let Some(frame) = read_frame(&mut client_read).await {
            let (key, version, correlation) = (
                (&frame[0..2]).get_i16(),
                (&frame[2..4]).get_i16(),
                (&frame[4..8]).get_i32(),
            );
            if key == 18 {
                let _ = tx.send((correlation, version));
            }
            if write_frame(&mut server_write, &frame).await.is_none() {
                break;
            }
        }
    };
    let responses = async move {
        let mut pending = std::collections::HashMap::new();
        while let Some(frame) = read_frame(&mut server_read).await {
            while let Ok((correlation, version)) = rx.try_recv() {
                pending.insert(correlation, version);
            }
            let correlation = (&frame[0..4]).get_i32();
            let frame = match pending.remove(&correlation) {
                Some(version) => {
                    rewritten.fetch_add(1, Ordering::SeqCst);
                    without_list_topics(frame, version)
                }
                None => frame,
            };
            if write_frame(&mut client_write, &frame).await.is_none() {
                break;
            }
        }
    };
    tokio::join!(requests, responses);
}

/// An ApiVersions response frame (header v0, as for every version) without key 96.
fn without_list_topics(frame: Bytes, version: i16) -> Bytes {
    let mut body = frame.clone();
    let header = ResponseHeader::decode(&mut body, 0).unwrap();
    let mut response = ApiVersionsResponse::decode(&mut body, version).unwrap();
    response.api_keys.retain(|k| k.api_key != 96);
    let mut out = BytesMut::new();
    header.encode(&mut out, 0).unwrap();
    response.encode(&mut out, version).unwrap();
    out.freeze()
}
