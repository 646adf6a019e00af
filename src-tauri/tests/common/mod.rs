//! Helpers shared by the mock-runtime IPC tests.
#![allow(clippy::unwrap_used)]

use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::INVOKE_KEY;
use tauri::webview::InvokeRequest;

/// The app's own origin, which the ACL allows: Tauri serves the front end from
/// `http://tauri.localhost` on Windows (WebView2 has no custom schemes there) and from
/// `tauri://localhost` elsewhere.
pub const ORIGIN: &str = if cfg!(windows) {
    "http://tauri.localhost"
} else {
    "tauri://localhost"
};

/// An IPC request for command `cmd` with a JSON body, from the app's own origin ([`ORIGIN`]).
pub fn request(cmd: &str, body: serde_json::Value) -> InvokeRequest {
    InvokeRequest {
        cmd: cmd.into(),
        callback: CallbackFn(0),
        error: CallbackFn(1),
        url: ORIGIN.parse().unwrap(),
        body: InvokeBody::Json(body),
        headers: Default::default(),
        invoke_key: INVOKE_KEY.to_string(),
    }
}
