//! From one request frame to one response frame: header, version negotiation, the single
//! `ApiKey` → handler match, encoding.
//!
//! Where Kafka closes the connection, so do we, after one WARN naming the peer: an unknown API
//! key, an API this listener does not serve, an unparsable header or body, and an unsupported
//! version of any API but ApiVersions (Kafka's `Processor.parseRequestHeader` throws
//! UnsupportedVersionException there and `SocketServer` closes the channel). ApiVersions at an
//! unknown version is answered with UNSUPPORTED_VERSION in a v0 body (KIP-511).

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use kcoord_wire::api::ApiKey;
use kcoord_wire::frame::{write_frame, OutFrame, SharedFrame};
use kcoord_wire::messages::{RequestHeader, ResponseHeader};
use kcoord_wire::{Decodable, Encodable, ErrorCodes};
use tracing::{debug, error};

use crate::gateway::forward::{Change, Forwarded, Forwarder, PendingFrame};
use crate::rpc::apis::api_versions;
use crate::rpc::authentication::SaslSession;
use crate::rpc::bulk::BulkHandle;
use crate::rpc::versions::{supported_versions_in, Mode};
use crate::rpc::Gateway;
use crate::runtime::cluster::ListenerInfo;
use crate::state::{RequestContext, ServerState};
use crate::support::logging::{log_per_peer, Capped};

/// The target of the line logged for every request at debug, kept when the module moves: an
/// operator turns the request log on with `log.level=info,kcoord_server::dispatch=debug`
/// (config/README.md).
const REQUEST_LOG: &str = "kcoord_server::dispatch";

/// What to do after a request.
#[derive(Debug)]
pub enum Reply {
    /// Send this frame (size prefix included).
    Respond(OutFrame),
    /// Send nothing (Produce with acks=0).
    NoResponse,
    /// Close the connection; the reason has been logged.
    Close,
    /// Send this frame, then close the connection (a failed authentication).
    Last(OutFrame),
    /// An answer still on its way (from the upstream cluster, in gateway mode): the writer
    /// waits for it in its turn while the next requests are read.
    Later(Later),
}

impl Reply {
    /// This reply, its request counted as served in the request metrics: at `done`, or for an
    /// answer still on its way, once it is there. A closed connection served nothing.
    pub fn counted(
        self,
        server: &Arc<ServerState>,
        api: Option<ApiKey>,
        started: tokio::time::Instant,
        done: tokio::time::Instant,
    ) -> Reply {
        match (api, self) {
            (Some(api), Reply::Later(later)) => Reply::Later(later.timed(server, api, started)),
            (Some(api), reply) if !matches!(reply, Reply::Close) => {
                server.metrics.requests.served(api, done - started);
                reply
            }
            (_, reply) => reply,
        }
    }
}

/// A response frame that is not ready yet; `None` closes the connection instead.
pub struct Later(PendingFrame);

impl Later {
    /// The frame, once it is there.
    pub async fn frame(self) -> Option<OutFrame> {
        self.0.await
    }

    /// This answer, counting the request as served (since `started`) in the request metrics
    /// once it is there: a forwarded request takes the cluster's time too, as a request on a
    /// Kafka broker is timed until its response is ready.
    pub fn timed(
        self,
        server: &Arc<ServerState>,
        api: ApiKey,
        started: tokio::time::Instant,
    ) -> Later {
        let server = Arc::clone(server);
        Later(Box::pin(async move {
            let frame = self.0.await;
            if frame.is_some() {
                server.metrics.requests.served(api, started.elapsed());
            }
            frame
        }))
    }
}

impl std::fmt::Debug for Later {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Later")
    }
}

/// The connection a request arrived on.
#[derive(Debug, Clone)]
pub struct Connection {
    pub server: Arc<ServerState>,
    pub listener: Arc<ListenerInfo>,
    pub peer: SocketAddr,
    /// The peer as Kafka records a member's client host, formatted once per connection.
    pub client_host: Arc<str>,
    /// On a SASL listener: the connection's authentication, which names its principal once
    /// it completes ([`crate::rpc::authentication`]).
    pub sasl: Option<Arc<SaslSession>>,
    /// On an SSL listener: who the client certificate says the client is (`User:ANONYMOUS`
    /// without one), set once the TLS handshake is done.
    pub tls_principal: Option<kcoord_acl::KafkaPrincipal>,
    /// Where requests in big frames are handled ([`crate::rpc::bulk`]); none handles them in
    /// place.
    pub bulk: Option<BulkHandle>,
    /// In gateway mode, on a broker listener: where the requests kcoord does not serve go.
    pub upstream: Option<Arc<Forwarder>>,
    /// In gateway mode, on a broker listener: the links to the other kcoord nodes, for the
    /// groups they serve ([`crate::rpc::owner_proxy`]).
    pub nodes: Option<Arc<crate::rpc::owner_proxy::NodeLinks>>,
    /// Set by a client quota's throttle: the connection reads nothing more until it ends.
    pub mute: Arc<crate::state::Mute>,
}

