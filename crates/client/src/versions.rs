//! What the server said in ApiVersions, and Kafka's rules for agreeing on versions.

use std::collections::BTreeMap;

use bytes::Bytes;
use kcoord_wire::messages::{ApiVersionsRequest, ApiVersionsResponse};
use kcoord_wire::{Decodable, ErrorCode, Message, Request, VersionRange};

use crate::error::{api_name, ClientError};

/// The API version ranges a server advertised, and the ApiVersions response they came in.
#[derive(Debug, Clone)]
pub struct ServerVersions {
    api_versions_version: i16,
    ranges: BTreeMap<i16, VersionRange>,
    response: ApiVersionsResponse,
}

impl ServerVersions {
    /// `version` is the ApiVersions version the response was decoded at.
    pub fn new(response: ApiVersionsResponse, version: i16) -> Self {
        let ranges = response
            .api_keys
            .iter()
            .map(|k| {
                (
                    k.api_key,
                    VersionRange {
                        min: k.min_version,
                        max: k.max_version,
                    },
                )
            })
            .collect();
        ServerVersions {
            api_versions_version: version,
            ranges,
            response,
        }
    }

    /// The server's range for an API key, if it advertised the key.
    pub fn range(&self, api_key: i16) -> Option<VersionRange> {
        self.ranges.get(&api_key).copied()
    }

    /// The highest version in both the server's range and `client`'s.
    pub fn common_version(&self, api_key: i16, client: VersionRange) -> Option<i16> {
        let common = self.range(api_key)?.intersect(&client);
        (!common.is_empty()).then_some(common.max)
    }

    /// Every advertised API key with its range, by key.
    pub fn ranges(&self) -> impl Iterator<Item = (i16, VersionRange)> + '_ {
        self.ranges.iter().map(|(k, r)| (*k, *r))
    }

    /// The ApiVersions version that succeeded.
    pub fn api_versions_version(&self) -> i16 {
        self.api_versions_version
    }

    /// The whole response (features, throttle time, ...).
    pub fn response(&self) -> &ApiVersionsResponse {
        &self.response
    }
}

/// Decodes `body` as `T` at `version`; bytes left over mean client and server disagree on
/// the format, which is reported rather than ignored.
pub(crate) fn decode_exact<T: Decodable>(
    api_key: i16,
    version: i16,
    mut body: Bytes,
) -> Result<T, ClientError> {
    let value = T::decode(&mut body, version).map_err(|e| {
        ClientError::Protocol(format!(
            "{} v{version} response does not decode: {e:#}",
            api_name(api_key)
        ))
    })?;
    if !body.is_empty() {
        return Err(ClientError::Protocol(format!(
            "{} v{version} response has {} unread bytes at the end",
            api_name(api_key),
            body.len()
        )));
    }
    Ok(value)
}

/// Decodes an ApiVersions response sent for a request at `version`. A server that does not
/// know `version` answers with a v0 body, so when the body is not a valid `version` body it is
/// read as v0 (what Kafka's `ApiVersionsResponse.parse` does).
pub(crate) fn decode_api_versions(
    body: Bytes,
    version: i16,
) -> Result<(ApiVersionsResponse, i16), ClientError> {
    let key = ApiVersionsRequest::KEY;
    match decode_exact(key, version, body.clone()) {
        Ok(response) => Ok((response, version)),
        Err(first) if version > 0 => decode_exact(key, 0, body)
            .map(|r| (r, 0))
            .map_err(|_| first),
        Err(e) => Err(e),
    }
}

/// What to do after an ApiVersions response to a request at `tried`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Negotiation {
    Done,
    RetryAt(i16),
}

