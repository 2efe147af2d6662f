//! The brokers of the cluster as DescribeCluster reports them, fenced ones included on request
//! (v2's IncludeFencedBrokers).

use kcoord_wire::messages::DescribeClusterRequest;
use kcoord_wire::Request;

use crate::client::Client;
use crate::error::ClientError;

/// DescribeCluster's first version with IncludeFencedBrokers.
const INCLUDE_FENCED_VERSION: i16 = 2;

/// One broker of [`ClusterDescription::brokers`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerDescription {
    pub id: i32,
    pub host: String,
    pub port: i32,
    pub rack: Option<String>,
    /// Always false when the server answered below v2.
    pub fenced: bool,
}

/// What DescribeCluster says about the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterDescription {
    pub cluster_id: String,
    /// The active controller (for kcoord: the kcoord node itself).
    pub controller_id: i32,
    /// By id.
    pub brokers: Vec<BrokerDescription>,
}

impl Client {
    /// The brokers of the cluster at the bootstrap listener, the fenced ones too when
    /// `include_fenced` and the server speaks DescribeCluster v2.
    pub async fn describe_brokers(
        &self,
        include_fenced: bool,
    ) -> Result<ClusterDescription, ClientError> {
        let conn = self.bootstrap_connection().await?;
        let version = conn.negotiated_version::<DescribeClusterRequest>().await?;
        let request = DescribeClusterRequest {
            include_fenced_brokers: include_fenced && version >= INCLUDE_FENCED_VERSION,
            ..Default::default()
        };
        let response = conn.send(request, version).await?;
        ClientError::check(
            DescribeClusterRequest::KEY,
            response.error_code,
            response.error_message.as_deref(),
        )?;
        let mut brokers: Vec<BrokerDescription> = response
            .brokers
            .into_iter()
            .map(|b| BrokerDescription {
                id: b.broker_id,
                host: b.host,
                port: b.port,
                rack: b.rack,
                fenced: b.is_fenced,
            })
            .collect();
        brokers.sort_by_key(|b| b.id);
        Ok(ClusterDescription {
            cluster_id: response.cluster_id,
            controller_id: response.controller_id,
            brokers,
        })
    }
}
