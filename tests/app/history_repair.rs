//! A damaged dial history at start (`docs/faults.md`, "A broken database"): each test makes a
//! history with the real dial log, damages it the way disks and people do (truncated mid-page,
//! a page of random bytes, a file that is not SQLite, a write-ahead log without its database),
//! then starts the app's dials state on that folder as the app does. The damage is detected,
//! the file moved aside under a dated name, a fresh history started with what could be read
//! recovered into it, and the count is in the view's status (its banner) and the support
//! bundle. Nothing here deletes what the test did not make.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::{Rng as _, SeedableRng as _};
use switchboard::app::dials::DialsState;
use switchboard::app::paths::AppPaths;
use switchboard::clock::{Clock, ManualClock};
use switchboard::dials::repair::{self, Health, RECOVERY_FILE};
use switchboard::dials::store::DB_FILE;
use switchboard::dials::{Dial, DialLog, DialLogConfig, Retention, Seq};

/// 2026-10-02T06:40:00Z: the tests' clock (the aside name is dated with it).
const NOW_MS: u64 = 1_790_923_200_000;
const ASIDE: &str = "dials.sqlite3.broken-20261002T064000Z";

fn clock() -> Arc<dyn Clock> {
    Arc::new(ManualClock::new(NOW_MS))
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The `i`th dial the tests store: a sample dial kept forever (so nothing is pruned).
fn dial(i: u64) -> Dial {
    let mut d = switchboard::app::sample::sample_dial(i, 0, NOW_MS as i64 - 3_600_000);
    d.retention = Retention::Permanent;
    d.seq = Seq(0);
    d
}

/// A data folder `<home>/...` whose dial history holds `n` dials written by the real log; the
/// log still running when `keep_running` (its write-ahead log not checkpointed). Returns the
/// folder and the stored dials by id.
fn history(
    rt: &tokio::runtime::Runtime,
    paths: &AppPaths,
    n: u64,
    keep_running: bool,
) -> (
    PathBuf,
    HashMap<String, Dial>,
    Option<switchboard::dials::DialLogHandle>,
) {
    let dir = paths.link_dir(false);
    let dials: Vec<Dial> = (0..n).map(dial).collect();
    let handle = rt.block_on(async {
        let log = DialLog::spawn(DialLogConfig {
            data_dir: Some(dir.clone()),
            clock: clock(),
            ..DialLogConfig::default()
        })
        .unwrap();
        for chunk in dials.chunks(500) {
            log.ingest_batch(chunk.to_vec()).await.unwrap();
        }
        log.flush().await.unwrap();
        if keep_running {
            Some(log)
        } else {
            log.shutdown().await.unwrap();
            None
        }
    });
    let by_id = dials.into_iter().map(|d| (d.id.to_string(), d)).collect();
    (dir, by_id, handle)
}

/// Starts the app's dials state on `dir` as the app does; returns it and the dials of its
/// history (every page, oldest first).
fn start(rt: &tokio::runtime::Runtime, dir: &Path) -> (DialsState, Vec<Dial>) {
    let state = DialsState::start(rt.handle(), dir, 100_000, &clock()).unwrap();
    let dials = rt.block_on(async {
        let filter = switchboard::dials::DialFilter {
            limit: Some(1_000_000),
            ..Default::default()
        };
        state.log.query(filter).await.unwrap().dials
    });
    (state, dials.into_iter().map(|d| (*d).clone()).collect())
}

/// Every recovered dial is one the test stored, field for field, and none is there twice.
fn assert_genuine(recovered: &[Dial], stored: &HashMap<String, Dial>) {
    let mut seen = std::collections::HashSet::new();
    for d in recovered {
        assert!(seen.insert(d.id.to_string()), "{} recovered twice", d.id);
        let want = stored
            .get(&*d.id)
            .unwrap_or_else(|| panic!("{} recovered but never stored", d.id));
        assert_eq!(d.request.as_str(), want.request.as_str(), "{}", d.id);
        assert_eq!(
            d.response.as_ref().map(|r| r.as_str().to_string()),
            want.response.as_ref().map(|r| r.as_str().to_string()),
            "{}",
            d.id
        );
        assert_eq!(
            (d.start_ms, d.duration_ms, d.outcome, &d.op, &d.caller),
            (
                want.start_ms,
                want.duration_ms,
                want.outcome,
                &want.op,
                &want.caller
            ),
            "{}",
            d.id
        );
    }
}

/// What every repair shows: the status's recovery (the banner) with `recovered` dials, the
/// damaged file aside under the dated name, the recovery in the support bundle, and a second
/// start that finds a healthy history and repairs nothing.
fn assert_reported(
    rt: &tokio::runtime::Runtime,
    paths: &AppPaths,
    state: &DialsState,
    recovered: u64,
) -> repair::HistoryRecovery {
    let dir = paths.link_dir(false);
    let status = rt.block_on(state.dials_status()).unwrap();
    assert_eq!(status.storage_error, None, "the fresh history is stored");
    let r = status.recovery.expect("the banner's recovery");
    assert_eq!(r.recovered, recovered);
    assert_eq!(r.at_ms, NOW_MS as i64);
    assert_eq!(Path::new(&r.moved_to), dir.join(ASIDE));
    assert!(dir.join(ASIDE).exists(), "the damaged file is kept aside");
    let summary = r.summary();
    assert!(
        summary.contains(&format!("{recovered}")) && summary.contains(ASIDE),
        "{summary}"
    );
    // The support bundle of the app's files says it too.
    let bundle =
        switchboard::support::collect::from_files(paths, false, Default::default(), NOW_MS)
            .unwrap();
    let app = bundle.files.iter().find(|f| f.name == "app.json").unwrap();
    let v: serde_json::Value = serde_json::from_slice(&app.bytes).unwrap();
    let listed = &v["dial_history_recoveries"];
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["recovered"], recovered);
    assert_eq!(listed[0]["moved_to"], r.moved_to.as_str());
    // The fresh history is healthy: the next start repairs nothing and keeps the dials.
    rt.block_on(state.log.shutdown()).unwrap();
    assert_eq!(repair::check(&dir).unwrap(), Health::Fine);
    let (again, dials) = start(rt, &dir);
    assert_eq!(rt.block_on(again.dials_status()).unwrap().recovery, None);
    assert_eq!(dials.len() as u64, recovered);
    assert_eq!(repair::recoveries(&dir).unwrap().len(), 1);
    rt.block_on(again.log.shutdown()).unwrap();
    r
}

