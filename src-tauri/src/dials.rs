//! The shell's side of the "Live dials" view: the app's one [`DialLogHandle`], the imported
//! capture, the live subscriptions streaming to the window, and the forwarding loop.
//!
//! Why it exists: the core's dial log (`switchboard::dials`) is an actor on a tokio runtime with
//! no notion of windows. This module starts it on tauri's async runtime when the app starts
//! (data folder = `AppState.paths.data_dir`, ring capacity = `settings.dial_ring_capacity`),
//! keeps what the view's commands share ([`DialsState`]), and turns a core
//! [`Subscription`] into messages for a `tauri::ipc::Channel` ([`forward`]).
//!
//! Streaming (spec `phone-line.md`, "Operations"; rate as in the core's log docs): a new view gets
//! one [`DialBatchMsg::Snapshot`], then [`DialBatchMsg::Batch`]es at most 30 times a second. The
//! forwarder never waits on the window: `Channel::send` queues the message and returns. When the
//! forwarder is slower than the log (a slow sink), the log's bounded queue fills and the log
//! merges the waiting dials into a later batch; the batch says how many (`merged`) and how many
//! were dropped (`skipped`), and the view shows both. A failed send ends the forwarding task,
//! which drops the receiver and so ends the subscription in the log.
//!
//! Rows sent to the window are [`DialRow`]s (no request or response bodies): 100 000 of them fit
//! comfortably in the page; the inspector fetches one whole [`Dial`] with `dials_get`.
//!
//! Nothing here can approve, reject or cancel anything on a phone: the view only mirrors.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};
use switchboard::dials::{
    Dial, DialBatch, DialLog, DialLogConfig, DialLogHandle, DialOutcome, DialPage, ImportedLog,
    Retention, Subscription,
};
use tauri::{Manager, Runtime};
use ts_rs::TS;

use crate::state::AppState;

/// One dial as a row of the live table: everything but the request and response bodies and the
/// error text. Shape: `{ id, phone, call_id, caller, callee, endpoint, op, start_ms,
/// duration_ms, outcome, slow, has_error }` (times in epoch ms, durations in ms).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct DialRow {
    /// Dial id (the ifp/1 event's `dedup` key).
    pub id: Arc<str>,
    /// The phone that reported it (`dev_...`).
    pub phone: Arc<str>,
    /// The request's `callId` (empty when none).
    pub call_id: Arc<str>,
    /// The caller's extension id.
    pub caller: Arc<str>,
    /// The callee's extension id.
    pub callee: Arc<str>,
    /// The endpoint dialed.
    pub endpoint: Arc<str>,
    /// The op.
    pub op: Arc<str>,
    /// Start, epoch milliseconds (UTC).
    #[ts(type = "number")]
    pub start_ms: i64,
    /// Duration, milliseconds.
    #[ts(type = "number")]
    pub duration_ms: u64,
    /// How it ended.
    pub outcome: DialOutcome,
    /// Over one second (`phone-line.md`, "Good neighbour notes").
    pub slow: bool,
    /// Whether the dial carries an error text.
    pub has_error: bool,
}

impl From<&Dial> for DialRow {
    fn from(d: &Dial) -> Self {
        Self {
            id: Arc::clone(&d.id),
            phone: Arc::clone(&d.phone),
            call_id: Arc::clone(&d.call_id),
            caller: Arc::clone(&d.caller),
            callee: Arc::clone(&d.callee),
            endpoint: Arc::clone(&d.endpoint),
            op: Arc::clone(&d.op),
            start_ms: d.start_ms,
            duration_ms: d.duration_ms,
            outcome: d.outcome,
            slow: d.slow,
            has_error: d.error.is_some(),
        }
    }
}

/// One message on a dials channel, tagged by `kind`:
///
/// - `{ kind: "snapshot", id, rows, total }`: first message of a subscription: the matching
///   dials held when it started, **oldest first** (`total` counts all matches, `rows` may be
///   fewer when the filter has a `limit`).
/// - `{ kind: "batch", rows, merged, skipped }`: new matching dials, oldest first; `merged` of
///   them were held back from an earlier batch because the forwarder fell behind, `skipped`
///   matching dials were dropped for this view (re-query to see them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[ts(export)]
pub enum DialBatchMsg {
    /// The subscription's starting rows.
    Snapshot {
        /// The subscription id (for `dials_unsubscribe`).
        #[ts(type = "number")]
        id: u64,
        /// Matching dials, oldest first.
        rows: Vec<DialRow>,
        /// All matching dials (before `limit`).
        #[ts(type = "number")]
        total: u64,
    },
    /// New dials since the last message.
    Batch {
        /// New matching dials, oldest first.
        rows: Vec<DialRow>,
        /// How many of `rows` were held back from an earlier batch.
        #[ts(type = "number")]
        merged: u64,
        /// Matching dials dropped for this view since the last batch.
        #[ts(type = "number")]
        skipped: u64,
    },
}

