//! CreateTopics (key 19), v2-7, on broker and controller listeners alike (a Kafka broker
//! forwards it to the controller, which answers). The controller task decides and appends the
//! records (`kcoord_controller::topics::create_topics` has the rules and Kafka's messages); this
//! handler only shapes the answer for the version: NumPartitions, ReplicationFactor and
//! Configs from v5, TopicId from v7 (older versions drop those ignorable fields).
//!
//! Authorization as Kafka's controller: CREATE on the cluster or on each topic (a topic without
//! it is TOPIC_AUTHORIZATION_FAILED, listed last), and DESCRIBE_CONFIGS on each topic created
//! for its configs (without it TopicConfigErrorCode is TOPIC_AUTHORIZATION_FAILED and
//! NumPartitions and ReplicationFactor are -1).
//!
//! Configs (v5+) of a topic created (or that would be, with ValidateOnly) are every topic config
//! with its effective value and source, sorted by name, as Kafka's controller answers them
//! (`ReplicationControlManager.createTopic`): what DescribeConfigs would show.

use std::collections::{BTreeMap, HashMap};

use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::create_topics_response::{CreatableTopicConfigs, CreatableTopicResult};
use kcoord_wire::messages::{CreateTopicsRequest, CreateTopicsResponse};
use kcoord_wire::ErrorCode;

use crate::rpc::apis::broker_registration::KAFKA_CLUSTER;
use crate::rpc::apis::describe_configs::topic_configs;
use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Listeners, Rpc};
use crate::state::RequestContext;

/// CreateTopics as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::CreateTopics, 2, 7)
    .served_on(Listeners::BrokerAndController)
    .asks(&[
        Check::new(AclOperation::Create, ResourceType::Cluster),
        Check::new(AclOperation::DescribeConfigs, ResourceType::Topic),
        Check::new(AclOperation::Create, ResourceType::Topic),
    ])
    .mirrored_in_gateway();

serve!(async handle);

/// The first version whose results carry the topic's configs.
const CONFIGS_VERSION: i16 = 5;

pub async fn handle(
    ctx: &RequestContext<'_>,
    mut req: CreateTopicsRequest,
    version: i16,
) -> CreateTopicsResponse {
    let denied = take_uncreatable(ctx, &mut req);
    let names: Vec<String> = req.topics.iter().map(|t| t.name.clone()).collect();
    let requested: HashMap<String, BTreeMap<String, String>> = req
        .topics
        .iter()
        .map(|t| {
            let set = t
                .configs
                .iter()
                .filter_map(|c| Some((c.name.clone(), c.value.clone()?)))
                .collect();
            (t.name.clone(), set)
        })
        .collect();
    let mut topics = match ctx.server.controller.create_topics(req).await {
        Ok(results) => results,
        // Only while shutting down; NOT_CONTROLLER makes clients retry elsewhere.
        Err(e) => names
            .into_iter()
            .map(|name| CreatableTopicResult {
                name,
                error_code: ErrorCode::NOT_CONTROLLER.code(),
                error_message: Some(e.to_string()),
                ..Default::default()
            })
            .collect(),
    };
    for topic in topics.iter_mut().filter(|t| t.error_code == 0) {
        // Created, but its configs are not shown to a principal without DESCRIBE_CONFIGS.
        if !authorize(
            ctx,
            AclOperation::DescribeConfigs,
            ResourceType::Topic,
            &topic.name,
        ) {
            topic.topic_config_error_code = ErrorCode::TOPIC_AUTHORIZATION_FAILED.code();
            topic.num_partitions = -1;
            topic.replication_factor = -1;
            topic.configs = None;
            topic.error_message = None;
        }
    }
    if version >= CONFIGS_VERSION {
        for topic in topics
            .iter_mut()
            .filter(|t| t.error_code == 0 && t.topic_config_error_code == 0)
        {
            let set = requested.get(&topic.name).cloned().unwrap_or_default();
            topic.configs = Some(
                topic_configs(ctx, &set)
                    .into_iter()
                    .map(|c| CreatableTopicConfigs {
                        name: c.name,
                        value: Some(c.value),
                        read_only: false,
                        config_source: c.source,
                        is_sensitive: false,
                        ..Default::default()
                    })
                    .collect(),
            );
        }
    }
    topics.extend(denied);
    CreateTopicsResponse {
        throttle_time_ms: 0,
        topics,
        ..Default::default()
    }
}

