//! DescribeUserScramCredentials (key 50), v0, on broker listeners (Kafka's controller does not
//! serve it), from the published security image as Kafka's `ScramImage.describe` answers it:
//! no users named lists every user with a credential; a user named twice is DUPLICATE_RESOURCE,
//! a user without a credential RESOURCE_NOT_FOUND; each credential shows its mechanism and
//! iterations, never its salt or keys. Kafka lists users in hash order; kcoord lists them in
//! the order the request names them (by name when it names none).
//!
//! Without DESCRIBE on the cluster: a top-level CLUSTER_AUTHORIZATION_FAILED and, for each
//! user named, a result with the same code and an empty name (Kafka's `getErrorResponse`).

use std::collections::HashMap;

use kcoord_metadata::SecurityImage;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kcoord_wire::messages::{
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
};
use kcoord_wire::ErrorCode;

use crate::rpc::apis::broker_registration::KAFKA_CLUSTER;
use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;

/// DescribeUserScramCredentials as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::DescribeUserScramCredentials, 0, 0)
    .asks(&[Check::new(AclOperation::Describe, ResourceType::Cluster)])
    .credentials_in_gateway();

serve!(sync handle);

const DUPLICATE_USER: &str =
    "Cannot describe SCRAM credentials for the same user twice in a single request: ";
const NO_SUCH_USER: &str = "Attempt to describe a user credential that does not exist: ";

pub fn handle(
    ctx: &RequestContext<'_>,
    req: DescribeUserScramCredentialsRequest,
    _version: i16,
) -> DescribeUserScramCredentialsResponse {
    let requested = req.users.unwrap_or_default();
    if !authorize(
        ctx,
        AclOperation::Describe,
        ResourceType::Cluster,
        KAFKA_CLUSTER,
    ) {
        let denied = ErrorCode::CLUSTER_AUTHORIZATION_FAILED.code();
        // Kafka sends no message where it would repeat the code's default text.
        return DescribeUserScramCredentialsResponse {
            error_code: denied,
            error_message: None,
            results: requested
                .iter()
                .map(|_| DescribeUserScramCredentialsResult {
                    error_code: denied,
                    error_message: None,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
    }
    let image = ctx.server.cluster.snapshot();
    let names: Vec<&str> = requested.iter().map(|u| u.name.as_str()).collect();
    // On success Kafka leaves ErrorMessage at the schema default: "", not null (and so for
    // each user described without an error).
    DescribeUserScramCredentialsResponse {
        results: describe(&image.security, &names),
        ..Default::default()
    }
}

/// The results for `names` (every user with a credential when empty).
pub fn describe(image: &SecurityImage, names: &[&str]) -> Vec<DescribeUserScramCredentialsResult> {
    let mut infos: HashMap<&str, Vec<CredentialInfo>> = HashMap::new();
    let mut everyone: Vec<&str> = Vec::new();
    for credential in image.credentials() {
        let entry = infos.entry(credential.name.as_str()).or_default();
        if entry.is_empty() {
            everyone.push(credential.name.as_str());
        }
        entry.push(CredentialInfo {
            mechanism: credential.mechanism,
            iterations: credential.iterations,
            ..Default::default()
        });
    }
    let (users, repeated) = if names.is_empty() {
        (everyone, HashMap::new())
    } else {
        once_each(names)
    };
    users
        .into_iter()
        .map(|user| {
            let mut result = DescribeUserScramCredentialsResult {
                user: user.to_owned(),
                ..Default::default()
            };
            if repeated.get(user).copied().unwrap_or(false) {
                result.error_code = ErrorCode::DUPLICATE_RESOURCE.code();
                result.error_message = Some(format!("{DUPLICATE_USER}{user}"));
            } else if let Some(found) = infos.get(user) {
                result.credential_infos = found.clone();
            } else {
                result.error_code = ErrorCode::RESOURCE_NOT_FOUND.code();
                result.error_message = Some(format!("{NO_SUCH_USER}{user}"));
            }
            result
        })
        .collect()
}

/// Each name once, in first-appearance order, and whether it was named more than once.
fn once_each<'a>(names: &[&'a str]) -> (Vec<&'a str>, HashMap<&'a str, bool>) {
    let mut order = Vec::new();
    let mut repeated: HashMap<&str, bool> = HashMap::new();
    for name in names {
        match repeated.get_mut(name) {
            Some(twice) => *twice = true,
            None => {
                repeated.insert(name, false);
                order.push(*name);
            }
        }
    }
    (order, repeated)
}

/// The authorization matrix's rows of DescribeUserScramCredentials ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        row!(DescribeUserScramCredentials 0 on Broker, DescribeUserScramCredentialsRequest {
            users: None,
            ..Default::default()
        },
        needs [(Describe, Cluster, CLUSTER)],
        DescribeUserScramCredentialsResponse => |r| refusal(r.error_code, r.error_message.as_deref()),
        allowed "NONE", denied "CLUSTER_AUTHORIZATION_FAILED"),
    ]
}

