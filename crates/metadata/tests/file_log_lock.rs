//! The log directory's lock keeps out another process. A binary of its own: a child spawned
//! while another test thread holds a lock file open would hold that lock too, for the moment
//! between its fork and its exec, and make that test's reopen fail.
use std::path::Path;

use kcoord_metadata::file_log::{self, FileLogError};

/// Whether util-linux's `flock -n` (another process) gets the lock.
fn another_process_locks(path: &Path) -> bool {
    std::process::Command::new("flock")
        .arg("-n")
        .arg(path)
        .arg("true")
        .status()
        .unwrap()
        .success()
}

#[test]
fn another_process_cannot_take_the_lock_while_the_writer_lives() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = file_log::open(dir.path()).unwrap();
    let lock = dir.path().join(file_log::LOCK_FILE_NAME);
    assert!(!another_process_locks(&lock));
    assert!(matches!(
        file_log::open(dir.path()),
        Err(FileLogError::Locked { .. })
    ));
    drop(loaded);
    assert!(another_process_locks(&lock));
    file_log::open(dir.path()).unwrap();
}
