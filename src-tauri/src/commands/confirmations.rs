//! Commands of the Confirmations view: the mirror's snapshot, the autonomy table of a phone and
//! the desktop-notification status.
//!
//! There is deliberately no command that approves, declines or cancels anything: the person
//! confirms on the phone (`ifp1-notes.md`, "Action lifecycle (confirmation is local to the
//! surface)"). `tests/confirmations.rs` checks the command list for it.

use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;
use switchboard::confirmations::{ConfirmationMirror, ConfirmationsSnapshot};
use switchboard::error::IpcError;
use switchboard::runtime::{Autonomy, AutonomyTable};
use tauri::State;
use ts_rs::TS;

use crate::notify::{Notifier, NotifyStatus};

/// The Confirmations view's managed state: the mirror the link's hub feeds (the hub is given
/// the same `Arc`) and the desktop notifier.
pub struct ConfirmationsState {
    /// The mirror of every proposal seen from every phone.
    pub mirror: Arc<Mutex<ConfirmationMirror>>,
    /// Desktop notifications.
    pub notifier: Arc<Notifier>,
}

impl ConfirmationsState {
    /// An empty mirror with the bundled OpenPhone tool list, and a notifier that has not tried
    /// yet. In debug builds only, `SWITCHBOARD_SAMPLE_CONFIRMATIONS=1` fills the mirror with
    /// corpus-like sample proposals (see [`crate::sample`]); release builds ignore the variable.
    pub fn new() -> Self {
        #[allow(unused_mut)]
        let mut mirror = ConfirmationMirror::with_bundled_catalogue();
        #[cfg(debug_assertions)]
        if std::env::var("SWITCHBOARD_SAMPLE_CONFIRMATIONS").as_deref() == Ok("1") {
            crate::sample::fill_confirmations(&mut mirror);
        }
        Self {
            mirror: Arc::new(Mutex::new(mirror)),
            notifier: Arc::new(Notifier::new()),
        }
    }

    /// Locks the mirror (a poisoned lock is recovered: the mirror is plain data).
    pub fn lock(&self) -> MutexGuard<'_, ConfirmationMirror> {
        self.mirror.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Default for ConfirmationsState {
    fn default() -> Self {
        Self::new()
    }
}

/// "What this phone will ask you to confirm".
#[derive(Debug, Clone, Serialize, TS)]
#[ts(export)]
pub struct PhoneAutonomy {
    /// The phone asked about.
    pub phone: String,
    /// The autonomy level used.
    pub autonomy: Autonomy,
    /// False when the phone has not said its level (then `ask_before_action`, the spec's
    /// fallback, is shown).
    pub autonomy_known: bool,
    /// The table over the phone's tools.
    pub table: AutonomyTable,
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

/// Everything the Confirmations view shows: waiting, ended, stray messages.
#[tauri::command]
pub fn confirmations_snapshot(state: State<'_, ConfirmationsState>) -> ConfirmationsSnapshot {
    state.lock().snapshot()
}

/// The autonomy table for `phone` at its autonomy level (`ask_before_action` when unknown).
///
/// # Errors
/// `invalid_input` for an empty phone name; `not_found` when no tool list is loaded.
#[tauri::command]
pub fn autonomy_table(
    state: State<'_, ConfirmationsState>,
    phone: String,
) -> Result<PhoneAutonomy, IpcError> {
    if phone.trim().is_empty() {
        return Err(IpcError::invalid_input("phone: a phone name is required"));
    }
    let mirror = state.lock();
    let (autonomy, autonomy_known) = mirror.autonomy_of(&phone);
    let table = mirror.autonomy_table(&phone).ok_or_else(|| {
        IpcError::new(
            "not_found",
            "no OpenPhone tool list is loaded, so the autonomy table cannot be computed",
        )
    })?;
    Ok(PhoneAutonomy {
        phone,
        autonomy,
        autonomy_known,
        table,
    })
}

/// Whether desktop notifications can be shown.
#[tauri::command]
pub fn notification_status(state: State<'_, ConfirmationsState>) -> NotificationStatus {
    NotificationStatus {
        status: state.notifier.status(),
        text: state.notifier.status_text(),
    }
}
