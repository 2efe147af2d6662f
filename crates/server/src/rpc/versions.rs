//! The API versions this server implements, from the RPC files' declarations
//! ([`crate::rpc::Rpc`]). ApiVersions advertises exactly these (restricted to the APIs a
//! listener serves) and dispatch refuses anything outside them.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use kcoord_wire::api::ApiKey;
use kcoord_wire::VersionRange;

use crate::config::ListenerKind;
use crate::rpc::{apis, Rpc};

/// The declaration of `api`, if an RPC file declares it.
pub fn declaration(api: ApiKey) -> Option<&'static Rpc> {
    static BY_KEY: LazyLock<Vec<Option<&'static Rpc>>> = LazyLock::new(|| {
        let size = apis::ALL
            .iter()
            .map(|rpc| rpc.api.key() as usize + 1)
            .max()
            .unwrap_or(0);
        let mut by_key = vec![None; size];
        for rpc in apis::ALL {
            by_key[rpc.api.key() as usize] = Some(*rpc);
        }
        by_key
    });
    BY_KEY
        .get(usize::try_from(api.key()).ok()?)
        .copied()
        .flatten()
}

/// Whether `api` is one of the push RPCs that exist only with a topology description plugin.
pub fn needs_topology_plugin(api: ApiKey) -> bool {
    declaration(api).is_some_and(|rpc| rpc.only_with_topology_plugin)
}

/// Whether a node runs alone or as a gateway in front of a cluster (docs/gateway.md): a
/// gateway also serves the RPCs it only forwards ([`Rpc::gateway_only`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Standalone,
    Gateway,
}

/// What ApiVersions lists on a `kind` listener: [`served_apis`] (from the lowest version each
/// lists), plus the push RPCs when a topology description plugin is configured, plus in gateway
/// mode the RPCs only a gateway forwards (to be narrowed by [`in_gateway`]). Worked out once
/// per mode, listener kind and plugin setting: ApiVersions is answered on every connection.
pub fn advertised_apis(
    mode: Mode,
    kind: ListenerKind,
    topology_plugin: bool,
) -> &'static [(ApiKey, VersionRange)] {
    type Lists = [[[Vec<(ApiKey, VersionRange)>; 2]; 2]; 2];
    static LISTS: LazyLock<Lists> = LazyLock::new(|| {
        let kinds = [ListenerKind::Broker, ListenerKind::Controller];
        [Mode::Standalone, Mode::Gateway].map(|mode| {
            kinds.map(|kind| {
                [false, true].map(|plugin| advertised_from(apis::ALL, mode, kind, plugin))
            })
        })
    });
    let kind_index = match kind {
        ListenerKind::Broker => 0,
        ListenerKind::Controller => 1,
    };
    &LISTS[usize::from(mode == Mode::Gateway)][kind_index][usize::from(topology_plugin)]
}

/// [`advertised_apis`] over the declarations `rpcs`: an API no RPC file declares is not listed.
fn advertised_from(
    rpcs: &[&Rpc],
    mode: Mode,
    kind: ListenerKind,
    topology_plugin: bool,
) -> Vec<(ApiKey, VersionRange)> {
    rpcs.iter()
        .filter(|rpc| served_as(Some(rpc), rpc.api, mode, kind))
        .filter(|rpc| topology_plugin || !rpc.only_with_topology_plugin)
        .map(|rpc| {
            let range = VersionRange {
                min: rpc.advertised_min_version,
                max: rpc.max_version,
            };
            (rpc.api.key(), (rpc.api, range))
        })
        .collect::<BTreeMap<i16, _>>()
        .into_values()
        .collect()
}

/// What a gateway advertises of `local_list` (what kcoord advertises itself): the APIs it
/// serves itself at its own versions, the forwarded ones at the versions both it and the
/// upstream cluster serve, and none the upstream lacks, so a client never picks a version the
/// cluster cannot answer. `upstream_authenticates`: `gateway.authentication=upstream`.
pub fn in_gateway(
    local_list: &[(ApiKey, VersionRange)],
    upstream: &BTreeMap<i16, VersionRange>,
    upstream_authenticates: bool,
) -> Vec<(ApiKey, VersionRange)> {
    local_list
        .iter()
        .filter_map(|(api, range)| {
            let local =
                declaration(*api).is_none_or(|rpc| rpc.gateway.is_local(upstream_authenticates));
            if local {
                return Some((*api, *range));
            }
            let theirs = upstream.get(&api.key())?;
            let both = VersionRange {
                min: range.min.max(theirs.min),
                max: range.max.min(theirs.max),
            };
            (both.min <= both.max).then_some((*api, both))
        })
        .collect()
}

