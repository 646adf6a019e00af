//! Behaviour of the dial log (`crates/dials/src/`): retention by ifp/1 label, pruning, dedup on replay,
//! export/import, filters and stats, ring eviction, and subscriptions.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::field_reassign_with_default
)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use switchboard::dials::{
    ClearScope, Dial, DialFilter, DialLog, DialLogConfig, DialLogHandle, DialOutcome, ImportError,
    ImportedLog, IngestVerdict, JsonText, OpStats, Retention, SubscribeOptions,
};

const T0: i64 = 1_760_000_000_000;
const DAY: i64 = 24 * 60 * 60 * 1000;

#[allow(clippy::too_many_arguments)]
fn dial(
    id: &str,
    op: &str,
    duration_ms: u64,
    outcome: DialOutcome,
    retention: Retention,
    start_ms: i64,
    request: serde_json::Value,
    response: Option<serde_json::Value>,
    error: Option<&str>,
) -> Dial {
    let mut d = Dial {
        id: id.into(),
        phone: "dev_alpha1".into(),
        call_id: format!("call-{id}").into(),
        caller: "lumiagent".into(),
        callee: "lumirealm".into(),
        endpoint: "lumirealm.phoneline".into(),
        op: op.into(),
        request: JsonText::from_value(&request),
        start_ms,
        duration_ms,
        outcome,
        response: response.as_ref().map(JsonText::from_value),
        error: error.map(Into::into),
        retention,
        slow: false,
        spec: Default::default(),
        session: "".into(),
        seq: Default::default(),
        arrived: Default::default(),
    };
    d.normalise();
    d
}

fn simple(id: &str, retention: Retention, start_ms: i64) -> Dial {
    dial(
        id,
        "describe",
        50,
        DialOutcome::Ok,
        retention,
        start_ms,
        json!({"op": "describe"}),
        Some(json!({"extension": {"id": "lumirealm"}})),
        None,
    )
}

/// The known set of the filter and stats tests (hand-checked below).
fn known_set() -> Vec<Dial> {
    use DialOutcome::*;
    let s = Retention::Standard;
    let mut v = vec![
        dial("d1", "describe", 120, Ok, s, T0 + 1000, json!({"op": "describe"}),
            Some(json!({"extension": {"id": "lumirealm", "name": "LumiRealm"}})), None),
        dial("d2", "read_item", 80, Ok, s, T0 + 2000,
            json!({"op": "read_item", "userId": "u1", "surfaceId": "module_envelope", "itemId": "Mod-7"}),
            Some(json!({"value": "Hello Lumi"})), None),
        dial("d3", "read_item", 1500, Ok, s, T0 + 3000,
            json!({"op": "read_item", "userId": "u1", "surfaceId": "module_envelope", "itemId": "m2"}),
            Some(json!({"value": null})), None),
        dial("d4", "write_field", 300, ToolError, s, T0 + 4000,
            json!({"op": "write_field", "userId": "u1", "surfaceId": "module_envelope", "itemId": "m2", "field": "name", "value": "x"}),
            Some(json!({"ok": false, "error": "field is read-only"})), Some("field is read-only")),
        dial("d5", "write_field", 15000, TimedOut, s, T0 + 5000,
            json!({"op": "write_field", "userId": "u1", "surfaceId": "module_envelope", "itemId": "m3", "field": "name", "value": "y"}),
            None, Some("timed out after 15 s")),
        dial("d6", "grep_items", 900, Error, s, T0 + 6000,
            json!({"op": "grep_items", "userId": "u1", "surfaceId": "module_envelope", "pattern": "lua"}),
            None, Some("Shared RPC endpoint \"lumirealm.phoneline\" requires requester \"lumiagent\" to inherit owner \"lumirealm\" permissions: push_notification")),
        dial("d7", "read_item", 40, Ok, s, T0 + 7000,
            json!({"op": "read_item", "userId": "u1", "surfaceId": "notes", "itemId": "Café"}),
            Some(json!({"value": 1})), None),
        dial("d8", "read_item", 1001, Ok, s, T0 + 8000,
            json!({"op": "read_item", "userId": "u1", "surfaceId": "module_envelope", "itemId": "m9"}),
            Some(json!({"value": [1, 2]})), None),
    ];
    v[2].phone = "dev_beta22".into();
    v[6].callee = "otherext".into();
    v[6].endpoint = "otherext.phoneline".into();
    v[7].caller = "probe_ext".into();
    v
}

fn mem_config() -> DialLogConfig {
    DialLogConfig {
        prune_interval: None,
        ..DialLogConfig::default()
    }
}

fn disk_config(dir: &Path) -> DialLogConfig {
    DialLogConfig {
        data_dir: Some(dir.to_owned()),
        prune_interval: None,
        ..DialLogConfig::default()
    }
}

/// The ids stored in `dir`'s file, sorted: its rows and its journal (a flood's batches not
/// moved into rows yet).
fn db_ids(dir: &Path) -> Vec<String> {
    let path = dir.join(switchboard::dials::store::DB_FILE);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let mut stmt = conn.prepare("SELECT id FROM dials ORDER BY id").unwrap();
    let mut ids = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    for d in switchboard::dials::store::journaled_dials(&conn, &path).unwrap() {
        ids.push(d.id.to_string());
    }
    ids.sort();
    ids
}

async fn ids_of(log: &DialLogHandle, filter: DialFilter) -> Vec<String> {
    let page = log.query(filter).await.unwrap();
    page.dials.iter().map(|d| d.id.to_string()).collect()
}

