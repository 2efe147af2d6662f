//! A transactional producer (a [`ProducerConfig::transactional_id`]), as Kafka's Java producer
//! runs one with transaction version 1: [`Producer::init_transactions`] gets the id's producer
//! id and a bumped epoch from its transaction coordinator (which fences every earlier producer
//! of the same transactional id and aborts its open transaction), each partition a
//! transaction writes to is added with AddPartitionsToTxn before its first batch, and
//! [`Producer::commit_transaction`] / [`Producer::abort_transaction`] end it with EndTxn.
//!
//! Versions stop at AddPartitionsToTxn v3 and EndTxn v4 (the client forms of transaction
//! version 1, which every broker from 0.11 on serves), so the same code runs against a
//! Kafka 3.x cluster and a 4.x one.
//!
//! A fenced producer (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH) gets the error back and stays
//! fenced: only a new [`Producer::init_transactions`] makes it usable, and that fences whoever
//! took the id over.

use kcoord_wire::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kcoord_wire::messages::{
    AddPartitionsToTxnRequest, EndTxnRequest, FindCoordinatorRequest, InitProducerIdRequest,
};
use kcoord_wire::{ErrorCode, Request};
use tracing::debug;

use super::{Producer, ProducerIdentity, State};
use crate::connection::Connection;
use crate::error::ClientError;

/// FindCoordinator's key type of a transactional id.
const KEY_TYPE_TRANSACTION: i8 = 1;
/// The last AddPartitionsToTxn version a client sends (v4 on are the brokers' batched form).
const ADD_PARTITIONS_CLIENT_MAX: i16 = 3;
/// EndTxn v5 is transaction version 2 (the epoch bumped at every commit).
const END_TXN_V1_MAX: i16 = 4;
/// FindCoordinator v4 batches the keys.
const FIND_COORDINATOR_BATCHED: i16 = 4;
/// How many times a transaction request is tried while its answer says "later" (an ending
/// transaction, a coordinator loading or moving): about a minute with the backoff's cap.
const TRANSACTION_RETRIES: u32 = 60;

impl Producer {
    /// Gets the transactional id's producer id with a bumped epoch, fencing every earlier
    /// producer of the id (its open transaction is aborted first: the coordinator answers
    /// CONCURRENT_TRANSACTIONS until then, which is retried).
    pub async fn init_transactions(&self) -> Result<ProducerIdentity, ClientError> {
        let transactional_id = self.transactional_id()?;
        let mut state = self.state.lock().await;
        let timeout_ms =
            i32::try_from(self.config.transaction_timeout.as_millis()).unwrap_or(i32::MAX);
        let response = self
            .with_transaction_coordinator(|conn| {
                let request = InitProducerIdRequest {
                    transactional_id: Some(transactional_id.to_owned()),
                    transaction_timeout_ms: timeout_ms,
                    producer_id: -1,
                    producer_epoch: -1,
                    ..Default::default()
                };
                async move {
                    let response = conn.send_negotiated(request).await?;
                    ClientError::check(InitProducerIdRequest::KEY, response.error_code, None)?;
                    Ok(response)
                }
            })
            .await?;
        let identity = ProducerIdentity {
            producer_id: response.producer_id,
            producer_epoch: response.producer_epoch,
        };
        debug!(
            transactional_id,
            producer_id = identity.producer_id,
            epoch = identity.producer_epoch,
            "transactional producer initialized"
        );
        *state = State {
            identity: Some(identity),
            ..State::default()
        };
        Ok(identity)
    }

    /// Commits the open transaction (nothing to do when it wrote nothing).
    pub async fn commit_transaction(&self) -> Result<(), ClientError> {
        self.end_transaction(true).await
    }

    /// Aborts the open transaction (nothing to do when it wrote nothing).
    pub async fn abort_transaction(&self) -> Result<(), ClientError> {
        self.end_transaction(false).await
    }

    async fn end_transaction(&self, committed: bool) -> Result<(), ClientError> {
        let transactional_id = self.transactional_id()?;
        let mut state = self.state.lock().await;
        if state.in_transaction.is_empty() {
            return Ok(());
        }
        let identity = state.identity.ok_or_else(not_initialized)?;
        self.with_transaction_coordinator(|conn| {
            let request = EndTxnRequest {
                transactional_id: transactional_id.to_owned(),
                producer_id: identity.producer_id,
                producer_epoch: identity.producer_epoch,
                committed,
                ..Default::default()
            };
            async move {
                let version = conn
                    .negotiated_version::<EndTxnRequest>()
                    .await?
                    .min(END_TXN_V1_MAX);
                let response = conn.send(request, version).await?;
                ClientError::check(EndTxnRequest::KEY, response.error_code, None)
            }
        })
        .await?;
        state.in_transaction.clear();
        Ok(())
    }

