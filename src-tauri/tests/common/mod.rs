//! Helpers shared by the mock-runtime IPC tests.
#![allow(clippy::unwrap_used)]

use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::INVOKE_KEY;
use tauri::webview::InvokeRequest;

/// An IPC request for command `cmd` with a JSON body, from the app's own origin
/// (`tauri://localhost`, which the ACL allows).
pub fn request(cmd: &str, body: serde_json::Value) -> InvokeRequest {
    InvokeRequest {
        cmd: cmd.into(),
        callback: CallbackFn(0),
        error: CallbackFn(1),
        url: "tauri://localhost".parse().unwrap(),
        body: InvokeBody::Json(body),
        headers: Default::default(),
        invoke_key: INVOKE_KEY.to_string(),
    }
}
