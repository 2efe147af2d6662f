//! SSL listeners over loopback, in-process: TLS 1.3 and 1.2 to a rustls client, client
//! certificates (`ssl.client.auth`), the principal the authorizer sees (with and without
//! `ssl.principal.mapping.rules`), plaintext clients and stalled handshakes closed, and
//! `listener.name.<l>.` keys overriding the unprefixed ones.

mod tls_support;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use kcoord_server::security::{AclOperation, Authorizer, ResourceType};
use kcoord_server::{start_with, Config, Extensions, ServerHandle};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::{
    ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse, ResponseHeader,
    StreamsGroupDescribeRequest,
};
use kcoord_wire::Decodable;
use rcgen::DnType;
use tls_support::{client_config, connect, exchange, frame, Identity, Pki, TIMEOUT};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use rustls::version::{TLS12, TLS13};

/// Allows everything and remembers every principal it was asked about.
#[derive(Debug, Default)]
struct Recorder(Mutex<Vec<String>>);

impl Recorder {
    fn seen(&self) -> Vec<String> {
        let mut seen = self.0.lock().unwrap().clone();
        seen.dedup();
        seen
    }

    fn clear(&self) {
        self.0.lock().unwrap().clear();
    }
}

impl Authorizer for Recorder {
    fn authorize(
        &self,
        ctx: &kcoord_server::security::Requester<'_>,
        _: AclOperation,
        _: ResourceType,
        _: &str,
    ) -> bool {
        self.0.lock().unwrap().push(ctx.principal.to_string());
        true
    }
}

struct Node {
    server: ServerHandle,
    recorder: Arc<Recorder>,
    pki: Pki,
    server_id: Identity,
}

impl Node {
    /// A node whose broker listener `SSL` serves TLS with a server certificate from the PKI's
    /// CA, stored as one PEM file; `extra` adds or replaces keys.
    async fn start(extra: &str) -> Node {
        let pki = Pki::new("kcoord test CA");
        Node::start_with(pki, extra).await
    }

    async fn start_with(pki: Pki, extra: &str) -> Node {
        let server_id = pki.server();
        let keystore = pki.write("server.pem", &server_id.keystore_pem());
        let truststore = pki.write("ca.pem", &pki.ca.cert_pem);
        let text = format!(
            "node.id=1\nlisteners=SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n\
             ssl.keystore.type=PEM\nssl.keystore.location={}\n\
             ssl.truststore.type=PEM\nssl.truststore.location={}\n{extra}",
            keystore.display(),
            truststore.display()
        );
        let config = Config::parse("tls-test", &text).unwrap_or_else(|e| panic!("{e}"));
        let recorder = Arc::new(Recorder::default());
        let extensions = Extensions {
            authorizer: Some(Arc::clone(&recorder) as Arc<dyn Authorizer>),
            ..Default::default()
        };
        let server = start_with(config, extensions)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        Node {
            server,
            recorder,
            pki,
            server_id,
        }
    }

    fn ssl(&self) -> SocketAddr {
        self.server.local_addr("SSL").unwrap()
    }

    fn client(&self, rdns: &[(DnType, &str)]) -> Identity {
        self.pki.client(rdns)
    }
}

fn api_versions(correlation_id: i32) -> Vec<u8> {
    let request = ApiVersionsRequest {
        client_software_name: "tls-test".into(),
        client_software_version: "1".into(),
        ..Default::default()
    };
    frame(ApiKey::ApiVersions, 3, correlation_id, &request)
}

/// A request that asks the authorizer (DESCRIBE on the group, Kafka's check).
fn streams_group_describe(correlation_id: i32) -> Vec<u8> {
    let request = StreamsGroupDescribeRequest {
        group_ids: vec!["g".into()],
        ..Default::default()
    };
    frame(ApiKey::StreamsGroupDescribe, 0, correlation_id, &request)
}

/// ApiVersions answered with its correlation id and no error.
fn assert_api_versions(response: Option<bytes::Bytes>, correlation_id: i32) {
    let mut response = response.expect("no ApiVersions response: connection closed");
    let header = ResponseHeader::decode(&mut response, 0).unwrap();
    assert_eq!(header.correlation_id, correlation_id);
    assert_eq!(
        ApiVersionsResponse::decode(&mut response, 3)
            .unwrap()
            .error_code,
        0
    );
}

