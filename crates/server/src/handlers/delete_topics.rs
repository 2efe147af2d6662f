//! DeleteTopics (key 20), v1-6, on broker and controller listeners (Kafka brokers forward it to
//! the controller). By name (`TopicNames` before v6, `Topics[].Name` from v6) or by id (v6);
//! unknown names get UNKNOWN_TOPIC_OR_PARTITION, unknown ids UNKNOWN_TOPIC_ID, and the ambiguous
//! cases INVALID_REQUEST, with Kafka's messages (`controller::topics::delete_topics`).

use kcoord_wire::messages::delete_topics_response::DeletableTopicResult;
use kcoord_wire::messages::{DeleteTopicsRequest, DeleteTopicsResponse};
use kcoord_wire::ErrorCode;

use crate::state::RequestContext;

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
    let responses = match ctx.server.controller.delete_topics(req).await {
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

#[cfg(test)]
mod tests {
    use kcoord_wire::messages::create_topics_request::CreatableTopic;
    use kcoord_wire::messages::delete_topics_request::DeleteTopicState;
    use kcoord_wire::messages::CreateTopicsRequest;

    use super::*;
    use crate::config::ListenerKind;
    use crate::handlers::testing::{encodes, running, Ctx};

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
}
