//! A hand-written Kafka client for the security tests: frames, ApiVersions, the SASL handshake,
//! PLAIN, and SCRAM through kcoord-sasl's client, over TCP or TLS.
#![allow(dead_code)] // each test binary uses its own part

use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kcoord_sasl::ScramMechanism;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::*;
use kcoord_wire::{Decodable, Encodable};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

pub const WAIT: Duration = Duration::from_secs(20);

/// A connection speaking Kafka frames by hand, over TCP or TLS.
pub struct Client<S = TcpStream> {
    pub stream: S,
    correlation: i32,
}

impl Client<TcpStream> {
    pub async fn connect(addr: SocketAddr) -> Client<TcpStream> {
        Client::over(TcpStream::connect(addr).await.unwrap())
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> Client<S> {
    pub fn over(stream: S) -> Client<S> {
        Client {
            stream,
            correlation: 0,
        }
    }

    pub async fn write_frame(&mut self, payload: &[u8]) {
        let mut out = (payload.len() as i32).to_be_bytes().to_vec();
        out.extend_from_slice(payload);
        self.stream.write_all(&out).await.unwrap();
        self.stream.flush().await.unwrap();
    }

    /// One frame; `None` once the server closed the connection.
    pub async fn read_frame(&mut self) -> Option<Bytes> {
        let mut size = [0u8; 4];
        tokio::time::timeout(WAIT, self.stream.read_exact(&mut size))
            .await
            .expect("timed out")
            .ok()?;
        let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
        tokio::time::timeout(WAIT, self.stream.read_exact(&mut body))
            .await
            .expect("timed out")
            .ok()?;
        Some(Bytes::from(body))
    }

    pub async fn send<Req: Encodable, Resp: Decodable>(
        &mut self,
        api: ApiKey,
        version: i16,
        request: &Req,
    ) -> Option<Resp> {
        self.correlation += 1;
        let header = RequestHeader {
            request_api_key: api.key(),
            request_api_version: version,
            correlation_id: self.correlation,
            client_id: Some("sasl-test".into()),
            ..Default::default()
        };
        let mut buf = BytesMut::new();
        header
            .encode(&mut buf, api.request_header_version(version))
            .unwrap();
        request.encode(&mut buf, version).unwrap();
        self.write_frame(&buf).await;
        let mut body = self.read_frame().await?;
        let header =
            ResponseHeader::decode(&mut body, api.response_header_version(version)).unwrap();
        assert_eq!(header.correlation_id, self.correlation);
        Some(Resp::decode(&mut body, version).unwrap())
    }

    pub async fn handshake(&mut self, mechanism: &str) -> SaslHandshakeResponse {
        let request = SaslHandshakeRequest {
            mechanism: mechanism.into(),
            ..Default::default()
        };
        self.send(ApiKey::SaslHandshake, 1, &request)
            .await
            .expect("a SaslHandshake response")
    }

    pub async fn authenticate(&mut self, token: &[u8]) -> Option<SaslAuthenticateResponse> {
        let request = SaslAuthenticateRequest {
            auth_bytes: Bytes::copy_from_slice(token),
            ..Default::default()
        };
        self.send(ApiKey::SaslAuthenticate, 2, &request).await
    }

    pub async fn plain(&mut self, user: &str, password: &str) -> Option<SaslAuthenticateResponse> {
        assert_eq!(self.handshake("PLAIN").await.error_code, 0);
        self.authenticate(format!("\0{user}\0{password}").as_bytes())
            .await
    }

    pub async fn is_closed(&mut self) -> bool {
        let mut byte = [0u8; 1];
        matches!(
            tokio::time::timeout(WAIT, self.stream.read(&mut byte))
                .await
                .expect("timed out"),
            Ok(0) | Err(_)
        )
    }

    /// DescribeAcls: NONE for a principal with DESCRIBE on the cluster, CAF otherwise.
    pub async fn describe_acls(&mut self) -> i16 {
        let request = DescribeAclsRequest {
            resource_type_filter: 1,
            resource_name_filter: None,
            pattern_type_filter: 1,
            principal_filter: None,
            host_filter: None,
            operation: 1,
            permission_type: 1,
            ..Default::default()
        };
        let response: DescribeAclsResponse = self
            .send(ApiKey::DescribeAcls, 3, &request)
            .await
            .expect("a DescribeAcls response");
        response.error_code
    }
}

/// One SCRAM exchange after the handshake, with kcoord-sasl's client (which also verifies the
/// server's signature); the server's last answer.
pub async fn scram<S: AsyncRead + AsyncWrite + Unpin>(
    client: &mut Client<S>,
    mechanism: ScramMechanism,
    user: &str,
    password: &str,
) -> SaslAuthenticateResponse {
    assert_eq!(
        client
            .handshake(mechanism.mechanism_name())
            .await
            .error_code,
        0
    );
    let mut scram = kcoord_sasl::ScramClient::new(mechanism, user, password);
    let first = scram.first_message().unwrap();
    let server_first = client.authenticate(&first).await.unwrap();
    if server_first.error_code != 0 {
        return server_first;
    }
    let kcoord_sasl::ClientStep::Respond(client_final) =
        scram.step(&server_first.auth_bytes).unwrap()
    else {
        panic!("SCRAM ended after the server's first message");
    };
    let last = client.authenticate(&client_final).await.unwrap();
    if last.error_code == 0 {
        assert_eq!(
            scram.step(&last.auth_bytes),
            Ok(kcoord_sasl::ClientStep::Complete),
            "the server's signature"
        );
    }
    last
}
