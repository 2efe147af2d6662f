//! Writeback of appended bytes behind the produce path ([`kcoord_storage::writeback`]): one
//! thread per daemon asks the kernel to start writing each range the logs hand out and then
//! waits for the oldest, and a produce waits (on its own task, never blocking a worker) while
//! more than [`IN_FLIGHT_BUDGET`] bytes are handed out and not yet written. So a load faster
//! than the disk is slowed to the disk's pace a chunk at a time, long before the kernel's
//! dirty-page limit would stop the appending thread for up to a second.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use kcoord_storage::writeback::WritebackRange;
use tokio::sync::Notify;
use tracing::warn;

use crate::support::logging::{LogLimiter, PEER_LINE_INTERVAL};

/// Bytes handed out for writeback and not yet written past which a produce waits: about a
/// tenth of a second of a disk that writes 600 MB/s, and far below any dirty-page limit.
pub const IN_FLIGHT_BUDGET: u64 = 64 << 20;

/// The daemon's writeback thread and the bytes it has yet to write.
#[derive(Debug, Default)]
pub struct Writeback {
    shared: Arc<Shared>,
    /// Started with the first range, so a daemon that keeps its logs in memory has no thread.
    sender: Mutex<Option<Sender<WritebackRange>>>,
}

#[derive(Debug, Default)]
struct Shared {
    in_flight: AtomicU64,
    room: Notify,
}

impl Shared {
    fn written(&self, len: u64) {
        self.in_flight.fetch_sub(len, Ordering::AcqRel);
        self.room.notify_waiters();
    }
}

impl Writeback {
    /// Returns once the bytes in flight are within [`IN_FLIGHT_BUDGET`].
    pub async fn room(&self) {
        loop {
            let notified = self.shared.room.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.in_flight() <= IN_FLIGHT_BUDGET {
                return;
            }
            notified.await;
        }
    }

    /// Bytes handed out and not yet written.
    pub fn in_flight(&self) -> u64 {
        self.shared.in_flight.load(Ordering::Acquire)
    }

    /// Has `range` written to the disk behind the appends.
    pub fn submit(&self, range: WritebackRange) {
        let len = range.len;
        self.shared.in_flight.fetch_add(len, Ordering::AcqRel);
        let mut sender = self.sender.lock().unwrap_or_else(PoisonError::into_inner);
        if sender.is_none() {
            *sender = start(Arc::clone(&self.shared));
        }
        let sent = sender.as_ref().is_some_and(|s| s.send(range).is_ok());
        if !sent {
            // No thread: the kernel's own writeback has the bytes, as before this module.
            *sender = None;
            self.shared.written(len);
        }
    }
}

fn start(shared: Arc<Shared>) -> Option<Sender<WritebackRange>> {
    let (sender, ranges) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("kcoord-writeback".into())
        .spawn(move || run(&ranges, &shared));
    match spawned {
        Ok(_) => Some(sender),
        Err(e) => {
            warn!(error = %e, "could not start the writeback thread; the kernel writes appended bytes back on its own");
            None
        }
    }
}

/// Starts each range's write as it arrives; when none is waiting, waits for the oldest write
/// and releases its bytes. Ends once the daemon drops its [`Writeback`] and every started
/// write has been waited for.
fn run(ranges: &Receiver<WritebackRange>, shared: &Shared) {
    let failures = LogLimiter::new(PEER_LINE_INTERVAL, 1);
    let report = |e: io::Error| {
        if let Some(suppressed) = failures.check((), Instant::now()) {
            warn!(error = %e, suppressed, "writeback of appended bytes failed; the kernel writes them back on its own");
        }
    };
    let mut started = VecDeque::new();
    loop {
        let next = if started.is_empty() {
            ranges.recv().map_err(|_| TryRecvError::Disconnected)
        } else {
            ranges.try_recv()
        };
        match next {
            Ok(range) => {
                if let Err(e) = sync_file_range(&range, START_WRITE) {
                    report(e);
                }
                started.push_back(range);
            }
            Err(TryRecvError::Empty) => {
                if let Some(oldest) = started.pop_front() {
                    if let Err(e) = sync_file_range(&oldest, WRITE_AND_WAIT) {
                        report(e);
                    }
                    shared.written(oldest.len);
                }
            }
            Err(TryRecvError::Disconnected) => {
                for range in started.drain(..) {
                    let _ = sync_file_range(&range, WRITE_AND_WAIT);
                    shared.written(range.len);
                }
                return;
            }
        }
    }
}

#[cfg(target_os = "linux")]
const START_WRITE: libc::c_uint = libc::SYNC_FILE_RANGE_WRITE;
#[cfg(target_os = "linux")]
const WRITE_AND_WAIT: libc::c_uint = libc::SYNC_FILE_RANGE_WAIT_BEFORE
    | libc::SYNC_FILE_RANGE_WRITE
    | libc::SYNC_FILE_RANGE_WAIT_AFTER;

#[cfg(target_os = "linux")]
fn sync_file_range(range: &WritebackRange, flags: libc::c_uint) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (i64::try_from(range.offset), i64::try_from(range.len)) else {
        return Err(io::Error::other("range beyond a file's largest offset"));
    };
    // SAFETY: the descriptor stays open while `range.file` lives, and the call reads and
    // writes no memory of ours.
    let status = unsafe { libc::sync_file_range(range.file.as_raw_fd(), offset, len, flags) };
    if status == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
const START_WRITE: u32 = 0;
#[cfg(not(target_os = "linux"))]
const WRITE_AND_WAIT: u32 = 0;

/// Elsewhere the kernel's own writeback is left to do it.
#[cfg(not(target_os = "linux"))]
fn sync_file_range(_: &WritebackRange, _: u32) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests;
