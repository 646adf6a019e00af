//! The whole dial history (`crates/dials/src/history.rs`, `history_sql.rs`): pages over the ring and
//! SQLite by a filter line, beyond the ring, after a restart, within retention and gone after
//! (full-text index in step), follow a call, connection events in the timeline, redacted
//! export, and the migration of a version 2 file (the schema and inserts of the code before).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use switchboard::clock::ManualClock;
use switchboard::dials::{
    CompiledQuery, ConnectionEvent, ConnectionKind, Dial, DialFilter, DialLog, DialLogConfig,
    DialLogHandle, DialOutcome, HistoryEntry, HistoryPage, IngestVerdict, JsonText, Retention,
};

const T0: i64 = 1_790_000_000_000;
const DAY: i64 = 24 * 60 * 60 * 1000;
const OPS: [&str; 4] = ["read_item", "list_items", "grep_items", "write_field"];

fn dial(i: usize, start_ms: i64, retention: Retention) -> Dial {
    let op = OPS[i % OPS.len()];
    let outcome = if i % 10 == 3 {
        DialOutcome::Error
    } else {
        DialOutcome::Ok
    };
    let mut d = Dial {
        id: format!("dial-{i:05}").into(),
        phone: if i % 3 == 0 {
            "dev_beta22"
        } else {
            "dev_alpha1"
        }
        .into(),
        call_id: format!("call-{}", i / 4).into(),
        session: format!("ses_run{:03}", i / 50).into(),
        caller: "lumiagent".into(),
        callee: "lumirealm".into(),
        endpoint: "lumirealm.phoneline".into(),
        op: op.into(),
        request: JsonText::from_value(&json!({
            "op": op, "userId": "u1", "surfaceId": "module_envelope",
            "itemId": format!("ITEM_{i:05}"), "callId": format!("call-{}", i / 4),
        })),
        start_ms,
        duration_ms: if i % 7 == 0 {
            1500
        } else {
            40 + (i as u64 % 100)
        },
        outcome,
        response: (outcome == DialOutcome::Ok).then(|| {
            JsonText::from_value(&json!({"value": format!("Hello Lumi {i}"), "n": i, "ok": true}))
        }),
        error: (outcome == DialOutcome::Error)
            .then(|| "permission denied: push_notification".into()),
        retention,
        slow: false,
        spec: Default::default(),
        seq: Default::default(),
        // A phone whose clock agrees with the desktop's: it arrived when it started.
        arrived: switchboard::dials::Arrival(Some(start_ms)),
    };
    d.normalise();
    d
}

fn config(dir: &Path, capacity: usize, clock: Arc<ManualClock>) -> DialLogConfig {
    DialLogConfig {
        data_dir: Some(dir.to_owned()),
        capacity,
        prune_interval: None,
        db_flush_interval: Duration::from_millis(5),
        clock,
        ..DialLogConfig::default()
    }
}

async fn wait_indexed(log: &DialLogHandle) {
    wait_indexed_for(log, Duration::from_secs(10)).await;
}

async fn wait_indexed_for(log: &DialLogHandle, limit: Duration) {
    log.flush().await.unwrap();
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        if log.history_indexed().await.unwrap() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("the history was not indexed within {limit:?}");
}

fn q(line: &str) -> CompiledQuery {
    CompiledQuery::parse(line, T0 + 1000 * DAY).unwrap()
}

/// Every page of `line`, following `next` (bounded), newest first.
async fn all_pages(log: &DialLogHandle, line: &str, limit: u32) -> (Vec<HistoryEntry>, usize) {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    for _ in 0..10_000 {
        let p: HistoryPage = log
            .history(q(line), cursor.as_deref(), Some(limit), false)
            .await
            .unwrap();
        pages += 1;
        out.extend(p.entries);
        cursor = p.next;
        if cursor.is_none() {
            return (out, pages);
        }
    }
    panic!("paging did not end");
}

fn ids(entries: &[HistoryEntry]) -> Vec<String> {
    entries
        .iter()
        .filter_map(|e| match e {
            HistoryEntry::Dial(d) => Some(d.id.to_string()),
            HistoryEntry::Connection(_) => None,
        })
        .collect()
}

