//! `switchboard dials FILE.jsonl`: reads an export, prints stats, and refuses bad files by line.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::sync::Arc;

use serde_json::json;
use switchboard::dials::{jsonl::write_jsonl, Dial, DialOutcome, JsonText, Retention};

fn dial(id: &str, op: &str, duration_ms: u64, outcome: DialOutcome) -> Arc<Dial> {
    let mut d = Dial {
        id: id.into(),
        phone: "dev_alpha1".into(),
        call_id: "".into(),
        caller: "lumiagent".into(),
        callee: "lumirealm".into(),
        endpoint: "lumirealm.phoneline".into(),
        op: op.into(),
        request: JsonText::from_value(&json!({"op": op})),
        start_ms: 1_760_000_000_000,
        duration_ms,
        outcome,
        response: None,
        error: None,
        retention: Retention::Standard,
        slow: false,
        spec: Default::default(),
        session: "".into(),
        seq: Default::default(),
        arrived: Default::default(),
    };
    d.normalise();
    Arc::new(d)
}

#[test]
fn stats_of_an_export_and_bad_lines_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dials.jsonl");
    let dials = vec![
        dial("a", "read_item", 10, DialOutcome::Ok),
        dial("b", "read_item", 30, DialOutcome::Error),
        dial("c", "read_item", 20, DialOutcome::Ok),
        dial("d", "describe", 5, DialOutcome::Ok),
    ];
    write_jsonl(&dials, std::fs::File::create(&path).unwrap()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["dials", "--stats", "--json", "--op", "read_item"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats.as_array().unwrap().len(), 1);
    assert_eq!(stats[0]["op"], "read_item");
    assert_eq!(stats[0]["count"], 3);
    assert_eq!(stats[0]["errors"], 1);
    assert_eq!(stats[0]["p50_ms"], 20);

    let bad = dir.path().join("bad.jsonl");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("{\"id\": \"e\"}\n");
    std::fs::write(&bad, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["dials"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 5 field phone"), "{err}");
    assert!(out.stdout.is_empty());
}

fn with(
    id: &str,
    op: &str,
    request: serde_json::Value,
    response: Option<serde_json::Value>,
) -> Arc<Dial> {
    let mut d = (*dial(id, op, 12, DialOutcome::Ok)).clone();
    d.request = JsonText::from_value(&request);
    d.response = response.as_ref().map(JsonText::from_value);
    Arc::new(d)
}

/// `switchboard dials check`: a capture with known violations lists each broken dial with its id
/// and problems (JSON path, the spec's line) and exits 1; a capture to spec exits 0.
#[test]
fn check_lists_dials_that_break_the_spec() {
    let dir = tempfile::tempdir().unwrap();
    let good = vec![
        with(
            "good_read",
            "read_item",
            json!({"op": "read_item", "userId": "u", "surfaceId": "module_envelope", "itemId": "m"}),
            Some(json!({"value": 1})),
        ),
        with(
            "good_ext",
            "set_toggle",
            json!({"op": "set_toggle", "userId": "u", "toggle": "x"}),
            Some(json!({"ok": true})),
        ),
    ];
    let mut all = good.clone();
    all.push(with(
        "bad_read",
        "read_item",
        json!({"op": "read_item", "surface": "module_envelope", "id": "m"}),
        Some(json!({"item": 1})),
    ));
    all.push(with(
        "bad_grep",
        "grep_items",
        json!({"op": "grep_items", "userId": "u", "surfaceId": "module_envelope", "pattern": "x"}),
        Some(json!({"hits": []})),
    ));
    let run = |dials: &[Arc<Dial>], name: &str, json: bool| {
        let path = dir.path().join(name);
        write_jsonl(dials, std::fs::File::create(&path).unwrap()).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchboard"));
        cmd.args(["dials", "check"]).arg(&path);
        if json {
            cmd.arg("--json");
        }
        cmd.output().unwrap()
    };
    let out = run(&good, "good.jsonl", false);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("0 of 2 dials break phone-line.md"));

    let out = run(&all, "bad.jsonl", false);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("bad_read"), "{text}");
    assert!(
        text.contains("request.surfaceId: missing `surfaceId`"),
        "{text}"
    );
    assert!(text.contains("phone-line.md line 69"), "{text}");
    assert!(text.contains("response.truncated"), "{text}");
    // grep_items on LumiRealm's per_character surface without characterId.
    assert!(text.contains("request.characterId"), "{text}");
    assert!(!text.contains("good_"), "{text}");
    assert!(text.contains("2 of 4 dials break phone-line.md"), "{text}");

    let out = run(&all, "bad2.jsonl", true);
    assert_eq!(out.status.code(), Some(1));
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids: Vec<&str> = lines.iter().map(|l| l["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 2);
    assert!(ids.contains(&"bad_read") && ids.contains(&"bad_grep"));
    let read = lines.iter().find(|l| l["id"] == "bad_read").unwrap();
    let f = read["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "response.value")
        .unwrap();
    assert_eq!(f["kind"], "missing_field");
    assert_eq!(f["spec_line"], 79);
    assert!(f["spec_words"]
        .as_str()
        .unwrap()
        .contains("read_item      -> { value"));

    // An unreadable file: exit 2, the bad line named.
    let bad = dir.path().join("broken.jsonl");
    std::fs::write(&bad, "{\"id\": \"e\"}\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["dials", "check"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 1"));
}

/// `switchboard dials FILE --filter LINE`: the filter line of the Live dials view over an
/// export; a line that does not parse names the column and exits non-zero.
#[test]
fn filter_line_over_an_export() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dials.jsonl");
    let dials = vec![
        dial("a", "read_item", 10, DialOutcome::Ok),
        dial("b", "read_item", 3000, DialOutcome::Error),
        dial("c", "read_item", 20, DialOutcome::ToolError),
        dial("d", "describe", 5000, DialOutcome::Ok),
    ];
    write_jsonl(&dials, std::fs::File::create(&path).unwrap()).unwrap();
    let run = |line: &str| {
        Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .args(["dials", "--json", "--filter", line])
            .arg(&path)
            .output()
            .unwrap()
    };
    let ids = |out: &std::process::Output| -> Vec<String> {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    };
    let out = run("op:read_item -outcome:ok");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut got = ids(&out);
    got.sort();
    assert_eq!(got, ["b", "c"]);
    let out = run("duration>1s");
    let mut got = ids(&out);
    got.sort();
    assert_eq!(got, ["b", "d"]);
    let out = run("op:read_item colour:red");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("column 14") && err.contains("unknown field `colour`"),
        "{err}"
    );
}

