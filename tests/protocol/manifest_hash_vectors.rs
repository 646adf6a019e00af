//! `manifestHash` equals what LumiAgent stores.
//!
//! - tests/data/manifest-hash-vectors.json (scripts/gen-manifest-hash-vectors.mjs: node's
//!   JSON.parse, JSON.stringify and crypto): `switchboard::js_json::stringify` and `sha256_hex`
//!   write JSON and hash it exactly as JavaScript does.
//! - tests/data/normalised-manifest-hash-vectors.json (scripts/gen-normalised-manifest-hashes.mjs,
//!   which follows upstream-behaviour.md's normalisation literally in JavaScript): for the corpus
//!   LumiRealm answer and answers in the older and looser forms LumiAgent still accepts, the
//!   normalised manifest and the hash LumiAgent writes into `phoneline-pairings.json`; checked
//!   through the pairing rule ([`decide`]) as a discovery would run it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use switchboard::js_json::{sha256_hex, stringify};
use switchboard::phone_line::manifest::{manifest_hash, SurfaceManifest};
use switchboard::phone_line::pairing::{decide, DescribeOutcome, PhoneLineState};
use switchboard::phone_line::pairings::PairingsFile;
use switchboard::phone_line::registry::PhoneLineRegistry;
use switchboard::phone_line::summary::{summarize, DialResult, MANIFEST_CHANGED_WORDS};

/// node v20: `node scripts/gen-normalised-manifest-hashes.mjs`, first vector. Pinned here so a
/// regenerated vectors file cannot silently move the corpus hash.
const CORPUS_HASH: &str = "baf1b5d7ca72363cfc1b872961718003fc4a487dbf59c7c31ff503829351a47d";

fn data(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn corpus() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/corpus/lumiverse/lumirealm.describe.json"
    ))
    .unwrap()
}

fn vectors(file: &str) -> Vec<Value> {
    let file: Value = serde_json::from_str(&data(file)).unwrap();
    file["vectors"].as_array().unwrap().clone()
}

#[test]
fn stringify_and_sha256_match_javascript() {
    let vectors = vectors("manifest-hash-vectors.json");
    assert!(vectors.len() >= 7, "vectors file is incomplete");
    for v in &vectors {
        let name = v["name"].as_str().unwrap();
        let text = v["manifest_text"].as_str().unwrap();
        let want_text = v["stringify"].as_str().unwrap();
        let want_hash = v["sha256"].as_str().unwrap();
        let parsed: Value = serde_json::from_str(text).unwrap();
        assert_eq!(stringify(&parsed), want_text, "stringify of {name}");
        assert_eq!(sha256_hex(want_text), want_hash, "sha256 of {name}");
    }
}

#[test]
fn every_normalised_vector_matches_lumiagent() {
    let vectors = vectors("normalised-manifest-hash-vectors.json");
    assert_eq!(vectors.len(), 5, "vectors file is incomplete");
    let registry = PhoneLineRegistry::builtin();
    for v in &vectors {
        let name = v["name"].as_str().unwrap();
        let answer: Value = serde_json::from_str(v["answer_text"].as_str().unwrap()).unwrap();
        let want_hash = v["sha256"].as_str().unwrap();
        let d = decide(
            &registry,
            "lumirealm",
            Some(&DescribeOutcome::Answered(answer)),
            None,
            1,
        );
        assert_eq!(d.state, PhoneLineState::Paired, "{name}: {:?}", d.warnings);
        let m = d.manifest.unwrap();
        assert_eq!(
            stringify(&m.trusted_value()),
            v["normalised"].as_str().unwrap(),
            "normalised {name}"
        );
        assert_eq!(m.hash(), want_hash, "hash of {name}");
        assert_eq!(
            d.record_update.unwrap().manifest_hash(),
            want_hash,
            "{name}"
        );
    }
}

