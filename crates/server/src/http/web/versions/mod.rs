//! `/api/v1/groups/{groupId}/topology/versions` and `.../topology/diff`: the TopologyDescriptionIds
//! the coordinator minted for a group (its deployments), whether the plugin holds each one's
//! description, and what changed between two of them.
//!
//! The coordinator keeps the versions (id, topology epoch, time) in the group's state; the
//! plugin only ever sees ids, so each version's description is read with `get_topology`, the
//! specification's own interface. The group is described first (StreamsGroupDescribe of
//! `User:ANONYMOUS`), so authorization and "no such group" are those of the other endpoints.
mod diff;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use kcoord_coordinator::Outcome;
use kcoord_metadata::TopologyVersion;
use kcoord_plugin_api::{StreamsGroupTopologyDescription, Uuid};
use kcoord_topology::TopologyDescriptionStatus;
use kcoord_wire::ErrorCode;
use serde::Serialize;

use super::api::{describe_one, Peer};
use super::error::{ApiError, TOPOLOGY_DESCRIPTION_ERROR, TOPOLOGY_DESCRIPTION_NOT_STORED};
use super::{kafka, no_store};
use crate::state::ServerState;
use crate::support::logging::{capped, log_per_group};
pub use diff::TopologyDiff;

pub fn routes() -> Router<Arc<ServerState>> {
    Router::new()
        .route("/api/v1/groups/{group_id}/topology/versions", get(versions))
        .route("/api/v1/groups/{group_id}/topology/diff", get(difference))
}

/// One version of a group's topology.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Version {
    pub topology_description_id: Uuid,
    pub topology_epoch: i32,
    /// When the coordinator minted the id; `None` for an id minted before kcoord kept
    /// versions (it is then the current one, and only that is known of it).
    pub minted_ms: Option<i64>,
    pub current: bool,
    /// `AVAILABLE`, `NOT_STORED` or `ERROR`, as for the group's topology.
    pub topology_description_status: &'static str,
}

/// `GET .../topology/versions`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionsDocument {
    pub group_id: String,
    pub topology_description_id: Option<Uuid>,
    /// The members run a topology whose description is not stored while an older one is: the
    /// drawing (of `storedTopologyDescriptionId`) is not what runs.
    pub topology_stale: bool,
    /// The newest version whose description the plugin holds.
    pub stored_topology_description_id: Option<Uuid>,
    /// Oldest first.
    pub versions: Vec<Version>,
}

/// `GET .../topology/diff`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffDocument {
    pub group_id: String,
    pub from: Version,
    pub to: Version,
    #[serde(flatten)]
    pub diff: TopologyDiff,
}

/// `?from=<id>&to=<id>`; ids need no percent-decoding, and anything else is ignored.
#[derive(Debug, Default, PartialEq)]
pub struct DiffQuery {
    from: Option<String>,
    to: Option<String>,
}

impl DiffQuery {
    fn parse(query: Option<&str>) -> DiffQuery {
        let mut parsed = DiffQuery::default();
        for pair in query.unwrap_or_default().split('&') {
            match pair.split_once('=') {
                Some(("from", v)) => parsed.from = Some(v.to_owned()),
                Some(("to", v)) => parsed.to = Some(v.to_owned()),
                _ => {}
            }
        }
        parsed
    }
}

/// The group's versions, oldest first, its current id last if the coordinator's list (from a
/// log older than versions) lacks it.
async fn group_versions(
    server: &ServerState,
    peer: Option<SocketAddr>,
    group_id: &str,
) -> Result<(Option<Uuid>, Vec<TopologyVersion>), ApiError> {
    let described = describe_one(server, peer, group_id.to_owned(), false).await?;
    let id = group_id.to_owned();
    let read = server
        .coordinators
        .for_group(group_id)
        .call(move |shard, _| {
            Outcome::answer(
                shard
                    .group(&id)
                    .map(|g| (g.topology_description_id, g.topology_versions.clone())),
            )
        })
        .await
        .map_err(|e| ApiError::kafka(e.error_code().code(), None))?;
    let (current, mut versions) =
        read.ok_or_else(|| ApiError::kafka(ErrorCode::GROUP_ID_NOT_FOUND.code(), None))?;
    let epoch = described.topology.as_ref().map_or(-1, |t| t.epoch);
    with_current(&mut versions, current, epoch);
    Ok((current, versions))
}

