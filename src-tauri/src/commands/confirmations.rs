//! Commands of the Confirmations view ([`switchboard::app::confirmations`]): the mirror's
//! snapshot, the autonomy table of a phone and the desktop-notification status.
//!
//! There is deliberately no command that approves, declines or cancels anything: the person
//! confirms on the phone. `tests/protocol/confirmations.rs` checks the command list for it.

use switchboard::error::IpcError;
use tauri::State;

use super::Core;
use crate::notify::{NotificationStatus, Notifier};

/// Everything the Confirmations view shows: waiting, ended, stray messages.
#[tauri::command]
pub fn confirmations_snapshot(core: Core<'_>) -> Result<serde_json::Value, IpcError> {
    core.confirmations_shown()
}

/// The autonomy table for `phone` at its autonomy level (`ask_before_action` when unknown).
///
/// # Errors
/// `invalid_input` for an empty phone name; `not_found` when no tool list is loaded.
#[tauri::command]
pub fn autonomy_table(core: Core<'_>, phone: String) -> Result<serde_json::Value, IpcError> {
    core.autonomy_shown(&phone)
}

/// Whether desktop notifications can be shown.
#[tauri::command]
pub fn notification_status(notifier: State<'_, std::sync::Arc<Notifier>>) -> NotificationStatus {
    NotificationStatus {
        status: notifier.status(),
        text: notifier.status_text(),
    }
}
