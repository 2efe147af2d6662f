//! A fake context for calling handlers directly.

use std::net::SocketAddr;
use std::sync::Arc;

use kcoord_wire::messages::RequestHeader;

use crate::config::{Config, ListenerKind, SecurityProtocol};
use crate::state::{ListenerInfo, RequestContext, ServerState};

pub const NODE_ID: i32 = 7;
pub const CLUSTER_ID: &str = "MkU3OEVBNTcwNTJENDM2Qg";

/// A node with a broker listener on 9092 and a controller listener on 9093, advertised as
/// `broker.example` / `controller.example`.
pub fn server() -> ServerState {
    let config = Config::parse(
        "test",
        &format!(
            "node.id={NODE_ID}\ncluster.id={CLUSTER_ID}\nlisteners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\n"
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let listener = |name: &str, kind, port: u16, host: &str| ListenerInfo {
        name: name.to_owned(),
        kind,
        security_protocol: SecurityProtocol::Plaintext,
        local_addr: SocketAddr::from(([127, 0, 0, 1], port)),
        advertised_host: host.to_owned(),
        advertised_port: port,
    };
    ServerState::new(
        Arc::new(config),
        vec![
            listener("PLAINTEXT", ListenerKind::Broker, 9092, "broker.example"),
            listener(
                "CONTROLLER",
                ListenerKind::Controller,
                9093,
                "controller.example",
            ),
        ],
    )
}

pub fn listener(server: &ServerState, kind: ListenerKind) -> Arc<ListenerInfo> {
    server
        .listeners
        .iter()
        .find(|l| l.kind == kind)
        .cloned()
        .unwrap_or_else(|| panic!("no {kind} listener"))
}

/// Calls `f` with a context for a request arriving on a `kind` listener.
pub fn with_ctx<R>(
    server: &ServerState,
    kind: ListenerKind,
    f: impl FnOnce(&RequestContext<'_>) -> R,
) -> R {
    let listener = listener(server, kind);
    let header = RequestHeader {
        client_id: Some("test-client".to_owned()),
        ..Default::default()
    };
    let ctx = RequestContext {
        server,
        listener: &listener,
        peer: SocketAddr::from(([127, 0, 0, 1], 40000)),
        header: &header,
    };
    f(&ctx)
}