/// The principals the authorizer saw for one StreamsGroupDescribe over this stream.
async fn principal_seen<S>(node: &Node, stream: &mut S) -> Vec<String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    node.recorder.clear();
    assert!(
        exchange(stream, &streams_group_describe(9)).await.is_some(),
        "StreamsGroupDescribe was not answered"
    );
    node.recorder.seen()
}

#[tokio::test]
async fn an_ssl_listener_answers_api_versions_and_metadata_over_tls_1_3_and_1_2() {
    let node = Node::start("").await;
    let addr = node.ssl();
    // SNI localhost, TLS 1.3 (Kafka's default ssl.protocol), then 1.2 only.
    for versions in [&[&TLS13][..], &[&TLS12][..]] {
        let config = client_config(&node.pki.ca, None, versions);
        let mut tls = connect(addr, config, "localhost").await.expect("handshake");
        let negotiated = tls.get_ref().1.protocol_version();
        assert_eq!(negotiated, Some(versions[0].version));
        assert!(tls.get_ref().1.alpn_protocol().is_none(), "no ALPN");
        assert_api_versions(exchange(&mut tls, &api_versions(1)).await, 1);
        let mut response = exchange(
            &mut tls,
            &frame(ApiKey::Metadata, 12, 2, &MetadataRequest::default()),
        )
        .await
        .expect("no Metadata response");
        let header =
            ResponseHeader::decode(&mut response, ApiKey::Metadata.response_header_version(12))
                .unwrap();
        assert_eq!(header.correlation_id, 2);
        let metadata = MetadataResponse::decode(&mut response, 12).unwrap();
        assert_eq!(
            (metadata.brokers[0].host.as_str(), metadata.brokers[0].port),
            ("127.0.0.1", i32::from(addr.port()))
        );
    }
    // An address as the server name: no SNI at all, as Java sends for an IP.
    let config = client_config(&node.pki.ca, None, &[&TLS13]);
    let mut tls = connect(addr, config, "127.0.0.1").await.expect("handshake");
    assert_api_versions(exchange(&mut tls, &api_versions(3)).await, 3);
    // The controller listener is still PLAINTEXT.
    let mut plain = TcpStream::connect(node.server.controller_addr().unwrap())
        .await
        .unwrap();
    assert_api_versions(exchange(&mut plain, &api_versions(4)).await, 4);
    let _ = &node.server_id;
    node.server.shutdown().await;
}

#[tokio::test]
async fn a_plaintext_client_on_an_ssl_listener_is_closed_and_the_listener_goes_on() {
    let node = Node::start("").await;
    let mut plain = TcpStream::connect(node.ssl()).await.unwrap();
    plain.write_all(&api_versions(1)).await.unwrap();
    let mut received = Vec::new();
    tokio::time::timeout(TIMEOUT, plain.read_to_end(&mut received))
        .await
        .expect("the plaintext connection was not closed")
        .ok();
    // At most a TLS alert record (content type 21), never a Kafka response.
    assert!(received.is_empty() || received[0] == 21, "got {received:?}");
    let config = client_config(&node.pki.ca, None, &[&TLS13]);
    let mut tls = connect(node.ssl(), config, "localhost").await.unwrap();
    assert_api_versions(exchange(&mut tls, &api_versions(2)).await, 2);
    node.server.shutdown().await;
}

/// Whether a client gets served: a handshake and one ApiVersions answered. (In TLS 1.3 the
/// server refuses a client certificate after the client's side of the handshake is done, so the
/// refusal shows on the first read.)
async fn served(addr: SocketAddr, config: Arc<rustls::ClientConfig>) -> bool {
    match connect(addr, config, "localhost").await {
        Ok(mut tls) => exchange(&mut tls, &api_versions(1)).await.is_some(),
        Err(_) => false,
    }
}

