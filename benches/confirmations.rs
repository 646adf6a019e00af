//! Confirmations mirror throughput: applying a stream of full action lifecycles (propose,
//! approve, result) already judged by the receiver, and taking the view's snapshot when the
//! history is full. Run: `cargo bench -p switchboard --bench confirmations`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use serde_json::json;
use switchboard::confirmations::ConfirmationMirror;
use switchboard::ifp::{params_hash, validate, Envelope, Outcome, Receiver};

fn lifecycles(n: usize) -> Vec<(Envelope, Outcome)> {
    let mut rx = Receiver::new(3);
    let mut out = Vec::new();
    for i in 0..n {
        let id = format!("act_b{i:07}");
        let params = json!({"to": "+15551234567", "body": format!("message {i}")});
        let h = params_hash(&params);
        let msgs = [
            json!({"ifp":"1","id":"msg_b0000001","ts":"2026-07-21T01:00:00Z","type":"action.propose",
                   "entity":"ent_abc123","session":"ses_b00001",
                   "payload":{"action_id":id,"tool":"messages.send","params":params,"params_hash":h,
                              "risk":"high","idempotency_key":id,"expires_at":"2026-07-21T01:05:00Z"}}),
            json!({"ifp":"1","id":"msg_b0000002","ts":"2026-07-21T01:00:05Z","type":"action.approve",
                   "entity":"ent_abc123","session":"ses_b00001","generation":3,
                   "payload":{"action_id":id,"params_hash":h,"confirmation":{"mode":"user_confirmed","ref":null}}}),
            json!({"ifp":"1","id":"msg_b0000003","ts":"2026-07-21T01:00:07Z","type":"action.result",
                   "entity":"ent_abc123","session":"ses_b00001","generation":3,
                   "payload":{"action_id":id,"status":"executed"}}),
        ];
        for m in msgs {
            let env = validate(&m).unwrap();
            let o = rx.receive_at_ts(&env);
            out.push((env, o));
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    let stream = lifecycles(1000);
    let mut g = c.benchmark_group("confirmations");
    g.throughput(Throughput::Elements(stream.len() as u64));
    g.bench_function("apply_1000_lifecycles_3000_messages", |b| {
        b.iter_batched(
            ConfirmationMirror::with_bundled_catalogue,
            |mut m| {
                for (i, (env, o)) in stream.iter().enumerate() {
                    m.apply("Ada's Pixel", env, o, i as i64);
                }
                m
            },
            BatchSize::LargeInput,
        )
    });
    let mut full = ConfirmationMirror::with_bundled_catalogue();
    for (i, (env, o)) in stream.iter().enumerate() {
        full.apply("Ada's Pixel", env, o, i as i64);
    }
    g.throughput(Throughput::Elements(1));
    g.bench_function("snapshot_with_200_ended", |b| b.iter(|| full.snapshot()));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
