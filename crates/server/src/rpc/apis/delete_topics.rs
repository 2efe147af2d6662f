//! DeleteTopics (key 20), v1-6, on broker and controller listeners (Kafka brokers forward it to
//! the controller). By name (`TopicNames` before v6, `Topics[].Name` from v6) or by id (v6);
//! unknown names get UNKNOWN_TOPIC_OR_PARTITION, unknown ids UNKNOWN_TOPIC_ID, and the ambiguous
//! cases INVALID_REQUEST, with Kafka's messages (`kcoord_controller::topics::delete_topics_as`),
//! and authorization as Kafka's controller checks it (DELETE on the cluster, else DESCRIBE and
//! DELETE per topic: [`kcoord_controller::TopicAccess`]). Kafka shuffles the results; kcoord
//! answers in the order it decides, which reveals nothing a denied principal may not know
//! (a name it may not DESCRIBE is refused before its existence is looked at).

use std::collections::HashSet;

use kcoord_controller::TopicAccess;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::delete_topics_response::DeletableTopicResult;
use kcoord_wire::messages::{DeleteTopicsRequest, DeleteTopicsResponse};
use kcoord_wire::ErrorCode;

use crate::rpc::apis::broker_registration::KAFKA_CLUSTER;
use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;

/// DeleteTopics as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::DeleteTopics, 1, 6)
    .asks(&[
        Check::new(AclOperation::Delete, ResourceType::Cluster),
        Check::new(AclOperation::Describe, ResourceType::Topic),
        Check::new(AclOperation::Delete, ResourceType::Topic),
    ])
    .mirrored_in_gateway();

serve!(async handle);

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: DeleteTopicsRequest,
    _version: i16,
) -> DeleteTopicsResponse {
    let asked: Vec<(Option<String>, uuid::Uuid)> = req
        .topic_names
        .iter()
        .map(|n| (Some(n.clone()), uuid::Uuid::nil()))
        .chain(req.topics.iter().map(|t| (t.name.clone(), t.topic_id)))
        .collect();
    let access = topic_access(ctx, &req);
    let responses = match ctx.server.controller.delete_topics(req, access).await {
        Ok(results) => results,
        Err(e) => asked
            .into_iter()
            .map(|(name, topic_id)| DeletableTopicResult {
                name,
                topic_id,
                error_code: ErrorCode::NOT_CONTROLLER.code(),
                error_message: Some(e.to_string()),
                ..Default::default()
            })
            .collect(),
    };
    DeleteTopicsResponse {
        throttle_time_ms: 0,
        responses,
        ..Default::default()
    }
}

/// DELETE on the cluster, or DESCRIBE and DELETE on each topic named by name or by an id the
/// catalog knows (the controller resolves ids against its own image; a name missing here,
/// e.g. a topic created meanwhile, counts as denied).
fn topic_access(ctx: &RequestContext<'_>, req: &DeleteTopicsRequest) -> TopicAccess {
    if authorize(
        ctx,
        AclOperation::Delete,
        ResourceType::Cluster,
        KAFKA_CLUSTER,
    ) {
        return TopicAccess::All;
    }
    let image = ctx.server.topics.snapshot();
    let names: HashSet<&str> = req
        .topic_names
        .iter()
        .map(String::as_str)
        .chain(req.topics.iter().filter_map(|t| t.name.as_deref()))
        .chain(
            req.topics
                .iter()
                .filter_map(|t| image.get_by_id(&t.topic_id))
                .map(|t| t.name.as_str()),
        )
        .collect();
    let allowed = |operation| -> HashSet<String> {
        names
            .iter()
            .filter(|name| authorize(ctx, operation, ResourceType::Topic, name))
            .map(|name| (*name).to_owned())
            .collect()
    };
    TopicAccess::Topics {
        describable: allowed(AclOperation::Describe),
        deletable: allowed(AclOperation::Delete),
    }
}

/// The authorization matrix's rows of DeleteTopics ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        row!(DeleteTopics ("cluster") 5 on Broker, delete_topics(),
            needs [(Delete, Cluster, CLUSTER)],
            DeleteTopicsResponse => |r| code(r.responses[0].error_code),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED"),
        row!(DeleteTopics ("topic") 5 on Broker, delete_topics(),
            needs [(Describe, Topic, TOPIC), (Delete, Topic, TOPIC)],
            DeleteTopicsResponse => |r| code(r.responses[0].error_code),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED"),
        row!(DeleteTopics ("describable") 5 on Broker, delete_topics(),
            also [(Describe, Topic, TOPIC)],
            needs [(Delete, Topic, TOPIC)],
            DeleteTopicsResponse => |r| code(r.responses[0].error_code),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED"),
    ]
}

