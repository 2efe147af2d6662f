//! The `kcoord` daemon: `kcoord <path/to/server.properties>`.

use kcoord_server::support::heap::CountingAllocator;

/// mimalloc instead of glibc's malloc: a streams-group member is a few dozen small
/// allocations (ids, task sets), which mimalloc's size classes hold without glibc's per-chunk
/// header, and the heartbeat path's short-lived allocations are cheaper (BENCHMARKS.md).
/// Counted, for `kcoord_heap_live_bytes` and the memory benchmarks.
#[global_allocator]
static GLOBAL: CountingAllocator<mimalloc::MiMalloc> = CountingAllocator::new(mimalloc::MiMalloc);

fn main() -> std::process::ExitCode {
    GLOBAL.start();
    kcoord_server::daemon_main_with(collect_freed_memory)
}

/// Lets mimalloc hand memory freed on this thread back to the OS. A worker thread that goes idle
/// after a burst (a join storm) would otherwise keep its freed pages until it allocates again,
/// and the idle daemon's RSS would include them.
fn collect_freed_memory() {
    // SAFETY: `mi_collect` only walks the calling thread's own heap; any thread may call it at
    // any time (mimalloc's documented use).
    unsafe { libmimalloc_sys::mi_collect(false) }
}
