//! WebKitGTK's real-time threads, lowered back to normal scheduling (Linux).
//!
//! WebKitGTK (`WTF::RealTimeThreads`, in the releases before WebKit's "[Linux] Remove RT
//! threads", 319617@main, 2026) puts a few of its IPC threads under `SCHED_RR` priority 5:
//! two `ReceiveQueue` threads in the app's own process, `EventDispatcher` in the web process,
//! `Storage` in the network process. It does so directly when the process may
//! (`CAP_SYS_NICE` or `RLIMIT_RTPRIO`), and otherwise asks RealtimeKit over D-Bus, which most
//! desktops run.
//!
//! Those threads take WebKit's allocator lock (libpas) like every other thread, and its slow
//! path spins with `sched_yield`. When a normal thread holding the lock is preempted on the CPU
//! a real-time thread then spins on, the yield never lets it run again until the kernel moves
//! it to another CPU: on a 2-CPU desktop streaming live dials, `perf` showed the app's
//! `ReceiveQueue` thread spinning in `pas_lock_lock_slow` for 80-140 ms at a time while the
//! window drew nothing (docs/desktop-dials.md). Under RealtimeKit a spin that long
//! can even get the app killed: WebKit sets `RLIMIT_RTTIME` to RealtimeKit's maximum (200 ms by
//! default), and the kernel sends SIGKILL at that hard limit. Upstream has since removed both the
//! real-time threads on Linux and the `sched_yield` spin (WebKit bugs 319535 and 321012).
//!
//! [`start`] lowers every real-time thread of this process and of the processes it started
//! (WebKit's web and network processes, found through `/proc/PID/task/TID/children`) to
//! `SCHED_OTHER`, once at start and then every [`CHECK_EVERY`] (less often once a window has
//! been up for [`CHECK_SETTLED_AFTER`], up to [`CHECK_LONGEST`]), since WebKit promotes threads
//! as it creates them (a new web process after a crash, for one). Lowering a thread of one's
//! own user needs no privilege. Nothing else of WebKit's behaviour changes.
//!
//! `SWITCHBOARD_KEEP_REALTIME_THREADS` set in the environment (to anything) leaves WebKit's
//! choice alone, to compare the two ([`crate::run`] reads it).

use std::time::Duration;

/// How often [`start`]'s thread looks for real-time threads again (2 s): WebKit promotes a
/// thread shortly after creating it, from its main loop.
pub const CHECK_EVERY: Duration = Duration::from_secs(2);

/// How long after a window is made [`start`]'s thread looks every [`CHECK_EVERY`]: WebKit makes
/// its web and network processes, and their threads, within seconds of the window.
pub const CHECK_SETTLED_AFTER: Duration = Duration::from_secs(20);

/// The longest wait between two looks while a window stays open: after
/// [`CHECK_SETTLED_AFTER`] the wait doubles from [`CHECK_EVERY`] up to this (32 s) while no
/// thread needed lowering, and goes back to [`CHECK_EVERY`] when one did. Each look reads every
/// thread of three processes (about 100 files and system calls, 2-4 ms of CPU on this project's
/// test machine): every 2 s that was a fifth to a third of what the app with an idle window
/// used. A web process made again after a crash is looked at within this time.
pub const CHECK_LONGEST: Duration = Duration::from_secs(32);

/// How deep [`process_tree`] follows children (the app, WebKit's processes, and a sandbox's
/// launcher in between with room to spare).
const MAX_DEPTH: usize = 4;

/// At most this many processes are looked at in one pass (a bound, far above the handful the
/// app starts).
const MAX_PROCESSES: usize = 64;

/// What one pass of [`lower_tree`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Lowered {
    /// Threads moved from `SCHED_RR`/`SCHED_FIFO` to `SCHED_OTHER`, as `(pid, tid, name)`.
    pub threads: Vec<(i32, i32, String)>,
    /// Threads that stayed real-time because the kernel refused (`(tid, errno text)`); none is
    /// expected, since lowering one's own threads needs no privilege.
    pub refused: Vec<(i32, String)>,
}

