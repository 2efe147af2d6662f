//! The controller's view of the cluster as request handlers see it: the broker registrations
//! and the finalized features, published by the controller task after every change as one
//! immutable [`ClusterImage`] (next to the [`crate::runtime::catalog::TopicCatalog`]), read without a
//! lock held across a request.
//!
//! How this node relates to the registered brokers: kcoord is the controller and the only
//! node that leads partitions and coordinates groups, so it is always listed, under its
//! `node.id`, at the address of the listener the request came in on. Registered brokers are
//! listed next to it, each at its endpoint whose listener name is the request's listener name
//! (a broker without such an endpoint is left out, as Kafka's metadata cache does). A
//! registration that uses this node's own id is shadowed by this node in those lists.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use kcoord_metadata::{BrokerRegistration, BrokersImage, MetadataVersion};

use std::net::SocketAddr;

use crate::config::{ListenerKind, SecurityProtocol};

/// Brokers and features as of one controller change.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterImage {
    pub brokers: BrokersImage,
    pub metadata_version: MetadataVersion,
    /// Every finalized feature, `metadata.version` included, by name.
    pub finalized_features: BTreeMap<String, i16>,
    /// ApiVersions' FinalizedFeaturesEpoch: the log offset of the last FeatureLevelRecord.
    pub finalized_features_epoch: i64,
    /// Per-group config overrides (DescribeConfigs GROUP).
    pub group_configs: kcoord_metadata::GroupConfigsImage,
    /// Dynamic broker configs: the cluster-wide defaults and each broker's (DescribeConfigs
    /// BROKER, and the defaults of topic configs).
    pub broker_configs: kcoord_metadata::BrokerConfigsImage,
    /// ACLs and SCRAM credentials (DescribeUserScramCredentials, SASL/SCRAM); shared between
    /// images until they change.
    pub security: Arc<kcoord_metadata::SecurityImage>,
    /// Client quotas (DescribeClientQuotas, and what the quotas enforce).
    pub client_quotas: kcoord_metadata::ClientQuotasImage,
}

impl ClusterImage {
    pub fn from_controller(controller: &kcoord_controller::Controller) -> ClusterImage {
        let security = Arc::new(controller.state().security.clone());
        ClusterImage::from_controller_with(controller, security)
    }

    /// [`ClusterImage::from_controller`] with a security image known to be the controller's.
    pub fn from_controller_with(
        controller: &kcoord_controller::Controller,
        security: Arc<kcoord_metadata::SecurityImage>,
    ) -> ClusterImage {
        ClusterImage {
            brokers: controller.brokers().clone(),
            metadata_version: controller.metadata_version(),
            finalized_features: controller.finalized_features(),
            finalized_features_epoch: controller.finalized_features_epoch(),
            group_configs: controller.state().group_configs.clone(),
            broker_configs: controller.state().broker_configs.clone(),
            security,
            client_quotas: controller.state().client_quotas.clone(),
        }
    }

    /// The dynamic broker configs in effect on node `node_id`, by broker key: the cluster-wide
    /// defaults overridden by the node's own (Kafka's precedence).
    pub fn dynamic_broker_configs(&self, node_id: i32) -> BTreeMap<String, String> {
        let mut configs = self
            .broker_configs
            .cluster_defaults()
            .cloned()
            .unwrap_or_default();
        if let Some(own) = self.broker_configs.get(&node_id.to_string()) {
            configs.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        configs
    }

    /// The registered brokers to list next to this node for a request on `listener`: unfenced
    /// ones (and fenced ones too when `include_fenced`), by id, each with its endpoint on that
    /// listener name.
    pub fn listed_brokers<'a>(
        &'a self,
        this_node_id: i32,
        listener: &'a ListenerInfo,
        include_fenced: bool,
    ) -> impl Iterator<Item = ListedBroker<'a>> + 'a {
        self.brokers
            .iter()
            .filter(move |b| b.id != this_node_id && (include_fenced || !b.fenced))
            .filter_map(move |b| {
                let endpoint = b.listener(&listener.name).or_else(|| {
                    b.listeners
                        .iter()
                        .find(|l| l.name.eq_ignore_ascii_case(&listener.name))
                })?;
                Some(ListedBroker {
                    node: Node {
                        id: b.id,
                        host: endpoint.host.clone(),
                        port: i32::from(endpoint.port),
                    },
                    registration: b,
                })
            })
    }
}

/// A registered broker as a node of the cluster.
#[derive(Debug, Clone)]
pub struct ListedBroker<'a> {
    pub node: Node,
    pub registration: &'a BrokerRegistration,
}

impl ClusterImage {
    /// This node (as `this` at `listener`) and the registered brokers listed with it, by id.
    pub fn broker_nodes(
        &self,
        this: Node,
        listener: &ListenerInfo,
        include_fenced: bool,
    ) -> Vec<BrokerNode> {
        let this_id = this.id;
        let mut nodes = vec![BrokerNode {
            node: this,
            rack: None,
            fenced: false,
        }];
        nodes.extend(
            self.listed_brokers(this_id, listener, include_fenced)
                .map(|b| BrokerNode {
                    node: b.node,
                    rack: b.registration.rack.clone(),
                    fenced: b.registration.fenced,
                }),
        );
        nodes.sort_by_key(|n| n.node.id);
        nodes
    }
}

/// A broker as Metadata and DescribeCluster list it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerNode {
    pub node: Node,
    pub rack: Option<String>,
    pub fenced: bool,
}