fn home() -> (tempfile::TempDir, AppPaths) {
    let home = tempfile::tempdir().unwrap();
    let paths = AppPaths::under(home.path());
    (home, paths)
}

#[test]
fn a_healthy_history_is_left_alone() {
    let rt = rt();
    let (_home, paths) = home();
    let (dir, stored, _) = history(&rt, &paths, 300, false);
    assert_eq!(repair::check(&dir).unwrap(), Health::Fine);
    let (state, dials) = start(&rt, &dir);
    assert_eq!(rt.block_on(state.dials_status()).unwrap().recovery, None);
    assert_eq!(dials.len(), 300);
    assert_genuine(&dials, &stored);
    assert!(!dir.join(RECOVERY_FILE).exists());
    assert!(!dir.join(ASIDE).exists());
    rt.block_on(state.log.shutdown()).unwrap();
}

#[test]
fn a_history_truncated_mid_page_is_moved_aside_and_its_readable_dials_recovered() {
    let rt = rt();
    let (_home, paths) = home();
    let (dir, stored, _) = history(&rt, &paths, 3000, false);
    let path = dir.join(DB_FILE);
    let len = std::fs::metadata(&path).unwrap().len();
    // 60 % of the file and half a page: the end of a page is cut off.
    let cut = (len * 6 / 10 / 4096) * 4096 + 2048;
    let original = std::fs::read(&path).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(cut)
        .unwrap();
    assert!(matches!(repair::check(&dir).unwrap(), Health::Broken(_)));
    let (state, dials) = start(&rt, &dir);
    let n = dials.len() as u64;
    let said = rt.block_on(state.dials_status()).unwrap().recovery;
    assert!(n > 0 && n < 3000, "{n} of 3000 recovered: {said:?}");
    assert_genuine(&dials, &stored);
    let r = assert_reported(&rt, &paths, &state, n);
    // The file aside is the damaged file as it was, byte for byte.
    assert_eq!(
        std::fs::read(dir.join(ASIDE)).unwrap(),
        original[..cut as usize]
    );
    assert!(!r.problem.is_empty());
}