fn expected(all: &[Dial], keep: impl Fn(&Dial) -> bool) -> Vec<String> {
    all.iter()
        .rev()
        .filter(|d| keep(d))
        .map(|d| d.id.to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_reaches_beyond_the_ring_and_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0 as u64));
    let log = DialLog::spawn(config(dir.path(), 100, Arc::clone(&clock))).unwrap();
    let all: Vec<Dial> = (0..1200)
        .map(|i| dial(i, T0 + i as i64 * 1000, Retention::Standard))
        .collect();
    for chunk in all.chunks(100) {
        log.ingest_batch(chunk.to_vec()).await.unwrap();
    }
    wait_indexed(&log).await;
    assert_eq!(
        log.status().await.unwrap().held,
        100,
        "the ring holds only 100"
    );

    // Every field filter and free text, over the whole history, paged without repeats.
    type Keep = Box<dyn Fn(&Dial) -> bool>;
    let cases: Vec<(&str, Keep)> = vec![
        ("", Box::new(|_| true)),
        ("op:read_item", Box::new(|d| &*d.op == "read_item")),
        ("-outcome:ok", Box::new(|d| d.outcome != DialOutcome::Ok)),
        (
            "phone:dev_beta22 duration>1s",
            Box::new(|d| &*d.phone == "dev_beta22" && d.duration_ms > 1000),
        ),
        (
            "item_0004",
            Box::new(|d| d.request.as_str().contains("ITEM_0004")),
        ),
        (
            "\"hello lumi 11\"",
            Box::new(|d| {
                d.response
                    .as_ref()
                    .is_some_and(|r| r.as_str().contains("Hello Lumi 11"))
            }),
        ),
        (
            "push_notification -op:grep_items",
            Box::new(|d| d.error.is_some() && &*d.op != "grep_items"),
        ),
        (
            "/ITEM_0+7\\d\"/",
            Box::new(|d| {
                regex::Regex::new("ITEM_0+7\\d\"")
                    .unwrap()
                    .is_match(d.request.as_str())
            }),
        ),
        (
            "session:ses_run003",
            Box::new(|d| &*d.session == "ses_run003"),
        ),
    ];
    for (line, keep) in &cases {
        let want = expected(&all, keep);
        let (got, pages) = all_pages(&log, line, 97).await;
        let got = ids(&got);
        assert_eq!(
            got.len(),
            want.len(),
            "{line}: count of rows over {pages} pages"
        );
        assert_eq!(got, want, "{line}: rows and order");
        let first = log.history(q(line), None, Some(50), true).await.unwrap();
        let m = first.matched.unwrap();
        assert!(m.exact, "{line}: 1200 rows are counted exactly");
        assert_eq!(m.count, want.len() as u64, "{line}: matched");
    }
    let page = log.history(q(""), None, Some(10), true).await.unwrap();
    assert_eq!(page.oldest_ms, Some(T0), "how far back history goes");

    // A row far beyond the ring opens whole (the inspector reads it by its seq), text and all.
    let (rows, _) = all_pages(&log, "", 500).await;
    let old = rows.last().unwrap();
    let whole = log.stored_dial(old.seq()).await.unwrap().unwrap();
    assert_eq!(&*whole.id, "dial-00000");
    assert_eq!(whole.request, all[0].request);
    assert_eq!(whole.response, all[0].response);
    assert_eq!(whole.start_ms, T0);
    assert_eq!(log.stored_dial(u64::MAX / 2).await.unwrap(), None);

    // Time filters over stored rows.
    let after = q(&format!("after:{}", rfc(T0 + 300_000)));
    let p = log.history(after, None, Some(2000), true).await.unwrap();
    assert_eq!(p.matched.unwrap().count, 900);

    // After a restart: the same history, new dials numbered after the stored ones.
    log.shutdown().await.unwrap();
    let log = DialLog::spawn(config(dir.path(), 100, Arc::clone(&clock))).unwrap();
    let (got, _) = all_pages(&log, "op:list_items", 500).await;
    assert_eq!(ids(&got), expected(&all, |d| &*d.op == "list_items"));
    let seq_before = got.first().unwrap().seq();
    log.ingest(dial(5000, T0 + 5_000_000, Retention::Standard))
        .await
        .unwrap();
    let p = log
        .history(q("ITEM_05000"), None, None, true)
        .await
        .unwrap();
    assert_eq!(
        ids(&p.entries),
        vec!["dial-05000"],
        "a new dial is found before it is indexed"
    );
    assert!(p.entries[0].seq() > seq_before);
    wait_indexed(&log).await;
    let p = log
        .history(q("ITEM_05000"), None, None, true)
        .await
        .unwrap();
    assert_eq!(ids(&p.entries), vec!["dial-05000"], "and after");
    log.shutdown().await.unwrap();
}

