//! Work that may block the thread (file reads, fsync) done on a runtime worker without stalling
//! the other connections that worker serves: on the multi-threaded runtime the worker hands
//! its other tasks to a new worker first (`block_in_place`); elsewhere (a single-threaded test
//! runtime) it simply runs.

pub fn run<R>(f: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(f),
        _ => f(),
    }
}