/// Kafka's principal for a client that did not authenticate.
static ANONYMOUS: std::sync::LazyLock<kcoord_acl::KafkaPrincipal> =
    std::sync::LazyLock::new(kcoord_acl::KafkaPrincipal::anonymous);

impl Connection {
    pub fn new(
        server: Arc<ServerState>,
        listener: Arc<ListenerInfo>,
        peer: SocketAddr,
    ) -> Connection {
        let client_host = crate::state::client_host(peer).into();
        let sasl = server
            .config
            .sasl
            .listener(&listener.name)
            .map(|l| Arc::new(SaslSession::new(l.clone())));
        let upstream = server
            .gateway
            .as_ref()
            .filter(|_| listener.kind == crate::config::ListenerKind::Broker)
            .map(|g| Arc::new(Forwarder::new(Arc::clone(g), listener.upstream_broker)));
        let nodes = upstream.as_ref().map(|u| {
            Arc::new(crate::rpc::owner_proxy::NodeLinks::new(Arc::clone(
                u.gateway(),
            )))
        });
        Connection {
            server,
            listener,
            peer,
            client_host,
            sasl,
            tls_principal: None,
            bulk: None,
            upstream,
            nodes,
            mute: Arc::default(),
        }
    }

    /// The context of a request with `header` on this connection.
    pub fn context<'a>(&'a self, header: &'a RequestHeader) -> RequestContext<'a> {
        RequestContext {
            server: &self.server,
            listener: &self.listener,
            principal: self.principal(),
            peer: self.peer,
            client_host: &self.client_host,
            header,
            mute: Some(&self.mute),
        }
    }

    /// Who is connected, as Kafka's `DefaultKafkaPrincipalBuilder` says: on a SASL listener
    /// (SASL_SSL too) the SASL name once authenticated, on an SSL listener the client
    /// certificate's, else `User:ANONYMOUS`.
    pub fn principal(&self) -> &kcoord_acl::KafkaPrincipal {
        match &self.sasl {
            Some(session) => session.principal().unwrap_or(&ANONYMOUS),
            None => self.tls_principal.as_ref().unwrap_or(&ANONYMOUS),
        }
    }
}

/// Handles one request frame (without its size prefix). The connection awaits it before
/// reading the next request, so responses leave in request order.
pub async fn dispatch(conn: &Connection, frame: Bytes) -> Reply {
    if let Some(session) = conn.sasl.as_deref() {
        if session.principal().is_none() {
            return crate::rpc::authentication::serve(conn, session, frame).await;
        }
    }
    let (api, version, mut header, body) = match parse(conn, frame) {
        Ok(parsed) => parsed,
        Err(reply) => return reply,
    };
    let passed_on_from = match &conn.nodes {
        Some(nodes) if nodes.trust(conn.principal()) => {
            crate::rpc::owner_proxy::take_marker(&mut header)
        }
        _ => None,
    };
    // A passed-on request is the client's: its host, principal and address, not the node's.
    let ctx = match &passed_on_from {
        Some(from) => RequestContext {
            client_host: &from.client_host,
            principal: &from.principal,
            peer: from.peer().unwrap_or(conn.peer),
            ..conn.context(&header)
        },
        None => conn.context(&header),
    };
    let passed_on = passed_on_from.is_some();
    if conn.upstream.is_some() {
        let broker = conn.listener.upstream_broker;
        let request = (api, version);
        if let Some(split) =
            crate::rpc::split::Split::of(&conn.server, request, &body, passed_on, broker)
        {
            let mut answers = Vec::with_capacity(split.parts().len());
            for part in split.parts() {
                let reply = route(conn, &ctx, passed_on, request, part.clone()).await;
                answers.push(answer_body(reply, api, version));
            }
            return Reply::Later(Later(split.answer(answers, header.correlation_id)));
        }
    }
    route(conn, &ctx, passed_on, (api, version), body).await
}

