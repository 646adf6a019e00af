//! Speed of loading the real runtime manifests and tool list, computing an autonomy table, and
//! checking a `phone_action` call.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use switchboard::phone_action::{check_call, result_text};
use switchboard::runtime::{autonomy_table, load_dir, Autonomy, ToolCatalogue};

fn benches(c: &mut Criterion) {
    let corpus = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus"));
    let dir = corpus.join("openphone");
    let tools_path = corpus.join("ifp1/openphone-tools.ifp1.json");
    c.bench_function("runtime/load_dir (commands + events, from disk)", |b| {
        b.iter(|| load_dir(black_box(&dir)).unwrap())
    });
    c.bench_function("runtime/tool catalogue load (37 tools, from disk)", |b| {
        b.iter(|| ToolCatalogue::load(black_box(&tools_path)).unwrap())
    });
    let tools = ToolCatalogue::load(&tools_path).unwrap();
    c.bench_function("runtime/autonomy_table trusted_actions", |b| {
        b.iter(|| autonomy_table(black_box(&tools), Autonomy::TrustedActions))
    });
    let call = serde_json::json!({"action": "navigate", "summary": " Route home ",
        "destination": {"query": "Home"}, "stops": [{"name": "Bakery"}, {"lat": 48.8, "lon": 2.3}],
        "mode": "drive", "replace_route": true, "junk": [1, 2, 3]});
    c.bench_function("phone_action/check_call navigate", |b| {
        b.iter(|| check_call(black_box(&call)).unwrap())
    });
    let answer = serde_json::json!({"status": "failed", "message": "x".repeat(2000)});
    c.bench_function("phone_action/result_text (2000-char message)", |b| {
        b.iter(|| result_text(Some(black_box(&answer))))
    });
}

criterion_group!(group, benches);
criterion_main!(group);
