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
/// children named `WebKitNetworkProcess` are ended, and only while no window exists. In the
/// same step the rest the window leaves is given back: cairo's shared images
/// (`release_shared_images`), the allocator's freed pages and the window's library pages.
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
            if app.run_on_main_thread(release_shared_images).is_err() {
                tracing::debug!("the event loop had ended: no shared images to release");
            }
            // The window's memory went back to the allocator, which keeps freed pages mapped
            // in its arenas; give them back to the system (glibc; a no-op elsewhere).
            #[cfg(target_env = "gnu")]
            // SAFETY: malloc_trim only releases free memory of the allocator's own arenas.
            unsafe {
                libc::malloc_trim(0);
            }
            let kib = page_out_window_libraries();
            tracing::info!(kib, "the window's library pages given back (in the tray)");
        });
    }
    #[cfg(not(target_os = "linux"))]
    let _ = app;
}

/// Lets cairo give back the shared memory it drew the last window through (X11; GTK's thread).
///
/// On X11, cairo draws what it cannot send to the X server directly into a SysV shared memory
/// pool it shares with the server (MIT-SHM: one segment eight times the largest image, rounded
/// up to a power of two: 32 MiB for a 1100 x 770 window, about 3.4 MB of it touched by a frame).
/// cairo destroys an empty pool only when it next makes a shared image; with no window nothing
/// makes one, so the last window's pool stayed attached, and resident in this process and the X
/// server, for as long as the app ran in the tray. Making and dropping one small shared image,
/// after a round trip so the server has read every frame, runs that clean-up. A pool something
/// else still draws from (an XEmbed tray icon's image, where the desktop has no StatusNotifier
/// tray) stays. Logs the KiB of shared memory no longer resident.
#[cfg(target_os = "linux")]
fn release_shared_images() {
    use gtk::{cairo, gdk, glib::prelude::ObjectExt};
    let Some(display) = gdk::Display::default() else {
        return;
    };
    // Only X11 has MIT-SHM pools; Wayland's buffers go with the window.
    if !display.type_().name().contains("X11") {
        return;
    }
    let before = sysv_resident_kib();
    display.sync();
    let Some(root) = gdk::Screen::default().and_then(|s| s.root_window()) else {
        return;
    };
    // 16 KiB: above the size under which cairo does not use its pools.
    drop(root.create_similar_image_surface(cairo::Format::ARgb32, 64, 64, 1));
    let after = sysv_resident_kib();
    tracing::info!(
        kib = before.saturating_sub(after),
        left_kib = after,
        "the window's shared images given back (in the tray)"
    );
}

/// The KiB resident in this process's SysV shared memory mappings (`/SYSV<key>` in
/// `/proc/self/smaps`); 0 when it cannot be read.
#[cfg(target_os = "linux")]
fn sysv_resident_kib() -> u64 {
    let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else {
        return 0;
    };
    mappings(&smaps)
        .iter()
        .filter(|m| m.name.starts_with("SYSV"))
        .map(|m| m.rss_kib)
        .sum()
}

/// The shared libraries only the window runs: WebKitGTK and JavaScriptCore (about 20 MB of
/// their pages touched while a window existed), and where the window is drawn in software (no
/// GPU: virtual machines, remote desktops, Xvfb), Mesa's software rasteriser with the LLVM it
/// compiles its shaders with (40-50 MB touched while Mesa's shader cache is cold). File-backed,
/// clean, and read again from the page cache when a window is made.
#[cfg(target_os = "linux")]
const WINDOW_LIBRARIES: [&str; 6] = [
    "libwebkit2gtk-",
    "libjavascriptcoregtk-",
    "swrast_dri",
    // Mesa 24 and later build its drivers into one library.
    "libgallium",
    "libLLVM",
    // LLVM's own dependency (Debian's build links it).
    "libz3",
];

/// With no window, gives back the pages of [`WINDOW_LIBRARIES`] this process holds: their
/// read-only and executable mappings (a writable one may hold the library's own data, which is
/// not a clean copy of the file). Returns the KiB of the mappings given back (what they held
/// resident is in `/proc/self/smaps`).
#[cfg(target_os = "linux")]
fn page_out_window_libraries() -> u64 {
    let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else {
        return 0;
    };
    give_back_mappings(&smaps, |name| {
        WINDOW_LIBRARIES.iter().any(|l| name.starts_with(l))
    })
}

/// One mapping of `/proc/self/smaps`: its address range, whether it is writable, the file's
/// name, the KiB of private copies in it (`Anonymous:`) and the KiB resident (`Rss:`).
#[cfg(target_os = "linux")]
struct Mapping<'a> {
    start: usize,
    end: usize,
    writable: bool,
    name: &'a str,
    anonymous_kib: u64,
    rss_kib: u64,
}