#[tokio::test]
async fn retention_labels_decide_what_reaches_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let log = DialLog::spawn(disk_config(dir.path())).unwrap();
    for (id, r) in [
        ("t1", Retention::Transient),
        ("s1", Retention::Standard),
        ("e1", Retention::Extended),
        ("p1", Retention::Permanent),
    ] {
        assert_eq!(
            log.ingest(simple(id, r, T0)).await.unwrap(),
            IngestVerdict::Held
        );
    }
    log.flush().await.unwrap();
    // All four are held in memory...
    assert_eq!(log.query(DialFilter::default()).await.unwrap().total, 4);
    // ...but the transient one never reached the file.
    assert_eq!(db_ids(dir.path()), vec!["e1", "p1", "s1"]);
    log.shutdown().await.unwrap();
    assert_eq!(db_ids(dir.path()), vec!["e1", "p1", "s1"]);
    // After a restart only the stored ones come back.
    let log = DialLog::spawn(disk_config(dir.path())).unwrap();
    let mut back = ids_of(&log, DialFilter::default()).await;
    back.sort();
    assert_eq!(back, vec!["e1", "p1", "s1"]);
    log.shutdown().await.unwrap();
}

#[tokio::test]
async fn pruning_by_age_follows_the_labels() {
    let dir = tempfile::tempdir().unwrap();
    let log = DialLog::spawn(disk_config(dir.path())).unwrap();
    for (id, r) in [
        ("t1", Retention::Transient),
        ("s1", Retention::Standard),
        ("e1", Retention::Extended),
        ("p1", Retention::Permanent),
    ] {
        log.ingest(simple(id, r, T0)).await.unwrap();
    }
    // One millisecond before seven days: nothing goes.
    let r = log.prune(T0 + 7 * DAY - 1).await.unwrap();
    assert_eq!((r.memory, r.stored), (0, 0));
    assert_eq!(db_ids(dir.path()), vec!["e1", "p1", "s1"]);
    // At seven days the standard dial goes, from memory and from the file.
    let r = log.prune(T0 + 7 * DAY).await.unwrap();
    assert_eq!((r.memory, r.stored), (1, 1));
    assert_eq!(db_ids(dir.path()), vec!["e1", "p1"]);
    // At ninety days the extended one goes; permanent and transient stay.
    let r = log.prune(T0 + 90 * DAY).await.unwrap();
    assert_eq!((r.memory, r.stored), (1, 1));
    assert_eq!(db_ids(dir.path()), vec!["p1"]);
    let r = log.prune(T0 + 10_000 * DAY).await.unwrap();
    assert_eq!((r.memory, r.stored), (0, 0));
    let mut held = ids_of(&log, DialFilter::default()).await;
    held.sort();
    assert_eq!(held, vec!["p1", "t1"]);
    // Clearing everything removes the permanent one too.
    assert_eq!(log.clear(ClearScope::All).await.unwrap(), 1);
    assert!(db_ids(dir.path()).is_empty());
    assert_eq!(log.query(DialFilter::default()).await.unwrap().total, 0);
    log.shutdown().await.unwrap();
}

#[tokio::test]
async fn replayed_dials_are_held_once_even_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let log = DialLog::spawn(disk_config(dir.path())).unwrap();
    let d = simple("evt_dedup_1", Retention::Standard, T0);
    assert_eq!(log.ingest(d.clone()).await.unwrap(), IngestVerdict::Held);
    assert_eq!(
        log.ingest(d.clone()).await.unwrap(),
        IngestVerdict::Duplicate
    );
    // A replay with different content but the same dedup key is still a replay.
    let mut changed = d.clone();
    changed.duration_ms = 9999;
    assert_eq!(log.ingest(changed).await.unwrap(), IngestVerdict::Duplicate);
    let st = log.status().await.unwrap();
    assert_eq!((st.held, st.ingested, st.duplicates), (1, 1, 2));
    log.shutdown().await.unwrap();

    let log = DialLog::spawn(disk_config(dir.path())).unwrap();
    assert_eq!(
        log.ingest(d.clone()).await.unwrap(),
        IngestVerdict::Duplicate
    );
    // Also when the ring no longer holds it (memory cleared): SQLite's key catches it.
    log.clear(ClearScope::Memory).await.unwrap();
    assert_eq!(log.ingest(d).await.unwrap(), IngestVerdict::Duplicate);
    assert_eq!(log.query(DialFilter::default()).await.unwrap().total, 0);
    log.flush().await.unwrap();
    assert_eq!(db_ids(dir.path()), vec!["evt_dedup_1"]);
    // An empty dedup key is refused.
    let v = log
        .ingest(simple("", Retention::Standard, T0))
        .await
        .unwrap();
    assert!(matches!(v, IngestVerdict::Rejected(_)));
    log.shutdown().await.unwrap();
}

#[tokio::test]
async fn replays_beyond_the_ring_are_caught_after_restart_by_the_stored_keys() {
    let dir = tempfile::tempdir().unwrap();
    let small = || DialLogConfig {
        capacity: 2,
        ..disk_config(dir.path())
    };
    let log = DialLog::spawn(small()).unwrap();
    for i in 0..5 {
        let d = simple(&format!("evt_old_{i}"), Retention::Standard, T0 + i);
        assert_eq!(log.ingest(d).await.unwrap(), IngestVerdict::Held);
    }
    log.shutdown().await.unwrap();
    // A new run: the ring holds the last two; the first three are known only by their keys.
    let log = DialLog::spawn(small()).unwrap();
    assert_eq!(
        ids_of(&log, DialFilter::default()).await,
        vec!["evt_old_4", "evt_old_3"]
    );
    for i in 0..5 {
        let d = simple(&format!("evt_old_{i}"), Retention::Standard, T0 + i);
        assert_eq!(
            log.ingest(d).await.unwrap(),
            IngestVerdict::Duplicate,
            "evt_old_{i}"
        );
    }
    let fresh = simple("evt_new", Retention::Standard, T0 + 9);
    assert_eq!(log.ingest(fresh).await.unwrap(), IngestVerdict::Held);
    log.flush().await.unwrap();
    assert_eq!(db_ids(dir.path()).len(), 6);
    log.shutdown().await.unwrap();
}