fn rfc(ms: i64) -> String {
    switchboard::timefmt::rfc3339_ms(u64::try_from(ms).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_prunes_history_and_its_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0 as u64));
    let log = DialLog::spawn(config(dir.path(), 10, Arc::clone(&clock))).unwrap();
    let mut all = Vec::new();
    for i in 0..60 {
        let ret = match i % 3 {
            0 => Retention::Standard,
            1 => Retention::Extended,
            _ => Retention::Permanent,
        };
        all.push(dial(i, T0 + i as i64, ret));
    }
    log.ingest_batch(all.clone()).await.unwrap();
    log.record_connection(ConnectionEvent {
        seq: 0,
        phone: "dev_alpha1".into(),
        label: "Demo phone".into(),
        at_ms: T0,
        event: ConnectionKind::Connected,
        detail: "hello".into(),
    });
    wait_indexed(&log).await;
    // Within retention (6 days on): everything.
    let r = log.prune(T0 + 6 * DAY).await.unwrap();
    assert_eq!(r.stored, 0);
    let (got, _) = all_pages(&log, "hello", 1000).await;
    assert_eq!(
        ids(&got),
        expected(&all, |d| d.response.is_some()),
        "dials with a response"
    );
    let (got, _) = all_pages(&log, "kind:connection", 10).await;
    assert_eq!(got.len(), 1);
    // 8 days on: the standard ones and the connection event are gone, from the ring, the table
    // and the indexes.
    let r = log.prune(T0 + 8 * DAY).await.unwrap();
    assert_eq!(r.stored, 20);
    let want = expected(&all, |d| d.retention != Retention::Standard);
    let (got, _) = all_pages(&log, "", 7).await;
    assert_eq!(ids(&got), want);
    let (got, _) = all_pages(&log, "kind:connection", 10).await;
    assert!(got.is_empty(), "connection events are kept 7 days");
    let (got, _) = all_pages(&log, "ITEM_00000", 10).await;
    assert!(got.is_empty());
    // 91 days on: only permanent ones.
    log.prune(T0 + 91 * DAY).await.unwrap();
    let (got, _) = all_pages(&log, "hello", 1000).await;
    assert_eq!(
        ids(&got),
        expected(&all, |d| d.retention == Retention::Permanent
            && d.response.is_some())
    );
    log.shutdown().await.unwrap();
    // The indexes hold exactly the rows left.
    let c = rusqlite::Connection::open(dir.path().join("dials.sqlite3")).unwrap();
    let rows: i64 = c
        .query_row("SELECT count(*) FROM dials", [], |r| r.get(0))
        .unwrap();
    let fts: i64 = c
        .query_row(
            "SELECT count(*) FROM dial_fts WHERE dial_fts MATCH 'lumiagent OR module_envelope'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let orphans: i64 = c
        .query_row(
            "SELECT count(*) FROM dial_by WHERE seq NOT IN (SELECT rowid FROM dials)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!((rows, fts, orphans), (20, 20, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_a_call_and_connection_events_in_the_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0 as u64));
    let log = DialLog::spawn(config(dir.path(), 5, Arc::clone(&clock))).unwrap();
    let ev = |kind, at| ConnectionEvent {
        seq: 0,
        phone: "dev_alpha1".into(),
        label: "Demo phone".into(),
        at_ms: at,
        event: kind,
        detail: "why".into(),
    };
    log.record_connection(ev(ConnectionKind::Connected, T0));
    let all: Vec<Dial> = (0..40)
        .map(|i| dial(i, T0 + 1 + i as i64, Retention::Standard))
        .collect();
    log.ingest_batch(all[..20].to_vec()).await.unwrap();
    log.record_connection(ev(ConnectionKind::Disconnected, T0 + 100));
    log.ingest_batch(all[20..].to_vec()).await.unwrap();
    wait_indexed(&log).await;

    // Follow call-3: dials 12..16, newest first in pages (the app shows them oldest first).
    let (got, _) = all_pages(&log, "call:call-3", 2).await;
    assert_eq!(
        ids(&got),
        vec!["dial-00015", "dial-00014", "dial-00013", "dial-00012"]
    );
    // The timeline: connection events between the dials, in order; filterable.
    let (got, _) = all_pages(&log, "", 7).await;
    assert_eq!(got.len(), 42);
    let kinds: Vec<&str> = got
        .iter()
        .map(|e| match e {
            HistoryEntry::Dial(_) => "d",
            HistoryEntry::Connection(c) if c.event == ConnectionKind::Connected => "connected",
            HistoryEntry::Connection(_) => "disconnected",
        })
        .collect();
    assert_eq!(kinds[20], "disconnected");
    assert_eq!(kinds[41], "connected");
    let seqs: Vec<u64> = got.iter().map(HistoryEntry::seq).collect();
    assert!(
        seqs.windows(2).all(|w| w[0] > w[1]),
        "newest first, no repeats"
    );
    assert_eq!(all_pages(&log, "kind:connection", 10).await.0.len(), 2);
    assert_eq!(all_pages(&log, "-kind:connection", 10).await.0.len(), 40);
    assert_eq!(
        all_pages(&log, "phone:dev_alpha1 kind:connection", 10)
            .await
            .0
            .len(),
        2
    );
    assert_eq!(
        all_pages(&log, "phone:dev_beta22 kind:connection", 10)
            .await
            .0
            .len(),
        0
    );
    assert_eq!(
        all_pages(&log, "op:read_item", 10).await.0.len(),
        10,
        "dial terms leave connection events out"
    );
    // After a restart they are still there, from SQLite.
    log.shutdown().await.unwrap();
    let log = DialLog::spawn(config(dir.path(), 5, Arc::clone(&clock))).unwrap();
    let (got, _) = all_pages(&log, "", 7).await;
    assert_eq!(got.len(), 42);
    log.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_only_and_stored_logs_answer_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0 as u64));
    let stored = DialLog::spawn(config(dir.path(), 10, Arc::clone(&clock))).unwrap();
    let mem = DialLog::spawn(DialLogConfig {
        capacity: 10_000,
        prune_interval: None,
        ..DialLogConfig::default()
    })
    .unwrap();
    let all: Vec<Dial> = (0..300)
        .map(|i| dial(i, T0 + i as i64, Retention::Extended))
        .collect();
    stored.ingest_batch(all.clone()).await.unwrap();
    mem.ingest_batch(all.clone()).await.unwrap();
    wait_indexed(&stored).await;
    for line in [
        "lumi",
        "\"lumi 2\"",
        "-hello",
        "hello -op:read_item",
        "/Lumi 1\\d\\b/",
        "/lumi 1/i",
        "spec:broken",
        "-spec:broken",
        "outcome:error phone:dev_beta22",
        "duration<=50ms",
    ] {
        let a = ids(&all_pages(&stored, line, 33).await.0);
        let b = ids(&all_pages(&mem, line, 33).await.0);
        assert_eq!(a, b, "{line}");
    }
    stored.shutdown().await.unwrap();
}