/// Serves a request, passes it to the kcoord node serving its groups, or forwards it upstream.
async fn route(
    conn: &Connection,
    ctx: &RequestContext<'_>,
    passed_on: bool,
    (api, version): (ApiKey, i16),
    body: Bytes,
) -> Reply {
    let header = ctx.header;
    if let (Some(nodes), false) = (&conn.nodes, passed_on) {
        let broker = conn.listener.upstream_broker;
        if let Some(node) =
            crate::rpc::owner_proxy::serving_node(&conn.server, api, version, &body, broker)
        {
            let header =
                crate::rpc::owner_proxy::passed_on(header, &conn.client_host, ctx.principal);
            let link = nodes.to(&node);
            let forwarded = link.forward(&header, (api, version), body, None).await;
            return later(forwarded);
        }
    }
    if let Some(upstream) = &conn.upstream {
        // A streams group's offsets, checked here, are kept in the cluster.
        if let Some(rewritten) =
            crate::rpc::streams_offsets::for_the_cluster(&conn.server, api, version, &body)
        {
            let forwarded = upstream.forward(header, (api, version), rewritten, None);
            return later(forwarded.await);
        }
        // Another node asking for this node's part of an answer gets just that part.
        let merged_here = passed_on
            && crate::rpc::versions::declaration(api).is_some_and(|d| d.gateway == Gateway::Merged);
        let change = match merged_here {
            true => None,
            false => forwarded(ctx, api, version, &body).await,
        };
        if let Some(change) = change {
            let forwarded = upstream.forward(header, (api, version), body, change);
            return later(forwarded.await);
        }
    }
    crate::rpc::apis::serve(ctx, api, version, body).await
}

/// The body of one part of a split request's answer (`split.rs`), once it is there.
fn answer_body(reply: Reply, api: ApiKey, version: i16) -> crate::rpc::split::PartAnswer {
    Box::pin(async move {
        let frame = match reply {
            Reply::Respond(frame) => frame,
            Reply::Later(later) => later.frame().await?,
            Reply::NoResponse | Reply::Close | Reply::Last(_) => return None,
        };
        let framed = frame.to_bytes();
        // Past the size prefix every frame starts with.
        let mut bytes = framed.slice(framed.len().min(4)..);
        kcoord_wire::messages::ResponseHeader::decode(
            &mut bytes,
            api.response_header_version(version),
        )
        .ok()?;
        Some(bytes)
    })
}

/// The reply to a request forwarded upstream or to another kcoord node.
fn later(forwarded: Forwarded) -> Reply {
    match forwarded {
        Forwarded::NoResponse => Reply::NoResponse,
        Forwarded::Failed => Reply::Close,
        Forwarded::Later(frame) => Reply::Later(Later(frame)),
    }
}

/// Whether a gateway forwards this request (its declaration says so, or for a group RPC the
/// groups it names), and if so how its answer is changed.
async fn forwarded(
    ctx: &RequestContext<'_>,
    api: ApiKey,
    version: i16,
    body: &Bytes,
) -> Option<Option<Change>> {
    let gateway = crate::rpc::versions::declaration(api)?.gateway;
    let upstream_authenticates = ctx
        .server
        .gateway
        .as_ref()?
        .settings()
        .upstream_authenticates;
    if gateway.is_local(upstream_authenticates) {
        return None;
    }
    match gateway {
        // Local, and Credentials while kcoord checks them, returned above.
        Gateway::Local | Gateway::Credentials | Gateway::Forwarded => Some(None),
        Gateway::Mirrored => Some(after_answer(ctx, crate::gateway::Gateway::changed_upstream)),
        Gateway::Refreshed => Some(after_answer(ctx, crate::gateway::Gateway::features_changed)),
        Gateway::Rewritten => Some(Some(Change::Brokers)),
        Gateway::ByGroup => {
            let local = crate::rpc::by_group::served_locally(ctx.server, api, version, body);
            (!local).then_some(None)
        }
        Gateway::Merged => Some(crate::rpc::merged::local_part(ctx, api, version, body).await),
    }
}

