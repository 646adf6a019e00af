//! The main window's life: made when the person opens it, destroyed when they close it to the
//! tray, made again when they come back (the tray, the single-instance hand-off, a tray entry
//! that opens a view).
//!
//! Why: a hidden web view keeps its web process (WebKitGTK: 200-300 MB, and its timers) for
//! as long as Switchboard runs, often days. Destroyed, the app in the tray is the core alone.
//!
//! What the person left is kept here, on the app side, not in the page ([`WindowPlace`]: the
//! view and each scroll place, which the page reports as they change), so a window made again
//! opens on the same view at the same place, with the data as it is now. The time from the
//! open to the page's first paint of that place is logged ([`PlaceState::painted`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use switchboard::app::App;
use tauri::{AppHandle, Manager, Runtime, WebviewWindow};
use ts_rs::TS;

/// The main window's label (`tauri.conf.json`).
pub const MAIN: &str = "main";

/// Longest text kept for a view id or scroll key (the page sends short ids; anything longer is
/// cut, never stored whole).
const MAX_KEY: usize = 64;

/// Most scroll places kept: one per view and a few inner lists.
const MAX_PLACES: usize = 32;

/// Where the person left the window: the view shown (`phones`, `dials`, ...; `None` before the
/// first window) and each scroll place by key (the view's id, or the view's id and an inner
/// list's name, such as `dials/table`), in CSS pixels from the top.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct WindowPlace {
    /// The view shown last.
    pub view: Option<String>,
    /// Scroll offsets in CSS pixels (finite, at least 0), by key.
    pub scroll: BTreeMap<String, f64>,
}

impl WindowPlace {
    /// The place with every key cut to [`MAX_KEY`] characters, offsets that are not finite or
    /// below 0 dropped, and at most [`MAX_PLACES`] of them (the page is trusted for nothing).
    pub fn tidied(self) -> Self {
        let cut = |s: String| s.chars().take(MAX_KEY).collect::<String>();
        Self {
            view: self.view.map(cut),
            scroll: self
                .scroll
                .into_iter()
                .filter(|(_, v)| v.is_finite() && *v >= 0.0)
                .take(MAX_PLACES)
                .map(|(k, v)| (cut(k), v))
                .collect(),
        }
    }
}

/// When the page reached each step of its first paint, in ms from its navigation's start
/// (`performance.now()`): its scripts began, the place arrived from the app, and the first
/// frame of that place was painted. With the time from the window being made to the paint,
/// they split a reopen into starting the web process and loading the page, the scripts, the
/// place's round trip, and the first view's data and frame (`docs/performance.md`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct PaintMarks {
    /// The page's first script began.
    pub script_ms: f64,
    /// The place the app kept arrived.
    pub place_ms: f64,
    /// The first frame on that place was painted.
    pub paint_ms: f64,
}

/// The window's state the app keeps while the window comes and goes (managed).
#[derive(Default)]
pub struct PlaceState {
    place: Mutex<WindowPlace>,
    /// When the window was last made and shown, until its page painted.
    opened: Mutex<Option<Instant>>,
    /// Whether the last window closed to the tray: the app keeps running without a window.
    in_tray: AtomicBool,
}

impl PlaceState {
    /// The place the person left.
    pub fn place(&self) -> WindowPlace {
        switchboard::sync::lock(&self.place).clone()
    }

    /// Keeps `place` (tidied: [`WindowPlace::tidied`]).
    pub fn save(&self, place: WindowPlace) {
        *switchboard::sync::lock(&self.place) = place.tidied();
    }

    /// Makes `view` the one the next window opens on.
    pub fn set_view(&self, view: &str) {
        switchboard::sync::lock(&self.place).view = Some(view.to_string());
    }

    /// The page painted its first frame: milliseconds since the window was made, once per
    /// window (`None` when it was not made by [`open`], or was already reported).
    pub fn painted(&self) -> Option<u128> {
        switchboard::sync::lock(&self.opened)
            .take()
            .map(|t| t.elapsed().as_millis())
    }

    /// Whether the window last closed to the tray (the app stays with no window).
    pub fn in_tray(&self) -> bool {
        self.in_tray.load(Ordering::SeqCst)
    }

    /// Marks the window closed to the tray (`true`) or open again (`false`).
    pub fn set_in_tray(&self, yes: bool) {
        self.in_tray.store(yes, Ordering::SeqCst);
    }
}

