//! IPC commands, grouped by view. Each is a few lines over the core crate and returns
//! `Result<T, IpcError>` (`{ kind, message }` on the front end).
//!
//! The list in [`handler`] is every command the front end can call. None of them approves,
//! rejects or cancels anything on a phone (`tests/no_answers.rs` drives them all).

use tauri::{ipc::Invoke, Runtime};

pub mod app;
pub mod dials;

/// The names of every command in [`handler`], for tests that drive them all.
pub const ALL_COMMANDS: &[&str] = &[
    "app_info",
    "get_settings",
    "save_settings",
    "diagnostics",
    "dials_query",
    "dials_stats",
    "dials_subscribe",
    "dials_unsubscribe",
    "dials_get",
    "dials_export",
    "dials_import",
    "dials_close_import",
    "dials_clear",
    "dials_status",
    "dial_banner",
];

/// The invoke handler with every command.
pub fn handler<R: Runtime>() -> impl Fn(Invoke<R>) -> bool + Send + Sync + 'static {
    tauri::generate_handler![
        app::app_info,
        app::get_settings,
        app::save_settings,
        app::diagnostics,
        dials::dials_query,
        dials::dials_stats,
        dials::dials_subscribe,
        dials::dials_unsubscribe,
        dials::dials_get,
        dials::dials_export,
        dials::dials_import,
        dials::dials_close_import,
        dials::dials_clear,
        dials::dials_status,
        dials::dial_banner,
    ]
}
