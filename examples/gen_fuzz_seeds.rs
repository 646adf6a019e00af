//! Writes the fuzz seed corpus `fuzz/seeds/<target>/` (issue 17, "Fuzzing") from the real
//! inputs: `../shared/corpus`, `tests/data`, `scenarios/`. Run from the repository root:
//! `cargo run -p switchboard --example gen_fuzz_seeds`. Existing seeds (and crashers kept as
//! seeds, `crash-*`) are left alone; generated ones are rewritten.
//!
//! Per target: `ifp_frame` every message of `ifp1/fixtures/messages.json` and every resolved
//! demo frame; `dial_shortcut` every resolved demo dial; `link_after_hello` the demo as one
//! phone's frames after hello, and each stateful sequence of `ifp1/fixtures/sequences.json`
//! (its device renamed to the fuzzed phone's); `host_error` every case of `host-errors.json`;
//! `surface_manifest` the corpus describe answer and every manifest of the hash vectors;
//! `runtime_manifest` the OpenPhone runtime manifests; `pairings` the pairings files of
//! `tests/data`; `scenario` the demo and the e2e scenarios; `jsonl_import` the demo's dials
//! exported as JSON Lines.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use switchboard::phone::scenario::{Resolver, Scenario, Sender};
use switchboard::phone_events::{PhoneEvent, DIAL_EVENT};

const PHONE: &str = "dev_phone_a1b2";

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let corpus = root.join("../shared/corpus");
    assert!(
        corpus.is_dir(),
        "the corpus is not at {}: it is needed to make the seeds",
        corpus.display()
    );
    let seeds = root.join("fuzz/seeds");
    let put = |target: &str, name: &str, bytes: &[u8]| {
        let dir = seeds.join(target);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(name), bytes).unwrap();
    };
    let json = |p: &Path| -> Value { serde_json::from_slice(&fs::read(p).unwrap()).unwrap() };

    // ifp/1 single messages.
    let messages = json(&corpus.join("ifp1/fixtures/messages.json"));
    for case in messages["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        put(
            "ifp_frame",
            &format!("{name}.json"),
            case["message"].to_string().as_bytes(),
        );
    }

    // The demo resolved as the reference phone resolves it.
    let demo = fs::read_to_string(root.join("scenarios/demo.jsonl")).unwrap();
    let scenario = Scenario::parse(&demo).unwrap();
    let sender = Sender {
        device: PHONE.into(),
        entity: "ent_phone0a1b2c3d".into(),
    };
    let mut resolver = Resolver::new(&scenario, sender, "fuzz-seeds", 1_784_595_600_000, 1);
    let mut frames = Vec::new();
    while let Some(f) = resolver.next_frame() {
        frames.push(f.unwrap());
    }
    let mut dials = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        put("ifp_frame", &format!("demo-{i:02}.json"), f.text.as_bytes());
        if f.kind == DIAL_EVENT {
            put(
                "dial_shortcut",
                &format!("demo-{i:02}.json"),
                f.text.as_bytes(),
            );
            let env = switchboard::ifp::validate_frame(f.text.as_bytes()).unwrap();
            if let Ok(PhoneEvent::Dial(d)) = PhoneEvent::from_envelope(&env) {
                let retention = env.labels.unwrap().retention;
                dials.push(Arc::new(d.to_dial(
                    PHONE,
                    env.session.as_deref().unwrap_or(""),
                    retention,
                )));
            }
        }
    }
    let all: Vec<&str> = frames.iter().map(|f| f.text.as_str()).collect();
    put("link_after_hello", "demo.txt", all.join("\n").as_bytes());
    // The demo twice: every message a duplicate the second time.
    put(
        "link_after_hello",
        "demo-replayed.txt",
        [all.join("\n"), all.join("\n")].join("\n").as_bytes(),
    );

    // Stateful sequences, as one phone's frames.
    let sequences = json(&corpus.join("ifp1/fixtures/sequences.json"));
    for s in sequences["scenarios"].as_array().unwrap() {
        let name = s["name"].as_str().unwrap();
        let lines: Vec<String> = s["steps"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|step| step.get("give"))
            .map(|g| g.to_string().replace("dev_d100", PHONE))
            .collect();
        put(
            "link_after_hello",
            &format!("{name}.txt"),
            lines.join("\n").as_bytes(),
        );
    }

    // Host errors.
    let errors = json(&corpus.join("lumiverse/host-errors.json"));
    for (i, case) in errors["cases"].as_array().unwrap().iter().enumerate() {
        put(
            "host_error",
            &format!("case-{i:02}.txt"),
            case["input"].as_str().unwrap().as_bytes(),
        );
    }

    // Describe answers and manifests.
    put(
        "surface_manifest",
        "lumirealm.describe.json",
        &fs::read(corpus.join("lumiverse/lumirealm.describe.json")).unwrap(),
    );
    for file in [
        "manifest-hash-vectors.json",
        "normalised-manifest-hash-vectors.json",
    ] {
        let v = json(&root.join("tests/data").join(file));
        for (i, vector) in v["vectors"].as_array().unwrap().iter().enumerate() {
            let Some(text) = vector
                .get("manifest_text")
                .or_else(|| vector.get("answer_text"))
                .and_then(Value::as_str)
            else {
                continue;
            };
            let stem = file.trim_end_matches(".json");
            put(
                "surface_manifest",
                &format!("{stem}-{i:02}.json"),
                text.as_bytes(),
            );
        }
    }

    // Runtime-protocol manifests.
    for file in ["openphone-commands.json", "openphone-events.json"] {
        put(
            "runtime_manifest",
            file,
            &fs::read(corpus.join("openphone").join(file)).unwrap(),
        );
    }

    // Pairings files.
    for file in [
        "phoneline-pairings.sample.json",
        "phoneline-pairings.lumiagent.json",
    ] {
        put(
            "pairings",
            file,
            &fs::read(root.join("tests/data").join(file)).unwrap(),
        );
    }

    // Scenarios.
    put("scenario", "demo.jsonl", demo.as_bytes());
    for entry in fs::read_dir(root.join("tests/data/e2e")).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "jsonl") {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            put("scenario", &name, &fs::read(&p).unwrap());
        }
    }

    // JSON Lines exports.
    let mut out = Vec::new();
    switchboard::dials::jsonl::write_jsonl(&dials, &mut out).unwrap();
    put("jsonl_import", "demo-dials.jsonl", &out);

    for (name, _) in switchboard::fuzz::TARGETS {
        let n = fs::read_dir(seeds.join(name))
            .map(|d| d.count())
            .unwrap_or(0);
        println!("{name}: {n} seeds");
    }
}
