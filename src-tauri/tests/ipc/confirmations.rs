//! The Confirmations view's commands through IPC under tauri's mock runtime: the mirror filled
//! from the corpus sequences and read back as the view reads it; the autonomy table; and every
//! command of the app driven with plausible arguments, with the proof that none of them can
//! produce an `action.approve`, `action.reject` or `action.cancel` frame.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use common::request;

use serde_json::{json, Value};
use std::sync::Arc;
use switchboard::app::App as Core;
use switchboard::ifp::outgoing::OutgoingType;
use switchboard::ifp::{validate, Receiver};
use switchboard_desktop::commands::ALL_COMMANDS;
use tauri::test::{get_ipc_response, MockRuntime};
use tauri::{App, Manager, WebviewWindow, WebviewWindowBuilder};

const SEQUENCES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/corpus/ifp1/fixtures/sequences.json"
);

fn boot(home: &std::path::Path) -> (App<MockRuntime>, WebviewWindow<MockRuntime>) {
    let app = common::app_in(home, false);
    let window = WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .unwrap();
    (app, window)
}

fn call(window: &WebviewWindow<MockRuntime>, cmd: &str, body: Value) -> Result<Value, Value> {
    get_ipc_response(window, request(cmd, body)).map(|r| r.deserialize::<Value>().unwrap())
}

/// The commands that change something: with a support bundle open, the core refuses each with
/// `read_only` (its one gate, `App::change`); every other command only reads and answers from
/// the bundle or the live app. The shell keeps no such list: this is what the test expects.
const CHANGES: &[&str] = &[
    "save_settings",
    "open_pairing",
    "close_pairing",
    "confirm_pairing",
    "unpair_phone",
    "open_pairings_file",
    "show_phone_lines_of",
    "close_pairings_file",
    "attach_describe",
    "revoke_phone_line",
    "test_exclusion",
    "add_known_phone_line",
    "remove_known_phone_line",
    "dials_export",
    "dials_import",
    "dials_close_import",
    "dials_clear",
    "support_preview",
    "save_support_bundle",
];
#[test]
fn the_snapshot_through_ipc_shows_the_corpus_sequences() {
    let home = tempfile::tempdir().unwrap();
    let (app, window) = boot(home.path());

    // An honest empty state first.
    let empty = call(&window, "confirmations_snapshot", json!({})).unwrap();
    assert_eq!(empty["waiting"], json!([]));
    assert_eq!(empty["ended"], json!([]));
    assert_eq!(empty["tool_list"], "openphone-tools.ifp1.json");

    // Fill the managed mirror the way the hub will: receiver first, then the mirror.
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(SEQUENCES).unwrap()).unwrap();
    {
        let core = app.state::<Arc<Core>>();
        let state = &core.confirmations;
        let mut mirror = state.lock();
        for sc in doc["scenarios"].as_array().unwrap() {
            let mut rx = Receiver::new(3);
            for step in sc["steps"].as_array().unwrap() {
                let env = validate(&step["give"]).unwrap();
                let outcome = rx.receive_at_ts(&env);
                let now = env.ts.unix_seconds() * 1000;
                mirror.apply("Ada's Pixel", &env, &outcome, now);
            }
        }
    }

    let snap = call(&window, "confirmations_snapshot", json!({})).unwrap();
    let waiting = snap["waiting"].as_array().unwrap();
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0]["action_id"], "act_bind0001");
    assert_eq!(waiting[0]["state"], "requested");
    assert!(waiting[0]["expires_at_ms"].is_i64());
    let kinds: Vec<&str> = waiting[0]["anomalies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"binding_mismatch"), "{kinds:?}");

    let ended = snap["ended"].as_array().unwrap();
    let mut states: Vec<(&str, &str)> = ended
        .iter()
        .map(|c| {
            (
                c["action_id"].as_str().unwrap(),
                c["state"].as_str().unwrap(),
            )
        })
        .collect();
    states.sort_unstable();
    assert_eq!(
        states,
        [
            ("act_can00001", "cancelled"),
            ("act_exp00001", "expired"),
            ("act_idem0001", "executed"),
            ("act_life0001", "executed"),
            ("act_rej00001", "rejected"),
        ]
    );
    let idem = ended
        .iter()
        .find(|c| c["action_id"] == "act_idem0001")
        .unwrap();
    assert_eq!(idem["confirmed_by"], "policy_auto");
    assert_eq!(idem["tool"]["known"], true);
    assert_eq!(idem["tool"]["risk"], "high");
    assert_eq!(idem["hash"]["matches"], false);
    assert_eq!(idem["timeline"].as_array().unwrap().len(), 4);

    // The autonomy table for a phone whose level is unknown: ask_before_action.
    let t = call(&window, "autonomy_table", json!({"phone": "Ada's Pixel"})).unwrap();
    assert_eq!(t["autonomy"], "ask_before_action");
    assert_eq!(t["autonomy_known"], false);
    assert_eq!(t["table"]["rows"].as_array().unwrap().len(), 37);
    let err = call(&window, "autonomy_table", json!({"phone": "  "})).unwrap_err();
    assert_eq!(err["kind"], "invalid_input");

    let st = call(&window, "notification_status", json!({})).unwrap();
    assert_eq!(st["status"]["state"], "untried");
    assert!(st["text"].as_str().unwrap().len() > 10);
}

