//! The saved theme reaches the native window before it shows (the fresh user's fifth bug: under
//! a saved dark theme the GTK menu bar stayed light at first). The start gives the main window
//! the saved theme, then shows it (`open_main_window`, called by the setup hook once the
//! settings are loaded): the order is checked on a stand-in window that records what it is told.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Mutex;

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
