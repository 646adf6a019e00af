//! `manifestHash` equals what JavaScript computes: every vector of
//! tests/data/manifest-hash-vectors.json (made by scripts/gen-manifest-hash-vectors.mjs with
//! node's JSON.parse, JSON.stringify and crypto) is checked, both the JSON.stringify text and
//! the SHA-256.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use switchboard::js_json::{sha256_hex, stringify};
use switchboard::phone_line::manifest::{manifest_hash, SurfaceManifest};

fn vectors() -> Vec<Value> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/manifest-hash-vectors.json"
    ))
    .unwrap();
    let file: Value = serde_json::from_str(&text).unwrap();
    file["vectors"].as_array().unwrap().clone()
}

#[test]
fn every_vector_matches_javascript() {
    let vectors = vectors();
    assert!(vectors.len() >= 7, "vectors file is incomplete");
    for v in &vectors {
        let name = v["name"].as_str().unwrap();
        let text = v["manifest_text"].as_str().unwrap();
        let want_text = v["stringify"].as_str().unwrap();
        let want_hash = v["sha256"].as_str().unwrap();
        let parsed: Value = serde_json::from_str(text).unwrap();
        assert_eq!(stringify(&parsed), want_text, "stringify of {name}");
        assert_eq!(sha256_hex(want_text), want_hash, "sha256 of {name}");
        assert_eq!(manifest_hash(&parsed), want_hash, "manifest_hash of {name}");
    }
}

#[test]
fn the_real_lumirealm_manifest_is_a_vector() {
    let corpus = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/corpus/lumiverse/lumirealm.describe.json"
    ))
    .unwrap();
    let vectors = vectors();
    let v = vectors
        .iter()
        .find(|v| v["manifest_text"].as_str() == Some(corpus.as_str()))
        .expect("the corpus LumiRealm describe manifest is one of the vectors");
    let m = SurfaceManifest::from_text(&corpus).unwrap();
    assert_eq!(m.hash(), v["sha256"].as_str().unwrap());
}