/// A bound listener with the address it advertises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerInfo {
    pub name: String,
    pub kind: ListenerKind,
    pub security_protocol: SecurityProtocol,
    /// The address actually bound (port 0 in the config resolved by the OS).
    pub local_addr: SocketAddr,
    pub advertised_host: String,
    pub advertised_port: u16,
    /// In gateway mode, the upstream broker a connection on this port goes to; `None` on the
    /// bootstrap listener (any broker) and in standalone mode.
    pub upstream_broker: Option<i32>,
}

/// A node endpoint as the protocol carries it. Kafka's `Node.noNode()` is id -1, host "",
/// port -1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub id: i32,
    pub host: String,
    pub port: i32,
}

impl Node {
    pub fn none() -> Node {
        Node {
            id: -1,
            host: String::new(),
            port: -1,
        }
    }
}

/// Holds the current [`ClusterImage`]. The lock is held only to clone or swap the `Arc`.
#[derive(Debug)]
pub struct ClusterCatalog {
    current: RwLock<Arc<ClusterImage>>,
}

impl ClusterCatalog {
    pub fn new(image: ClusterImage) -> Self {
        ClusterCatalog {
            current: RwLock::new(Arc::new(image)),
        }
    }

    /// The image to answer one request from; later publications do not change it.
    pub fn snapshot(&self) -> Arc<ClusterImage> {
        // A poisoned lock still holds a whole image: the writer only swaps an Arc.
        Arc::clone(&self.current.read().unwrap_or_else(|e| e.into_inner()))
    }

    pub fn publish(&self, image: Arc<ClusterImage>) {
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = image;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ListenerKind, SecurityProtocol};
    use kcoord_controller::{Controller, ControllerConfig};
    use kcoord_wire::messages::broker_registration_request::{Feature, Listener};
    use kcoord_wire::messages::BrokerRegistrationRequest;
    use std::net::SocketAddr;

    const CLUSTER: &str = "a2Nvb3JkLWRldi1jbHVzdA";

    fn register(controller: &mut Controller, id: i32, listeners: &[(&str, u16)]) -> i64 {
        let request = BrokerRegistrationRequest {
            broker_id: id,
            cluster_id: CLUSTER.into(),
            incarnation_id: uuid::Uuid::from_u128(id as u128 + 1),
            listeners: listeners
                .iter()
                .map(|(name, port)| Listener {
                    name: (*name).into(),
                    host: format!("b{id}.example"),
                    port: *port,
                    ..Default::default()
                })
                .collect(),
            features: vec![Feature {
                name: "metadata.version".into(),
                min_supported_version: 7,
                max_supported_version: 34,
                ..Default::default()
            }],
            log_dirs: vec![uuid::Uuid::from_u128(((id as u128) << 64) | 1000)],
            ..Default::default()
        };
        let outcome = controller
            .register_broker(&request, 6, 0)
            .unwrap_or_else(|e| panic!("{e}"));
        controller.apply(outcome).unwrap().epoch
    }

    fn listener(name: &str) -> ListenerInfo {
        ListenerInfo {
            name: name.into(),
            kind: ListenerKind::Broker,
            security_protocol: SecurityProtocol::Plaintext,
            local_addr: SocketAddr::from(([127, 0, 0, 1], 9092)),
            advertised_host: "localhost".into(),
            advertised_port: 9092,
            upstream_broker: None,
        }
    }

    #[test]
    fn listed_brokers_match_the_listener_skip_fenced_and_this_node() {
        let mut controller = Controller::new(ControllerConfig::new(CLUSTER)).unwrap();
        let e2 = register(
            &mut controller,
            2,
            &[("PLAINTEXT", 19092), ("INTERNAL", 19093)],
        );
        register(&mut controller, 3, &[("INTERNAL", 29093)]);
        let e4 = register(&mut controller, 4, &[("plaintext", 39092)]);
        register(&mut controller, 1, &[("PLAINTEXT", 49092)]);
        register(&mut controller, 5, &[("PLAINTEXT", 59092)]);
        for (id, epoch) in [(2, e2), (4, e4)] {
            let heartbeat = kcoord_wire::messages::BrokerHeartbeatRequest {
                broker_id: id,
                broker_epoch: epoch,
                current_metadata_offset: epoch,
                ..Default::default()
            };
            let outcome = controller.broker_heartbeat(&heartbeat, 0).unwrap();
            assert!(!controller.apply(outcome).unwrap().is_fenced);
        }
        let image = ClusterImage::from_controller(&controller);
        let plaintext = listener("PLAINTEXT");
        let listed: Vec<(i32, String, i32)> = image
            .listed_brokers(1, &plaintext, false)
            .map(|b| (b.node.id, b.node.host, b.node.port))
            .collect();
        assert_eq!(
            listed,
            vec![
                (2, "b2.example".to_string(), 19092),
                (4, "b4.example".to_string(), 39092)
            ]
        );
        let with_fenced: Vec<i32> = image
            .listed_brokers(1, &plaintext, true)
            .map(|b| b.node.id)
            .collect();
        assert_eq!(
            with_fenced,
            vec![2, 4, 5],
            "3 has no PLAINTEXT endpoint, 1 is this node"
        );
        let internal: Vec<i32> = image
            .listed_brokers(1, &listener("INTERNAL"), true)
            .map(|b| b.node.id)
            .collect();
        assert_eq!(internal, vec![2, 3]);
        assert_eq!(image.finalized_features.get("metadata.version"), Some(&34));
        assert_eq!(image.finalized_features_epoch, 0);
    }
}
