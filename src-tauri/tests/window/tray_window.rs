//! Closing the window to the tray destroys its web view, and opening it again makes a new one
//! on the place the person left: the real app under Xvfb with a stand-in tray. After the close
//! the app runs on with no WebKit process left under it; a second start (the single-instance
//! hand-off) makes the window again, with a web process, and its page paints first on the
//! view and scroll place that were left; the shared memory the window was drawn through does
//! not stay in the tray. Needs Xvfb, dbus-daemon and xdotool
//! (`scripts/install-deps.sh`); every wait is bounded.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::real_window;
use crate::tray_stand_in;
use real_window::{
    app_state, close_window, descendants, need, rss_by_mapping, spawn_logged, start_desktop,
    windows, Log, Proc,
};
use tray_stand_in::stand_in_tray;

/// The WebKit processes below `pid` (web, network, ...).
fn webkit_under(pid: u32) -> Vec<(u32, String)> {
    descendants(pid)
        .into_iter()
        .filter(|(_, c)| c.starts_with("WebKit"))
        .collect()
}

/// The KiB of `pid`'s SysV shared memory resident in it (`/SYSV<key>` mappings): cairo's
/// MIT-SHM pools, through which the window was drawn.
fn shared_images_kib(pid: u32) -> u64 {
    rss_by_mapping(pid)
        .iter()
        .filter(|(name, _)| name.starts_with("/SYSV"))
        .map(|(_, kib)| kib)
        .sum()
}

/// Runs `xdotool args` on `display`, failing loudly when it fails.
fn xdotool(display: &str, args: &[&str]) {
    let ok = Command::new("xdotool")
        .args(args)
        .env("DISPLAY", display)
        .status()
        .unwrap()
        .success();
    assert!(ok, "xdotool {args:?} failed");
}

