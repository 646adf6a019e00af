//! IPC commands, grouped by view. Each is a few lines over the core crate and returns
//! `Result<T, IpcError>` (`{ kind, message }` on the front end).
//!
//! The list in [`handler`] is every command the front end can call. None of them approves,
//! rejects or cancels anything on a phone (`tests/no_answers.rs` drives them all).

use tauri::{ipc::Invoke, Runtime};

pub mod app;
pub mod confirmations;
pub mod phones;

/// The names of every command in [`handler`], for tests that drive them all.
pub const ALL_COMMANDS: &[&str] = &[
    "app_info",
    "get_settings",
    "save_settings",
    "diagnostics",
    "phones_snapshot",
    "open_pairing",
    "close_pairing",
    "unpair_phone",
    "confirmations_snapshot",
    "autonomy_table",
    "notification_status",
];

/// The invoke handler with every command.
pub fn handler<R: Runtime>() -> impl Fn(Invoke<R>) -> bool + Send + Sync + 'static {
    tauri::generate_handler![
        app::app_info,
        app::get_settings,
        app::save_settings,
        app::diagnostics,
        phones::phones_snapshot,
        phones::open_pairing,
        phones::close_pairing,
        phones::unpair_phone,
        confirmations::confirmations_snapshot,
        confirmations::autonomy_table,
        confirmations::notification_status,
    ]
}
