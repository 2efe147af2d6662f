//! The controller runtime's security commands: CreateAcls, DeleteAcls and
//! AlterUserScramCredentials, decided by `kcoord_controller` and committed as every other
//! batch. Once a batch with ACL records is applied, the authorizer gets its changes
//! (`Authorizer::acls_changed`) before the client is answered, so a client that created an
//! ACL is authorized by it on its next request.

use kcoord_acl::{AclApiError, AclBindingFilter, AclCreation};
use kcoord_controller::{AclChange, ControllerError, CreateAclResult, DeleteAclsResult};
use kcoord_wire::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kcoord_wire::messages::AlterUserScramCredentialsRequest;
use tokio::sync::oneshot;
use tracing::info;

use super::{Command, ControllerHandle, ControllerRuntime, ControllerUnavailable, Refused};
use crate::support::logging::capped;

impl ControllerHandle {
    /// CreateAcls: each creation's result in request order, once the new ACLs are in the log
    /// and the authorizer applies them.
    pub async fn create_acls(
        &self,
        creations: Vec<AclCreation>,
    ) -> Result<Vec<CreateAclResult>, ControllerUnavailable> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::CreateAcls { creations, reply }).await?;
        answer.await.map_err(|_| ControllerUnavailable)
    }

    /// DeleteAcls: each filter's result in request order, likewise.
    pub async fn delete_acls(
        &self,
        filters: Vec<AclBindingFilter>,
    ) -> Result<Vec<DeleteAclsResult>, ControllerUnavailable> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::DeleteAcls { filters, reply }).await?;
        answer.await.map_err(|_| ControllerUnavailable)
    }

    /// AlterUserScramCredentials: one result per user, once the credentials are in the log.
    pub async fn alter_scram_credentials(
        &self,
        request: AlterUserScramCredentialsRequest,
    ) -> Result<Vec<AlterUserScramCredentialsResult>, ControllerUnavailable> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::AlterScramCredentials { request, reply })
            .await?;
        answer.await.map_err(|_| ControllerUnavailable)
    }
}

impl ControllerRuntime {
    pub(super) async fn create_acls(&mut self, creations: &[AclCreation]) -> Vec<CreateAclResult> {
        let results = match self
            .handle("CreateAcls", |c| {
                Ok(c.create_acls(creations, uuid::Uuid::new_v4))
            })
            .await
        {
            Ok(results) => results,
            Err(refused) => refuse_each(refused, creations.len()),
        };
        for (creation, result) in creations.iter().zip(&results) {
            info!(
                resource_type = creation.resource_type,
                resource = %capped(&creation.resource_name),
                principal = %capped(&creation.principal),
                host = %capped(&creation.host),
                operation = creation.operation,
                permission = creation.permission,
                outcome = outcome(result),
                "CreateAcls"
            );
        }
        results
    }

    pub(super) async fn delete_acls(
        &mut self,
        filters: &[AclBindingFilter],
    ) -> Vec<DeleteAclsResult> {
        let results = match self
            .handle("DeleteAcls", |c| Ok(c.delete_acls(filters)))
            .await
        {
            Ok(results) => results,
            Err(refused) => refuse_each(refused, filters.len()),
        };
        let removed: usize = results.iter().flatten().map(Vec::len).sum();
        info!(filters = filters.len(), removed, "DeleteAcls");
        results
    }

    pub(super) async fn alter_scram_credentials(
        &mut self,
        request: &AlterUserScramCredentialsRequest,
    ) -> Vec<AlterUserScramCredentialsResult> {
        let results = match self
            .handle("AlterUserScramCredentials", |c| {
                Ok(c.alter_scram_credentials(request))
            })
            .await
        {
            Ok(results) => results,
            Err(Refused { error, decided }) => {
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
            }
        };
        // Names and outcomes only: never a salt or a key.
        for result in &results {
            info!(
                user = %capped(&result.user),
                outcome = kcoord_wire::ErrorCode::from_code(result.error_code).map_or("UNKNOWN", |c| c.name()),
                "AlterUserScramCredentials"
            );
        }
        results
    }

    /// Hands the authorizer the ACL changes of an applied batch.
    pub(super) fn feed_authorizer(&self, changes: &[AclChange]) {
        if let (Some(authorizer), false) = (&self.authorizer, changes.is_empty()) {
            authorizer.acls_changed(changes);
        }
    }
}

/// Results when the batch was not applied: entries the decision refused keep their errors,
/// the others get the batch's; without a decision, every entry gets it.
fn refuse_each<T>(
    Refused { error, decided }: Refused<Vec<Result<T, AclApiError>>>,
    entries: usize,
) -> Vec<Result<T, AclApiError>> {
    let failed = |error: &ControllerError| AclApiError {
        error: error.code,
        message: Some(error.message.clone()),
    };
    match decided {
        Some(results) => results
            .into_iter()
            .map(|r| r.and_then(|_| Err(failed(&error))))
            .collect(),
        None => (0..entries).map(|_| Err(failed(&error))).collect(),
    }
}

fn outcome<T>(result: &Result<T, AclApiError>) -> &'static str {
    match result {
        Ok(_) => "NONE",
        Err(e) => e.error.name(),
    }
}