/// The mappings `smaps` lists, in order; a header that does not parse is skipped with its
/// fields.
#[cfg(target_os = "linux")]
fn mappings(smaps: &str) -> Vec<Mapping<'_>> {
    let mut out: Vec<Mapping<'_>> = Vec::new();
    let mut current: Option<Mapping<'_>> = None;
    let kib = |v: &str| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok();
    for line in smaps.lines() {
        if let Some(v) = line.strip_prefix("Anonymous:") {
            if let Some(m) = current.as_mut() {
                m.anonymous_kib = kib(v).unwrap_or(u64::MAX);
            }
            continue;
        }
        if let Some(v) = line.strip_prefix("Rss:") {
            if let Some(m) = current.as_mut() {
                m.rss_kib = kib(v).unwrap_or(0);
            }
            continue;
        }
        // A header: `start-end perms offset dev inode [path]`; fields are `Name: value`.
        let mut f = line.split_whitespace();
        let (Some(range), Some(perms)) = (f.next(), f.next()) else {
            continue;
        };
        let Some((start, end)) = range.split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end)) = (
            usize::from_str_radix(start, 16),
            usize::from_str_radix(end, 16),
        ) else {
            continue;
        };
        if let Some(m) = current.take() {
            out.push(m);
        }
        let path = f.nth(3).unwrap_or("");
        current = Some(Mapping {
            start,
            end,
            writable: perms.contains('w'),
            name: path.rsplit('/').next().unwrap_or(path),
            // Unknown until its `Anonymous:` line: counted as holding private copies.
            anonymous_kib: u64::MAX,
            rss_kib: 0,
        });
    }
    out.extend(current);
    out
}

