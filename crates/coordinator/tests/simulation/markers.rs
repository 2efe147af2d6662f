//! The simulated marker writer, as the daemon's marker task (`crates/server/src/runtime/
//! transactions.rs`) writes markers, one action per step so that a crash can fall anywhere:
//! it reads the prepared transactions (answered once durable, so that no marker precedes its
//! decision), writes each partition's marker (a data partition's at once into the data plane;
//! `__consumer_offsets-0`'s as a job of the shard, `complete_transactional_offsets`, waited
//! for), then completes the transaction (`complete_transaction`, waited for). A crash or a
//! failed write stops it; it starts again from the shard's prepared transactions.
use std::collections::VecDeque;

use kcoord_coordinator::transactions::CONSUMER_OFFSETS;
use kcoord_coordinator::{CoordinatorShard, Outcome, PreparedTransaction};

use super::disk::PlantedBug;
use super::model::{Kind, Violation};
use super::node::Ticket;
use super::txn_model::{Entry, Partition, TxnId};
use super::world::World;

/// One action of the marker writer for a transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Action {
    Marker(Partition),
    Complete,
}

/// A prepared transaction, named as the producers name it, with its actions in order.
#[derive(Debug, Clone)]
pub struct Job {
    txn: PreparedTransaction,
    id: TxnId,
    actions: Vec<Action>,
}

#[derive(Debug, Default)]
pub enum Writer {
    #[default]
    Idle,
    /// The read of the prepared transactions, answered once what it read is durable.
    Reading(Ticket, Vec<Job>),
    /// Writing the first job's actions from `next`; `wait` is a job of the shard whose answer
    /// it waits for before going on.
    Writing {
        jobs: VecDeque<Job>,
        next: usize,
        wait: Option<Ticket>,
    },
}

impl Writer {
    pub fn is_idle(&self) -> bool {
        matches!(self, Writer::Idle)
    }

    /// Whether `ticket` is the writer's.
    pub fn owns(&self, ticket: Ticket) -> bool {
        match self {
            Writer::Reading(t, _) => *t == ticket,
            Writer::Writing { wait, .. } => *wait == Some(ticket),
            Writer::Idle => false,
        }
    }
}

/// The prepared transactions, each with its name and actions.
fn prepared(shard: &CoordinatorShard, bug: PlantedBug) -> Vec<Job> {
    let prepared = shard.prepared_transactions().into_iter();
    prepared
        .map(|txn| {
            let start = shard
                .transaction(&txn.transactional_id)
                .map_or(-1, |t| t.txn_start_timestamp);
            let mut actions: Vec<Action> =
                txn.partitions.iter().cloned().map(Action::Marker).collect();
            actions.push(Action::Complete);
            if bug == PlantedBug::CompletesBeforeLastMarker && actions.len() >= 2 {
                let last = actions.len() - 1;
                actions.swap(last - 1, last);
            }
            Job {
                id: (txn.transactional_id.clone(), start),
                txn,
                actions,
            }
        })
        .collect()
}

impl World {
    /// The marker writer's next action (none while it waits for the shard).
    pub(super) fn markers_step(&mut self) -> Result<String, Violation> {
        let bug = self.txn.bug;
        match &mut self.txn.writer {
            Writer::Idle => {
                if self
                    .node
                    .shard()
                    .state()
                    .transactions
                    .prepared()
                    .next()
                    .is_none()
                {
                    return Ok(" -> nothing prepared".into());
                }
                let (jobs, ticket) = self
                    .node
                    .call(|shard, _| Outcome::answer(prepared(shard, bug)))
                    .map_err(|e| Violation::new(Kind::RuntimeRefused, e))?;
                let what = format!(" -> read {} prepared", jobs.len());
                if bug == PlantedBug::MarksUndurableDecisions {
                    self.writing(jobs)?;
                } else {
                    self.txn.writer = Writer::Reading(ticket, jobs);
                }
                Ok(what)
            }
            Writer::Writing {
                jobs,
                next,
                wait: None,
            } => {
                let job = jobs.front().cloned().expect("a writer with no job is idle");
                let action = job.actions[*next].clone();
                self.act(&job, &action)
            }
            Writer::Reading(..) | Writer::Writing { .. } => Ok(" -> waiting".into()),
        }
    }

