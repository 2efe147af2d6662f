//! What a failing TLS peer writes to the log: one line per peer address and kind a minute,
//! however often it fails. A test binary of its own, since the limiter is process-wide.

mod tls_support;

use std::io::Write;
use std::sync::{Arc, Mutex};

use kcoord_server::{start, Config};
use rcgen::DnType;
use tls_support::{client_config, connect, exchange, Pki, TIMEOUT};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn lines_with(&self, needle: &str) -> Vec<String> {
        String::from_utf8_lossy(&self.0.lock().unwrap())
            .lines()
            .filter(|l| l.contains(needle))
            .map(str::to_owned)
            .collect()
    }
}

#[tokio::test]
async fn failed_handshakes_and_unmapped_certificates_log_once_per_peer() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    // The test's runtime is one thread, where the server's tasks run too.
    let _guard = tracing::subscriber::set_default(subscriber);

    let pki = Pki::new("kcoord test CA");
    let server = pki.server();
    let keystore = pki.write("server.pem", &server.keystore_pem());
    let truststore = pki.write("ca.pem", &pki.ca.cert_pem);
    let text = format!(
        "node.id=1\nlisteners=SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n\
         ssl.keystore.type=PEM\nssl.keystore.location={}\nssl.truststore.type=PEM\n\
         ssl.truststore.location={}\nssl.client.auth=required\n\
         ssl.principal.mapping.rules=RULE:^CN=admin$/admin/\n",
        keystore.display(),
        truststore.display()
    );
    let node = start(Config::parse("tls-log", &text).unwrap())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let addr = node.local_addr("SSL").unwrap();
    // Peers that connect and hang up before finishing the handshake are disconnections (Kafka
    // logs them at DEBUG), not failed authentications: they must not use up the address's line
    // before the plaintext client below fails.
    for _ in 0..3 {
        let mut gone = TcpStream::connect(addr).await.unwrap();
        gone.shutdown().await.unwrap();
        let mut rest = Vec::new();
        tokio::time::timeout(TIMEOUT, gone.read_to_end(&mut rest))
            .await
            .expect("not closed")
            .ok();
    }
    for _ in 0..3 {
        let mut plain = TcpStream::connect(addr).await.unwrap();
        plain.write_all(b"\x00\x00\x00\x05hello").await.unwrap();
        let mut rest = Vec::new();
        tokio::time::timeout(TIMEOUT, plain.read_to_end(&mut rest))
            .await
            .expect("not closed")
            .ok();
    }
    let eve = pki.client(&[(DnType::CommonName, "eve")]);
    for _ in 0..3 {
        let config = client_config(&pki.ca, Some(&eve), &[&rustls::version::TLS13]);
        if let Ok(mut tls) = connect(addr, config, "localhost").await {
            assert!(
                exchange(&mut tls, b"\x00\x00\x00\x00").await.is_none(),
                "an unmapped DN is not served"
            );
        }
    }
    node.shutdown().await;

    let handshakes = captured.lines_with("SSL handshake failed");
    assert_eq!(handshakes.len(), 1, "{handshakes:#?}");
    assert!(handshakes[0].contains(" INFO "), "{}", handshakes[0]);
    assert!(
        handshakes[0].contains("Failed authentication with /127.0.0.1"),
        "{}",
        handshakes[0]
    );
    assert!(
        !handshakes[0].contains("eof"),
        "the line is the plaintext client's: {}",
        handshakes[0]
    );
    assert!(
        captured.lines_with("disconnected").is_empty(),
        "disconnections are DEBUG lines"
    );
    let unmapped = captured.lines_with("based on SSL principal mapping rules");
    assert_eq!(unmapped.len(), 1, "{unmapped:#?}");
    assert!(unmapped[0].contains(" WARN "), "{}", unmapped[0]);
    assert!(
        unmapped[0]
            .contains("Failed to map name for 'CN=eve' based on SSL principal mapping rules."),
        "{}",
        unmapped[0]
    );
}