fn plausible_args(cmd: &str, home: &std::path::Path) -> Value {
    let file = |name: &str| home.join(name).display().to_string();
    match cmd {
        "save_settings" => json!({"settings": switchboard::settings::Settings::default()}),
        "save_window_place" => json!({"place": {"view": "dials", "scroll": {"dials": 120.0}}}),
        "window_painted" => json!({"view": "dials", "scroll": 0.0}),
        "autonomy_table" => json!({"phone": "Ada's Pixel"}),
        "unpair_phone" => json!({"deviceId": "dev_pixel_ada"}),
        "confirm_pairing" => json!({"id": "pairing_1", "codesMatch": true}),
        "explain_error" => {
            json!({"text": "EACCES: permission denied", "caller": null, "endpoint": null})
        }
        "open_pairings_file" => json!({"path": file("no-pairings.json")}),
        "attach_describe" => json!({"identifier": "lumirealm", "text": "{}"}),
        "revoke_phone_line" => json!({"identifier": "lumirealm", "confirm": false}),
        "test_exclusion" => json!({"identifier": "lumirealm", "path": "notes/today.md"}),
        "add_known_phone_line" => json!({"identifier": "lumiextra", "name": "LumiExtra"}),
        "remove_known_phone_line" => json!({"identifier": "lumiextra"}),
        "show_phone_lines_of" => json!({"phone": "dev_pixel_ada"}),
        "dials_subscribe" => json!({"channel": "__CHANNEL__:7"}),
        "dials_unsubscribe" => json!({"id": 1}),
        "dials_get" => json!({"id": "d1"}),
        "dial_banner" => json!({"dialId": "d1"}),
        "dial_conformance" => json!({"id": "d1"}),
        "dials_export" => json!({"request": {"path": file("dials.jsonl")}}),
        "dials_import" => json!({"path": file("no-dials.jsonl")}),
        "dials_clear" => json!({"scope": "memory"}),
        "support_preview" => json!({"options": {"include_params": false}}),
        "save_support_bundle" => json!({"path": file("support.tar.gz")}),
        "open_bundle" => json!({"path": file("no-bundle.tar.gz")}),
        "dials_history" => json!({"query": {"filter": "op:read_item -outcome:ok"}}),
        "dials_history_stats" => json!({"line": "op:read_item -outcome:ok"}),
        "dials_follow" => json!({"id": "d1", "by": "call"}),
        "parse_dial_filter" => json!({"line": "op:read_item duration>1s"}),
        _ => json!({}),
    }
}