/// The main window when one exists, else a new one made from `tauri.conf.json`'s first window
/// (hidden until shown, with the saved theme and the File menu), and whether it was made now.
///
/// # Errors
/// When the configuration has no window or Tauri cannot make one.
pub fn ensure<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<(WebviewWindow<R>, bool)> {
    if let Some(w) = app.get_webview_window(MAIN) {
        return Ok((w, false));
    }
    let config = app
        .config()
        .app
        .windows
        .iter()
        .find(|w| w.label == MAIN)
        .cloned()
        .ok_or(tauri::Error::WindowNotFound)?;
    let mut builder = tauri::WebviewWindowBuilder::from_config(app, &config)?;
    if let Some(state) = app.try_state::<Arc<PlaceState>>() {
        *switchboard::sync::lock(&state.opened) = Some(Instant::now());
        builder = builder.initialization_script(place_script(&state.place()));
    }
    let window = builder.build()?;
    if !cfg!(target_os = "macos") {
        if let Err(e) = crate::menu::create(app) {
            tracing::warn!("no File menu: {e}");
        }
    }
    Ok((window, true))
}

/// The script a new window's page runs before its own (`window.__SWITCHBOARD_PLACE__ = ...`):
/// the place the person left, so the page renders its first frame there without asking the app
/// first (`ui/src/lib/place.ts`, `givenPlace`). JSON is a JavaScript expression; the place is
/// tidied ([`WindowPlace::tidied`]) text and numbers.
pub fn place_script(place: &WindowPlace) -> String {
    let json = serde_json::to_string(place).unwrap_or_else(|_| "null".to_string());
    format!("window.__SWITCHBOARD_PLACE__ = {json};")
}

/// Opens the main window (made again when it was closed to the tray): on `view` when given,
/// else where the person left it; shown, unminimised and focused when `show`.
pub fn open<R: Runtime>(app: &AppHandle<R>, view: Option<&str>, show: bool) {
    let places = app.try_state::<Arc<PlaceState>>().map(|s| Arc::clone(&s));
    if let (Some(p), Some(v)) = (&places, view) {
        p.set_view(v);
    }
    let (window, made) = match ensure(app) {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!("the window could not be made: {e}");
            return;
        }
    };
    if let Some(p) = &places {
        p.set_in_tray(false);
    }
    #[cfg(target_os = "linux")]
    crate::realtime::set_window_open(true);
    if made {
        tracing::info!(shown = show, "window made");
        let saved = app
            .try_state::<Arc<App>>()
            .map(|core| core.get_settings().theme)
            .unwrap_or_default();
        crate::open_main_window(&window, saved, show);
    } else {
        if show {
            crate::StartingWindow::show(&window);
        }
        // A window already there hears which view to open; a new one reads it from the place.
        if let (Some(v), Some(core)) = (
            view.and_then(switchboard::app::tray::TrayView::from_id),
            app.try_state::<Arc<App>>(),
        ) {
            core.host().emit(&switchboard::app::AppEvent::OpenView(v));
        }
    }
}

/// How long after the window is destroyed its network process is ended: the web process
/// goes first, on its own.
#[cfg(target_os = "linux")]
const NETWORK_PROCESS_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// After the window was destroyed in the tray: ends WebKitGTK's network process, which WebKit
/// keeps for as long as its process pool lives (the web runtime holds that for the app's life),
/// with nothing left to serve. The next window starts a new one. Only this process's own
/// children named `WebKitNetworkProcess` are ended, and only while no window exists.
pub fn end_network_process_later<R: Runtime>(app: &AppHandle<R>) {
    #[cfg(target_os = "linux")]
    {
        let app = app.clone();
        tauri::async_runtime::spawn(async move {
            tokio::time::sleep(NETWORK_PROCESS_GRACE).await;
            let in_tray = app
                .try_state::<Arc<PlaceState>>()
                .is_some_and(|p| p.in_tray());
            if !in_tray || app.get_webview_window(MAIN).is_some() {
                return;
            }
            for pid in own_children_named("WebKitNetworkPr") {
                // SAFETY: kill(2) with a child's pid and SIGTERM has no memory effects.
                let r = unsafe { libc::kill(pid, libc::SIGTERM) };
                if r == 0 {
                    tracing::info!(
                        pid,
                        "WebKit's network process ended (no window in the tray)"
                    );
                }
            }
            // The window's memory went back to the allocator, which keeps freed pages mapped
            // in its arenas; give them back to the system (glibc; a no-op elsewhere).
            #[cfg(target_env = "gnu")]
            // SAFETY: malloc_trim only releases free memory of the allocator's own arenas.
            unsafe {
                libc::malloc_trim(0);
            }
            let kib = page_out_web_libraries();
            tracing::info!(kib, "the web view's library pages given back (in the tray)");
        });
    }
    #[cfg(not(target_os = "linux"))]
    let _ = app;
}

