use kcoord_metadata::TransactionState;
use kcoord_runtime::{Runtime, Volatile};
use kcoord_wire::ErrorCode;

use super::init_producer_id::{InitProducerId, InitProducerIdResult};
use super::*;
use crate::commits::OffsetToCommit;
use crate::txn_offsets::TxnOffsetCommit;
use crate::{StreamsGroupConfig, TickEvent};

type Shard = Runtime<CoordinatorShard, Volatile>;

fn shard() -> Shard {
    let config = TransactionConfig {
        max_timeout_ms: 60_000,
        id_expiration_ms: 100_000,
        abort_timed_out_interval_ms: 1_000,
        remove_expired_interval_ms: 10_000,
        ..TransactionConfig::default()
    };
    let core = CoordinatorShard::new(StreamsGroupConfig::default(), 1).with_transactions(config);
    Runtime::new(core, Volatile)
}

fn run<R>(s: &mut Shard, f: impl FnOnce(&CoordinatorShard) -> Outcome<R>) -> R {
    match s.run(f) {
        Ok(done) => done.response,
        Err(refused) => panic!("refused: {}", refused.error),
    }
}

/// InitProducerId as the server runs it: a fresh producer id when the coordinator asks.
fn init(s: &mut Shard, id: &str, expected: Option<(i64, i16)>, now: i64) -> InitProducerIdResult {
    let mut req = InitProducerId {
        transactional_id: id,
        transaction_timeout_ms: 10_000,
        expected,
        fresh_producer_id: None,
    };
    let mut next_id = 1000;
    loop {
        match run(s, |c| c.init_producer_id(&req, now)) {
            InitProducerIdResult::NeedsProducerId => {
                next_id += 1;
                req.fresh_producer_id = Some(next_id);
            }
            other => return other,
        }
    }
}

fn granted(r: InitProducerIdResult) -> (i64, i16) {
    match r {
        InitProducerIdResult::Granted {
            producer_id,
            producer_epoch,
        } => (producer_id, producer_epoch),
        other => panic!("not granted: {other:?}"),
    }
}

fn tp(topic: &str, p: i32) -> (String, i32) {
    (topic.to_owned(), p)
}

fn state(s: &Shard, id: &str) -> TransactionState {
    s.transaction(id).map(|t| t.state).expect("known id")
}

#[test]
fn a_new_id_gets_epoch_zero_and_a_second_init_fences_the_first() {
    let mut s = shard();
    let (pid, epoch) = granted(init(&mut s, "tx", None, 1));
    assert_eq!(epoch, 0);
    let (pid2, epoch2) = granted(init(&mut s, "tx", None, 2));
    assert_eq!((pid2, epoch2), (pid, 1));
    let stale = run(&mut s, |c| {
        c.add_partitions_to_transaction("tx", pid, 0, &[tp("a", 0)], 0, 3)
    });
    assert_eq!(stale, ErrorCode::PRODUCER_FENCED);
    let other = run(&mut s, |c| {
        c.add_partitions_to_transaction("tx", pid + 1, 1, &[tp("a", 0)], 0, 3)
    });
    assert_eq!(other, ErrorCode::INVALID_PRODUCER_ID_MAPPING);
}

#[test]
fn a_timeout_over_the_maximum_is_refused() {
    let mut s = shard();
    let req = InitProducerId {
        transactional_id: "tx",
        transaction_timeout_ms: 60_001,
        expected: None,
        fresh_producer_id: Some(5),
    };
    let refused = run(&mut s, |c| c.init_producer_id(&req, 1));
    assert_eq!(
        refused,
        InitProducerIdResult::Refused(ErrorCode::INVALID_TRANSACTION_TIMEOUT)
    );
    assert!(s.transaction("tx").is_none());
}