#[cfg(test)]
mod tests {
    use kcoord_wire::messages::create_topics_request::CreatableTopic;
    use kcoord_wire::messages::delete_topics_request::DeleteTopicState;
    use kcoord_wire::messages::CreateTopicsRequest;

    use super::*;
    use crate::config::ListenerKind;
    use crate::rpc::testing::{encodes, running, Ctx};

    #[tokio::test]
    async fn deletes_by_name_in_old_versions_and_by_id_in_v6() {
        let r = running("");
        let created = r
            .state
            .controller
            .create_topics(CreateTopicsRequest {
                topics: ["a", "b"]
                    .iter()
                    .map(|n| CreatableTopic {
                        name: (*n).into(),
                        num_partitions: 1,
                        replication_factor: 1,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .await
            .unwrap();
        let b = created[1].topic_id;
        let c = Ctx::new(&r.state, ListenerKind::Broker);
        let resp = handle(
            &c.ctx(&r.state),
            DeleteTopicsRequest {
                topic_names: vec!["a".into(), "nope".into()],
                timeout_ms: 1000,
                ..Default::default()
            },
            1,
        )
        .await;
        encodes(&resp, 1);
        let mut got: Vec<(Option<&str>, i16)> = resp
            .responses
            .iter()
            .map(|t| (t.name.as_deref(), t.error_code))
            .collect();
        got.sort();
        assert_eq!(got, vec![(Some("a"), 0), (Some("nope"), 3)]);
        let resp = handle(
            &c.ctx(&r.state),
            DeleteTopicsRequest {
                topics: vec![
                    DeleteTopicState {
                        name: None,
                        topic_id: b,
                        ..Default::default()
                    },
                    DeleteTopicState {
                        name: None,
                        topic_id: uuid::Uuid::from_u128(77),
                        ..Default::default()
                    },
                ],
                ..Default::default()
            },
            6,
        )
        .await;
        encodes(&resp, 6);
        let mut got: Vec<(Option<&str>, i16)> = resp
            .responses
            .iter()
            .map(|t| (t.name.as_deref(), t.error_code))
            .collect();
        got.sort();
        assert_eq!(got, vec![(None, 100), (Some("b"), 0)]);
        assert!(r.state.topics.snapshot().is_empty());
    }

    /// Kafka's coordinators tombstone the committed offsets of a deleted topic in every group
    /// (`onTopicsDeleted`); the groups' other offsets stay.
    #[tokio::test]
    async fn deleting_a_topic_drops_its_committed_offsets_in_every_group() {
        use kcoord_coordinator::commits::OffsetToCommit;
        let r = running("offsets.topic.num.partitions=3\n");
        let t = crate::rpc::testing::create_topic(&r.state, "t", 2).await;
        let u = crate::rpc::testing::create_topic(&r.state, "u", 1).await;
        let offset = |topic: &str, topic_id, partition| OffsetToCommit {
            topic: topic.into(),
            topic_id,
            partition,
            offset: 3,
            leader_epoch: -1,
            metadata: None,
        };
        let groups = ["g1", "g2", "g3", "g4"];
        for g in groups {
            let offsets = vec![offset("t", t, 0), offset("t", t, 1), offset("u", u, 0)];
            let committed = r
                .state
                .coordinators
                .for_group(g)
                .call(move |shard, now| shard.commit_offsets(g, "", -1, 10, &offsets, now))
                .await
                .unwrap();
            assert!(committed.is_ok());
        }
        let c = Ctx::new(&r.state, ListenerKind::Broker);
        let resp = handle(
            &c.ctx(&r.state),
            DeleteTopicsRequest {
                topic_names: vec!["t".into()],
                timeout_ms: 1000,
                ..Default::default()
            },
            4,
        )
        .await;
        assert_eq!(resp.responses[0].error_code, 0);
        for g in groups {
            let left = r
                .state
                .coordinators
                .for_group(g)
                .read(move |shard| {
                    shard
                        .state()
                        .offsets
                        .group(g)
                        .map(|o| o.keys().cloned().collect::<Vec<_>>())
                })
                .await
                .unwrap();
            assert_eq!(left, Some(vec![("u".to_owned(), 0)]), "{g}");
        }
    }
}
