//! In gateway mode with `gateway.authentication=local`, kcoord checks SCRAM logins on its own
//! listeners against credentials it keeps itself. They are kept in the upstream cluster, not on
//! the node: a compacted topic (`gateway.credentials.topic`, one partition) holds one record per
//! user and mechanism, so every kcoord node knows every user, a node started on an empty disk
//! knows them all, and no node keeps anything of its own.
//!
//! A record's key is the type of a SCRAM credential record (a big-endian i16) before the user
//! and mechanism (a RemoveUserScramCredentialRecord v0); its value the record's version before
//! the UserScramCredentialRecord (salt, keys, iterations: never the password), and a deletion
//! a null value, so the cluster's log cleaner keeps the latest of each key, as it does for the
//! coordinator logs ([`super::upstream_log`]).
//!
//! The partition's order is the truth. AlterUserScramCredentials is decided by the controller
//! against what it knows (the checks and results of standalone mode), and its records are
//! written to the partition, not to the controller. Each node follows the partition
//! ([`UpstreamCredentials::follow`]) and hands the controller what it reads, as changes against
//! the credentials it holds, so nodes that altered the same user at once end with the same
//! credential (the later in the partition). The node that wrote answers once it has read its
//! own write back: a client that created a user logs in with it at once on that node.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use kcoord_client::{
    Client, ClientError, Consumer, FetchOptions, ProducedRecord, Producer, ProducerConfig,
};
use kcoord_controller::{Controller, Outcome};
use kcoord_metadata::{LogRecord, Record, RecordAndVersion, RecordError};
use kcoord_wire::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kcoord_wire::messages::AlterUserScramCredentialsRequest;
use kcoord_wire::records::{RemoveUserScramCredentialRecord, UserScramCredentialRecord};
use kcoord_wire::ErrorCode;
use tokio::sync::watch;
use tracing::{debug, warn};

use super::controller::{ControllerHandle, ControllerUnavailable};
use super::upstream_log;

/// The only partition of the credentials topic.
const PARTITION: i32 = 0;

/// How long the node that wrote a change waits to read it back before answering anyway (the
/// change is in the cluster: every node applies it once it reads that far).
const READ_BACK: Duration = Duration::from_secs(10);

/// The wait between two reads of the partition when one failed.
const RETRY: Duration = Duration::from_secs(1);