#[cfg(test)]
mod tests {
    use kcoord_metadata::{LogState, Record};
    use kcoord_wire::records::UserScramCredentialRecord;

    use super::*;

    fn image(credentials: &[(&str, i8, i32)]) -> SecurityImage {
        let mut state = LogState::default();
        for (offset, (name, mechanism, iterations)) in credentials.iter().enumerate() {
            let record = Record::UserScramCredential(UserScramCredentialRecord {
                name: (*name).into(),
                mechanism: *mechanism,
                iterations: *iterations,
                ..Default::default()
            });
            state.replay(&record, offset as u64).unwrap();
        }
        state.security
    }

    /// (user, error code, (mechanism, iterations) of each credential)
    type Summary = (String, i16, Vec<(i8, i32)>);

    fn summary(results: &[DescribeUserScramCredentialsResult]) -> Vec<Summary> {
        results
            .iter()
            .map(|r| {
                let infos = r
                    .credential_infos
                    .iter()
                    .map(|c| (c.mechanism, c.iterations))
                    .collect();
                (r.user.clone(), r.error_code, infos)
            })
            .collect()
    }

    #[test]
    fn no_names_lists_every_user_with_a_credential_and_its_mechanisms() {
        let image = image(&[("bob", 2, 4096), ("alice", 1, 8192), ("alice", 2, 4096)]);
        let results = describe(&image, &[]);
        // Kafka leaves a success's ErrorMessage at the schema default: "", not null.
        assert!(results
            .iter()
            .all(|r| r.error_message.as_deref() == Some("")));
        assert_eq!(
            summary(&results),
            vec![
                ("alice".to_owned(), 0, vec![(1, 8192), (2, 4096)]),
                ("bob".to_owned(), 0, vec![(2, 4096)]),
            ]
        );
    }

    #[test]
    fn a_name_twice_is_a_duplicate_and_an_unknown_name_is_not_found() {
        let image = image(&[("alice", 1, 4096)]);
        let results = describe(&image, &["carol", "alice", "carol"]);
        assert_eq!(
            summary(&results),
            vec![
                (
                    "carol".to_owned(),
                    ErrorCode::DUPLICATE_RESOURCE.code(),
                    vec![]
                ),
                ("alice".to_owned(), 0, vec![(1, 4096)]),
            ]
        );
        assert_eq!(
            results[0].error_message.as_deref(),
            Some("Cannot describe SCRAM credentials for the same user twice in a single request: carol")
        );
        let missing = describe(&image, &["dave"]);
        assert_eq!(missing[0].error_code, ErrorCode::RESOURCE_NOT_FOUND.code());
        assert_eq!(
            missing[0].error_message.as_deref(),
            Some("Attempt to describe a user credential that does not exist: dave")
        );
    }
}
