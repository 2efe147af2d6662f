//! StreamsGroupHeartbeat (key 88), v0-2, after Kafka's `KafkaApis.handleStreamsGroupHeartbeat`.
//!
//! In Kafka's order: READ on the group (GROUP_AUTHORIZATION_FAILED); the topology's topic names
//! (no Kafka-internal topic, only legal names: STREAMS_INVALID_TOPOLOGY) and DESCRIBE on each
//! (one refused: TOPIC_AUTHORIZATION_FAILED for the whole heartbeat); then the
//! group's coordinator shard runs the heartbeat (request validation, join/leave, reconciliation;
//! its errors become the response's ErrorCode and ErrorMessage). When the group needs internal
//! topics, they are created on its behalf (docs/kafka-coordinator-facts.md §9, `auto_topics.rs`), and the
//! creation errors cached for them are appended to the MISSING_INTERNAL_TOPICS status; without
//! CREATE on the cluster or on each of them, none is created and the status says "Unauthorized
//! to CREATE on topics ...".
//!
//! KIP-1331: after a successful heartbeat whose result carries the group's current
//! TopologyDescriptionId (the coordinator leaves it out for STALE_TOPOLOGY members and for
//! leaves), the topology description plugin's `requires_topology_push` is asked, by the
//! connection task and not on the shard, through the guard of `topology_plugin.rs`: on the
//! plugin's own threads, within a small budget; a panic, or no answer in time, is false, logged
//! at WARN. When it says yes, v2 carries the id and v1 sets
//! TopologyDescriptionRequired; v0 carries neither, and for v0 the plugin is not asked at all: a
//! v0 client cannot push, and a "yes" it never sees would only leave the plugin waiting for a
//! push that cannot come. Without a plugin nothing is ever asked.

use kcoord_coordinator::heartbeat::status::{MISSING_INTERNAL_TOPICS, MISSING_SOURCE_TOPICS};
use kcoord_coordinator::validate;
use kcoord_coordinator::HeartbeatContext;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::streams_group_heartbeat_request::Topology;
use kcoord_wire::messages::streams_group_heartbeat_response::Status;
use kcoord_wire::messages::{StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse};
use kcoord_wire::ErrorCode;
use tracing::debug;

use crate::rpc::apis::broker_registration::KAFKA_CLUSTER;
use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::runtime::auto_topics::creation_failed_suffix;
use crate::state::RequestContext;
use crate::support::clock;
use crate::support::logging::{capped, log_per_group};

/// StreamsGroupHeartbeat as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::StreamsGroupHeartbeat, 0, 2)
    .asks(&[
        Check::new(AclOperation::Read, ResourceType::Group),
        Check::new(AclOperation::Describe, ResourceType::Topic),
        Check::new(AclOperation::Create, ResourceType::Cluster),
        Check::new(AclOperation::Create, ResourceType::Topic),
    ])
    .local_in_gateway();

