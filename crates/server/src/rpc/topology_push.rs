//! What the two KIP-1331 push RPCs share: UpdateStreamsGroupTopologyDescription (key 95, the
//! specification's) and StreamsGroupTopologyDescriptionUpdate (key 93, Kafka 4.4's) differ only
//! in how they name the topology (an id vs. a topology epoch plus a member) and in how they
//! answer a description that is too large.
//!
//! The checks, in order (each handler's documentation lists its own in full):
//! 1. READ on the GROUP through the authorizer hook (GROUP_AUTHORIZATION_FAILED) — READ, not
//!    ALTER: like an offset commit, a push does not modify the group;
//! 2. a plugin is configured (UNSUPPORTED_VERSION);
//! 3. the request names a group (and, on key 93, a member): INVALID_REQUEST otherwise;
//! 4. the group's coordinator shard has loaded (COORDINATOR_LOAD_IN_PROGRESS);
//! 5. the group exists (GROUP_ID_NOT_FOUND), read on its shard together with what steps 6-7
//!    need; the shard does nothing else for a push, so a large description never occupies it;
//! 6. the handler's own checks, then the description itself (INVALID_REQUEST for the rules in
//!    `kcoord_coordinator::description`), converted on the connection task;
//! 7. `set_topology` on its own task, bounded by `group.streams.topology.description.timeout.ms`.
//!
//! There is no size limit here (R15): how much it stores is the plugin's decision.
//! `socket.request.max.bytes` still bounds the request frame, as for every request.

use kcoord_coordinator::validate;
use kcoord_coordinator::CoordinatorError;
use kcoord_plugin_api::{PluginError, StreamsGroupTopologyDescription, Uuid};
use kcoord_wire::ErrorCode;
use tracing::debug;

use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::plugin_context::plugin_context;
use crate::runtime::topology_plugin::PluginCallError;
use crate::state::RequestContext;
use crate::support::logging::{capped, log_per_group};

/// Why a push is not accepted: what the response carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Refusal {
    pub code: ErrorCode,
    pub message: Option<String>,
}

impl Refusal {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Refusal {
            code,
            message: Some(message.into()),
        }
    }

    pub fn code(code: ErrorCode) -> Self {
        Refusal {
            code,
            message: None,
        }
    }

    /// A push's outcome as both dialects' responses carry it: ErrorCode and ErrorMessage.
    pub fn response_fields(outcome: Result<(), Refusal>) -> (i16, Option<String>) {
        match outcome {
            Ok(()) => (ErrorCode::NONE.code(), None),
            Err(Refusal { code, message }) => (code.code(), message),
        }
    }
}

impl From<CoordinatorError> for Refusal {
    fn from(e: CoordinatorError) -> Self {
        Refusal {
            code: e.code,
            message: e.message,
        }
    }
}

/// Which push RPC is being served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dialect {
    /// Key 95: TOPOLOGY_DESCRIPTION_TOO_LARGE (137) exists.
    Specification,
    /// Key 93: Kafka 4.4 clients do not know 137, so a too-large description is 135 with a
    /// message saying so (docs/decisions.md, "Numbers this project chose").
    Kafka44,
}

impl Dialect {
    fn api(self) -> &'static str {
        match self {
            Dialect::Specification => "UpdateStreamsGroupTopologyDescription",
            Dialect::Kafka44 => "StreamsGroupTopologyDescriptionUpdate",
        }
    }

    /// The answer to a failed `set_topology`. The plugin's own text is logged, never sent: it
    /// may say things about the backing store the client has no business seeing.
    fn refusal(self, e: &PluginCallError) -> Refusal {
        match (e, self) {
            (PluginCallError::Plugin(PluginError::InvalidRequest(_)), _) => Refusal::new(
                ErrorCode::INVALID_REQUEST,
                "The topology description plugin rejected the topology description as invalid.",
            ),
            (PluginCallError::Plugin(PluginError::TooLarge(_)), Dialect::Specification) => {
                Refusal::new(
                    ErrorCode::TOPOLOGY_DESCRIPTION_TOO_LARGE,
                    "The topology description is larger than the topology description plugin is willing to store.",
                )
            }
            (PluginCallError::Plugin(PluginError::TooLarge(_)), Dialect::Kafka44) => Refusal::new(
                ErrorCode::TOPOLOGY_DESCRIPTION_UPDATE_FAILED,
                "The topology description is too large: it is larger than the topology description plugin is willing to store.",
            ),
            (PluginCallError::NotConfigured, _) => Refusal::code(ErrorCode::UNSUPPORTED_VERSION),
            _ => Refusal::new(
                ErrorCode::TOPOLOGY_DESCRIPTION_UPDATE_FAILED,
                "The topology description plugin failed to store the topology description; see the coordinator's log.",
            ),
        }
    }
}

