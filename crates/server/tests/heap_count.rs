//! The counting allocator (`support::heap`) as the global allocator of this test binary: what
//! is allocated and not freed is what `live_bytes` reports, across alloc, realloc, free and
//! threads.

use std::alloc::System;

use kcoord_server::support::heap::{live_bytes, CountingAllocator};

#[global_allocator]
static GLOBAL: CountingAllocator<System> = CountingAllocator::new(System);

const MIB: u64 = 1 << 20;

/// Within 64 KiB of `expected`: the test harness allocates beside the test.
fn assert_near(actual: u64, expected: u64) {
    let gap = actual.abs_diff(expected);
    assert!(gap < 64 * 1024, "live {actual}, expected about {expected}");
}

#[test]
fn live_bytes_follow_allocations_reallocations_and_frees_on_any_thread() {
    GLOBAL.start();
    let base = live_bytes().expect("counting");
    let mut block: Vec<u8> = Vec::with_capacity(MIB as usize);
    assert_near(live_bytes().unwrap(), base + MIB);
    block.reserve_exact(3 * MIB as usize);
    assert_near(live_bytes().unwrap(), base + 3 * MIB);
    // Freed on another thread than the one that allocated it.
    std::thread::spawn(move || drop(block)).join().unwrap();
    assert_near(live_bytes().unwrap(), base);
    let zeroed = std::thread::spawn(|| vec![0u8; 2 * MIB as usize])
        .join()
        .unwrap();
    assert_near(live_bytes().unwrap(), base + 2 * MIB);
    drop(zeroed);
    assert_near(live_bytes().unwrap(), base);
}
