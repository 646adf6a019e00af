//! Parses the mixed batch of host error texts from `shared/corpus/lumiverse/host-errors.json`
//! with our hand-written parser and, in the same run, with the one-regex approach extensions
//! use today (a single expression anchored at the end of the text; the rest after
//! `permissions: ` split at commas). Reported per batch, as texts per second and bytes per
//! second.
//!
//! Run: `cargo bench -p switchboard --bench host_errors -- --warm-up-time 1 --measurement-time 3`

#![allow(missing_docs)] // criterion_group! generates an undocumented public fn.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use regex::Regex;

const CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/corpus/lumiverse/host-errors.json"
);

fn corpus_inputs() -> Vec<String> {
    let text = std::fs::read_to_string(CORPUS).unwrap_or_default();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    doc["cases"]
        .as_array()
        .map(|cases| {
            cases
                .iter()
                .filter_map(|c| c["input"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// What the regex approach reads out: endpoint, requester-or-owner, the optional inherited
/// owner, and the permission list.
type RegexRead = (String, String, String, Option<String>, Vec<String>);

fn regex_parse(re: &Regex, text: &str) -> Option<RegexRead> {
    let c = re.captures(text)?;
    let perms = c
        .get(5)?
        .as_str()
        .split(',')
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect();
    Some((
        c.get(1)?.as_str().to_string(),
        c.get(2)?.as_str().to_string(),
        c.get(3)?.as_str().to_string(),
        c.get(4).map(|m| m.as_str().to_string()),
        perms,
    ))
}

fn bench(c: &mut Criterion) {
    let inputs = corpus_inputs();
    assert!(!inputs.is_empty(), "no corpus inputs at {CORPUS}");
    let bytes: usize = inputs.iter().map(String::len).sum();
    let re = Regex::new(
        r#""([^"]+)" requires (requester|owner) "([^"]+)"(?: to inherit owner "([^"]+)")? permissions: (.*)$"#,
    )
    .unwrap_or_else(|e| panic!("bad regex: {e}"));
    eprintln!("batch: {} texts, {} bytes", inputs.len(), bytes);

    for (name, throughput) in [
        (
            "host_errors_texts",
            Throughput::Elements(inputs.len() as u64),
        ),
        ("host_errors_bytes", Throughput::Bytes(bytes as u64)),
    ] {
        let mut g = c.benchmark_group(name);
        g.throughput(throughput);
        g.bench_function("hand_written", |b| {
            b.iter(|| {
                for t in &inputs {
                    black_box(switchboard::host_error::parse(black_box(t)));
                }
            })
        });
        g.bench_function("one_regex", |b| {
            b.iter(|| {
                for t in &inputs {
                    black_box(regex_parse(&re, black_box(t)));
                }
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