/// The listing says how many of the file's dials matched (not "3 of 3" for 3 of 9) and when each
/// started in words; a file that is one pretty-printed JSON document, like the corpus's
/// `host-errors.json`, is said not to be a dial export, its bad lines capped at 20.
#[test]
fn listing_counts_against_the_file_and_a_json_document_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dials.jsonl");
    let dials = vec![
        dial("a", "read_item", 10, DialOutcome::Ok),
        dial("b", "read_item", 3000, DialOutcome::Error),
        dial("c", "describe", 20, DialOutcome::Ok),
        dial("d", "describe", 5000, DialOutcome::Ok),
    ];
    write_jsonl(&dials, std::fs::File::create(&path).unwrap()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["dials", "--filter", "op:read_item"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("2 of 4 dials matched"), "{text}");
    // 1_760_000_000_000 ms.
    assert!(text.contains("2025-10-09 08:53:20.000 UTC"), "{text}");
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["dials", "--op", "describe", "--limit", "1"])
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("2 of 4 dials matched, the newest 1 shown (--limit)"),
        "{text}"
    );

    let corpus = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/corpus/lumiverse/host-errors.json"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["dials", "check", corpus])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a dial export"), "{err}");
    let listed = err.lines().filter(|l| l.starts_with("  line ")).count();
    assert_eq!(listed, 20, "{err}");
    assert!(err.contains("... and "), "{err}");
}

