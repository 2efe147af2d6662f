//! The transactional producers: two transactional ids, each used by two producer instances
//! (the second fences the first, as a restarted application instance does), one request in
//! flight each; and the steps the driver draws for them and for the marker writer.
//!
//! Each instance speaks transaction version 1 or 2 (KIP-890 part 2) for its life, drawn from
//! the seed by a generator of its own (the run's main generator draws exactly as before
//! versions were drawn, so a run whose instances all speak version 1 is the run it was).
use std::collections::BTreeSet;

use kcoord_coordinator::transactions::{CONSUMER_OFFSETS, TV_2};
use kcoord_coordinator::TransactionConfig;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::txn_model::{Partition, TxnId};

pub const TRANSACTIONAL_IDS: [&str; 2] = ["tx0", "tx1"];
pub const INSTANCES_PER_ID: usize = 2;
/// The simple group (generation -1) the producers commit offsets to in their transactions; no
/// other client touches it.
pub const TXN_GROUP: &str = "txn-group";
/// The data plane's topic and partition count (not in the coordinator's catalog: the data
/// plane checks nothing against it).
pub const DATA_TOPIC: &str = "orders";
pub const DATA_PARTITIONS: i32 = 3;
/// The topics the transactional offsets are committed for (in the catalog).
pub const OFFSET_TOPICS: [(&str, i32); 2] = [("input", 2), ("events", 2)];

/// The single shard's partition of `__consumer_offsets`: the group shard of [`TXN_GROUP`].
pub fn offsets_partition() -> Partition {
    (CONSUMER_OFFSETS.to_owned(), 0)
}

/// The transaction coordinator's settings of a run: short timeouts, so that transactions time
/// out and idle ids expire within a few hundred steps.
pub fn config() -> TransactionConfig {
    TransactionConfig {
        max_timeout_ms: 60_000,
        id_expiration_ms: 40_000,
        abort_timed_out_interval_ms: 500,
        remove_expired_interval_ms: 5_000,
        ..TransactionConfig::default()
    }
}

#[derive(Debug, Default)]
pub struct Producer {
    pub transactional_id: &'static str,
    /// Producer id and epoch, once InitProducerId granted them.
    pub ids: Option<(i64, i16)>,
    /// The open transaction: its name once its first AddPartitionsToTxn was acknowledged, and
    /// the partitions it was acknowledged to hold.
    pub txn: Option<TxnId>,
    pub partitions: BTreeSet<Partition>,
    /// The outcome of the EndTxn it sent, until it is answered NONE (a retry asks the same).
    pub ending: Option<bool>,
    pub waiting: bool,
    pub timeout_ms: i32,
    /// The transaction version it speaks: 1, or 2 (every EndTxn bumps the epoch and answers
    /// the producer id and epoch to go on with).
    pub version: i16,
    /// At version 2, the answer (producer id, epoch) of an EndTxn that was computed but never
    /// acknowledged: the producer retries with its old epoch, as the Java client does, and a
    /// retry answered NONE must hand out the same.
    pub lost_end: Option<(i64, i16)>,
}

impl Producer {
    /// The instances of a run; their versions come from `seed` alone.
    pub fn all(rng: &mut StdRng, seed: u64) -> Vec<Producer> {
        let mut versions = StdRng::seed_from_u64(seed ^ 0x7476_325f_7632_7632);
        let ids = TRANSACTIONAL_IDS.iter();
        let instances = ids.flat_map(|id| std::iter::repeat_n(*id, INSTANCES_PER_ID));
        instances
            .map(|transactional_id| Producer {
                transactional_id,
                timeout_ms: rng.random_range(3_000..=30_000),
                version: if versions.random_ratio(1, 2) { 2 } else { 1 },
                ..Default::default()
            })
            .collect()
    }

    /// The transaction version its requests carry (0 below version 2, as the server reads
    /// AddPartitionsToTxn v0-4 and EndTxn v0-4).
    pub fn client_version(&self) -> i16 {
        if self.version >= 2 {
            TV_2
        } else {
            0
        }
    }

