//! The desktop of `scripts/many-phones.sh` (docs/faults.md, "Many phones"): the core app (link,
//! hub, dial log in SQLite, bridge banners) listening on loopback only, for many reference
//! phones at once.
//!
//! Run: `many_phones_desk DIR MAX_SECS`. It talks to the script through files in `DIR`:
//! - writes `invite.json` (`{"paired": N, "port", "fp", "code"}`) each time it opens a pairing
//!   window, after `N` phones have paired; it confirms every pending pairing as the person would
//!   ("Codes match"); the phone pairs with `--addr 127.0.0.1:PORT --fp FP --code CODE` (the
//!   pairing link would also offer this computer's LAN addresses, which are never a target);
//! - keeps `state.json` current (every 250 ms, written whole through a rename): each paired
//!   phone's device id, label and whether it is connected, the dial log's counters, the hub's
//!   connected / disconnected notices, and the bridge view's banners and diagnostics (which
//!   phone each names);
//! - on `finish` (a file) it waits for history search to have indexed every stored dial,
//!   pages through each phone's dials in the history (`phone:<device> kind:dial`, as the Live
//!   dials filter line shows them: rows, distinct ids, rows of another phone, and the first
//!   page's count), shuts the app down (which writes every dial held), then counts
//!   the rows of `dials.sqlite3` per phone (rows, distinct dial ids, distinct call ids, outcomes
//!   other than `ok`) and its connection events, and writes `final.json`; on `stop` it only
//!   shuts down. At `MAX_SECS` (at most 7200) it shuts down whatever happens.
//!
//! Every loop is bounded by `MAX_SECS`. Errors end the program with a message naming the step.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use switchboard::app::dials::HistoryRow;
use switchboard::app::{
    App, AppConfig, AppEvent, AppPaths, HostCall, IdentityStore, RecordingHost,
};
use switchboard::dials::HistoryQuery;
use switchboard::hub::HubNotice;

type R<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// Writes `v` to `dir/name` whole (a temporary file renamed over it), so a reader never sees
/// half of it.
fn write(dir: &Path, name: &str, v: &Value) -> R<()> {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, v.to_string()).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, dir.join(name)).map_err(|e| format!("{name}: {e}"))?;
    Ok(())
}

fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(secs)) = (args.next(), args.next()) else {
        eprintln!("usage: many_phones_desk DIR MAX_SECS");
        return std::process::ExitCode::from(2);
    };
    let Ok(secs) = secs.parse::<u64>() else {
        eprintln!("many_phones_desk: MAX_SECS {secs:?} is not a whole number of seconds");
        return std::process::ExitCode::from(2);
    };
    match run(PathBuf::from(dir), secs.min(7200)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("many_phones_desk: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(dir: PathBuf, secs: u64) -> R<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let mut config = AppConfig::new(AppPaths::under(&dir.join("home")), false);
        config.identity = IdentityStore::Memory;
        // Loopback only: nothing but this computer can reach it.
        config.listen = (IpAddr::V4(Ipv4Addr::LOCALHOST), 0);
        config.mdns = false;
        let data_dir = config.paths.data_dir.clone();
        let host = std::sync::Arc::new(RecordingHost::new());
        let app = App::new(
            config,
            host.clone(),
            tokio::runtime::Handle::current(),
            switchboard::confirmations::ConfirmationMirror::with_bundled_catalogue(),
        );
        app.start_link();
        let end = tokio::time::Instant::now() + Duration::from_secs(secs);
        let port = loop {
            if let Some(a) = app.phones.link().and_then(|l| l.local_addr()) {
                break a.port();
            }
            if tokio::time::Instant::now() >= end {
                return Err("the link did not start".into());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let (mut connects, mut disconnects) = (0u64, 0u64);
        // The number of paired phones the open window was offered after (none open yet).
        let mut window_after: Option<usize> = None;
        let mut finish = false;
        while tokio::time::Instant::now() < end {
            if dir.join("stop").exists() {
                break;
            }
            if dir.join("finish").exists() {
                finish = true;
                break;
            }
            let snap = app.phones_snapshot();
            if let Some(p) = &snap.pending {
                let _ = app.change().and_then(|c| c.confirm_pairing(&p.id, true));
            }
            let paired = snap.phones.len();
            if snap.pending.is_none()
                && (snap.pairing.is_none() || window_after != Some(paired))
                && dir.join("pairing").exists()
            {
                let invite = app
                    .change()
                    .and_then(|c| c.open_pairing())
                    .map_err(|e| format!("open the pairing window: {e}"))?;
                window_after = Some(paired);
                write(
                    &dir,
                    "invite.json",
                    &json!({"paired": paired, "port": port, "fp": invite.cert_fingerprint,
                            "code": invite.code}),
                )?;
            }
            for call in host.take_calls() {
                match call {
                    HostCall::Emit(AppEvent::Notice(HubNotice::PhoneConnected { .. })) => {
                        connects += 1;
                    }
                    HostCall::Emit(AppEvent::Notice(HubNotice::PhoneDisconnected { .. })) => {
                        disconnects += 1;
                    }
                    _ => {}
                }
            }
            let status = app
                .dials()
                .map_err(|e| format!("the dial log: {e}"))?
                .dials_status()
                .await
                .map_err(|e| format!("the dial log's status: {e}"))?
                .live;
            let bridge = app.bridge_snapshot();
            let phones: Vec<Value> = snap
                .phones
                .iter()
                .map(|p| {
                    json!({"device": p.record.device_id, "label": p.record.label,
                           "connected": p.connected})
                })
                .collect();
            write(
                &dir,
                "state.json",
                &json!({
                    "phones": phones,
                    "connected": snap.phones.iter().filter(|p| p.connected).count(),
                    "ingested": status.ingested,
                    "duplicates": status.duplicates,
                    "rows_written": status.rows_written,
                    "unwritten_bytes": status.unwritten_bytes,
                    "connects": connects,
                    "disconnects": disconnects,
                    "banners": bridge.banners.iter()
                        .map(|b| json!({"phone": b.phone, "message": b.message}))
                        .collect::<Vec<_>>(),
                    "diagnostics": bridge.diagnostics.iter()
                        .map(|d| json!({"phone": d.phone, "reason": d.reason, "count": d.count}))
                        .collect::<Vec<_>>(),
                    "storage_problem": snap.storage_problem,
                }),
            )?;
            // Quicker while phones pair: each waits for the person's confirmation.
            let pairing = dir.join("pairing").exists();
            tokio::time::sleep(Duration::from_millis(if pairing { 50 } else { 250 })).await;
        }
        if !finish {
            app.shutdown().await;
            return Ok(());
        }
        // History search indexes the stored dials behind the writer (a chunk per 100 ms while
        // dials arrive, as fast as it can once they stop): a count over rows not indexed yet is
        // an estimate, so the counts wait until the index has caught up.
        let waited = tokio::time::Instant::now();
        let log = &app.dials().map_err(|e| format!("the dial log: {e}"))?.log;
        while !log
            .history_indexed()
            .await
            .map_err(|e| format!("the history's index: {e}"))?
        {
            if tokio::time::Instant::now() >= end {
                return Err("the history's index did not catch up in time".into());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let index_caught_up_ms = waited.elapsed().as_millis() as u64;
        // Each phone's dials as the history shows them (the filter line's `phone:` term; its
        // connection events are rows of the history too, not dials): the first page's count
        // (exact, or an estimate when counting them all takes too long), then every page, as
        // the window scrolls down, counting the rows, their distinct ids and any row of
        // another phone. Bounded: each page moves the cursor down (or the history ends), at
        // most 10^5 pages of 2000 rows a phone, and by `MAX_SECS`.
        let mut by_api: BTreeMap<String, Value> = BTreeMap::new();
        for p in app.phones_snapshot().phones {
            let id = p.record.device_id.clone();
            let started = tokio::time::Instant::now();
            let mut cursor: Option<String> = None;
            let mut estimate = None;
            let (mut rows, mut foreign, mut pages) = (0u64, 0u64, 0u64);
            let mut ids: std::collections::HashSet<std::sync::Arc<str>> = Default::default();
            for _ in 0..100_000u32 {
                if tokio::time::Instant::now() >= end {
                    return Err(format!("paging the history of {id} did not end in time").into());
                }
                let page = app
                    .dials_history(
                        HistoryQuery {
                            filter: format!("phone:{id} kind:dial"),
                            cursor: cursor.clone(),
                            limit: Some(2000),
                            count: Some(cursor.is_none()),
                            skip: None,
                        },
                        None,
                    )
                    .await
                    .map_err(|e| format!("the history of {id}: {e}"))?;
                if cursor.is_none() {
                    estimate = page.matched;
                }
                pages += 1;
                for row in &page.rows {
                    if let HistoryRow::Dial(d) = row {
                        rows += 1;
                        if *d.phone != *id {
                            foreign += 1;
                        }
                        ids.insert(std::sync::Arc::clone(&d.id));
                    }
                }
                cursor = page.next;
                if cursor.is_none() {
                    break;
                }
            }
            by_api.insert(
                id,
                json!({"count": estimate.map(|m| m.count), "exact": estimate.map(|m| m.exact),
                       "rows": rows, "distinct_ids": ids.len(), "other_phones": foreign,
                       "pages": pages, "ms": started.elapsed().as_millis() as u64}),
            );
        }
        let shut = app.shutdown().await;
        // What is on disk, counted by SQLite itself.
        let db = data_dir.join(switchboard::dials::store::DB_FILE);
        let conn =
            rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .map_err(|e| format!("{}: {e}", db.display()))?;
        let mut stmt = conn
            .prepare(
                "SELECT phone, COUNT(*), COUNT(DISTINCT id), COUNT(DISTINCT call_id), \
                 SUM(outcome <> 'ok') FROM dials GROUP BY phone",
            )
            .map_err(|e| format!("{}: {e}", db.display()))?;
        // A clean stop moves a flood's journaled batches into rows before the writer ends.
        let journaled = switchboard::dials::store::journaled_dials(&conn, &db)
            .map_err(|e| e.to_string())?
            .len();
        if journaled > 0 {
            return Err(format!(
                "the shutdown left {journaled} dials in the journal of {} instead of moving them \
                 into rows",
                db.display()
            )
            .into());
        }
        let mut stored: BTreeMap<String, Value> = BTreeMap::new();
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, i64>(4)?,
                ))
            })
            .map_err(|e| format!("{}: {e}", db.display()))?;
        for row in rows {
            let (phone, n, ids, calls, not_ok) =
                row.map_err(|e| format!("{}: {e}", db.display()))?;
            stored.insert(
                phone,
                json!({"rows": n, "distinct_ids": ids, "distinct_calls": calls, "not_ok": not_ok}),
            );
        }
        // Each phone's connection events (the history's `kind:connection` rows), by phone.
        let mut events: BTreeMap<String, i64> = BTreeMap::new();
        let mut stmt = conn
            .prepare("SELECT phone, COUNT(*) FROM conn_events GROUP BY phone")
            .map_err(|e| format!("{}: {e}", db.display()))?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
            .map_err(|e| format!("{}: {e}", db.display()))?;
        for row in rows {
            let (phone, n) = row.map_err(|e| format!("{}: {e}", db.display()))?;
            events.insert(phone, n);
        }
        write(
            &dir,
            "final.json",
            &json!({"history": by_api, "stored": stored, "connection_events": events,
                    "index_caught_up_ms": index_caught_up_ms,
                    "shutdown_ms": shut.took_ms, "shutdown_in_time": shut.in_time}),
        )?;
        Ok(())
    })
}