#[test]
fn commit_prepares_then_completes_and_retries_are_answered() {
    let mut s = shard();
    let (pid, epoch) = granted(init(&mut s, "tx", None, 1));
    let parts = [tp("a", 0), tp("b", 3)];
    let added = run(&mut s, |c| {
        c.add_partitions_to_transaction("tx", pid, epoch, &parts, 0, 2)
    });
    assert_eq!(added, ErrorCode::NONE);
    assert_eq!(
        s.verify_partitions_in_transaction("tx", pid, epoch, &[tp("a", 0), tp("c", 0)]),
        [ErrorCode::NONE, ErrorCode::TRANSACTION_ABORTABLE]
    );
    let ended = run(&mut s, |c| c.end_transaction("tx", pid, epoch, true, 3));
    assert_eq!(ended, ErrorCode::NONE);
    let prepared = s.prepared_transactions();
    assert_eq!(prepared.len(), 1);
    assert!(prepared[0].commit);
    assert_eq!(prepared[0].partitions, parts);
    // A retry while the markers are written, and one of the other outcome.
    assert_eq!(
        run(&mut s, |c| c.end_transaction("tx", pid, epoch, true, 4)),
        ErrorCode::CONCURRENT_TRANSACTIONS
    );
    // The other outcome too: the markers are being written (Kafka's pending transition).
    assert_eq!(
        run(&mut s, |c| c.end_transaction("tx", pid, epoch, false, 4)),
        ErrorCode::CONCURRENT_TRANSACTIONS
    );
    assert!(run(&mut s, |c| c.complete_transaction(&prepared[0], 5)));
    assert_eq!(state(&s, "tx"), TransactionState::CompleteCommit);
    assert!(s.prepared_transactions().is_empty());
    assert!(!run(&mut s, |c| c.complete_transaction(&prepared[0], 6)));
    assert_eq!(
        run(&mut s, |c| c.end_transaction("tx", pid, epoch, true, 7)),
        ErrorCode::NONE
    );
    assert_eq!(
        run(&mut s, |c| c.end_transaction("tx", pid, epoch, false, 7)),
        ErrorCode::INVALID_TXN_STATE
    );
}

#[test]
fn init_during_an_ongoing_transaction_aborts_it_and_fences() {
    let mut s = shard();
    let (pid, epoch) = granted(init(&mut s, "tx", None, 1));
    run(&mut s, |c| {
        c.add_partitions_to_transaction("tx", pid, epoch, &[tp("a", 0)], 0, 2)
    });
    assert_eq!(
        init(&mut s, "tx", None, 3),
        InitProducerIdResult::Refused(ErrorCode::CONCURRENT_TRANSACTIONS)
    );
    let prepared = s.prepared_transactions();
    assert_eq!(prepared.len(), 1);
    assert!(!prepared[0].commit);
    assert_eq!(prepared[0].producer_epoch, epoch + 1);
    // The old producer is fenced at once.
    assert_eq!(
        run(&mut s, |c| c.end_transaction("tx", pid, epoch, true, 4)),
        ErrorCode::PRODUCER_FENCED
    );
    run(&mut s, |c| c.complete_transaction(&prepared[0], 5));
    assert_eq!(granted(init(&mut s, "tx", None, 6)), (pid, epoch + 2));
}

#[test]
fn kip_360_a_producer_recovers_with_its_id_and_a_retry_gets_the_same_epoch() {
    let mut s = shard();
    let (pid, epoch) = granted(init(&mut s, "tx", None, 1));
    let bumped = granted(init(&mut s, "tx", Some((pid, epoch)), 2));
    assert_eq!(bumped, (pid, epoch + 1));
    // The answer was lost: the producer asks again with the epoch it had.
    assert_eq!(granted(init(&mut s, "tx", Some((pid, epoch)), 3)), bumped);
    // A producer id the transactional id never had is fenced.
    assert_eq!(
        init(&mut s, "tx", Some((pid + 7, 0)), 4),
        InitProducerIdResult::Refused(ErrorCode::PRODUCER_FENCED)
    );
}

#[test]
fn an_exhausted_epoch_rotates_the_producer_id() {
    let mut s = shard();
    let (pid, _) = granted(init(&mut s, "tx", None, 1));
    let mut t = s.transaction("tx").cloned().expect("known");
    t.producer_epoch = i16::MAX - 1;
    run(&mut s, |_| Outcome {
        records: crate::at_latest_version(vec![transaction_record(&t)]),
        response: (),
        effects: Vec::new(),
    });
    let (pid2, epoch2) = granted(init(&mut s, "tx", None, 2));
    assert_ne!(pid2, pid);
    assert_eq!(epoch2, 0);
    assert_eq!(s.transaction("tx").map(|t| t.prev_producer_id), Some(pid));
}