/// A dial from `phone` with id `id` (standard retention).
fn from_phone(phone: &str, id: &str, start_ms: i64) -> Dial {
    let mut d = simple(id, Retention::Standard, start_ms);
    d.phone = phone.into();
    d
}

#[tokio::test]
async fn each_phone_keeps_its_newest_keys_through_another_phones_flood_and_a_restart() {
    // A ring of 4 and 50 keys a phone: memory for the keys is bounded by the phones, not by
    // the history, and a quiet phone's last dials are still recognised after a busy phone
    // sent twenty times its window and the desktop restarted.
    let dir = tempfile::tempdir().unwrap();
    let small = || DialLogConfig {
        capacity: 4,
        dedup_keys_per_phone: 50,
        ..disk_config(dir.path())
    };
    let log = DialLog::spawn(small()).unwrap();
    for i in 0..5 {
        let d = from_phone("dev_quiet01", &format!("evt_quiet_{i}"), T0 + i);
        assert_eq!(log.ingest(d).await.unwrap(), IngestVerdict::Held);
    }
    for i in 0..1000 {
        let d = from_phone("dev_busy01", &format!("evt_busy_{i}"), T0 + 10 + i);
        assert_eq!(log.ingest(d).await.unwrap(), IngestVerdict::Held);
    }
    // In the same run: the quiet phone's five and the busy phone's newest 50 + 4 in the ring.
    for i in 0..5 {
        let d = from_phone("dev_quiet01", &format!("evt_quiet_{i}"), T0 + i);
        assert_eq!(
            log.ingest(d).await.unwrap(),
            IngestVerdict::Duplicate,
            "evt_quiet_{i}"
        );
    }
    for i in 946..1000 {
        let d = from_phone("dev_busy01", &format!("evt_busy_{i}"), T0 + 10 + i);
        assert_eq!(
            log.ingest(d).await.unwrap(),
            IngestVerdict::Duplicate,
            "evt_busy_{i}"
        );
    }
    log.shutdown().await.unwrap();

    // After a restart the loader reads each phone's newest keys back from dial_keys.
    let log = DialLog::spawn(small()).unwrap();
    for i in 0..5 {
        let d = from_phone("dev_quiet01", &format!("evt_quiet_{i}"), T0 + i);
        assert_eq!(
            log.ingest(d).await.unwrap(),
            IngestVerdict::Duplicate,
            "evt_quiet_{i} after restart"
        );
    }
    for i in 946..1000 {
        let d = from_phone("dev_busy01", &format!("evt_busy_{i}"), T0 + 10 + i);
        assert_eq!(
            log.ingest(d).await.unwrap(),
            IngestVerdict::Duplicate,
            "evt_busy_{i} after restart"
        );
    }
    log.flush().await.unwrap();
    assert_eq!(db_ids(dir.path()).len(), 1005, "nothing stored twice");
    // The window is a bound, not a set of everything: the busy phone's oldest dial is past it
    // (a phone resends only what it has not seen acknowledged: docs/protocol.md).
    let oldest = from_phone("dev_busy01", "evt_busy_0", T0 + 10);
    assert_eq!(log.ingest(oldest).await.unwrap(), IngestVerdict::Held);
    log.shutdown().await.unwrap();
    let conn =
        rusqlite::Connection::open(dir.path().join(switchboard::dials::store::DB_FILE)).unwrap();
    let missing: i64 = conn
        .query_row("SELECT count(*) FROM dial_keys WHERE p IS NULL", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(missing, 0, "every key is stored with its phone's");
}

#[tokio::test]
async fn a_file_of_the_first_schema_is_migrated_with_its_rows_and_dedup() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(switchboard::dials::store::DB_FILE);
    {
        // The schema Switchboard wrote before version 2: the id text as the primary key.
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode=WAL;
             CREATE TABLE dials (
                id TEXT PRIMARY KEY NOT NULL, phone TEXT NOT NULL, call_id TEXT NOT NULL,
                caller TEXT NOT NULL, callee TEXT NOT NULL, endpoint TEXT NOT NULL,
                op TEXT NOT NULL, request TEXT NOT NULL, start_ms INTEGER NOT NULL,
                duration_ms INTEGER NOT NULL, outcome TEXT NOT NULL, response TEXT, error TEXT,
                retention TEXT NOT NULL, expires_ms INTEGER);
             CREATE INDEX dials_start ON dials(start_ms);
             CREATE INDEX dials_expires ON dials(expires_ms) WHERE expires_ms IS NOT NULL;
             INSERT INTO dials VALUES ('evt_v1_b', 'dev_alpha1', 'c1', 'lumiagent', 'lumirealm',
                'lumirealm.phoneline', 'describe', '{\"op\":\"describe\"}', 1000, 12, 'ok',
                '{\"ok\":true}', NULL, 'permanent', NULL);
             INSERT INTO dials VALUES ('evt_v1_a', 'dev_alpha1', 'c2', 'lumiagent', 'lumirealm',
                'lumirealm.phoneline', 'read_item', '{}', 2000, 1500, 'error', NULL,
                'boom', 'permanent', NULL);",
        )
        .unwrap();
    }
    let log = DialLog::spawn(disk_config(dir.path())).unwrap();
    // Rows kept, in their arrival (rowid) order, with every field.
    let page = log.query(DialFilter::default()).await.unwrap();
    let ids: Vec<&str> = page.dials.iter().map(|d| &*d.id).collect();
    assert_eq!(ids, vec!["evt_v1_a", "evt_v1_b"]);
    let a = &page.dials[0];
    assert_eq!(
        (
            a.op.as_ref(),
            a.duration_ms,
            a.outcome,
            a.error.as_deref(),
            a.slow
        ),
        ("read_item", 1500, DialOutcome::Error, Some("boom"), true)
    );
    assert_eq!(page.dials[1].request.as_str(), r#"{"op":"describe"}"#);
    // Dedup still knows them, also once they leave the ring.
    log.clear(ClearScope::Memory).await.unwrap();
    for id in ["evt_v1_a", "evt_v1_b"] {
        let d = simple(id, Retention::Permanent, T0);
        assert_eq!(
            log.ingest(d).await.unwrap(),
            IngestVerdict::Duplicate,
            "{id}"
        );
    }
    log.shutdown().await.unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(
        version, 6,
        "migrated through version 2 to the current schema (version 6: the journal of batches)"
    );
    let keys: i64 = conn
        .query_row("SELECT count(*) FROM dial_keys", [], |r| r.get(0))
        .unwrap();
    assert_eq!(keys, 2);
    drop(conn);
    assert_eq!(db_ids(dir.path()), vec!["evt_v1_a", "evt_v1_b"]);
}