/// Tells the gateway, once the forwarded answer is back, that the request changed something it
/// keeps of the cluster: `then` is [`Gateway::changed_upstream`](crate::gateway::Gateway::changed_upstream)
/// (the mirror looks again) or [`Gateway::features_changed`](crate::gateway::Gateway::features_changed)
/// (the cluster is learnt again each second for a few seconds).
fn after_answer(ctx: &RequestContext<'_>, then: fn(&crate::gateway::Gateway)) -> Option<Change> {
    let gateway = std::sync::Arc::clone(ctx.server.gateway.as_ref()?);
    Some(Change::With(Box::new(move |body| {
        then(&gateway);
        Ok(body)
    })))
}

/// An API no RPC file declares: [`parse`] closes the connection before it gets here (no
/// listener serves it), so this only answers a request the declarations and the dispatch list
/// disagree on.
pub(crate) fn not_served(ctx: &RequestContext<'_>, api: ApiKey) -> Reply {
    error!(peer = %ctx.peer, api = api.name(), "no RPC file serves this API; closing connection");
    Reply::Close
}

/// A request decoded but refused by Kafka's own parse-time checks: closed, as Kafka's
/// `SocketServer` closes a connection whose request does not parse.
/// Frames the response of a handler that may find the request unparsable where Kafka's
/// parser would (an UNKNOWN code in an ACL request): the connection is closed then.
pub(crate) fn respond_checked<Resp: Encodable + ErrorCodes>(
    ctx: &RequestContext<'_>,
    api: ApiKey,
    version: i16,
    response: Result<Resp, kcoord_acl::UnknownElements>,
) -> Reply {
    match response {
        Ok(response) => respond(ctx, api, version, &response),
        Err(unparsable) => close_unparsable(ctx, api, unparsable),
    }
}

fn close_unparsable(
    ctx: &RequestContext<'_>,
    api: ApiKey,
    reason: kcoord_acl::UnknownElements,
) -> Reply {
    let peer = ctx.peer;
    log_per_peer!(warn, peer, "unparsable request", %peer, listener = %ctx.listener.name, api = api.name(), reason = %reason, "request Kafka's parser refuses; closing connection");
    Reply::Close
}

/// Like [`respond`], for a response whose record batches go out by reference.
pub(crate) fn respond_shared(
    ctx: &RequestContext<'_>,
    api: ApiKey,
    version: i16,
    response: &kcoord_wire::messages::FetchResponse,
) -> Reply {
    ctx.server.metrics.requests.response(api, version, response);
    let mut frame = SharedFrame::new();
    for part in response
        .responses
        .iter()
        .flat_map(|t| &t.partitions)
        .filter_map(|p| p.records.as_ref())
        .flat_map(|r| r.parts())
    {
        frame.share(part);
    }
    let header = ResponseHeader {
        correlation_id: ctx.header.correlation_id,
        ..Default::default()
    };
    let encoded = header
        .encode(&mut frame, api.response_header_version(version))
        .and_then(|()| response.encode(&mut frame, version))
        .map_err(|e| e.to_string())
        .and_then(|()| frame.finish().map_err(|e| e.to_string()));
    match encoded {
        Ok(out) => Reply::Respond(out),
        Err(e) => {
            error!(peer = %ctx.peer, listener = %ctx.listener.name, api = api.name(), version, error = %e, "cannot encode the response; closing connection");
            Reply::Close
        }
    }
}