#[test]
fn redacted_export_keeps_keys_and_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let d = Arc::new(dial(5, T0, Retention::Standard));
    let path = dir.path().join("red.jsonl");
    let n =
        switchboard::dials::jsonl::export_jsonl_file_with(&[Arc::clone(&d)], &path, true).unwrap();
    assert_eq!(n, 1);
    let text = std::fs::read_to_string(&path).unwrap();
    let v: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(
        v["request"],
        json!({"op": "<string>", "userId": "<string>", "surfaceId": "<string>",
               "itemId": "<string>", "callId": "<string>"})
    );
    assert_eq!(
        v["response"],
        json!({"value": "<string>", "n": "<number>", "ok": "<bool>"})
    );
    assert_eq!(v["id"], json!("dial-00005"), "the dial's own fields stay");
    assert_eq!(v["op"], json!("list_items"));
    assert!(
        !text.contains("ITEM_00005") && !text.contains("Hello Lumi"),
        "{text}"
    );
    let keys: Vec<&String> = v["request"].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["op", "userId", "surfaceId", "itemId", "callId"],
        "order kept"
    );
    // Nested arrays and nulls.
    let nested =
        switchboard::dials::jsonl::redact_value(&json!({"a": [1, "x", null, {"b": false}]}));
    assert_eq!(
        nested,
        json!({"a": ["<number>", "<string>", null, {"b": "<bool>"}]})
    );
    // A redacted export still imports.
    let log = switchboard::dials::ImportedLog::read_jsonl_file(&path).unwrap();
    assert_eq!(log.len(), 1);
    // Unredacted keeps the values.
    let plain = dir.path().join("plain.jsonl");
    switchboard::dials::jsonl::export_jsonl_file_with(&[d], &plain, false).unwrap();
    assert!(std::fs::read_to_string(&plain)
        .unwrap()
        .contains("ITEM_00005"));
}

/// The version 2 schema and insert of the code before history search (main's
/// `crates/dials/src/store.rs`), verbatim.
const V2_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS dials (
    id          TEXT NOT NULL,
    phone       TEXT NOT NULL,
    call_id     TEXT NOT NULL,
    caller      TEXT NOT NULL,
    callee      TEXT NOT NULL,
    endpoint    TEXT NOT NULL,
    op          TEXT NOT NULL,
    request     TEXT NOT NULL,
    start_ms    INTEGER NOT NULL,
    duration_ms INTEGER NOT NULL,
    outcome     TEXT NOT NULL,
    response    TEXT,
    error       TEXT,
    retention   TEXT NOT NULL,
    expires_ms  INTEGER
);
CREATE TABLE IF NOT EXISTS dial_keys (
    k           INTEGER NOT NULL
);
DROP INDEX IF EXISTS dials_start;
CREATE INDEX IF NOT EXISTS dials_expires ON dials(expires_ms) WHERE expires_ms IS NOT NULL;
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_2_file_is_migrated_and_searchable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dials.sqlite3");
    let all: Vec<Dial> = (0..500)
        .map(|i| dial(i, T0 + i as i64, Retention::Permanent))
        .collect();
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.pragma_update(None, "journal_mode", "WAL").unwrap();
        c.execute_batch(V2_SCHEMA).unwrap();
        c.pragma_update(None, "user_version", 2).unwrap();
        let mut ins = c
            .prepare(
                "INSERT INTO dials (id, phone, call_id, caller, callee, endpoint, op, request,
                start_ms, duration_ms, outcome, response, error, retention, expires_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
            )
            .unwrap();
        for d in &all {
            ins.execute(rusqlite::params![
                &*d.id,
                &*d.phone,
                &*d.call_id,
                &*d.caller,
                &*d.callee,
                &*d.endpoint,
                &*d.op,
                d.request.as_str(),
                d.start_ms,
                d.duration_ms as i64,
                d.outcome.as_str(),
                d.response.as_ref().map(JsonText::as_str),
                d.error.as_deref(),
                d.retention.as_str(),
                None::<i64>,
            ])
            .unwrap();
            c.execute(
                "INSERT INTO dial_keys (rowid, k) VALUES (last_insert_rowid(), ?1)",
                [0i64],
            )
            .unwrap();
        }
    }
    let clock = Arc::new(ManualClock::new(T0 as u64));
    let log = DialLog::spawn(config(dir.path(), 50, Arc::clone(&clock))).unwrap();
    // Before the background indexing finished or after: the same answers.
    let (got, _) = all_pages(&log, "op:grep_items hello", 40).await;
    assert_eq!(
        ids(&got),
        expected(&all, |d| &*d.op == "grep_items" && d.response.is_some())
    );
    wait_indexed(&log).await;
    let (got, _) = all_pages(&log, "op:grep_items hello", 40).await;
    assert_eq!(
        ids(&got),
        expected(&all, |d| &*d.op == "grep_items" && d.response.is_some())
    );
    // New dials go on after the migrated rows.
    log.ingest(dial(9999, T0 + 9999, Retention::Standard))
        .await
        .unwrap();
    let p = log.history(q(""), None, Some(1), true).await.unwrap();
    assert_eq!(ids(&p.entries), vec!["dial-09999"]);
    assert_eq!(p.matched.unwrap().count, 501);
    log.shutdown().await.unwrap();
    let c = rusqlite::Connection::open(&path).unwrap();
    let v: i64 = c
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(
        v, 6,
        "the current schema (version 6: the journal of batches)"
    );
    let sessions: i64 = c
        .query_row("SELECT count(*) FROM dials WHERE session = ''", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(sessions, 500, "migrated rows have no session");
    let unique: HashSet<String> = all.iter().map(|d| d.id.to_string()).collect();
    assert_eq!(unique.len(), 500);
}

