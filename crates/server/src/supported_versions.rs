//! The API versions this server implements. ApiVersions advertises exactly this table
//! (restricted to the APIs a listener serves) and dispatch refuses anything outside it.

use kcoord_wire::api::ApiKey;
use kcoord_wire::VersionRange;

use crate::config::ListenerKind;

/// `(api, min, max)`. Which listeners serve an API comes from its schema (`ApiKey::listeners`).
const SUPPORTED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Metadata, 0, 13),
    (ApiKey::OffsetCommit, 2, 10),
    (ApiKey::OffsetFetch, 1, 10),
    (ApiKey::FindCoordinator, 0, 6),
    (ApiKey::DescribeGroups, 0, 6),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::ApiVersions, 0, 5),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 6),
    (ApiKey::DeleteGroups, 0, 3),
    (ApiKey::DescribeCluster, 0, 2),
    (ApiKey::StreamsGroupHeartbeat, 0, 2),
    (ApiKey::StreamsGroupDescribe, 0, 1),
];

/// Whether the schema lists `kind` among the API's listeners.
pub fn served_on(api: ApiKey, kind: ListenerKind) -> bool {
    api.listeners().contains(&kind.as_str())
}

/// The versions of `api` served on a `kind` listener; `None` when it is not served there.
pub fn supported_versions(api: ApiKey, kind: ListenerKind) -> Option<VersionRange> {
    if !served_on(api, kind) {
        return None;
    }
    SUPPORTED
        .iter()
        .find(|(a, _, _)| *a == api)
        .map(|(_, min, max)| VersionRange {
            min: *min,
            max: *max,
        })
}

/// Every API served on a `kind` listener, by key: the ApiVersions list.
pub fn served_apis(kind: ListenerKind) -> impl Iterator<Item = (ApiKey, VersionRange)> {
    let mut apis: Vec<(ApiKey, VersionRange)> = SUPPORTED
        .iter()
        .filter_map(|(api, _, _)| supported_versions(*api, kind).map(|r| (*api, r)))
        .collect();
    apis.sort_by_key(|(api, _)| api.key());
    apis.into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broker_listeners_serve_the_client_apis() {
        let apis: Vec<(i16, i16, i16)> = served_apis(ListenerKind::Broker)
            .map(|(a, r)| (a.key(), r.min, r.max))
            .collect();
        assert_eq!(
            apis,
            vec![
                (3, 0, 13),
                (8, 2, 10),
                (9, 1, 10),
                (10, 0, 6),
                (15, 0, 6),
                (16, 0, 5),
                (18, 0, 5),
                (19, 2, 7),
                (20, 1, 6),
                (42, 0, 3),
                (60, 0, 2),
                (88, 0, 2),
                (89, 0, 1)
            ]
        );
    }

    #[test]
    fn controller_listeners_serve_api_versions_describe_cluster_and_topics() {
        let apis: Vec<(i16, i16, i16)> = served_apis(ListenerKind::Controller)
            .map(|(a, r)| (a.key(), r.min, r.max))
            .collect();
        assert_eq!(apis, vec![(18, 0, 5), (19, 2, 7), (20, 1, 6), (60, 0, 2)]);
        assert_eq!(
            supported_versions(ApiKey::Metadata, ListenerKind::Controller),
            None
        );
    }

    #[test]
    fn the_table_stays_inside_the_schemas() {
        for (api, min, max) in SUPPORTED {
            let valid = api.valid_versions();
            assert!(
                valid.min <= *min && *max <= valid.max,
                "{} {min}-{max} outside {valid}",
                api.name()
            );
        }
    }
}
