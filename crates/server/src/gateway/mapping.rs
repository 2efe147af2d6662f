//! The upstream cluster's brokers as clients see them through the gateway: broker `b` at
//! a kcoord node's host on its `gateway.broker.port.start + b` ("port per broker", as
//! Kroxylicious maps a virtual cluster). Ids stay the upstream's, so partition leaders,
//! replicas and the controller id in forwarded answers need no change; only hosts and ports do.
//!
//! Every node serves a port for every upstream broker. With several kcoord nodes the answers
//! spread the brokers over them ([`Placement`]), the way Kafka's own brokers are several
//! addresses: a client whose node dies still knows a live one, asks it for metadata and goes
//! on, instead of waiting for Kafka's clients to bootstrap again (which they do only when
//! every known broker is down at once, or after `metadata.recovery.rebootstrap.trigger.ms`,
//! five minutes by default).
//!
//! Produce (v10+), Fetch (v16+), ShareFetch and ShareAcknowledge answers name brokers too: a
//! partition whose leader moved comes back with the new leader's endpoint (KIP-951), which a
//! client connects to at once. Those answers are decoded (their record sets as slices of the
//! answer, not copied) and re-encoded only when they carry endpoints, which they do only while
//! leaders move; every other one goes back as the cluster's bytes.

use bytes::{Bytes, BytesMut};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::{
    DescribeClusterResponse, FetchResponse, FindCoordinatorResponse, MetadataResponse,
    ProduceResponse, ShareAcknowledgeResponse, ShareFetchResponse,
};
use kcoord_wire::{Decodable, Encodable};

/// Where kcoord serves each upstream broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    /// The host of kcoord's broker listener, as it advertises it.
    pub host: String,
    pub port_start: u16,
}

/// A broker whose id has no port below 65536 at the configured start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "upstream broker id {id} does not fit: gateway.broker.port.start={port_start} plus the id \
     is past port 65535 (lower gateway.broker.port.start to at most {highest_start})"
)]
pub struct IdDoesNotFit {
    pub id: i32,
    pub port_start: u16,
    /// The largest start that would still fit this id (0 when none would).
    pub highest_start: i64,
}

impl Endpoints {
    /// The port upstream broker `id` is served on.
    pub fn port(&self, id: i32) -> Result<u16, IdDoesNotFit> {
        let port = i64::from(self.port_start) + i64::from(id);
        u16::try_from(port)
            .ok()
            .filter(|_| id >= 0)
            .ok_or(IdDoesNotFit {
                id,
                port_start: self.port_start,
                highest_start: (i64::from(u16::MAX) - i64::from(id)).max(0),
            })
    }

    /// Every id of `ids` fits, or the first that does not.
    pub fn check(&self, ids: impl IntoIterator<Item = i32>) -> Result<(), IdDoesNotFit> {
        ids.into_iter().try_for_each(|id| self.port(id).map(drop))
    }

    /// `(host, port)` for a broker id as the protocol carries it; none for an id without a
    /// port (a negative "no node" id included).
    fn endpoint(&self, id: i32) -> Option<(String, i32)> {
        self.port(id)
            .ok()
            .map(|p| (self.host.clone(), i32::from(p)))
    }
}

/// Which node's endpoints each upstream broker is shown at: broker `b` at node
/// `b mod n` of the `n` nodes in member-id order (every node of the group has the same list, so
/// every node answers alike), or at this node's own when that node has no port for `b`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    own: Endpoints,
    spread: Vec<Endpoints>,
}

impl Placement {
    /// One node: every broker at its own endpoints.
    pub fn alone(own: Endpoints) -> Placement {
        Placement {
            own,
            spread: Vec::new(),
        }
    }

    /// Brokers spread over `nodes` (this node among them), in the order given.
    pub fn spread(own: Endpoints, nodes: Vec<Endpoints>) -> Placement {
        Placement { own, spread: nodes }
    }

    /// `(host, port)` of broker `id`; none when no port fits it.
    fn endpoint(&self, id: i32) -> Option<(String, i32)> {
        let n = i32::try_from(self.spread.len()).unwrap_or(i32::MAX);
        let chosen = usize::try_from(id.checked_rem_euclid(n).unwrap_or(0))
            .ok()
            .and_then(|i| self.spread.get(i));
        chosen
            .and_then(|e| e.endpoint(id))
            .or_else(|| self.own.endpoint(id))
    }
}