/// A free-text query first probes the newest rows by rowid (a common word fills its page there)
/// and goes on in the full-text index below them: over a store larger than the probe, a rare
/// word only in old dials, a common word, a phrase, and a word with a field are all found, in
/// order, with nothing skipped or repeated across pages, and counted exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn free_text_beyond_the_probe_finds_old_and_common_words() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0 as u64));
    let log = DialLog::spawn(config(dir.path(), 100, Arc::clone(&clock))).unwrap();
    // More rows than the probe reads (1024), so the rare word's dials are only reachable through
    // the full-text index.
    let n = 5000;
    let mut all = Vec::with_capacity(n);
    for i in 0..n {
        let mut d = dial(i, T0 + i as i64 * 10, Retention::Standard);
        if matches!(i % 1000, 7 | 8) && i < 2000 {
            d.request = JsonText::from_value(&json!({
                "op": &*d.op, "userId": "u1", "surfaceId": "module_envelope",
                "itemId": "zephyr_quartz", "callId": &*d.call_id,
            }));
        }
        all.push(d.clone());
        assert_eq!(
            log.ingest(d).await.unwrap(),
            switchboard::dials::IngestVerdict::Held
        );
    }
    wait_indexed(&log).await;
    let has = |d: &Dial, w: &str| d.request.as_str().contains(w);
    type Keep = Box<dyn Fn(&Dial) -> bool>;
    let cases: Vec<(&str, Keep)> = vec![
        ("zephyr", Box::new(move |d| has(d, "zephyr_quartz"))),
        (
            "\"zephyr_quartz\"",
            Box::new(move |d| has(d, "zephyr_quartz")),
        ),
        (
            "zephyr op:read_item",
            Box::new(move |d| has(d, "zephyr_quartz") && &*d.op == "read_item"),
        ),
        ("module_envelope", Box::new(|_| true)),
        (
            "lumi -op:read_item",
            Box::new(|d| d.response.is_some() && &*d.op != "read_item"),
        ),
    ];
    for (line, keep) in &cases {
        let want = expected(&all, keep);
        assert!(!want.is_empty(), "{line}: the case finds something");
        for limit in [7u32, 200] {
            let (got, pages) = all_pages(&log, line, limit).await;
            assert_eq!(
                ids(&got),
                want,
                "{line}: rows and order over {pages} pages of {limit}"
            );
        }
        let first = log.history(q(line), None, Some(200), true).await.unwrap();
        let m = first.matched.unwrap();
        if m.exact {
            assert_eq!(m.count, want.len() as u64, "{line}: matched");
        } else {
            // Past its budget (a slow machine): an estimate, and the page says how to go on
            // unless it is full.
            assert!(
                first.next.is_some() || first.entries.len() == want.len(),
                "{line}: an estimate {m:?} on a page that cannot go on"
            );
        }
    }
    log.shutdown().await.unwrap();
}