/// Whether the API's schema lists `kind` among its listeners.
fn served_by_schema(api: ApiKey, kind: ListenerKind) -> bool {
    api.listeners().contains(&kind.as_str())
}

/// Whether a `kind` listener of a node in `mode` serves the declaration `rpc` of `api` (none:
/// no RPC file declares it): the declaration says so, within what the schema allows.
fn served_as(rpc: Option<&Rpc>, api: ApiKey, mode: Mode, kind: ListenerKind) -> bool {
    rpc.is_some_and(|rpc| rpc.listeners.include(kind) && (rpc.standalone || mode == Mode::Gateway))
        && served_by_schema(api, kind)
}

/// The versions of `api` a standalone node serves on a `kind` listener; `None` when it is not
/// served there.
pub fn supported_versions(api: ApiKey, kind: ListenerKind) -> Option<VersionRange> {
    supported_versions_in(Mode::Standalone, api, kind)
}

/// [`supported_versions`] for a node in `mode`.
pub fn supported_versions_in(mode: Mode, api: ApiKey, kind: ListenerKind) -> Option<VersionRange> {
    versions_as(declaration(api), api, mode, kind)
}

/// [`supported_versions_in`] for the declaration `rpc` of `api`.
fn versions_as(
    rpc: Option<&Rpc>,
    api: ApiKey,
    mode: Mode,
    kind: ListenerKind,
) -> Option<VersionRange> {
    let rpc = rpc?;
    served_as(Some(rpc), api, mode, kind).then_some(VersionRange {
        min: rpc.min_version,
        max: rpc.max_version,
    })
}