/// Why a forwarded answer could not be rewritten.
#[derive(Debug, thiserror::Error)]
pub enum RewriteError {
    #[error("the upstream's {api} v{version} response does not decode: {reason}")]
    Decode {
        api: &'static str,
        version: i16,
        reason: String,
    },
    #[error("the rewritten {api} v{version} response does not encode: {reason}")]
    Encode {
        api: &'static str,
        version: i16,
        reason: String,
    },
    #[error("{0} has no rewrite")]
    NotRewritten(&'static str),
}

/// The upstream's response body for `api` with its brokers at kcoord's endpoints. A broker
/// whose id has no port is left out (it cannot be reached through kcoord); that is logged
/// where the brokers are learnt. `seen` is told every broker id placed.
pub fn rewrite(
    api: ApiKey,
    version: i16,
    body: Bytes,
    endpoints: &Placement,
    seen: &mut dyn FnMut(i32),
) -> Result<Bytes, RewriteError> {
    let mut place = |id: i32, host: &mut String, port: &mut i32| {
        seen(id);
        place(endpoints, id, host, port)
    };
    match api {
        ApiKey::Metadata => recode(api, version, body, |r: &mut MetadataResponse| {
            r.brokers
                .retain_mut(|b| place(b.node_id, &mut b.host, &mut b.port));
        }),
        ApiKey::DescribeCluster => recode(api, version, body, |r: &mut DescribeClusterResponse| {
            r.brokers
                .retain_mut(|b| place(b.broker_id, &mut b.host, &mut b.port));
        }),
        ApiKey::FindCoordinator => {
            recode(api, version, body, |r: &mut FindCoordinatorResponse| {
                // One key before v4, a list of them from v4 on.
                if version < 4 && r.node_id >= 0 {
                    place(r.node_id, &mut r.host, &mut r.port);
                }
                for c in &mut r.coordinators {
                    if c.node_id >= 0 {
                        place(c.node_id, &mut c.host, &mut c.port);
                    }
                }
            })
        }
        // Before these versions the answers name no brokers.
        ApiKey::Produce if version < 10 => Ok(body),
        ApiKey::Fetch if version < 16 => Ok(body),
        ApiKey::Produce => moved_leaders!(ProduceResponse, api, version, body, place),
        ApiKey::Fetch => moved_leaders!(FetchResponse, api, version, body, place),
        ApiKey::ShareFetch => moved_leaders!(ShareFetchResponse, api, version, body, place),
        ApiKey::ShareAcknowledge => {
            moved_leaders!(ShareAcknowledgeResponse, api, version, body, place)
        }
        other => Err(RewriteError::NotRewritten(other.name())),
    }
}

/// [`recode_when`] for an answer whose `node_endpoints` name the leaders that moved: each at its
/// endpoint here, the answer's own bytes when it names none.
macro_rules! moved_leaders {
    ($response:ty, $api:expr, $version:expr, $body:expr, $place:expr) => {
        recode_when(
            $api,
            $version,
            $body,
            |r: &$response| !r.node_endpoints.is_empty(),
            |r| {
                r.node_endpoints
                    .retain_mut(|e| $place(e.node_id, &mut e.host, &mut e.port));
            },
        )
    };
}
use moved_leaders;

/// Puts broker `id` at its endpoint; false when it has none.
fn place(endpoints: &Placement, id: i32, host: &mut String, port: &mut i32) -> bool {
    match endpoints.endpoint(id) {
        Some((h, p)) => {
            *host = h;
            *port = p;
            true
        }
        None => false,
    }
}

fn recode<M: Decodable + Encodable>(
    api: ApiKey,
    version: i16,
    body: Bytes,
    change: impl FnOnce(&mut M),
) -> Result<Bytes, RewriteError> {
    recode_when(api, version, body, |_| true, change)
}

/// [`recode`] when the decoded answer `needs` it; else the answer's own bytes.
fn recode_when<M: Decodable + Encodable>(
    api: ApiKey,
    version: i16,
    body: Bytes,
    needs: impl FnOnce(&M) -> bool,
    change: impl FnOnce(&mut M),
) -> Result<Bytes, RewriteError> {
    let mut message = M::decode(&mut body.clone(), version).map_err(|e| RewriteError::Decode {
        api: api.name(),
        version,
        reason: e.to_string(),
    })?;
    if !needs(&message) {
        return Ok(body);
    }
    change(&mut message);
    let mut out = BytesMut::with_capacity(body.len() + 64);
    message
        .encode(&mut out, version)
        .map_err(|e| RewriteError::Encode {
            api: api.name(),
            version,
            reason: e.to_string(),
        })?;
    Ok(out.freeze())
}

#[cfg(test)]
mod tests;