#[tokio::test]
async fn required_client_auth_refuses_a_client_without_a_trusted_certificate_or_an_expired_one() {
    let node = Node::start("ssl.client.auth=required\n").await;
    let alice = node.client(&[
        (DnType::CountryName, "US"),
        (DnType::OrganizationName, "Acme"),
        (DnType::OrganizationalUnitName, "eng"),
        (DnType::CommonName, "alice"),
    ]);
    for versions in [&[&TLS13][..], &[&TLS12][..]] {
        let no_cert = client_config(&node.pki.ca, None, versions);
        assert!(!served(node.ssl(), no_cert).await, "no certificate");
        let stranger = Pki::new("another CA").client(&[(DnType::CommonName, "mallory")]);
        let untrusted = client_config(&node.pki.ca, Some(&stranger), versions);
        assert!(
            !served(node.ssl(), untrusted).await,
            "untrusted certificate"
        );
        let expired = client_config(
            &node.pki.ca,
            Some(&node.pki.expired_client("old")),
            versions,
        );
        assert!(!served(node.ssl(), expired).await, "expired certificate");
        let trusted = client_config(&node.pki.ca, Some(&alice), versions);
        let mut tls = connect(node.ssl(), trusted, "localhost")
            .await
            .expect("handshake with a trusted certificate");
        assert_eq!(
            principal_seen(&node, &mut tls).await,
            ["User:CN=alice,OU=eng,O=Acme,C=US"],
            "DEFAULT rules: the whole DN, most specific first"
        );
    }
    node.server.shutdown().await;
}

#[tokio::test]
async fn requested_client_auth_makes_a_client_without_a_certificate_anonymous() {
    let node = Node::start("ssl.client.auth=requested\n").await;
    let config = client_config(&node.pki.ca, None, &[&TLS13]);
    let mut tls = connect(node.ssl(), config, "localhost").await.unwrap();
    assert_eq!(principal_seen(&node, &mut tls).await, ["User:ANONYMOUS"]);
    let bob = node.client(&[(DnType::CommonName, "bob")]);
    let config = client_config(&node.pki.ca, Some(&bob), &[&TLS13]);
    let mut tls = connect(node.ssl(), config, "localhost").await.unwrap();
    assert_eq!(principal_seen(&node, &mut tls).await, ["User:CN=bob"]);
    node.server.shutdown().await;
}

#[tokio::test]
async fn without_client_auth_every_client_is_anonymous() {
    let node = Node::start("").await;
    // A certificate is not asked for, so it is not sent.
    let carol = node.client(&[(DnType::CommonName, "carol")]);
    let config = client_config(&node.pki.ca, Some(&carol), &[&TLS13]);
    let mut tls = connect(node.ssl(), config, "localhost").await.unwrap();
    assert_eq!(principal_seen(&node, &mut tls).await, ["User:ANONYMOUS"]);
    node.server.shutdown().await;
}

#[tokio::test]
async fn mapping_rules_make_the_principal_and_an_unmapped_dn_is_closed() {
    let node = Node::start(
        "ssl.client.auth=required\n\
         ssl.principal.mapping.rules=RULE:^CN=(.*?),OU=(.*?),O=Acme$/$1@$2/L,RULE:^CN=svc-(.*)$/$1/U\n",
    )
    .await;
    let alice = node.client(&[
        (DnType::OrganizationName, "Acme"),
        (DnType::OrganizationalUnitName, "Eng"),
        (DnType::CommonName, "Alice"),
    ]);
    let config = client_config(&node.pki.ca, Some(&alice), &[&TLS13]);
    let mut tls = connect(node.ssl(), config, "localhost").await.unwrap();
    assert_eq!(principal_seen(&node, &mut tls).await, ["User:alice@eng"]);
    let service = node.client(&[(DnType::CommonName, "svc-billing")]);
    let config = client_config(&node.pki.ca, Some(&service), &[&TLS12]);
    let mut tls = connect(node.ssl(), config, "localhost").await.unwrap();
    assert_eq!(principal_seen(&node, &mut tls).await, ["User:BILLING"]);
    // No rule maps this DN (and no DEFAULT): Kafka fails the channel.
    let other = node.client(&[(DnType::CommonName, "eve")]);
    let config = client_config(&node.pki.ca, Some(&other), &[&TLS13]);
    node.recorder.clear();
    assert!(
        !served(node.ssl(), config).await,
        "an unmapped DN is closed"
    );
    assert!(node.recorder.seen().is_empty());
    node.server.shutdown().await;
}