#[tokio::test]
async fn replay_of_a_dial_evicted_before_it_was_written_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = DialLogConfig {
        capacity: 2,
        db_flush_interval: Duration::from_secs(3600),
        db_batch_size: 10_000,
        ..disk_config(dir.path())
    };
    let log = DialLog::spawn(cfg).unwrap();
    for id in ["a", "b", "c", "d"] {
        log.ingest(simple(id, Retention::Standard, T0))
            .await
            .unwrap();
    }
    // "a" left the ring and may not be written yet: still a duplicate.
    assert_eq!(
        log.ingest(simple("a", Retention::Standard, T0))
            .await
            .unwrap(),
        IngestVerdict::Duplicate
    );
    log.flush().await.unwrap();
    assert_eq!(
        log.ingest(simple("b", Retention::Standard, T0))
            .await
            .unwrap(),
        IngestVerdict::Duplicate
    );
    assert_eq!(db_ids(dir.path()), vec!["a", "b", "c", "d"]);
    log.shutdown().await.unwrap();
}

#[tokio::test]
async fn ring_keeps_the_newest_arrivals() {
    let log = DialLog::spawn(DialLogConfig {
        capacity: 3,
        ..mem_config()
    })
    .unwrap();
    for i in 0..5 {
        log.ingest(simple(&format!("r{i}"), Retention::Transient, T0 + i))
            .await
            .unwrap();
    }
    assert_eq!(
        ids_of(&log, DialFilter::default()).await,
        vec!["r4", "r3", "r2"]
    );
    let st = log.status().await.unwrap();
    assert_eq!((st.held, st.evicted, st.capacity), (3, 2, 3));
    // A zero capacity is refused.
    assert!(DialLog::spawn(DialLogConfig {
        capacity: 0,
        ..mem_config()
    })
    .is_err());
}

#[tokio::test]
async fn each_filter_on_a_known_set() {
    let log = DialLog::spawn(mem_config()).unwrap();
    let v = log.ingest_batch(known_set()).await.unwrap();
    assert!(v.iter().all(|v| *v == IngestVerdict::Held));
    let f = |g: fn(&mut DialFilter)| {
        let mut f = DialFilter::default();
        g(&mut f);
        f
    };
    let all = ids_of(&log, DialFilter::default()).await;
    assert_eq!(all, vec!["d8", "d7", "d6", "d5", "d4", "d3", "d2", "d1"]);
    assert_eq!(
        ids_of(&log, f(|f| f.phone = Some("dev_beta22".into()))).await,
        vec!["d3"]
    );
    assert_eq!(
        ids_of(&log, f(|f| f.caller = Some("probe_ext".into()))).await,
        vec!["d8"]
    );
    assert_eq!(
        ids_of(&log, f(|f| f.callee = Some("otherext".into()))).await,
        vec!["d7"]
    );
    assert_eq!(
        ids_of(&log, f(|f| f.op = Some("read_item".into()))).await,
        vec!["d8", "d7", "d3", "d2"]
    );
    assert_eq!(
        ids_of(&log, f(|f| f.outcome = Some(DialOutcome::ToolError))).await,
        vec!["d4"]
    );
    assert_eq!(
        ids_of(&log, f(|f| f.slow = Some(true))).await,
        vec!["d8", "d5", "d3"]
    );
    assert_eq!(
        ids_of(&log, f(|f| f.slow = Some(false))).await,
        vec!["d7", "d6", "d4", "d2", "d1"]
    );
    assert_eq!(
        ids_of(&log, f(|f| f.timed_out = Some(true))).await,
        vec!["d5"]
    );
    assert_eq!(
        ids_of(&log, f(|f| f.timed_out = Some(false))).await.len(),
        7
    );
    // Free text: response, error, request; case-insensitive, ASCII and not.
    assert_eq!(
        ids_of(&log, f(|f| f.text = Some("hello lumi".into()))).await,
        vec!["d2"]
    );
    assert_eq!(
        ids_of(&log, f(|f| f.text = Some("PUSH_NOTIFICATION".into()))).await,
        vec!["d6"]
    );
    assert_eq!(
        ids_of(&log, f(|f| f.text = Some("mod-7".into()))).await,
        vec!["d2"]
    );
    assert_eq!(
        ids_of(&log, f(|f| f.text = Some("CAFÉ".into()))).await,
        vec!["d7"]
    );
    assert_eq!(
        ids_of(&log, f(|f| f.text = Some("read-only".into()))).await,
        vec!["d4"]
    );
    assert!(ids_of(&log, f(|f| f.text = Some("nowhere".into())))
        .await
        .is_empty());
    // Time range: from inclusive, to exclusive.
    let mut range = DialFilter::default();
    range.from_ms = Some(T0 + 2000);
    range.to_ms = Some(T0 + 4000);
    assert_eq!(ids_of(&log, range).await, vec!["d3", "d2"]);
    // Filters combine.
    let mut both = DialFilter::default();
    both.op = Some("read_item".into());
    both.slow = Some(true);
    assert_eq!(ids_of(&log, both).await, vec!["d8", "d3"]);
    // Paging.
    let mut page = DialFilter::default();
    page.limit = Some(2);
    page.offset = Some(1);
    let p = log.query(page).await.unwrap();
    assert_eq!(p.total, 8);
    let ids: Vec<_> = p.dials.iter().map(|d| d.id.to_string()).collect();
    assert_eq!(ids, vec!["d7", "d6"]);
    // Slow is derived from the duration, whatever the input said.
    let mut liar = simple("liar", Retention::Transient, T0);
    liar.slow = true;
    log.ingest(liar).await.unwrap();
    let mut q = DialFilter::default();
    q.text = Some("describe".into());
    q.slow = Some(true);
    assert!(ids_of(&log, q).await.is_empty());
}

