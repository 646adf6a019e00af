//! `phoneline-pairings.json`: round trips keep every field in order (byte for byte for a file in
//! the host's own format), bad files give errors naming field, line and column, saving is atomic
//! and keeps a backup, revoke sets allowed=false and decidedAt.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use switchboard::phone_line::pairings::{backup_path, PairingRecord, PairingsError, PairingsFile};

const SAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/phoneline-pairings.sample.json"
);

fn sample() -> String {
    std::fs::read_to_string(SAMPLE).unwrap()
}

#[test]
fn a_file_written_by_javascript_round_trips_byte_for_byte() {
    let text = sample();
    let file = PairingsFile::parse(&text).unwrap();
    assert_eq!(file.to_text(), text);
    let lr = file.get("lumirealm").unwrap();
    assert_eq!(lr.identifier(), "lumirealm");
    assert_eq!(lr.display_name(), "LumiRealm");
    assert!(lr.allowed());
    assert_eq!(lr.decided_at(), 1_726_000_000_000);
    assert_eq!(
        lr.unknown_fields()
            .map(|(k, _)| k.as_str())
            .collect::<Vec<_>>(),
        ["reviewedBy"]
    );
    let notes = file.get("risu-notes").unwrap();
    assert!(!notes.allowed());
    assert_eq!(notes.display_name(), "Risu \"Notes\"\n\u{2028}");
    assert_eq!(
        file.unknown_fields()
            .map(|(k, _)| k.as_str())
            .collect::<Vec<_>>(),
        ["hostNote", "trailer"]
    );
    assert_eq!(
        file.records().map(|(id, _)| id).collect::<Vec<_>>(),
        ["lumirealm", "risu-notes"]
    );
}

#[test]
fn other_formatting_round_trips_semantically_in_the_same_order() {
    let text = "{\"pairings\": {\"b\": {\"z\": 1.0, \"decidedAt\": 5, \"identifier\": \"b\", \"displayName\": \"B\", \"allowed\": true, \"manifestHash\": \"ab\"}, \"a\": {\"identifier\": \"a\", \"displayName\": \"A\", \"allowed\": false, \"manifestHash\": \"cd\", \"decidedAt\": 7.0}}, \"version\": 1, \"x\": [true]}\n";
    let file = PairingsFile::parse(text).unwrap();
    let written = file.to_text();
    assert_ne!(written, text);
    let want: serde_json::Value = serde_json::from_str(text).unwrap();
    let got: serde_json::Value = serde_json::from_str(&written).unwrap();
    // Same members, same order at every level (1.0 and 7.0 are written as JavaScript does).
    assert_eq!(
        switchboard::js_json::stringify(&got),
        switchboard::js_json::stringify(&want)
    );
    assert!(written.starts_with("{\n  \"pairings\": {\n    \"b\": {\n      \"z\": 1,\n"));
    // And what we wrote round-trips byte for byte.
    assert_eq!(PairingsFile::parse(&written).unwrap().to_text(), written);
}

fn shape_error(text: &str) -> (String, String, usize, usize) {
    match PairingsFile::parse(text) {
        Err(PairingsError::Shape {
            path,
            message,
            position,
        }) => (path, message, position.line, position.column),
        other => panic!("expected a shape error, got {other:?}"),
    }
}

