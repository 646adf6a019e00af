//! The Tauri side of [`switchboard::app::Host`]: events to the window, desktop notifications
//! through [`Notifier`], the tray's tooltip and icon.

use std::sync::Arc;

use switchboard::app::{AppEvent, Host};
use switchboard::confirmations::notify::Notification;
use switchboard::support::tray::TraySummary;
use tauri::{AppHandle, Emitter, Manager, Runtime};

use crate::notify::Notifier;

/// The host the shell gives the app.
pub struct TauriHost<R: Runtime> {
    app: AppHandle<R>,
    notifier: Arc<Notifier>,
}

impl<R: Runtime> TauriHost<R> {
    /// A host over `app` showing notifications with `notifier`.
    pub fn new(app: AppHandle<R>, notifier: Arc<Notifier>) -> Self {
        Self { app, notifier }
    }
}

impl<R: Runtime> Host for TauriHost<R> {
    fn emit(&self, event: &AppEvent) {
        if let Err(e) = self.app.emit(event.name(), event.payload()) {
            tracing::debug!("event {} not sent to the window: {e}", event.name());
        }
        // The File menu's "Close bundle" and "Save support bundle…" follow the bundle.
        if *event == AppEvent::Bundle {
            let open = self
                .app
                .try_state::<Arc<switchboard::app::App>>()
                .is_some_and(|core| core.viewing().is_some());
            crate::menu::sync(&self.app, open);
        }
    }

    fn notify(&self, notification: Notification) {
        self.notifier.show_in_background(notification);
    }

    /// Queued to the main thread, never waited for: tray calls from another thread block until
    /// the main thread runs them, and during shutdown the main thread waits for the app.
    fn set_tray(&self, summary: &TraySummary) {
        let app = self.app.clone();
        let summary = summary.clone();
        if let Err(e) = self
            .app
            .run_on_main_thread(move || crate::tray::set_summary(&app, &summary))
        {
            tracing::debug!("tray not updated: {e}");
        }
    }
}