#[test]
fn a_page_of_random_bytes_loses_only_the_dials_on_that_page() {
    let rt = rt();
    let (_home, paths) = home();
    let (dir, stored, _) = history(&rt, &paths, 3000, false);
    let path = dir.join(DB_FILE);
    // A leaf page of the dials table in the middle, and how many dials it holds (the bundled
    // SQLite has the dbstat table).
    let (page, cells, page_size) = {
        let c = rusqlite::Connection::open(&path).unwrap();
        let size: i64 = c.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
        let leaves: Vec<(i64, i64)> = c
            .prepare("SELECT pageno, ncell FROM dbstat WHERE name = 'dials' AND pagetype = 'leaf' ORDER BY pageno")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(leaves.len() > 10, "{} leaves", leaves.len());
        let (p, n) = leaves[leaves.len() / 2];
        (p, n, size)
    };
    let mut bytes = std::fs::read(&path).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(45);
    let at = ((page - 1) * page_size) as usize;
    rng.fill(&mut bytes[at..at + page_size as usize]);
    std::fs::write(&path, &bytes).unwrap();
    assert!(matches!(repair::check(&dir).unwrap(), Health::Broken(_)));
    let (state, dials) = start(&rt, &dir);
    assert_genuine(&dials, &stored);
    assert_eq!(
        dials.len() as u64,
        3000 - cells as u64,
        "every dial but the {cells} on page {page}"
    );
    let r = assert_reported(&rt, &paths, &state, 3000 - cells as u64);
    assert!(
        r.problem.starts_with("quick_check: ") && !r.problem.contains('\n'),
        "SQLite's finding on one line: {:?}",
        r.problem
    );
    assert_eq!(
        r.listed,
        Some(3000),
        "the damaged file's key list still reads"
    );
}

#[test]
fn a_file_that_is_not_sqlite_is_moved_aside_and_the_banner_says_nothing_was_recovered() {
    let rt = rt();
    let (_home, paths) = home();
    let (dir, _, _) = history(&rt, &paths, 50, false);
    let path = dir.join(DB_FILE);
    // A dial export saved over the history, say.
    let text = "{\"id\":\"d1\",\"op\":\"describe\"}\n".repeat(4000);
    std::fs::write(&path, &text).unwrap();
    assert!(matches!(repair::check(&dir).unwrap(), Health::Broken(_)));
    let (state, dials) = start(&rt, &dir);
    assert!(dials.is_empty());
    let r = assert_reported(&rt, &paths, &state, 0);
    assert!(
        r.salvage_error.is_some(),
        "an empty recovery says why: {r:?}"
    );
    assert!(r.summary().contains(" 0 dials"), "{}", r.summary());
    assert_eq!(std::fs::read_to_string(dir.join(ASIDE)).unwrap(), text);
}

#[test]
fn a_write_ahead_log_without_its_database_is_read_into_a_fresh_history() {
    let rt = rt();
    let (_home, paths) = home();
    // The log still running: every page of this small history is in its write-ahead log.
    let (dir, stored, running) = history(&rt, &paths, 400, true);
    let wal = std::fs::read(dir.join(format!("{DB_FILE}-wal"))).unwrap();
    assert!(wal.len() > 4096, "the WAL holds the history");
    rt.block_on(running.unwrap().shutdown()).unwrap();
    // Another data folder with only that log: its database was deleted.
    let (_home2, paths2) = home();
    let dir2 = paths2.link_dir(false);
    std::fs::create_dir_all(&dir2).unwrap();
    std::fs::write(dir2.join(format!("{DB_FILE}-wal")), &wal).unwrap();
    match repair::check(&dir2).unwrap() {
        Health::Broken(why) => assert!(why.contains("missing"), "{why}"),
        h => panic!("{h:?}"),
    }
    let (state, dials) = start(&rt, &dir2);
    assert_genuine(&dials, &stored);
    assert_eq!(dials.len(), 400, "every committed dial is in the log");
    let r = assert_reported(&rt, &paths2, &state, 400);
    assert!(dir2.join(format!("{ASIDE}-wal")).exists(), "{r:?}");
}
