//! The controller's commands that need more than one handler's answer: the shaping of a
//! refused batch's results per API, and the log lines Kafka's controller writes for them.

use std::collections::BTreeMap;

use kcoord_controller::group_configs::{GroupConfigChange, ResourceError};
use kcoord_controller::{
    random_topic_id, BrokerHeartbeatReply, BrokerRegistrationReply, GroupConfigValidator,
    ProducerIdBlock, TopicAccess,
};
use kcoord_coordinator::GroupConfigRules;
use kcoord_wire::messages::create_topics_response::CreatableTopicResult;
use kcoord_wire::messages::delete_topics_response::DeletableTopicResult;
use kcoord_wire::messages::{
    BrokerHeartbeatRequest, BrokerHeartbeatResponse, BrokerRegistrationRequest,
    BrokerRegistrationResponse, CreateTopicsRequest, DeleteTopicsRequest,
};
use tracing::{info, warn};

use super::outcome_log::{log_topic_outcomes, TopicOutcome};
use super::{ControllerRuntime, Refused};
use crate::support::clock::now_ms;
use crate::support::logging::capped;

impl ControllerRuntime {
    pub(super) async fn create_topics(
        &mut self,
        request: &CreateTopicsRequest,
    ) -> Vec<CreatableTopicResult> {
        let results = match self
            .handle("CreateTopics", |c| {
                Ok(c.create_topics(request, random_topic_id))
            })
            .await
        {
            Ok(results) => results,
            Err(refused) => refused_topics(request, refused),
        };
        log_topic_outcomes(
            "CreateTopics",
            request.validate_only,
            results.iter().map(|r| TopicOutcome {
                name: &r.name,
                topic_id: r.topic_id,
                error_code: r.error_code,
                message: r.error_message.as_deref(),
                layout: Some((r.num_partitions, r.replication_factor)),
            }),
        );
        results
    }

    pub(super) async fn delete_topics(
        &mut self,
        request: &DeleteTopicsRequest,
        access: &TopicAccess,
    ) -> Vec<DeletableTopicResult> {
        let results = match self
            .handle("DeleteTopics", |c| Ok(c.delete_topics(request, access)))
            .await
        {
            Ok(results) => results,
            Err(refused) => refused_deletions(request, refused),
        };
        log_topic_outcomes(
            "DeleteTopics",
            false,
            results.iter().map(|r| TopicOutcome {
                name: r.name.as_deref().unwrap_or(""),
                topic_id: r.topic_id,
                error_code: r.error_code,
                message: r.error_message.as_deref(),
                layout: None,
            }),
        );
        results
    }

    pub(super) async fn alter_group_configs(
        &mut self,
        changes: &[GroupConfigChange],
        validate_only: bool,
    ) -> Vec<Result<(), ResourceError>> {
        let rules = self.group_rules.clone();
        let results = match self
            .handle("IncrementalAlterConfigs", |c| {
                Ok(c.alter_group_configs(&GroupConfigValidation(&rules), changes, validate_only))
            })
            .await
        {
            Ok(results) => results,
            Err(Refused { error, decided }) => {
                let failed = || Err((error.code, Some(error.message.clone())));
                match decided {
                    Some(results) => results
                        .into_iter()
                        .map(|r| r.and_then(|()| failed()))
                        .collect(),
                    None => changes.iter().map(|_| failed()).collect(),
                }
            }
        };
        for (change, result) in changes.iter().zip(&results) {
            let outcome = match result {
                Ok(()) => "NONE",
                Err((code, _)) => code.name(),
            };
            info!(
                group = %capped(&change.group),
                operations = change.ops.len(),
                validate_only,
                outcome,
                message = result.as_ref().err().and_then(|(_, m)| m.as_deref()).unwrap_or(""),
                "IncrementalAlterConfigs (group)"
            );
        }
        results
    }

    pub(super) async fn register_broker(
        &mut self,
        request: &BrokerRegistrationRequest,
        version: i16,
    ) -> BrokerRegistrationResponse {
        let now = now_ms();
        let result = self
            .handle("BrokerRegistration", |c| {
                c.register_broker(request, version, now)
            })
            .await
            .map_err(|refused| refused.error);
        match &result {
            Ok(reply) => info!(
                broker_id = request.broker_id,
                incarnation_id = %kcoord_controller::kafka_uuid(&request.incarnation_id),
                version,
                broker_epoch = reply.epoch,
                static_configs = request.static_configs.len(),
                static_configs_kept = self.controller.static_configs(request.broker_id).map_or(0, |c| c.len()),
                metadata_version = %self.controller.metadata_version(),
                "BrokerRegistration"
            ),
            Err(e) => warn!(
                broker_id = request.broker_id,
                incarnation_id = %kcoord_controller::kafka_uuid(&request.incarnation_id),
                version,
                error = e.code.name(),
                message = %e.message,
                "BrokerRegistration refused"
            ),
        }
        BrokerRegistrationReply::response(&result)
    }

