//! The API versions this server implements. ApiVersions advertises exactly this table
//! (restricted to the APIs a listener serves) and dispatch refuses anything outside it.

use kcoord_wire::api::ApiKey;
use kcoord_wire::VersionRange;

use crate::config::ListenerKind;

/// `(api, min, max)`: the one table of supported versions. Which listeners serve an API comes
/// from its schema (`ApiKey::listeners`). Tests derive their expectations from it, and a test
/// checks the "Supported APIs" table of docs/user-guide.md against it (with
/// [`TOPOLOGY_PUSH_APIS`]).
const SUPPORTED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 13),
    (ApiKey::Fetch, 4, 18),
    (ApiKey::ListOffsets, 1, 11),
    (ApiKey::Metadata, 0, 13),
    (ApiKey::OffsetCommit, 2, 10),
    (ApiKey::OffsetFetch, 1, 10),
    (ApiKey::OffsetDelete, 0, 0),
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
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::BrokerRegistration, 0, 6),
    (ApiKey::BrokerHeartbeat, 0, 2),
    (ApiKey::ListTopics, 0, 1),
    (ApiKey::DeleteRecords, 0, 2),
    (ApiKey::InitProducerId, 0, 5),
    (ApiKey::OffsetForLeaderEpoch, 2, 4),
    (ApiKey::DescribeAcls, 1, 3),
    (ApiKey::CreateAcls, 1, 3),
    (ApiKey::DeleteAcls, 1, 3),
    (ApiKey::DescribeUserScramCredentials, 0, 0),
    (ApiKey::AlterUserScramCredentials, 0, 0),
    (ApiKey::SaslHandshake, 0, 1),
    (ApiKey::SaslAuthenticate, 0, 2),
];

/// Kafka 4 serves Produce from v3 but lists it from v0 in ApiVersions, because older
/// librdkafka releases take a missing v0 to mean the broker cannot take compressed batches
/// (KAFKA-18659, `ApiKeys.PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION`). Requests below v3 are
/// still refused.
const PRODUCE_ADVERTISED_MIN: i16 = 0;

/// What a controller listener serves, whatever else the schemas allow there: the APIs brokers
/// and admin tools need from Kafka's controller (issue 6), and the ACL and SCRAM APIs Kafka's
/// controller serves (`kafka-acls --bootstrap-controller`). Every other API is for broker
/// listeners.
const CONTROLLER_APIS: &[ApiKey] = &[
    ApiKey::ApiVersions,
    ApiKey::BrokerRegistration,
    ApiKey::BrokerHeartbeat,
    ApiKey::DescribeCluster,
    ApiKey::CreateTopics,
    ApiKey::DescribeAcls,
    ApiKey::CreateAcls,
    ApiKey::DeleteAcls,
    ApiKey::AlterUserScramCredentials,
    ApiKey::SaslHandshake,
    ApiKey::SaslAuthenticate,
];

/// KIP-1331's push RPCs (key 93, Kafka 4.4's; key 95, the specification's). Dispatch accepts
/// them whether or not a plugin is configured, so that a plugin-less node answers them with an
/// UNSUPPORTED_VERSION response as the specification requires, but ApiVersions lists them only
/// when a plugin is configured ([`advertised_apis`]).
const TOPOLOGY_PUSH_APIS: &[(ApiKey, i16, i16)] = &[
    (ApiKey::StreamsGroupTopologyDescriptionUpdate, 0, 0),
    (ApiKey::UpdateStreamsGroupTopologyDescription, 0, 0),
];

/// Whether `api` is one of the push RPCs that exist only with a topology description plugin.
pub fn needs_topology_plugin(api: ApiKey) -> bool {
    TOPOLOGY_PUSH_APIS.iter().any(|(a, _, _)| *a == api)
}

