//! The Phone lines view's commands through IPC under the mock runtime: a real pairings file in
//! a temp folder, the corpus describe manifest, revoke with confirmation and backup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use common::request;
use serde_json::{json, Value};
use switchboard::phone_line::manifest::manifest_hash;
use switchboard::phone_line::pairings::PairingsFile;
use tauri::test::get_ipc_response;
use tauri::WebviewWindowBuilder;

const DESCRIBE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/corpus/lumiverse/lumirealm.describe.json"
);

fn line<'a>(snap: &'a Value, id: &str) -> &'a Value {
    snap["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["identifier"] == id)
        .unwrap_or_else(|| panic!("no line {id} in {snap}"))
}

#[test]
fn phone_line_commands_through_ipc() {
    let home = tempfile::tempdir().unwrap();
    let app = common::app_in(home.path(), false);
    let window = WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .unwrap();
    let call = |cmd: &str, body: Value| get_ipc_response(&window, request(cmd, body));
    let ok = |cmd: &str, body: Value| call(cmd, body).unwrap().deserialize::<Value>().unwrap();

    // Nothing opened: no lines, the built-in registry, nothing to revoke.
    let s = ok("phone_lines_snapshot", json!({}));
    assert_eq!(s["source"], json!({"kind": "none"}));
    assert_eq!(s["lines"], json!([]));
    assert_eq!(
        s["registry"],
        json!([{"identifier": "lumirealm", "name": "LumiRealm", "builtin": true}])
    );
    assert_eq!(s["can_revoke"], false);

    // A pairings file as LumiAgent keeps it: LumiRealm paired on the corpus manifest, a line
    // the registry does not know, and an unknown top-level member that must survive a write.
    let describe_text = std::fs::read_to_string(DESCRIBE).unwrap();
    let describe: Value = serde_json::from_str(&describe_text).unwrap();
    let hash = manifest_hash(&describe).unwrap();
    let files = tempfile::tempdir().unwrap();
    let path = files.path().join("phoneline-pairings.json");
    let original = serde_json::to_string_pretty(&json!({
        "version": 1,
        "pairings": {
            "lumirealm": {"identifier": "lumirealm", "displayName": "LumiRealm", "allowed": true,
                          "manifestHash": hash, "decidedAt": 1_726_000_000_000u64},
            "risu-notes": {"identifier": "risu-notes", "displayName": "Risu Notes", "allowed": true,
                           "manifestHash": "ab".repeat(32), "decidedAt": 1_726_000_100_000u64}
        },
        "note": "kept"
    }))
    .unwrap();
    std::fs::write(&path, &original).unwrap();

    // A folder is enough: the file inside is found. Opening writes nothing.
    let s = ok("open_pairings_file", json!({ "path": files.path() }));
    assert_eq!(s["source"]["kind"], "opened_file");
    assert_eq!(s["source"]["path"], path.to_str().unwrap());
    assert_eq!(s["source"]["records"], 2);
    assert_eq!(s["source"]["unknown_fields"], json!(["note"]));
    assert_eq!(s["can_revoke"], true);
    let realm = line(&s, "lumirealm");
    assert_eq!(realm["state"], "paired");
    assert_eq!(realm["allowed"], true);
    assert_eq!(realm["decided_at"], 1_726_000_000_000u64);
    assert_eq!(realm["manifest_hash"], hash.as_str());
    assert_eq!(realm["hash_matches_current"], Value::Null);
    assert_eq!(line(&s, "risu-notes")["state"], "unknown");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
    assert!(!files.path().join("phoneline-pairings.json.bak").exists());

    // Exclusions need the line's describe; pasting the corpus describe gives surfaces,
    // exclusions and a matching manifest hash.
    let err = call(
        "test_exclusion",
        json!({"identifier": "lumirealm", "path": "lumirealm.source"}),
    )
    .unwrap_err();
    assert_eq!(err["kind"], "not_found");
    let s = ok(
        "attach_describe",
        json!({"identifier": "lumirealm", "text": describe_text}),
    );
    let realm = line(&s, "lumirealm");
    assert_eq!(realm["hash_matches_current"], true);
    assert_eq!(realm["surfaces"][0]["id"], describe["surfaces"][0]["id"]);
    assert_eq!(
        realm["surfaces"][0]["scope"],
        describe["surfaces"][0]["scope"]
    );
    assert_eq!(realm["exclusions"], describe["excludeFromSearch"]);
    let t = ok(
        "test_exclusion",
        json!({"identifier": "lumirealm", "path": "character.extensions.lumirealm.payload.first_mes[0]"}),
    );
    assert_eq!(t["relative_path"], "lumirealm.payload.first_mes[0]");
    assert_eq!(t["matched"], "lumirealm.payload.first_mes");
    let t = ok(
        "test_exclusion",
        json!({"identifier": "lumirealm", "path": "lumirealm.sources"}),
    );
    assert_eq!(
        t["matched"],
        Value::Null,
        "segment-aware: .sources is not .source"
    );

    // A changed manifest shows as changed since the decision.
    let mut changed = describe.clone();
    changed["extension"]["version"] = json!("0.2.0");
    let s = ok(
        "attach_describe",
        json!({"identifier": "lumirealm", "text": changed.to_string()}),
    );
    let realm = line(&s, "lumirealm");
    assert_eq!(realm["hash_matches_current"], false);
    assert!(realm["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("manifest changed")));
    let err = call(
        "attach_describe",
        json!({"identifier": "lumirealm", "text": "{ not json"}),
    )
    .unwrap_err();
    assert_eq!(err["kind"], "invalid_input");

    // Revoke needs the confirmation; without it nothing is written.
    let err = call(
        "revoke_phone_line",
        json!({"identifier": "lumirealm", "confirm": false}),
    )
    .unwrap_err();
    assert_eq!(err["kind"], "invalid_input");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
    let err = call(
        "revoke_phone_line",
        json!({"identifier": "nobody", "confirm": true}),
    )
    .unwrap_err();
    assert_eq!(err["kind"], "not_found");

    // Confirmed: written atomically, the previous file kept as .bak, everything else kept.
    let s = ok(
        "revoke_phone_line",
        json!({"identifier": "lumirealm", "confirm": true}),
    );
    let realm = line(&s, "lumirealm");
    assert_eq!(realm["state"], "revoked");
    assert_eq!(realm["allowed"], false);
    assert!(realm["decided_at"].as_u64().unwrap() > 1_726_000_000_000);
    let bak = files.path().join("phoneline-pairings.json.bak");
    assert_eq!(std::fs::read_to_string(&bak).unwrap(), original);
    let written = PairingsFile::load(&path).unwrap();
    let rec = written.get("lumirealm").unwrap();
    assert!(!rec.allowed());
    assert_eq!(rec.manifest_hash(), hash);
    assert!(written.get("risu-notes").unwrap().allowed());
    assert_eq!(written.unknown_fields().count(), 1);
    let leftovers: Vec<_> = std::fs::read_dir(files.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let err = call(
        "revoke_phone_line",
        json!({"identifier": "lumirealm", "confirm": true}),
    )
    .unwrap_err();
    assert!(err["message"].as_str().unwrap().contains("already revoked"));

    // A file changed on disk since it was opened is not overwritten: the view reloads it.
    let mut outside = PairingsFile::load(&path).unwrap();
    outside.revoke("risu-notes", 5).unwrap();
    outside.save(&path).unwrap();
    let before = std::fs::read_to_string(&path).unwrap();
    let err = call(
        "revoke_phone_line",
        json!({"identifier": "risu-notes", "confirm": true}),
    )
    .unwrap_err();
    assert_eq!(err["kind"], "conflict");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    let s = ok("phone_lines_snapshot", json!({}));
    assert_eq!(line(&s, "risu-notes")["allowed"], false);

    // Registry edits go through the settings: an added line is judged as known.
    let s = ok(
        "add_known_phone_line",
        json!({"identifier": "risu-notes", "name": "Risu Notes"}),
    );
    assert_eq!(s["registry"][1]["identifier"], "risu-notes");
    assert_eq!(s["registry"][1]["builtin"], false);
    assert_eq!(line(&s, "risu-notes")["state"], "revoked");
    let saved =
        switchboard::settings::Settings::load(&home.path().join("config/settings.json")).unwrap();
    assert_eq!(saved.extra_phone_lines[0].identifier, "risu-notes");
    let err = call(
        "add_known_phone_line",
        json!({"identifier": "a.b", "name": "X"}),
    )
    .unwrap_err();
    assert!(err["message"].as_str().unwrap().contains("\"a.b\""));
    let err = call(
        "remove_known_phone_line",
        json!({"identifier": "lumirealm"}),
    )
    .unwrap_err();
    assert!(err["message"].as_str().unwrap().contains("built in"));
    let s = ok(
        "remove_known_phone_line",
        json!({"identifier": "risu-notes"}),
    );
    assert_eq!(line(&s, "risu-notes")["state"], "unknown");

    // A record of the wrong shape is read as LumiAgent reads it (upstream-behaviour.md): the
    // file opens, the line names the field and its line, nothing shows as recorded, and the
    // record cannot be revoked (LumiAgent rewrites it on its next discovery); nothing is written.
    let bad = files.path().join("bad.json");
    let bad_text = "{\n  \"version\": 1,\n  \"pairings\": {\n    \"lumirealm\": {\"identifier\": \"lumirealm\", \"displayName\": \"LumiRealm\",\n      \"allowed\": \"yes\", \"manifestHash\": \"00\", \"decidedAt\": 1}\n  }\n}\n";
    std::fs::write(&bad, bad_text).unwrap();
    let s = ok("open_pairings_file", json!({ "path": bad }));
    let lr = line(&s, "lumirealm");
    assert_eq!(lr["allowed"], Value::Null);
    let w = lr["warnings"][0].as_str().unwrap();
    assert!(w.contains("pairings.lumirealm.allowed"), "{w}");
    assert!(w.contains("line 5"), "{w}");
    assert!(w.contains("boolean"), "{w}");
    assert!(w.contains("rewrites it with allowed: true"), "{w}");
    let err = call(
        "revoke_phone_line",
        json!({"identifier": "lumirealm", "confirm": true}),
    )
    .unwrap_err();
    assert_eq!(err["kind"], "invalid_input");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("nothing to revoke"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&bad).unwrap(), bad_text);
    assert!(!backup_path_of(&bad).exists());
    let s = ok("open_pairings_file", json!({ "path": path }));
    assert_eq!(s["source"]["path"], path.to_str().unwrap());
    let err = call(
        "open_pairings_file",
        json!({ "path": files.path().join("missing.json") }),
    )
    .unwrap_err();
    assert_eq!(err["kind"], "io");

    // Closing shows nothing again and writes nothing.
    let before = std::fs::read_to_string(&path).unwrap();
    let s = ok("close_pairings_file", json!({}));
    assert_eq!(s["source"]["kind"], "none");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
}

/// Where a revoke would keep the previous file (`<file>.bak`).
fn backup_path_of(p: &std::path::Path) -> std::path::PathBuf {
    let mut s = p.as_os_str().to_os_string();
    s.push(".bak");
    std::path::PathBuf::from(s)
}