/// Steps 1-3.
pub(super) fn admit(
    ctx: &RequestContext<'_>,
    group_id: &str,
    member_id: Option<&str>,
) -> Result<(), Refusal> {
    if !authorize(ctx, AclOperation::Read, ResourceType::Group, group_id) {
        return Err(Refusal::code(ErrorCode::GROUP_AUTHORIZATION_FAILED));
    }
    if !ctx.server.topology.is_enabled() {
        return Err(Refusal::new(
            ErrorCode::UNSUPPORTED_VERSION,
            match member_id {
                // Kafka 4.4's words (`throwIfStreamsGroupTopologyDescriptionUpdateInvalid`).
                Some(_) => {
                    "The broker has no streams group topology description plugin configured."
                }
                None => "No topology description plugin is configured on this coordinator.",
            },
        ));
    }
    match member_id {
        // Key 93 as Kafka 4.4: MemberId first, then GroupId, blank counting as empty.
        Some(member_id) => {
            if validate::blank(member_id) {
                return Err(Refusal::new(
                    ErrorCode::INVALID_REQUEST,
                    "MemberId can't be empty.",
                ));
            }
            if validate::blank(group_id) {
                return Err(Refusal::new(
                    ErrorCode::INVALID_REQUEST,
                    "GroupId can't be empty.",
                ));
            }
        }
        // Key 95, the specification's push.
        None => {
            if group_id.is_empty() {
                return Err(Refusal::new(
                    ErrorCode::INVALID_REQUEST,
                    "GroupId must not be empty.",
                ));
            }
        }
    }
    Ok(())
}

/// What a push needs to know about its group, read on the group's shard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct GroupFacts {
    pub topology_epoch: Option<i32>,
    pub topology_description_id: Option<Uuid>,
    /// Whether the member named (key 93) is in the group; false when none was named.
    pub member_known: bool,
}

/// Steps 4-5.
pub(super) async fn group_facts(
    ctx: &RequestContext<'_>,
    group_id: &str,
    member_id: Option<&str>,
) -> Result<GroupFacts, Refusal> {
    let shard = ctx.server.coordinators.for_group(group_id);
    if shard.is_loading() {
        return Err(Refusal::code(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS));
    }
    let (group, member) = (group_id.to_owned(), member_id.map(str::to_owned));
    let facts = shard
        .read(move |shard| {
            shard.group(&group).map(|g| GroupFacts {
                topology_epoch: g.topology_epoch(),
                topology_description_id: g.topology_description_id,
                member_known: member.is_some_and(|m| g.members.contains_key(m.as_str())),
            })
        })
        .await
        .map_err(|e| Refusal::code(e.error_code()))?;
    facts.ok_or_else(|| {
        Refusal::new(
            ErrorCode::GROUP_ID_NOT_FOUND,
            format!("Group {group_id} not found."),
        )
    })
}

/// Step 7: `set_topology` with the id as given, mapped to the response; every failure is
/// logged at WARN with the group, the id and the plugin's error.
pub(super) async fn store(
    ctx: &RequestContext<'_>,
    dialect: Dialect,
    group_id: &str,
    id: Uuid,
    description: StreamsGroupTopologyDescription,
) -> Result<(), Refusal> {
    let call = ctx
        .server
        .topology
        .set(plugin_context(ctx), group_id.to_owned(), id, description);
    match call.outcome().await {
        Ok(()) => {
            debug!(group = %group_id, topology_description_id = %id, api = dialect.api(), "topology description stored by the plugin");
            Ok(())
        }
        Err(e) => {
            let refusal = dialect.refusal(&e);
            log_per_group!(
                warn, ctx.server.group_lines, dialect.api(), group_id,
                group = %capped(group_id), topology_description_id = %id, api = dialect.api(),
                error = %e, error_code = refusal.code.code(),
                "topology description plugin did not store the topology description"
            );
            Err(refusal)
        }
    }
}
