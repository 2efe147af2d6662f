//! The transactional producers' requests, run as the daemon runs them (`crates/server/src/rpc/
//! apis/{init_producer_id,add_partitions_to_txn,add_offsets_to_txn,txn_offset_commit,
//! end_txn}.rs`), each a job of the node answered once durable; what their acknowledged
//! answers tell the producers and the model; and the checks of the model. EndTxn is in
//! `endings.rs`.
use std::collections::BTreeMap;

use kcoord_coordinator::commits::OffsetToCommit;
use kcoord_coordinator::transactions::{
    EndTxnResult, InitProducerId, InitProducerIdResult, CONSUMER_OFFSETS,
};
use kcoord_coordinator::txn_offsets::TxnOffsetCommit;
use kcoord_coordinator::{CoordinatorError, CoordinatorShard};
use kcoord_metadata::LogState;
use kcoord_wire::ErrorCode;
use rand::rngs::StdRng;
use rand::Rng;

use super::disk::PlantedBug;
use super::markers::Writer;
use super::model::{Kind, Violation};
use super::node::Ticket;
use super::producers::{self, offsets_partition, Producer, TxnStep, TXN_GROUP};
use super::steps::Step;
use super::txn_model::{DataPlane, Partition, TxnId, TxnModel};
use super::world::World;

/// Everything of a run that is about transactions.
#[derive(Debug, Default)]
pub struct Txns {
    pub enabled: bool,
    pub bug: PlantedBug,
    pub producers: Vec<Producer>,
    pub writer: Writer,
    pub plane: DataPlane,
    pub model: TxnModel,
    waiting: BTreeMap<Ticket, Request>,
    /// The controller's producer id allocator: never hands out an id twice, crashes or not.
    next_producer_id: i64,
}

impl Txns {
    pub fn new(enabled: bool, bug: PlantedBug, seed: u64, rng: &mut StdRng) -> Txns {
        Txns {
            enabled,
            bug,
            producers: if enabled {
                Producer::all(rng, seed)
            } else {
                Vec::new()
            },
            next_producer_id: 1_000,
            ..Default::default()
        }
    }
}