serve!(async handle);

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: StreamsGroupHeartbeatRequest,
    version: i16,
) -> StreamsGroupHeartbeatResponse {
    if !authorize(ctx, AclOperation::Read, ResourceType::Group, &req.group_id) {
        return error_response(ErrorCode::GROUP_AUTHORIZATION_FAILED, None);
    }
    // Kafka checks the names before anything else, since it must authorize each topic.
    if let Some(refusal) = req.topology.as_ref().and_then(|t| topology_refusal(ctx, t)) {
        return refusal;
    }

    let heartbeat = HeartbeatContext {
        client_id: ctx.header.client_id.as_deref().unwrap_or_default(),
        client_host: ctx.client_host,
        api_version: version,
    };
    let shard = ctx.server.coordinators.for_group(&req.group_id);
    let outcome = shard
        .call(|shard, now| shard.streams_group_heartbeat(&heartbeat, &req, now))
        .await;
    let (group, member) = (&req.group_id, &req.member_id);
    let result = match outcome {
        Err(e) => {
            log_per_group!(
                warn, ctx.server.group_lines, "heartbeat failed", group,
                group = %capped(group), member = %capped(member), shard = shard.index(), error = %e,
                "streams group heartbeat failed"
            );
            return error_response(e.error_code(), None);
        }
        Ok(Err(e)) => {
            debug!(%group, %member, error = %e, "streams group heartbeat refused");
            return error_response(e.code, e.message);
        }
        Ok(Ok(result)) => result,
    };

    let mut response = result.response;
    ask_for_the_clusters_topics(ctx, &response);
    create_internal_topics(ctx, &mut response, &result.internal_topics_to_create);
    let id = result.topology_description_id;
    let topology = &ctx.server.topology;
    let push = match id {
        Some(id) if version >= 1 && topology.is_enabled() => {
            crate::rpc::plugin_context::requires_push(topology, ctx, group, id).await
        }
        _ => false,
    };
    // TopologyDescriptionRequired exists in v1 only, TopologyDescriptionId from v2 on.
    response.topology_description_required = push && version == 1;
    response.topology_description_id = id.filter(|_| push && version >= 2);
    response
}

/// The heartbeat's refusal for its topology's topic names, if any: a name not legal for a topic,
/// or a topic the principal may not DESCRIBE.
#[inline]
fn topology_refusal(
    ctx: &RequestContext<'_>,
    topology: &Topology,
) -> Option<StreamsGroupHeartbeatResponse> {
    if let Err(e) = validate::topology_topic_names(topology) {
        return Some(error_response(e.code, e.message));
    }
    // DESCRIBE on every topic the topology names; one refusal refuses the heartbeat.
    let denied = topology_topics(topology)
        .any(|name| !authorize(ctx, AclOperation::Describe, ResourceType::Topic, name));
    denied.then(|| error_response(ErrorCode::TOPIC_AUTHORIZATION_FAILED, None))
}

/// In gateway mode, a group missing a source topic asks the topic mirror for a look at the
/// cluster now rather than at its next turn: a topic created in the cluster reaches kcoord only
/// through the mirror, and Kafka Streams gives up on missing source topics after two heartbeat
/// intervals.
fn ask_for_the_clusters_topics(ctx: &RequestContext<'_>, response: &StreamsGroupHeartbeatResponse) {
    let Some(gateway) = &ctx.server.gateway else {
        return;
    };
    let missing_source = response
        .status
        .iter()
        .flatten()
        .any(|s| s.status_code == MISSING_SOURCE_TOPICS);
    if missing_source {
        gateway.changed_upstream();
    }
}

/// Creates the internal topics the group needs on its behalf, adding the creation errors cached
/// for them to the MISSING_INTERNAL_TOPICS status; without CREATE on them, creates none and
/// says so in that status.
fn create_internal_topics(
    ctx: &RequestContext<'_>,
    response: &mut StreamsGroupHeartbeatResponse,
    to_create: &[kcoord_coordinator::configured_topology::CreatableTopic],
) {
    let uncreatable = uncreatable_topics(ctx, to_create);
    if !uncreatable.is_empty() {
        // Kafka creates none of them and says why in the MISSING_INTERNAL_TOPICS status.
        let text = format!(
            "Unauthorized to CREATE on topics {}.",
            uncreatable.join(", ")
        );
        let statuses = response.status.get_or_insert_with(Vec::new);
        match statuses
            .iter_mut()
            .find(|s| s.status_code == MISSING_INTERNAL_TOPICS)
        {
            Some(status) => {
                status.status_detail.push_str("; ");
                status.status_detail.push_str(&text);
            }
            None => statuses.push(Status {
                status_code: MISSING_INTERNAL_TOPICS,
                status_detail: text,
                ..Default::default()
            }),
        }
    } else if !to_create.is_empty() {
        let now = clock::now_ms();
        // Kafka caches creation errors for twice the group's heartbeat interval.
        let ttl_ms = 2 * i64::from(ctx.server.config.streams.heartbeat_interval_ms);
        let auto = &ctx.server.auto_topics;
        auto.create_streams_internal_topics(&ctx.server.controller, to_create, ttl_ms, now);
        let missing = response
            .status
            .iter_mut()
            .flatten()
            .find(|s| s.status_code == MISSING_INTERNAL_TOPICS);
        if let Some(status) = missing {
            let errors = auto.creation_errors(to_create.iter().map(|t| t.name.as_str()), now);
            if let Some(suffix) = creation_failed_suffix(&errors) {
                status.status_detail.push_str(&suffix);
            }
        }
    }
}