/// The shared libraries only the web view runs (WebKitGTK and JavaScriptCore, about 20 MB of
/// their pages touched while a window existed): file-backed, clean, and read again from the
/// page cache when a window is made.
#[cfg(target_os = "linux")]
const WEB_LIBRARIES: [&str; 2] = ["libwebkit2gtk-", "libjavascriptcoregtk-"];

/// With no window, asks the kernel to take the pages of [`WEB_LIBRARIES`] out of this process
/// (`madvise(MADV_PAGEOUT)`, Linux 5.4 and later; an older kernel refuses it and nothing
/// changes): they are clean copies of files, so nothing is written and nothing is lost; the next
/// window faults them back in, mostly from the page cache. Returns the KiB of the mappings
/// asked for (what they held resident is in `/proc/self/smaps`).
#[cfg(target_os = "linux")]
fn page_out_web_libraries() -> u64 {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return 0;
    };
    let mut kib = 0u64;
    for line in maps.lines() {
        // `start-end perms offset dev inode path`
        let mut f = line.split_whitespace();
        let (Some(range), Some(perms)) = (f.next(), f.next()) else {
            continue;
        };
        let Some(path) = f.nth(3) else { continue };
        let name = path.rsplit('/').next().unwrap_or(path);
        // Only read-only or executable file mappings: a writable one may hold the library's
        // own data, which is not a clean copy of the file.
        if !WEB_LIBRARIES.iter().any(|l| name.starts_with(l)) || perms.contains('w') {
            continue;
        }
        let Some((start, end)) = range.split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end)) = (
            usize::from_str_radix(start, 16),
            usize::from_str_radix(end, 16),
        ) else {
            continue;
        };
        if end <= start {
            continue;
        }
        // SAFETY: the range is a whole mapping of this process as the kernel listed it;
        // MADV_PAGEOUT only reclaims pages, never changes what a later read sees: a clean file
        // page is read again from the file, a private copy (relocated data) goes to swap or
        // stays where there is none.
        let r =
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_PAGEOUT) };
        if r == 0 {
            kib += ((end - start) / 1024) as u64;
        }
    }
    kib
}

/// The pids of this process's children whose command name (`/proc/PID/stat`'s, 15 characters
/// at most) is `comm`.
#[cfg(target_os = "linux")]
fn own_children_named(comm: &str) -> Vec<i32> {
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // `pid (comm) state ppid ...`: comm may hold spaces, so split after its last ')'.
            let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
                return false;
            };
            let ppid = stat[close + 1..]
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse::<u32>().ok());
            &stat[open + 1..close] == comm && ppid == Some(me)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_place_script_gives_the_page_the_place_as_it_was_kept() {
        let place = WindowPlace {
            view: Some("dials".into()),
            scroll: [
                ("dials".to_string(), 0.0),
                ("dials/table".to_string(), 1234.5),
            ]
            .into_iter()
            .collect(),
        }
        .tidied();
        let script = place_script(&place);
        let json = script
            .strip_prefix("window.__SWITCHBOARD_PLACE__ = ")
            .and_then(|s| s.strip_suffix(';'))
            .unwrap();
        let back: WindowPlace = serde_json::from_str(json).unwrap();
        assert_eq!(back, place);
        // A key with quotes and a line separator stays one string of the object literal.
        let odd = WindowPlace {
            view: Some("a\"b\u{2028}</script>".into()),
            scroll: BTreeMap::new(),
        };
        let script = place_script(&odd);
        let json = script
            .strip_prefix("window.__SWITCHBOARD_PLACE__ = ")
            .and_then(|s| s.strip_suffix(';'))
            .unwrap();
        assert_eq!(serde_json::from_str::<WindowPlace>(json).unwrap(), odd);
    }
}