/// What ApiVersions lists on a `kind` listener: [`served_apis`], plus the push RPCs when a
/// topology description plugin is configured.
pub fn advertised_apis(kind: ListenerKind, topology_plugin: bool) -> Vec<(ApiKey, VersionRange)> {
    let mut apis: Vec<(ApiKey, VersionRange)> = served_apis(kind)
        .map(|(api, range)| match api {
            ApiKey::Produce => (
                api,
                VersionRange {
                    min: PRODUCE_ADVERTISED_MIN,
                    max: range.max,
                },
            ),
            _ => (api, range),
        })
        .collect();
    if topology_plugin {
        apis.extend(
            TOPOLOGY_PUSH_APIS
                .iter()
                .filter_map(|(api, _, _)| supported_versions(*api, kind).map(|r| (*api, r))),
        );
        apis.sort_by_key(|(api, _)| api.key());
    }
    apis
}

/// Whether the schema lists `kind` among the API's listeners (and, for a controller
/// listener, the API is one of [`CONTROLLER_APIS`]).
pub fn served_on(api: ApiKey, kind: ListenerKind) -> bool {
    api.listeners().contains(&kind.as_str())
        && (kind != ListenerKind::Controller || CONTROLLER_APIS.contains(&api))
}

/// The versions of `api` served on a `kind` listener; `None` when it is not served there.
pub fn supported_versions(api: ApiKey, kind: ListenerKind) -> Option<VersionRange> {
    if !served_on(api, kind) {
        return None;
    }
    SUPPORTED
        .iter()
        .chain(TOPOLOGY_PUSH_APIS)
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

    /// The table's range for `api` (push RPCs included).
    fn table(api: ApiKey) -> VersionRange {
        SUPPORTED
            .iter()
            .chain(TOPOLOGY_PUSH_APIS)
            .find(|(a, _, _)| *a == api)
            .map(|(_, min, max)| VersionRange {
                min: *min,
                max: *max,
            })
            .unwrap_or_else(|| panic!("{} is not in the table", api.name()))
    }

    #[test]
    fn broker_listeners_serve_every_api_but_the_broker_to_controller_rpcs() {
        let served: Vec<(ApiKey, VersionRange)> = served_apis(ListenerKind::Broker).collect();
        let mut expected: Vec<ApiKey> = SUPPORTED
            .iter()
            .map(|(api, _, _)| *api)
            .filter(|api| !matches!(api, ApiKey::BrokerRegistration | ApiKey::BrokerHeartbeat))
            .collect();
        expected.sort_by_key(|api| api.key());
        let apis: Vec<ApiKey> = served.iter().map(|(api, _)| *api).collect();
        assert_eq!(apis, expected);
        for (api, range) in served {
            assert_eq!(range, table(api), "{}", api.name());
        }
    }

    #[test]
    fn controller_listeners_serve_exactly_the_controller_apis() {
        let served: Vec<(ApiKey, VersionRange)> = served_apis(ListenerKind::Controller).collect();
        let keys: Vec<i16> = served.iter().map(|(api, _)| api.key()).collect();
        assert_eq!(keys, vec![17, 18, 19, 29, 30, 31, 36, 51, 60, 62, 63]);
        for (api, range) in served {
            assert_eq!(range, table(api), "{}", api.name());
        }
        for api in [
            ApiKey::Metadata,
            ApiKey::DeleteTopics,
            ApiKey::DescribeConfigs,
            ApiKey::ListTopics,
            ApiKey::DescribeUserScramCredentials,
        ] {
            assert_eq!(supported_versions(api, ListenerKind::Controller), None);
        }
        // Broker listeners never advertise the broker-to-controller RPCs.
        for api in [ApiKey::BrokerRegistration, ApiKey::BrokerHeartbeat] {
            assert_eq!(supported_versions(api, ListenerKind::Broker), None);
        }
    }

    /// The "Supported APIs" table of docs/user-guide.md lists exactly this table: every API
    /// once, by key, with its name and versions (`min-max`, or one number).
    #[test]
    fn the_user_guide_lists_this_table() {
        let guide = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/user-guide.md"
        ));
        let section = guide
            .split("\n## Supported APIs\n")
            .nth(1)
            .expect("docs/user-guide.md has a Supported APIs section");
        let section = section.split("\n#").next().unwrap_or(section);
        let listed: Vec<(String, i16, String)> = section
            .lines()
            .filter(|l| l.starts_with("| "))
            .filter_map(|l| {
                let cells: Vec<&str> = l.split('|').map(str::trim).collect();
                let key = cells.get(2)?.parse::<i16>().ok()?;
                Some((cells[1].to_owned(), key, cells[3].to_owned()))
            })
            .collect();
        let mut expected: Vec<(String, i16, String)> = SUPPORTED
            .iter()
            .chain(TOPOLOGY_PUSH_APIS)
            .map(|(api, min, max)| {
                let versions = if min == max {
                    min.to_string()
                } else {
                    format!("{min}-{max}")
                };
                (api.name().to_owned(), api.key(), versions)
            })
            .collect();
        expected.sort_by_key(|(_, key, _)| *key);
        assert_eq!(
            listed, expected,
            "the Supported APIs table of docs/user-guide.md differs from SUPPORTED"
        );
    }

    #[test]
    fn r10_push_rpcs_are_advertised_only_with_a_plugin() {
        let keys = |plugin| -> Vec<i16> {
            advertised_apis(ListenerKind::Broker, plugin)
                .iter()
                .map(|(a, _)| a.key())
                .collect()
        };
        assert!(!keys(false).contains(&93) && !keys(false).contains(&95));
        let with = keys(true);
        assert!(with.contains(&93) && with.contains(&95));
        assert!(with.windows(2).all(|w| w[0] < w[1]), "sorted by key");
        // Dispatch still accepts v0 without a plugin, so the handler can answer it.
        for api in [
            ApiKey::StreamsGroupTopologyDescriptionUpdate,
            ApiKey::UpdateStreamsGroupTopologyDescription,
        ] {
            assert!(needs_topology_plugin(api));
            assert_eq!(
                supported_versions(api, ListenerKind::Broker),
                Some(VersionRange { min: 0, max: 0 })
            );
            assert_eq!(supported_versions(api, ListenerKind::Controller), None);
        }
        assert!(advertised_apis(ListenerKind::Controller, true)
            .iter()
            .all(|(a, _)| !needs_topology_plugin(*a)));
    }

    /// The security RPCs are served where Kafka serves them: the SASL and ACL ones and
    /// AlterUserScramCredentials on every listener, DescribeUserScramCredentials on broker
    /// listeners only.
    #[test]
    fn the_security_apis_are_served_where_kafka_serves_them() {
        for api in [
            ApiKey::SaslHandshake,
            ApiKey::SaslAuthenticate,
            ApiKey::DescribeAcls,
            ApiKey::CreateAcls,
            ApiKey::DeleteAcls,
            ApiKey::AlterUserScramCredentials,
        ] {
            for kind in [ListenerKind::Broker, ListenerKind::Controller] {
                assert_eq!(
                    supported_versions(api, kind),
                    Some(table(api)),
                    "{} on {kind}",
                    api.name()
                );
            }
        }
        let describe = ApiKey::DescribeUserScramCredentials;
        assert_eq!(
            supported_versions(describe, ListenerKind::Broker),
            Some(table(describe))
        );
        assert_eq!(supported_versions(describe, ListenerKind::Controller), None);
    }

    #[test]
    fn the_table_stays_inside_the_schemas() {
        for (api, min, max) in SUPPORTED.iter().chain(TOPOLOGY_PUSH_APIS) {
            let valid = api.valid_versions();
            assert!(
                valid.min <= *min && *max <= valid.max,
                "{} {min}-{max} outside {valid}",
                api.name()
            );
        }
    }
}
