//! `switchboard ifp validate|replay|hash` end to end, through the built binary, on the corpus.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_switchboard");
const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/corpus/ifp1/fixtures/"
);

fn run(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut input = child.stdin.take().unwrap();
        if let Some(bytes) = stdin {
            input.write_all(bytes).unwrap();
        }
    }
    child.wait_with_output().unwrap()
}

fn corpus(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(format!("{FIXTURES}{name}")).unwrap()).unwrap()
}

fn lines(out: &Output) -> Vec<String> {
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn validate_prints_one_verdict_per_message_and_exits_1_on_any_reject() {
    let cases = corpus("messages.json")["cases"].as_array().unwrap().clone();
    let mut input = String::new();
    for c in &cases {
        input.push_str(&serde_json::to_string(&c["message"]).unwrap());
        input.push_str("\n\n"); // blank lines are skipped
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("messages.jsonl");
    std::fs::write(&path, &input).unwrap();
    for out in [
        run(&["ifp", "validate"], Some(input.as_bytes())),
        run(&["ifp", "validate", path.to_str().unwrap()], None),
    ] {
        assert_eq!(out.status.code(), Some(1));
        let got = lines(&out);
        assert_eq!(got.len(), 26);
        for (c, line) in cases.iter().zip(&got) {
            match c["expect"].as_str().unwrap() {
                "accept" => assert_eq!(line, "accept", "{}", c["name"]),
                _ => {
                    let want = format!("reject {} ", c["error_class"].as_str().unwrap());
                    assert!(line.starts_with(&want), "{}: {line}", c["name"]);
                    assert!(line.len() > want.len(), "reason missing: {line}");
                }
            }
        }
    }
}

#[test]
fn validate_exits_0_when_all_accepted_and_rejects_bad_json_lines() {
    let cases = corpus("messages.json")["cases"].as_array().unwrap().clone();
    let accepted: String = cases
        .iter()
        .filter(|c| c["expect"] == "accept")
        .map(|c| serde_json::to_string(&c["message"]).unwrap() + "\r\n")
        .collect();
    let out = run(&["ifp", "validate"], Some(accepted.as_bytes()));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(lines(&out).len(), 11);
    assert!(lines(&out).iter().all(|l| l == "accept"));

    let out = run(&["ifp", "validate"], Some(b"{not json\n"));
    assert_eq!(out.status.code(), Some(1));
    assert!(lines(&out)[0].starts_with("reject invalid_envelope frame: invalid JSON"));

    let mut huge = vec![b'{'];
    huge.resize(switchboard::ifp::MAX_FRAME_BYTES + 10, b' ');
    huge.extend_from_slice(b"}\n");
    let out = run(&["ifp", "validate"], Some(&huge));
    assert_eq!(out.status.code(), Some(1));
    assert!(lines(&out)[0].contains("1 MiB"), "{:?}", lines(&out));

    let out = run(&["ifp", "validate", "/nonexistent/file.jsonl"], None);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn replay_of_the_corpus_exits_0_with_25_ok_steps() {
    let path = format!("{FIXTURES}sequences.json");
    let out = run(&["ifp", "replay", &path], None);
    assert_eq!(out.status.code(), Some(0), "{:?}", lines(&out));
    let got = lines(&out);
    assert_eq!(got.iter().filter(|l| l.starts_with("ok ")).count(), 25);
    assert_eq!(got.last().unwrap(), "25 steps, 0 mismatches");
}

#[test]
fn replay_of_an_altered_copy_exits_1_naming_the_step() {
    let mut doc = corpus("sequences.json");
    doc["scenarios"][2]["steps"][0]["expect"]["error_class"] = "ordering_violation".into();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("altered.json");
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    let out = run(&["ifp", "replay", path.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(1));
    let got = lines(&out);
    let bad: Vec<&String> = got.iter().filter(|l| l.starts_with("MISMATCH")).collect();
    assert_eq!(bad.len(), 1, "{got:?}");
    assert!(
        bad[0].contains("stale_generation_fence step 1"),
        "{}",
        bad[0]
    );
    assert!(
        bad[0].contains("expected ordering_violation, got stale_generation"),
        "{}",
        bad[0]
    );

    // One scenario on its own is also a sequence file.
    let one = corpus("sequences.json")["scenarios"][6].clone();
    std::fs::write(&path, serde_json::to_vec(&one).unwrap()).unwrap();
    let out = run(&["ifp", "replay", path.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(lines(&out).last().unwrap(), "2 steps, 0 mismatches");

    std::fs::write(&path, b"[1,2]").unwrap();
    let out = run(&["ifp", "replay", path.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn hash_prints_canonical_json_and_params_hash_of_every_vector() {
    let doc = corpus("params-hash-vectors.json");
    for v in doc["vectors"].as_array().unwrap() {
        let input = serde_json::to_vec(&v["params"]).unwrap();
        let out = run(&["ifp", "hash"], Some(&input));
        assert_eq!(out.status.code(), Some(0));
        let got = lines(&out);
        assert_eq!(
            got,
            vec![
                v["canonical"].as_str().unwrap().to_string(),
                v["params_hash"].as_str().unwrap().to_string()
            ],
            "{}",
            v["name"]
        );
    }
    let out = run(&["ifp", "hash"], Some(b"[1]"));
    assert_eq!(out.status.code(), Some(2));
}
