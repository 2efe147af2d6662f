//! What kcoord knows of the upstream cluster: its id, its brokers and the API versions it
//! serves, learnt with ApiVersions and Metadata from any broker that answers.

use std::collections::BTreeMap;

use kcoord_client::{ClientConfig, ClientError, Connection};
use kcoord_wire::messages::api_versions_response::{FinalizedFeatureKey, SupportedFeatureKey};
use kcoord_wire::messages::MetadataRequest;
use kcoord_wire::VersionRange;
use tracing::debug;

/// The upstream cluster as last learnt.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpstreamView {
    pub cluster_id: Option<String>,
    /// `host:port` of each broker, by id.
    pub brokers: BTreeMap<i32, String>,
    /// Brokers an earlier answer listed and the last one did not, at their last address: a
    /// broker port keeps forwarding there, so a broker that is only restarting is reached again
    /// as soon as it is back, before the next refresh lists it.
    pub departed: BTreeMap<i32, String>,
    /// The versions the upstream serves, by API key.
    pub versions: BTreeMap<i16, VersionRange>,
    /// The upstream's features as its ApiVersions lists them: clients decide with these how to
    /// talk to the cluster (e.g. `transaction.version`).
    pub supported_features: Vec<SupportedFeatureKey>,
    pub finalized_features: Vec<FinalizedFeatureKey>,
    pub finalized_features_epoch: i64,
}

/// No upstream broker answered.
#[derive(Debug, thiserror::Error)]
#[error("no upstream broker answered (tried {tried}): {last}")]
pub struct Unreachable {
    pub tried: String,
    #[source]
    pub last: ClientError,
}

/// Asks the first of `addresses` that answers for the cluster's brokers and versions.
pub async fn discover(
    addresses: &[String],
    client: &ClientConfig,
) -> Result<UpstreamView, Unreachable> {
    let mut last = None;
    for address in addresses {
        match ask(address, client).await {
            Ok(view) => return Ok(view),
            Err(e) => {
                debug!(upstream = %address, error = %e, "upstream broker did not answer");
                last = Some(e);
            }
        }
    }
    Err(Unreachable {
        tried: addresses.join(","),
        last: last.unwrap_or_else(|| ClientError::InvalidArgument("no address".to_owned())),
    })
}

async fn ask(address: &str, client: &ClientConfig) -> Result<UpstreamView, ClientError> {
    let conn = Connection::connect(address, client.clone()).await?;
    let versions = conn.negotiate().await?;
    // No topics: only the brokers and the cluster id are wanted.
    let metadata = conn
        .send_negotiated(MetadataRequest {
            topics: Some(Vec::new()),
            ..Default::default()
        })
        .await?;
    Ok(UpstreamView {
        cluster_id: metadata.cluster_id,
        brokers: metadata
            .brokers
            .into_iter()
            .map(|b| (b.node_id, join_host_port(&b.host, b.port)))
            .collect(),
        departed: BTreeMap::new(),
        versions: versions.ranges().collect(),
        supported_features: versions.response().supported_features.clone(),
        finalized_features: versions.response().finalized_features.clone(),
        finalized_features_epoch: versions.response().finalized_features_epoch,
    })
}

impl UpstreamView {
    /// This view, learnt again as `newer`: the brokers `newer` lacks are remembered as
    /// departed (until a later view lists them again).
    pub fn followed_by(&self, mut newer: UpstreamView) -> UpstreamView {
        let earlier = self.departed.iter().chain(&self.brokers);
        for (id, address) in earlier {
            if !newer.brokers.contains_key(id) {
                newer.departed.insert(*id, address.clone());
            }
        }
        newer
    }
}

/// `host:port`, an IPv6 host in brackets.
pub fn join_host_port(host: &str, port: i32) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Where a forwarded connection goes: broker `id`'s address (its last one, if it has departed),
/// or for the bootstrap port (no id) a broker picked by `spread` among those listed, so
/// bootstrap connections share the load.
pub fn address_for(view: &UpstreamView, target: Option<i32>, spread: usize) -> Option<&str> {
    match target {
        Some(id) => view
            .brokers
            .get(&id)
            .or_else(|| view.departed.get(&id))
            .map(String::as_str),
        None if view.brokers.is_empty() => None,
        None => view
            .brokers
            .values()
            .nth(spread % view.brokers.len())
            .map(String::as_str),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view() -> UpstreamView {
        UpstreamView {
            brokers: [(0, "a:1".to_owned()), (3, "b:2".to_owned())].into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_departed_brokers_port_goes_to_its_last_address_until_it_is_back() {
        let restarting = UpstreamView {
            brokers: [(0, "a:1".to_owned())].into(),
            ..Default::default()
        };
        let v = view().followed_by(restarting);
        assert_eq!(v.departed, [(3, "b:2".to_owned())].into());
        assert_eq!(address_for(&v, Some(3), 0), Some("b:2"));
        // The bootstrap port spreads over the brokers listed only.
        assert_eq!(address_for(&v, None, 1), Some("a:1"));
        // Still away at the next refresh: still remembered; back at a new address: listed.
        let v = v.followed_by(UpstreamView {
            brokers: [(0, "a:1".to_owned())].into(),
            ..Default::default()
        });
        assert_eq!(address_for(&v, Some(3), 0), Some("b:2"));
        let v = v.followed_by(UpstreamView {
            brokers: [(0, "a:1".to_owned()), (3, "c:9".to_owned())].into(),
            ..Default::default()
        });
        assert!(v.departed.is_empty());
        assert_eq!(address_for(&v, Some(3), 0), Some("c:9"));
    }

    #[test]
    fn a_broker_port_goes_to_its_broker_and_the_bootstrap_port_to_any() {
        let v = view();
        assert_eq!(address_for(&v, Some(3), 0), Some("b:2"));
        assert_eq!(address_for(&v, Some(1), 0), None);
        assert_eq!(address_for(&v, None, 0), Some("a:1"));
        assert_eq!(address_for(&v, None, 1), Some("b:2"));
        assert_eq!(address_for(&v, None, 2), Some("a:1"));
        assert_eq!(address_for(&UpstreamView::default(), None, 0), None);
    }

    #[test]
    fn ipv6_hosts_are_bracketed() {
        assert_eq!(join_host_port("::1", 9092), "[::1]:9092");
        assert_eq!(join_host_port("k", 9092), "k:9092");
    }
}