    /// The read was answered: the decisions it read are durable, and known.
    fn writing(&mut self, jobs: Vec<Job>) -> Result<(), Violation> {
        for job in &jobs {
            self.txn
                .model
                .decided(&job.id, job.txn.commit, "the marker writer's read")?;
        }
        self.txn.writer = if jobs.is_empty() {
            Writer::Idle
        } else {
            Writer::Writing {
                jobs: jobs.into(),
                next: 0,
                wait: None,
            }
        };
        Ok(())
    }

    fn act(&mut self, job: &Job, action: &Action) -> Result<String, Violation> {
        let txn = &job.txn;
        let call = match action {
            Action::Marker(p) if p.0 != CONSUMER_OFFSETS => {
                self.marker_written(job, p)?;
                self.advance_writer();
                return Ok(format!(
                    " -> marker {p:?} of {:?} commit={}",
                    job.id, txn.commit
                ));
            }
            Action::Marker(_) => {
                let (producer_id, commit) = (txn.producer_id, txn.commit);
                self.node.call(|shard, _| {
                    shard
                        .complete_transactional_offsets(producer_id, commit)
                        .map(|_| ())
                })
            }
            Action::Complete => self
                .node
                .call(|shard, now| shard.complete_transaction(txn, now).map(|_| ())),
        };
        let ((), ticket) = call.map_err(|e| Violation::new(Kind::RuntimeRefused, e))?;
        if let Writer::Writing { wait, .. } = &mut self.txn.writer {
            *wait = Some(ticket);
        }
        Ok(format!(" -> {action:?} of {:?} (ticket {ticket})", job.id))
    }

    /// A marker reached `partition`.
    fn marker_written(&mut self, job: &Job, partition: &Partition) -> Result<(), Violation> {
        let txn = &job.txn;
        self.txn.model.decided(&job.id, txn.commit, "a marker")?;
        self.txn.plane.marker(
            partition,
            Entry::Marker {
                txn: job.id.clone(),
                producer_id: txn.producer_id,
                producer_epoch: txn.producer_epoch,
                commit: txn.commit,
                version: txn.transaction_version,
            },
        )
    }

    /// The current action is done: on to the next one, or the next transaction.
    fn advance_writer(&mut self) {
        let Writer::Writing { jobs, next, wait } = &mut self.txn.writer else {
            return;
        };
        *wait = None;
        *next += 1;
        if jobs.front().is_some_and(|job| *next >= job.actions.len()) {
            jobs.pop_front();
            *next = 0;
            self.stats.txns_completed += 1;
        }
        if jobs.is_empty() {
            self.txn.writer = Writer::Idle;
        }
    }

    /// The writer's job was answered (acknowledged) or refused.
    pub(super) fn writer_answered(&mut self, acknowledged: bool) -> Result<(), Violation> {
        if !acknowledged {
            self.txn.writer = Writer::Idle;
            return Ok(());
        }
        match std::mem::take(&mut self.txn.writer) {
            Writer::Reading(_, jobs) => self.writing(jobs),
            Writer::Writing { jobs, next, wait } => {
                let job = jobs.front().cloned().expect("a writer with no job is idle");
                self.txn.writer = Writer::Writing { jobs, next, wait };
                if let Action::Marker(p) = &job.actions[next] {
                    self.marker_written(&job, p)?;
                }
                self.advance_writer();
                Ok(())
            }
            Writer::Idle => Ok(()),
        }
    }

    /// The process died: the writer's progress, in memory, is gone.
    pub(super) fn writer_crashed(&mut self) {
        if !self.txn.writer.is_idle() {
            self.stats.writer_interrupted += 1;
        }
        self.txn.writer = Writer::Idle;
    }
}
