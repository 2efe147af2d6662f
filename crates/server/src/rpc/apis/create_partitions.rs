//! CreatePartitions (key 37), v0-3, on broker and controller listeners alike (a Kafka broker
//! forwards it to the controller, whose `ControllerApis.createPartitions` answers):
//!
//! - a name given twice: INVALID_REQUEST "Duplicate topic name.", once per name;
//! - a topic without ALTER on it: TOPIC_AUTHORIZATION_FAILED, no message;
//! - the rest go to the controller (`kcoord_controller::topics::create_partitions`, Kafka's
//!   `ReplicationControlManager.createPartitions`), which writes the new PartitionRecords to
//!   the metadata log; the controller task creates their logs before it publishes the catalog,
//!   and tells the coordinator shards, so streams groups reading the topic see the new count.
//!
//! The answer is in Kafka's order: the duplicates, then the refused topics, then the
//! controller's results, each part in the iteration order of the Java `HashSet` Kafka keeps the
//! names in. A TimeoutMs of 0 or less leaves Kafka's controller no time: its queue times the
//! event out before running it, and every topic of the request (as sent) is REQUEST_TIMED_OUT.

use std::collections::HashMap;

use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::create_partitions_request::CreatePartitionsTopic;
use kcoord_wire::messages::create_partitions_response::CreatePartitionsTopicResult;
use kcoord_wire::messages::{CreatePartitionsRequest, CreatePartitionsResponse};
use kcoord_wire::ErrorCode;
use tracing::info;

use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::lists::{java_hash_set_order, java_table_size};
use crate::rpc::{serve, Check, Listeners, Rpc};
use crate::runtime::controller::Refused;
use crate::state::RequestContext;
use crate::support::logging::capped;

/// CreatePartitions as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::CreatePartitions, 0, 3)
    .served_on(Listeners::BrokerAndController)
    .asks(&[Check::new(AclOperation::Alter, ResourceType::Topic)])
    .mirrored_in_gateway();

serve!(async handle);

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: CreatePartitionsRequest,
    _version: i16,
) -> CreatePartitionsResponse {
    let (names, duplicates) = java_hash_sets(req.topics.iter().map(|t| t.name.as_str()));
    let mut results: Vec<CreatePartitionsTopicResult> = duplicates
        .iter()
        .map(|name| {
            result(
                name,
                ErrorCode::INVALID_REQUEST,
                Some("Duplicate topic name."),
            )
        })
        .collect();
    let by_name: HashMap<&str, &CreatePartitionsTopic> =
        req.topics.iter().map(|t| (t.name.as_str(), t)).collect();
    let mut allowed = Vec::new();
    for name in names {
        if authorize(ctx, AclOperation::Alter, ResourceType::Topic, name) {
            if let Some(topic) = by_name.get(name) {
                allowed.push((*topic).clone());
            }
        } else {
            results.push(result(name, ErrorCode::TOPIC_AUTHORIZATION_FAILED, None));
        }
    }
    if allowed.is_empty() {
        return response(results);
    }
    if req.timeout_ms <= 0 {
        let timed_out = req
            .topics
            .iter()
            .map(|t| result(&t.name, ErrorCode::REQUEST_TIMED_OUT, None))
            .collect();
        return response(timed_out);
    }
    results.extend(grow(ctx, allowed, req.validate_only).await);
    response(results)
}

/// The controller's results for the topics left, each accepted one failed with the batch's
/// error when the batch was not written (NOT_CONTROLLER when the controller is gone).
async fn grow(
    ctx: &RequestContext<'_>,
    topics: Vec<CreatePartitionsTopic>,
    validate_only: bool,
) -> Vec<CreatePartitionsTopicResult> {
    let names: Vec<String> = topics.iter().map(|t| t.name.clone()).collect();
    let count = topics.len();
    let ran = ctx
        .server
        .controller
        .run("CreatePartitions", move |c, _now| {
            Ok(c.create_partitions(&topics, validate_only))
        })
        .await;
    let results = match ran {
        Ok(Ok(results)) => results,
        Ok(Err(Refused { error, decided })) => {
            let failed = |name: &str| result(name, error.code, Some(&error.message));
            match decided {
                Some(results) => results
                    .into_iter()
                    .map(|r| {
                        if r.error_code == 0 {
                            failed(&r.name)
                        } else {
                            r
                        }
                    })
                    .collect(),
                None => names.iter().map(|n| failed(n)).collect(),
            }
        }
        Err(e) => names
            .iter()
            .map(|n| result(n, ErrorCode::NOT_CONTROLLER, Some(&e.to_string())))
            .collect(),
    };
    for r in &results {
        info!(
            topic = %capped(&r.name),
            validate_only,
            outcome = ErrorCode::from_code(r.error_code).map_or("UNKNOWN", ErrorCode::name),
            message = r.error_message.as_deref().unwrap_or(""),
            topics = count,
            "CreatePartitions"
        );
    }
    results
}

fn result(name: &str, code: ErrorCode, message: Option<&str>) -> CreatePartitionsTopicResult {
    CreatePartitionsTopicResult {
        name: name.to_owned(),
        error_code: code.code(),
        error_message: message.map(str::to_owned),
        ..Default::default()
    }
}

fn response(results: Vec<CreatePartitionsTopicResult>) -> CreatePartitionsResponse {
    CreatePartitionsResponse {
        throttle_time_ms: 0,
        results,
        ..Default::default()
    }
}

/// The names as Kafka's `ControllerApis.createPartitions` collects them: the names given once
/// and the names given more than once, each in the iteration order of a Java `HashSet<String>`
/// filled in request order (a duplicate's first occurrence goes into the first set and is taken
/// out again, which does not shrink its table).
fn java_hash_sets<'a>(names: impl Iterator<Item = &'a str>) -> (Vec<&'a str>, Vec<&'a str>) {
    let mut first: Vec<&str> = Vec::new();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    let mut twice: Vec<&str> = Vec::new();
    for name in names {
        let n = counts.entry(name).or_insert(0);
        *n += 1;
        match *n {
            1 => first.push(name),
            2 => twice.push(name),
            _ => {}
        }
    }
    let table = java_table_size(first.len());
    let once: Vec<&str> = first.into_iter().filter(|n| counts[n] == 1).collect();
    (
        java_hash_set_order(once, table),
        java_hash_set_order(twice.clone(), java_table_size(twice.len())),
    )
}

/// The authorization matrix's rows of CreatePartitions ([`crate::rpc::authorize`]'s matrix
/// tests): each request with the ACLs that allow it and what an allowed and a refused principal
/// get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    on_every_listener(row!(CreatePartitions 3 on Broker, create_partitions(),
        needs [(Alter, Topic, TOPIC)],
        CreatePartitionsResponse => |r| refusal(r.results[0].error_code, r.results[0].error_message.as_deref()),
        allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED"))
}

#[cfg(test)]
mod tests;