/// Kafka's controller (`ControllerApis.createTopics`): with CREATE on the cluster every topic
/// may be created, else those with CREATE on the topic. The others leave the request before
/// any other check (a denied topic that exists is not TOPIC_ALREADY_EXISTS) and are answered
/// TOPIC_AUTHORIZATION_FAILED "Authorization failed.", after the others. A name given twice
/// stays: it is INVALID_REQUEST "Duplicate topic name." whoever asks.
fn take_uncreatable(
    ctx: &RequestContext<'_>,
    req: &mut CreateTopicsRequest,
) -> Vec<CreatableTopicResult> {
    if authorize(
        ctx,
        AclOperation::Create,
        ResourceType::Cluster,
        KAFKA_CLUSTER,
    ) {
        return Vec::new();
    }
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for t in &req.topics {
        *counts.entry(t.name.as_str()).or_default() += 1;
    }
    let creatable: Vec<bool> = req
        .topics
        .iter()
        .map(|t| {
            counts.get(t.name.as_str()).copied().unwrap_or(0) > 1
                || authorize(ctx, AclOperation::Create, ResourceType::Topic, &t.name)
        })
        .collect();
    let mut denied = Vec::new();
    let mut keep = creatable.into_iter();
    req.topics.retain(|t| {
        let kept = keep.next().unwrap_or(true);
        if !kept {
            denied.push(CreatableTopicResult {
                name: t.name.clone(),
                error_code: ErrorCode::TOPIC_AUTHORIZATION_FAILED.code(),
                error_message: Some("Authorization failed.".to_owned()),
                num_partitions: -1,
                replication_factor: -1,
                ..Default::default()
            });
        }
        kept
    });
    denied
}

/// The authorization matrix's rows of CreateTopics ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        row!(CreateTopics ("cluster") 7 on Broker, create_topics(),
            needs [(Create, Cluster, CLUSTER), (DescribeConfigs, Topic, NEW_TOPIC)],
            CreateTopicsResponse => |r| created(&r),
            allowed "NONE configs NONE",
            denied "TOPIC_AUTHORIZATION_FAILED: Authorization failed. configs NONE"),
        row!(CreateTopics ("topic") 7 on Broker, create_topics(),
            needs [(Create, Topic, NEW_TOPIC), (DescribeConfigs, Topic, NEW_TOPIC)],
            CreateTopicsResponse => |r| created(&r),
            allowed "NONE configs NONE",
            denied "TOPIC_AUTHORIZATION_FAILED: Authorization failed. configs NONE"),
        // Created all the same; its configs are withheld.
        row!(CreateTopics ("configs") 7 on Broker, create_topics(),
            also [(Create, Topic, NEW_TOPIC)],
            needs [(DescribeConfigs, Topic, NEW_TOPIC)],
            CreateTopicsResponse => |r| created(&r),
            allowed "NONE configs NONE", denied "NONE configs TOPIC_AUTHORIZATION_FAILED"),
        row!(CreateTopics ("cluster") 7 on Controller, create_topics(),
            needs [(Create, Cluster, CLUSTER), (DescribeConfigs, Topic, NEW_TOPIC)],
            CreateTopicsResponse => |r| created(&r),
            allowed "NONE configs NONE",
            denied "TOPIC_AUTHORIZATION_FAILED: Authorization failed. configs NONE"),
        row!(CreateTopics ("topic") 7 on Controller, create_topics(),
            needs [(Create, Topic, NEW_TOPIC), (DescribeConfigs, Topic, NEW_TOPIC)],
            CreateTopicsResponse => |r| created(&r),
            allowed "NONE configs NONE",
            denied "TOPIC_AUTHORIZATION_FAILED: Authorization failed. configs NONE"),
    ]
}

