//! Helpers shared by the mock-runtime IPC tests.
#![allow(clippy::unwrap_used)]

use switchboard::app::AppPaths;
use switchboard_desktop::LaunchOptions;
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{mock_builder, mock_context, noop_assets, MockRuntime, INVOKE_KEY};
use tauri::webview::InvokeRequest;
use tauri::Manager as _;

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

/// The app under tauri's mock runtime with its folders under `home`, handed in as `main`
/// hands the real app the ones `SWITCHBOARD_HOME` names (so apps of several tests run side by
/// side in one process), and its state initialised without tray or link.
pub fn app_in(home: &std::path::Path, demo: bool) -> tauri::App<MockRuntime> {
    let app = switchboard_desktop::setup(mock_builder())
        .build(mock_context(noop_assets()))
        .expect("app builds under the mock runtime");
    app.manage(LaunchOptions {
        demo,
        paths: Some(AppPaths::under(home)),
        ..Default::default()
    });
    switchboard_desktop::init(app.handle(), false).expect("state initialises");
    app
}