/// The thread ids of process `pid` (`/proc/PID/task`); empty when the process is gone.
pub fn tasks(pid: i32) -> Vec<i32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|dir| {
            dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// `pid` and the processes it started, their children and so on ([`MAX_DEPTH`] levels, at
/// most [`MAX_PROCESSES`]), from `/proc/PID/task/TID/children` (Linux 3.5 and later, with
/// `CONFIG_PROC_CHILDREN`, which the usual distribution kernels set). A process that ended
/// meanwhile is left out.
pub fn process_tree(pid: i32) -> Vec<i32> {
    let mut out = vec![pid];
    let mut level = vec![pid];
    for _ in 0..MAX_DEPTH {
        let mut next = Vec::new();
        for &p in &level {
            for tid in tasks(p) {
                let Ok(text) = std::fs::read_to_string(format!("/proc/{p}/task/{tid}/children"))
                else {
                    continue;
                };
                for child in text
                    .split_whitespace()
                    .filter_map(|c| c.parse::<i32>().ok())
                {
                    if !out.contains(&child) && out.len() < MAX_PROCESSES {
                        out.push(child);
                        next.push(child);
                    }
                }
            }
        }
        if next.is_empty() {
            break;
        }
        level = next;
    }
    out
}

/// Whether thread `tid` runs under a real-time policy (`SCHED_RR` or `SCHED_FIFO`); false when
/// it is gone.
pub fn is_real_time(tid: i32) -> bool {
    // SAFETY: sched_getscheduler only reads the policy of the thread named by its id.
    let policy = unsafe { libc::sched_getscheduler(tid) };
    policy >= 0
        && matches!(
            policy & !libc::SCHED_RESET_ON_FORK,
            libc::SCHED_RR | libc::SCHED_FIFO
        )
}

/// The name a thread gave itself (`/proc/PID/task/TID/comm`, at most 15 bytes; a process's
/// main thread, `tid` = `pid`, carries the process's name), or "" when it is gone.
pub fn thread_name(pid: i32, tid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Moves every real-time thread of `pid` and its descendants ([`process_tree`]) to
/// `SCHED_OTHER` (nice unchanged). A thread that ends meanwhile is skipped.
pub fn lower_tree(pid: i32) -> Lowered {
    let mut done = Lowered::default();
    for p in process_tree(pid) {
        for tid in tasks(p) {
            if !is_real_time(tid) {
                continue;
            }
            let param = libc::sched_param { sched_priority: 0 };
            // SAFETY: `param` is a valid sched_param for the call's duration.
            let rc = unsafe { libc::sched_setscheduler(tid, libc::SCHED_OTHER, &param) };
            if rc == 0 {
                done.threads.push((p, tid, thread_name(p, tid)));
            } else {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() != Some(libc::ESRCH) {
                    done.refused.push((tid, e.to_string()));
                }
            }
        }
    }
    done
}

/// The lowering thread, to wake when a window is made ([`set_window_open`]).
static LOWERING: std::sync::OnceLock<std::thread::Thread> = std::sync::OnceLock::new();

/// Whether no window exists (closed to the tray, or a `--hidden` start): WebKit's threads are
/// gone with the web view, so the lowering thread sleeps instead of looking every
/// [`CHECK_EVERY`] (an app in the tray should not wake for nothing).
static NO_WINDOW: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// How many times a window was made: the lowering thread looks every [`CHECK_EVERY`] again
/// after each.
static WINDOWS_MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The wait before the next look: [`CHECK_EVERY`] within [`CHECK_SETTLED_AFTER`] of the window
/// being made or after a look that lowered a thread, else twice the last wait, at most
/// [`CHECK_LONGEST`].
pub fn next_check(last: Duration, since_window: Duration, lowered: bool) -> Duration {
    if lowered || since_window < CHECK_SETTLED_AFTER {
        CHECK_EVERY
    } else {
        (last * 2).clamp(CHECK_EVERY, CHECK_LONGEST)
    }
}

/// Says whether a window (and so a web view) exists: the lowering thread looks at once when one
/// is made, and sleeps while there is none.
pub fn set_window_open(open: bool) {
    NO_WINDOW.store(!open, std::sync::atomic::Ordering::SeqCst);
    if open {
        WINDOWS_MADE.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if let Some(t) = LOWERING.get() {
            t.unpark();
        }
    }
}

/// Starts the thread that keeps this process's and its children's threads off real-time
/// scheduling ([`lower_tree`] at once, then every [`CHECK_EVERY`] while a window exists;
/// asleep while none does: [`set_window_open`]). It logs each thread it lowers (at `info` the
/// first time, then at `debug`). An error to start the thread is logged; the app runs on
/// without it.
pub fn start() {
    let spawned = std::thread::Builder::new()
        .name("rt-lowering".into())
        .spawn(|| {
            let me = std::process::id() as i32;
            let mut first = true;
            let mut wait = CHECK_EVERY;
            let mut made = (u64::MAX, std::time::Instant::now());
            loop {
                if NO_WINDOW.load(std::sync::atomic::Ordering::SeqCst) {
                    // Woken by `set_window_open(true)` (a spurious wake-up just looks again).
                    std::thread::park();
                    continue;
                }
                let windows = WINDOWS_MADE.load(std::sync::atomic::Ordering::SeqCst);
                if windows != made.0 {
                    made = (windows, std::time::Instant::now());
                }
                let done = lower_tree(me);
                for (pid, tid, name) in &done.threads {
                    if first {
                        tracing::info!(
                            "thread {name} ({pid}/{tid}) lowered from real-time to normal scheduling (WebKit's real-time threads stall the window; see realtime.rs)"
                        );
                    } else {
                        tracing::debug!("thread {name} ({pid}/{tid}) lowered from real-time");
                    }
                }
                for (tid, e) in &done.refused {
                    tracing::warn!("thread {tid} stays real-time: {e}");
                }
                if !done.threads.is_empty() {
                    first = false;
                }
                wait = next_check(wait, made.1.elapsed(), !done.threads.is_empty());
                std::thread::park_timeout(wait);
            }
        });
    if let Ok(handle) = &spawned {
        let _ = LOWERING.set(handle.thread().clone());
    }
    if let Err(e) = spawned {
        tracing::warn!("real-time threads will not be lowered: {e}");
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::sync::{mpsc, Mutex};

    /// The tests lower every real-time thread of the test process and its children, so they
    /// take turns (one's real-time thread must not be lowered by the other before it looks).
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

    /// Makes the calling thread real-time, or fails loudly saying what the test needs.
    fn make_real_time() {
        let param = libc::sched_param { sched_priority: 1 };
        // SAFETY: `param` is valid for the call; 0 names the calling thread.
        let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_RR, &param) };
        assert_eq!(
            rc,
            0,
            "this test makes a real-time thread to lower, which needs CAP_SYS_NICE (root) or \
             RLIMIT_RTPRIO >= 1 (`ulimit -r 1`): {}",
            std::io::Error::last_os_error()
        );
    }

    fn tid() -> i32 {
        // SAFETY: gettid has no arguments and cannot fail.
        unsafe { libc::gettid() }
    }

    /// Every 2 s while a window is new or a thread was just lowered; then less and less often,
    /// never less often than every 32 s.
    #[test]
    fn looks_often_while_the_window_is_new_then_less_often() {
        let s = Duration::from_secs;
        assert_eq!(next_check(s(2), s(5), false), CHECK_EVERY);
        assert_eq!(next_check(s(16), s(19), false), CHECK_EVERY);
        assert_eq!(next_check(s(2), s(21), false), s(4));
        assert_eq!(next_check(s(4), s(25), false), s(8));
        assert_eq!(next_check(s(16), s(45), false), s(32));
        assert_eq!(next_check(s(32), s(600), false), CHECK_LONGEST);
        assert_eq!(next_check(s(32), s(600), true), CHECK_EVERY);
        assert!(CHECK_LONGEST <= Duration::from_secs(60));
    }

    #[test]
    fn a_real_time_thread_of_this_process_is_lowered() {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let (tx, rx) = mpsc::channel();
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let rt = std::thread::Builder::new()
            .name("test-rr".into())
            .spawn(move || {
                make_real_time();
                tx.send(tid()).unwrap();
                done_rx.recv_timeout(Duration::from_secs(30)).ok();
                is_real_time(tid())
            })
            .unwrap();
        let rt_tid = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(is_real_time(rt_tid));
        assert!(!is_real_time(tid()), "the test's own thread starts normal");

        let done = lower_tree(std::process::id() as i32);
        assert!(done.refused.is_empty(), "{:?}", done.refused);
        let me = std::process::id() as i32;
        assert!(
            done.threads.contains(&(me, rt_tid, "test-rr".into())),
            "lowered {:?}, not thread {rt_tid}",
            done.threads
        );
        assert!(!is_real_time(rt_tid));
        done_tx.send(()).unwrap();
        assert!(!rt.join().unwrap(), "the thread saw itself real-time still");
        // A second pass finds nothing left to lower (other tests' threads are never real-time).
        assert!(lower_tree(me).threads.iter().all(|(_, t, _)| *t != rt_tid));
    }

    #[test]
    fn real_time_threads_of_child_processes_are_lowered() {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        // A child that makes itself real-time (chrt is util-linux, on every Linux desktop) and
        // starts a sleep, which inherits the policy: a child and a grandchild to lower.
        let mut child = std::process::Command::new("chrt")
            .args(["--rr", "1", "sh", "-c", "sleep 30 & wait"])
            .spawn()
            .expect("chrt starts (util-linux)");
        let pid = child.id() as i32;
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let sleeper = loop {
            let sub = process_tree(pid);
            if let Some(&s) = sub.get(1) {
                break s;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the child's sleep did not show within 10 s (needs /proc/PID/task/TID/children)"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(
            is_real_time(pid) && is_real_time(sleeper),
            "chrt --rr did not make its command real-time: this test needs CAP_SYS_NICE (root) \
             or RLIMIT_RTPRIO >= 1 (`ulimit -r 1`)"
        );
        let me = std::process::id() as i32;
        assert!(
            process_tree(me).contains(&sleeper),
            "the grandchild is in the app's tree"
        );

        let done = lower_tree(me);
        let _ = child.kill();
        let _ = child.wait();
        let lowered: Vec<i32> = done.threads.iter().map(|(p, _, _)| *p).collect();
        assert!(
            lowered.contains(&pid) && lowered.contains(&sleeper),
            "lowered {:?}, not {pid} and {sleeper}",
            done.threads
        );
        assert!(!is_real_time(sleeper));
    }
}