impl DialBatchMsg {
    /// The snapshot message of subscription `id`: the page's dials reversed to oldest first.
    pub fn snapshot(id: u64, page: &DialPage) -> Self {
        Self::Snapshot {
            id,
            rows: page
                .dials
                .iter()
                .rev()
                .map(|d| DialRow::from(&**d))
                .collect(),
            total: page.total,
        }
    }

    /// A batch message from a core [`DialBatch`].
    pub fn batch(b: &DialBatch) -> Self {
        Self::Batch {
            rows: b.dials.iter().map(|d| DialRow::from(&**d)).collect(),
            merged: b.merged,
            skipped: b.skipped,
        }
    }
}

/// How a [`forward`] loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForwardEnd {
    /// The sink refused a message (the window closed the channel or went away).
    SinkClosed,
    /// The log ended the subscription (it shut down).
    LogClosed,
}

/// Forwards a subscription to `sink`: first the snapshot (as subscription `id`), then every
/// batch as it arrives, until the sink fails or the log ends the subscription. Dropping the
/// receiver on return ends the subscription in the log.
///
/// The sink is called synchronously and should not block (a `Channel::send` queues and returns);
/// while it does block, the log merges the waiting dials into the next batch and reports
/// `merged`.
pub async fn forward<E>(
    id: u64,
    sub: Subscription,
    mut sink: impl FnMut(DialBatchMsg) -> Result<(), E>,
) -> ForwardEnd {
    let Subscription {
        snapshot,
        mut batches,
    } = sub;
    if sink(DialBatchMsg::snapshot(id, &snapshot)).is_err() {
        return ForwardEnd::SinkClosed;
    }
    drop(snapshot);
    while let Some(b) = batches.recv().await {
        if sink(DialBatchMsg::batch(&b)).is_err() {
            return ForwardEnd::SinkClosed;
        }
    }
    ForwardEnd::LogClosed
}

/// Which set of dials a command reads: `"live"` (the log) or `"imported"` (the read-only
/// capture loaded with `dials_import`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum DialSource {
    /// The live dial log.
    #[default]
    Live,
    /// The imported JSON Lines capture (read only).
    Imported,
}

/// A JSON Lines file imported for reading.
#[derive(Debug)]
pub struct ImportedCapture {
    /// The file it came from (absolute when given so).
    pub path: PathBuf,
    /// Its dials.
    pub log: ImportedLog,
}

/// Live subscriptions by id: the forwarding task of each, so it can be ended.
type Subs = Arc<Mutex<HashMap<u64, tauri::async_runtime::JoinHandle<()>>>>;

/// Everything the dials commands share, `manage()`d once by [`manage`].
pub struct DialsState {
    /// The app's dial log. The phone hub gets a clone to ingest dials from phones.
    pub log: DialLogHandle,
    /// Why the log runs in memory only (its SQLite file could not be opened), if it does.
    pub storage_error: Option<String>,
    /// The folder relative export paths are resolved in (`<data_dir>/exports`).
    pub export_dir: PathBuf,
    imported: Mutex<Option<Arc<ImportedCapture>>>,
    subs: Subs,
    next_id: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl DialsState {
    /// Starts the dial log on tauri's async runtime, keeping its SQLite file in `data_dir` with
    /// `capacity` dials in memory. When the file cannot be opened the log runs in memory only and
    /// [`DialsState::storage_error`] says why.
    ///
    /// # Errors
    /// Only when even the in-memory log cannot start (a zero capacity).
    pub fn start(
        data_dir: &Path,
        capacity: usize,
    ) -> Result<Self, switchboard::dials::DialLogError> {
        let rt = tauri::async_runtime::handle();
        // DialLog::spawn spawns its actor with tokio::spawn: enter tauri's runtime first.
        let _guard = rt.inner().enter();
        let cfg = DialLogConfig {
            data_dir: Some(data_dir.to_owned()),
            capacity,
            ..DialLogConfig::default()
        };
        let (log, storage_error) = match DialLog::spawn(cfg.clone()) {
            Ok(log) => (log, None),
            Err(e) => {
                tracing::error!("dial history not stored, keeping dials in memory only: {e}");
                let mem = DialLogConfig {
                    data_dir: None,
                    ..cfg
                };
                (DialLog::spawn(mem)?, Some(e.to_string()))
            }
        };
        Ok(Self {
            log,
            storage_error,
            export_dir: data_dir.join("exports"),
            imported: Mutex::new(None),
            subs: Arc::default(),
            next_id: AtomicU64::new(1),
        })
    }

    /// The imported capture, if one is loaded.
    pub fn imported(&self) -> Option<Arc<ImportedCapture>> {
        lock(&self.imported).clone()
    }

    /// Replaces the imported capture (`None` closes it).
    pub fn set_imported(&self, capture: Option<ImportedCapture>) {
        *lock(&self.imported) = capture.map(Arc::new);
    }

    /// Starts forwarding `sub` to `sink` in a task on tauri's runtime; returns the subscription
    /// id. The task ends (and the subscription with it) when the sink fails, the log closes, or
    /// [`DialsState::unsubscribe`] is called.
    pub fn start_forwarding<E: 'static>(
        &self,
        sub: Subscription,
        sink: impl FnMut(DialBatchMsg) -> Result<(), E> + Send + 'static,
    ) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let subs = Arc::clone(&self.subs);
        // Held across the spawn so the task's own removal cannot run before the insert.
        let mut map = lock(&self.subs);
        let task = tauri::async_runtime::spawn(async move {
            let end = forward(id, sub, sink).await;
            tracing::debug!(target: "switchboard::dials", "dial view {id} ended: {end:?}");
            lock(&subs).remove(&id);
        });
        map.insert(id, task);
        id
    }

    /// Ends subscription `id`; `false` when no such subscription is running (already ended).
    pub fn unsubscribe(&self, id: u64) -> bool {
        match lock(&self.subs).remove(&id) {
            Some(task) => {
                task.abort();
                true
            }
            None => false,
        }
    }

    /// How many views are subscribed.
    pub fn subscriptions(&self) -> usize {
        lock(&self.subs).len()
    }

    /// Resolves an export path: relative paths go to [`DialsState::export_dir`].
    pub fn resolve_export_path(&self, path: &str) -> PathBuf {
        let p = PathBuf::from(path);
        if p.is_absolute() {
            p
        } else {
            self.export_dir.join(p)
        }
    }
}

