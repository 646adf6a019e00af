//! What only the desktop shell can do, behind a small trait: emit an event to the window, show
//! a desktop notification, set the tray. The app layer calls it; the shell implements it over
//! Tauri; tests use [`RecordingHost`].

use std::sync::Mutex;

use crate::tray::TraySummary;
use switchboard_domain::confirmations::notify::Notification;
use switchboard_wire::sync::lock;

use super::event::AppEvent;

/// The shell's side of the app. Every method must return quickly and never block on the
/// window: the app calls it from its hub task, in the order things happened.
pub trait Host: Send + Sync + 'static {
    /// Sends `event` to the window (fire and forget: a closed window is not an error).
    fn emit(&self, event: &AppEvent);
    /// Shows a desktop notification (in the background; a desktop without a notification
    /// service is the host's to report).
    fn notify(&self, notification: Notification);
    /// Shows the tray's summary (tooltip and icon: how many phones are connected, banners
    /// raised, confirmations waiting on a phone; the menu lists them).
    fn set_tray(&self, summary: &TraySummary);
}

/// One call the app made on a [`RecordingHost`].
#[derive(Debug, Clone, PartialEq)]
pub enum HostCall {
    /// [`Host::emit`].
    Emit(AppEvent),
    /// [`Host::notify`].
    Notify(Notification),
    /// [`Host::set_tray`].
    Tray(TraySummary),
}

/// A host that records every call, in order, for tests of the app layer without a window.
#[derive(Debug, Default)]
pub struct RecordingHost {
    calls: Mutex<Vec<HostCall>>,
}

impl RecordingHost {
    /// A host with nothing recorded.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every call so far, oldest first.
    pub fn calls(&self) -> Vec<HostCall> {
        lock(&self.calls).clone()
    }

    /// Every call since the last take, oldest first, forgetting them (for a host that runs
    /// long and only counts).
    pub fn take_calls(&self) -> Vec<HostCall> {
        std::mem::take(&mut *lock(&self.calls))
    }

    /// The tray summaries set so far, oldest first.
    pub fn trays(&self) -> Vec<TraySummary> {
        lock(&self.calls)
            .iter()
            .filter_map(|c| match c {
                HostCall::Tray(t) => Some(t.clone()),
                _ => None,
            })
            .collect()
    }

    /// The names of the events emitted so far, oldest first.
    pub fn event_names(&self) -> Vec<&'static str> {
        lock(&self.calls)
            .iter()
            .filter_map(|c| match c {
                HostCall::Emit(e) => Some(e.name()),
                _ => None,
            })
            .collect()
    }
}

impl Host for RecordingHost {
    fn emit(&self, event: &AppEvent) {
        lock(&self.calls).push(HostCall::Emit(event.clone()));
    }

    fn notify(&self, notification: Notification) {
        lock(&self.calls).push(HostCall::Notify(notification));
    }

    fn set_tray(&self, summary: &TraySummary) {
        lock(&self.calls).push(HostCall::Tray(summary.clone()));
    }
}
