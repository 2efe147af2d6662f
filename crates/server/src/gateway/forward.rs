//! Forwarding one client connection's requests upstream.
//!
//! Each client connection gets its own upstream connection, opened on its first forwarded
//! request: to the broker its port stands for, or on the bootstrap port to any broker. Kafka
//! works through one request per connection at a time, so a long-polling Fetch on a shared
//! connection would hold up everyone else's requests. Requests are queued upstream in arrival
//! order while their answers are awaited by the connection's writer, in the same order
//! (`Forwarded::Later`), so a client's pipeline stays full. Produce and Fetch bodies, and every
//! answer but the rewritten ones, pass through as bytes; only the correlation id in the
//! headers differs. An upstream that closes or cannot be reached closes the client's
//! connection, as a broker going away would.

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use kcoord_client::Connection as Upstream;
use kcoord_wire::api::ApiKey;
use kcoord_wire::frame::OutFrame;
use kcoord_wire::messages::{RequestHeader, ResponseHeader};
use kcoord_wire::Encodable;
use tokio::sync::OnceCell;

use super::mapping;
use super::Gateway;

mod login;
pub use login::{LoginRefused, UpstreamLogin};

/// A response frame still on its way from upstream; `None` when the client's connection is
/// to be closed instead.
pub type PendingFrame =
    std::pin::Pin<Box<dyn std::future::Future<Output = Option<OutFrame>> + Send>>;

/// What became of a forwarded request.
pub enum Forwarded {
    /// Nothing comes back (Produce with acks=0).
    NoResponse,
    /// The upstream cannot be reached or failed: close the client's connection.
    Failed,
    /// The answer, for the writer to wait for in its turn.
    Later(PendingFrame),
}

impl std::fmt::Debug for Forwarded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Forwarded::NoResponse => "NoResponse",
            Forwarded::Failed => "Failed",
            Forwarded::Later(_) => "Later",
        })
    }
}

/// Answers smaller than this are copied behind their header into one buffer, which the
/// writer may batch with others; larger ones go out as they came.
const COPY_LIMIT: usize = 64 * 1024;

/// How a forwarded answer is changed before it goes back to the client.
pub enum Change {
    /// Its brokers mapped onto kcoord's endpoints ([`mapping::rewrite`]).
    Brokers,
    /// By the caller: kcoord's own part of the answer added (the body in, the new body or why
    /// not out).
    With(Box<dyn FnOnce(Bytes) -> Result<Bytes, String> + Send>),
}

impl std::fmt::Debug for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Change::Brokers => "Brokers",
            Change::With(_) => "With",
        })
    }
}

/// Where a forwarder sends.
#[derive(Debug, Clone)]
enum Destination {
    /// The upstream broker this connection's port stands for; `None` on the bootstrap port.
    Broker(Option<i32>),
    /// Another kcoord node's broker listener (`host:port`), for the groups it serves.
    Node(String),
}

/// One client connection's way upstream, or to another kcoord node.
#[derive(Debug)]
pub struct Forwarder {
    gateway: Arc<Gateway>,
    destination: Destination,
    upstream: OnceCell<(String, Upstream)>,
}

impl Forwarder {
    pub fn new(gateway: Arc<Gateway>, target: Option<i32>) -> Forwarder {
        Forwarder {
            gateway,
            destination: Destination::Broker(target),
            upstream: OnceCell::new(),
        }
    }

    /// A forwarder to the kcoord node whose broker listener is `listener`.
    pub fn to_node(gateway: Arc<Gateway>, listener: String) -> Forwarder {
        Forwarder {
            gateway,
            destination: Destination::Node(listener),
            upstream: OnceCell::new(),
        }
    }

    pub fn gateway(&self) -> &Arc<Gateway> {
        &self.gateway
    }

    /// The upstream connection, opened on first use; with `gateway.authentication=upstream`
    /// it is the one the client's relayed SASL exchange opened ([`Forwarder::login`]).
    async fn connection(&self) -> Option<&(String, Upstream)> {
        let opened = self
            .upstream
            .get_or_try_init(|| async {
                let (address, config) = match &self.destination {
                    Destination::Node(listener) => {
                        (listener.clone(), self.gateway.node_client().clone())
                    }
                    Destination::Broker(_) if self.gateway.settings().upstream_authenticates => {
                        // The client's login opens this connection: reaching here means the
                        // connection has no login, and kcoord's own user must not stand in.
                        return Err(());
                    }
                    Destination::Broker(target) => {
                        (self.broker_address(*target)?, self.gateway.client().clone())
                    }
                };
                match Upstream::connect(&address, config).await {
                    Ok(conn) => Ok((address, conn)),
                    Err(e) => {
                        self.gateway.log_failure(
                            &address,
                            "cannot reach the upstream broker; closing the client connection",
                            &e,
                        );
                        Err(())
                    }
                }
            })
            .await;
        opened.ok()
    }

    /// The address of the upstream broker `target` (any, on the bootstrap port).
    fn broker_address(&self, target: Option<i32>) -> Result<String, ()> {
        self.gateway.address_for(target).ok_or_else(|| {
            let target = target.map_or("any".to_owned(), |id| id.to_string());
            self.gateway.log_failure(
                &target,
                "no known upstream broker for this port; closing the client connection",
                &format!("broker {target} is not in the upstream metadata"),
            );
        })
    }

