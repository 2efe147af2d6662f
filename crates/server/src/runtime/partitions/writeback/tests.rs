use std::future::Future;
use std::io::Write;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use super::*;

fn poll_once(future: std::pin::Pin<&mut impl Future<Output = ()>>) -> Poll<()> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn a_produce_waits_while_more_than_the_budget_is_unwritten_and_goes_on_once_it_is_written() {
    let writeback = Writeback::default();
    assert!(
        poll_once(pin!(writeback.room())).is_ready(),
        "nothing in flight"
    );

    let over = IN_FLIGHT_BUDGET + 1;
    writeback.shared.in_flight.store(over, Ordering::Release);
    let mut waiting = pin!(writeback.room());
    assert!(
        poll_once(waiting.as_mut()).is_pending(),
        "over the budget it waits"
    );
    writeback.shared.written(1);
    assert!(
        poll_once(waiting.as_mut()).is_ready(),
        "back within the budget, the waiting produce goes on"
    );
}

#[test]
fn submitted_ranges_are_written_and_their_bytes_released() {
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(&vec![1u8; 3 << 20]).unwrap();
    let file = Arc::new(file);
    let writeback = Writeback::default();
    for i in 0..3u64 {
        writeback.submit(WritebackRange {
            file: Arc::clone(&file),
            offset: i << 20,
            len: 1 << 20,
        });
    }
    // The thread waits for each write; a bound on the wait only keeps a broken build from
    // hanging the suite.
    let deadline = Instant::now() + Duration::from_secs(60);
    while writeback.in_flight() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(writeback.in_flight(), 0, "every written range is released");
}
