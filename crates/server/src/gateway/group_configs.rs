//! The cluster's group configs, for the streams groups a gateway coordinates. Through a
//! gateway, `kafka-configs --alter --entity-type groups` is forwarded: the cluster keeps group
//! configs, as it keeps them for its own groups, and every kcoord node reads them back from
//! there (a node keeps nothing of its own). The groups with configs are listed with
//! ListConfigResources (v1, Kafka 4.1 and later: a cluster without it keeps no streams group
//! configs), and their overrides (source GROUP_CONFIG) read with one DescribeConfigs.

use std::collections::BTreeMap;

use kcoord_client::{ClientError, Connection};
use kcoord_coordinator::group_config_rules::GROUP_CONFIG;
use kcoord_metadata::{GroupConfigsImage, GROUP_RESOURCE as GROUP};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::describe_configs_request::DescribeConfigsResource;
use kcoord_wire::messages::{DescribeConfigsRequest, ListConfigResourcesRequest};
use kcoord_wire::{ErrorCode, Request};

use super::upstream::UpstreamView;

/// Whether the cluster can list the groups that have configs (ListConfigResources v1).
pub fn listable(view: &UpstreamView) -> bool {
    view.versions
        .get(&ApiKey::ListConfigResources.key())
        .is_some_and(|range| range.max >= 1)
}

/// The group configs the cluster keeps, asked on `conn`.
pub async fn fetch(conn: &Connection) -> Result<GroupConfigsImage, ClientError> {
    let listed = conn
        .send_negotiated(ListConfigResourcesRequest {
            resource_types: vec![GROUP],
            ..Default::default()
        })
        .await?;
    if listed.error_code != ErrorCode::NONE.code() {
        return Err(ClientError::Kafka {
            api: ListConfigResourcesRequest::KEY,
            code: listed.error_code,
            message: None,
        });
    }
    let resources: Vec<DescribeConfigsResource> = listed
        .config_resources
        .into_iter()
        .filter(|r| r.resource_type == GROUP)
        .map(|r| DescribeConfigsResource {
            resource_type: GROUP,
            resource_name: r.resource_name,
            configuration_keys: None,
            ..Default::default()
        })
        .collect();
    if resources.is_empty() {
        return Ok(GroupConfigsImage::default());
    }
    let described = conn
        .send_negotiated(DescribeConfigsRequest {
            resources,
            ..Default::default()
        })
        .await?;
    let mut groups: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for result in described.results {
        // A group the principal may not describe, or gone since the listing, has none.
        if result.error_code != ErrorCode::NONE.code() {
            continue;
        }
        let overrides = result
            .configs
            .into_iter()
            .filter(|c| c.config_source == GROUP_CONFIG)
            .filter_map(|c| Some((c.name, c.value?)));
        groups
            .entry(result.resource_name)
            .or_default()
            .extend(overrides);
    }
    Ok(GroupConfigsImage::from(groups))
}