/// Every API served on a `kind` listener, by key (the push RPCs included).
pub fn served_apis(kind: ListenerKind) -> impl Iterator<Item = (ApiKey, VersionRange)> {
    let mut apis: Vec<(ApiKey, VersionRange)> = apis::ALL
        .iter()
        .filter(|rpc| !rpc.only_with_topology_plugin)
        .filter_map(|rpc| supported_versions(rpc.api, kind).map(|r| (rpc.api, r)))
        .collect();
    apis.sort_by_key(|(api, _)| api.key());
    apis.into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gateway_advertises_local_apis_as_its_own_and_forwarded_ones_at_both_sides_versions() {
        let ours = advertised_apis(Mode::Gateway, ListenerKind::Broker, true);
        let mut upstream: BTreeMap<i16, VersionRange> = BTreeMap::new();
        // A cluster with Fetch 4-12, Metadata 0-20, no Produce and no streams groups.
        upstream.insert(ApiKey::Fetch.key(), VersionRange { min: 4, max: 12 });
        upstream.insert(ApiKey::Metadata.key(), VersionRange { min: 0, max: 20 });
        let list = in_gateway(ours, &upstream, false);
        let get = |api: ApiKey| list.iter().find(|(a, _)| *a == api).map(|(_, r)| *r);
        let fetch_ours = ours.iter().find(|(a, _)| *a == ApiKey::Fetch).unwrap().1;
        assert_eq!(
            get(ApiKey::Fetch),
            Some(VersionRange {
                min: fetch_ours.min.max(4),
                max: fetch_ours.max.min(12)
            })
        );
        let metadata_ours = ours.iter().find(|(a, _)| *a == ApiKey::Metadata).unwrap().1;
        assert_eq!(get(ApiKey::Metadata), Some(metadata_ours));
        assert_eq!(get(ApiKey::Produce), None, "the upstream lacks it");
        for local in [
            ApiKey::StreamsGroupHeartbeat,
            ApiKey::StreamsGroupDescribe,
            ApiKey::ApiVersions,
            ApiKey::SaslHandshake,
        ] {
            assert_eq!(
                get(local),
                ours.iter().find(|(a, _)| *a == local).map(|(_, r)| *r),
                "{local:?}"
            );
        }
    }

    #[test]
    fn scram_credentials_are_kcoords_until_the_cluster_authenticates_the_clients() {
        let ours = advertised_apis(Mode::Gateway, ListenerKind::Broker, false);
        let mut upstream: BTreeMap<i16, VersionRange> = BTreeMap::new();
        let key = ApiKey::DescribeUserScramCredentials;
        upstream.insert(key.key(), VersionRange { min: 0, max: 0 });
        let get =
            |list: &[(ApiKey, VersionRange)]| list.iter().find(|(a, _)| *a == key).map(|(_, r)| *r);
        let ours_range = get(ours);
        assert_eq!(get(&in_gateway(ours, &upstream, false)), ours_range);
        let both = VersionRange { min: 0, max: 0 };
        assert_eq!(get(&in_gateway(ours, &upstream, true)), Some(both));
        assert_eq!(get(&in_gateway(ours, &BTreeMap::new(), true)), None);
    }

    /// The declared range for `api` (push RPCs included).
    fn table(api: ApiKey) -> VersionRange {
        declaration(api)
            .map(|rpc| VersionRange {
                min: rpc.min_version,
                max: rpc.max_version,
            })
            .unwrap_or_else(|| panic!("{} is not declared", api.name()))
    }

    #[test]
    fn broker_listeners_serve_every_api_but_the_broker_to_controller_rpcs() {
        let served: Vec<(ApiKey, VersionRange)> = served_apis(ListenerKind::Broker).collect();
        let mut expected: Vec<ApiKey> = apis::ALL
            .iter()
            .filter(|rpc| !rpc.only_with_topology_plugin && rpc.standalone)
            .map(|rpc| rpc.api)
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
        assert_eq!(
            keys,
            vec![17, 18, 19, 29, 30, 31, 36, 37, 49, 51, 60, 62, 63]
        );
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
        // The RPCs only a gateway forwards are docs/gateway.md's to list.
        let mut expected: Vec<(String, i16, String)> = apis::ALL
            .iter()
            .filter(|rpc| rpc.standalone)
            .map(|rpc| {
                let (api, min, max) = (rpc.api, rpc.min_version, rpc.max_version);
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
            "the Supported APIs table of docs/user-guide.md differs from the declarations"
        );
    }

    #[test]
    fn r10_push_rpcs_are_advertised_only_with_a_plugin() {
        let keys = |plugin| -> Vec<i16> {
            advertised_apis(Mode::Standalone, ListenerKind::Broker, plugin)
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
        assert!(
            advertised_apis(Mode::Standalone, ListenerKind::Controller, true)
                .iter()
                .all(|(a, _)| !needs_topology_plugin(*a))
        );
    }

    /// Every API with a schema has an RPC file: the request metrics make series for every
    /// schema (`metrics::requests`), which would otherwise list an API never served.
    #[test]
    fn every_api_with_a_schema_is_declared() {
        for api in ApiKey::ALL {
            assert!(
                declaration(*api).is_some(),
                "{} has no RPC file",
                api.name()
            );
        }
    }

    /// An API with a schema but no RPC file is neither served nor advertised. Every API with a
    /// schema has an RPC file today, so the declarations are taken without one of them.
    #[test]
    fn apis_with_only_a_schema_are_neither_served_nor_advertised() {
        let undeclared: Vec<ApiKey> = ApiKey::ALL
            .iter()
            .copied()
            .filter(|api| declaration(*api).is_none())
            .collect();
        for api in undeclared.iter().copied().chain([ApiKey::WriteTxnMarkers]) {
            let without: Vec<&Rpc> = apis::ALL
                .iter()
                .copied()
                .filter(|rpc| rpc.api != api)
                .collect();
            for kind in [ListenerKind::Broker, ListenerKind::Controller] {
                assert_eq!(
                    versions_as(None, api, Mode::Standalone, kind),
                    None,
                    "{} on {kind}",
                    api.name()
                );
                assert!(!served_as(None, api, Mode::Gateway, kind));
                for plugin in [false, true] {
                    assert!(
                        advertised_from(&without, Mode::Gateway, kind, plugin)
                            .iter()
                            .all(|(a, _)| *a != api),
                        "{} advertised on {kind}",
                        api.name()
                    );
                }
            }
        }
        // Declared, the same API is served and advertised: the tables above did decide.
        let api = ApiKey::WriteTxnMarkers;
        let rpc = declaration(api);
        assert!(served_as(rpc, api, Mode::Standalone, ListenerKind::Broker));
        assert_eq!(
            versions_as(rpc, api, Mode::Standalone, ListenerKind::Broker),
            Some(VersionRange { min: 1, max: 2 })
        );
        assert!(
            advertised_from(apis::ALL, Mode::Standalone, ListenerKind::Broker, false)
                .iter()
                .any(|(a, _)| *a == api)
        );
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
    fn the_declarations_stay_inside_the_schemas() {
        for rpc in apis::ALL {
            let (api, min, max) = (rpc.api, rpc.min_version, rpc.max_version);
            let valid = api.valid_versions();
            assert!(
                valid.min <= min && max <= valid.max,
                "{} {min}-{max} outside {valid}",
                api.name()
            );
            let listed = [ListenerKind::Broker, ListenerKind::Controller]
                .into_iter()
                .filter(|kind| rpc.listeners.include(*kind));
            for kind in listed {
                assert!(
                    served_by_schema(api, kind),
                    "{} is declared on {kind} listeners, which its schema does not list",
                    api.name()
                );
            }
        }
    }

    /// The cluster-administration and share-group RPCs only a gateway forwards: a standalone
    /// node neither lists nor serves them (a request for one closes the connection, as for an unknown API); a
    /// gateway lists them at the versions the cluster serves too, and not at all when the
    /// cluster lacks them.
    #[test]
    fn rpcs_only_a_gateway_forwards_are_served_only_in_gateway_mode() {
        let only_forwarded: Vec<&Rpc> = apis::ALL
            .iter()
            .copied()
            .filter(|r| !r.standalone)
            .collect();
        let keys: Vec<i16> = only_forwarded.iter().map(|r| r.api.key()).collect();
        assert_eq!(keys.len(), 14, "{keys:?}");
        let upstream: BTreeMap<i16, VersionRange> = only_forwarded
            .iter()
            .filter(|r| r.api != ApiKey::UnregisterBroker)
            .map(|r| (r.api.key(), VersionRange { min: 0, max: 1 }))
            .collect();
        for kind in [ListenerKind::Broker, ListenerKind::Controller] {
            for plugin in [false, true] {
                let standalone = advertised_apis(Mode::Standalone, kind, plugin);
                assert!(standalone.iter().all(|(a, _)| !keys.contains(&a.key())));
            }
        }
        let gateway = in_gateway(
            advertised_apis(Mode::Gateway, ListenerKind::Broker, false),
            &upstream,
            false,
        );
        for rpc in &only_forwarded {
            let api = rpc.api;
            let expected_gateway = match api {
                ApiKey::ShareFetch | ApiKey::ShareAcknowledge => crate::rpc::Gateway::Rewritten,
                ApiKey::UpdateFeatures => crate::rpc::Gateway::Refreshed,
                _ => crate::rpc::Gateway::Forwarded,
            };
            assert_eq!(rpc.gateway, expected_gateway, "{}", api.name());
            assert_eq!(supported_versions(api, ListenerKind::Broker), None);
            assert_eq!(
                supported_versions_in(Mode::Gateway, api, ListenerKind::Broker),
                Some(table(api)),
                "{}",
                api.name()
            );
            let listed = gateway.iter().find(|(a, _)| *a == api).map(|(_, r)| *r);
            let expected = (api != ApiKey::UnregisterBroker).then(|| VersionRange {
                min: rpc.min_version.max(0),
                max: rpc.max_version.min(1),
            });
            assert_eq!(listed, expected, "{}", api.name());
            assert_eq!(
                supported_versions_in(Mode::Gateway, api, ListenerKind::Controller),
                None,
                "the controller listener serves everything itself"
            );
        }
    }

    #[test]
    fn each_api_is_declared_once() {
        let mut keys: Vec<i16> = apis::ALL.iter().map(|rpc| rpc.api.key()).collect();
        keys.sort_unstable();
        let count = keys.len();
        keys.dedup();
        assert_eq!(keys.len(), count);
    }
}
