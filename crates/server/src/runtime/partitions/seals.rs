//! The fsync and index of a rolled segment, run off the write path: a produce that rolls its
//! partition's segment answers at once and the seal runs on the blocking pool
//! (`kcoord_storage::seal`); the maintenance pass runs any seal no produce took (a roll by a
//! transaction marker or by retention).

use std::sync::Arc;

use kcoord_storage::seal::PendingSeal;
use tracing::error;

/// Runs `seals` of partition `name` on the blocking pool, or here outside a runtime. Callers
/// with none call neither this nor [`run_here`] (the name is a new string each time).
pub fn run_in_background(name: String, seals: Vec<Arc<PendingSeal>>) {
    let work = move || run_here(&name, &seals);
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => drop(runtime.spawn_blocking(work)),
        Err(_) => work(),
    }
}

/// Runs `seals` of partition `name` on this thread. A failure also stops the log's appends
/// (the log reads it at its next append); it is logged here, where it happened.
pub fn run_here(name: &str, seals: &[Arc<PendingSeal>]) {
    for seal in seals {
        if let Err(reason) = seal.run() {
            error!(partition = %name, reason = %reason, "sealing a rolled segment failed");
        }
    }
}