/// A producer's request waiting for its answer.
#[derive(Debug)]
pub(super) enum Request {
    Init(usize, InitProducerIdResult),
    Add(usize, (i64, i16), Vec<Partition>, ErrorCode, TxnId),
    Verify(usize, Vec<(&'static str, i32)>, ErrorCode),
    Commit(usize, Vec<i64>, Result<Vec<ErrorCode>, CoordinatorError>),
    End(usize, (i64, i16), bool, EndTxnResult, TxnId),
}

/// The transaction the coordinator holds for `id` at `now` (a new one starts at `now`).
pub(super) fn current_txn(shard: &CoordinatorShard, id: &str, now: i64) -> TxnId {
    let start = shard.transaction(id).map_or(now, |t| {
        if t.state.is_idle() {
            now
        } else {
            t.txn_start_timestamp
        }
    });
    (id.to_owned(), start)
}

/// The committed offsets of the transactional group.
pub fn txn_group_offsets(state: &LogState) -> BTreeMap<Partition, i64> {
    let group = state.offsets.iter().find(|(g, _)| *g == TXN_GROUP);
    group
        .into_iter()
        .flat_map(|(_, offsets)| offsets.iter())
        .map(|((topic, partition), committed)| ((topic.clone(), *partition), committed.offset))
        .collect()
}

impl World {
    /// Every producer instance speaks transaction version 1, whatever the seed drew (before
    /// the first step).
    pub fn speak_version_one(&mut self) {
        for p in &mut self.txn.producers {
            p.version = 1;
        }
    }

    pub(super) fn run_txn(&mut self, step: &TxnStep) -> Result<String, Violation> {
        let what = match step {
            TxnStep::Markers => return self.markers_step(),
            TxnStep::Init { producer } => self.init_producer(*producer)?,
            TxnStep::Add {
                producer,
                partitions,
            } => self.add_partitions(*producer, partitions.clone())?,
            TxnStep::CommitOffsets {
                producer,
                partitions,
            } => self.verify_offsets(*producer, partitions.clone())?,
            TxnStep::EndTxn { producer, commit } => self.end_txn(*producer, *commit)?,
        };
        Ok(what)
    }

    pub(super) fn call<R>(
        &mut self,
        handler: impl FnOnce(&CoordinatorShard, i64) -> kcoord_coordinator::Outcome<R>,
    ) -> Result<(R, Ticket), Violation> {
        self.node
            .call(handler)
            .map_err(|e| Violation::new(Kind::RuntimeRefused, e))
    }

    pub(super) fn wait(&mut self, producer: usize, ticket: Ticket, request: Request) {
        self.txn.producers[producer].waiting = true;
        self.txn.waiting.insert(ticket, request);
    }

    fn init_producer(&mut self, producer: usize) -> Result<String, Violation> {
        let p = &self.txn.producers[producer];
        let mut req = InitProducerId {
            transactional_id: p.transactional_id,
            transaction_timeout_ms: p.timeout_ms,
            expected: None,
            fresh_producer_id: None,
        };
        loop {
            let (result, ticket) = self.call(|s, now| s.init_producer_id(&req, now))?;
            if result == InitProducerIdResult::NeedsProducerId && req.fresh_producer_id.is_none() {
                req.fresh_producer_id = Some(self.allocate_producer_id());
                continue;
            }
            self.wait(producer, ticket, Request::Init(producer, result));
            return Ok(format!(
                " p{producer} {} -> {result:?}",
                req.transactional_id
            ));
        }
    }

    /// A producer id from the controller's allocator.
    pub(super) fn allocate_producer_id(&mut self) -> i64 {
        self.txn.next_producer_id += 1;
        self.txn.next_producer_id
    }

    fn add_partitions(
        &mut self,
        producer: usize,
        partitions: Vec<Partition>,
    ) -> Result<String, Violation> {
        // The clock moves before every AddPartitionsToTxn: a transaction's start names it.
        let ticked = self.advance(1)?;
        let p = &self.txn.producers[producer];
        let (id, ids) = (p.transactional_id, p.ids.expect("an initialized producer"));
        let version = p.client_version();
        let ((code, txn), ticket) = self.call(|s, now| {
            let txn = current_txn(s, id, now);
            s.add_partitions_to_transaction(id, ids.0, ids.1, &partitions, version, now)
                .map(|code| (code, txn))
        })?;
        let what = format!(" p{producer} {id}@{ids:?} {partitions:?} -> {code:?}{ticked}");
        self.wait(
            producer,
            ticket,
            Request::Add(producer, ids, partitions, code, txn),
        );
        Ok(what)
    }

    /// TxnOffsetCommit's first half: the transaction must hold the group's shard.
    fn verify_offsets(
        &mut self,
        producer: usize,
        partitions: Vec<(&'static str, i32)>,
    ) -> Result<String, Violation> {
        let p = &self.txn.producers[producer];
        let (id, (pid, epoch)) = (p.transactional_id, p.ids.expect("an initialized producer"));
        let (codes, ticket) = self.call(|s, _| {
            let codes = s.verify_partitions_in_transaction(id, pid, epoch, &[offsets_partition()]);
            kcoord_coordinator::Outcome::answer(codes)
        })?;
        let code = codes.first().copied().unwrap_or(ErrorCode::NONE);
        self.wait(
            producer,
            ticket,
            Request::Verify(producer, partitions, code),
        );
        Ok(format!(" p{producer} {id} verify -> {code:?}"))
    }

    /// TxnOffsetCommit's second half, once the verification was answered: the commit on the
    /// group's shard (generation -1: a simple group).
    fn commit_offsets(
        &mut self,
        producer: usize,
        partitions: &[(&'static str, i32)],
    ) -> Result<(), Violation> {
        let p = &self.txn.producers[producer];
        let (Some((pid, _)), Some(txn)) = (p.ids, p.txn.clone()) else {
            self.txn.producers[producer].waiting = false;
            return Ok(());
        };
        let mut values = Vec::new();
        let mut offsets = Vec::new();
        for (topic, partition) in partitions {
            self.next_offset_value += 1;
            let value = self.next_offset_value;
            let key = ((*topic).to_owned(), *partition);
            self.txn.model.offset_sent(value, &txn, key);
            values.push(value);
            offsets.push(OffsetToCommit {
                topic: (*topic).into(),
                topic_id: uuid::Uuid::nil(),
                partition: *partition,
                offset: value,
                leader_epoch: -1,
                metadata: None,
            });
        }
        let req = TxnOffsetCommit {
            group_id: TXN_GROUP,
            producer_id: pid,
            member_id: "",
            group_instance_id: None,
            generation_id_or_member_epoch: -1,
            api_version: 4,
            offsets: &offsets,
        };
        let (response, ticket) = self.call(|s, now| s.commit_transactional_offsets(&req, now))?;
        self.wait(
            producer,
            ticket,
            Request::Commit(producer, values, response),
        );
        Ok(())
    }

    /// A ticket that is not a groups client's: a producer's or the marker writer's.
    pub(super) fn txn_answered(
        &mut self,
        ticket: Ticket,
        acknowledged: bool,
    ) -> Result<(), Violation> {
        if self.txn.writer.owns(ticket) {
            return self.writer_answered(acknowledged);
        }
        let Some(request) = self.txn.waiting.remove(&ticket) else {
            return Ok(());
        };
        let producer = match &request {
            Request::Init(p, ..)
            | Request::Add(p, ..)
            | Request::Verify(p, ..)
            | Request::Commit(p, ..)
            | Request::End(p, ..) => *p,
        };
        self.txn.producers[producer].waiting = false;
        if acknowledged {
            self.txn_acknowledged(request)
        } else {
            self.end_lost(&request);
            Ok(())
        }
    }

    fn txn_acknowledged(&mut self, request: Request) -> Result<(), Violation> {
        match request {
            Request::Init(producer, result) => {
                let p = &mut self.txn.producers[producer];
                p.reset();
                if let InitProducerIdResult::Granted {
                    producer_id,
                    producer_epoch,
                } = result
                {
                    p.ids = Some((producer_id, producer_epoch));
                    let id = p.transactional_id;
                    self.txn.model.granted(id, producer_id, producer_epoch);
                }
                Ok(())
            }
            Request::Add(producer, ids, partitions, code, txn) => {
                self.added(producer, ids, &partitions, code, txn)
            }
            Request::Verify(producer, partitions, ErrorCode::NONE) => {
                self.commit_offsets(producer, &partitions)
            }
            Request::Verify(producer, _, _) => {
                self.refused_by_coordinator(producer);
                Ok(())
            }
            Request::Commit(_, values, Ok(codes)) => {
                for (value, code) in values.into_iter().zip(codes) {
                    if code == ErrorCode::NONE {
                        self.stats.txn_offsets += 1;
                        self.txn.model.offset_acknowledged(value);
                    }
                }
                Ok(())
            }
            Request::Commit(producer, _, Err(_)) => {
                self.refused_by_coordinator(producer);
                Ok(())
            }
            Request::End(producer, ids, commit, code, txn) => {
                self.ended(producer, ids, commit, code, txn)
            }
        }
    }

    /// AddPartitionsToTxn answered: accepted, the producer writes a record to each data
    /// partition (the data plane verifies the transaction with its coordinator, KIP-890).
    fn added(
        &mut self,
        producer: usize,
        ids: (i64, i16),
        partitions: &[Partition],
        code: ErrorCode,
        txn: TxnId,
    ) -> Result<(), Violation> {
        match code {
            ErrorCode::NONE => {}
            ErrorCode::CONCURRENT_TRANSACTIONS => return Ok(()),
            _ => {
                self.refused_by_coordinator(producer);
                return Ok(());
            }
        }
        let p = &mut self.txn.producers[producer];
        self.txn
            .model
            .check_not_fenced("AddPartitionsToTxn", p.transactional_id, ids)?;
        if p.txn.as_ref() != Some(&txn) {
            p.end_transaction();
            p.txn = Some(txn.clone());
        }
        p.partitions.extend(partitions.iter().cloned());
        let id = p.transactional_id;
        self.txn.model.added(&txn, partitions);
        for partition in partitions.iter().filter(|p| p.0 != CONSUMER_OFFSETS) {
            let shard = self.node.shard();
            let verified = shard.verify_partitions_in_transaction(
                id,
                ids.0,
                ids.1,
                std::slice::from_ref(partition),
            );
            if verified.first() == Some(&ErrorCode::NONE) {
                self.txn.plane.produce(partition, &txn, ids);
            }
        }
        Ok(())
    }

    /// Fenced, its id unknown or expired, or its transaction aborted under it: the producer
    /// initializes again.
    pub(super) fn refused_by_coordinator(&mut self, producer: usize) {
        self.stats.txn_refused += 1;
        self.txn.producers[producer].reset();
    }

    /// After every step: the transactional group's committed offsets.
    pub(super) fn check_txns(&self) -> Result<(), Violation> {
        if !self.txn.enabled {
            return Ok(());
        }
        let committed = txn_group_offsets(self.node.shard().state());
        self.txn.model.check_committed(&committed)
    }

    /// The end of a run: the writer writes every marker, then every decided transaction must
    /// be complete.
    pub(super) fn finish_txns(&mut self) -> Result<(), Violation> {
        for _ in 0..10_000 {
            self.node.sync(usize::MAX);
            self.deliver()?;
            let prepared = self
                .node
                .shard()
                .state()
                .transactions
                .prepared()
                .next()
                .is_some();
            if !prepared && self.txn.writer.is_idle() {
                let committed = txn_group_offsets(self.node.shard().state());
                return self.txn.model.check_completed(&self.txn.plane, &committed);
            }
            self.markers_step()?;
        }
        let prepared = self.node.shard().prepared_transactions();
        Err(Violation::new(
            Kind::TxnNotCompleted,
            format!("the marker writer does not finish: still prepared {prepared:?}"),
        ))
    }

    /// Half the steps of a run with transactions are theirs (none of a run without: it draws
    /// exactly as before they were simulated); the writer syncs more often, since every
    /// transaction waits for the disk three times or more.
    pub(super) fn draw_txn(&mut self, queued_batches: usize) -> Option<Step> {
        if !self.txn.enabled || self.rng.random_ratio(1, 2) {
            return None;
        }
        if queued_batches > 0 && self.rng.random_ratio(1, 5) {
            return Some(Step::Sync {
                batches: queued_batches,
            });
        }
        producers::draw(&mut self.rng, &self.txn.producers).map(Step::Txn)
    }
}