#[test]
fn the_corpus_answer_hashes_as_lumiagent_does_and_legacy_forms_get_notes() {
    let vectors = vectors("normalised-manifest-hash-vectors.json");
    assert_eq!(vectors[0]["answer_text"].as_str(), Some(corpus().as_str()));
    assert_eq!(vectors[0]["sha256"].as_str(), Some(CORPUS_HASH));
    let m = SurfaceManifest::from_text(&corpus()).unwrap();
    assert_eq!(m.hash(), CORPUS_HASH);
    assert_eq!(manifest_hash(&m.raw).unwrap(), CORPUS_HASH);
    assert!(m.notes.is_empty(), "{:?}", m.notes);
    // Not the hash of the answer as received (what Switchboard used to store and compare).
    assert_ne!(sha256_hex(&stringify(&m.raw)), CORPUS_HASH);

    // The older scope form hashes the same once normalised, with a note saying so.
    let legacy: Value = serde_json::from_str(vectors[1]["answer_text"].as_str().unwrap()).unwrap();
    let m = SurfaceManifest::from_value(legacy).unwrap();
    assert_eq!(m.hash(), CORPUS_HASH);
    assert_eq!(
        m.notes,
        ["surfaces[0].scope: the older form {\"kind\": \"per_character\"} became \"per_character\""]
    );
    // The oldest surfaces (item_kind, fields[], no description): accepted, every change noted.
    let old: Value = serde_json::from_str(vectors[2]["answer_text"].as_str().unwrap()).unwrap();
    let m = SurfaceManifest::from_value(old).unwrap();
    let notes = m.notes.join("\n");
    for want in [
        "surfaces[0].item_kind: dropped",
        "surfaces[0].fields: dropped",
        "surfaces[0].description: absent",
        "surfaces[1].scope: the older form {\"kind\": \"global\"} became \"global\"",
    ] {
        assert!(notes.contains(want), "{want:?} not in:\n{notes}");
    }
}

#[test]
fn a_pairings_file_as_lumiagent_writes_it_matches_the_corpus_answer() {
    let file = PairingsFile::parse(&data("phoneline-pairings.lumiagent.json")).unwrap();
    let registry = PhoneLineRegistry::builtin();
    for answer in [
        corpus(),
        vectors("normalised-manifest-hash-vectors.json")[1]["answer_text"]
            .as_str()
            .unwrap()
            .to_string(),
    ] {
        let dial = DialResult {
            namespace: "lumirealm".into(),
            outcome: DescribeOutcome::Answered(serde_json::from_str(&answer).unwrap()),
        };
        let s = summarize(&registry, Some(&file), &[dial]);
        assert_eq!(s[0].state, PhoneLineState::Paired);
        assert_eq!(s[0].hash_matches_current, Some(true));
        assert!(
            !s[0].warnings.iter().any(|w| w.contains("changed")),
            "{:?}",
            s[0].warnings
        );
        // And the pairing rule would leave LumiAgent's record unchanged.
        let d = decide(
            &registry,
            "lumirealm",
            Some(&DescribeOutcome::Answered(
                serde_json::from_str(&answer).unwrap(),
            )),
            file.get("lumirealm"),
            2,
        );
        assert_eq!(d.record_update, None);
    }
    // A real change is information: LumiAgent re-approves it on its next discovery.
    let mut changed: Value = serde_json::from_str(&corpus()).unwrap();
    changed["extension"]["version"] = Value::from("0.2.0");
    let s = summarize(
        &registry,
        Some(&file),
        &[DialResult {
            namespace: "lumirealm".into(),
            outcome: DescribeOutcome::Answered(changed),
        }],
    );
    assert_eq!(s[0].hash_matches_current, Some(false));
    assert!(s[0].warnings.iter().any(|w| w == MANIFEST_CHANGED_WORDS));
    assert!(MANIFEST_CHANGED_WORDS.contains("re-approves it on its next discovery"));
}