fn stats_for<'a>(stats: &'a [OpStats], op: &str) -> &'a OpStats {
    stats.iter().find(|s| s.op == op).unwrap()
}

#[tokio::test]
async fn stats_per_op_with_nearest_rank_percentiles() {
    let log = DialLog::spawn(mem_config()).unwrap();
    log.ingest_batch(known_set()).await.unwrap();
    // 20 list_items dials of 10, 20, ..., 200 ms; the 3 longest failed.
    let mut extra = Vec::new();
    for i in 1..=20u64 {
        let outcome = if i > 17 {
            DialOutcome::Error
        } else {
            DialOutcome::Ok
        };
        extra.push(dial(
            &format!("l{i}"),
            "list_items",
            i * 10,
            outcome,
            Retention::Standard,
            T0 + 10_000 + i as i64,
            json!({"op": "list_items", "userId": "u1", "surfaceId": "module_envelope"}),
            None,
            None,
        ));
    }
    log.ingest_batch(extra).await.unwrap();
    let stats = log.stats(DialFilter::default()).await.unwrap();
    let ops: Vec<_> = stats.iter().map(|s| s.op.as_str()).collect();
    assert_eq!(
        ops,
        vec![
            "describe",
            "grep_items",
            "list_items",
            "read_item",
            "write_field"
        ]
    );

    let r = stats_for(&stats, "read_item");
    // Sorted durations [40, 80, 1001, 1500]: p50 = rank ceil(2) = 80, p95 = rank ceil(3.8) = 1500.
    assert_eq!((r.count, r.ok, r.slow), (4, 4, 2));
    assert_eq!(
        (r.p50_ms, r.p95_ms, r.p99_ms, r.max_ms),
        (80, 1500, 1500, 1500)
    );
    assert_eq!(r.error_rate, 0.0);

    let w = stats_for(&stats, "write_field");
    // [300, 15000]: p50 = rank 1 = 300.
    assert_eq!((w.count, w.tool_errors, w.timed_out), (2, 1, 1));
    assert_eq!((w.p50_ms, w.p95_ms, w.p99_ms), (300, 15000, 15000));
    assert_eq!(w.error_rate, 1.0);

    let l = stats_for(&stats, "list_items");
    // 10..=200 step 10, n = 20: p50 = rank 10 = 100, p95 = rank 19 = 190, p99 = rank 20 = 200.
    assert_eq!((l.count, l.ok, l.errors), (20, 17, 3));
    assert_eq!((l.p50_ms, l.p95_ms, l.p99_ms), (100, 190, 200));
    assert!((l.error_rate - 0.15).abs() < 1e-12);

    let g = stats_for(&stats, "grep_items");
    assert_eq!((g.count, g.errors, g.p50_ms), (1, 1, 900));

    // Stats honour the filter (but not its limit).
    let mut f = DialFilter::default();
    f.slow = Some(false);
    f.limit = Some(1);
    let fs = log.stats(f).await.unwrap();
    let r = stats_for(&fs, "read_item");
    assert_eq!((r.count, r.p50_ms, r.p99_ms), (2, 40, 80));
}

#[tokio::test]
async fn export_then_import_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let log = DialLog::spawn(mem_config()).unwrap();
    log.ingest_batch(known_set()).await.unwrap();
    let path = dir.path().join("dials.jsonl");
    let n = log
        .export_jsonl(DialFilter::default(), path.clone())
        .await
        .unwrap();
    assert_eq!(n, 8);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 8);
    // Each line is a dial object with the request as JSON, not as a string.
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["id"], "d8");
    assert_eq!(first["request"]["op"], "read_item");
    assert_eq!(first["slow"], true);

    let imported = ImportedLog::read_jsonl_file(&path).unwrap();
    let live = log.query(DialFilter::default()).await.unwrap();
    let imported_page = imported.query(&DialFilter::default());
    assert_eq!(imported_page, live);
    assert_eq!(
        imported.stats(&DialFilter::default()),
        log.stats(DialFilter::default()).await.unwrap()
    );
    let mut original = known_set();
    original.sort_by(|a, b| a.id.cmp(&b.id));
    let mut back: Vec<Dial> = imported.dials().iter().map(|d| (**d).clone()).collect();
    back.sort_by(|a, b| a.id.cmp(&b.id));
    assert_eq!(back, original);

    // Export of a filter only writes the matches.
    let mut f = DialFilter::default();
    f.op = Some("write_field".into());
    let path2 = dir.path().join("writes.jsonl");
    assert_eq!(log.export_jsonl(f, path2.clone()).await.unwrap(), 2);
    assert_eq!(ImportedLog::read_jsonl_file(&path2).unwrap().len(), 2);
}

