//! Sealing a rolled segment off the write path. A roll used to fsync the full segment and write
//! its index before the append that caused it could go on: about half a second for a 1 GiB
//! segment, during which the partition (and the worker thread appending to it) answered no
//! produce. Kafka flushes a rolled segment on a background thread; so does kcoord now: the roll
//! only stops appends to the segment and hands back a [`PendingSeal`], which the daemon runs on
//! its blocking pool.
//!
//! The index file is written only after the fsync, so an index on disk always describes
//! durable bytes; a crash before it leaves a segment without an index, which recovery scans
//! (and cuts at its first torn batch, dropping every later segment), as for the active one.
//! Whoever needs the segment's files settled (an fsync the flush policy asks for, compaction
//! replacing the segment, retention deleting it) runs the seal itself first: running it twice
//! is a no-op, and a second caller waits for the first.

use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::entry::{self, BatchEntry};

/// The fsync and index write a rolled segment still needs.
#[derive(Debug)]
pub struct PendingSeal {
    state: Mutex<SealState>,
}

#[derive(Debug)]
enum SealState {
    Pending {
        file: Arc<File>,
        index_path: PathBuf,
        entries: Vec<BatchEntry>,
    },
    Done,
    Failed(String),
}

impl PendingSeal {
    pub(crate) fn new(file: Arc<File>, index_path: PathBuf, entries: Vec<BatchEntry>) -> Arc<Self> {
        Arc::new(PendingSeal {
            state: Mutex::new(SealState::Pending {
                file,
                index_path,
                entries,
            }),
        })
    }

    /// Syncs the segment's bytes, then writes its index; at most once. A failure is kept (and
    /// returned to every later caller): the segment's durability is in doubt.
    pub fn run(&self) -> Result<(), String> {
        let mut state = self.lock();
        let SealState::Pending {
            file,
            index_path,
            entries,
        } = &*state
        else {
            return outcome(&state);
        };
        let done = file
            .sync_all()
            .and_then(|()| entry::write_index_file(index_path, entries));
        *state = match done {
            Ok(()) => SealState::Done,
            Err(e) => SealState::Failed(format!("sealing {}: {e}", index_path.display())),
        };
        outcome(&state)
    }

    /// Gives the seal up: its segment's files are being deleted with the whole log. Waits for
    /// a run in progress, so nothing is written into the directory after this returns.
    pub fn abandon(&self) {
        let mut state = self.lock();
        if matches!(*state, SealState::Pending { .. }) {
            *state = SealState::Done;
        }
    }

    /// Whether it has run, successfully or not.
    pub fn is_settled(&self) -> bool {
        !matches!(*self.lock(), SealState::Pending { .. })
    }

    /// Why it failed, once it has.
    pub fn failure(&self) -> Option<String> {
        match &*self.lock() {
            SealState::Failed(reason) => Some(reason.clone()),
            _ => None,
        }
    }

    /// A panic inside `run` (none is expected) leaves the state as it was: still pending or
    /// settled, so the lock is taken over rather than poisoning every later append.
    fn lock(&self) -> MutexGuard<'_, SealState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn outcome(state: &SealState) -> Result<(), String> {
    match state {
        SealState::Failed(reason) => Err(reason.clone()),
        _ => Ok(()),
    }
}

/// Runs `seal`, for callers that go on either way (the error is the seal's to report again).
pub(crate) fn settle(seal: &PendingSeal) -> io::Result<()> {
    seal.run().map_err(io::Error::other)
}