/// Stats over the whole history: the stored dials far beyond the ring and the transient ones
/// only the ring holds, for a field filter, a negation, free text and a regex, equal to the
/// stats of the same dials counted by hand; after a restart the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_cover_the_whole_history() {
    use switchboard::dials::StatsTally;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0 as u64));
    let log = DialLog::spawn(config(dir.path(), 100, Arc::clone(&clock))).unwrap();
    let mut all: Vec<Dial> = (0..1500)
        .map(|i| {
            let retention = if i % 250 == 7 || i == 1450 {
                Retention::Transient
            } else {
                Retention::Standard
            };
            dial(i, T0 + i as i64 * 1000, retention)
        })
        .collect();
    for chunk in all.chunks(100) {
        log.ingest_batch(chunk.to_vec()).await.unwrap();
    }
    wait_indexed(&log).await;
    // Transient dials past the ring (the newest 100) are gone (never stored); one is held.
    let held_transient: HashSet<String> = (1400..1500)
        .filter(|i| i % 250 == 7 || *i == 1450)
        .map(|i| format!("dial-{i:05}"))
        .collect();
    all.retain(|d| d.retention != Retention::Transient || held_transient.contains(&*d.id));
    fn by_hand(
        all: &[Dial],
        keep: &dyn Fn(&Dial) -> bool,
    ) -> (u64, Vec<switchboard::dials::OpStats>) {
        let mut t = StatsTally::default();
        for d in all.iter().filter(|d| keep(d)) {
            t.add_dial(d);
        }
        (t.dials(), t.finish())
    }
    type Keep = Box<dyn Fn(&Dial) -> bool>;
    let cases: Vec<(&str, Keep)> = vec![
        ("", Box::new(|_| true)),
        ("op:read_item", Box::new(|d| &*d.op == "read_item")),
        (
            "-outcome:ok duration>1s",
            Box::new(|d| d.outcome != DialOutcome::Ok && d.duration_ms > 1000),
        ),
        (
            "item_0004",
            Box::new(|d| d.request.as_str().contains("ITEM_0004")),
        ),
        (
            "/ITEM_0+7\\d\"/",
            Box::new(|d| {
                regex::Regex::new("ITEM_0+7\\d\"")
                    .unwrap()
                    .is_match(d.request.as_str())
            }),
        ),
    ];
    for (line, keep) in &cases {
        let (n, want) = by_hand(&all, keep.as_ref());
        assert!(n > 0, "{line}: no dials to count");
        let (got, counted, complete) = log
            .history_stats(q(line), Duration::from_secs(30))
            .await
            .unwrap();
        assert!(complete, "{line}: 1500 dials are counted whole");
        assert_eq!(counted, n, "{line}: dials counted");
        assert_eq!(got, want, "{line}: stats per op");
    }
    // A budget too short for the whole history still counts the newest first, and says so.
    let (_, counted, complete) = log.history_stats(q(""), Duration::ZERO).await.unwrap();
    assert!(!complete || counted == all.len() as u64);
    assert!(counted >= 1, "the newest dials are counted first");

    log.shutdown().await.unwrap();
    let log = DialLog::spawn(config(dir.path(), 100, Arc::clone(&clock))).unwrap();
    all.retain(|d| d.retention != Retention::Transient);
    let (n, want) = by_hand(&all, &|d: &Dial| &*d.op == "grep_items");
    let (got, counted, _) = log
        .history_stats(q("op:grep_items"), Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!((counted, got), (n, want), "after a restart");
    log.shutdown().await.unwrap();
}

/// A dial of the column-block tests: `dial(i)` with the word `zephyr` in every third request,
/// and every 397th a "needle" that passes the compound filter
/// `op:grep_items -outcome:ok duration>1s phone:dev_beta22 zephyr` (timed out after 15 s on
/// `dev_beta22`); others pass all but one of its terms (decoys).
fn block_dial(i: usize, start_ms: i64) -> Dial {
    let mut d = dial(i, start_ms, Retention::Standard);
    let needle = i % 397 == 0;
    let word = if needle || i % 3 == 1 {
        "zephyr"
    } else {
        "quartz"
    };
    let decoy = i % 397 == 198;
    if needle || decoy {
        d.op = "grep_items".into();
        d.phone = "dev_beta22".into();
        d.outcome = DialOutcome::TimedOut;
        d.response = None;
        d.error = Some("no answer within 15 s".into());
        // A decoy fails one term: its duration (needles: 15 s), or its word.
        d.duration_ms = if decoy && i % 2 == 0 { 900 } else { 15_000 };
    }
    let word = if decoy && i % 2 == 1 { "quartz" } else { word };
    d.request = JsonText::from_value(&json!({
        "op": &*d.op, "userId": "u1", "pattern": word, "callId": &*d.call_id,
    }));
    d.normalise();
    d
}

/// The first 200 rows of `line` must equal the newest 200 of `want`, with a cursor after them
/// exactly when more rows match (none: the true end of the history), and a count that, when
/// exact, is right. The first page is asked for with its count; a page its time budget cut
/// short (a loaded machine, a debug build) is read on with its cursor, bounded: speed is the
/// bench's to show (`benches/dial_history.rs` prints the rows of each first page), not a test's.
/// `exact`: column terms only (counted from the blocks).
async fn full_first_page(log: &DialLogHandle, line: &str, want: &[String], exact: bool) {
    let p = log.history(q(line), None, Some(200), true).await.unwrap();
    let n = want.len().min(200);
    let m = p.matched.unwrap();
    let mut got = ids(&p.entries);
    let mut next = p.next.clone();
    let mut pages = 1;
    while got.len() < n && next.is_some() && pages < 200 {
        let more = log
            .history(
                q(line),
                next.as_deref(),
                Some((200 - got.len()) as u32),
                false,
            )
            .await
            .unwrap();
        got.extend(ids(&more.entries));
        next = more.next.clone();
        pages += 1;
    }
    assert_eq!(
        got,
        want[..n].to_vec(),
        "{line}: the first rows are the newest {n} matches, in order ({pages} pages)"
    );
    if want.len() <= 200 {
        // Read to the end: nothing more may come.
        while let Some(c) = next.take() {
            let more = log
                .history(q(line), Some(&c), Some(200), false)
                .await
                .unwrap();
            assert!(more.entries.is_empty(), "{line}: rows past the last match");
            next = more.next.clone();
            pages += 1;
            assert!(pages < 400, "{line}: no end of the history");
        }
    } else {
        assert!(next.is_some(), "{line}: a cursor when more rows match");
    }
    if m.exact {
        assert_eq!(m.count, want.len() as u64, "{line}: matched");
    } else {
        assert!(
            !exact || m.count > 0,
            "{line}: an estimate of nothing ({m:?})"
        );
    }
}

