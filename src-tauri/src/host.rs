//! The Tauri side of [`switchboard::app::Host`]: events to the window, desktop notifications
//! through [`Notifier`], the tray's tooltip and icon.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchboard::app::tray::TraySummary;
use switchboard::app::{AppEvent, Host};
use switchboard::confirmations::notify::Notification;
use tauri::{AppHandle, Emitter, Manager, Runtime};

use crate::notify::Notifier;

/// Shortest time between two tray updates: a phone streaming failing dials raises and clears
/// banners hundreds of times a second, and each update draws the icon (a PNG the tray library
/// writes) and rebuilds the menu on the main thread, which the window's IPC also needs.
pub const TRAY_GAP: Duration = Duration::from_millis(250);

/// The tray's updates in flight: the newest summary asked for, whether a flush is under way,
/// and the summary shown last.
#[derive(Default)]
struct TrayQueue {
    latest: Option<TraySummary>,
    flushing: bool,
    shown: Option<TraySummary>,
}

/// Shortest time between two banner notices sent to the window. A phone streaming dials that
/// fail and succeed on the same line raises and clears its banner hundreds of times a second
/// (journey 8's stream: 77 raised and 77 cleared a second); each notice is a script the web
/// process compiles and runs and the main thread hands over, and all the window does with one
/// is read the glance line again, at most 4 times a second (`ui/src/App.svelte`). The first
/// notice goes at once; those that follow within the gap are held, and the newest of them goes
/// when the gap ends, so the window always hears of the last change.
pub const BANNER_NOTICE_GAP: Duration = Duration::from_millis(250);

/// Whether `event` is a banner notice (raised or cleared), which [`BANNER_NOTICE_GAP`] spaces.
pub fn is_banner_notice(event: &AppEvent) -> bool {
    matches!(
        event,
        AppEvent::Notice(
            switchboard::hub::HubNotice::BannerRaised { .. }
                | switchboard::hub::HubNotice::BannerCleared { .. }
        )
    )
}

/// Banner notices in flight to the window: the newest one held back and whether a flush is
/// under way (it sends what is held each [`BANNER_NOTICE_GAP`]).
#[derive(Default)]
struct NoticeQueue {
    held: Option<AppEvent>,
    flushing: bool,
}

/// The host the shell gives the app.
pub struct TauriHost<R: Runtime> {
    app: AppHandle<R>,
    notifier: Arc<Notifier>,
    tray: Arc<Mutex<TrayQueue>>,
    banners: Arc<Mutex<NoticeQueue>>,
    /// "The Bridge status changed", spaced as banner notices are (a stream of failing dials
    /// moves it with every batch), in a queue of its own so neither hides the other.
    bridge: Arc<Mutex<NoticeQueue>>,
}

impl<R: Runtime> TauriHost<R> {
    /// A host over `app` showing notifications with `notifier`.
    pub fn new(app: AppHandle<R>, notifier: Arc<Notifier>) -> Self {
        Self {
            app,
            notifier,
            tray: Arc::default(),
            banners: Arc::default(),
            bridge: Arc::default(),
        }
    }

    fn send(&self, event: &AppEvent) {
        send_to_window(&self.app, event);
    }
}

/// Emits `event` to the window (a failure is logged: the window may be gone).
fn send_to_window<R: Runtime>(app: &AppHandle<R>, event: &AppEvent) {
    if let Err(e) = app.emit(event.name(), event.payload()) {
        tracing::debug!("event {} not sent to the window: {e}", event.name());
    }
}

/// Waits [`BANNER_NOTICE_GAP`], sends the banner notice held meanwhile if any, and goes on
/// while one was; ends (and lets the next notice go at once) after a gap with none. Bounded:
/// each turn takes what is held.
async fn flush_banner_notices<R: Runtime>(app: AppHandle<R>, queue: Arc<Mutex<NoticeQueue>>) {
    loop {
        tokio::time::sleep(BANNER_NOTICE_GAP).await;
        let next = {
            let mut q = switchboard::sync::lock(&queue);
            match q.held.take() {
                Some(e) => e,
                None => {
                    q.flushing = false;
                    return;
                }
            }
        };
        send_to_window(&app, &next);
    }
}

/// Shows the newest summary asked for (when it differs from the one shown), then waits
/// [`TRAY_GAP`] and goes on while more were asked for meanwhile. Bounded: each turn takes
/// the pending summary, and the loop ends on a turn that found none.
async fn flush_tray<R: Runtime>(app: AppHandle<R>, queue: Arc<Mutex<TrayQueue>>) {
    loop {
        let next = {
            let mut q = switchboard::sync::lock(&queue);
            match q.latest.take() {
                Some(s) if q.shown.as_ref() != Some(&s) => {
                    q.shown = Some(s.clone());
                    Some(s)
                }
                Some(_) => None,
                None => {
                    q.flushing = false;
                    return;
                }
            }
        };
        if let Some(summary) = next {
            let handle = app.clone();
            if let Err(e) =
                app.run_on_main_thread(move || crate::tray::set_summary(&handle, &summary))
            {
                tracing::debug!("tray not updated: {e}");
            }
        }
        tokio::time::sleep(TRAY_GAP).await;
    }
}

impl<R: Runtime> Host for TauriHost<R> {
    fn emit(&self, event: &AppEvent) {
        // Dial counts stay out of the window: it has no listener for them (Live dials streams
        // through its own channel), and each event is a script the web process compiles and
        // runs, one per batch of dials a link reads (hundreds a second while a phone streams).
        if matches!(
            event,
            AppEvent::Notice(switchboard::hub::HubNotice::DialCount { .. })
        ) {
            return;
        }
        // Banner notices and bridge changes: at most one of each per `BANNER_NOTICE_GAP`, the
        // newest last.
        let spaced = if is_banner_notice(event) {
            Some(&self.banners)
        } else if *event == AppEvent::Bridge {
            Some(&self.bridge)
        } else {
            None
        };
        if let Some(queue) = spaced {
            {
                let mut q = switchboard::sync::lock(queue);
                if q.flushing {
                    q.held = Some(event.clone());
                    return;
                }
                q.flushing = true;
            }
            self.send(event);
            tauri::async_runtime::spawn(flush_banner_notices(self.app.clone(), Arc::clone(queue)));
            return;
        }
        self.send(event);
        // The File menu's "Close bundle" and "Save support bundle…" follow the bundle.
        if *event == AppEvent::Bundle {
            let open = self
                .app
                .try_state::<Arc<switchboard::app::App>>()
                .is_some_and(|core| core.bundle_open());
            crate::menu::sync(&self.app, open);
        }
    }

    fn notify(&self, notification: Notification) {
        self.notifier.show_in_background(notification);
    }

    /// Queued to the main thread, never waited for: tray calls from another thread block until
    /// the main thread runs them, and during shutdown the main thread waits for the app. At
    /// most one update per [`TRAY_GAP`], the newest summary, and none when it is the one shown.
    fn set_tray(&self, summary: &TraySummary) {
        {
            let mut q = switchboard::sync::lock(&self.tray);
            q.latest = Some(summary.clone());
            if q.flushing {
                return;
            }
            q.flushing = true;
        }
        tauri::async_runtime::spawn(flush_tray(self.app.clone(), Arc::clone(&self.tray)));
    }
}