/// Starts the dial log with its SQLite file (and export folder) in `dir` (the data folder, or
/// `<data>/demo` with `--demo`) and manages [`DialsState`] (called once from `init`). A log
/// that cannot start at all is reported in the app log and the dials commands answer
/// `internal` errors.
pub fn manage<R: Runtime>(app: &tauri::AppHandle<R>, state: &AppState, dir: &Path) {
    let capacity = state.settings().dial_ring_capacity as usize;
    match DialsState::start(dir, capacity) {
        Ok(dials) => {
            #[cfg(debug_assertions)]
            sample::start_from_env(&dials.log);
            app.manage(dials);
        }
        Err(e) => tracing::error!("the dial log did not start: {e}"),
    }
}

/// Builds a synthetic dial number `i` (deterministic), for `SWITCHBOARD_SAMPLE_DIALS` and tests.
///
/// Dials start one every 50 ms back from `now_ms`; about one in 40 is slow, one in 200 times
/// out, one in 60 fails with the spec's permission error (`phone-line.md`, "Failure modes and
/// the bridge banner"), one in 50 is a `write_field` tool error. Retention is `transient`, so
/// sample dials are never written to the dial history file.
pub fn sample_dial(i: u64, count: u64, now_ms: i64) -> Dial {
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    const OPS: [&str; 8] = [
        "describe",
        "system_prompt",
        "check_write",
        "check_read",
        "list_items",
        "read_item",
        "write_field",
        "grep_items",
    ];
    const PHONES: [&str; 3] = ["dev_pixel8a", "dev_iphone15", "dev_tabs9"];
    let op = OPS
        .get((next() % 8) as usize)
        .copied()
        .unwrap_or("describe");
    let phone = PHONES
        .get((next() % 3) as usize)
        .copied()
        .unwrap_or("dev_pixel8a");
    let roll = next() % 1200;
    let item = format!("item_{:05}", next() % 5000);
    let call_id = format!("call_{i:08x}");
    let mut request = serde_json::json!({ "op": op, "callId": call_id });
    if op != "describe" {
        request["userId"] = "user_1".into();
        request["characterId"] = "char_aria".into();
    }
    if matches!(
        op,
        "list_items" | "read_item" | "write_field" | "grep_items"
    ) {
        request["surfaceId"] = "module_envelope".into();
    }
    if matches!(op, "read_item" | "write_field") {
        request["itemId"] = item.clone().into();
        request["field"] = "lumirealm.triggers".into();
    }
    if op == "write_field" {
        request["value"] = serde_json::json!({ "enabled": true, "order": i % 7 });
    }
    if op == "grep_items" {
        request["pattern"] = "setVar".into();
        request["ignoreCase"] = true.into();
    }
    let base = 20 + next() % 400;
    let (outcome, duration_ms, response, error) = if roll < 6 {
        (
            DialOutcome::TimedOut,
            15_000,
            None,
            Some("phoneline dial to 'lumirealm' timed out after 15000ms".to_string()),
        )
    } else if roll < 26 {
        (
            DialOutcome::Error,
            base / 4,
            None,
            Some(
                "Shared RPC endpoint \"lumirealm.phoneline\" requires requester \"lumiagent\" \
                 to inherit owner \"lumirealm\" permissions: push_notification"
                    .to_string(),
            ),
        )
    } else if roll < 30 {
        (
            DialOutcome::Error,
            base / 2,
            None,
            Some(format!("unknown op: {op}_v2")),
        )
    } else if op == "write_field" && roll < 54 {
        (
            DialOutcome::ToolError,
            base,
            Some(
                serde_json::json!({ "ok": false, "error": "lumirealm.triggers is regenerated; edit lumirealm.source instead" }),
            ),
            Some("lumirealm.triggers is regenerated; edit lumirealm.source instead".to_string()),
        )
    } else {
        let slow = roll > 1170;
        let d = if slow { 1_000 + next() % 4_000 } else { base };
        let response = match op {
            "describe" => {
                serde_json::json!({ "extension": { "id": "lumirealm", "name": "LumiRealm", "version": "0.1.0" }, "surfaces": [{ "id": "module_envelope", "label": "Risu modules", "scope": "per_character" }] })
            }
            "system_prompt" => serde_json::json!({ "text": "Aria keeps a journal of the realm." }),
            "check_write" | "check_read" => serde_json::json!({ "ok": true }),
            "list_items" => {
                serde_json::json!({ "items": [{ "id": item, "label": "Weather triggers" }], "total": 1 })
            }
            "read_item" => {
                serde_json::json!({ "value": { "enabled": true, "lua": "setVar('rain', 1)" } })
            }
            "write_field" => serde_json::json!({ "ok": true }),
            _ => {
                serde_json::json!({ "hits": [{ "itemId": item, "fieldPath": "lumirealm.source", "line": 12, "match": "setVar", "preview": "setVar('rain', 1)" }], "truncated": false })
            }
        };
        (DialOutcome::Ok, d, Some(response), None)
    };
    let back = i64::try_from(count.saturating_sub(i)).unwrap_or(0) * 50;
    Dial {
        id: format!("sample-{i:07}").into(),
        phone: phone.into(),
        call_id: call_id.into(),
        caller: "lumiagent".into(),
        callee: "lumirealm".into(),
        endpoint: "lumirealm.phoneline".into(),
        op: op.into(),
        request: switchboard::dials::JsonText::from_value(&request),
        start_ms: now_ms - back,
        duration_ms,
        outcome,
        response: response.map(|r| switchboard::dials::JsonText::from_value(&r)),
        error: error.map(Into::into),
        retention: Retention::Transient,
        slow: false,
    }
}

