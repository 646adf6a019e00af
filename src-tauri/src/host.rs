//! The Tauri side of [`switchboard::app::Host`]: events to the window, desktop notifications
//! through [`Notifier`], the tray's tooltip and icon.

use std::sync::Arc;

use switchboard::app::{AppEvent, Host};
use switchboard::confirmations::notify::Notification;
use tauri::{AppHandle, Emitter, Runtime};

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
    }

    fn notify(&self, notification: Notification) {
        self.notifier.show_in_background(notification);
    }

    fn set_tray(&self, connected: usize) {
        crate::tray::set_connected(&self.app, connected);
    }
}