/// Gives back the pages of the read-only and executable mappings in `smaps` whose file name
/// `wanted` picks. A mapping with no private copies (`Anonymous: 0 kB`) holds only pages of
/// the file as it is on disk, so this process's hold on them is dropped (`MADV_DONTNEED`): the
/// next read maps them again from the file. That also lets go of pages another process maps
/// too (the X server maps Mesa's LLVM where it draws in software), which the kernel never pages
/// out. A mapping with private copies (the loader's relocations in a read-only segment) is only
/// asked to be paged out (`MADV_PAGEOUT`, Linux 5.4 and later; an older kernel refuses it and
/// nothing changes), which keeps its contents. Returns the KiB of the mappings given back.
#[cfg(target_os = "linux")]
fn give_back_mappings(smaps: &str, wanted: impl Fn(&str) -> bool) -> u64 {
    let mut kib = 0u64;
    for m in mappings(smaps) {
        if m.writable || m.end <= m.start || !wanted(m.name) {
            continue;
        }
        let advice = if m.anonymous_kib == 0 {
            libc::MADV_DONTNEED
        } else {
            libc::MADV_PAGEOUT
        };
        // SAFETY: the range is a whole mapping of this process as the kernel listed it, mapped
        // without write permission. MADV_DONTNEED is given only to one with no private copies:
        // every page in it is the file's, and a later read maps the file's page again, the
        // same bytes (as after the kernel drops clean file pages under memory pressure).
        // MADV_PAGEOUT only reclaims pages: a private copy goes to swap or stays. The list was
        // read just before; it stays true because these libraries are not unloaded while the
        // app runs (WebKitGTK and JavaScriptCore are linked in; Mesa's driver and LLVM stay
        // loaded with WebKit's display connection, which lives as long as the process), so no
        // other mapping can have taken their place in between.
        let r = unsafe { libc::madvise(m.start as *mut libc::c_void, m.end - m.start, advice) };
        if r == 0 {
            kib += ((m.end - m.start) / 1024) as u64;
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

    /// The `Rss:` and `Anonymous:` KiB of this process's mapping that starts at `addr`.
    #[cfg(target_os = "linux")]
    fn resident(addr: usize) -> (u64, u64) {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut inside = false;
        let (mut rss, mut anon) = (None, None);
        for line in smaps.lines() {
            if let Some((start, _)) = line
                .split_whitespace()
                .next()
                .and_then(|r| r.split_once('-'))
            {
                if let Ok(start) = usize::from_str_radix(start, 16) {
                    inside = start == addr;
                    continue;
                }
            }
            let kib = |v: &str| {
                v.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .unwrap()
            };
            if inside {
                if let Some(v) = line.strip_prefix("Rss:") {
                    rss = Some(kib(v));
                } else if let Some(v) = line.strip_prefix("Anonymous:") {
                    anon = Some(kib(v));
                }
            }
        }
        (rss.unwrap(), anon.unwrap())
    }

    /// A file's pages mapped read-only are given back and read again the same; a read-only
    /// mapping holding private copies (written, then made read-only, as the loader does with
    /// relocations) keeps what was written.
    #[cfg(target_os = "linux")]
    #[test]
    fn library_pages_given_back_read_the_same_again() {
        use std::io::Write;
        const PAGES: usize = 64;
        let page = 4096usize;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("libgive-back-test.so");
        let bytes: Vec<u8> = (0..PAGES * page).map(|i| (i % 251) as u8).collect();
        std::fs::File::create(&path)
            .unwrap()
            .write_all(&bytes)
            .unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let map = |prot| {
            use std::os::fd::AsRawFd;
            // SAFETY: a new private mapping of a file this test owns, of its whole length.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    PAGES * page,
                    prot,
                    libc::MAP_PRIVATE,
                    file.as_raw_fd(),
                    0,
                )
            };
            assert_ne!(p, libc::MAP_FAILED);
            p as usize
        };
        let read = |addr: usize| -> Vec<u8> {
            // SAFETY: `addr` is a live mapping of PAGES pages made above.
            unsafe { std::slice::from_raw_parts(addr as *const u8, PAGES * page) }.to_vec()
        };
        let clean = map(libc::PROT_READ);
        let copied = map(libc::PROT_READ | libc::PROT_WRITE);
        // SAFETY: within the writable mapping made above; then made read-only, as the loader
        // makes a relocated segment.
        unsafe {
            *(copied as *mut u8) = 7;
            assert_eq!(
                libc::mprotect(copied as *mut libc::c_void, PAGES * page, libc::PROT_READ),
                0
            );
        }
        assert_eq!(read(clean), bytes);
        let (rss, anon) = resident(clean);
        assert!(
            rss >= (PAGES * page / 1024) as u64,
            "all pages read in: {rss} KiB"
        );
        assert_eq!(anon, 0);
        assert!(resident(copied).1 > 0, "the written page is a private copy");

        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let kib = give_back_mappings(&smaps, |n| n == "libgive-back-test.so");
        assert_eq!(kib, (2 * PAGES * page / 1024) as u64, "both mappings asked");
        assert_eq!(resident(clean).0, 0, "the clean mapping holds nothing now");
        // Read again: the file's bytes; the private copy kept what was written.
        assert_eq!(read(clean), bytes);
        let again = read(copied);
        assert_eq!(again[0], 7);
        assert_eq!(again[1..], bytes[1..]);
        // Another library's mappings are left alone.
        assert_eq!(give_back_mappings(&smaps, |n| n == "libnot-mapped.so"), 0);
        // SAFETY: unmapping the two mappings made above, not used after.
        unsafe {
            libc::munmap(clean as *mut libc::c_void, PAGES * page);
            libc::munmap(copied as *mut libc::c_void, PAGES * page);
        }
    }

    /// A SysV shared memory segment, as cairo's MIT-SHM pools are, is counted by the pages of it
    /// this process has touched, and no longer once it is detached.
    #[cfg(target_os = "linux")]
    #[test]
    fn shared_memory_segments_count_by_their_resident_pages() {
        const PAGES: usize = 32;
        let page = 4096usize;
        let before = sysv_resident_kib();
        // SAFETY: a private segment made, attached, written within its size and detached here;
        // IPC_RMID marks it to go once detached.
        unsafe {
            let id = libc::shmget(libc::IPC_PRIVATE, PAGES * page, libc::IPC_CREAT | 0o600);
            assert!(id >= 0, "shmget: {}", std::io::Error::last_os_error());
            let addr = libc::shmat(id, std::ptr::null(), 0);
            libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut());
            assert_ne!(
                addr as isize,
                -1,
                "shmat: {}",
                std::io::Error::last_os_error()
            );
            let attached = sysv_resident_kib();
            for i in 0..PAGES / 2 {
                *(addr as *mut u8).add(i * page) = 1;
            }
            let touched = sysv_resident_kib();
            libc::shmdt(addr);
            assert!(
                touched >= attached + (PAGES / 2 * page / 1024) as u64,
                "{PAGES} pages attached ({attached} KiB), half of them written: {touched} KiB"
            );
            assert!(
                touched < attached + (PAGES * page / 1024) as u64,
                "pages never written are not counted: {touched} KiB"
            );
        }
        assert_eq!(sysv_resident_kib(), before, "detached, it is not counted");
    }

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
