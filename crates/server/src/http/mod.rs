//! The HTTP listener (`http.listener`): `/metrics` and `/health/*` for Prometheus and
//! orchestrators, and the JSON API and web page of [`crate::http::web`] for people and UIs.
//!
//! It runs on a thread of its own with its own current-thread tokio runtime, so no HTTP
//! client, however slow or hostile, ever holds a worker of the runtime that answers Kafka
//! requests or delays a heartbeat. What a client can take is bounded: at most
//! [`MAX_CONNECTIONS`] connections at once (more wait in the accept backlog), request headers
//! in full within [`HEADER_READ_TIMEOUT`] (also between requests on a kept-alive connection)
//! and at most [`MAX_HEADER_BYTES`], bodies of at most [`MAX_BODY_BYTES`], a handler's answer
//! within [`REQUEST_TIMEOUT`], and a connection's whole life within [`MAX_CONNECTION_TIME`]
//! (a client that stops reading a response cannot keep its slot).
//!
//! Routes come from one place, [`router`]: each module of this directory contributes a
//! `routes()` that [`router`] merges, and the limits are layered over all of them.

pub mod health;
pub mod metrics;
pub mod web;

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::connect_info::ConnectInfo;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::StatusCode;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::TimeoutLayer;
use tracing::{debug, info, warn};

use crate::config::http::HttpListener;
use crate::config::listeners::bracket_ipv6;
use crate::state::ServerState;

/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 64;
/// A request's headers must arrive in full this soon after it starts (or after the previous
/// response on a kept-alive connection).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// The most a request's headers may take.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;
/// hyper's read buffer per connection (it wants at least 8 KiB).
const READ_BUFFER_BYTES: usize = 64 * 1024;
/// The largest request body accepted (no route reads one yet).
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// How long a handler may take to answer.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest a connection stays open, however it is used.
pub const MAX_CONNECTION_TIME: Duration = Duration::from_secs(120);
/// How long shutdown lets requests in progress finish.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Pause after a failed accept (out of file descriptors, say), so the loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// State every route sees.
pub type AppState = Arc<ServerState>;

/// Every route of the HTTP listener, with the limits over them. **Routes are added here**:
/// a module of this directory defines `pub fn routes() -> Router<AppState>` and is merged
/// below (the JSON API and the web page go in the same way).
pub fn router(state: AppState) -> Router {
    Router::new()
        .merge(metrics::routes())
        .merge(health::routes())
        .merge(crate::http::web::routes())
        // Gateway mode with several nodes: a group's pages come from the node serving it.
        .route_layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state),
            crate::http::web::nodes::pass_to_owner,
        ))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(RequestBodyLimitLayer::new(MAX_BODY_BYTES))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::SERVICE_UNAVAILABLE,
            REQUEST_TIMEOUT,
        ))
        .with_state(state)
}

/// Binds `http.listener` (before anything else starts, like the Kafka listeners).
pub fn bind(config: &HttpListener) -> io::Result<std::net::TcpListener> {
    let listener = std::net::TcpListener::bind((config.bind_host(), config.port))?;
    listener.set_nonblocking(true)?;
    Ok(listener)
}

/// The running HTTP listener.
#[derive(Debug)]
pub struct HttpServer {
    local_addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    stopped: Option<oneshot::Receiver<()>>,
}

impl HttpServer {
    /// Serves `router(state)` on `listener`, on a new thread with its own runtime.
    pub fn start(listener: std::net::TcpListener, state: AppState) -> io::Result<HttpServer> {
        let local_addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (stop, stop_rx) = oneshot::channel();
        let (stopped_tx, stopped) = oneshot::channel();
        let app = router(state);
        std::thread::Builder::new()
            .name("kcoord-http".to_owned())
            .spawn(move || {
                if let Err(e) = crate::support::priority::lower_this_thread() {
                    warn!(error = %e, "the HTTP listener runs at the Kafka listeners' priority");
                }
                runtime.block_on(serve(listener, app, stop_rx));
                let _ = stopped_tx.send(());
            })?;
        info!(address = %local_addr, "HTTP listener (/metrics, /health/live, /health/ready) listening");
        Ok(HttpServer {
            local_addr,
            stop: Some(stop),
            stopped: Some(stopped),
        })
    }

    /// The address bound (port 0 in the configuration resolved).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// `host:port` as the startup line shows it.
    pub fn shown_addr(&self) -> String {
        format!(
            "{}:{}",
            bracket_ipv6(&self.local_addr.ip().to_string()),
            self.local_addr.port()
        )
    }

    /// Stops accepting, lets requests in progress finish (briefly), and waits for the thread.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(stopped) = self.stopped.take() {
            let _ = stopped.await;
        }
    }
}

async fn serve(listener: std::net::TcpListener, app: Router, mut stop: oneshot::Receiver<()>) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(e) => {
            warn!(error = %e, "the HTTP listener cannot serve its socket; no HTTP");
            return;
        }
    };
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut connections = JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        let slot = tokio::select! {
            _ = &mut stop => break,
            slot = Arc::clone(&slots).acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
        };
        let accepted = tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, peer)) => {
                connections.spawn(serve_connection(stream, peer, app.clone(), slot));
            }
            Err(e) => {
                debug!(error = %e, "HTTP accept failed");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
            }
        }
    }
    drop(listener);
    let drain = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(SHUTDOWN_GRACE, drain).await.is_err() {
        connections.shutdown().await;
    }
}

async fn serve_connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    app: Router,
    slot: OwnedSemaphorePermit,
) {
    let _ = stream.set_nodelay(true);
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .max_buf_size(READ_BUFFER_BYTES)
        .max_header_size(MAX_HEADER_BYTES);
    // The client's address, for the routes that need it (the JSON API's ACL host).
    let app = tower::ServiceExt::map_request(app, move |mut request: Request<Incoming>| {
        request.extensions_mut().insert(ConnectInfo(peer));
        request
    });
    let connection = builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app));
    match tokio::time::timeout(MAX_CONNECTION_TIME, connection).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => debug!(%peer, error = %e, "HTTP connection ended with an error"),
        Err(_) => debug!(%peer, "HTTP connection open too long; closed"),
    }
    drop(slot);
}