/// Waits (at most `secs`) until `what` holds, else fails with the app's state.
fn wait_for(
    app: &mut Proc,
    log: &Log,
    started: Instant,
    secs: u64,
    what: &str,
    mut cond: impl FnMut() -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !cond() {
        assert!(
            Instant::now() < deadline,
            "{what}: not within {secs} s: {}",
            app_state(app, log, started)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The lines of `log` containing `what`.
fn lines_with(log: &Log, what: &str) -> Vec<String> {
    log.text()
        .lines()
        .filter(|l| l.contains(what))
        .map(str::to_string)
        .collect()
}

/// The number after `key=` in `line` (a tracing field), if any.
fn field_f64(line: &str, key: &str) -> Option<f64> {
    let at = line.find(&format!("{key}="))? + key.len() + 1;
    let rest = &line[at..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

#[test]
fn closed_to_the_tray_the_web_view_goes_and_comes_back_on_the_same_place() {
    let _one = real_window::one_at_a_time();
    need("xdotool");
    let desktop = start_desktop();
    let (display, bus) = (desktop.display.clone(), desktop.bus.clone());
    // A tray on that session: without one, closing the window quits the app.
    let _tray = stand_in_tray(&bus);
    let home = tempfile::tempdir().unwrap();
    let app_cmd = |args: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_switchboard-desktop"));
        c.args(args)
            .env("DISPLAY", &display)
            .env("DBUS_SESSION_BUS_ADDRESS", &bus)
            .env("SWITCHBOARD_HOME", home.path())
            .env("HOME", home.path())
            .stdout(Stdio::null());
        c
    };
    let started = Instant::now();
    let (mut app, log) = spawn_logged(&mut app_cmd(&["--demo"]));
    let pid = app.0.id();
    let paint = "first paint";

    // The window shows, its page paints, and a web process runs under the app.
    wait_for(
        &mut app,
        &log,
        started,
        120,
        "the first window's page painted",
        || log.said(paint),
    );
    let win = windows(&display, true);
    assert_eq!(win.len(), 1, "one window shows: {win:?}");
    assert!(
        webkit_under(pid)
            .iter()
            .any(|(_, c)| c.starts_with("WebKitWebProc")),
        "a web process under the app while the window shows: {:?}",
        descendants(pid)
    );
    // Drawn without compositing, the app's own process never opened an EGL display: no EGL
    // vendor library (Mesa's, NVIDIA's; they bring the GPU driver and, with Mesa, LLVM) is
    // mapped in it. WebKitGTK opens one there when the first web process starts unless it is
    // told the render node and that no GPU buffers are shared (`WindowGraphics::variables`).
    let egl_vendors: Vec<String> = rss_by_mapping(pid)
        .into_keys()
        .filter(|p| {
            p.rsplit('/')
                .next()
                .is_some_and(|f| f.starts_with("libEGL_"))
        })
        .collect();
    assert!(
        egl_vendors.is_empty(),
        "the app's process loaded an EGL driver for a window drawn without compositing: {egl_vendors:?}"
    );

    // The person goes to Settings (Ctrl+6) and scrolls down.
    xdotool(&display, &["windowfocus", "--sync", &win[0]]);
    xdotool(&display, &["key", "ctrl+6"]);
    std::thread::sleep(Duration::from_millis(800));
    xdotool(&display, &["mousemove", "--window", &win[0], "700", "400"]);
    xdotool(&display, &["click", "--repeat", "6", "--delay", "80", "5"]);
    // The page sends the place 200 ms after the last scroll.
    std::thread::sleep(Duration::from_millis(1500));

    // The window is drawn through cairo's shared memory with the X server (MIT-SHM).
    let drawn_through = shared_images_kib(pid);
    assert!(
        drawn_through > 0,
        "no shared memory resident while the window shows: the check below would prove nothing"
    );

    // Closed to the tray: the window and every WebKit process under the app go; the app stays.
    close_window(&display, &win[0]);
    let closed = "window closed to the tray";
    wait_for(&mut app, &log, started, 20, "the close to the tray", || {
        log.said(closed)
    });
    let line = lines_with(&log, closed).pop().unwrap();
    assert!(
        line.contains("view=\"settings\""),
        "the place kept is Settings: {line}"
    );
    // `scroll={"settings": 480.0}`: the main area's offset kept for Settings.
    let kept: f64 = line
        .split("\"settings\": ")
        .nth(1)
        .and_then(|r| r.split([',', '}']).next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0.0);
    assert!(kept > 0.0, "Settings was scrolled down: {line}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !webkit_under(pid).is_empty() {
        assert!(
            Instant::now() < deadline,
            "WebKit processes left 20 s after the close: {:?}; {}",
            webkit_under(pid),
            app_state(&mut app, &log, started)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(windows(&display, false).is_empty(), "no window is left");
    // And the shared memory the window was drawn through goes with it (a tray icon drawn by
    // the desktop's StatusNotifier tray, not in the app, holds none of it).
    wait_for(
        &mut app,
        &log,
        started,
        20,
        &format!("the window's {drawn_through} KiB of shared images given back"),
        || shared_images_kib(pid) == 0,
    );
    // And it stays that way: the app runs on in the tray.
    std::thread::sleep(Duration::from_secs(3));
    assert!(app.0.try_wait().unwrap().is_none(), "{}", log.text());
    assert!(webkit_under(pid).is_empty(), "{:?}", descendants(pid));

    // Starting Switchboard again makes the window again, on Settings at the same place.
    let mut second = app_cmd(&["--demo"]).stderr(Stdio::null()).spawn().unwrap();
    wait_for(
        &mut app,
        &log,
        started,
        60,
        "the second window's page painted",
        || lines_with(&log, paint).len() >= 2,
    );
    let line = lines_with(&log, paint).pop().unwrap();
    assert!(
        line.contains("view=\"settings\""),
        "the window came back on Settings: {line}"
    );
    let scroll = field_f64(&line, "scroll").unwrap_or(-1.0);
    assert!(
        (scroll - kept).abs() < 1.0,
        "the window came back {scroll} px down, left {kept} px down: {line}"
    );
    assert_eq!(windows(&display, true).len(), 1, "the window shows again");
    assert!(
        webkit_under(pid)
            .iter()
            .any(|(_, c)| c.starts_with("WebKitWebProc")),
        "a web process again: {:?}",
        descendants(pid)
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while second.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the second start did not exit");
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(app);
}