/// The sparse filters over a store far beyond the ring, after a restart: the compound
/// filter (one dial in 397 passes it, decoys pass all but one term) and far-back time windows
/// (`before:`, `after:` + `before:`, a late dial whose start is far older than its neighbours',
/// a time after the history) each answer a full first page of the right rows in order, counted
/// exactly, or the true end of the history: the column blocks find them without reading the
/// rows that cannot match. Paging the compound filter to its end gives every match once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sparse_filters_answer_full_first_pages_beyond_the_ring() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0 as u64));
    let log = DialLog::spawn(config(dir.path(), 100, Arc::clone(&clock))).unwrap();
    let n = 100_000;
    let mut all: Vec<Dial> = (0..n)
        .map(|i| block_dial(i, T0 + i as i64 * 1000))
        .collect();
    // A dial from a phone whose clock is a day behind: it arrives among the newest but says it
    // started in the history's first minute. Time terms judge its arrival.
    all[95_000].start_ms = T0 + 30_500;
    for chunk in all.chunks(1000) {
        log.ingest_batch(chunk.to_vec()).await.unwrap();
    }
    wait_indexed_for(&log, Duration::from_secs(120)).await;
    log.shutdown().await.unwrap();

    let log = DialLog::spawn(config(dir.path(), 100, Arc::clone(&clock))).unwrap();
    let compound = "op:grep_items -outcome:ok duration>1s phone:dev_beta22 zephyr";
    let want = expected(&all, |d| {
        &*d.op == "grep_items"
            && d.outcome != DialOutcome::Ok
            && d.duration_ms > 1000
            && &*d.phone == "dev_beta22"
            && d.request.as_str().contains("zephyr")
    });
    assert_eq!(want.len(), n.div_ceil(397), "the needles, and no decoy");
    full_first_page(&log, compound, &want, false).await;
    let (got, _) = all_pages(&log, compound, 200).await;
    assert_eq!(ids(&got), want, "{compound}: every page");
    // Without the word: the column terms alone (decoys with the other word pass).
    let cols = "op:grep_items -outcome:ok duration>1s phone:dev_beta22";
    let want_cols = expected(&all, |d| {
        &*d.op == "grep_items"
            && d.outcome != DialOutcome::Ok
            && d.duration_ms > 1000
            && &*d.phone == "dev_beta22"
    });
    full_first_page(&log, cols, &want_cols, true).await;

    // Far back: the first 300 s by arrival (not the skewed phone's dial, which only says it
    // started then; the blocks of its time hold its arrival).
    let before = format!("before:{}", rfc(T0 + 300_000));
    let want = expected(&all, |d| d.arrived_or_started_ms() < T0 + 300_000);
    assert_eq!(want.len(), 300);
    assert!(
        !want.contains(&"dial-95000".to_owned()),
        "the skewed phone's dial arrived later"
    );
    let late = format!(
        "after:{} before:{}",
        rfc(T0 + 94_999_500),
        rfc(T0 + 95_000_500)
    );
    full_first_page(&log, &late, &["dial-95000".to_owned()], true).await;
    full_first_page(&log, &before, &want, true).await;
    let (got, _) = all_pages(&log, &before, 200).await;
    assert_eq!(ids(&got), want, "{before}: every page");
    // A window of the history's first hour, with a field term.
    let window = format!(
        "after:{} before:{} -outcome:ok",
        rfc(T0 + 60_000),
        rfc(T0 + 3_600_000)
    );
    let want = expected(&all, |d| {
        let t = d.arrived_or_started_ms();
        (T0 + 60_000..T0 + 3_600_000).contains(&t) && d.outcome != DialOutcome::Ok
    });
    assert!(want.len() > 200);
    full_first_page(&log, &window, &want, true).await;
    // After the history: nothing, and the page says it is the end.
    full_first_page(&log, &format!("after:{}", rfc(T0 + 100 * DAY)), &[], true).await;
    log.shutdown().await.unwrap();
}

