//! The `kcoord` daemon: `kcoord <path/to/server.properties>`.

/// mimalloc instead of glibc's malloc: a streams-group member is a few dozen small
/// allocations (ids, task sets), which mimalloc's size classes hold without glibc's per-chunk
/// header, and the heartbeat path's short-lived allocations are cheaper (BENCHMARKS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    kcoord_server::cli_main()
}