    /// Forgets its ids and transaction: it was fenced, or its id expired; it initializes again.
    pub fn reset(&mut self) {
        self.ids = None;
        self.end_transaction();
    }

    pub fn end_transaction(&mut self) {
        self.txn = None;
        self.partitions.clear();
        self.ending = None;
        self.lost_end = None;
    }
}

#[derive(Debug, Clone)]
pub enum TxnStep {
    /// InitProducerId (with a fresh producer id from the allocator when the coordinator asks).
    Init { producer: usize },
    /// AddPartitionsToTxn of data partitions, or AddOffsetsToTxn (`__consumer_offsets-0`);
    /// once acknowledged, the producer writes a record to each data partition.
    Add {
        producer: usize,
        partitions: Vec<Partition>,
    },
    /// TxnOffsetCommit, as the server runs it: a verification on the transaction's shard, and
    /// once answered, the commit on the group's shard.
    CommitOffsets {
        producer: usize,
        partitions: Vec<(&'static str, i32)>,
    },
    /// EndTxn of the producer's transaction (at version 2, an abort also with none ongoing).
    EndTxn { producer: usize, commit: bool },
    /// The marker writer takes one step: reads the decided transactions, writes one marker,
    /// or completes one transaction.
    Markers,
}

/// A transaction step for an idle producer, or the marker writer's; `None` when no producer
/// can act (the driver then draws another kind of step).
pub fn draw(rng: &mut StdRng, producers: &[Producer]) -> Option<TxnStep> {
    if rng.random_ratio(1, 3) {
        return Some(TxnStep::Markers);
    }
    // The second instance of each id (a zombie, or the instance that replaces it) comes back
    // rarely: two instances both eager to initialize would only fence each other.
    let wakes = rng.random_ratio(1, 15);
    let ready: Vec<usize> = (0..producers.len())
        .filter(|&i| {
            let p = &producers[i];
            !p.waiting && (p.ids.is_some() || i % INSTANCES_PER_ID == 0 || wakes)
        })
        .collect();
    if ready.is_empty() {
        return None;
    }
    let producer = ready[rng.random_range(0..ready.len())];
    let p = &producers[producer];
    if p.ids.is_none() || rng.random_ratio(1, 80) {
        return Some(TxnStep::Init { producer });
    }
    if let Some(commit) = p.ending {
        return Some(TxnStep::EndTxn { producer, commit });
    }
    let in_txn = p.txn.is_some();
    // At version 2 an abort with nothing ongoing is accepted and bumps the epoch (drawn only
    // for version-2 instances: a run of version-1 instances draws as before).
    if p.version >= 2 && !in_txn && rng.random_ratio(1, 20) {
        return Some(TxnStep::EndTxn {
            producer,
            commit: false,
        });
    }
    let has_offsets = p.partitions.contains(&offsets_partition());
    let step = match rng.random_range(0..10) {
        0..=2 if in_txn => TxnStep::EndTxn {
            producer,
            commit: rng.random_ratio(3, 4),
        },
        3..=5 if has_offsets => TxnStep::CommitOffsets {
            producer,
            partitions: offset_partitions(rng),
        },
        _ => TxnStep::Add {
            producer,
            partitions: partitions_to_add(rng),
        },
    };
    Some(step)
}

fn partitions_to_add(rng: &mut StdRng) -> Vec<Partition> {
    if rng.random_ratio(1, 3) {
        return vec![offsets_partition()];
    }
    let count = rng.random_range(1..=2);
    (0..count)
        .map(|_| (DATA_TOPIC.to_owned(), rng.random_range(0..DATA_PARTITIONS)))
        .collect()
}

fn offset_partitions(rng: &mut StdRng) -> Vec<(&'static str, i32)> {
    let count = rng.random_range(1..=2);
    (0..count)
        .map(|_| {
            let (topic, partitions) = OFFSET_TOPICS[rng.random_range(0..OFFSET_TOPICS.len())];
            (topic, rng.random_range(0..partitions))
        })
        .collect()
}
