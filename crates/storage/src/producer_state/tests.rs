use super::*;

fn batch(epoch: i16, first: i32, last: i32) -> ProducerBatch {
    ProducerBatch {
        producer_id: 7,
        epoch,
        first_seq: first,
        last_seq: last,
        is_transactional: false,
    }
}

#[test]
fn duplicates_of_the_last_five_batches_are_found() {
    let mut s = ProducerStates::default();
    for i in 0..7 {
        let b = batch(0, i * 10, i * 10 + 9);
        assert_eq!(s.check(&b, i64::from(i) * 10, "t-0"), Ok(()));
        s.update(
            &b,
            i64::from(i) * 10,
            i64::from(i) * 10 + 9,
            100 + i64::from(i),
        );
    }
    assert_eq!(
        s.duplicate_of(&batch(0, 0, 9)),
        None,
        "pushed out of the window"
    );
    assert_eq!(s.duplicate_of(&batch(0, 10, 19)), None);
    let d = s.duplicate_of(&batch(0, 20, 29)).unwrap();
    assert_eq!((d.first_offset, d.last_offset, d.timestamp), (20, 29, 102));
    assert_eq!(
        s.duplicate_of(&batch(1, 60, 69)),
        None,
        "another epoch is no duplicate"
    );
}

#[test]
fn gaps_and_old_epochs_are_refused() {
    let mut s = ProducerStates::default();
    s.update(&batch(2, 0, 4), 0, 4, 1);
    assert_eq!(s.check(&batch(2, 5, 9), 5, "t-0"), Ok(()));
    let gap = s.check(&batch(2, 7, 9), 5, "t-0").unwrap_err();
    assert_eq!(gap.error_code(), 45);
    assert_eq!(
        gap.to_string(),
        "Out of order sequence number for producer 7 at offset 5 in partition t-0: 7 (incoming seq. number), 4 (current end sequence number)"
    );
    assert_eq!(
        s.check(&batch(1, 5, 9), 5, "t-0").unwrap_err().error_code(),
        47
    );
    assert_eq!(
        s.check(&batch(3, 3, 9), 5, "t-0").unwrap_err().error_code(),
        45,
        "a new epoch starts at 0"
    );
    assert_eq!(s.check(&batch(3, 0, 9), 5, "t-0"), Ok(()));
    assert_eq!(
        s.check(
            &ProducerBatch {
                producer_id: 8,
                ..batch(0, 42, 50)
            },
            5,
            "t-0"
        ),
        Ok(()),
        "unknown producers start anywhere"
    );
}

#[test]
fn sequences_wrap_at_i32_max() {
    assert_eq!(last_sequence(i32::MAX - 1, 3), 1);
    assert_eq!(last_sequence(5, 4), 9);
    let mut s = ProducerStates::default();
    s.update(&batch(0, i32::MAX - 4, i32::MAX), 0, 4, 1);
    assert_eq!(s.check(&batch(0, 0, 3), 5, "t-0"), Ok(()));
}

#[test]
fn idle_producers_expire() {
    let mut s = ProducerStates::default();
    s.update(&batch(0, 0, 0), 0, 0, 1_000);
    s.update(
        &ProducerBatch {
            producer_id: 9,
            ..batch(0, 0, 0)
        },
        1,
        1,
        5_000,
    );
    assert_eq!(s.expire(10_000, 6_000), 1);
    assert_eq!(s.epoch_of(7), None);
    assert_eq!(s.epoch_of(9), Some(0));
}
