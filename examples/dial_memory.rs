//! Resident memory of the whole process holding 100 000 realistic dials (~600 bytes of text each)
//! in the dial log, with SQLite persistence on (`crates/dials/src/`; issue 19's target: at most 80 MB).
//! The log keeps the newest dials in memory (its default ring, 25 000) and every stored one in
//! SQLite; the history count printed shows they are there to search (the sample's ~10 %
//! `transient` dials are never stored: those older than the ring are gone, as they should be).
//!
//! Run: `cargo run --release -p switchboard --example dial_memory [-- COUNT]`.
//! Prints VmRSS from /proc/self/status before and after.

#[path = "../benches/common/sample_dials.rs"]
mod sample_dials;

use switchboard::dials::{DialFilter, DialLog, DialLogConfig};

fn vm_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn mib(kib: Option<u64>) -> String {
    kib.map_or("unknown".into(), |k| {
        format!("{:.1} MiB", k as f64 / 1024.0)
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let count: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(100_000);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    let dir = tempfile::tempdir()?;
    let before = vm_rss_kib();
    println!("VmRSS before: {}", mib(before));
    rt.block_on(async {
        let log = DialLog::spawn(DialLogConfig {
            data_dir: Some(dir.path().to_owned()),
            prune_interval: None,
            ..DialLogConfig::default()
        })?;
        // Generate and ingest in chunks so the generator's copies do not inflate the figure.
        let mut text = 0usize;
        let chunk = 1000;
        let mut done = 0;
        while done < count {
            let n = chunk.min(count - done);
            let dials: Vec<_> = sample_dials::sample_dials(&format!("m{done}_"), n);
            text += dials.iter().map(sample_dials::text_bytes).sum::<usize>();
            log.ingest_batch(dials).await?;
            done += n;
        }
        log.flush().await?;
        let st = log.status().await?;
        let page = log
            .query(DialFilter {
                limit: Some(1),
                ..DialFilter::default()
            })
            .await?;
        let after = vm_rss_kib();
        println!(
            "held {} dials ({} rows in SQLite), {:.0} bytes of text per dial on average",
            st.held,
            st.rows_written,
            text as f64 / count.max(1) as f64
        );
        println!("VmRSS after:  {}", mib(after));
        if let (Some(a), Some(b)) = (after, before) {
            println!(
                "growth: {:.1} MiB ({:.0} bytes per dial)",
                a.saturating_sub(b) as f64 / 1024.0,
                a.saturating_sub(b) as f64 * 1024.0 / count.max(1) as f64
            );
        }
        println!("newest: {}", page.dials.first().map_or("-", |d| &*d.op));
        let history = log
            .history(
                switchboard::dials::CompiledQuery::parse("", 0)?,
                None,
                Some(1),
                true,
            )
            .await?;
        println!(
            "history: {} dials match the empty filter line ({})",
            history.matched.map_or(0, |m| m.count),
            if history.matched.is_some_and(|m| m.exact) {
                "exact"
            } else {
                "estimate"
            }
        );
        log.shutdown().await?;
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    Ok(())
}