#[test]
fn a_timed_out_transaction_is_aborted_and_its_producer_fenced() {
    let mut s = shard();
    run(&mut s, |c| c.start_transaction_checks(0));
    let (pid, epoch) = granted(init(&mut s, "tx", None, 0));
    run(&mut s, |c| {
        c.add_partitions_to_transaction("tx", pid, epoch, &[tp("a", 0)], 0, 100)
    });
    assert!(crate::tick(&mut s, 5_000).events.is_empty());
    let ticked = crate::tick(&mut s, 10_200);
    assert_eq!(
        ticked.events,
        [TickEvent::TransactionTimedOut {
            transactional_id: "tx".into(),
            producer_id: pid
        }]
    );
    assert_eq!(state(&s, "tx"), TransactionState::PrepareAbort);
    assert_eq!(s.transactions_timed_out(), 1);
    assert_eq!(
        run(&mut s, |c| c
            .end_transaction("tx", pid, epoch, true, 10_300)),
        ErrorCode::PRODUCER_FENCED
    );
}

#[test]
fn an_idle_transactional_id_expires() {
    let mut s = shard();
    run(&mut s, |c| c.start_transaction_checks(0));
    granted(init(&mut s, "tx", None, 0));
    crate::tick(&mut s, 10_000);
    assert!(s.transaction("tx").is_some());
    let ticked = crate::tick(&mut s, 110_000);
    assert!(ticked.events.contains(&TickEvent::TransactionalIdExpired {
        transactional_id: "tx".into()
    }));
    assert!(s.transaction("tx").is_none());
}

fn offset(partition: i32, offset: i64) -> OffsetToCommit {
    OffsetToCommit {
        topic: "t".into(),
        topic_id: uuid::Uuid::nil(),
        partition,
        offset,
        leader_epoch: -1,
        metadata: None,
    }
}

fn txn_commit(
    s: &mut Shard,
    producer_id: i64,
    offsets: &[OffsetToCommit],
    generation: i32,
) -> Vec<ErrorCode> {
    let req = TxnOffsetCommit {
        group_id: "g",
        producer_id,
        member_id: "",
        group_instance_id: None,
        generation_id_or_member_epoch: generation,
        api_version: 4,
        offsets,
    };
    match run(s, |c| c.commit_transactional_offsets(&req, 1)) {
        Ok(codes) => codes,
        Err(e) => vec![e.code],
    }
}

#[test]
fn transactional_offsets_are_pending_until_the_marker_and_abort_drops_them() {
    let mut s = shard();
    assert_eq!(
        txn_commit(&mut s, 7, &[offset(0, 10), offset(1, 20)], -1),
        [ErrorCode::NONE; 2]
    );
    assert!(s.has_pending_transactional_offset("g", "t", 0));
    assert!(s.state().offsets.get("g", "t", 0).is_none());
    assert_eq!(
        run(&mut s, |c| c.complete_transactional_offsets(7, true)),
        2
    );
    assert_eq!(
        s.state().offsets.get("g", "t", 1).map(|o| o.offset),
        Some(20)
    );
    assert!(!s.has_pending_transactional_offset("g", "t", 0));
    txn_commit(&mut s, 8, &[offset(0, 99)], -1);
    assert_eq!(
        run(&mut s, |c| c.complete_transactional_offsets(8, false)),
        0
    );
    assert_eq!(
        s.state().offsets.get("g", "t", 0).map(|o| o.offset),
        Some(10)
    );
    // A generation for a simple group, which has no members (Kafka 4.4 answers the same).
    assert_eq!(
        txn_commit(&mut s, 9, &[offset(0, 1)], 3),
        [ErrorCode::UNKNOWN_MEMBER_ID]
    );
}

#[test]
fn a_plain_commit_after_the_transactional_one_wins() {
    let mut s = shard();
    txn_commit(&mut s, 7, &[offset(0, 10)], -1);
    run(&mut s, |c| {
        c.commit_offsets("g", "", -1, 9, &[offset(0, 50)], 2)
            .map(|r| r.map(|_| ()).map_err(|e| e.code))
    })
    .expect("plain commit");
    assert_eq!(
        run(&mut s, |c| c.complete_transactional_offsets(7, true)),
        0
    );
    assert_eq!(
        s.state().offsets.get("g", "t", 0).map(|o| o.offset),
        Some(50)
    );
}