/// Kafka's rule: on UNSUPPORTED_VERSION, retry at the highest ApiVersions version both sides
/// know, taken from the server's own ApiVersions entry (v0 if it sent none).
pub(crate) fn next_step(
    response: &ApiVersionsResponse,
    tried: i16,
) -> Result<Negotiation, ClientError> {
    let key = ApiVersionsRequest::KEY;
    match ErrorCode::from_code(response.error_code) {
        Some(ErrorCode::NONE) => Ok(Negotiation::Done),
        Some(ErrorCode::UNSUPPORTED_VERSION) => {
            let client = ApiVersionsRequest::VERSIONS;
            let offered = response
                .api_keys
                .iter()
                .find(|k| k.api_key == key)
                .map(|k| VersionRange {
                    min: k.min_version,
                    max: k.max_version,
                });
            let next = offered.map_or(0, |r| r.max).min(client.max);
            // Only ever step down, so negotiation ends.
            if next >= tried || next < client.min {
                return Err(ClientError::UnsupportedVersion {
                    api: key,
                    requested: Some(tried),
                    client,
                    server: offered,
                });
            }
            Ok(Negotiation::RetryAt(next))
        }
        _ => Err(ClientError::Kafka {
            api: key,
            code: response.error_code,
            message: None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use kcoord_wire::messages::api_versions_response::ApiVersion;
    use kcoord_wire::Encodable;

    fn entry(api_key: i16, min_version: i16, max_version: i16) -> ApiVersion {
        ApiVersion {
            api_key,
            min_version,
            max_version,
            ..Default::default()
        }
    }

    fn response(error_code: i16, api_keys: Vec<ApiVersion>) -> ApiVersionsResponse {
        ApiVersionsResponse {
            error_code,
            api_keys,
            ..Default::default()
        }
    }

    fn encode(r: &ApiVersionsResponse, version: i16) -> Bytes {
        let mut b = BytesMut::new();
        r.encode(&mut b, version).unwrap();
        b.freeze()
    }

    #[test]
    fn common_version_is_the_top_of_the_overlap() {
        let v = ServerVersions::new(response(0, vec![entry(3, 1, 12), entry(10, 0, 3)]), 5);
        assert_eq!(
            v.common_version(3, VersionRange { min: 0, max: 13 }),
            Some(12)
        );
        assert_eq!(v.common_version(10, VersionRange { min: 4, max: 6 }), None);
        assert_eq!(v.common_version(88, VersionRange { min: 0, max: 2 }), None);
        assert_eq!(v.range(10), Some(VersionRange { min: 0, max: 3 }));
    }

    #[test]
    fn a_v0_error_body_is_read_when_the_requested_version_does_not_fit() {
        let v0 = response(35, vec![entry(18, 0, 3)]);
        for tried in [1, 2, 3, 4, 5] {
            let (decoded, at) = decode_api_versions(encode(&v0, 0), tried).unwrap();
            assert_eq!((decoded, at), (v0.clone(), 0), "tried v{tried}");
        }
        let v3 = response(0, vec![entry(18, 0, 3), entry(3, 0, 12)]);
        assert_eq!(decode_api_versions(encode(&v3, 3), 3).unwrap(), (v3, 3));
        assert!(decode_api_versions(Bytes::from_static(&[0, 0, 0]), 3).is_err());
    }

    #[test]
    fn unsupported_version_steps_down_to_what_the_server_offers() {
        let offer = |max| response(35, vec![entry(18, 0, max)]);
        assert_eq!(next_step(&offer(3), 5).unwrap(), Negotiation::RetryAt(3));
        assert!(
            matches!(
                next_step(&offer(9), 5),
                Err(ClientError::UnsupportedVersion { .. })
            ),
            "a server offering more than it just refused"
        );
        assert_eq!(
            next_step(&response(35, vec![]), 5).unwrap(),
            Negotiation::RetryAt(0)
        );
        assert!(
            next_step(&response(35, vec![]), 0).is_err(),
            "v0 rejected leaves nothing to try"
        );
        assert_eq!(
            next_step(&response(0, vec![]), 5).unwrap(),
            Negotiation::Done
        );
        let e = next_step(&response(31, vec![]), 5).unwrap_err();
        assert_eq!(
            e.error_code(),
            Some(ErrorCode::CLUSTER_AUTHORIZATION_FAILED)
        );
    }
}