#[test]
fn import_is_all_or_nothing_and_names_lines_and_fields() {
    let good = serde_json::to_string(&simple("ok1", Retention::Standard, T0)).unwrap();
    let mut bad_outcome: serde_json::Value = serde_json::from_str(&good).unwrap();
    bad_outcome["id"] = json!("ok2");
    bad_outcome["outcome"] = json!("exploded");
    let mut missing_op: serde_json::Value = serde_json::from_str(&good).unwrap();
    missing_op["id"] = json!("ok3");
    missing_op.as_object_mut().unwrap().remove("op");
    let mut bad_duration: serde_json::Value = serde_json::from_str(&good).unwrap();
    bad_duration["id"] = json!("ok4");
    bad_duration["duration_ms"] = json!(-5);
    let text = [
        good.clone(),
        bad_outcome.to_string(),
        String::new(),
        missing_op.to_string(),
        "{not json".to_owned(),
        good.clone(),
        bad_duration.to_string(),
    ]
    .join("\n");
    let err = ImportedLog::from_reader(text.as_bytes(), Path::new("x.jsonl")).unwrap_err();
    let ImportError::BadLines { lines, total, .. } = &err else {
        panic!("expected bad lines, got {err}");
    };
    assert_eq!(*total, 5);
    let got: Vec<(u64, &str)> = lines.iter().map(|b| (b.line, b.field.as_str())).collect();
    assert_eq!(
        got,
        vec![
            (2, "outcome"),
            (4, "op"),
            (5, ""),
            (6, "id"),
            (7, "duration_ms")
        ]
    );
    assert!(
        lines[3].message.contains("first on line 1"),
        "{}",
        lines[3].message
    );
    assert!(err.to_string().contains("line 2 field outcome"), "{err}");

    // The good lines alone import.
    let ok = ImportedLog::from_reader(good.as_bytes(), Path::new("x.jsonl")).unwrap();
    assert_eq!(ok.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn subscriber_gets_snapshot_then_rate_limited_batches() {
    let log = DialLog::spawn(mem_config()).unwrap();
    log.ingest(simple("before", Retention::Transient, T0))
        .await
        .unwrap();
    let mut f = DialFilter::default();
    f.op = Some("describe".into());
    let mut sub = log
        .subscribe(
            f,
            SubscribeOptions {
                interval: Some(Duration::from_millis(100)),
                ..SubscribeOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(sub.snapshot.total, 1);
    assert_eq!(&*sub.snapshot.dials[0].id, "before");

    // The first new dial goes out at once.
    log.ingest(simple("n1", Retention::Transient, T0 + 1))
        .await
        .unwrap();
    let b = sub.batches.try_recv().unwrap();
    let ids: Vec<_> = b.dials.iter().map(|d| d.id.to_string()).collect();
    assert_eq!((ids, b.merged, b.skipped), (vec!["n1".to_owned()], 0, 0));

    // Within the interval, dials wait and go out together; non-matching dials never do.
    tokio::time::advance(Duration::from_millis(10)).await;
    log.ingest(simple("n2", Retention::Transient, T0 + 2))
        .await
        .unwrap();
    let mut other = simple("x", Retention::Transient, T0 + 3);
    other.op = "read_item".into();
    log.ingest(other).await.unwrap();
    log.ingest(simple("n3", Retention::Transient, T0 + 4))
        .await
        .unwrap();
    assert!(sub.batches.try_recv().is_err());
    let b = sub.batches.recv().await.unwrap();
    let ids: Vec<_> = b.dials.iter().map(|d| d.id.to_string()).collect();
    assert_eq!(ids, vec!["n2", "n3"]);
    assert_eq!(b.merged, 0);
}

#[tokio::test(start_paused = true)]
async fn slow_subscriber_never_blocks_ingest_and_gets_merged_counts() {
    let log = DialLog::spawn(mem_config()).unwrap();
    let interval = Duration::from_millis(50);
    let mut sub = log
        .subscribe(
            DialFilter::default(),
            SubscribeOptions {
                interval: Some(interval),
                queue: Some(1),
                max_pending: Some(1000),
            },
        )
        .await
        .unwrap();
    assert_eq!(sub.snapshot.total, 0);
    // b0 fills the queue of one.
    log.ingest(simple("b0", Retention::Transient, T0))
        .await
        .unwrap();
    // The subscriber does not read; 3000 more dials over many intervals all get in.
    let ingest_all = async {
        for i in 1..=3000 {
            log.ingest(simple(&format!("b{i}"), Retention::Transient, T0 + i))
                .await
                .unwrap();
            if i % 100 == 0 {
                tokio::time::advance(interval).await;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(5), ingest_all)
        .await
        .expect("ingest must not wait for a subscriber that does not read");
    assert_eq!(log.status().await.unwrap().held, 3001);

    let first = sub.batches.recv().await.unwrap();
    assert_eq!(first.dials.len(), 1);
    assert_eq!(first.merged, 0);
    // The next batch carries what waited: at most 1000 (the pending bound), the rest skipped.
    let next = sub.batches.recv().await.unwrap();
    assert_eq!(next.dials.len(), 1000);
    assert_eq!(next.skipped, 2000);
    assert!(
        next.merged > 0 && next.merged <= 1000,
        "merged {}",
        next.merged
    );
    assert_eq!(&*next.dials.last().unwrap().id, "b3000");
    let ids: Vec<_> = next.dials.iter().map(|d| Arc::clone(&d.id)).collect();
    assert_eq!(&*ids[0], "b2001");
    // Reading again, it is back to live batches with no merge.
    log.ingest(simple("late", Retention::Transient, T0))
        .await
        .unwrap();
    let b = sub.batches.recv().await.unwrap();
    assert_eq!((b.dials.len(), b.merged, b.skipped), (1, 0, 0));

    // A subscriber that went away is dropped.
    drop(sub);
    log.ingest(simple("after", Retention::Transient, T0))
        .await
        .unwrap();
    tokio::time::advance(interval).await;
    log.ingest(simple("after2", Retention::Transient, T0))
        .await
        .unwrap();
    assert_eq!(log.status().await.unwrap().subscribers, 0);
}

/// On the real clock (time not paused), a new subscriber's first batch goes out: its due time
/// must not be a moving "now" that a flush check can never reach.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_batch_reaches_a_subscriber_on_the_real_clock() {
    let log = DialLog::spawn(mem_config()).unwrap();
    let mut sub = log
        .subscribe(DialFilter::default(), SubscribeOptions::default())
        .await
        .unwrap();
    log.ingest(simple("rt1", Retention::Transient, T0))
        .await
        .unwrap();
    let b = tokio::time::timeout(Duration::from_secs(5), sub.batches.recv())
        .await
        .expect("the first batch arrives")
        .unwrap();
    assert_eq!(&*b.dials[0].id, "rt1");
    // And later ones, after the interval.
    log.ingest(simple("rt2", Retention::Transient, T0 + 1))
        .await
        .unwrap();
    let b = tokio::time::timeout(Duration::from_secs(5), sub.batches.recv())
        .await
        .expect("the second batch arrives")
        .unwrap();
    assert_eq!(&*b.dials[0].id, "rt2");
}

/// The durable watermark the hub's acknowledgements wait for (`docs/protocol.md`,
/// "Acknowledgement and replay"): a stored dial is durable only once its transaction committed;
/// `transient` dials add nothing to wait for; dials cleared before they were written do not hold
/// the watermark back.
#[tokio::test]
async fn a_stored_dial_is_durable_only_once_its_transaction_committed() {
    let dir = tempfile::tempdir().unwrap();
    let log = DialLog::spawn(DialLogConfig {
        // No timed write: the batch waits for flush.
        db_flush_interval: Duration::from_secs(3600),
        ..disk_config(dir.path())
    })
    .unwrap();
    let mut watch = log.durable_watch();
    assert_eq!(log.durable_mark(), 0);
    assert!(
        log.is_durable(log.durable_mark()),
        "nothing held: nothing to wait for"
    );
    log.ingest(simple("t1", Retention::Transient, T0))
        .await
        .unwrap();
    assert_eq!(
        log.durable_mark(),
        0,
        "a transient dial is durable once held"
    );
    log.ingest(simple("s1", Retention::Standard, T0))
        .await
        .unwrap();
    let mark = log.durable_mark();
    assert!(mark > 0);
    assert!(!log.is_durable(mark), "held, not committed yet");
    assert!(db_ids(dir.path()).is_empty());
    log.flush().await.unwrap();
    assert!(log.is_durable(mark), "committed");
    assert_eq!(db_ids(dir.path()), vec!["s1"]);
    assert!(*watch.borrow_and_update() >= mark);

    // A later transient dial leaves the mark where it was (nothing more to commit).
    log.ingest(simple("t2", Retention::Transient, T0))
        .await
        .unwrap();
    assert_eq!(log.durable_mark(), mark);

    // Cleared before it was written: the watermark still moves past it.
    log.ingest(simple("s2", Retention::Permanent, T0))
        .await
        .unwrap();
    let mark2 = log.durable_mark();
    assert!(mark2 > mark && !log.is_durable(mark2));
    log.clear(ClearScope::All).await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), watch.wait_for(|w| *w >= mark2))
        .await
        .expect("the watermark moves past cleared dials")
        .unwrap();
    assert!(db_ids(dir.path()).is_empty());
    log.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_log_in_memory_only_counts_every_dial_durable_once_held() {
    let log = DialLog::spawn(mem_config()).unwrap();
    log.ingest(simple("s1", Retention::Permanent, T0))
        .await
        .unwrap();
    assert_eq!(log.durable_mark(), 0);
    assert!(log.is_durable(log.durable_mark()));
    log.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_ring_holds_at_most_its_byte_budget_and_sqlite_keeps_the_rest() {
    // Dials of about 100 kB each: a 1 MB budget holds the newest few, not `capacity` of them.
    let dir = tempfile::tempdir().unwrap();
    let cfg = || DialLogConfig {
        max_bytes: 1_000_000,
        ..disk_config(dir.path())
    };
    let log = DialLog::spawn(cfg()).unwrap();
    let big = |i: i64| {
        dial(
            &format!("evt_big_{i}"),
            "describe",
            50,
            DialOutcome::Ok,
            Retention::Standard,
            T0 + i,
            json!({"op": "describe", "pad": "x".repeat(100_000)}),
            None,
            None,
        )
    };
    for i in 0..30 {
        assert_eq!(log.ingest(big(i)).await.unwrap(), IngestVerdict::Held);
    }
    let status = log.status().await.unwrap();
    // 100 000 + overhead each: 9 fit in 1 000 000 bytes.
    assert_eq!(status.held, 9, "{status:?}");
    assert_eq!(status.evicted, 21);
    let ids = ids_of(&log, DialFilter::default()).await;
    assert_eq!(ids.first().map(String::as_str), Some("evt_big_29"));
    assert_eq!(ids.last().map(String::as_str), Some("evt_big_21"));
    // Evicted from memory, not lost: every one is in SQLite, and a replay is still a duplicate.
    log.flush().await.unwrap();
    assert_eq!(db_ids(dir.path()).len(), 30);
    assert_eq!(log.ingest(big(0)).await.unwrap(), IngestVerdict::Duplicate);
    log.shutdown().await.unwrap();
    // At start the ring loads what fits in the budget.
    let log = DialLog::spawn(cfg()).unwrap();
    assert_eq!(log.status().await.unwrap().held, 9);
    // One dial bigger than the whole budget is still held (alone).
    let huge = dial(
        "evt_huge",
        "describe",
        50,
        DialOutcome::Ok,
        Retention::Standard,
        T0 + 99,
        json!({"pad": "y".repeat(1_500_000)}),
        None,
        None,
    );
    assert_eq!(log.ingest(huge).await.unwrap(), IngestVerdict::Held);
    assert_eq!(ids_of(&log, DialFilter::default()).await, vec!["evt_huge"]);
    log.shutdown().await.unwrap();
}

/// Back-pressure to the SQLite writer: a long stream of large dials never has more
/// than `max_unwritten_bytes` (plus the one call being admitted) held and not yet written, the
/// ring evicting them long before; ingest waits instead of dropping, so every dial is stored
/// exactly once and the durable watermark reaches the last.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unwritten_dials_stay_within_their_byte_bound_and_none_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let max = 512 * 1024;
    let log = DialLog::spawn(DialLogConfig {
        capacity: 16,
        db_batch_bytes: 128 * 1024,
        max_unwritten_bytes: max,
        ..disk_config(dir.path())
    })
    .unwrap();
    let pad = "x".repeat(64 * 1024);
    let per_call = 4;
    let calls = 80;
    let mut sent = Vec::new();
    let mut call_bytes = 0u64;
    for c in 0..calls {
        let batch: Vec<Dial> = (0..per_call)
            .map(|i| {
                let id = format!("big-{c:03}-{i}");
                sent.push(id.clone());
                dial(
                    &id,
                    "read_item",
                    5,
                    DialOutcome::Ok,
                    Retention::Standard,
                    T0 + (c * per_call + i) as i64,
                    json!({"op": "read_item", "itemId": id, "pad": pad}),
                    Some(json!({"value": "ok"})),
                    None,
                )
            })
            .collect();
        call_bytes = call_bytes.max(
            batch
                .iter()
                .map(|d| {
                    (switchboard::dials::log::DIAL_OVERHEAD_BYTES
                        + d.request.as_str().len()
                        + d.response.as_ref().map_or(0, |r| r.as_str().len()))
                        as u64
                })
                .sum(),
        );
        let verdicts = tokio::time::timeout(Duration::from_secs(30), log.ingest_batch(batch))
            .await
            .expect("ingest waited for room for 30 s")
            .unwrap();
        assert!(verdicts.iter().all(|v| *v == IngestVerdict::Held));
    }
    log.flush().await.unwrap();
    assert!(log.is_durable(log.durable_mark()));
    let st = log.status().await.unwrap();
    println!(
        "peak unwritten {} bytes (bound {max}, one call {call_bytes}), {} MiB streamed",
        st.peak_unwritten_bytes,
        sent.len() * pad.len() / (1024 * 1024)
    );
    assert!(
        st.peak_unwritten_bytes <= max as u64 + call_bytes,
        "peak unwritten {} bytes past the bound {max} + one call {call_bytes}",
        st.peak_unwritten_bytes
    );
    assert!(st.peak_unwritten_bytes >= call_bytes);
    assert_eq!(st.unwritten_bytes, 0, "everything was written");
    assert_eq!(st.rows_written, sent.len() as u64);
    assert!(
        st.evicted >= (sent.len() - 16) as u64,
        "the ring held them all"
    );
    log.shutdown().await.unwrap();
    sent.sort();
    assert_eq!(db_ids(dir.path()), sent, "every dial stored exactly once");
}

/// The scheduling policy (`/proc/<pid>/task/<tid>/stat`, field 41) of every thread of this
/// process named `name`.
#[cfg(target_os = "linux")]
fn thread_policies(name: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for t in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if comm.trim() != name {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else {
            continue; // the thread ended meanwhile
        };
        // Fields after the command, which is in parentheses and may hold spaces.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let policy = rest.split(' ').nth(41 - 3).unwrap().parse().unwrap();
        out.push(policy);
    }
    out
}

/// The writer's SQLite transactions run as background work (`SCHED_BATCH`), so handing it a
/// batch does not push the tokio worker that did it off its CPU (docs/performance.md, "The
/// writer as background work"); the worker threads keep the normal policy.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_writer_thread_runs_as_background_work() {
    const SCHED_OTHER: u32 = 0;
    const SCHED_BATCH: u32 = 3;
    let dir = tempfile::tempdir().unwrap();
    let log = DialLog::spawn(disk_config(dir.path())).unwrap();
    log.ingest(simple("w1", Retention::Standard, T0))
        .await
        .unwrap();
    log.flush().await.unwrap();
    let writers = thread_policies("dial-log-writer");
    assert!(!writers.is_empty(), "no dial-log-writer thread found");
    assert!(
        writers.iter().all(|&p| p == SCHED_BATCH),
        "writer policies: {writers:?}"
    );
    let workers = thread_policies("tokio-rt-worker");
    assert!(!workers.is_empty(), "no tokio worker thread found");
    assert!(
        workers.iter().all(|&p| p == SCHED_OTHER),
        "worker policies: {workers:?}"
    );
    log.shutdown().await.unwrap();
}
