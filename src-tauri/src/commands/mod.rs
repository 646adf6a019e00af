//! IPC commands, grouped by view. Each is a few lines over the core crate and returns
//! `Result<T, IpcError>` (`{ kind, message }` on the front end).
//!
//! The list in [`handler`] is every command the front end can call. None of them approves,
//! rejects or cancels anything on a phone (`tests/no_answers.rs` drives them all).

use tauri::{ipc::Invoke, Runtime};

pub mod app;
pub mod bridge;
pub mod confirmations;
pub mod dials;
pub mod phone_lines;
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
    "bridge_snapshot",
    "explain_error",
    "phone_lines_snapshot",
    "open_pairings_file",
    "close_pairings_file",
    "attach_describe",
    "revoke_phone_line",
    "test_exclusion",
    "add_known_phone_line",
    "remove_known_phone_line",
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
        bridge::bridge_snapshot,
        bridge::explain_error,
        phone_lines::phone_lines_snapshot,
        phone_lines::open_pairings_file,
        phone_lines::close_pairings_file,
        phone_lines::attach_describe,
        phone_lines::revoke_phone_line,
        phone_lines::test_exclusion,
        phone_lines::add_known_phone_line,
        phone_lines::remove_known_phone_line,
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
        confirmations::confirmations_snapshot,
        confirmations::autonomy_table,
        confirmations::notification_status,
    ]
}