/// Debug builds only: synthetic dials for looking at the view under load.
#[cfg(debug_assertions)]
mod sample {
    use super::*;

    /// `SWITCHBOARD_SAMPLE_DIALS=N` ingests N synthetic dials at start;
    /// `SWITCHBOARD_SAMPLE_DIALS_RATE=R` then keeps adding R dials a second (at most 10 000).
    /// Absent from release builds.
    pub(super) fn start_from_env(log: &DialLogHandle) {
        let n: u64 = env_u64("SWITCHBOARD_SAMPLE_DIALS");
        let rate: u64 = env_u64("SWITCHBOARD_SAMPLE_DIALS_RATE").min(10_000);
        if n == 0 && rate == 0 {
            return;
        }
        let log = log.clone();
        tauri::async_runtime::spawn(async move {
            let now = now_ms();
            tracing::info!("ingesting {n} sample dials (SWITCHBOARD_SAMPLE_DIALS)");
            let mut i = 0;
            while i < n {
                let end = (i + 1000).min(n);
                let chunk = (i..end).map(|k| sample_dial(k, n, now)).collect();
                if log.ingest_batch(chunk).await.is_err() {
                    return;
                }
                i = end;
            }
            if rate == 0 {
                return;
            }
            let tick_ms = 100;
            let per_tick = rate.div_ceil(10);
            let mut k = n;
            loop {
                tokio_sleep(tick_ms).await;
                let now = now_ms();
                // Spread the tick's dials over its 100 ms.
                let step = i64::try_from(tick_ms / per_tick.max(1)).unwrap_or(1);
                let chunk = (k..k + per_tick)
                    .map(|j| {
                        let mut d = sample_dial(j, j, now);
                        d.start_ms = now - i64::try_from(k + per_tick - j).unwrap_or(0) * step;
                        d
                    })
                    .collect();
                k += per_tick;
                if log.ingest_batch(chunk).await.is_err() {
                    return;
                }
            }
        });
    }

    fn env_u64(name: &str) -> u64 {
        std::env::var(name)
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    }

    fn now_ms() -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0)
    }

    async fn tokio_sleep(ms: u64) {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
}