/// Reads the header and checks the API and version; what is left of the frame is the body.
/// `Err` is the reply to return at once (a close, or ApiVersions' UNSUPPORTED_VERSION).
pub(crate) fn parse(
    conn: &Connection,
    mut frame: Bytes,
) -> Result<(ApiKey, i16, RequestHeader, Bytes), Reply> {
    let peer = conn.peer;
    let listener = conn.listener.name.as_str();
    // The header version depends on the API and its version, which come first in every header.
    let (Some(key), Some(version)) = (read_i16(&frame, 0), read_i16(&frame, 2)) else {
        log_per_peer!(warn, peer, "short request", %peer, listener, size = frame.len(), "request too short to hold a header; closing connection");
        return Err(Reply::Close);
    };
    let Some(api) = ApiKey::from_i16(key) else {
        log_per_peer!(warn, peer, "unknown api key", %peer, listener, api_key = key, "request for an unknown API key; closing connection");
        return Err(Reply::Close);
    };
    let mode = match conn.upstream {
        Some(_) => Mode::Gateway,
        None => Mode::Standalone,
    };
    let Some(supported) = supported_versions_in(mode, api, conn.listener.kind) else {
        log_per_peer!(warn, peer, "api not served", %peer, listener, api = api.name(), kind = %conn.listener.kind, "request for an API this listener does not serve; closing connection");
        return Err(Reply::Close);
    };
    // A too-new ApiVersions still has a well-defined header: that of the newest version.
    let valid = api.valid_versions();
    let header_version = api.request_header_version(version.clamp(valid.min, valid.max));
    let budget = kcoord_wire::budget::for_frame(frame.len());
    let header = match kcoord_wire::budget::with_limit(budget, || {
        RequestHeader::decode(&mut frame, header_version)
    }) {
        Ok(header) => header,
        Err(e) => {
            log_per_peer!(warn, peer, "malformed header", %peer, listener, api = api.name(), version, error = %e, "malformed request header; closing connection");
            return Err(Reply::Close);
        }
    };
    let client_id = Capped(header.client_id.as_deref().unwrap_or(""));
    debug!(target: REQUEST_LOG, api = api.name(), version, correlation_id = header.correlation_id, ?client_id, %peer, listener, "request");

    if version < supported.min || version > supported.max {
        if api == ApiKey::ApiVersions {
            let response = api_versions::unsupported_version_response();
            conn.server.metrics.requests.response(api, 0, &response);
            return Err(encode(peer, listener, api, &header, 0, 0, &response));
        }
        log_per_peer!(
            warn, peer, "unsupported version",
            %peer, listener, api = api.name(), version, supported = %supported, ?client_id,
            "request for an unsupported version; closing connection"
        );
        return Err(Reply::Close);
    }
    Ok((api, version, header, frame))
}

fn read_i16(frame: &[u8], at: usize) -> Option<i16> {
    let bytes = frame.get(at..at + 2)?;
    Some(i16::from_be_bytes([bytes[0], bytes[1]]))
}

/// Decodes the body; a malformed one closes the connection, as in Kafka. So does one that
/// would decode to more memory than its size allows ([`kcoord_wire::budget`]): Kafka has no
/// such bound, but it is bad input of the same kind, and closing is what Kafka does with a
/// request it cannot parse.
pub(crate) fn decode<Req: Decodable>(
    ctx: &RequestContext<'_>,
    api: ApiKey,
    version: i16,
    mut body: Bytes,
) -> Result<Req, Reply> {
    let budget = kcoord_wire::budget::for_frame(body.len());
    kcoord_wire::budget::with_limit(budget, || Req::decode(&mut body, version)).map_err(|e| {
        log_per_peer!(
            warn, ctx.peer, "malformed body",
            peer = %ctx.peer, listener = %ctx.listener.name, api = api.name(), version,
            correlation_id = ctx.header.correlation_id, error = %e,
            "malformed request body; closing connection"
        );
        Reply::Close
    })
}

/// Frames `response` and counts its error codes (`kcoord_request_errors_total`).
pub(crate) fn respond<Resp: Encodable + ErrorCodes>(
    ctx: &RequestContext<'_>,
    api: ApiKey,
    version: i16,
    response: &Resp,
) -> Reply {
    ctx.server.metrics.requests.response(api, version, response);
    encode(
        ctx.peer,
        &ctx.listener.name,
        api,
        ctx.header,
        version,
        api.response_header_version(version),
        response,
    )
}

/// Frames `response` behind its response header.
fn encode<Resp: Encodable>(
    peer: SocketAddr,
    listener: &str,
    api: ApiKey,
    header: &RequestHeader,
    version: i16,
    header_version: i16,
    response: &Resp,
) -> Reply {
    let response_header = ResponseHeader {
        correlation_id: header.correlation_id,
        ..Default::default()
    };
    let mut out = BytesMut::with_capacity(256);
    let written = write_frame(&mut out, |buf| {
        response_header.encode(buf, header_version)?;
        response.encode(buf, version)
    });
    match written {
        Ok(()) => Reply::Respond(OutFrame::One(out.freeze())),
        Err(e) => {
            // A handler built a response its version cannot carry: a bug, not bad input.
            error!(%peer, listener, api = api.name(), version, error = %e, "cannot encode the response; closing connection");
            Reply::Close
        }
    }
}

#[cfg(test)]
mod tests;
