//! Smoke test: the real built app in a real window under Xvfb. Waits for the window, saves a
//! screenshot to `target/smoke/main-window.png` and fails if the window never appears or the
//! page is blank. Needs Xvfb, dbus-run-session, xdotool and ImageMagick (`scripts/install-deps.sh`).
// Linux only: the real window under Xvfb, its screenshot with ImageMagick, processes from
// /proc and their group ended with SIGTERM.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::real_window;
use real_window::{need, start_xvfb, windows};
use switchboard_desktop::realtime::{tasks, thread_name};

/// The app under `dbus-run-session`, in a process group of its own: dropping it ends the whole
/// group (SIGTERM, then SIGKILL after 5 s), so the session's `dbus-daemon` and what it started
/// (at-spi, gnome-keyring) do not outlive the test holding its output open.
struct Group(Child);
impl Drop for Group {
    fn drop(&mut self) {
        let group = -(self.0.id() as libc::pid_t);
        // SAFETY: kill(2) on the process group of a child we started and have not reaped yet.
        unsafe {
            libc::kill(group, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if matches!(self.0.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // SAFETY: as above; the group's other members may still be running after the leader.
        unsafe {
            libc::kill(group, libc::SIGKILL);
        }
        let _ = self.0.wait();
    }
}

fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn real_window_shows_sidebar_and_phones_view() {
    let _one = real_window::one_at_a_time();
    for t in ["dbus-run-session", "xdotool", "import", "convert"] {
        need(t);
    }
    let (_xvfb, display) = start_xvfb();
    let home = tempfile::tempdir().unwrap();
    let app = Command::new("dbus-run-session")
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_switchboard-desktop"))
        .env("DISPLAY", &display)
        .env("SWITCHBOARD_HOME", home.path())
        .env("HOME", home.path())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .process_group(0)
        .spawn()
        .expect("the app starts");
    let _app = Group(app);

    // Wait (bounded) for a window titled Switchboard.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut window_id = None;
    while Instant::now() < deadline {
        if let Some(id) = windows(&display, true).into_iter().next() {
            window_id = Some(id);
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let window_id = window_id.expect("the Switchboard window appeared within 60 s");

    // Give the page time to render, then screenshot until it is not blank (bounded).
    let shots = project_root().join("target").join("smoke");
    std::fs::create_dir_all(&shots).unwrap();
    let shot = shots.join("main-window.png");
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut colours = 0usize;
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1000));
        let ok = Command::new("import")
            .args(["-window", "root"])
            .arg(&shot)
            .env("DISPLAY", &display)
            .status()
            .unwrap()
            .success();
        if !ok {
            continue;
        }
        let out = Command::new("convert")
            .arg(&shot)
            .args(["-format", "%k", "info:"])
            .output()
            .unwrap();
        colours = String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .unwrap_or(0);
        if colours > 200 {
            break;
        }
    }
    assert!(
        colours > 200,
        "the window {window_id} looks blank ({colours} colours) in {}",
        shot.display()
    );
    // The sidebar (light theme under Xvfb: #eef1f8) fills the left edge, and the active
    // Phones entry is drawn in the accent colour (#2b5ce6) near its top.
    let pixel = |x: u32, y: u32| {
        let out = Command::new("convert")
            .arg(&shot)
            .args(["-format", &format!("%[hex:p{{{x},{y}}}]"), "info:"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_uppercase()
    };
    let sidebar = pixel(100, 700);
    assert!(
        sidebar.starts_with("EEF1F8"),
        "no sidebar at the left edge (pixel is #{sidebar}) in {}",
        shot.display()
    );
    let top_left = Command::new("convert")
        .arg(&shot)
        .args(["-crop", "220x160+0+0", "+repage", "-unique-colors", "txt:"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&top_left.stdout)
            .to_uppercase()
            .contains("#2B5CE6"),
        "the Phones entry is not shown as the active view in {}",
        shot.display()
    );
    // The page's scripts run in JavaScriptCore's interpreter with an 8 MiB collection step
    // (`WindowScripts`, set by the app before the window exists and inherited by its web
    // process).
    let marker = format!("SWITCHBOARD_HOME={}", home.path().display());
    let web: Vec<(i32, Vec<String>)> = web_processes()
        .into_iter()
        .filter(|(_, env)| env.contains(&marker))
        .collect();
    assert!(
        !web.is_empty(),
        "no WebKitWebProcess with the app's environment ({marker}) was found"
    );
    // Nor does WebKit's memory-pressure monitor run (`WEBKIT_NO_MEMORY_MONITOR`): its thread,
    // in the app's own process, would wake the app every few seconds for the rest of its life,
    // in the tray too.
    for (pid, _) in &web {
        let app = parent_pid(*pid).expect("the web process's parent");
        let names: Vec<String> = tasks(app)
            .into_iter()
            .map(|t| thread_name(app, t))
            .collect();
        assert!(
            !names.is_empty() && !names.iter().any(|n| n == "PressureMonitor"),
            "the app's process {app} runs WebKit's memory-pressure monitor (threads: {names:?})"
        );
    }
    for (_, env) in &web {
        assert!(
            env.iter()
                .any(|v| v == "WEBKIT_DISABLE_MEMORY_PRESSURE_MONITOR=1"),
            "the window's web process runs without WEBKIT_DISABLE_MEMORY_PRESSURE_MONITOR=1"
        );
        assert!(
            env.iter().any(|v| v == "JSC_useJIT=false"),
            "the window's web process runs without JSC_useJIT=false"
        );
        assert!(
            env.iter().any(|v| v == "JSC_largeHeapSize=8388608"),
            "the window's web process runs without JSC_largeHeapSize=8388608"
        );
    }
    eprintln!("smoke screenshot: {} ({colours} colours)", shot.display());
}

/// Every `WebKitWebProcess` on the machine: its process id and environment (`NAME=value` each).
fn web_processes() -> Vec<(i32, Vec<String>)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let dir = e.path();
        let is_web = std::fs::read_to_string(dir.join("comm"))
            .is_ok_and(|c| c.trim().starts_with("WebKitWebProces"));
        if !is_web {
            continue;
        }
        if let Ok(env) = std::fs::read(dir.join("environ")) {
            out.push((
                pid,
                env.split(|b| *b == 0)
                    .map(|v| String::from_utf8_lossy(v).into_owned())
                    .collect(),
            ));
        }
    }
    out
}

/// The parent of process `pid` (the fourth field of `/proc/PID/stat`, after the name's `)`).
fn parent_pid(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}