    /// Adds `topic`-`partition` to the open transaction unless it is in it already.
    pub(super) async fn add_to_transaction(
        &self,
        state: &mut State,
        topic: &str,
        partition: i32,
        identity: ProducerIdentity,
    ) -> Result<(), ClientError> {
        let key = (topic.to_owned(), partition);
        if state.in_transaction.contains(&key) {
            return Ok(());
        }
        let transactional_id = self.transactional_id()?;
        self.with_transaction_coordinator(|conn| {
            let request = AddPartitionsToTxnRequest {
                v3_and_below_transactional_id: transactional_id.to_owned(),
                v3_and_below_producer_id: identity.producer_id,
                v3_and_below_producer_epoch: identity.producer_epoch,
                v3_and_below_topics: vec![AddPartitionsToTxnTopic {
                    name: topic.to_owned(),
                    partitions: vec![partition],
                    ..Default::default()
                }],
                ..Default::default()
            };
            async move {
                let version = conn
                    .negotiated_version::<AddPartitionsToTxnRequest>()
                    .await?
                    .min(ADD_PARTITIONS_CLIENT_MAX);
                let response = conn.send(request, version).await?;
                ClientError::check(AddPartitionsToTxnRequest::KEY, response.error_code, None)?;
                for result in response
                    .results_by_topic_v3_and_below
                    .iter()
                    .flat_map(|t| &t.results_by_partition)
                {
                    ClientError::check(
                        AddPartitionsToTxnRequest::KEY,
                        result.partition_error_code,
                        None,
                    )?;
                }
                Ok(())
            }
        })
        .await?;
        state.in_transaction.insert(key);
        Ok(())
    }

    fn transactional_id(&self) -> Result<&str, ClientError> {
        self.config.transactional_id.as_deref().ok_or_else(|| {
            ClientError::InvalidArgument("the producer has no transactional.id".to_string())
        })
    }

    /// Runs `call` against the transactional id's coordinator, looking it up again when it
    /// moved, and retrying while the answer says to come back later.
    async fn with_transaction_coordinator<T, F, Fut>(&self, call: F) -> Result<T, ClientError>
    where
        F: Fn(Connection) -> Fut,
        Fut: std::future::Future<Output = Result<T, ClientError>>,
    {
        let mut retries = 0;
        loop {
            let outcome = match self.transaction_coordinator().await {
                Ok(conn) => call(conn).await,
                Err(e) => Err(e),
            };
            match outcome {
                Err(e) if retries < TRANSACTION_RETRIES && comes_back_later(&e) => {
                    retries += 1;
                    debug!(error = %e, retries, "retrying a transaction request");
                    tokio::time::sleep(self.backoff(retries)).await;
                }
                outcome => return outcome,
            }
        }
    }

    /// A connection to the transactional id's coordinator (FindCoordinator, key type 1).
    async fn transaction_coordinator(&self) -> Result<Connection, ClientError> {
        let transactional_id = self.transactional_id()?;
        let conn = self.client.bootstrap_connection().await?;
        let version = conn.negotiated_version::<FindCoordinatorRequest>().await?;
        let api = FindCoordinatorRequest::KEY;
        let (host, port) = if version >= FIND_COORDINATOR_BATCHED {
            let request = FindCoordinatorRequest {
                key_type: KEY_TYPE_TRANSACTION,
                coordinator_keys: vec![transactional_id.to_owned()],
                ..Default::default()
            };
            let response = conn.send(request, version).await?;
            let found = response
                .coordinators
                .into_iter()
                .find(|c| c.key == transactional_id)
                .ok_or_else(|| {
                    ClientError::Protocol(format!(
                        "FindCoordinator v{version} response has no entry for {transactional_id:?}"
                    ))
                })?;
            ClientError::check(api, found.error_code, found.error_message.as_deref())?;
            (found.host, found.port)
        } else {
            let request = FindCoordinatorRequest {
                key: transactional_id.to_owned(),
                key_type: KEY_TYPE_TRANSACTION,
                ..Default::default()
            };
            let response = conn.send(request, version).await?;
            ClientError::check(api, response.error_code, response.error_message.as_deref())?;
            (response.host, response.port)
        };
        self.client.connection_to(&host, port).await
    }
}

fn not_initialized() -> ClientError {
    ClientError::InvalidArgument("init_transactions was not called".to_string())
}

/// The answers Kafka's producer retries on a transaction request: a transaction still ending
/// (CONCURRENT_TRANSACTIONS), a coordinator loading, moving or unreachable.
fn comes_back_later(error: &ClientError) -> bool {
    error.is_retriable() || error.error_code() == Some(ErrorCode::CONCURRENT_TRANSACTIONS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fencing_is_final_and_an_ending_transaction_is_waited_for() {
        let error = |code: ErrorCode| ClientError::Kafka {
            api: EndTxnRequest::KEY,
            code: code.code(),
            message: None,
        };
        assert!(comes_back_later(&error(ErrorCode::CONCURRENT_TRANSACTIONS)));
        assert!(comes_back_later(&error(ErrorCode::NOT_COORDINATOR)));
        assert!(!comes_back_later(&error(ErrorCode::PRODUCER_FENCED)));
        assert!(!comes_back_later(&error(ErrorCode::INVALID_PRODUCER_EPOCH)));
    }
}