#[cfg(test)]
mod tests {
    use kcoord_wire::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};

    use super::*;
    use crate::config::ListenerKind;
    use crate::rpc::apis::describe_configs::{DEFAULT_CONFIG, DYNAMIC_TOPIC_CONFIG};
    use crate::rpc::testing::{encodes, running, server, Ctx};
    use crate::state::ServerState;

    async fn call(
        state: &ServerState,
        kind: ListenerKind,
        req: CreateTopicsRequest,
        version: i16,
    ) -> CreateTopicsResponse {
        let c = Ctx::new(state, kind);
        let resp = handle(&c.ctx(state), req, version).await;
        encodes(&resp, version);
        resp
    }

    fn request(topics: &[(&str, i32, i16)], validate_only: bool) -> CreateTopicsRequest {
        CreateTopicsRequest {
            topics: topics
                .iter()
                .map(|(name, partitions, rf)| CreatableTopic {
                    name: (*name).into(),
                    num_partitions: *partitions,
                    replication_factor: *rf,
                    configs: vec![CreatableTopicConfig {
                        name: "retention.ms".into(),
                        value: Some("5".into()),
                        ..Default::default()
                    }],
                    ..Default::default()
                })
                .collect(),
            timeout_ms: 1000,
            validate_only,
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn creates_on_both_listener_kinds_and_every_version_encodes() {
        let r = running("num.partitions=4\ndefault.replication.factor=3\n");
        for (version, kind) in (2..=7).zip(
            [ListenerKind::Broker, ListenerKind::Controller]
                .into_iter()
                .cycle(),
        ) {
            let name = format!("t{version}");
            let resp = call(&r.state, kind, request(&[(&name, -1, -1)], false), version).await;
            let t = &resp.topics[0];
            assert_eq!(
                (
                    t.name.as_str(),
                    t.error_code,
                    t.num_partitions,
                    t.replication_factor
                ),
                (name.as_str(), 0, 4, 3)
            );
            assert!(!t.topic_id.is_nil());
            let image = r.state.topics.snapshot();
            let created = image.get(&name).unwrap();
            assert_eq!(created.id, t.topic_id);
            assert_eq!(created.partition_count(), 4);
            assert_eq!(created.replication_factor(), 3);
            assert_eq!(
                created.configs.get("retention.ms").map(String::as_str),
                Some("5")
            );
            let answered = t.configs.as_deref().unwrap_or_default();
            if version >= CONFIGS_VERSION {
                let retention = answered.iter().find(|c| c.name == "retention.ms").unwrap();
                assert_eq!(
                    (retention.value.as_deref(), retention.config_source),
                    (Some("5"), DYNAMIC_TOPIC_CONFIG)
                );
                let cleanup = answered
                    .iter()
                    .find(|c| c.name == "cleanup.policy")
                    .unwrap();
                assert_eq!(
                    (cleanup.value.as_deref(), cleanup.config_source),
                    (Some("delete"), DEFAULT_CONFIG)
                );
                assert!(answered.windows(2).all(|w| w[0].name < w[1].name));
            } else {
                assert!(answered.is_empty());
            }
        }
        let resp = call(
            &r.state,
            ListenerKind::Broker,
            request(&[("t2", 1, 1)], false),
            7,
        )
        .await;
        assert_eq!(
            resp.topics[0].error_code,
            ErrorCode::TOPIC_ALREADY_EXISTS.code()
        );
    }

    #[tokio::test]
    async fn validate_only_creates_nothing() {
        let r = running("");
        let resp = call(
            &r.state,
            ListenerKind::Broker,
            request(&[("v", 2, 1)], true),
            5,
        )
        .await;
        assert_eq!(
            (resp.topics[0].error_code, resp.topics[0].num_partitions),
            (0, 2)
        );
        assert!(r.state.topics.snapshot().is_empty());
    }

    #[tokio::test]
    async fn without_a_controller_every_topic_gets_not_controller() {
        let state = server();
        let resp = call(
            &state,
            ListenerKind::Broker,
            request(&[("a", 1, 1), ("b", 1, 1)], false),
            4,
        )
        .await;
        assert!(resp
            .topics
            .iter()
            .all(|t| t.error_code == ErrorCode::NOT_CONTROLLER.code()));
    }
}