#[test]
fn bad_files_name_the_field_line_and_column() {
    let text = sample().replace("\"allowed\": true", "\"allowed\": \"yes\"");
    let (path, message, line, column) = shape_error(&text);
    assert_eq!(path, "pairings.lumirealm.allowed");
    assert_eq!(message, "expected a boolean, found a string");
    assert_eq!((line, column), (8, 18));
    let e = PairingsFile::parse(&text).unwrap_err().to_string();
    assert_eq!(
        e,
        "pairings.lumirealm.allowed: expected a boolean, found a string (line 8, column 18)"
    );

    let text = sample().replace("\"decidedAt\": 1726000123456", "\"decidedAt\": -3");
    let (path, message, line, _) = shape_error(&text);
    assert_eq!(path, "pairings.risu-notes.decidedAt");
    assert!(message.contains("whole, non-negative"), "{message}");
    assert_eq!(line, 26);

    let text = sample().replace(
        "      \"manifestHash\": \"baf1b5d7ca72363cfc1b872961718003fc4a487dbf59c7c31ff503829351a47d\",\n",
        "",
    );
    let (path, message, line, column) = shape_error(&text);
    assert_eq!(
        (path.as_str(), message.as_str()),
        ("pairings.lumirealm.manifestHash", "missing")
    );
    assert_eq!(
        (line, column),
        (5, 18),
        "placed at the record that lacks it"
    );

    let (path, message, ..) = shape_error(r#"{"version":2,"pairings":{}}"#);
    assert_eq!(path, "version");
    assert!(message.contains("unsupported version 2"));
    let (path, ..) = shape_error(r#"{"version":1}"#);
    assert_eq!(path, "pairings");
    let (path, message, ..) = shape_error(r#"{"version":1,"pairings":{"x":[]}}"#);
    assert_eq!(
        (path.as_str(), message.as_str()),
        (
            "pairings.x",
            "expected a pairing record object, found an array"
        )
    );
    let (path, ..) = shape_error(r#"{"version":1,"pairings":{"a.b":{"identifier":1}}}"#);
    assert_eq!(path, "pairings[\"a.b\"].identifier");
    let (path, ..) = shape_error("[]");
    assert_eq!(path, "(top level)");

    match PairingsFile::parse("{\n  \"version\": 1,\n  \"pairings\": {\n") {
        Err(PairingsError::Syntax { line, .. }) => assert_eq!(line, 4),
        other => panic!("{other:?}"),
    }
}

#[test]
fn save_is_atomic_and_keeps_a_backup() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("phoneline-pairings.json");
    let mut file = PairingsFile::new();
    file.insert(
        "lumirealm",
        PairingRecord::new("lumirealm", "LumiRealm", true, &"a".repeat(64), 1),
    );
    file.save(&path).unwrap();
    let first = std::fs::read_to_string(&path).unwrap();
    assert!(!backup_path(&path).exists());
    assert_eq!(PairingsFile::load(&path).unwrap(), file);
    assert_eq!(
        first,
        "{\n  \"version\": 1,\n  \"pairings\": {\n    \"lumirealm\": {\n      \"identifier\": \"lumirealm\",\n      \"displayName\": \"LumiRealm\",\n      \"allowed\": true,\n      \"manifestHash\": \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\n      \"decidedAt\": 1\n    }\n  }\n}"
    );

    file.revoke("lumirealm", 1_726_000_999_000).unwrap();
    file.save(&path).unwrap();
    assert_eq!(
        std::fs::read_to_string(backup_path(&path)).unwrap(),
        first,
        "the backup is the whole previous file"
    );
    assert_eq!(
        dir.path().join("phoneline-pairings.json.bak"),
        backup_path(&path)
    );
    let reread = PairingsFile::load(&path).unwrap();
    let r = reread.get("lumirealm").unwrap();
    assert!(!r.allowed());
    assert_eq!(r.decided_at(), 1_726_000_999_000);
    // Only the file and its backup: no temporary files left.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    assert!(matches!(
        file.revoke("nobody", 1),
        Err(PairingsError::NotFound(_))
    ));
}

#[test]
fn revoke_keeps_unknown_fields_and_order() {
    let mut file = PairingsFile::parse(&sample()).unwrap();
    file.revoke("lumirealm", 42).unwrap();
    let text = file.to_text();
    let want = sample()
        .replace("\"allowed\": true", "\"allowed\": false")
        .replace("\"decidedAt\": 1726000000000", "\"decidedAt\": 42");
    assert_eq!(text, want);
}

#[test]
fn a_failed_save_leaves_the_previous_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("phoneline-pairings.json");
    std::fs::write(&path, sample()).unwrap();
    // The backup's place is taken by a non-empty folder: the save fails before touching the file.
    let bak = backup_path(&path);
    std::fs::create_dir(&bak).unwrap();
    std::fs::write(bak.join("x"), "x").unwrap();
    let mut file = PairingsFile::parse(&sample()).unwrap();
    file.revoke("lumirealm", 1).unwrap();
    let e = file.save(&path).unwrap_err();
    assert!(matches!(e, PairingsError::Write { .. }), "{e}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), sample());
}
