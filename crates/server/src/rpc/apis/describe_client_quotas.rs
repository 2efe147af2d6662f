//! DescribeClientQuotas (key 48), v0-1, on broker listeners, from the published quotas image
//! as Kafka's `ClientQuotasImage.describe` answers it: each filter component names an entity
//! type and matches its exact name (0), its default (1) or any entity of that type, the
//! default included (2); strict leaves out
//! entities with types the filter does not name. A bad filter is a top-level error with no
//! entries. Kafka lists entries in hash order; kcoord lists them sorted by entity.
//!
//! Without DESCRIBE_CONFIGS on the cluster: CLUSTER_AUTHORIZATION_FAILED with the code's own
//! message and no entries (Kafka's `getErrorResponse`).

use std::collections::{BTreeMap, BTreeSet};

use kcoord_metadata::image::client_quotas::{CLIENT_ID, IP, USER};
use kcoord_metadata::{ClientQuotasImage, QuotaEntity};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::describe_client_quotas_request::ComponentData;
use kcoord_wire::messages::describe_client_quotas_response::{EntityData, EntryData, ValueData};
use kcoord_wire::messages::{DescribeClientQuotasRequest, DescribeClientQuotasResponse};
use kcoord_wire::ErrorCode;

use crate::rpc::apis::broker_registration::KAFKA_CLUSTER;
use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;

/// DescribeClientQuotas as kcoord serves it (forwarded to the cluster in gateway mode).
pub const RPC: Rpc = Rpc::new(ApiKey::DescribeClientQuotas, 0, 1).asks(&[Check::new(
    AclOperation::DescribeConfigs,
    ResourceType::Cluster,
)]);

serve!(sync handle);

const MATCH_EXACT: i8 = 0;
const MATCH_DEFAULT: i8 = 1;
const MATCH_SPECIFIED: i8 = 2;

pub fn handle(
    ctx: &RequestContext<'_>,
    req: DescribeClientQuotasRequest,
    _version: i16,
) -> DescribeClientQuotasResponse {
    if !authorize(
        ctx,
        AclOperation::DescribeConfigs,
        ResourceType::Cluster,
        KAFKA_CLUSTER,
    ) {
        let denied = ErrorCode::CLUSTER_AUTHORIZATION_FAILED;
        return failed(denied, denied.message().to_owned());
    }
    let image = ctx.server.cluster.snapshot();
    match describe(&image.client_quotas, &req) {
        Ok(entries) => DescribeClientQuotasResponse {
            entries: Some(entries),
            ..Default::default()
        },
        Err((code, message)) => failed(code, message),
    }
}

fn failed(code: ErrorCode, message: String) -> DescribeClientQuotasResponse {
    DescribeClientQuotasResponse {
        error_code: code.code(),
        error_message: Some(message),
        entries: None,
        ..Default::default()
    }
}

/// What the filter asks: exact names (`None` the default) and types that must be named.
struct Filter {
    exact: BTreeMap<String, Option<String>>,
    specified: BTreeSet<String>,
    strict: bool,
}

/// The entries of `image` the request's filter matches, or Kafka's refusal of the filter.
pub fn describe(
    image: &ClientQuotasImage,
    req: &DescribeClientQuotasRequest,
) -> Result<Vec<EntryData>, (ErrorCode, String)> {
    let filter = filter(&req.components, req.strict)?;
    Ok(image
        .entities()
        .filter(|(entity, _)| filter.matches(entity))
        .map(|(entity, quotas)| EntryData {
            entity: entity
                .iter()
                .map(|(t, n)| EntityData {
                    entity_type: t.clone(),
                    entity_name: n.clone(),
                    ..Default::default()
                })
                .collect(),
            values: quotas
                .iter()
                .map(|(key, value)| ValueData {
                    key: key.clone(),
                    value: *value,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
        .collect())
}

/// Kafka's checks of the filter components, in its order and with its messages.
fn filter(components: &[ComponentData], strict: bool) -> Result<Filter, (ErrorCode, String)> {
    let invalid = |message: String| (ErrorCode::INVALID_REQUEST, message);
    let mut filter = Filter {
        exact: BTreeMap::new(),
        specified: BTreeSet::new(),
        strict,
    };
    for c in components {
        let entity_type = c.entity_type.as_str();
        if entity_type.is_empty() {
            return Err(invalid("Invalid empty entity type.".to_owned()));
        }
        if filter.exact.contains_key(entity_type) || filter.specified.contains(entity_type) {
            return Err(invalid(format!(
                "Entity type {entity_type} cannot appear more than once in the filter."
            )));
        }
        if ![IP, USER, CLIENT_ID].contains(&entity_type) {
            return Err((
                ErrorCode::UNSUPPORTED_VERSION,
                format!("Unsupported entity type {entity_type}"),
            ));
        }
        match (c.match_type, &c.r#match) {
            (MATCH_EXACT, None) => {
                return Err(invalid(
                    "Request specified MATCH_TYPE_EXACT, but set match string to null.".to_owned(),
                ))
            }
            (MATCH_EXACT, name) => {
                filter.exact.insert(entity_type.to_owned(), name.clone());
            }
            (MATCH_DEFAULT, Some(_)) => {
                return Err(invalid(
                    "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
                        .to_owned(),
                ))
            }
            (MATCH_DEFAULT, None) => {
                filter.exact.insert(entity_type.to_owned(), None);
            }
            (MATCH_SPECIFIED, Some(_)) => {
                return Err(invalid(
                    "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
                        .to_owned(),
                ))
            }
            (MATCH_SPECIFIED, None) => {
                filter.specified.insert(entity_type.to_owned());
            }
            (other, _) => return Err(invalid(format!("Unknown match type {other}"))),
        }
    }
    let names = |t: &str| filter.exact.contains_key(t) || filter.specified.contains(t);
    if names(IP) && (names(USER) || names(CLIENT_ID)) {
        return Err(invalid(
            "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component."
                .to_owned(),
        ));
    }
    Ok(filter)
}

impl Filter {
    /// Kafka's `matches`: exact names, then named types; strict also wants no other type; an
    /// empty strict filter matches nothing.
    fn matches(&self, entity: &QuotaEntity) -> bool {
        if self.exact.is_empty() && self.specified.is_empty() {
            return !self.strict;
        }
        let exact = self
            .exact
            .iter()
            .all(|(t, name)| entity.get(t).is_some_and(|n| n == name));
        // Kafka's image indexes an entity under each of its types, defaults included, so a
        // named type matches the type's default too.
        let specified = self.specified.iter().all(|t| entity.contains_key(t));
        exact
            && specified
            && (!self.strict || entity.len() == self.exact.len() + self.specified.len())
    }
}

/// The authorization matrix's rows of DescribeClientQuotas ([`crate::rpc::authorize`]'s matrix
/// tests).
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        row!(DescribeClientQuotas 1 on Broker, DescribeClientQuotasRequest::default(),
        needs [(DescribeConfigs, Cluster, CLUSTER)],
        DescribeClientQuotasResponse => |r| refusal(r.error_code, r.error_message.as_deref()),
        allowed "NONE", denied "CLUSTER_AUTHORIZATION_FAILED: Cluster authorization failed."),
    ]
}

#[cfg(test)]
mod tests;
