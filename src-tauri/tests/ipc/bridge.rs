//! The Bridge view's commands through IPC under the mock runtime, on the real host-error corpus.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use common::request;
use serde_json::{json, Value};
use std::sync::Arc;
use switchboard::app::App;
use switchboard::bridge::CallPath;
use tauri::test::get_ipc_response;
use tauri::{Manager, WebviewWindowBuilder};

const HOST_ERRORS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/corpus/lumiverse/host-errors.json"
);

fn cases() -> Vec<Value> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(HOST_ERRORS).unwrap()).unwrap();
    v["cases"].as_array().unwrap().clone()
}

#[test]
fn bridge_commands_through_ipc() {
    let home = tempfile::tempdir().unwrap();
    let app = common::app_in(home.path(), false);
    let window = WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .unwrap();
    let call = |cmd: &str, body: Value| get_ipc_response(&window, request(cmd, body));
    let ok = |cmd: &str, body: Value| call(cmd, body).unwrap().deserialize::<Value>().unwrap();

    // The spec's example gives the spec's banner words, judged with the embedded manifests.
    let spec = &cases()[0];
    let e = ok("explain_error", json!({ "text": spec["input"] }));
    assert_eq!(
        e["banner"]["message"],
        "LumiAgent is missing push_notification, required for LumiRealm communication."
    );
    assert_eq!(
        e["banner"]["fix"],
        "In Lumiverse, open Extensions, then LumiAgent, and grant push_notification"
    );
    assert_eq!(e["banner"]["manifest_checked"], true);
    assert_eq!(e["manifest_known"], true);
    assert_eq!(e["known_manifests"], json!(["lumiagent", "lumirealm"]));
    assert_eq!(e["no_banner"], Value::Null);
    assert_eq!(
        e["path"],
        json!({"caller": "lumiagent", "endpoint": "lumirealm.phoneline"})
    );

    // Every corpus text is classified as the corpus expects, with its values and wrappers.
    for case in cases() {
        let e = ok("explain_error", json!({ "text": case["input"] }));
        let c = &e["classification"];
        let want = &case["expect"];
        assert_eq!(c["kind"], want["kind"], "{}", case["input"]);
        for (k, v) in want.as_object().unwrap() {
            assert_eq!(&c[k], v, "{k} of {}", case["input"]);
        }
        // A banner exactly when it is a permission failure with something grantable.
        if want["kind"] == "permission" {
            let b = &e["banner"];
            if b.is_null() {
                assert_eq!(e["no_banner"], "nothing_grantable", "{}", case["input"]);
            } else {
                let grantable = b["grantable"].as_array().unwrap();
                assert!(!grantable.is_empty());
                // Never asks for a permission the missing extension does not declare.
                for p in grantable {
                    assert!(!p.as_str().unwrap().starts_with("mcp_servers"), "{b}");
                }
            }
        } else {
            assert_eq!(e["banner"], Value::Null);
            assert_eq!(e["no_banner"], "not_permission", "{}", case["input"]);
        }
    }

    // Agent-only grants are shown apart and never asked for.
    let dup = cases()
        .into_iter()
        .find(|c| {
            c["note"]
                .as_str()
                .unwrap_or("")
                .contains("duplicates dropped")
        })
        .unwrap();
    let e = ok("explain_error", json!({ "text": dup["input"] }));
    assert_eq!(e["banner"]["grantable"], json!(["characters", "chats"]));
    assert_eq!(
        e["not_grantable"],
        json!([
            "mcp_servers",
            "regex_scripts_unrestricted",
            "mcp_servers.create"
        ])
    );
    assert!(!e["banner"]["fix"].as_str().unwrap().contains("mcp"));

    // The owner form names no requester; an explicit caller and endpoint are used as given.
    let owner = ok(
        "explain_error",
        json!({
            "text": "Shared RPC endpoint \"lumiagent.phoneline_request\" requires owner \"lumirealm\" permissions: characters",
            "caller": "lumirealm",
            "endpoint": "lumiagent.phoneline_request",
        }),
    );
    assert_eq!(owner["path"]["caller"], "lumirealm");
    assert_eq!(owner["missing_name"], "LumiRealm");
    assert_eq!(
        owner["banner"]["message"],
        "LumiRealm is missing characters, required for LumiAgent communication."
    );

    // Empty and oversized texts are refused in words.
    let err = call("explain_error", json!({ "text": "   " })).unwrap_err();
    assert_eq!(err["kind"], "invalid_input");
    let err = call("explain_error", json!({ "text": "x".repeat(70_000) })).unwrap_err();
    assert!(err["message"].as_str().unwrap().contains("70000 bytes"));

    // The snapshot starts empty, then shows what the shared store records (as the hub will).
    let s = ok("bridge_snapshot", json!({}));
    assert_eq!(s, json!({"banners": [], "history": [], "diagnostics": []}));
    let core = app.state::<Arc<App>>();
    let state = &core.bridge;
    let shared = state.store.clone();
    let handler = CallPath::new("lumiagent", "lumirealm.phoneline");
    const PHONE: &str = "dev_aaaaaaaaaaaaaaaa";
    let probe = CallPath::new("lumirealm", "lumiagent.phoneline_probe");
    {
        let mut store = shared.lock().unwrap();
        store.record_failure(
            PHONE,
            &handler,
            spec["input"].as_str().unwrap(),
            1_000,
            &state.extensions,
        );
        store.record_failure(
            PHONE,
            &handler,
            spec["input"].as_str().unwrap(),
            2_000,
            &state.extensions,
        );
        store.record_failure(PHONE, &probe, "Connection closed", 3_000, &state.extensions);
    }
    let s = ok("bridge_snapshot", json!({}));
    let banners = s["banners"].as_array().unwrap();
    assert_eq!(banners.len(), 1);
    assert_eq!(banners[0]["count"], 2);
    assert_eq!(banners[0]["phone"], PHONE);
    assert_eq!(banners[0]["first_seen_ms"], 1_000);
    assert_eq!(banners[0]["last_seen_ms"], 2_000);
    assert_eq!(s["diagnostics"][0]["error"]["kind"], "connection_closed");
    assert_eq!(s["diagnostics"][0]["reason"], "not_permission");
    // A later success on the handler's path clears the banner to history.
    shared
        .lock()
        .unwrap()
        .record_success(PHONE, &handler, 4_000);
    let s = ok("bridge_snapshot", json!({}));
    assert_eq!(s["banners"], json!([]));
    assert_eq!(s["history"][0]["reason"], "call_succeeded");
    assert_eq!(s["history"][0]["retired_at_ms"], 4_000);
}