#[tokio::test]
async fn a_handshake_that_never_completes_is_closed_by_the_receive_timeout() {
    let node = Node::start("socket.request.receive.timeout.ms=300\n").await;
    let started = std::time::Instant::now();
    // Half a TLS record header, then nothing; and a peer that sends nothing at all.
    let mut half = TcpStream::connect(node.ssl()).await.unwrap();
    half.write_all(&[0x16, 0x03, 0x01]).await.unwrap();
    let mut silent = TcpStream::connect(node.ssl()).await.unwrap();
    for stream in [&mut half, &mut silent] {
        let mut rest = Vec::new();
        tokio::time::timeout(TIMEOUT, stream.read_to_end(&mut rest))
            .await
            .expect("a stalled handshake was not closed")
            .ok();
    }
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(300),
        "closed by the timeout, not before it"
    );
    // A handshake in time is served.
    let config = client_config(&node.pki.ca, None, &[&TLS13]);
    let mut tls = connect(node.ssl(), config, "localhost").await.unwrap();
    assert_api_versions(exchange(&mut tls, &api_versions(1)).await, 1);
    node.server.shutdown().await;
}

#[tokio::test]
async fn listener_prefixed_keys_override_the_unprefixed_ones() {
    // Two SSL listeners: the unprefixed keys require a client certificate and name a key store
    // that does not exist; SSL overrides both, INTERNAL only the key store.
    let pki = Pki::new("kcoord test CA");
    let server_id = pki.server();
    let good = pki.write("good.pem", &server_id.keystore_pem());
    let extra = format!(
        "listeners=SSL://127.0.0.1:0,INTERNAL://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n\
         listener.security.protocol.map=SSL:SSL,INTERNAL:SSL,CONTROLLER:PLAINTEXT\n\
         ssl.keystore.location=/nonexistent/kcoord/keystore.pem\n\
         ssl.client.auth=required\n\
         listener.name.ssl.ssl.keystore.location={good}\n\
         listener.name.ssl.ssl.client.auth=none\n\
         listener.name.internal.ssl.keystore.location={good}\n",
        good = good.display()
    );
    let node = Node::start_with(pki, &extra).await;
    let internal = node.server.local_addr("INTERNAL").unwrap();
    let no_cert = client_config(&node.pki.ca, None, &[&TLS13]);
    assert!(
        served(node.ssl(), Arc::clone(&no_cert)).await,
        "SSL: client auth none"
    );
    assert!(
        !served(internal, no_cert).await,
        "INTERNAL: client auth required"
    );
    let dave = node.client(&[(DnType::CommonName, "dave")]);
    let config = client_config(&node.pki.ca, Some(&dave), &[&TLS13]);
    let mut tls = connect(internal, config, "localhost").await.unwrap();
    assert_eq!(principal_seen(&node, &mut tls).await, ["User:CN=dave"]);
    node.server.shutdown().await;
}

#[tokio::test]
async fn an_encrypted_key_serves_with_ssl_key_password() {
    let pki = Pki::new("kcoord test CA");
    let id = pki.server();
    let text = format!(
        "{}{}",
        tls_support::encrypted_key_pem(&id.key_der, "s3cret"),
        id.cert_pem
    );
    let keystore = pki.write("encrypted.pem", &text);
    let extra = format!(
        "listener.name.ssl.ssl.keystore.location={}\nssl.key.password=s3cret\n",
        keystore.display()
    );
    let node = Node::start_with(pki, &extra).await;
    let config = client_config(&node.pki.ca, None, &[&TLS13]);
    let mut tls = connect(node.ssl(), config, "localhost").await.unwrap();
    // The server presents the certificate stored beside the encrypted key.
    let presented = tls.get_ref().1.peer_certificates().unwrap()[0].clone();
    assert_eq!(presented, id.cert);
    assert_api_versions(exchange(&mut tls, &api_versions(1)).await, 1);
    node.server.shutdown().await;
}