    pub(super) async fn broker_heartbeat(
        &mut self,
        request: &BrokerHeartbeatRequest,
        version: i16,
    ) -> BrokerHeartbeatResponse {
        let was_fenced = self.controller.broker(request.broker_id).map(|b| b.fenced);
        let now = now_ms();
        let result = self
            .handle("BrokerHeartbeat", |c| c.broker_heartbeat(request, now))
            .await
            .map_err(|refused| refused.error);
        let now_fenced = self.controller.broker(request.broker_id).map(|b| b.fenced);
        match &result {
            // Kafka logs these at INFO/DEBUG too: a restarted broker with an old epoch is common.
            Err(e) => info!(
                broker_id = request.broker_id,
                broker_epoch = request.broker_epoch,
                version,
                error = e.code.name(),
                message = %e.message,
                "BrokerHeartbeat refused"
            ),
            Ok(reply) if was_fenced != now_fenced => info!(
                broker_id = request.broker_id,
                broker_epoch = request.broker_epoch,
                fenced = reply.is_fenced,
                should_shut_down = reply.should_shut_down,
                "broker state changed"
            ),
            Ok(_) => {}
        }
        BrokerHeartbeatReply::response(&result)
    }

    pub(super) async fn allocate_producer_ids(&mut self) -> Result<ProducerIdBlock, String> {
        let node_id = self.controller.config().topic_defaults.node_id;
        let block = self
            .handle("AllocateProducerIds", |c| {
                c.allocate_producer_ids(node_id, -1)
            })
            .await
            .map_err(|refused| refused.error.to_string())?;
        info!(
            first = block.first,
            size = block.size,
            "allocated a producer id block"
        );
        Ok(block)
    }
}

/// CreateTopics results when the batch was not applied: topics the decision refused keep their
/// errors, the others get the batch's.
fn refused_topics(
    request: &CreateTopicsRequest,
    Refused { error, decided }: Refused<Vec<CreatableTopicResult>>,
) -> Vec<CreatableTopicResult> {
    let failed = |name: &str| CreatableTopicResult {
        name: name.to_owned(),
        error_code: error.code.code(),
        error_message: Some(error.message.clone()),
        ..Default::default()
    };
    match decided {
        Some(results) => fail_the_accepted(results, |r| r.error_code, |r| failed(&r.name)),
        None => request.topics.iter().map(|t| failed(&t.name)).collect(),
    }
}

/// DeleteTopics results when the batch was not applied, likewise.
fn refused_deletions(
    request: &DeleteTopicsRequest,
    Refused { error, decided }: Refused<Vec<DeletableTopicResult>>,
) -> Vec<DeletableTopicResult> {
    let failed = |name: Option<String>, topic_id| DeletableTopicResult {
        name,
        topic_id,
        error_code: error.code.code(),
        error_message: Some(error.message.clone()),
        ..Default::default()
    };
    match decided {
        Some(results) => {
            fail_the_accepted(results, |r| r.error_code, |r| failed(r.name, r.topic_id))
        }
        None => request
            .topic_names
            .iter()
            .map(|n| failed(Some(n.clone()), uuid::Uuid::nil()))
            .chain(
                request
                    .topics
                    .iter()
                    .map(|t| failed(t.name.clone(), t.topic_id)),
            )
            .collect(),
    }
}

/// The decision's results with each one it accepted (error code 0) replaced by `failed`: the
/// batch that would have applied it was not.
fn fail_the_accepted<T>(
    results: Vec<T>,
    error_code: impl Fn(&T) -> i16,
    failed: impl Fn(T) -> T,
) -> Vec<T> {
    results
        .into_iter()
        .map(|r| if error_code(&r) == 0 { failed(r) } else { r })
        .collect()
}

/// The coordinator's group config rules behind the controller's trait: the trait is the
/// controller's and the rules are the coordinator's, and neither core imports the other, so the
/// daemon, which runs both, joins them.
struct GroupConfigValidation<'a>(&'a GroupConfigRules);

impl GroupConfigValidator for GroupConfigValidation<'_> {
    fn validate(&self, configs: &BTreeMap<String, String>) -> Result<(), String> {
        self.0.validate(configs)
    }
}
