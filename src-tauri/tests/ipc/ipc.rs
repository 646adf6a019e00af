//! The whole app booted under tauri's mock runtime: real commands invoked through IPC.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use common::request;
use serde_json::json;
use switchboard::settings::{Settings, Theme};
use tauri::test::get_ipc_response;
use tauri::WebviewWindowBuilder;

/// One app with its own home, all its commands checked in turn.
#[test]
fn commands_answer_through_ipc() {
    let home = tempfile::tempdir().unwrap();
    let app = common::app_in(home.path(), false);
    let window = WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .unwrap();

    // app_info answers with the build's identity and protocol ranges.
    let info = get_ipc_response(&window, request("app_info", json!({})))
        .unwrap()
        .deserialize::<serde_json::Value>()
        .unwrap();
    assert_eq!(info["name"], "Switchboard");
    assert_eq!(info["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(info["runtime_protocol"]["min_version"], 1);

    // Settings start at their defaults, save to disk, and come back changed.
    let s: Settings = get_ipc_response(&window, request("get_settings", json!({})))
        .unwrap()
        .deserialize()
        .unwrap();
    assert_eq!(s, Settings::default());
    let changed = Settings {
        theme: Theme::Dark,
        close_to_tray: false,
        ..Settings::default()
    };
    get_ipc_response(
        &window,
        request("save_settings", json!({ "settings": changed })),
    )
    .unwrap();
    let on_disk = Settings::load(&home.path().join("config/settings.json")).unwrap();
    assert_eq!(on_disk, changed);
    let s: Settings = get_ipc_response(&window, request("get_settings", json!({})))
        .unwrap()
        .deserialize()
        .unwrap();
    assert_eq!(s.theme, Theme::Dark);

    // A bad value is refused as { kind, message } and the file is left as it was.
    let bad = Settings {
        dial_ring_capacity: 3,
        ..Settings::default()
    };
    let err = get_ipc_response(
        &window,
        request("save_settings", json!({ "settings": bad })),
    )
    .unwrap_err();
    assert_eq!(err["kind"], "invalid_input");
    assert!(err["message"]
        .as_str()
        .unwrap()
        .contains("dial_ring_capacity"));
    assert_eq!(
        Settings::load(&home.path().join("config/settings.json")).unwrap(),
        changed
    );

    // Diagnostics name where the settings and logs live.
    let d = get_ipc_response(&window, request("diagnostics", json!({})))
        .unwrap()
        .deserialize::<serde_json::Value>()
        .unwrap();
    assert!(d["settings_file"]
        .as_str()
        .unwrap()
        .starts_with(home.path().to_str().unwrap()));
}