/// Every topic a topology names (Kafka's required topics: source, repartition sink and
/// source, changelog), each once.
fn topology_topics(topology: &Topology) -> impl Iterator<Item = &str> {
    let mut seen = std::collections::HashSet::new();
    topology
        .subtopologies
        .iter()
        .flat_map(|s| {
            s.source_topics
                .iter()
                .chain(&s.repartition_sink_topics)
                .map(String::as_str)
                .chain(s.repartition_source_topics.iter().map(|t| t.name.as_str()))
                .chain(s.state_changelog_topics.iter().map(|t| t.name.as_str()))
        })
        .filter(move |name| seen.insert(*name))
}

/// The internal topics to create that the principal may not create (CREATE on the cluster,
/// else on each topic).
fn uncreatable_topics(
    ctx: &RequestContext<'_>,
    to_create: &[kcoord_coordinator::configured_topology::CreatableTopic],
) -> Vec<String> {
    if to_create.is_empty()
        || authorize(
            ctx,
            AclOperation::Create,
            ResourceType::Cluster,
            KAFKA_CLUSTER,
        )
    {
        return Vec::new();
    }
    to_create
        .iter()
        .filter(|t| !authorize(ctx, AclOperation::Create, ResourceType::Topic, &t.name))
        .map(|t| t.name.clone())
        .collect()
}

fn error_response(code: ErrorCode, message: Option<String>) -> StreamsGroupHeartbeatResponse {
    StreamsGroupHeartbeatResponse {
        error_code: code.code(),
        error_message: message,
        ..Default::default()
    }
}

/// The authorization matrix's rows of StreamsGroupHeartbeat ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        row!(StreamsGroupHeartbeat ("group") 1 on Broker, streams_join(JOINING, false),
            needs [(Read, Group, JOINING), (Describe, Topic, TOPIC)],
            StreamsGroupHeartbeatResponse => |r| joined(&r),
            allowed "NONE", denied "GROUP_AUTHORIZATION_FAILED"),
        row!(StreamsGroupHeartbeat ("topics") 1 on Broker, streams_join(JOINING, false),
            also [(Read, Group, JOINING)],
            needs [(Describe, Topic, TOPIC)],
            StreamsGroupHeartbeatResponse => |r| joined(&r),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED"),
        // Not created, and the status says why; the heartbeat itself succeeds.
        row!(StreamsGroupHeartbeat ("internal topics, cluster") 1 on Broker, streams_join(JOINING, true),
            also [(Read, Group, JOINING), (Describe, Topic, TOPIC), (Describe, Topic, CHANGELOG)],
            needs [(Create, Cluster, CLUSTER)],
            StreamsGroupHeartbeatResponse => |r| joined(&r),
            allowed "NONE", denied "NONE, Unauthorized to CREATE on topics h-store-changelog."),
        row!(StreamsGroupHeartbeat ("internal topics, topic") 1 on Broker, streams_join(JOINING, true),
            also [(Read, Group, JOINING), (Describe, Topic, TOPIC), (Describe, Topic, CHANGELOG)],
            needs [(Create, Topic, CHANGELOG)],
            StreamsGroupHeartbeatResponse => |r| joined(&r),
            allowed "NONE", denied "NONE, Unauthorized to CREATE on topics h-store-changelog."),
    ]
}

#[cfg(test)]
mod tests;