/// `switchboard dials FILE | head`: the reader closes the pipe after a few lines; the command
/// ends quietly with success instead of panicking on the next print.
#[test]
fn a_reader_that_stops_early_ends_the_listing_quietly() {
    use std::io::Read;
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dials.jsonl");
    // Far more than a pipe holds (64 KiB on Linux), so the command is still printing.
    let dials: Vec<_> = (0..5_000)
        .map(|i| dial(&format!("d{i}"), "read_item", 10, DialOutcome::Ok))
        .collect();
    write_jsonl(&dials, std::fs::File::create(&path).unwrap()).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .arg("dials")
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 200];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "still running 30 s after its reader went"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(
        !stderr.contains("panicked"),
        "no panic when the reader goes: {stderr}"
    );
    assert!(stderr.is_empty(), "nothing said: {stderr}");
    assert_eq!(status.code(), Some(0), "{status:?}: {stderr}");
}

/// `switchboard dials check` on a support bundle, and on its `dials.jsonl` taken out of it:
/// the bundle redacts request and response values to type markers, which the spec's checks
/// would take for wrong types and bad manifests, so the checks the bundle made before redacting
/// (`dial-conformance.json`) are reported. The real LumiRealm manifest as a `describe` answer is
/// to spec in all three; the redacted file alone is refused, naming what to run instead.
#[test]
fn check_of_a_support_bundle_reports_the_checks_made_before_redaction() {
    let home = tempfile::tempdir().unwrap();
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/corpus/lumiverse/lumirealm.describe.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let describe = with(
        "describe_ok",
        "describe",
        json!({"op": "describe"}),
        Some(manifest),
    );
    let bad_read = with(
        "bad_read",
        "read_item",
        json!({"op": "read_item", "surface": "module_envelope", "id": "m"}),
        Some(json!({"item": 1})),
    );
    // The dials as the app keeps them: its dial history in the data folder.
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let log = switchboard::dials::DialLog::spawn(switchboard::dials::DialLogConfig {
            data_dir: Some(home.path().join("data")),
            ..Default::default()
        })
        .unwrap();
        log.ingest_batch(vec![(*describe).clone(), (*bad_read).clone()])
            .await
            .unwrap();
        log.shutdown().await.unwrap();
    });
    let out_dir = tempfile::tempdir().unwrap();
    let bundle = out_dir.path().join("support.tar.gz");
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["bundle", "--files", "--home"])
        .arg(home.path())
        .arg(&bundle)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");

    let check = |file: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .args(["dials", "check"])
            .arg(file)
            .output()
            .unwrap()
    };
    let as_recorded = |out: std::process::Output| {
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert_eq!(out.status.code(), Some(1), "{text}{out:?}");
        assert!(text.contains("bad_read"), "{text}");
        assert!(
            text.contains("request.surfaceId: missing `surfaceId`"),
            "{text}"
        );
        assert!(text.contains("phone-line.md line 69"), "{text}");
        assert!(!text.contains("describe_ok"), "{text}");
        assert!(text.contains("1 of 2 dials break phone-line.md"), "{text}");
        assert!(
            text.contains("before the support bundle redacted them"),
            "{text}"
        );
    };
    as_recorded(check(&bundle));

    // Taken out of the bundle as a person would, the dials and the checks side by side.
    let taken_out = out_dir.path().join("taken-out");
    tar::Archive::new(flate2::read::GzDecoder::new(
        std::fs::File::open(&bundle).unwrap(),
    ))
    .unpack(&taken_out)
    .unwrap();
    let dials_file = taken_out.join("dials.jsonl");
    assert!(
        std::fs::read_to_string(&dials_file)
            .unwrap()
            .contains("\"<string>\""),
        "the bundle's dials are redacted"
    );
    as_recorded(check(&dials_file));

    // The redacted dials alone: not checked as if they were values, and told what to run.
    let alone = out_dir.path().join("alone");
    std::fs::create_dir(&alone).unwrap();
    std::fs::copy(&dials_file, alone.join("dials.jsonl")).unwrap();
    let out = check(&alone.join("dials.jsonl"));
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("redacted") && err.contains("dial-conformance.json"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "{out:?}");
}
