//! ifp/1 throughput: validating corpus frames, receiving an event stream, hashing params.
//! Run: `cargo bench -p switchboard --bench ifp`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::{json, Value};
use switchboard::ifp::{params_hash, validate, validate_frame, Receiver};

fn corpus_frames() -> Vec<Vec<u8>> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/corpus/ifp1/fixtures/messages.json"
    ))
    .unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    doc["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| serde_json::to_vec(&c["message"]).unwrap())
        .collect()
}

fn bench(c: &mut Criterion) {
    let frames = corpus_frames();
    let mut g = c.benchmark_group("ifp");
    g.throughput(Throughput::Elements(frames.len() as u64));
    g.bench_function("validate_frame_26_corpus_messages", |b| {
        b.iter(|| frames.iter().filter(|f| validate_frame(f).is_ok()).count())
    });

    let events: Vec<_> = (0..1000u64)
        .map(|i| {
            validate(&json!({"ifp":"1","id":"msg_e0000001","ts":"2026-07-21T01:00:00Z",
                "type":"event.text.message","entity":"ent_abc123","session":format!("ses_s{:05}", i % 50),
                "device":"dev_d100","generation":3,
                "provenance":{"sensor":"dev_d100:kb","captured_at":"2026-07-21T01:00:00Z"},
                "labels":{"consent":"product_operation","retention":"standard"},
                "payload":{"seq":i,"dedup":format!("k{i}"),"text":"hello"}}))
            .unwrap()
        })
        .collect();
    g.throughput(Throughput::Elements(events.len() as u64));
    g.bench_function("receiver_1000_events_50_sessions", |b| {
        b.iter(|| {
            let mut rx = Receiver::new(3);
            events.iter().filter(|e| rx.receive_at_ts(e).stored).count()
        })
    });

    let params = json!({"to":"+15551234567","body":"on my way","z":{"b":[1,2,3],"a":"café → 😀"}});
    g.throughput(Throughput::Elements(1));
    g.bench_function("params_hash", |b| b.iter(|| params_hash(&params)));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