#[test]
fn no_command_can_approve_reject_or_cancel_an_action() {
    // The shell's command names: nothing that answers for the person.
    for name in ALL_COMMANDS {
        for word in [
            "approve", "reject", "cancel", "decline", "deny", "allow", "answer",
        ] {
            assert!(
                !name.contains(word),
                "command {name} looks like it answers a confirmation"
            );
        }
    }
    // The only frames Switchboard can build: no action.* type at all.
    let types: Vec<&str> = OutgoingType::ALL.iter().map(|t| t.as_str()).collect();
    for t in &types {
        assert!(!t.starts_with("action."), "outgoing type {t}");
        let wire = serde_json::to_value(t).unwrap();
        assert_ne!(wire, "action.approve");
        assert_ne!(wire, "action.reject");
        assert_ne!(wire, "action.cancel");
    }
    for t in OutgoingType::ALL {
        let wire = serde_json::to_value(t).unwrap();
        assert_eq!(wire, json!(t.as_str()), "serialised type matches as_str");
    }

    // Every command is registered and answers (a value or an { kind, message } error), and
    // none of them changes the mirror's view of any action.
    let home = tempfile::tempdir().unwrap();
    let (app, window) = boot(home.path());
    let before = app.state::<Arc<Core>>().confirmations.lock().snapshot();
    for name in ALL_COMMANDS {
        match call(&window, name, plausible_args(name, home.path())) {
            Ok(_) => {}
            Err(e) => assert!(
                e["kind"].is_string() && e["message"].is_string(),
                "command {name} is not registered or failed oddly: {e}"
            ),
        }
    }
    let after = app.state::<Arc<Core>>().confirmations.lock().snapshot();
    assert_eq!(before, after);
    // With a support bundle open (read only), every command either only reads (the views
    // answer from the bundle) or answers `read_only`: nothing reaches the core that changes
    // anything, and nothing changes.
    let bundle = home.path().join("opened.tar.gz");
    let other = tempfile::tempdir().unwrap();
    switchboard::support::collect::from_files(
        &switchboard::app::AppPaths::under(other.path()),
        false,
        Default::default(),
        1_800_000_000_000,
    )
    .unwrap()
    .save(&bundle)
    .unwrap();
    let info = call(
        &window,
        "open_bundle",
        json!({"path": bundle.display().to_string()}),
    )
    .unwrap();
    assert_eq!(info["source"], "app_files");
    let settings_before = std::fs::read(home.path().join("config/settings.json")).ok();
    let files_before = listing(home.path());
    let before = app.state::<Arc<Core>>().confirmations.lock().snapshot();
    for name in ALL_COMMANDS {
        if *name == "close_bundle" {
            continue;
        }
        let answer = call(&window, name, plausible_args(name, home.path()));
        if CHANGES.contains(name) {
            let e = answer.expect_err(&format!("{name} answered with a bundle open"));
            assert_eq!(e["kind"], "read_only", "{name}: {e}");
        } else if let Err(e) = &answer {
            assert_ne!(e["kind"], "read_only", "{name} only reads: {e}");
        }
    }
    assert_eq!(
        call(&window, "bundle_info", json!({})).unwrap()["path"],
        json!(bundle.display().to_string()),
        "still the bundle"
    );
    let phones = call(&window, "phones_snapshot", json!({})).unwrap();
    assert_eq!(
        phones["link_error"],
        "This bundle was read from the app's files, not asked of a running app: its \
         connections are not known."
    );
    assert_eq!(
        before,
        app.state::<Arc<Core>>().confirmations.lock().snapshot()
    );
    assert_eq!(
        settings_before,
        std::fs::read(home.path().join("config/settings.json")).ok()
    );
    // The log files may grow meanwhile (a log line is no change of state: the periodic checks
    // of the key store and the addresses write them on their own); nothing else may change.
    let state = |l: Vec<(String, u64, std::time::SystemTime)>| {
        let logs = home.path().join("logs").display().to_string();
        l.into_iter()
            .filter(|(p, _, _)| !p.starts_with(&logs))
            .collect::<Vec<_>>()
    };
    let files_before = state(files_before);
    assert!(
        !files_before.is_empty(),
        "the listing sees none of the app's files"
    );
    assert_eq!(
        files_before,
        state(listing(home.path())),
        "no file was written"
    );
    assert_eq!(
        call(&window, "close_bundle", json!({})).unwrap(),
        json!(true)
    );
    assert_eq!(
        call(&window, "bundle_info", json!({})).unwrap(),
        Value::Null
    );

    // An approve-like command does not exist.
    let missing = call(
        &window,
        "approve_action",
        json!({"actionId": "act_life0001"}),
    );
    assert!(missing.is_err());
}

/// Every file under `dir` with its size and modification time.
fn listing(dir: &std::path::Path) -> Vec<(String, u64, std::time::SystemTime)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                out.push((
                    e.path().display().to_string(),
                    m.len(),
                    m.modified().unwrap(),
                ));
            }
        }
    }
    out.sort();
    out
}
