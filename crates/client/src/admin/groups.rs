//! ListGroups and DeleteGroups.

use std::collections::BTreeMap;

use kcoord_wire::messages::{DeleteGroupsRequest, ListGroupsRequest};
use kcoord_wire::Request;
use tracing::debug;

use crate::admin::{kafka_result, GroupResult};
use crate::client::Client;
use crate::connection::Connection;
use crate::error::ClientError;

/// ListGroups' first version with StatesFilter and GroupState.
const LIST_GROUPS_STATES: i16 = 4;
/// ListGroups' first version with TypesFilter and GroupType.
const LIST_GROUPS_TYPES: i16 = 5;

/// One group as ListGroups reports it (Kafka's `GroupListing`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupListing {
    pub group_id: String,
    /// `streams` for a streams group, `consumer` for consumer groups, ...
    pub protocol_type: String,
    /// E.g. `Stable`; `None` below ListGroups v4.
    pub group_state: Option<String>,
    /// `classic`, `consumer`, `share` or `streams`; `None` below ListGroups v5.
    pub group_type: Option<String>,
}

impl Client {
    /// Every group of the cluster, asked of each broker Metadata lists (as Kafka's Admin does;
    /// the bootstrap server when it lists none), sorted by group id.
    ///
    /// Filters are case-insensitive and sent when the negotiated version has them. Below v5 the
    /// type filter is applied here to the protocol type, which names the type exactly for
    /// `streams` and `share` groups. `classic` then matches every other protocol type
    /// (`consumer` included: servers without v5 predate KIP-848 consumer groups) and
    /// `consumer` matches protocol type `consumer`. Below v4 groups carry no state, so a state
    /// filter is an [`ClientError::Unsupported`] error.
    pub async fn list_groups(
        &self,
        types_filter: &[&str],
        states_filter: &[&str],
    ) -> Result<Vec<GroupListing>, ClientError> {
        let mut listings = BTreeMap::new();
        for conn in self.brokers().await? {
            for listing in list_groups_on(&conn, types_filter, states_filter).await? {
                listings.entry(listing.group_id.clone()).or_insert(listing);
            }
        }
        Ok(listings.into_values().collect())
    }

    /// Deletes groups at their coordinators. One result per group, in request order; a failed
    /// deletion is a [`ClientError::Kafka`] whose `error_name()` is Kafka's (e.g.
    /// `NON_EMPTY_GROUP`, `GROUP_ID_NOT_FOUND`), with the broker's message from v3.
    pub async fn delete_groups(&self, group_ids: &[&str]) -> Vec<GroupResult<()>> {
        self.per_coordinator(group_ids, |_, conn, groups| async move {
            let version = conn.negotiated_version::<DeleteGroupsRequest>().await?;
            let request = DeleteGroupsRequest {
                groups_names: groups,
                ..Default::default()
            };
            let response = conn.send(request, version).await?;
            Ok(response
                .results
                .into_iter()
                .map(|r| {
                    (
                        r.group_id,
                        kafka_result(DeleteGroupsRequest::KEY, r.error_code, r.error_message),
                    )
                })
                .collect())
        })
        .await
    }

    /// Connections to every broker Metadata lists, or to the bootstrap server alone.
    pub(crate) async fn brokers(&self) -> Result<Vec<Connection>, ClientError> {
        let metadata = self.metadata(Some(Vec::new())).await?;
        if metadata.brokers.is_empty() {
            return Ok(vec![self.bootstrap_connection().await?]);
        }
        let mut connections = Vec::with_capacity(metadata.brokers.len());
        for broker in &metadata.brokers {
            connections.push(self.connection_to(&broker.host, broker.port).await?);
        }
        Ok(connections)
    }
}

async fn list_groups_on(
    conn: &Connection,
    types_filter: &[&str],
    states_filter: &[&str],
) -> Result<Vec<GroupListing>, ClientError> {
    let version = conn.negotiated_version::<ListGroupsRequest>().await?;
    if !states_filter.is_empty() && version < LIST_GROUPS_STATES {
        return Err(ClientError::Unsupported {
            api: ListGroupsRequest::KEY,
            reason: format!("the server speaks ListGroups v{version}, which reports no group states; filtering by state needs v{LIST_GROUPS_STATES}+"),
        });
    }
    let owned = |filter: &[&str]| filter.iter().map(|s| s.to_string()).collect();
    let request = ListGroupsRequest {
        states_filter: if version >= LIST_GROUPS_STATES {
            owned(states_filter)
        } else {
            Vec::new()
        },
        types_filter: if version >= LIST_GROUPS_TYPES {
            owned(types_filter)
        } else {
            Vec::new()
        },
        ..Default::default()
    };
    let response = conn.send(request, version).await?;
    ClientError::check(ListGroupsRequest::KEY, response.error_code, None)?;
    let listings: Vec<GroupListing> = response
        .groups
        .into_iter()
        .map(|g| GroupListing {
            group_id: g.group_id,
            protocol_type: g.protocol_type,
            group_state: (version >= LIST_GROUPS_STATES).then_some(g.group_state),
            group_type: (version >= LIST_GROUPS_TYPES).then_some(g.group_type),
        })
        .filter(|g| {
            version >= LIST_GROUPS_TYPES
                || types_filter.is_empty()
                || types_filter
                    .iter()
                    .any(|t| type_matches_protocol(t, &g.protocol_type))
        })
        .collect();
    debug!(
        addr = conn.addr(),
        version,
        groups = listings.len(),
        "listed groups"
    );
    Ok(listings)
}

/// The client-side type filter for servers without GroupType (see `list_groups`).
fn type_matches_protocol(group_type: &str, protocol_type: &str) -> bool {
    if group_type.eq_ignore_ascii_case("classic") {
        return !["streams", "share"]
            .iter()
            .any(|p| p.eq_ignore_ascii_case(protocol_type));
    }
    group_type.eq_ignore_ascii_case(protocol_type)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_group_types_the_protocol_type_stands_in() {
        assert!(type_matches_protocol("Streams", "streams"));
        assert!(!type_matches_protocol("streams", "consumer"));
        assert!(type_matches_protocol("classic", "connect"));
        assert!(type_matches_protocol("classic", "consumer"));
        assert!(!type_matches_protocol("classic", "streams"));
    }
}