    /// Sends one request upstream; its answer comes later, in order, changed as `change` says.
    pub async fn forward(
        &self,
        header: &RequestHeader,
        (api, version): (ApiKey, i16),
        body: Bytes,
        change: Option<Change>,
    ) -> Forwarded {
        let expect_response = !(api == ApiKey::Produce && produce_acks(&body, version) == Some(0));
        let Some((address, upstream)) = self.connection().await else {
            return Forwarded::Failed;
        };
        let client_id = header.client_id.as_deref();
        let pending = match upstream
            .forward(api, version, client_id, body, expect_response)
            .await
        {
            Ok(Some(pending)) => pending,
            Ok(None) => return Forwarded::NoResponse,
            Err(e) => {
                self.gateway.log_failure(
                    address,
                    "the upstream connection failed; closing the client connection",
                    &e,
                );
                return Forwarded::Failed;
            }
        };
        let gateway = Arc::clone(&self.gateway);
        let address = address.clone();
        let correlation_id = header.correlation_id;
        Forwarded::Later(Box::pin(async move {
            let body = match pending.response().await {
                Ok(body) => body,
                Err(e) => {
                    gateway.log_failure(
                        &address,
                        "no answer from the upstream broker; closing the client connection",
                        &e,
                    );
                    return None;
                }
            };
            let changed = match change {
                None => Ok(body),
                Some(Change::Brokers) => {
                    mapping::rewrite(api, version, body, &gateway.placement(), &mut |id| {
                        gateway.note_broker(id)
                    })
                    .map_err(|e| e.to_string())
                }
                Some(Change::With(change)) => change(body),
            };
            let body = match changed {
                Ok(body) => body,
                Err(e) => {
                    gateway.log_failure(
                        &address,
                        "cannot change the upstream's answer; closing the client connection",
                        &e,
                    );
                    return None;
                }
            };
            frame(api, version, correlation_id, body)
        }))
    }
}

/// The client's response frame: its correlation id in the response header, then `body`.
pub(crate) fn frame(
    api: ApiKey,
    version: i16,
    correlation_id: i32,
    body: Bytes,
) -> Option<OutFrame> {
    let mut header = BytesMut::with_capacity(16);
    header.put_i32(0);
    ResponseHeader {
        correlation_id,
        ..Default::default()
    }
    .encode(&mut header, api.response_header_version(version))
    .ok()?;
    let size = i32::try_from(header.len() - 4 + body.len()).ok()?;
    header[..4].copy_from_slice(&size.to_be_bytes());
    if body.len() < COPY_LIMIT {
        header.extend_from_slice(&body);
        return Some(OutFrame::One(header.freeze()));
    }
    Some(OutFrame::Parts(vec![header.freeze(), body]))
}

/// The `acks` of a Produce request body: after the transactional id from v3 (a compact
/// string from v9, the first flexible version); `None` when the body is too short.
pub fn produce_acks(body: &[u8], version: i16) -> Option<i16> {
    let at = match version {
        ..=2 => 0,
        3..=8 => {
            let len = i16::from_be_bytes([*body.first()?, *body.get(1)?]);
            2 + usize::try_from(len).unwrap_or(0)
        }
        _ => {
            let (len_plus_one, used) = unsigned_varint(body)?;
            used + usize::try_from(len_plus_one.saturating_sub(1)).ok()?
        }
    };
    Some(i16::from_be_bytes([*body.get(at)?, *body.get(at + 1)?]))
}

/// An unsigned varint and the bytes it took.
fn unsigned_varint(bytes: &[u8]) -> Option<(u32, usize)> {
    let mut value: u32 = 0;
    for (i, b) in bytes.iter().take(5).enumerate() {
        value |= u32::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcoord_wire::messages::ProduceRequest;

    fn body(acks: i16, transactional_id: Option<&str>, version: i16) -> Vec<u8> {
        let req = ProduceRequest {
            acks,
            transactional_id: transactional_id.map(str::to_owned),
            timeout_ms: 1000,
            ..Default::default()
        };
        let mut out = BytesMut::new();
        req.encode(&mut out, version).unwrap();
        out.to_vec()
    }

    #[test]
    fn acks_are_read_at_every_version_with_and_without_a_transactional_id() {
        for version in [2, 3, 8, 9, 12, 13] {
            for acks in [0, 1, -1] {
                for tid in [None, Some("tx-1"), Some(&*"t".repeat(200))] {
                    if version < 3 && tid.is_some() {
                        continue;
                    }
                    let got = produce_acks(&body(acks, tid, version), version);
                    assert_eq!(got, Some(acks), "v{version} acks={acks} tid={tid:?}");
                }
            }
        }
    }

    #[test]
    fn a_short_body_has_no_acks() {
        assert_eq!(produce_acks(&[], 9), None);
        assert_eq!(produce_acks(&[0, 5, 1], 3), None);
        assert_eq!(produce_acks(&[0x80], 9), None);
    }

    #[test]
    fn a_frame_carries_the_clients_correlation_id_and_the_body_untouched() {
        let body = Bytes::from(vec![7u8; 100]);
        let out = frame(ApiKey::Fetch, 12, 42, body.clone())
            .unwrap()
            .to_bytes();
        // Fetch v12 has response header v1: correlation id, then an empty tagged field list.
        assert_eq!(&out[..4], &(4 + 1 + 100i32).to_be_bytes());
        assert_eq!(&out[4..8], &42i32.to_be_bytes());
        assert_eq!(out[8], 0);
        assert_eq!(&out[9..], &body[..]);
        let big = Bytes::from(vec![1u8; COPY_LIMIT]);
        let parts = frame(ApiKey::Fetch, 4, 7, big.clone()).unwrap();
        assert_eq!(parts.parts().len(), 2, "a big body is not copied");
        assert_eq!(parts.len(), 8 + big.len());
    }
}
