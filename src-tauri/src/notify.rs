//! Desktop notifications: the texts the core decides ([`switchboard::confirmations::notify`]),
//! shown through the freedesktop notification service (notify-rust, over zbus on Linux). The
//! core hands them over already escaped for notification markup, phone-supplied parts one plain
//! line each, so they are passed on as they are.
//!
//! Why: the person should learn that a phone waits for them to confirm something, how a
//! confirmation ended, and that a bridge-status banner appeared, even with the window hidden.
//! Every text sends them to the phone: nothing here can approve, reject or cancel anything.
//!
//! A desktop with no notification service (`org.freedesktop.DBus.Error.ServiceUnknown` on the
//! session bus), or no session bus at all, is not an error worth more than a line: it is logged
//! once, remembered as a [`NotifyStatus`] the Settings view shows ([`Notifier::status_text`]),
//! and the app goes on. notify-rust exposes its zbus error only as text, so the service being
//! absent is recognised by the D-Bus error name `ServiceUnknown` in it.
//!
//! Showing a notification is a blocking D-Bus call (notify-rust runs its own small executor):
//! call [`Notifier::show`] off the async runtime, e.g. through [`Notifier::show_in_background`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use switchboard::confirmations::notify::Notification;
use ts_rs::TS;

/// The app name notifications carry.
pub const APP_NAME: &str = "Switchboard";

/// The D-Bus error name of a missing service.
const SERVICE_UNKNOWN: &str = "org.freedesktop.DBus.Error.ServiceUnknown";

/// Why a notification was not shown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NotifyError {
    /// No notification service on the session bus.
    #[error("no notification service is running on this desktop (org.freedesktop.Notifications is not on the session bus): {0}")]
    ServiceUnknown(String),
    /// Anything else (no session bus, a refused call, ...), with the D-Bus error text.
    #[error("desktop notification failed: {0}")]
    Failed(String),
}

/// What the notifier knows about the desktop's notification service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[serde(tag = "state", rename_all = "snake_case")]
#[ts(export)]
pub enum NotifyStatus {
    /// Nothing sent yet.
    Untried,
    /// The last notification was shown.
    Working,
    /// No notification service: notifications are not shown.
    NoService {
        /// The error text.
        detail: String,
    },
    /// The last notification failed for another reason.
    Failed {
        /// The error text.
        detail: String,
    },
}

/// Shows desktop notifications and remembers whether it can.
#[derive(Debug)]
pub struct Notifier {
    status: Mutex<NotifyStatus>,
    logged_missing: AtomicBool,
}

impl Default for Notifier {
    fn default() -> Self {
        Self::new()
    }
}

impl Notifier {
    /// A notifier that has not tried yet.
    pub fn new() -> Self {
        Self {
            status: Mutex::new(NotifyStatus::Untried),
            logged_missing: AtomicBool::new(false),
        }
    }

    /// The current status.
    pub fn status(&self) -> NotifyStatus {
        switchboard::sync::lock(&self.status).clone()
    }

    /// The status in words, for the Settings view.
    pub fn status_text(&self) -> String {
        match self.status() {
            NotifyStatus::Untried => "No desktop notification sent yet.".to_string(),
            NotifyStatus::Working => "Desktop notifications are working.".to_string(),
            NotifyStatus::NoService { .. } => "No notification service is running on this desktop, so Switchboard cannot show notifications. Everything else works; start a notification daemon to get them.".to_string(),
            NotifyStatus::Failed { detail } => format!("The last desktop notification failed: {detail}"),
        }
    }

    fn set_status(&self, s: NotifyStatus) {
        *switchboard::sync::lock(&self.status) = s;
    }

    /// Shows `n` now (blocking D-Bus call). A missing service is logged once and remembered;
    /// never panics.
    ///
    /// # Errors
    /// [`NotifyError::ServiceUnknown`] when no notification service runs, [`NotifyError::Failed`]
    /// otherwise.
    pub fn show(&self, n: &Notification) -> Result<(), NotifyError> {
        let mut notification = notify_rust::Notification::new();
        notification
            .appname(APP_NAME)
            .summary(&n.title)
            .body(&n.body);
        // Windows names a toast's sender by its AppUserModelID: the installers register the
        // bundle identifier as Switchboard's (without it the toast says "Windows PowerShell").
        #[cfg(windows)]
        notification.app_id(switchboard::app::paths::APP_IDENTIFIER);
        let result = notification.show();
        match result {
            Ok(_) => {
                self.set_status(NotifyStatus::Working);
                self.logged_missing.store(false, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => {
                let text = e.to_string();
                if text.contains(SERVICE_UNKNOWN) {
                    if !self.logged_missing.swap(true, Ordering::Relaxed) {
                        tracing::warn!("no desktop notification service; notifications are off until one appears: {text}");
                    }
                    self.set_status(NotifyStatus::NoService {
                        detail: text.clone(),
                    });
                    Err(NotifyError::ServiceUnknown(text))
                } else {
                    tracing::warn!("desktop notification failed: {text}");
                    self.set_status(NotifyStatus::Failed {
                        detail: text.clone(),
                    });
                    Err(NotifyError::Failed(text))
                }
            }
        }
    }

    /// Shows `n` on a short-lived thread (the D-Bus call blocks); errors are recorded in the
    /// status and the log.
    pub fn show_in_background(self: &Arc<Self>, n: Notification) {
        let me = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name("notify".into())
            .spawn(move || {
                let _ = me.show(&n);
            });
        if let Err(e) = spawned {
            tracing::warn!("could not start the notification thread: {e}");
        }
    }
}

/// The desktop-notification status for the Settings view.
#[derive(Debug, Clone, Serialize, TS)]
#[ts(export)]
pub struct NotificationStatus {
    /// What the notifier knows.
    pub status: NotifyStatus,
    /// The same in words.
    pub text: String,
}
