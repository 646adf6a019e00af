//! The saved theme reaches the native window before it shows (the fresh user's fifth bug: under
//! a saved dark theme the GTK menu bar stayed light at first). The start gives the main window
//! the saved theme, then shows it (`open_main_window`, called by the setup hook once the
//! settings are loaded): the order is checked on a stand-in window that records what it is
//! told, and in the real app under Xvfb, where GTK marks a window it draws dark with the X
//! property `_GTK_THEME_VARIANT` = "dark" (read with `xprop` the moment the window is visible).
//! The real-window test needs Xvfb, dbus-daemon, xdotool and xprop (`scripts/install-deps.sh`);
//! every wait is bounded.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[cfg(target_os = "linux")]
use std::process::{Command, Stdio};
use std::sync::Mutex;
#[cfg(target_os = "linux")]
use std::time::{Duration, Instant};

// The real window runs under Xvfb and is read with xprop (Linux only); the stand-in window
// tests run everywhere.
#[cfg(target_os = "linux")]
use crate::real_window;
#[cfg(target_os = "linux")]
use real_window::{app_state, need, spawn_logged, start_desktop, windows};

use switchboard::settings::Theme;
use switchboard_desktop::{native_theme, open_main_window, StartingWindow};

#[derive(Default)]
struct Recorded(Mutex<Vec<String>>);

impl StartingWindow for Recorded {
    fn set_theme(&self, theme: tauri::Theme) {
        self.0.lock().unwrap().push(format!("theme {theme:?}"));
    }
    fn show(&self) {
        self.0.lock().unwrap().push("show".into());
    }
}

fn start(saved: Theme, show: bool) -> Vec<String> {
    let w = Recorded::default();
    open_main_window(&w, saved, show);
    w.0.into_inner().unwrap()
}

#[test]
fn a_saved_theme_is_given_to_the_window_before_it_shows() {
    assert_eq!(start(Theme::Dark, true), ["theme Dark", "show"]);
    assert_eq!(start(Theme::Light, true), ["theme Light", "show"]);
    // Started hidden in the tray: themed already for when the tray shows it.
    assert_eq!(start(Theme::Dark, false), ["theme Dark"]);
}

#[test]
fn the_system_theme_is_left_to_the_desktop() {
    // Forcing "not dark" would override a dark desktop (GTK's prefer-dark is one setting).
    assert_eq!(start(Theme::System, true), ["show"]);
    assert_eq!(native_theme(Theme::System), None);
    assert_eq!(native_theme(Theme::Dark), Some(tauri::Theme::Dark));
}

/// The first visible window titled exactly "Switchboard", if any.
#[cfg(target_os = "linux")]
fn visible_window(display: &str) -> Option<String> {
    windows(display, true).into_iter().next()
}

/// `_GTK_THEME_VARIANT` of window `id`, as `xprop` prints it.
#[cfg(target_os = "linux")]
fn theme_variant(display: &str, id: &str) -> String {
    let out = Command::new("xprop")
        .args(["-id", id, "_GTK_THEME_VARIANT"])
        .env("DISPLAY", display)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[cfg(target_os = "linux")]
#[test]
fn under_a_saved_dark_theme_the_real_window_is_dark_when_it_first_shows() {
    let _one = real_window::one_at_a_time();
    for t in ["xdotool", "xprop"] {
        need(t);
    }
    let desktop = start_desktop();
    let (display, bus) = (&desktop.display, &desktop.bus);
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("config")).unwrap();
    std::fs::write(
        home.path().join("config").join("settings.json"),
        r#"{"theme":"dark"}"#,
    )
    .unwrap();
    let started = Instant::now();
    let (mut app, log) = spawn_logged(
        Command::new(env!("CARGO_BIN_EXE_switchboard-desktop"))
            .arg("--demo")
            .env("DISPLAY", display)
            .env("DBUS_SESSION_BUS_ADDRESS", bus)
            .env("SWITCHBOARD_HOME", home.path())
            .env("HOME", home.path())
            .stdout(Stdio::null()),
    );
    let deadline = started + Duration::from_secs(90);
    let id = loop {
        if let Some(id) = visible_window(display) {
            break id;
        }
        assert!(
            Instant::now() < deadline,
            "no window showed within 90 s: {}",
            app_state(&mut app, &log, started)
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let first = theme_variant(display, &id);
    assert!(
        first.ends_with("= \"dark\""),
        "the window showed without the saved dark theme: {first:?}"
    );
}