/// Why the credentials topic could not be used.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    #[error("the upstream cluster: {0}")]
    Upstream(#[from] ClientError),
    #[error("a SCRAM credential record: {0}")]
    Record(#[from] RecordError),
    #[error("the controller refused the credentials read from the cluster: {0}")]
    Refused(String),
    #[error("the controller is not available")]
    Controller(#[from] ControllerUnavailable),
}

/// The credentials topic: where a node writes its changes and reads everyone's.
#[derive(Debug)]
pub struct UpstreamCredentials {
    client: Client,
    topic: String,
    producer: Producer,
    /// The next offset of the partition the controller has been given.
    read_to: watch::Sender<i64>,
}

/// What a user and mechanism now have: a credential, or none (deleted).
type Latest = BTreeMap<(String, i8), Option<UserScramCredentialRecord>>;

impl UpstreamCredentials {
    /// Makes sure the topic exists (compacted, one partition, `replication_factor` or the
    /// cluster's default for -1).
    pub async fn open(
        client: Client,
        topic: &str,
        replication_factor: i16,
    ) -> Result<UpstreamCredentials, CredentialsError> {
        upstream_log::create_compacted(&client, topic, 1, replication_factor).await?;
        let producer = Producer::new(client.clone(), ProducerConfig::default())?;
        Ok(UpstreamCredentials {
            client,
            topic: topic.to_owned(),
            producer,
            read_to: watch::Sender::new(0),
        })
    }

    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// Reads the whole partition and makes the controller's credentials what it says: before
    /// the listeners open, so no login is checked without them.
    pub async fn load(&self, controller: &ControllerHandle) -> Result<(), CredentialsError> {
        let consumer = Consumer::new(self.client.clone());
        let (start, end) = upstream_log::once_propagated(|| {
            upstream_log::bounds(&consumer, &self.topic, PARTITION)
        })
        .await?;
        let mut latest = Latest::new();
        let mut position = start.max(0);
        while position < end {
            let (read, next) = self.read(&consumer, position, 0).await?;
            latest.extend(read);
            if next <= position {
                break;
            }
            position = next;
        }
        apply(controller, latest, true).await?;
        self.read_to.send_replace(position);
        debug!(topic = %self.topic, offset = position, "read kcoord's SCRAM credentials from the cluster");
        Ok(())
    }

    /// Follows the partition from where [`UpstreamCredentials::load`] stopped, handing the
    /// controller every change, until `stop` turns true or the controller stops. A failed read
    /// is handed to `log` and retried a second later; a position the cluster no longer has
    /// reads the whole partition again.
    pub async fn follow(
        &self,
        controller: ControllerHandle,
        mut stop: watch::Receiver<bool>,
        log: impl Fn(&CredentialsError),
    ) {
        let consumer = Consumer::new(self.client.clone());
        loop {
            let step = tokio::select! {
                _ = crate::support::shutdown::stopped(&mut stop) => return,
                step = self.follow_once(&controller, &consumer) => step,
            };
            match step {
                Ok(()) => {}
                Err(CredentialsError::Controller(_)) => return,
                Err(e) => {
                    log(&e);
                    tokio::time::sleep(RETRY).await;
                }
            }
        }
    }

    /// One read from where the controller has been given the partition to, applied.
    async fn follow_once(
        &self,
        controller: &ControllerHandle,
        consumer: &Consumer,
    ) -> Result<(), CredentialsError> {
        let position = *self.read_to.borrow();
        match self.read(consumer, position, 500).await {
            Ok((latest, next)) => {
                apply(controller, latest, false).await?;
                self.read_to.send_replace(next);
                Ok(())
            }
            Err(CredentialsError::Upstream(e))
                if e.error_code() == Some(ErrorCode::OFFSET_OUT_OF_RANGE) =>
            {
                self.load(controller).await
            }
            Err(e) => Err(e),
        }
    }

    /// One fetch from `position`: the latest of each key it read, and where the next starts.
    async fn read(
        &self,
        consumer: &Consumer,
        position: i64,
        max_wait_ms: i32,
    ) -> Result<(Latest, i64), CredentialsError> {
        let options = FetchOptions {
            max_wait_ms,
            ..FetchOptions::default()
        };
        let fetched = consumer
            .fetch(&self.topic, PARTITION, position, &options)
            .await?;
        let mut latest = Latest::new();
        let mut skipped: Option<(i64, String, usize)> = None;
        for record in fetched.records {
            match decode(record.key, record.value) {
                Ok((key, credential)) => {
                    latest.insert(key, credential);
                }
                // Not a credential, so no user's: passed over (one line per read), rather than
                // holding every later change up behind it.
                Err(why) => match &mut skipped {
                    Some((_, _, count)) => *count += 1,
                    None => skipped = Some((record.offset, why, 1)),
                },
            }
        }
        if let Some((offset, why, count)) = skipped {
            warn!(topic = %self.topic, offset, count, reason = %why, "passed over records that are not kcoord SCRAM credentials");
        }
        Ok((latest, fetched.next_offset.max(position)))
    }

    /// AlterUserScramCredentials: decided by the controller, written to the cluster, answered
    /// once this node has read it back (or [`READ_BACK`] has passed). A failed write answers
    /// every user the decision accepted with NOT_CONTROLLER, which Kafka's admin client retries.
    pub async fn alter(
        &self,
        controller: &ControllerHandle,
        request: AlterUserScramCredentialsRequest,
    ) -> Result<Vec<AlterUserScramCredentialsResult>, ControllerUnavailable> {
        let decided = controller
            .read(move |c| c.alter_scram_credentials(&request))
            .await?;
        if decided.records.is_empty() {
            return Ok(decided.response);
        }
        match self.write(&decided.records).await {
            Ok(()) => Ok(decided.response),
            Err(e) => {
                warn!(topic = %self.topic, error = %e, "cannot write SCRAM credentials to the cluster; nothing was changed");
                let message = format!("kcoord could not write the credentials to the cluster: {e}");
                Ok(decided
                    .response
                    .into_iter()
                    .map(|r| refused(r, &message))
                    .collect())
            }
        }
    }

    /// Writes `records` to the partition and waits until this node has read them back.
    async fn write(&self, records: &[RecordAndVersion]) -> Result<(), CredentialsError> {
        let produced = records.iter().map(encode).collect::<Result<Vec<_>, _>>()?;
        let sent = self
            .producer
            .send(&self.topic, PARTITION, &produced)
            .await?;
        let through = sent.base_offset + produced.len() as i64;
        let mut read_to = self.read_to.subscribe();
        let caught_up = read_to.wait_for(|next| *next >= through);
        // Written is written: a slow read-back delays the answer, never fails it.
        let _ = tokio::time::timeout(READ_BACK, caught_up).await;
        Ok(())
    }
}

/// A result the decision accepted, refused because the write failed.
fn refused(
    mut result: AlterUserScramCredentialsResult,
    message: &str,
) -> AlterUserScramCredentialsResult {
    if result.error_code == 0 {
        result.error_code = ErrorCode::NOT_CONTROLLER.code();
        result.error_message = Some(message.to_owned());
    }
    result
}

/// Hands the controller the changes `latest` makes to its credentials: those it lacks or
/// holds otherwise, and the removal of those `latest` deleted. With `whole`, `latest` is every
/// credential there is, and any other the controller holds goes too.
async fn apply(
    controller: &ControllerHandle,
    latest: Latest,
    whole: bool,
) -> Result<(), CredentialsError> {
    if latest.is_empty() && !whole {
        return Ok(());
    }
    let applied = controller
        .run("SCRAM credentials from the cluster", move |c, _| {
            Ok(Outcome {
                records: changes(c, &latest, whole),
                response: (),
                effects: Vec::new(),
            })
        })
        .await?;
    applied.map_err(|refused| CredentialsError::Refused(refused.error.message))
}

/// The records that make `controller`'s credentials agree with `latest`.
fn changes(controller: &Controller, latest: &Latest, whole: bool) -> Vec<RecordAndVersion> {
    let security = &controller.state().security;
    let mut records = Vec::new();
    for ((name, mechanism), credential) in latest {
        let held = security.credential(name, *mechanism);
        match (credential, held) {
            (Some(wanted), held) if held != Some(wanted) => {
                records.push(Record::UserScramCredential(wanted.clone()).at_latest_version());
            }
            (None, Some(_)) => records.push(removal(name, *mechanism)),
            _ => {}
        }
    }
    if whole {
        for held in security.credentials() {
            if !latest.contains_key(&(held.name.clone(), held.mechanism)) {
                records.push(removal(&held.name, held.mechanism));
            }
        }
    }
    records
}

fn removal(name: &str, mechanism: i8) -> RecordAndVersion {
    Record::RemoveUserScramCredential(RemoveUserScramCredentialRecord {
        name: name.to_owned(),
        mechanism,
        ..Default::default()
    })
    .at_latest_version()
}

/// The record type every key starts with.
const KEY_TYPE: i16 = UserScramCredentialRecord::API_KEY;

/// A credential record as the topic stores it.
fn encode(record: &RecordAndVersion) -> Result<ProducedRecord, RecordError> {
    let (name, mechanism, value) = match &record.record {
        Record::UserScramCredential(r) => {
            let (_, version, _, value) = record.record.encode_version(record.version)?;
            (
                &r.name,
                r.mechanism,
                Some((version, value.unwrap_or_default())),
            )
        }
        Record::RemoveUserScramCredential(r) => (&r.name, r.mechanism, None),
        other => {
            return Err(RecordError::UnknownType(other.record_type()));
        }
    };
    let key_record = Record::RemoveUserScramCredential(RemoveUserScramCredentialRecord {
        name: name.clone(),
        mechanism,
        ..Default::default()
    });
    let (_, _, _, key) = key_record.encode_version(0)?;
    let key = key.unwrap_or_default();
    Ok(match value {
        Some((version, value)) => upstream_log::stored(KEY_TYPE, version, &key, Some(&value)),
        None => upstream_log::stored(KEY_TYPE, 0, &key, None),
    })
}

/// A stored record as the user and mechanism it is about and their credential (none: deleted).
fn decode(
    key: Option<Bytes>,
    value: Option<Bytes>,
) -> Result<((String, i8), Option<UserScramCredentialRecord>), String> {
    let (record_type, version, key, value) = upstream_log::decode(key, value)?;
    if record_type != KEY_TYPE {
        return Err("a key of another record type".to_owned());
    }
    let key = key.unwrap_or_default();
    let who = match metadata_record(RemoveUserScramCredentialRecord::API_KEY, 0, key)? {
        Record::RemoveUserScramCredential(r) => (r.name, r.mechanism),
        _ => return Err("a key that is not a user and mechanism".to_owned()),
    };
    let Some(value) = value else {
        return Ok((who, None));
    };
    match metadata_record(KEY_TYPE, version, value)? {
        Record::UserScramCredential(r) if (r.name.clone(), r.mechanism) == who => {
            Ok((who, Some(r)))
        }
        _ => Err("a credential of another user or mechanism than its key".to_owned()),
    }
}

fn metadata_record(record_type: i16, version: i16, bytes: Bytes) -> Result<Record, String> {
    Record::decode(&LogRecord {
        offset: 0,
        record_type,
        version,
        key: None,
        value: Some(bytes),
    })
    .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests;
