//! Criterion benches of the dial log (`crates/dials/src/`): ingest throughput (memory only, and with
//! batched SQLite writes until flushed) and query/stats over 100 000 held dials.
//!
//! Run: `cargo bench -p switchboard --bench dial_log`.

// `criterion_group!` generates an undocumented function.
#![allow(missing_docs)]

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use switchboard::dials::{Dial, DialFilter, DialLog, DialLogConfig, DialLogHandle, DialOutcome};

#[path = "common/sample_dials.rs"]
mod sample_dials;
use sample_dials::sample_dials;

const INGEST_N: usize = 20_000;
const HELD_N: usize = 100_000;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap_or_else(|e| panic!("tokio runtime: {e}"))
}

fn config(dir: Option<&std::path::Path>) -> DialLogConfig {
    DialLogConfig {
        data_dir: dir.map(ToOwned::to_owned),
        prune_interval: None,
        ..DialLogConfig::default()
    }
}

async fn ingest_all(log: &DialLogHandle, dials: Vec<Dial>, chunk: usize) {
    let mut it = dials.into_iter().peekable();
    while it.peek().is_some() {
        let batch: Vec<Dial> = it.by_ref().take(chunk).collect();
        log.ingest_batch(batch)
            .await
            .unwrap_or_else(|e| panic!("ingest: {e}"));
    }
}

fn bench_ingest(c: &mut Criterion) {
    let rt = runtime();
    let dials = sample_dials("bench_", INGEST_N);
    let mut g = c.benchmark_group("dial_log_ingest");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(10));
    g.throughput(Throughput::Elements(INGEST_N as u64));

    g.bench_function("memory_only_batches_of_64", |b| {
        b.iter_batched(
            || dials.clone(),
            |d| {
                rt.block_on(async {
                    let log = DialLog::spawn(config(None)).unwrap_or_else(|e| panic!("{e}"));
                    ingest_all(&log, d, 64).await;
                    log.shutdown().await.unwrap_or_else(|e| panic!("{e}"));
                })
            },
            BatchSize::PerIteration,
        )
    });

    g.bench_function("memory_only_one_by_one", |b| {
        b.iter_batched(
            || dials.clone(),
            |d| {
                rt.block_on(async {
                    let log = DialLog::spawn(config(None)).unwrap_or_else(|e| panic!("{e}"));
                    for dial in d {
                        log.ingest(dial).await.unwrap_or_else(|e| panic!("{e}"));
                    }
                    log.shutdown().await.unwrap_or_else(|e| panic!("{e}"));
                })
            },
            BatchSize::PerIteration,
        )
    });

    // Held (ring + dedup lookups in SQLite) and then flushed: every persisting dial committed.
    g.bench_function("sqlite_held_and_flushed_batches_of_64", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
                let d = dials.clone();
                total += rt.block_on(async {
                    let log =
                        DialLog::spawn(config(Some(dir.path()))).unwrap_or_else(|e| panic!("{e}"));
                    let t = Instant::now();
                    ingest_all(&log, d, 64).await;
                    log.flush().await.unwrap_or_else(|e| panic!("{e}"));
                    let el = t.elapsed();
                    log.shutdown().await.unwrap_or_else(|e| panic!("{e}"));
                    el
                });
            }
            total
        })
    });
    g.finish();
}

fn bench_query(c: &mut Criterion) {
    let rt = runtime();
    let log = rt.block_on(async {
        let log = DialLog::spawn(config(None)).unwrap_or_else(|e| panic!("{e}"));
        ingest_all(&log, sample_dials("q_", HELD_N), 1000).await;
        log
    });
    let mut g = c.benchmark_group("dial_log_query_100k");
    g.sample_size(20);
    let cases: Vec<(&str, DialFilter)> = vec![
        (
            "newest_100_unfiltered",
            DialFilter {
                limit: Some(100),
                ..DialFilter::default()
            },
        ),
        (
            "op_read_item_limit_100",
            DialFilter {
                op: Some("read_item".into()),
                limit: Some(100),
                ..DialFilter::default()
            },
        ),
        (
            "slow_timed_out",
            DialFilter {
                timed_out: Some(true),
                slow: Some(true),
                limit: Some(100),
                ..DialFilter::default()
            },
        ),
        (
            "text_ascii_rare",
            DialFilter {
                text: Some("ITEM_004242".into()),
                limit: Some(100),
                ..DialFilter::default()
            },
        ),
        (
            "text_ascii_common",
            DialFilter {
                text: Some("Ember".into()),
                limit: Some(100),
                ..DialFilter::default()
            },
        ),
    ];
    for (name, f) in cases {
        g.bench_function(name, |b| {
            b.iter(|| {
                rt.block_on(log.query(f.clone()))
                    .unwrap_or_else(|e| panic!("{e}"))
            })
        });
    }
    g.bench_function("stats_all_ops", |b| {
        b.iter(|| {
            rt.block_on(log.stats(DialFilter::default()))
                .unwrap_or_else(|e| panic!("{e}"))
        })
    });
    g.bench_function("stats_errors_only", |b| {
        b.iter(|| {
            rt.block_on(log.stats(DialFilter {
                outcome: Some(DialOutcome::Error),
                ..DialFilter::default()
            }))
            .unwrap_or_else(|e| panic!("{e}"))
        })
    });
    // Spec conformance (crates/domain/src/dial/conformance.rs): each dial is checked once, the first
    // time a row, a "not to spec" filter or the stats ask, then cached. The cold figure is what
    // the first look at 100 000 dials costs; the warm one every look after it.
    g.bench_function("not_to_spec_filter_warm", |b| {
        b.iter(|| {
            rt.block_on(log.query(DialFilter {
                to_spec: Some(false),
                limit: Some(100),
                ..DialFilter::default()
            }))
            .unwrap_or_else(|e| panic!("{e}"))
        })
    });
    g.finish();

    let mut g = c.benchmark_group("spec_check_100k");
    g.sample_size(10);
    let fresh = sample_dials("s_", HELD_N);
    g.bench_function("cold_check_every_dial", |b| {
        b.iter_batched(
            || fresh.clone(),
            |dials| dials.iter().map(Dial::spec_findings).sum::<u32>(),
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

criterion_group!(benches, bench_ingest, bench_query);
criterion_main!(benches);
