//! The real app under Xvfb runs no real-time thread, in its own process or in WebKit's web and
//! network processes (src/realtime.rs: WebKitGTK's `SCHED_RR` IPC threads spin on its allocator
//! lock and stall the window). Started with `SWITCHBOARD_KEEP_REALTIME_THREADS=1` first, the
//! same app does run real-time threads here: that proves WebKit makes them on this machine and
//! that the check would see them. Needs Xvfb, dbus-daemon and xdotool
//! (`scripts/install-deps.sh`), and the right to make real-time threads (root, or
//! `RLIMIT_RTPRIO` >= 1), as WebKit needs it without RealtimeKit; every wait is bounded.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::real_window;
use real_window::{app_state, need, spawn_logged, start_desktop, windows, Desktop, Log, Proc};

use switchboard_desktop::realtime::{is_real_time, process_tree, tasks, thread_name};

/// Every thread of `pid`'s tree as `(process name, thread name, real-time)`.
fn threads(pid: i32) -> Vec<(String, String, bool)> {
    let mut out = Vec::new();
    for p in process_tree(pid) {
        let process = thread_name(p, p);
        for tid in tasks(p) {
            out.push((process.clone(), thread_name(p, tid), is_real_time(tid)));
        }
    }
    out
}

/// Starts the demo app on `desktop` (with `keep`: `SWITCHBOARD_KEEP_REALTIME_THREADS=1`) and
/// waits (90 s at most) for its window and its web process.
fn start_app(desktop: &Desktop, home: &std::path::Path, keep: bool) -> (Proc, Log) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchboard-desktop"));
    cmd.arg("--demo")
        .env("DISPLAY", &desktop.display)
        .env("DBUS_SESSION_BUS_ADDRESS", &desktop.bus)
        .env("SWITCHBOARD_HOME", home)
        .env("HOME", home)
        .env_remove("SWITCHBOARD_KEEP_REALTIME_THREADS")
        .stdout(Stdio::null());
    if keep {
        cmd.env("SWITCHBOARD_KEEP_REALTIME_THREADS", "1");
    }
    let started = Instant::now();
    let (mut app, log) = spawn_logged(&mut cmd);
    let deadline = started + Duration::from_secs(90);
    let pid = app.0.id() as i32;
    while windows(&desktop.display, true).is_empty()
        || !threads(pid)
            .iter()
            .any(|(p, _, _)| p.starts_with("WebKitWebProces"))
    {
        assert!(
            Instant::now() < deadline,
            "no window and web process within 90 s: {}",
            app_state(&mut app, &log, started)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (app, log)
}

/// The real-time threads of `pid`'s tree as "process/thread".
fn real_time(pid: i32) -> Vec<String> {
    threads(pid)
        .into_iter()
        .filter(|(_, _, rt)| *rt)
        .map(|(p, t, _)| format!("{p}/{t}"))
        .collect()
}

#[test]
fn the_real_app_runs_no_real_time_thread() {
    let _one = real_window::one_at_a_time();
    need("xdotool");
    // Whether WebKit may make real-time threads without RealtimeKit: as it does, directly.
    let allowed = std::thread::spawn(|| {
        let param = libc::sched_param { sched_priority: 1 };
        // SAFETY: `param` is valid for the call; 0 names this (throwaway) thread.
        unsafe { libc::sched_setscheduler(0, libc::SCHED_RR, &param) == 0 }
    })
    .join()
    .unwrap();
    assert!(
        allowed,
        "this test needs the right to make real-time threads (root, or `ulimit -r 1`), so that \
         WebKit makes them as it does on a desktop with RealtimeKit"
    );
    let desktop = start_desktop();

    // Left alone, WebKit makes real-time threads (within 10 s of the window showing).
    let home = tempfile::tempdir().unwrap();
    let (mut app, log) = start_app(&desktop, home.path(), true);
    let pid = app.0.id() as i32;
    let deadline = Instant::now() + Duration::from_secs(10);
    while real_time(pid).is_empty() {
        assert!(
            Instant::now() < deadline,
            "with SWITCHBOARD_KEEP_REALTIME_THREADS=1, WebKit made no real-time thread within \
             10 s (threads: {:?}); {}",
            threads(pid),
            app_state(&mut app, &log, Instant::now())
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let kept = real_time(pid);
    assert!(
        kept.iter().any(|t| t.starts_with("switchboard-des")),
        "WebKit's real-time threads in the app's own process: {kept:?}"
    );
    assert!(!log.said("lowered from real-time"), "{}", log.text());
    drop(app);

    // As shipped: every one of them is lowered (the app checks every 2 s; 10 s at most here),
    // it says so, and none comes back while the app runs on.
    let home = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let (mut app, log) = start_app(&desktop, home.path(), false);
    let pid = app.0.id() as i32;
    let deadline = Instant::now() + Duration::from_secs(10);
    // Each thread of the first run's kind is waited for by name: WebKit makes some of them
    // later than others (the network process's storage thread can come seconds after the
    // window's), and the app lowers each at its next check.
    let said_all = |log: &Log| {
        kept.iter().all(|t| {
            t.split_once('/')
                .is_some_and(|(_, thread)| log.said(&format!("thread {thread} (")))
        })
    };
    while !real_time(pid).is_empty() || !log.said("lowered from real-time") || !said_all(&log) {
        assert!(
            Instant::now() < deadline,
            "real-time threads still there, or not all of the first run's ({kept:?}) said \
             lowered, 10 s after the window showed: {:?}; {}",
            real_time(pid),
            app_state(&mut app, &log, started)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    for t in &kept {
        let thread = t.split_once('/').unwrap().1;
        assert!(
            log.said(&format!("thread {thread} (")),
            "the app did not say it lowered {t}: {}",
            log.text()
        );
    }
    for _ in 0..30 {
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(
            real_time(pid),
            Vec::<String>::new(),
            "a real-time thread came back"
        );
    }
}