/// Pipelined requests over TLS, big ones (Metadata requests in frames large enough for the bulk
/// lane) and many small ones whose responses are batched into one write, are answered in
/// order. (That nothing is left in the TLS session between writes is proven with a full pipe in
/// `net::connection`'s tests.)
#[tokio::test]
async fn pipelined_and_big_responses_come_out_over_tls_in_order() {
    use kcoord_wire::messages::metadata_request::MetadataRequestTopic;
    let node = Node::start("").await;
    let config = client_config(&node.pki.ca, None, &[&TLS13]);
    let mut tls = connect(node.ssl(), config, "localhost").await.unwrap();
    let many_topics = MetadataRequest {
        topics: Some(
            (0..8_000)
                .map(|i| MetadataRequestTopic {
                    name: Some(format!("no-such-topic-{i}")),
                    ..Default::default()
                })
                .collect(),
        ),
        ..Default::default()
    };
    const BIG: i32 = 2;
    let mut burst = Vec::new();
    for id in 0..BIG {
        burst.extend(frame(ApiKey::Metadata, 12, id, &many_topics));
    }
    for id in BIG..BIG + 100 {
        burst.extend(api_versions(id));
    }
    tls.write_all(&burst).await.unwrap();
    tls.flush().await.unwrap();
    for id in 0..BIG + 100 {
        let mut size = [0u8; 4];
        tokio::time::timeout(TIMEOUT, tls.read_exact(&mut size))
            .await
            .expect("a response did not come")
            .unwrap();
        let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
        tls.read_exact(&mut body).await.unwrap();
        let mut body = bytes::Bytes::from(body);
        let big = id < BIG;
        let header_version = if big {
            ApiKey::Metadata.response_header_version(12)
        } else {
            0
        };
        let header = ResponseHeader::decode(&mut body, header_version).unwrap();
        assert_eq!(header.correlation_id, id);
        if big {
            let metadata = MetadataResponse::decode(&mut body, 12).unwrap();
            assert_eq!(metadata.topics.len(), 8_000);
        }
    }
    node.server.shutdown().await;
}

/// SASL_SSL: TLS first, then SASL PLAIN over it; the principal is the SASL name even when the
/// client also presents a certificate, and the unprefixed `ssl.client.auth=required` does not
/// apply to a SASL_SSL listener (Kafka's rule), so a client without a certificate gets in.
#[tokio::test]
async fn a_sasl_ssl_listener_authenticates_with_sasl_over_tls() {
    use kcoord_wire::messages::{
        SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    };
    let pki = Pki::new("kcoord test CA");
    let server_id = pki.server();
    let keystore = pki.write("server.pem", &server_id.keystore_pem());
    let truststore = pki.write("ca.pem", &pki.ca.cert_pem);
    let text = format!(
        "node.id=1\nlisteners=SASL_SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n\
         listener.security.protocol.map=SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT\n\
         ssl.keystore.type=PEM\nssl.keystore.location={}\n\
         ssl.truststore.type=PEM\nssl.truststore.location={}\nssl.client.auth=required\n\
         sasl.enabled.mechanisms=PLAIN\n\
         listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"alice-secret\";\n",
        keystore.display(),
        truststore.display()
    );
    let config = Config::parse("tls-test", &text).unwrap_or_else(|e| panic!("{e}"));
    let recorder = Arc::new(Recorder::default());
    let extensions = Extensions {
        authorizer: Some(Arc::clone(&recorder) as Arc<dyn Authorizer>),
        ..Default::default()
    };
    let server = start_with(config, extensions).await.unwrap();
    let node = Node {
        server,
        recorder,
        pki,
        server_id,
    };
    let addr = node.server.local_addr("SASL_SSL").unwrap();
    let certificate = node.client(&[(DnType::CommonName, "cert-name")]);
    for client_cert in [None, Some(&certificate)] {
        let config = client_config(&node.pki.ca, client_cert, &[&TLS13]);
        let mut tls = connect(addr, config, "localhost").await.expect("handshake");
        let handshake = SaslHandshakeRequest {
            mechanism: "PLAIN".into(),
            ..Default::default()
        };
        assert!(
            exchange(&mut tls, &frame(ApiKey::SaslHandshake, 1, 1, &handshake))
                .await
                .is_some()
        );
        let token = SaslAuthenticateRequest {
            auth_bytes: bytes::Bytes::from_static(b"\0alice\0alice-secret"),
            ..Default::default()
        };
        let mut response = exchange(&mut tls, &frame(ApiKey::SaslAuthenticate, 2, 2, &token))
            .await
            .expect("a SaslAuthenticate response");
        ResponseHeader::decode(&mut response, 1).unwrap();
        assert_eq!(
            SaslAuthenticateResponse::decode(&mut response, 2)
                .unwrap()
                .error_code,
            0
        );
        assert_eq!(principal_seen(&node, &mut tls).await, vec!["User:alice"]);
    }
    node.server.shutdown().await;
}