#[test]
fn describe_reports_the_transaction_and_its_partitions_by_topic() {
    let mut s = shard();
    let (pid, epoch) = granted(init(&mut s, "tx", None, 1));
    let parts = [tp("b", 3), tp("a", 1), tp("a", 0)];
    run(&mut s, |c| {
        c.add_partitions_to_transaction("tx", pid, epoch, &parts, 0, 2)
    });
    let d = s.describe_transaction("tx");
    assert_eq!(d.error_code, 0);
    assert_eq!(
        (
            d.producer_id,
            d.producer_epoch,
            d.transaction_state.as_str()
        ),
        (pid, epoch, "Ongoing")
    );
    assert_eq!(
        (d.transaction_timeout_ms, d.transaction_start_time_ms),
        (10_000, 2)
    );
    let topics: Vec<(&str, &[i32])> = d
        .topics
        .iter()
        .map(|t| (t.topic.as_str(), t.partitions.as_slice()))
        .collect();
    assert_eq!(topics, [("a", &[0, 1][..]), ("b", &[3][..])]);
    assert_eq!(
        s.describe_transaction("other").error_code,
        ErrorCode::TRANSACTIONAL_ID_NOT_FOUND.code()
    );
    assert_eq!(
        s.describe_transaction("").error_code,
        ErrorCode::INVALID_REQUEST.code()
    );
}

#[test]
fn list_filters_by_producer_state_duration_and_id() {
    let mut s = shard();
    let (a, epoch) = granted(init(&mut s, "a", None, 1));
    run(&mut s, |c| {
        c.add_partitions_to_transaction("a", a, epoch, &[tp("t", 0)], 0, 100)
    });
    // `init` hands out the same producer id every time: "b" gets one of its own.
    let req = InitProducerId {
        transactional_id: "b",
        transaction_timeout_ms: 10_000,
        expected: None,
        fresh_producer_id: Some(a + 1),
    };
    let (b, _) = granted(run(&mut s, |c| c.init_producer_id(&req, 1)));
    let ids = |filter: &TransactionFilter<'_>, now: i64| -> Vec<String> {
        s.list_transactions(filter, |_| true, now)
            .into_iter()
            .map(|t| {
                format!(
                    "{} {} {}",
                    t.transactional_id,
                    t.producer_id - a,
                    t.transaction_state
                )
            })
            .collect()
    };
    let all = TransactionFilter {
        duration_ms: -1,
        ..Default::default()
    };
    assert_eq!(
        ids(&all, 200),
        ["a 0 Ongoing", format!("b {} Empty", b - a).as_str()]
    );
    let by_producer = TransactionFilter {
        producer_ids: &[b],
        ..all
    };
    assert_eq!(ids(&by_producer, 200), [format!("b {} Empty", b - a)]);
    let states = ["Ongoing".to_owned(), "Bogus".to_owned()];
    let by_state = TransactionFilter {
        states: &states,
        ..all
    };
    assert_eq!(ids(&by_state, 200), ["a 0 Ongoing"]);
    let only_unknown = ["Bogus".to_owned()];
    let none = TransactionFilter {
        states: &only_unknown,
        ..all
    };
    assert!(
        ids(&none, 200).is_empty(),
        "an unknown state matches nothing"
    );
    // "a" started at 100: running for longer than 99 ms at 200, not for longer than 100.
    let ongoing = TransactionFilter {
        states: &states[..1],
        duration_ms: 99,
        ..all
    };
    assert_eq!(ids(&ongoing, 200), ["a 0 Ongoing"]);
    let younger = TransactionFilter {
        duration_ms: 100,
        ..ongoing
    };
    assert!(ids(&younger, 200).is_empty());
    let listed = s.list_transactions(&all, |id| id == "b", 200);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].transactional_id, "b");
}

#[test]
fn unknown_state_filters_are_named_once() {
    let names = ["Ongoing", "ongoing", "Nope", "Nope"].map(str::to_owned);
    assert_eq!(unknown_state_filters(&names), ["ongoing", "Nope"]);
}

fn end_v2(s: &mut Shard, pid: i64, epoch: i16, commit: bool, now: i64) -> super::EndTxnResult {
    let req = super::EndTxn {
        transactional_id: "tx",
        producer_id: pid,
        producer_epoch: epoch,
        commit,
        transaction_version: super::TV_2,
        fresh_producer_id: None,
    };
    run(s, |c| c.end_txn(&req, now))
}

fn ended(error: ErrorCode, producer_id: i64, producer_epoch: i16) -> super::EndTxnResult {
    super::EndTxnResult::Ended {
        error,
        producer_id,
        producer_epoch,
    }
}

