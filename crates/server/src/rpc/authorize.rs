//! Authorization as the RPCs ask it, at the points where Kafka's `KafkaApis` asks its
//! authorizer ([`crate::security`]).

use crate::rpc::apis::broker_registration::KAFKA_CLUSTER;
use crate::state::RequestContext;

pub use crate::security::{AclOperation, KafkaPrincipal, ResourceType};

/// Whether the request's principal may perform `operation` on the resource: the injected
/// authorizer's answer, allow-all when there is none.
pub fn authorize(
    ctx: &RequestContext<'_>,
    operation: AclOperation,
    resource: ResourceType,
    name: &str,
) -> bool {
    ctx.server
        .authorizer
        .as_ref()
        .is_none_or(|a| a.authorize(&ctx.requester(), operation, resource, name))
}

/// Whether the request's principal has `operation` on the cluster; when not, the message
/// Kafka's `AuthHelper.authorizeClusterOperation` sends ("Request … needs ALTER permission.",
/// naming the API and the principal where Kafka prints its internal request object).
pub fn require_cluster(
    ctx: &RequestContext<'_>,
    api: &str,
    operation: AclOperation,
) -> Result<(), String> {
    if authorize(ctx, operation, ResourceType::Cluster, KAFKA_CLUSTER) {
        Ok(())
    } else {
        Err(format!(
            "Request {api} from {} needs {} permission.",
            ctx.principal,
            operation.name()
        ))
    }
}

/// [`Authorizer::authorize_any`] of the configured authorizer; allow-all when there is none.
pub fn authorize_any(
    ctx: &RequestContext<'_>,
    operation: AclOperation,
    resource: ResourceType,
) -> bool {
    ctx.server
        .authorizer
        .as_ref()
        .is_none_or(|a| a.authorize_any(&ctx.requester(), operation, resource))
}

/// DESCRIBE verdicts on topics, asked once per name over a whole request (the group
/// describes refuse a group that names a topic the principal may not describe).
#[derive(Default)]
pub struct TopicDescribeVerdicts(std::collections::HashMap<String, bool>);

impl TopicDescribeVerdicts {
    /// Whether the principal may DESCRIBE every topic of `names`.
    pub fn all_describable<'n>(
        &mut self,
        ctx: &RequestContext<'_>,
        names: impl IntoIterator<Item = &'n String>,
    ) -> bool {
        let mut all = true;
        for name in names {
            let allowed = match self.0.get(name) {
                Some(verdict) => *verdict,
                None => {
                    let verdict = authorize(ctx, AclOperation::Describe, ResourceType::Topic, name);
                    self.0.insert(name.clone(), verdict);
                    verdict
                }
            };
            all &= allowed;
        }
        all
    }
}

/// Kafka's `AuthHelper.authorizedOperations`: the operations the resource type supports that
/// the principal may perform, as a bit field of operation codes. Without an authorizer that
/// is every supported operation (`AclEntry.supportedOperations`).
pub fn authorized_operations(ctx: &RequestContext<'_>, resource: ResourceType, name: &str) -> i32 {
    kcoord_acl::supported_operations(resource.to_acl())
        .iter()
        .filter(|op| authorize(ctx, **op, resource, name))
        .fold(0, |bits, op| bits | 1 << (*op as i32))
}

/// The "not requested" value of the `*AuthorizedOperations` fields.
pub const AUTHORIZED_OPERATIONS_OMITTED: i32 = i32::MIN;

/// Without an authorizer Kafka grants every operation the resource type supports
/// (`AuthHelper.authorizedOperations`, `AclEntry.supportedOperations`), as a bit field of
/// `AclOperation` codes. CLUSTER: CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9,
/// DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12.
pub const CLUSTER_AUTHORIZED_OPERATIONS: i32 = bits(&[5, 7, 8, 9, 10, 11, 12]);

/// TOPIC: READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8, DESCRIBE_CONFIGS 10,
/// ALTER_CONFIGS 11.
pub const TOPIC_AUTHORIZED_OPERATIONS: i32 = bits(&[3, 4, 5, 6, 7, 8, 10, 11]);

const fn bits(codes: &[u8]) -> i32 {
    let mut field = 0i32;
    let mut i = 0;
    while i < codes.len() {
        field |= 1 << codes[i];
        i += 1;
    }
    field
}

#[cfg(test)]
mod tests {
    #[test]
    fn authorized_operation_bit_fields() {
        assert_eq!(super::CLUSTER_AUTHORIZED_OPERATIONS, 0x1fa0);
        assert_eq!(super::TOPIC_AUTHORIZED_OPERATIONS, 0x0df8);
    }

    use super::*;
    use crate::config::ListenerKind;
    use crate::rpc::authorize::{CLUSTER_AUTHORIZED_OPERATIONS, TOPIC_AUTHORIZED_OPERATIONS};
    use crate::rpc::testing::{server, with_ctx};

    #[test]
    fn without_an_authorizer_everything_supported_is_allowed() {
        let state = server();
        with_ctx(&state, ListenerKind::Broker, |ctx| {
            assert!(authorize(ctx, AclOperation::Read, ResourceType::Group, "g"));
            // READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS.
            assert_eq!(
                authorized_operations(ctx, ResourceType::Group, "g"),
                0b1101_0100_1000
            );
            assert_eq!(
                authorized_operations(ctx, ResourceType::Topic, "t"),
                TOPIC_AUTHORIZED_OPERATIONS
            );
            assert_eq!(
                authorized_operations(ctx, ResourceType::Cluster, ""),
                CLUSTER_AUTHORIZED_OPERATIONS
            );
        });
    }
}

#[cfg(test)]
pub(crate) mod matrix_tests;
