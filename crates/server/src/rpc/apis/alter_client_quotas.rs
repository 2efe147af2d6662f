//! AlterClientQuotas (key 49), v0-1, on broker and controller listeners (a Kafka broker
//! forwards it to the controller, whose `ControllerApis` answers): ALTER_CONFIGS on the cluster
//! is required, then the controller decides per entity (`kcoord_controller::client_quotas`) and
//! answers once the accepted changes are in the log; `ValidateOnly` decides without writing.
//!
//! Without ALTER_CONFIGS every entry is answered CLUSTER_AUTHORIZATION_FAILED with the code's
//! own message, as Kafka's `AlterClientQuotasRequest.getErrorResponse` does.

use kcoord_controller::client_quotas::EntityError;
use kcoord_metadata::QuotaEntity;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::alter_client_quotas_response::{EntityData, EntryData};
use kcoord_wire::messages::{AlterClientQuotasRequest, AlterClientQuotasResponse};
use kcoord_wire::ErrorCode;
use tracing::info;

use crate::rpc::apis::broker_registration::KAFKA_CLUSTER;
use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Listeners, Rpc};
use crate::runtime::controller::Refused;
use crate::state::RequestContext;

/// AlterClientQuotas as kcoord serves it (forwarded to the cluster in gateway mode).
pub const RPC: Rpc = Rpc::new(ApiKey::AlterClientQuotas, 0, 1)
    .served_on(Listeners::BrokerAndController)
    .asks(&[Check::new(
        AclOperation::AlterConfigs,
        ResourceType::Cluster,
    )]);

serve!(async handle);

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: AlterClientQuotasRequest,
    _version: i16,
) -> AlterClientQuotasResponse {
    let allowed = authorize(
        ctx,
        AclOperation::AlterConfigs,
        ResourceType::Cluster,
        KAFKA_CLUSTER,
    );
    if !allowed {
        return every_entry(&req, ErrorCode::CLUSTER_AUTHORIZATION_FAILED, None);
    }
    // Kafka's controller answers an empty request at once.
    if req.entries.is_empty() {
        return AlterClientQuotasResponse::default();
    }
    let validate_only = req.validate_only;
    let request = req.clone();
    let decided = ctx
        .server
        .controller
        .run("AlterClientQuotas", move |c, _| {
            Ok(c.alter_client_quotas(&request))
        })
        .await;
    let results = match decided {
        Ok(Ok(results)) => results,
        Ok(Err(Refused { error, decided })) => decided
            .unwrap_or_default()
            .into_iter()
            .map(|(entity, result)| {
                let failed = result.or(Some((error.code, error.message.clone())));
                (entity, failed)
            })
            .collect(),
        Err(unavailable) => {
            let message = unavailable.to_string();
            return every_entry(&req, ErrorCode::NOT_CONTROLLER, Some(&message));
        }
    };
    for (entity, result) in &results {
        info!(
            entity = %kcoord_controller::client_quotas::display(entity),
            validate_only,
            outcome = result.as_ref().map_or("NONE", |(code, _)| code.name()),
            "AlterClientQuotas"
        );
    }
    AlterClientQuotasResponse {
        entries: results.iter().map(|(e, r)| entry(e, r)).collect(),
        ..Default::default()
    }
}

fn entry(entity: &QuotaEntity, result: &EntityError) -> EntryData {
    EntryData {
        error_code: result.as_ref().map_or(0, |(code, _)| code.code()),
        error_message: result.as_ref().map(|(_, message)| message.clone()),
        entity: parts(entity.iter().map(|(t, n)| (t.as_str(), n.as_deref()))),
        ..Default::default()
    }
}

/// An entity's `(type, name)` parts as the response spells them.
fn parts<'a>(parts: impl Iterator<Item = (&'a str, Option<&'a str>)>) -> Vec<EntityData> {
    parts
        .map(|(entity_type, name)| EntityData {
            entity_type: entity_type.to_owned(),
            entity_name: name.map(str::to_owned),
            ..Default::default()
        })
        .collect()
}

/// Every entry of the request answered with `code` and `message`, by default the code's own
/// (Kafka's `getErrorResponse`), its entity as the request spelt it.
fn every_entry(
    req: &AlterClientQuotasRequest,
    code: ErrorCode,
    message: Option<&str>,
) -> AlterClientQuotasResponse {
    AlterClientQuotasResponse {
        entries: req
            .entries
            .iter()
            .map(|e| EntryData {
                error_code: code.code(),
                error_message: Some(message.unwrap_or(code.message()).to_owned()),
                entity: parts(
                    e.entity
                        .iter()
                        .map(|p| (p.entity_type.as_str(), p.entity_name.as_deref())),
                ),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// The authorization matrix's rows of AlterClientQuotas ([`crate::rpc::authorize`]'s matrix
/// tests), on broker and controller listeners alike.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    on_every_listener(row!(AlterClientQuotas 1 on Broker, alter_client_quotas(),
                needs [(AlterConfigs, Cluster, CLUSTER)],
                AlterClientQuotasResponse => |r| refusal(r.entries[0].error_code, r.entries[0].error_message.as_deref()),
                allowed "NONE",
                denied "CLUSTER_AUTHORIZATION_FAILED: Cluster authorization failed."))
}