/// Adds the current id, minted for `topology_epoch`, if `versions` lack it: a group whose log
/// predates versions knows only its current id, and not when it was minted (-1).
fn with_current(versions: &mut Vec<TopologyVersion>, current: Option<Uuid>, topology_epoch: i32) {
    if let Some(id) = current.filter(|id| !versions.iter().any(|v| v.id == *id)) {
        versions.push(TopologyVersion {
            id,
            topology_epoch,
            minted_ms: -1,
        });
    }
}

/// Each version's description as the plugin has it (read concurrently, under the plugin's
/// timeout like describe's reads).
async fn read_descriptions(
    server: &ServerState,
    peer: Option<SocketAddr>,
    group_id: &str,
    ids: &[Uuid],
) -> Vec<Result<Option<StreamsGroupTopologyDescription>, String>> {
    if !server.topology.is_enabled() {
        return ids.iter().map(|_| Ok(None)).collect();
    }
    let ctx = kafka::plugin_context(server, peer);
    let calls: Vec<_> = ids
        .iter()
        .map(|id| server.topology.get(ctx.clone(), group_id.to_owned(), *id))
        .collect();
    let mut read = Vec::with_capacity(calls.len());
    for (call, id) in calls.into_iter().zip(ids) {
        let outcome = call.outcome().await.map_err(|e| e.to_string());
        if let Err(e) = &outcome {
            log_per_group!(
                warn, server.group_lines, "versions: plugin read failed", group_id,
                group = %capped(group_id), topology_description_id = %id, error = %e,
                "topology description plugin failed to return a version's topology description; the API answers ERROR for it"
            );
        }
        read.push(outcome);
    }
    read
}

fn status(
    read: &Result<Option<StreamsGroupTopologyDescription>, String>,
) -> TopologyDescriptionStatus {
    match read {
        Ok(Some(_)) => TopologyDescriptionStatus::Available,
        Ok(None) => TopologyDescriptionStatus::NotStored,
        Err(_) => TopologyDescriptionStatus::Error,
    }
}

fn version(
    v: &TopologyVersion,
    current: Option<Uuid>,
    status: TopologyDescriptionStatus,
) -> Version {
    Version {
        topology_description_id: v.id,
        topology_epoch: v.topology_epoch,
        minted_ms: (v.minted_ms >= 0).then_some(v.minted_ms),
        current: current == Some(v.id),
        topology_description_status: status.name(),
    }
}

async fn versions(
    State(server): State<Arc<ServerState>>,
    Peer(peer): Peer,
    Path(group_id): Path<String>,
) -> Result<Response, ApiError> {
    let (current, kept) = group_versions(&server, peer, &group_id).await?;
    let ids: Vec<Uuid> = kept.iter().map(|v| v.id).collect();
    let read = read_descriptions(&server, peer, &group_id, &ids).await;
    let versions: Vec<Version> = kept
        .iter()
        .zip(&read)
        .map(|(v, r)| version(v, current, status(r)))
        .collect();
    let stored = versions
        .iter()
        .rev()
        .find(|v| v.topology_description_status == TopologyDescriptionStatus::Available.name())
        .map(|v| v.topology_description_id);
    let current_missing = versions.iter().any(|v| {
        v.current && v.topology_description_status == TopologyDescriptionStatus::NotStored.name()
    });
    let document = VersionsDocument {
        group_id,
        topology_description_id: current,
        topology_stale: current_missing && stored.is_some(),
        stored_topology_description_id: stored,
        versions,
    };
    Ok((no_store(), Json(document)).into_response())
}

fn bad_request(message: String) -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        ErrorCode::INVALID_REQUEST.name(),
        message,
    )
}

