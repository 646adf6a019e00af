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

/// upstream-behaviour.md: LumiAgent treats a file it cannot read, a `version` other than 1, or
/// `pairings` that is not an object as empty. Each rule, with the words naming what was wrong.
#[test]
fn files_lumiagent_treats_as_empty_say_why() {
    use switchboard::phone_line::pairings::{read_as_lumiagent, LumiAgentRead};
    let rec = r#"{"lumirealm":{"identifier":"lumirealm","displayName":"LumiRealm","allowed":true,"manifestHash":"ab","decidedAt":1}}"#;
    let cases: Vec<(String, &str)> = vec![
        (String::new(), "the file is empty"),
        (
            "  \n".into(),
            "it is not JSON: EOF while parsing a value (line 2, column 0)",
        ),
        (
            format!(r#"{{"version":1,"pairings":{rec}"#),
            "it is not JSON",
        ),
        (
            "null".into(),
            "its top level is null, not an object with version 1",
        ),
        (format!("[{rec}]"), "its top level is an array"),
        ("5".into(), "its top level is a number"),
        (format!(r#"{{"pairings":{rec}}}"#), "it has no version"),
        (
            format!(r#"{{"version":2,"pairings":{rec}}}"#),
            "its version is 2, not 1",
        ),
        (
            format!(r#"{{"version":0,"pairings":{rec}}}"#),
            "its version is 0, not 1",
        ),
        (
            format!(r#"{{"version":"1","pairings":{rec}}}"#),
            "its version is a string (\"1\"), not the number 1",
        ),
        (
            format!(r#"{{"version":null,"pairings":{rec}}}"#),
            "its version is null",
        ),
        (r#"{"version":1}"#.into(), "it has no pairings object"),
        (
            r#"{"version":1,"pairings":null}"#.into(),
            "its pairings is null, not an object",
        ),
        (
            format!(r#"{{"version":1,"pairings":[{rec}]}}"#),
            "its pairings is an array, not an object",
        ),
        (
            r#"{"version":1,"pairings":"lumirealm"}"#.into(),
            "its pairings is a string, not an object",
        ),
        (
            r#"{"version":1,"pairings":7}"#.into(),
            "its pairings is a number, not an object",
        ),
    ];
    for (text, want) in &cases {
        match read_as_lumiagent(text) {
            Ok(LumiAgentRead::TreatedAsEmpty { reason }) => {
                assert!(reason.contains(want), "{text:?}: {reason:?} lacks {want:?}")
            }
            other => panic!("{text:?}: expected treated as empty, got {other:?}"),
        }
    }
    // `version === 1` holds for 1.0 too; these files are read with their records.
    for text in [
        format!(r#"{{"version":1,"pairings":{rec}}}"#),
        format!(r#"{{"version":1.0,"pairings":{rec}}}"#),
        r#"{"version":1,"pairings":{}}"#.to_string(),
        sample(),
        std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/phoneline-pairings.lumiagent.json"
        ))
        .unwrap(),
    ] {
        let read = read_as_lumiagent(&text).unwrap();
        assert_eq!(read.empty_reason(), None, "{text}");
        assert_eq!(
            read.records_or_empty().get("lumirealm").is_some(),
            text.contains("lumirealm"),
            "{text}"
        );
    }
}

/// upstream-behaviour.md: LumiAgent keeps a record "whose allowed is true and whose hash still
/// matches"; any other record is rewritten on its next discovery. So a record of the wrong shape
/// is read, never refused: one without a boolean `allowed` (or not an object) is not a decision
/// it keeps; other fields of the wrong shape are named, with line and column.
#[test]
fn records_of_the_wrong_shape_are_read_as_lumiagent_reads_them() {
    use switchboard::phone_line::pairing::PhoneLineState;
    use switchboard::phone_line::pairings::read_as_lumiagent;
    use switchboard::phone_line::registry::PhoneLineRegistry;
    use switchboard::phone_line::summary::{summarize, DialResult};
    // LumiAgent's own file, with its one record changed field by field.
    let good: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/phoneline-pairings.lumiagent.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let describe: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/corpus/lumiverse/lumirealm.describe.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let dials = [DialResult {
        namespace: "lumirealm".into(),
        outcome: switchboard::phone_line::pairing::DescribeOutcome::Answered(describe),
    }];
    let registry = PhoneLineRegistry::builtin();
    let record = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut v = good.clone();
        f(&mut v["pairings"]["lumirealm"]);
        serde_json::to_string_pretty(&v).unwrap()
    };
    // (change, is a decision LumiAgent keeps, the field named)
    let cases: Vec<(String, bool, &str)> = vec![
        (
            record(&|r| r["allowed"] = "yes".into()),
            false,
            "pairings.lumirealm.allowed: expected a boolean, found a string",
        ),
        (
            record(&|r| {
                r.as_object_mut().unwrap().remove("allowed");
            }),
            false,
            "pairings.lumirealm.allowed: missing",
        ),
        (
            record(&|r| *r = serde_json::json!(["lumirealm", true])),
            false,
            "pairings.lumirealm: expected a pairing record object, found an array",
        ),
        (
            record(&|r| *r = serde_json::json!(null)),
            false,
            "pairings.lumirealm: expected a pairing record object, found null",
        ),
        (
            record(&|r| r["decidedAt"] = "yesterday".into()),
            true,
            "pairings.lumirealm.decidedAt: expected a number (epoch milliseconds), found a string",
        ),
        (
            record(&|r| r["manifestHash"] = 5.into()),
            true,
            "pairings.lumirealm.manifestHash: expected a string, found a number",
        ),
        (
            record(&|r| {
                r.as_object_mut().unwrap().remove("identifier");
            }),
            true,
            "pairings.lumirealm.identifier: missing",
        ),
    ];
    for (text, decision, named) in &cases {
        let read = read_as_lumiagent(text).unwrap();
        assert_eq!(read.empty_reason(), None, "{text}");
        let file = read.records_or_empty();
        let rec = file.get("lumirealm").unwrap();
        assert_eq!(rec.is_decision(), *decision, "{text}");
        assert!(
            rec.problems()
                .iter()
                .any(|p| p.contains(named) && p.contains("line ")),
            "{:?} lacks {named:?}",
            rec.problems()
        );
        // Written back, the record is kept as it was read.
        let back: serde_json::Value = serde_json::from_str(&file.to_text()).unwrap();
        let orig: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(back, orig, "{text}");
        let line = &summarize(&registry, Some(&file), &dials)[0];
        if *decision {
            assert!(
                line.warnings
                    .iter()
                    .any(|w| w.contains("wrong shape") && w.contains(named)),
                "{:?}",
                line.warnings
            );
            assert!(line.allowed.is_some());
        } else {
            // Not a decision: no record fields shown; LumiAgent pairs the line again on its
            // next discovery (its describe succeeds) and rewrites the record.
            assert_eq!(line.state, PhoneLineState::Paired, "{text}");
            assert_eq!(line.allowed, None);
            assert!(
                line.warnings
                    .iter()
                    .any(|w| w.contains("rewrites it with allowed: true")),
                "{:?}",
                line.warnings
            );
        }
        // Revoking a record that is not a decision is refused, and the file is unchanged.
        let mut f = file.clone();
        match f.revoke("lumirealm", 5) {
            Ok(_) => assert!(*decision, "{text}"),
            Err(e) => {
                assert!(!*decision);
                assert!(matches!(e, PairingsError::NotADecision { .. }), "{e}");
                assert_eq!(f, file);
            }
        }
    }
    // A well-formed LumiAgent file has no problems.
    let file = read_as_lumiagent(&good.to_string())
        .unwrap()
        .records_or_empty();
    assert!(file.get("lumirealm").unwrap().problems().is_empty());
    assert!(file.get("lumirealm").unwrap().is_decision());
}

#[test]
fn loading_as_lumiagent_a_missing_file_is_an_error_an_unreadable_one_empty() {
    use switchboard::phone_line::pairings::{load_as_lumiagent, LumiAgentRead};
    let dir = tempfile::tempdir().unwrap();
    let e = load_as_lumiagent(&dir.path().join("missing.json")).unwrap_err();
    assert!(matches!(e, PairingsError::Read { .. }), "{e}");
    // A folder cannot be read as a file.
    match load_as_lumiagent(dir.path()).unwrap() {
        LumiAgentRead::TreatedAsEmpty { reason } => {
            assert!(reason.starts_with("it cannot be read: "), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    let bytes = dir.path().join("latin1.json");
    std::fs::write(&bytes, b"{\"version\":1,\"pairings\":{\"\xe9\":1}}").unwrap();
    assert!(load_as_lumiagent(&bytes).unwrap().empty_reason().is_some());
}
