//! Threads doing background work (storing, loading) that must not push the threads serving
//! phones off their CPU.
//!
//! Why: on Linux a thread woken by another is usually placed on its waker's CPU, and the
//! scheduler may let it run there first. The dial writer, handed a batch by a tokio worker, ran
//! its SQLite transaction (about 1.2 ms on a 2-CPU machine) on that worker's CPU while the
//! worker, the one owning the runtime's I/O driver, waited behind it with the other CPU idle:
//! a dial arriving then waited the whole transaction (`docs/performance.md`, "The writer as
//! background work").

/// Marks the calling thread as background work: it keeps its fair share of CPU time (it is not
/// starved by a busy desktop), but waking it does not preempt the thread running on that CPU.
///
/// - Linux: the `SCHED_BATCH` policy (`sched(7)`: treated as CPU-bound, no preemption on
///   wake-up), nice value unchanged.
/// - macOS: the `QOS_CLASS_UTILITY` quality of service (long work the person does not wait on).
/// - Windows and other systems: nothing. Windows places a woken thread on an idle processor
///   first, and lowering a thread's priority there starves it under load (strict priorities).
///
/// # Errors
/// The system's error when it refuses (a sandbox that forbids it); the thread then runs as
/// before.
pub fn mark_background_thread() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: `param` is a valid `sched_param` that outlives the call; pid 0 names the
        // calling thread.
        let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    #[cfg(target_os = "macos")]
    {
        // SAFETY: sets the calling thread's own class; no pointers.
        let rc =
            unsafe { libc::pthread_set_qos_class_self_np(libc::qos_class_t::QOS_CLASS_UTILITY, 0) };
        if rc != 0 {
            return Err(std::io::Error::from_raw_os_error(rc));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn a_marked_thread_runs_as_batch_work_and_others_do_not() {
        // SAFETY: no arguments but pid 0, the calling thread.
        let policy = || unsafe { libc::sched_getscheduler(0) };
        let marked = std::thread::spawn(move || {
            mark_background_thread().unwrap();
            policy()
        })
        .join()
        .unwrap();
        assert_eq!(marked, libc::SCHED_BATCH);
        // Only the calling thread changes, not the process.
        let other = std::thread::spawn(policy).join().unwrap();
        assert_eq!(other, libc::SCHED_OTHER);
    }

    #[cfg(not(target_os = "linux"))]
    #[test]
    fn marking_succeeds() {
        std::thread::spawn(|| mark_background_thread().unwrap())
            .join()
            .unwrap();
    }
}