/// A version 3 file (no column blocks) stays searchable while its blocks are written in the
/// background, and answers the same after: the blocks of rows indexed before the upgrade.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_3_file_gets_its_column_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0 as u64));
    let log = DialLog::spawn(config(dir.path(), 100, Arc::clone(&clock))).unwrap();
    let all: Vec<Dial> = (0..3000)
        .map(|i| block_dial(i, T0 + i as i64 * 1000))
        .collect();
    for chunk in all.chunks(1000) {
        log.ingest_batch(chunk.to_vec()).await.unwrap();
    }
    wait_indexed(&log).await;
    log.shutdown().await.unwrap();
    // What version 3 had: no blocks, no dictionary, no mark.
    {
        let c = rusqlite::Connection::open(dir.path().join("dials.sqlite3")).unwrap();
        c.execute_batch(
            "DROP TABLE dial_blocks; DROP TABLE dial_dict;
             DELETE FROM dial_meta WHERE k = 'cols_upto'; PRAGMA user_version = 3;",
        )
        .unwrap();
    }
    let line = "op:grep_items -outcome:ok duration>1s phone:dev_beta22 zephyr";
    let want = expected(&all, |d| {
        &*d.op == "grep_items"
            && d.outcome != DialOutcome::Ok
            && d.duration_ms > 1000
            && &*d.phone == "dev_beta22"
            && d.request.as_str().contains("zephyr")
    });
    let log = DialLog::spawn(config(dir.path(), 100, Arc::clone(&clock))).unwrap();
    let (got, _) = all_pages(&log, line, 200).await;
    assert_eq!(ids(&got), want, "while the blocks are written");
    wait_indexed(&log).await;
    full_first_page(&log, line, &want, false).await;
    let blocks: i64 = {
        let c = rusqlite::Connection::open(dir.path().join("dials.sqlite3")).unwrap();
        c.query_row("SELECT count(*) FROM dial_blocks", [], |r| r.get(0))
            .unwrap()
    };
    assert!(blocks >= 3000 / 256, "the blocks were written ({blocks})");
    log.shutdown().await.unwrap();
}

/// Phones whose clocks are wrong (an hour behind, a day ahead) beside one that is right: the
/// desktop stamps each dial's arrival by its own clock, lists them in arrival order, and the
/// time terms judge arrival, in the ring and in SQLite, before and after a restart. The
/// phone's own start and the duration are kept as it sent them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dials_of_phones_with_wrong_clocks_are_ordered_and_filtered_by_arrival() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0 as u64));
    let log = DialLog::spawn(config(dir.path(), 100, Arc::clone(&clock))).unwrap();
    // (id, phone, the phone's idea of the start): sent one second apart by the desktop's clock.
    let sent = [
        ("dial-00001", "dev_right1", T0 - 1_000),
        ("dial-00002", "dev_behind", T0 + 1_000 - 3_600_000),
        ("dial-00003", "dev_ahead1", T0 + 2_000 + DAY),
        ("dial-00004", "dev_right1", T0 + 2_000),
    ];
    for (i, (id, phone, start)) in sent.iter().enumerate() {
        let mut d = dial(i + 1, *start, Retention::Standard);
        d.id = (*id).into();
        d.phone = (*phone).into();
        d.duration_ms = 250 + i as u64;
        d.arrived = switchboard::dials::Arrival(None);
        assert_eq!(log.ingest(d).await.unwrap(), IngestVerdict::Held);
        clock.advance(1_000);
    }
    let newest_first = ["dial-00004", "dial-00003", "dial-00002", "dial-00001"];
    let page = log.query(DialFilter::default()).await.unwrap();
    let order: Vec<&str> = page.dials.iter().map(|d| &*d.id).collect();
    assert_eq!(
        order, newest_first,
        "arrival order, whatever the phones' clocks say"
    );
    for d in &page.dials {
        let (_, _, start) = sent.iter().find(|s| s.0 == &*d.id).unwrap();
        assert_eq!(d.start_ms, *start, "{}: the phone's start is kept", d.id);
    }
    // The four arrived in [T0, T0 + 4 s): all of them, whatever start they carry.
    let arrived = format!("after:{} before:{}", rfc(T0), rfc(T0 + 4_000));
    let early = format!("before:{}", rfc(T0));
    let middle = format!("after:{} before:{}", rfc(T0 + 1_000), rfc(T0 + 3_000));
    let check = |log: DialLogHandle, when: &'static str| {
        let (arrived, early, middle) = (arrived.clone(), early.clone(), middle.clone());
        async move {
            let p = log
                .history(q(&arrived), None, Some(50), true)
                .await
                .unwrap();
            assert_eq!(ids(&p.entries), newest_first, "{when}: {arrived}");
            let p = log.history(q(&early), None, Some(50), true).await.unwrap();
            assert_eq!(ids(&p.entries), Vec::<String>::new(), "{when}: {early}");
            let p = log.history(q(&middle), None, Some(50), true).await.unwrap();
            assert_eq!(
                ids(&p.entries),
                ["dial-00003", "dial-00002"],
                "{when}: {middle}"
            );
        }
    };
    check(log.clone(), "in the ring, not yet indexed").await;
    wait_indexed(&log).await;
    log.shutdown().await.unwrap();

    // After a restart with a ring of one: the rest answer from SQLite and the column blocks.
    let log = DialLog::spawn(config(dir.path(), 1, Arc::clone(&clock))).unwrap();
    check(log.clone(), "from SQLite after a restart").await;
    let stored = log.stored_dial(2).await.unwrap().unwrap();
    assert_eq!(&*stored.id, "dial-00002");
    assert_eq!(stored.arrived.0, Some(T0 + 1_000), "the arrival is stored");
    assert_eq!(stored.start_ms, T0 + 1_000 - 3_600_000);
    assert_eq!(stored.duration_ms, 251, "the duration is the phone's");
    log.shutdown().await.unwrap();
}
