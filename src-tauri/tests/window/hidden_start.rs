//! `switchboard-desktop --hidden` (start on login's start) really stays in the tray: the real
//! app under Xvfb creates no visible window, however long it runs after saying it started
//! hidden; starting it a second time without `--hidden` (single instance, on the same D-Bus
//! session) shows the running app's window, which proves the test would see one; a start from
//! another session (display and bus of its own) is refused. `--minimized` is the
//! same flag (tests/ipc/headless.rs parses both). Needs Xvfb, dbus-daemon and xdotool
//! (`scripts/install-deps.sh`); every wait is bounded.
// Linux only: the real window under Xvfb, found with xdotool (an X server and its tools).
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::real_window;
use crate::tray_stand_in;
use real_window::{app_state, need, spawn_logged, start_desktop, windows};
use switchboard_desktop::realtime::{tasks, thread_name};
use tray_stand_in::stand_in_tray;

#[test]
fn hidden_start_shows_no_window_until_asked() {
    let _one = real_window::one_at_a_time();
    need("xdotool");
    // One session bus for both starts: the single-instance plugin finds the first over it.
    let desktop = start_desktop();
    let (display, bus) = (desktop.display.clone(), desktop.bus.clone());
    // A tray on that session (it owns the StatusNotifier watcher's name): without one, the
    // app shows its window even with --hidden, so it is never out of reach.
    let tray = stand_in_tray(&bus);
    let home = tempfile::tempdir().unwrap();
    let app_cmd = |args: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_switchboard-desktop"));
        c.args(args)
            .env("DISPLAY", &display)
            .env("DBUS_SESSION_BUS_ADDRESS", &bus)
            .env("SWITCHBOARD_HOME", home.path())
            .env("HOME", home.path())
            .env_remove("MALLOC_ARENA_MAX")
            .env_remove("GLIBC_TUNABLES")
            .stdout(Stdio::null());
        c
    };

    let started = Instant::now();
    let (mut app, log) = spawn_logged(&mut app_cmd(&["--demo", "--hidden"]));
    let said = |what: &str| log.said(what);
    // Until it says it started hidden (bounded), and for 8 s after: no visible window.
    let deadline = Instant::now() + Duration::from_secs(90);
    while !said("started hidden (--hidden)") {
        assert!(
            Instant::now() < deadline,
            "the app never said it started hidden: {}",
            app_state(&mut app, &log, started)
        );
        assert!(
            windows(&display, true).is_empty(),
            "a window showed during a --hidden start"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(!said("there is no tray"), "{}", log.text());
    // Its icon is in the desktop's tray: registered with the StatusNotifier watcher, as on
    // KDE and GNOME, not drawn in the app's own window as an XEmbed icon.
    let deadline = Instant::now() + Duration::from_secs(30);
    while tray.registered_items().is_empty() {
        assert!(
            Instant::now() < deadline,
            "the app's tray icon never registered with the StatusNotifier watcher: {}",
            app_state(&mut app, &log, started)
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // An app left in the tray all day keeps glibc's malloc to two arenas, set before any
    // thread started (`switchboard::app::allocator`): its memory stops growing.
    assert!(
        !cfg!(target_env = "gnu")
            || said(
                &switchboard::app::allocator::ArenaLimit::Set(
                    switchboard::app::allocator::MALLOC_ARENAS
                )
                .words()
            ),
        "the app did not limit its malloc arenas:\n{}",
        log.text()
    );
    // Its stderr is a pipe here, not a terminal: plain text, no colour codes.
    assert!(
        !said("\u{1b}["),
        "colour codes in a piped stderr:\n{}",
        log.text()
    );
    let watch = Instant::now() + Duration::from_secs(8);
    while Instant::now() < watch {
        assert!(
            windows(&display, true).is_empty(),
            "a window showed after a --hidden start:\n{}",
            log.text()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // GTK has not even realised the hidden window: no X window by that name at all.
    assert!(windows(&display, false).is_empty());
    // In the tray nothing wakes for nothing: the thread pool of the `blocking` crate (zbus's,
    // for the single-instance and notification buses) ends its threads after half a second
    // without work. Its 1.7.0 kept one woken every 500 ms for the app's life (a lock-file pin
    // to 1.6.2 keeps the release that ends them).
    let pid = app.0.id() as i32;
    let threads: Vec<String> = tasks(pid)
        .into_iter()
        .map(|t| thread_name(pid, t))
        .collect();
    assert!(
        threads.iter().any(|t| t.starts_with("tokio-rt-worker")),
        "the app's threads were not read: {threads:?}"
    );
    assert!(
        !threads.iter().any(|t| t.starts_with("blocking-")),
        "an idle thread of the `blocking` pool is still there 8 s after the start: {threads:?}"
    );

    // Starting it again without --hidden shows the running app's window.
    let mut second = app_cmd(&["--demo"]).stderr(Stdio::null()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if !windows(&display, true).is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "a second start did not show the window within 30 s:\n{}",
            log.text()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // The second start hands over and exits (bounded).
    let deadline = Instant::now() + Duration::from_secs(20);
    while second.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the second start did not exit");
        std::thread::sleep(Duration::from_millis(100));
    }

    // A start from another desktop session (its own display and session bus) cannot hand
    // over; it finds the running app over the control socket and refuses, before it opens the
    // dial history, the trust file or the link.
    let elsewhere = start_desktop();
    let mut third = app_cmd(&["--demo"]);
    third
        .env("DISPLAY", &elsewhere.display)
        .env("DBUS_SESSION_BUS_ADDRESS", &elsewhere.bus);
    let third_started = Instant::now();
    let (mut third, third_log) = spawn_logged(&mut third);
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = third.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "a start from another session did not end: {}",
            app_state(&mut third, &third_log, third_started)
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let words = third_log.text();
    assert!(!status.success(), "{status}: {words}");
    assert!(
        words.contains("is already running for this home (process ")
            && words.contains("started from another desktop session"),
        "{words}"
    );
    assert!(!words.contains("link listening"), "{words}");
    assert!(
        windows(&elsewhere.display, false).is_empty(),
        "the refused start made a window"
    );
    assert!(
        app.0.try_wait().unwrap().is_none(),
        "the running app ended: {}",
        log.text()
    );
    drop(app);
}
