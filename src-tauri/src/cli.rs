//! The command line and the display check, both done before Tauri starts.
//!
//! Tauri (GTK on Linux) panics with a backtrace when it cannot open a display, and it would do
//! so even for `--help`. So `main` parses the command line here first (`--help` and `--version`
//! print and exit 0 without a display, an unknown flag gets clap's usage error and exit code 2),
//! then [`check_display`] turns a missing or unreachable display into one sentence saying what
//! is missing and how to run the app.

use std::ffi::OsStr;
use std::fmt;

use clap::Parser;

use crate::LaunchOptions;

/// Switchboard's command line (`switchboard-desktop [--demo]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Parser)]
#[command(
    name = "switchboard-desktop",
    version,
    about = "Switchboard: the desktop companion for the phone that hosts your phone lines."
)]
pub struct Cli {
    /// Start with the built-in demo phone: a throwaway identity, a separate data folder, the
    /// link on loopback only, and a demo phone that pairs by itself and plays the demo scenario.
    #[arg(long)]
    pub demo: bool,
    /// Start in the tray with the window hidden (what start on login uses); the tray's "Show
    /// Switchboard", a click on the tray icon or starting Switchboard again shows it. Without a
    /// tray the window is shown anyway, so the app is never out of reach.
    #[arg(long, visible_alias = "minimized")]
    pub hidden: bool,
    /// Added by WebKitWebDriver when it launches the app for WebDriver (tauri-driver, the
    /// end-to-end tests); accepted and ignored.
    #[arg(long, hide = true)]
    pub automation: bool,
    /// Open a support bundle (a .tar.gz saved with "Save a support bundle" or `switchboard
    /// bundle`) read only: the views show what the sender's app showed, and nothing can be
    /// changed. With the app already running, the running window opens it.
    #[arg(long, value_name = "FILE")]
    pub open: Option<std::path::PathBuf>,
}

impl Cli {
    /// The options the app runs with (see [`LaunchOptions`]).
    pub fn launch_options(&self) -> LaunchOptions {
        LaunchOptions {
            demo: self.demo,
            open: self.open.clone(),
            hidden: self.hidden,
            graphics: None,
            scripts: None,
            allocator: None,
            paths: None,
        }
    }
}

/// Why the app cannot open its window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DisplayProblem {
    /// Neither `DISPLAY` nor `WAYLAND_DISPLAY` is set (or both are empty).
    NotSet,
    /// A display is set but GTK could not open it. `display` names what is set, e.g.
    /// `DISPLAY=:99` or `WAYLAND_DISPLAY=wayland-0, DISPLAY=:0`.
    Unreachable {
        /// The display variables that are set, as `NAME=value`, comma separated.
        display: String,
    },
}

impl fmt::Display for DisplayProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotSet => write!(
                f,
                "switchboard-desktop needs a graphical desktop: no DISPLAY or WAYLAND_DISPLAY is \
                 set. Run it from your desktop session, or under Xvfb: \
                 xvfb-run switchboard-desktop --demo"
            ),
            Self::Unreachable { display } => write!(
                f,
                "switchboard-desktop could not open the display ({display}): check that the X \
                 server or Wayland compositor is running and that this user may connect to it, \
                 or run it under Xvfb: xvfb-run switchboard-desktop --demo"
            ),
        }
    }
}

impl std::error::Error for DisplayProblem {}

/// Checks the display variables as given (`DISPLAY`, `WAYLAND_DISPLAY`, `GDK_BACKEND`): with no
/// `GDK_BACKEND` chosen, at least one of the other two must be set and non-empty. With
/// `GDK_BACKEND` set (e.g. `broadway`) the choice is GTK's, and only opening it can tell.
///
/// # Errors
/// [`DisplayProblem::NotSet`] when no display is set.
pub fn check_display_vars(
    display: Option<&OsStr>,
    wayland_display: Option<&OsStr>,
    gdk_backend: Option<&OsStr>,
) -> Result<(), DisplayProblem> {
    let set = |v: Option<&OsStr>| v.is_some_and(|v| !v.is_empty());
    if set(display) || set(wayland_display) || set(gdk_backend) {
        Ok(())
    } else {
        Err(DisplayProblem::NotSet)
    }
}

/// Checks, before Tauri starts, that the app can open a window: on the platforms where Tauri
/// uses GTK, that a display is set and that GTK can open it (`gtk::init`, which Tauri would
/// call next anyway; a second call is a no-op). Elsewhere (macOS, Windows) there is nothing to
/// check.
///
/// # Errors
/// A [`DisplayProblem`] whose text is the one sentence to show the user.
pub fn check_display() -> Result<(), DisplayProblem> {
    #[cfg(any(
        target_os = "linux",
        target_os = "dragonfly",
        target_os = "freebsd",
        target_os = "netbsd",
        target_os = "openbsd"
    ))]
    {
        let display = std::env::var_os("DISPLAY");
        let wayland = std::env::var_os("WAYLAND_DISPLAY");
        check_display_vars(
            display.as_deref(),
            wayland.as_deref(),
            std::env::var_os("GDK_BACKEND").as_deref(),
        )?;
        if gtk::init().is_err() {
            let named = [("WAYLAND_DISPLAY", wayland), ("DISPLAY", display)]
                .into_iter()
                .filter_map(|(name, v)| v.filter(|v| !v.is_empty()).map(|v| (name, v)))
                .map(|(name, v)| format!("{name}={}", v.to_string_lossy()))
                .collect::<Vec<_>>();
            let display = if named.is_empty() {
                "none set; GDK_BACKEND chooses the backend".to_string()
            } else {
                named.join(", ")
            };
            return Err(DisplayProblem::Unreachable { display });
        }
    }
    Ok(())
}
