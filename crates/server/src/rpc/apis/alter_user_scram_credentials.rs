//! AlterUserScramCredentials (key 51), v0, on broker and controller listeners (a Kafka broker
//! forwards it to the controller): ALTER on the cluster is required, then the controller
//! decides per user (`kcoord_controller::scram`) and answers once the credentials are in the
//! log. The request carries salted passwords; nothing of them is logged.

use std::collections::BTreeSet;

use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kcoord_wire::messages::{AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse};
use kcoord_wire::ErrorCode;
use tracing::info;

use crate::rpc::authorize::ResourceType;
use crate::rpc::authorize::{require_cluster, AclOperation};
use crate::rpc::{serve, Check, Listeners, Rpc};
use crate::runtime::controller::{ControllerHandle, ControllerUnavailable, Refused};
use crate::state::RequestContext;
use crate::support::logging::capped;

/// AlterUserScramCredentials as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::AlterUserScramCredentials, 0, 0)
    .served_on(Listeners::BrokerAndController)
    .asks(&[Check::new(AclOperation::Alter, ResourceType::Cluster)])
    .credentials_in_gateway();

serve!(async handle);

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: AlterUserScramCredentialsRequest,
    _version: i16,
) -> AlterUserScramCredentialsResponse {
    let results = match require_cluster(ctx, "AlterUserScramCredentials", AclOperation::Alter) {
        // One result per user named, sorted by name (Kafka's `handleAlterUserScramCredentials`).
        Err(message) => users(&req)
            .into_iter()
            .map(|user| failed(user, ErrorCode::CLUSTER_AUTHORIZATION_FAILED, &message))
            .collect(),
        Ok(()) => {
            let names = users(&req);
            let altered = match &ctx.server.upstream_credentials {
                // Gateway mode: the credentials are kept in the cluster.
                Some(upstream) => upstream.alter(&ctx.server.controller, req).await,
                None => alter(&ctx.server.controller, req).await,
            };
            match altered.map(log_results) {
                Ok(results) => results,
                Err(e) => names
                    .into_iter()
                    .map(|user| failed(user, ErrorCode::NOT_CONTROLLER, &e.to_string()))
                    .collect(),
            }
        }
    };
    AlterUserScramCredentialsResponse {
        results,
        ..Default::default()
    }
}

/// Every user the request names, once each, by name.
fn users(req: &AlterUserScramCredentialsRequest) -> BTreeSet<String> {
    req.deletions
        .iter()
        .map(|d| d.name.clone())
        .chain(req.upsertions.iter().map(|u| u.name.clone()))
        .collect()
}

fn failed(user: String, code: ErrorCode, message: &str) -> AlterUserScramCredentialsResult {
    AlterUserScramCredentialsResult {
        user,
        error_code: code.code(),
        error_message: Some(message.to_owned()),
        ..Default::default()
    }
}

/// Alters the credentials through the controller (`Controller::alter_scram_credentials`):
/// results grouped as Kafka groups them.
async fn alter(
    controller: &ControllerHandle,
    request: AlterUserScramCredentialsRequest,
) -> Result<Vec<AlterUserScramCredentialsResult>, ControllerUnavailable> {
    let decided = controller
        .run("AlterUserScramCredentials", move |c, _| {
            Ok(c.alter_scram_credentials(&request))
        })
        .await?;
    let results = decided.unwrap_or_else(|Refused { error, decided }| {
        let failed = |user: String| AlterUserScramCredentialsResult {
            user,
            error_code: error.code.code(),
            error_message: Some(error.message.clone()),
            ..Default::default()
        };
        decided
            .unwrap_or_default()
            .into_iter()
            .map(|r| if r.error_code == 0 { failed(r.user) } else { r })
            .collect()
    });
    Ok(results)
}

/// Logs each user's outcome (never a salt or a key).
fn log_results(
    results: Vec<AlterUserScramCredentialsResult>,
) -> Vec<AlterUserScramCredentialsResult> {
    for result in &results {
        info!(
            user = %capped(&result.user),
            outcome = ErrorCode::from_code(result.error_code).map_or("UNKNOWN", |c| c.name()),
            "AlterUserScramCredentials"
        );
    }
    results
}

/// The authorization matrix's rows of AlterUserScramCredentials ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get, on
/// broker and controller listeners alike.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    on_every_listener(row!(AlterUserScramCredentials 0 on Broker, alter_scram(),
                needs [(Alter, Cluster, CLUSTER)],
                AlterUserScramCredentialsResponse => |r| refusal(r.results[0].error_code, r.results[0].error_message.as_deref()),
                allowed "NONE",
                denied "CLUSTER_AUTHORIZATION_FAILED: Request AlterUserScramCredentials needs ALTER permission."))
}