/// The versions `from` and `to` name, by default the one before the current and the current.
fn chosen(
    query: &DiffQuery,
    kept: &[TopologyVersion],
) -> Result<(TopologyVersion, TopologyVersion), ApiError> {
    let pick = |given: &Option<String>, default: Option<&TopologyVersion>, which: &str| {
        let Some(text) = given.as_deref().filter(|t| !t.is_empty()) else {
            return default.copied().ok_or_else(|| {
                bad_request(format!(
                    "The group has fewer than two topology versions; name `{which}`."
                ))
            });
        };
        let id = Uuid::parse_str(text).map_err(|_| {
            bad_request(format!(
                "`{which}` is not a TopologyDescriptionId: {text:?}"
            ))
        })?;
        kept.iter().find(|v| v.id == id).copied().ok_or_else(|| {
            bad_request(format!(
                "`{which}` is not a topology version of the group: {id}"
            ))
        })
    };
    let n = kept.len();
    let from = pick(
        &query.from,
        n.checked_sub(2).and_then(|i| kept.get(i)),
        "from",
    )?;
    let to = pick(&query.to, kept.last(), "to")?;
    Ok((from, to))
}

async fn difference(
    State(server): State<Arc<ServerState>>,
    Peer(peer): Peer,
    Path(group_id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let query = DiffQuery::parse(query.as_deref());
    let (current, kept) = group_versions(&server, peer, &group_id).await?;
    let (from, to) = chosen(&query, &kept)?;
    let mut read = read_descriptions(&server, peer, &group_id, &[from.id, to.id]).await;
    let (Some(after), Some(before)) = (read.pop(), read.pop()) else {
        return Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::UNKNOWN_SERVER_ERROR.name(),
            "the plugin's reads went missing",
        ));
    };
    let (before, after) = (readable(before, from.id)?, readable(after, to.id)?);
    let document = DiffDocument {
        diff: diff::diff(&before, &after),
        group_id,
        from: version(&from, current, TopologyDescriptionStatus::Available),
        to: version(&to, current, TopologyDescriptionStatus::Available),
    };
    Ok((no_store(), Json(document)).into_response())
}

/// A version's description, or why it cannot be compared.
fn readable(
    read: Result<Option<StreamsGroupTopologyDescription>, String>,
    id: Uuid,
) -> Result<StreamsGroupTopologyDescription, ApiError> {
    match read {
        Ok(Some(description)) => Ok(description),
        Ok(None) => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            TOPOLOGY_DESCRIPTION_NOT_STORED,
            format!("No topology description is stored for version {id}."),
        )),
        Err(e) => Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            TOPOLOGY_DESCRIPTION_ERROR,
            format!("The topology description of version {id} could not be read: {e}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(id: u128, epoch: i32) -> TopologyVersion {
        TopologyVersion {
            id: Uuid::from_u128(id),
            topology_epoch: epoch,
            minted_ms: 1_000,
        }
    }

    #[test]
    fn a_group_from_an_old_log_shows_its_current_id_without_a_time() {
        let mut versions = Vec::new();
        with_current(&mut versions, Some(Uuid::from_u128(7)), 3);
        let shown = version(
            &versions[0],
            Some(Uuid::from_u128(7)),
            TopologyDescriptionStatus::Available,
        );
        assert_eq!(
            (shown.minted_ms, shown.topology_epoch, shown.current),
            (None, 3, true)
        );
        let mut versions = vec![kept(1, 0), kept(7, 1)];
        with_current(&mut versions, Some(Uuid::from_u128(7)), 1);
        assert_eq!(
            versions,
            [kept(1, 0), kept(7, 1)],
            "a kept current id is not added twice"
        );
    }

    #[test]
    fn a_diff_compares_the_last_two_versions_unless_told_otherwise() {
        let versions = [kept(1, 0), kept(2, 1), kept(3, 2)];
        let (from, to) = chosen(&DiffQuery::parse(None), &versions).unwrap();
        assert_eq!((from.id, to.id), (Uuid::from_u128(2), Uuid::from_u128(3)));
        let query = format!("to={}&from={}&x=1", Uuid::from_u128(2), Uuid::from_u128(1));
        let (from, to) = chosen(&DiffQuery::parse(Some(&query)), &versions).unwrap();
        assert_eq!((from.id, to.id), (Uuid::from_u128(1), Uuid::from_u128(2)));
        for bad in ["from=nope", &format!("from={}", Uuid::from_u128(9))] {
            let err = chosen(&DiffQuery::parse(Some(bad)), &versions).unwrap_err();
            assert_eq!(err.status, StatusCode::BAD_REQUEST, "{bad}");
        }
        assert!(
            chosen(&DiffQuery::default(), &versions[..1]).is_err(),
            "one version: nothing to compare"
        );
    }
}