#[test]
fn version_2_bumps_the_epoch_at_every_end_and_recognises_retries() {
    let mut s = shard();
    let (pid, epoch) = granted(init(&mut s, "tx", None, 1));
    let add = |s: &mut Shard, epoch: i16, now: i64| {
        run(s, |c| {
            c.add_partitions_to_transaction("tx", pid, epoch, &[tp("a", 0)], TV_2, now)
        })
    };
    assert_eq!(add(&mut s, epoch, 2), ErrorCode::NONE);
    assert_eq!(
        end_v2(&mut s, pid, epoch, true, 3),
        ended(ErrorCode::NONE, pid, epoch + 1)
    );
    let prepared = s.prepared_transactions();
    assert_eq!(
        (prepared[0].producer_epoch, prepared[0].transaction_version),
        (epoch + 1, TV_2)
    );
    // Markers being written: anything is CONCURRENT_TRANSACTIONS.
    assert_eq!(
        end_v2(&mut s, pid, epoch, true, 4),
        ended(ErrorCode::CONCURRENT_TRANSACTIONS, -1, -1)
    );
    run(&mut s, |c| c.complete_transaction(&prepared[0], 5));
    // A retry (the old epoch) of the commit is answered with the epoch to go on with; an
    // abort retried is refused.
    assert_eq!(
        end_v2(&mut s, pid, epoch, true, 6),
        ended(ErrorCode::NONE, pid, epoch + 1)
    );
    assert_eq!(
        end_v2(&mut s, pid, epoch, false, 6),
        ended(ErrorCode::INVALID_TXN_STATE, -1, -1)
    );
    // Committing again at the current epoch, with nothing ongoing, is refused; aborting is not.
    assert_eq!(
        end_v2(&mut s, pid, epoch + 1, true, 7),
        ended(ErrorCode::INVALID_TXN_STATE, -1, -1)
    );
    assert_eq!(
        end_v2(&mut s, pid, epoch + 1, false, 8),
        ended(ErrorCode::NONE, pid, epoch + 2)
    );
    // An epoch below the retry's is fenced.
    let prepared = s.prepared_transactions();
    run(&mut s, |c| c.complete_transaction(&prepared[0], 9));
    assert_eq!(
        end_v2(&mut s, pid, epoch, false, 10),
        ended(ErrorCode::PRODUCER_FENCED, -1, -1)
    );
    assert_eq!(add(&mut s, epoch + 2, 11), ErrorCode::NONE);
}

#[test]
fn version_2_moves_an_exhausted_epoch_to_a_new_producer_id_when_the_transaction_completes() {
    let mut s = shard();
    let (pid, _) = granted(init(&mut s, "tx", None, 1));
    let mut t = s.transaction("tx").cloned().expect("known");
    t.producer_epoch = i16::MAX - 1;
    run(&mut s, |_| Outcome {
        records: crate::at_latest_version(vec![transaction_record(&t)]),
        response: (),
        effects: Vec::new(),
    });
    let parts = [tp("a", 0)];
    run(&mut s, |c| {
        c.add_partitions_to_transaction("tx", pid, i16::MAX - 1, &parts, TV_2, 2)
    });
    let mut req = super::EndTxn {
        transactional_id: "tx",
        producer_id: pid,
        producer_epoch: i16::MAX - 1,
        commit: true,
        transaction_version: TV_2,
        fresh_producer_id: None,
    };
    assert_eq!(
        run(&mut s, |c| c.end_txn(&req, 3)),
        super::EndTxnResult::NeedsProducerId
    );
    req.fresh_producer_id = Some(pid + 100);
    assert_eq!(
        run(&mut s, |c| c.end_txn(&req, 3)),
        ended(ErrorCode::NONE, pid + 100, 0)
    );
    let prepared = s.prepared_transactions();
    assert_eq!(prepared[0].producer_epoch, i16::MAX);
    run(&mut s, |c| c.complete_transaction(&prepared[0], 4));
    let t = s.transaction("tx").expect("known");
    assert_eq!(
        (t.producer_id, t.producer_epoch, t.prev_producer_id),
        (pid + 100, 0, pid)
    );
    // The producer's retry with the old id and epoch is recognised.
    assert_eq!(
        run(&mut s, |c| c.end_txn(&req, 5)),
        ended(ErrorCode::NONE, pid + 100, 0)
    );
}
