//! The priority of a thread whose work may wait: the HTTP listener's (the page, the JSON API,
//! `/metrics`) and the bulk lane's (big requests and produce, `rpc::bulk`) run at nice
//! [`BACKGROUND_NICE`], so that on a busy machine reading lag, drawing a topology or taking a
//! producer's bytes takes CPU time from no heartbeat. Nice, not SCHED_IDLE: a saturated
//! daemon still answers its health probes, at about a tenth of a core's share.

/// Linux's nice value of such threads (0 is the default, 19 the lowest priority).
pub const BACKGROUND_NICE: i32 = 10;

/// Lowers the calling thread's priority to [`BACKGROUND_NICE`] (a thread already as low or
/// lower is left so); an error (not Linux, or the call refused) leaves it as it was and says
/// why.
pub fn lower_this_thread() -> Result<(), String> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid, getpriority and setpriority take and return plain integers and
        // touch no memory of ours; on Linux PRIO_PROCESS with a thread id is that thread only.
        let status = unsafe {
            let tid = libc::gettid() as libc::id_t;
            if libc::getpriority(libc::PRIO_PROCESS, tid) >= BACKGROUND_NICE {
                return Ok(());
            }
            libc::setpriority(libc::PRIO_PROCESS, tid, BACKGROUND_NICE)
        };
        if status == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error().to_string())
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err("thread priorities are set on Linux only".to_owned())
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_lowered_thread_runs_at_the_background_nice_and_others_do_not() {
        let nice_of_this_thread = || {
            // SAFETY: as above; getpriority reads the calling thread's nice value.
            unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) }
        };
        let before = nice_of_this_thread();
        let lowered = std::thread::spawn(move || {
            lower_this_thread().unwrap();
            nice_of_this_thread()
        })
        .join()
        .unwrap();
        assert_eq!(lowered, BACKGROUND_NICE.max(before));
        assert_eq!(
            nice_of_this_thread(),
            before,
            "only the lowered thread changes"
        );
    }
}
