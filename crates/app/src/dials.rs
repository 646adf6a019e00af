//! The "Live dials" view: the app's one [`DialLogHandle`], the imported capture, the live
//! subscriptions streaming to the window, the forwarding loop, and what the view's commands do
//! (query, stats, stream, one whole dial, export, import, clear, status, a dial's banner).
//!
//! Why it exists: the dial log (`switchboard_dials`) is an actor on a tokio runtime with no notion
//! of windows. This module starts it on the app's runtime (data folder = the link's folder,
//! ring capacity = `settings.dial_ring_capacity`), keeps what the view's commands share
//! ([`DialsState`]), and turns a [`Subscription`] into messages for a sink such as the shell's
//! `tauri::ipc::Channel` ([`forward`]).
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
use std::sync::{Arc, Mutex};

use switchboard_wire::sync::lock;

use serde::{Deserialize, Serialize};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;
use ts_rs::TS;

use super::App;
use switchboard_dials::filter::{Atom, Term, TextField};
use switchboard_dials::history::{seek, MAX_SKIP};
use switchboard_dials::repair::{self, HistoryRecovery};
use switchboard_dials::{
    ClearScope, CompiledQuery, ConnectionEvent, Dial, DialBatch, DialFilter, DialLog,
    DialLogConfig, DialLogHandle, DialLogStatus, DialOutcome, DialPage, DialQuery, FilterCheck,
    HistoryEntry, HistoryPage, HistoryQuery, ImportedLog, MatchCount, OpStats, SubscribeOptions,
    Subscription,
};
use switchboard_domain::bridge::explain::banner_for_dial;
use switchboard_domain::bridge::store::{BannerStanding, DialJudgement};
use switchboard_domain::bridge::Banner;
use switchboard_domain::dial::conformance::{check_dial, DialConformance, ScopeBook};
use switchboard_wire::error::{IpcError, IpcErrorKind};

/// Where the banner the dial inspector shows comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum BannerOrigin {
    /// The hub raised (or repeated) it for this dial: it is the banner of the Bridge view.
    RaisedByHub,
    /// Derived from the dial's error text here; the phone's bridge did not raise it (an
    /// imported capture, a dial from before the app started, or one the store no longer
    /// remembers).
    Derived,
}

/// A dial's banner for the dial inspector ([`App::dial_banner`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct DialBanner {
    /// The banner: for [`BannerOrigin::RaisedByHub`] as it stands now (current or in history),
    /// or as it stood after the dial when the history no longer holds it.
    pub banner: Banner,
    /// Where it comes from.
    pub origin: BannerOrigin,
    /// For a raised banner: current, retired (why, when) or forgotten; `null` when derived.
    pub standing: Option<BannerStanding>,
}

/// One dial as a row of the live table: everything but the request and response bodies and the
/// error text. Shape: `{ seq, id, phone, call_id, session, caller, callee, endpoint, op, start_ms,
/// duration_ms, outcome, slow, has_error, spec_findings }` (times in epoch ms, durations in ms).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct DialRow {
    /// Its place in the log's timeline (history pages and streamed rows share it; 0 for an
    /// imported capture's row before it is paged, where it is the line's place).
    #[ts(type = "number")]
    pub seq: u64,
    /// Dial id (the ifp/1 event's `dedup` key).
    pub id: Arc<str>,
    /// The phone that reported it (`dev_...`).
    pub phone: Arc<str>,
    /// The request's `callId` (empty when none).
    pub call_id: Arc<str>,
    /// The ifp/1 `session` that carried it (empty when unknown).
    pub session: Arc<str>,
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
    /// How many ways the dial breaks `phone-line.md` (0: to spec); the row's mark
    /// ([`Dial::spec_findings`]; the inspector lists them with `dial_conformance`).
    pub spec_findings: u32,
}

impl From<&Dial> for DialRow {
    fn from(d: &Dial) -> Self {
        Self {
            seq: d.seq.0,
            id: Arc::clone(&d.id),
            phone: Arc::clone(&d.phone),
            call_id: Arc::clone(&d.call_id),
            session: Arc::clone(&d.session),
            caller: Arc::clone(&d.caller),
            callee: Arc::clone(&d.callee),
            endpoint: Arc::clone(&d.endpoint),
            op: Arc::clone(&d.op),
            start_ms: d.start_ms,
            duration_ms: d.duration_ms,
            outcome: d.outcome,
            slow: d.slow,
            has_error: d.error.is_some(),
            spec_findings: d.spec_findings(),
        }
    }
}

/// One message on a dials channel, tagged by `kind`:
///
/// - `{ kind: "snapshot", id, rows, total }`: first message of a subscription: the matching
///   dials held when it started, **oldest first** (`total` counts all matches, `rows` may be
///   fewer when the filter has a `limit`).
/// - `{ kind: "batch", rows, merged, skipped, left_out }`: new matching dials, oldest first;
///   `merged` of them were held back from an earlier batch because the forwarder fell behind,
///   `skipped` matching dials were dropped for this view (re-query to see them), `left_out` the
///   sequence numbers of older matching dials of this batch not sent (a view's bound on rows
///   per batch, [`WINDOW_BATCH_ROWS`]).
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
        /// Sequence numbers ([`DialRow::seq`]) of this batch's matching dials left out to keep
        /// it within the view's bound (older than `rows`, oldest first; read them from the
        /// history when wanted). A view that read the history up to some `seq` counts only
        /// the ones above it.
        #[ts(type = "number[]")]
        left_out: Vec<u64>,
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
        Self::batch_newest(b, None)
    }

    /// A batch message from a core [`DialBatch`] with at most `max_rows` of its newest dials
    /// (`None`: all); the older ones are named by their sequence number in `left_out` (the
    /// page reads them from the history when it wants them), and `merged` counts only rows
    /// that are sent.
    pub fn batch_newest(b: &DialBatch, max_rows: Option<usize>) -> Self {
        let keep = max_rows.map_or(b.dials.len(), |m| m.min(b.dials.len()));
        let cut = b.dials.len() - keep;
        Self::Batch {
            rows: b.dials[cut..].iter().map(|d| DialRow::from(&**d)).collect(),
            merged: b.merged.min(keep as u64),
            skipped: b.skipped,
            left_out: b.dials[..cut].iter().map(|d| d.seq.0).collect(),
        }
    }
}

/// One row of a history page: a dial or a connection event, tagged by `kind`
/// (`{ kind: "dial", ...DialRow }`, `{ kind: "connection", ...ConnectionEvent }`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[ts(export)]
pub enum HistoryRow {
    /// A dial (no bodies: fetch them with `dials_get`).
    Dial(DialRow),
    /// A connection event.
    Connection(ConnectionEvent),
}

impl HistoryRow {
    /// The row's place in the timeline.
    pub fn seq(&self) -> u64 {
        match self {
            HistoryRow::Dial(d) => d.seq,
            HistoryRow::Connection(c) => c.seq,
        }
    }
}

impl From<&HistoryEntry> for HistoryRow {
    fn from(e: &HistoryEntry) -> Self {
        match e {
            HistoryEntry::Dial(d) => HistoryRow::Dial(DialRow::from(&**d)),
            HistoryEntry::Connection(c) => HistoryRow::Connection(c.clone()),
        }
    }
}

/// The answer of `dials_history` and `dials_follow`: a page of the timeline.
///
/// Shape: `{ rows, next, matched, oldest_ms, newest_seq, filter, skipped }`. `rows` are newest first for
/// `dials_history` and oldest first for `dials_follow`. `next` is the cursor of the following
/// (older) page, `null` when there is nothing more; a page may have fewer rows than asked and a
/// `next` when the search stopped at its time budget (ask `next` to go on). `matched` is how
/// many rows match in all (`exact` false: an estimate), `null` when not asked. `oldest_ms` is
/// how far back the history goes (the oldest row held or stored, epoch ms). `newest_seq` is
/// the newest row's `seq` when the page was read: streamed rows above it are new.
/// `filter` is the filter line, canonical. `skipped` is how many matching rows a seek
/// (`HistoryQuery::skip`) passed over below the cursor before `rows` (0 without one; fewer than
/// asked when the history ended first or the seek ran out of time).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct DialHistoryPage {
    /// The rows.
    pub rows: Vec<HistoryRow>,
    /// Cursor of the next (older) page.
    pub next: Option<String>,
    /// How many rows match in all.
    pub matched: Option<MatchCount>,
    /// How far back the history goes (epoch ms), when it holds anything.
    #[ts(type = "number | null")]
    pub oldest_ms: Option<i64>,
    /// The newest `seq` when read.
    #[ts(type = "number")]
    pub newest_seq: u64,
    /// The filter line, canonical.
    pub filter: String,
    /// Matching rows a seek passed over before `rows`.
    #[ts(type = "number")]
    pub skipped: u64,
}

impl DialHistoryPage {
    /// The page the window gets for a page of the history (rows as the window shows them).
    pub fn of(page: &HistoryPage) -> Self {
        Self {
            rows: page.entries.iter().map(HistoryRow::from).collect(),
            next: page.next.clone(),
            matched: page.matched,
            oldest_ms: page.oldest_ms,
            newest_seq: page.newest_seq,
            filter: page.filter.clone(),
            skipped: page.skipped,
        }
    }
}

/// The answer of `dials_history_stats`: per-op stats over the whole history matching a filter
/// line. Shape: `{ ops, dials, complete, filter }`: `ops` sorted by op (as `dials_stats`),
/// `dials` how many dials they count, `complete` false when the time allowed
/// ([`HISTORY_STATS_BUDGET`]) ran out and they count the newest matching dials only, `filter`
/// the line, canonical.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct HistoryStats {
    /// Stats per op.
    pub ops: Vec<OpStats>,
    /// Dials counted.
    #[ts(type = "number")]
    pub dials: u64,
    /// Whether every matching dial was counted.
    pub complete: bool,
    /// The filter line, canonical.
    pub filter: String,
}

impl HistoryStats {
    /// The stats of an imported capture (or an opened bundle's dials) over `query`.
    pub fn of_capture(log: &ImportedLog, query: &CompiledQuery) -> Self {
        let (ops, dials) = log.line_stats(query);
        Self {
            ops,
            dials,
            complete: true,
            filter: query.line.clone(),
        }
    }
}

/// Shortest time between two batches of a filter line's view (`dials_subscribe` with `line`,
/// the Live dials window): 5 a second. A Tauri channel hands a message over 8 KB to the page
/// through a fetch of its own (tauri `ipc::channel`), the cost of which is per message: at 1 000
/// dials a second, 30 batches of ~33 rows kept the page ~5 times behind (journey 8: the header
/// counted ~200 dials/s), fewer and larger batches carry the same rows at a fraction of the
/// cost, 200 ms late at most.
pub const WINDOW_BATCH_INTERVAL: std::time::Duration = std::time::Duration::from_millis(200);

/// Most rows in one batch of a filter line's view: the newest ones, the older ones of the batch
/// named by sequence number in `left_out` ([`DialBatchMsg::batch_newest`]). The table shows at most about 80 rows
/// (a 2 160 px high window) and follows the newest while at the top; scrolled down, it keeps the
/// rows in view and needs none of the new ones. At 1 000 dials a second a batch holds ~200 rows:
/// the rest were parsed and kept by the page only to be dropped from its cache, ~1.2 MB of
/// script garbage a second. Rows that are wanted later come from the history, as after any
/// `skipped`; their sequence numbers let a view that just read the history count only the
/// ones it has not (a count alone would count some twice).
pub const WINDOW_BATCH_ROWS: usize = 120;

/// How long `dials_history_stats` reads SQLite for (the view asks again every few seconds).
pub const HISTORY_STATS_BUDGET: std::time::Duration = std::time::Duration::from_millis(400);

/// What `dials_follow` follows from a dial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum FollowBy {
    /// Every dial with the same `callId` (`call:<id>`).
    Call,
    /// Every dial of the same ifp/1 session (`session:<id>`).
    Session,
}

/// Dials a followed call or session shows at most.
pub const MAX_FOLLOW: usize = 10_000;

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
    sink: impl FnMut(DialBatchMsg) -> Result<(), E>,
) -> ForwardEnd {
    forward_newest(id, sub, None, sink).await
}

/// As [`forward`], each batch with at most `max_rows` of its newest dials
/// ([`DialBatchMsg::batch_newest`]; `None`: all).
pub async fn forward_newest<E>(
    id: u64,
    sub: Subscription,
    max_rows: Option<usize>,
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
        if sink(DialBatchMsg::batch_newest(&b, max_rows)).is_err() {
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
type Subs = Arc<Mutex<HashMap<u64, JoinHandle<()>>>>;

/// Everything the dials commands share (started once with the app).
pub struct DialsState {
    /// The app's dial log. The phone hub gets a clone to ingest dials from phones.
    pub log: DialLogHandle,
    /// Why the log runs in memory only (its SQLite file could not be opened), if it does.
    pub storage_error: Option<String>,
    /// The history was found damaged at this start and replaced: what was recovered and where
    /// the damaged file went ([`switchboard_dials::repair`]).
    pub recovery: Option<HistoryRecovery>,
    /// The folder relative export paths are resolved in (`<data_dir>/exports`).
    pub export_dir: PathBuf,
    imported: Mutex<Option<Arc<ImportedCapture>>>,
    subs: Subs,
    next_id: AtomicU64,
    rt: Handle,
    /// Where "Clear view" (`dials_clear` `memory`) left the live view: see [`ViewFloor`].
    floor: Mutex<Option<ViewFloor>>,
    clock: Arc<dyn switchboard_wire::clock::Clock>,
}

/// The live view after "Clear view": its history pages, counts and stats hold only the rows
/// newer than the ones it cleared, until the app restarts or the history is deleted. Kept in
/// memory only, so the stored history comes back at the next start; nothing is deleted, and the
/// ring a support bundle reads keeps its dials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ViewFloor {
    /// The newest sequence number when the view was cleared: rows at or below it are hidden.
    seq: u64,
    /// When the view was cleared (epoch ms, the desktop's clock): where its history now begins.
    at_ms: i64,
}

/// Most pages one walk over the rows above a [`ViewFloor`] reads (2 000 rows each).
const FLOOR_WALK_PAGES: usize = 1000;

/// How long a first page after "Clear view" counts the rows above the floor before it
/// estimates the rest (as the history's own counts do past their budget).
const FLOOR_COUNT_BUDGET: std::time::Duration = std::time::Duration::from_millis(100);

impl std::fmt::Debug for DialsState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DialsState")
            .field("storage_error", &self.storage_error)
            .field("export_dir", &self.export_dir)
            .finish_non_exhaustive()
    }
}

impl DialsState {
    /// Starts the dial log on the runtime `rt`, keeping its SQLite file in `data_dir` with
    /// `capacity` dials in memory. A damaged history is first moved aside and salvaged into a
    /// fresh one ([`switchboard_dials::repair::repair`]; [`DialsState::recovery`] says what came
    /// back). When the file cannot be opened the log runs in memory only and
    /// [`DialsState::storage_error`] says why.
    ///
    /// # Errors
    /// Only when even the in-memory log cannot start (a zero capacity).
    pub fn start(
        rt: &Handle,
        data_dir: &Path,
        capacity: usize,
        clock: &Arc<dyn switchboard_wire::clock::Clock>,
    ) -> Result<Self, switchboard_dials::DialLogError> {
        // DialLog::spawn spawns its actor with tokio::spawn: enter the runtime first.
        let _guard = rt.enter();
        let cfg = DialLogConfig {
            data_dir: Some(data_dir.to_owned()),
            capacity,
            clock: Arc::clone(clock),
            ..DialLogConfig::default()
        };
        // Checked once per start, whatever it finds: a history that is still broken after the
        // repair (or cannot be moved aside) leaves the log in memory only, never a crash loop.
        let (recovery, repair_error) = match repair::repair(data_dir, clock.now_ms_i64()) {
            Ok(r) => (r, None),
            Err(e) => {
                tracing::error!("checking the dial history: {e}");
                (None, Some(e))
            }
        };
        let spawned = match repair_error {
            Some(e) => Err(e),
            None => DialLog::spawn(cfg.clone()),
        };
        let (log, storage_error) = match spawned {
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
            recovery,
            export_dir: data_dir.join(super::paths::EXPORT_DIR),
            imported: Mutex::new(None),
            subs: Arc::default(),
            next_id: AtomicU64::new(1),
            rt: rt.clone(),
            floor: Mutex::new(None),
            clock: Arc::clone(clock),
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

    /// Starts forwarding `sub` to `sink` in a task on the app's runtime; returns the subscription
    /// id. The task ends (and the subscription with it) when the sink fails, the log closes, or
    /// [`DialsState::unsubscribe`] is called.
    pub fn start_forwarding<E: 'static>(
        &self,
        sub: Subscription,
        sink: impl FnMut(DialBatchMsg) -> Result<(), E> + Send + 'static,
    ) -> u64 {
        self.start_forwarding_newest(sub, None, sink)
    }

    /// As [`DialsState::start_forwarding`], each batch with at most `max_rows` of its newest
    /// dials ([`forward_newest`]).
    pub fn start_forwarding_newest<E: 'static>(
        &self,
        sub: Subscription,
        max_rows: Option<usize>,
        sink: impl FnMut(DialBatchMsg) -> Result<(), E> + Send + 'static,
    ) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let subs = Arc::clone(&self.subs);
        // Held across the spawn so the task's own removal cannot run before the insert.
        let mut map = lock(&self.subs);
        tracing::debug!("dial view {id} started");
        let task = self.rt.spawn(async move {
            let end = forward_newest(id, sub, max_rows, sink).await;
            tracing::debug!("dial view {id} ended: {end:?}");
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

    /// Resolves an export path: an absolute path is used as given (the person chose that
    /// place); a relative one is a file inside [`DialsState::export_dir`] (subfolders allowed)
    /// and must stay there: it may hold only plain names (`a/b.jsonl`; `.` is skipped), no `..`,
    /// no root (`\x` on Windows) and no drive (`C:x`).
    ///
    /// # Errors
    /// `invalid_input` naming the path when a relative path would leave the export folder or
    /// names no file (`.`).
    pub fn resolve_export_path(&self, path: &str) -> Result<PathBuf, IpcError> {
        use std::path::Component;
        let p = Path::new(path);
        if p.is_absolute() {
            return Ok(p.to_path_buf());
        }
        let mut inside = PathBuf::new();
        for c in p.components() {
            match c {
                Component::Normal(name) => inside.push(name),
                Component::CurDir => {}
                Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                    return Err(IpcError::invalid_input(format!(
                        "export path {path:?} leaves the export folder {}: give a file name \
                         inside it (no \"..\"), or a full path",
                        self.export_dir.display()
                    )));
                }
            }
        }
        if inside.as_os_str().is_empty() {
            return Err(IpcError::invalid_input(format!(
                "export path {path:?} names no file: give a file name"
            )));
        }
        Ok(self.export_dir.join(inside))
    }
}

/// What `dials_clear` removes: `"memory"` empties the view (the history file keeps its rows and
/// they come back at the next start), `"all"` also deletes the stored history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum DialClearScope {
    /// Only the dials held in memory.
    Memory,
    /// Memory and the stored dial history, `permanent` dials included.
    All,
}

/// The answer of `dials_export`: where the file was written and how many dials it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ExportSummary {
    /// The file written (absolute).
    pub path: String,
    /// Dials written (one per line).
    #[ts(type = "number")]
    pub lines: u64,
}

/// The imported capture: its file and how many dials it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ImportSummary {
    /// The file read.
    pub path: String,
    /// Dials imported.
    #[ts(type = "number")]
    pub dials: u64,
}

/// The state of the dials view: the live log's counters, storage trouble, the imported capture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct DialsStatus {
    /// Counters of the live log.
    pub live: DialLogStatus,
    /// Why dials are kept in memory only (the history file could not be opened), if so.
    pub storage_error: Option<String>,
    /// The history was found damaged at this start: what was recovered into the fresh one and
    /// where the damaged file was moved (the view's banner), if so.
    pub recovery: Option<HistoryRecovery>,
    /// The imported capture, if one is loaded.
    pub imported: Option<ImportSummary>,
    /// Where relative export paths are written.
    pub export_dir: String,
    /// When the live view was last cleared with "Clear view" (epoch ms), if it was since the
    /// start: its history begins there until the next start (see `dials_clear`).
    #[ts(type = "number | null")]
    pub view_cleared_ms: Option<i64>,
}

/// Checks a filter line as the person types it: the canonical line, or the error with its
/// position and what was expected there.
pub fn parse_dial_filter(line: &str) -> FilterCheck {
    FilterCheck::of(line)
}

/// Follows a call or a session from dial `d` within a read-only set of dials (an opened support
/// bundle): as [`App::dials_follow`], oldest first, at most [`MAX_FOLLOW`].
///
/// # Errors
/// `internal` if the follow query cannot be compiled; `invalid_input` from the set's history.
pub fn follow_in(log: &ImportedLog, d: &Dial, by: FollowBy) -> Result<DialHistoryPage, IpcError> {
    let Some((q, compiled)) = follow_query(d, by)? else {
        return Ok(single_row_page(d));
    };
    let mut rows: Vec<HistoryRow> = Vec::new();
    let mut cursor: Option<String> = None;
    let mut last = HistoryPage::default();
    for _ in 0..64 {
        last = log
            .history(&compiled, cursor.as_deref(), Some(2000), false)
            .map_err(IpcError::invalid_input)?;
        rows.extend(last.entries.iter().map(HistoryRow::from));
        cursor = last.next.clone();
        if cursor.is_none() || rows.len() >= MAX_FOLLOW {
            break;
        }
    }
    Ok(followed_page(rows, cursor.is_none(), last.newest_seq, &q))
}

/// The query that follows `d`'s call (`by: call`) or ifp/1 session (`by: session`), or `None`
/// when the dial has no call id (or no session): it then follows to itself alone.
fn follow_query(d: &Dial, by: FollowBy) -> Result<Option<(DialQuery, CompiledQuery)>, IpcError> {
    let (field, value) = match by {
        FollowBy::Call => (TextField::Call, d.call_id.to_string()),
        FollowBy::Session => (TextField::Session, d.session.to_string()),
    };
    if value.is_empty() {
        return Ok(None);
    }
    let q = DialQuery::of(Term {
        negated: false,
        atom: Atom::Field(field, value),
    });
    let compiled = CompiledQuery::new(&q, 0, &|_| Vec::new())
        .map_err(|e| IpcError::internal(e.to_string()))?;
    Ok(Some((q, compiled)))
}

/// Drops a live page's rows at or below sequence number `floor` ([`ViewFloor`]) and ends the
/// history there: no `next` once the page reached the floor.
fn cut_at_floor(page: &mut HistoryPage, floor: u64) {
    let held = page.entries.len();
    page.entries.retain(|e| e.seq() > floor);
    let next_at = page
        .next
        .as_deref()
        .and_then(|c| switchboard_dials::history::parse_cursor(c).ok());
    // A cursor `s<n>` reads the rows below `n`: at `floor + 1` or lower, none is above it.
    if page.entries.len() < held || next_at.is_some_and(|n| n <= floor.saturating_add(1)) {
        page.next = None;
    }
}

/// The page of a dial that follows to itself alone (no call id or session; empty `filter`).
fn single_row_page(d: &Dial) -> DialHistoryPage {
    DialHistoryPage {
        rows: vec![HistoryRow::Dial(DialRow::from(d))],
        next: None,
        matched: Some(MatchCount {
            count: 1,
            exact: true,
        }),
        oldest_ms: Some(d.start_ms),
        newest_seq: d.seq.0,
        filter: String::new(),
        skipped: 0,
    }
}

/// A followed call or session as one page, oldest first: `rows` as paged (newest first), cut at
/// [`MAX_FOLLOW`]; `complete` when the paging reached the end (the count is then exact).
fn followed_page(
    mut rows: Vec<HistoryRow>,
    complete: bool,
    newest_seq: u64,
    q: &DialQuery,
) -> DialHistoryPage {
    rows.truncate(MAX_FOLLOW);
    rows.reverse();
    let n = rows.len() as u64;
    DialHistoryPage {
        oldest_ms: rows.first().map(|r| match r {
            HistoryRow::Dial(d) => d.start_ms,
            HistoryRow::Connection(c) => c.at_ms,
        }),
        rows,
        next: None,
        matched: Some(MatchCount {
            count: n,
            exact: complete,
        }),
        newest_seq,
        filter: q.to_string(),
        skipped: 0,
    }
}

impl DialsState {
    /// A page of history from `source` (see [`App::dials_history`]).
    ///
    /// # Errors
    /// As [`App::dials_history`].
    ///
    /// A seek (`q.skip`, [`seek`]) walks the pages below the cursor in the core, without
    /// counting, for at most [`switchboard_dials::history::SEEK_BUDGET`], and answers the page after the rows
    /// it passed over (`skipped` says how many: exact, so the window places the page right even
    /// when the walk stopped early).
    pub async fn history(
        &self,
        query: CompiledQuery,
        q: &HistoryQuery,
        source: DialSource,
    ) -> Result<HistoryPage, IpcError> {
        let count = q.count.unwrap_or(true);
        let skip = u64::from(q.skip.unwrap_or(0).min(MAX_SKIP));
        let started = std::time::Instant::now();
        let (cursor, skipped) = seek(q.cursor.clone(), skip, |c, limit| {
            self.page_of(query.clone(), c, Some(limit), false, source)
        })
        .await?;
        if started.elapsed() > std::time::Duration::from_millis(500) {
            tracing::info!(
                filter = %query.line,
                skip,
                skipped,
                ms = started.elapsed().as_millis() as u64,
                "slow history seek"
            );
        }
        let mut page = self.page_of(query, cursor, q.limit, count, source).await?;
        page.skipped = skipped;
        Ok(page)
    }

    async fn page_of(
        &self,
        query: CompiledQuery,
        cursor: Option<String>,
        limit: Option<u32>,
        count: bool,
        source: DialSource,
    ) -> Result<HistoryPage, IpcError> {
        match source {
            DialSource::Live => {
                let floor = *lock(&self.floor);
                let Some(floor) = floor else {
                    return Ok(self
                        .log
                        .history(query, cursor.as_deref(), limit, count)
                        .await?);
                };
                let mut page = self
                    .log
                    .history(query.clone(), cursor.as_deref(), limit, false)
                    .await?;
                cut_at_floor(&mut page, floor.seq);
                if count {
                    let mut n = 0u64;
                    let walk = self.walk_above(&query, floor.seq, FLOOR_COUNT_BUDGET, |_| n += 1);
                    let (reached, newest) = walk.await?;
                    page.matched = Some(match reached {
                        None => MatchCount {
                            count: n,
                            exact: true,
                        },
                        // Out of time at `r`: the rows above the floor, counted down to `r`,
                        // scaled to the whole span above the floor.
                        Some(r) => {
                            let span = newest.saturating_sub(floor.seq).max(1);
                            let walked = newest.saturating_sub(r).max(1);
                            MatchCount {
                                count: ((n as f64) * (span as f64) / (walked as f64)).round()
                                    as u64,
                                exact: false,
                            }
                        }
                    });
                }
                page.oldest_ms = Some(floor.at_ms);
                Ok(page)
            }
            DialSource::Imported => self
                .imported_capture()?
                .log
                .history(&query, cursor.as_deref(), limit, count)
                .map_err(IpcError::invalid_input),
        }
    }

    /// Reads the live rows matching `query` above sequence number `floor`, newest first, page by
    /// page, calling `each` on each, for at most `budget` (and [`FLOOR_WALK_PAGES`] pages).
    /// Returns `None` when every one was read, else the sequence number it stopped above; and
    /// the newest sequence number when it started.
    ///
    /// # Errors
    /// As [`DialLogHandle::history`].
    async fn walk_above(
        &self,
        query: &CompiledQuery,
        floor: u64,
        budget: std::time::Duration,
        mut each: impl FnMut(&HistoryEntry),
    ) -> Result<(Option<u64>, u64), IpcError> {
        let started = std::time::Instant::now();
        let mut cursor: Option<String> = None;
        let mut newest = 0;
        for _ in 0..FLOOR_WALK_PAGES {
            let mut p = self
                .log
                .history(query.clone(), cursor.as_deref(), Some(2000), false)
                .await?;
            if cursor.is_none() {
                newest = p.newest_seq;
            }
            cut_at_floor(&mut p, floor);
            p.entries.iter().for_each(&mut each);
            let Some(next) = p.next else {
                return Ok((None, newest));
            };
            let at = switchboard_dials::history::parse_cursor(&next).unwrap_or(floor);
            cursor = Some(next);
            if started.elapsed() > budget {
                return Ok((Some(at), newest));
            }
        }
        let at = cursor
            .as_deref()
            .and_then(|c| switchboard_dials::history::parse_cursor(c).ok())
            .unwrap_or(floor);
        Ok((Some(at), newest))
    }

    fn imported_capture(&self) -> Result<Arc<ImportedCapture>, IpcError> {
        self.imported().ok_or_else(|| {
            IpcError::not_found("no capture is imported: import a JSON Lines file first")
        })
    }

    async fn page(&self, filter: DialFilter, source: DialSource) -> Result<DialPage, IpcError> {
        match source {
            DialSource::Live => Ok(self.log.query(filter).await?),
            DialSource::Imported => Ok(self.imported_capture()?.log.query(&filter)),
        }
    }

    /// Finds one dial by id. `start_ms`, when given, narrows the search to dials that started then.
    async fn find(
        &self,
        id: &str,
        start_ms: Option<i64>,
        seq: Option<u64>,
        source: DialSource,
    ) -> Result<Option<Arc<Dial>>, IpcError> {
        let filter = DialFilter {
            from_ms: start_ms,
            to_ms: start_ms.map(|s| s.saturating_add(1)),
            ..DialFilter::default()
        };
        let page = self.page(filter, source).await?;
        if let Some(d) = page.dials.into_iter().find(|d| &*d.id == id) {
            return Ok(Some(d));
        }
        // Beyond the ring: the stored row at `seq`, when it is this dial.
        let (Some(seq), DialSource::Live) = (seq, source) else {
            return Ok(None);
        };
        let stored = self.log.stored_dial(seq).await?;
        Ok(stored
            .filter(|d| &*d.id == id && start_ms.map_or(true, |t| d.start_ms == t))
            .map(Arc::new))
    }

    /// The dials matching `filter` (default: all), newest first, from `source` (default live).
    ///
    /// # Errors
    /// `not_found` when `source` is `imported` and nothing is imported; `internal` when the log has
    /// shut down.
    pub async fn dials_query(
        &self,
        filter: Option<DialFilter>,
        source: Option<DialSource>,
    ) -> Result<DialPage, IpcError> {
        self.page(filter.unwrap_or_default(), source.unwrap_or_default())
            .await
    }

    /// Per-op stats (count, outcomes, error rate, p50/p95/p99 by nearest rank) over the dials
    /// matching `filter`, sorted by op.
    ///
    /// # Errors
    /// As [`dials_query`].
    pub async fn dials_stats(
        &self,
        filter: Option<DialFilter>,
        source: Option<DialSource>,
    ) -> Result<Vec<OpStats>, IpcError> {
        let filter = filter.unwrap_or_default();
        match source.unwrap_or_default() {
            DialSource::Live => Ok(self.log.stats(filter).await?),
            DialSource::Imported => Ok(self.imported_capture()?.log.stats(&filter)),
        }
    }

    /// Per-op stats over the whole history (the ring and SQLite, or the imported capture)
    /// matching a compiled filter line; see [`HistoryStats`].
    ///
    /// # Errors
    /// As [`DialsState::dials_query`]; `io` when SQLite fails.
    pub async fn history_stats(
        &self,
        query: CompiledQuery,
        source: DialSource,
    ) -> Result<HistoryStats, IpcError> {
        match source {
            DialSource::Live => {
                let filter = query.line.clone();
                let floor = *lock(&self.floor);
                if let Some(floor) = floor {
                    // After "Clear view": the dials above the floor, newest first, as far as
                    // the budget goes.
                    let mut tally = switchboard_dials::StatsTally::default();
                    let each = |e: &HistoryEntry| {
                        if let HistoryEntry::Dial(d) = e {
                            tally.add_dial(d);
                        }
                    };
                    let (reached, _) = self
                        .walk_above(&query, floor.seq, HISTORY_STATS_BUDGET, each)
                        .await?;
                    return Ok(HistoryStats {
                        dials: tally.dials(),
                        ops: tally.finish(),
                        complete: reached.is_none(),
                        filter,
                    });
                }
                let (ops, dials, complete) =
                    self.log.history_stats(query, HISTORY_STATS_BUDGET).await?;
                Ok(HistoryStats {
                    ops,
                    dials,
                    complete,
                    filter,
                })
            }
            DialSource::Imported => Ok(HistoryStats::of_capture(
                &self.imported_capture()?.log,
                &query,
            )),
        }
    }

    /// Starts a view of `filter` streamed over `channel`: a `snapshot` message, then `batch`
    /// messages at most 30 times a second (see [`DialBatchMsg`]). Returns the subscription id. For
    /// the `imported` source only the snapshot is sent (a capture does not change).
    ///
    /// The stream ends when a send fails (the window went away) or on `dials_unsubscribe`.
    ///
    /// # Errors
    /// As [`dials_query`].
    pub async fn dials_subscribe<E: std::fmt::Display + 'static>(
        &self,
        filter: Option<DialFilter>,
        source: Option<DialSource>,
        sink: impl FnMut(DialBatchMsg) -> Result<(), E> + Send + 'static,
    ) -> Result<u64, IpcError> {
        self.dials_subscribe_with(filter, None, source, sink).await
    }

    /// As [`DialsState::dials_subscribe`]; with `line` (a compiled filter line) the live view
    /// sends an empty snapshot and then only new dials matching the line (page the history
    /// with `dials_history`), in batches at most [`WINDOW_BATCH_INTERVAL`] apart, each with at
    /// most [`WINDOW_BATCH_ROWS`] of the newest (the others counted as `skipped`); an imported
    /// capture's snapshot holds its matching dials.
    ///
    /// # Errors
    /// As [`DialsState::dials_subscribe`].
    pub async fn dials_subscribe_with<E: std::fmt::Display + 'static>(
        &self,
        filter: Option<DialFilter>,
        line: Option<CompiledQuery>,
        source: Option<DialSource>,
        sink: impl FnMut(DialBatchMsg) -> Result<(), E> + Send + 'static,
    ) -> Result<u64, IpcError> {
        let filter = filter.unwrap_or_default();
        match source.unwrap_or_default() {
            DialSource::Live => {
                let (sub, max_rows) = match line {
                    Some(q) => {
                        let options = SubscribeOptions {
                            interval: Some(WINDOW_BATCH_INTERVAL),
                            ..SubscribeOptions::default()
                        };
                        let sub = self.log.subscribe_line(q, options).await?;
                        (sub, Some(WINDOW_BATCH_ROWS))
                    }
                    None => {
                        let sub = self
                            .log
                            .subscribe(filter, SubscribeOptions::default())
                            .await?;
                        (sub, None)
                    }
                };
                Ok(self.start_forwarding_newest(sub, max_rows, sink))
            }
            DialSource::Imported => {
                let capture = self.imported_capture()?;
                let mut page = capture.log.query(&filter);
                if let Some(q) = &line {
                    page.dials.retain(|d| q.matches_dial(d));
                    page.total = page.dials.len() as u64;
                }
                let mut sink = sink;
                sink(DialBatchMsg::snapshot(0, &page))
                    .map_err(|e| IpcError::internal(format!("sending the snapshot: {e}")))?;
                Ok(0)
            }
        }
    }

    /// Ends live view `id`; `false` when it had already ended.
    pub fn dials_unsubscribe(&self, id: u64) -> bool {
        self.unsubscribe(id)
    }

    /// One whole dial (request, response, error) by id, or `null` when it is no longer held
    /// or stored. `start_ms` (the row's start) makes the look-up in the ring cheap; `seq` (the
    /// row's place in the timeline, from a history page) finds a live dial the ring no longer
    /// holds in SQLite (by its rowid).
    ///
    /// # Errors
    /// As [`dials_query`].
    pub async fn dials_get(
        &self,
        id: String,
        start_ms: Option<i64>,
        seq: Option<u64>,
        source: Option<DialSource>,
    ) -> Result<Option<Arc<Dial>>, IpcError> {
        self.find(&id, start_ms, seq, source.unwrap_or_default())
            .await
    }

    /// One dial's spec conformance (`phone-line.md`): its op's class and every finding (what is
    /// wrong, the JSON path, the spec's line and words), checked with the same
    /// [`ScopeBook::builtin`] as the row's mark; `null` when the dial is no longer held.
    ///
    /// # Errors
    /// As [`dials_query`].
    pub async fn dial_conformance(
        &self,
        id: String,
        start_ms: Option<i64>,
        seq: Option<u64>,
        source: Option<DialSource>,
    ) -> Result<Option<DialConformance>, IpcError> {
        let d = self
            .find(&id, start_ms, seq, source.unwrap_or_default())
            .await?;
        Ok(d.map(|d| check_dial(&d, ScopeBook::builtin())))
    }

    /// Exports the dials matching `filter` (default all) from `source` to `path` as JSON Lines,
    /// newest first, atomically (the file `0600` on Unix). A relative `path` is written in the
    /// export folder (`<data folder>/exports`, created `0700` when missing) and may not leave it
    /// ([`DialsState::resolve_export_path`]).
    ///
    /// # Errors
    /// `invalid_input` for an empty path or a relative path leaving the export folder; `io` naming the file when it cannot be written;
    /// `not_found` when exporting an absent capture.
    pub async fn dials_export(
        &self,
        filter: Option<DialFilter>,
        path: String,
        source: Option<DialSource>,
    ) -> Result<ExportSummary, IpcError> {
        self.dials_export_with(filter, None, path, source, false, true)
            .await
    }

    /// As [`DialsState::dials_export`], with two more choices: `query` (a compiled filter
    /// line) exports every matching dial of the whole history (the ring and SQLite, newest
    /// first; connection events are not exported) instead of `filter`'s held dials, and
    /// `redact` replaces the request and response values by type markers, keys and shapes kept
    /// ([`switchboard_dials::jsonl::redact_value`]). Without `replace`, a file already at the path is
    /// left alone and the export fails (`conflict`), so the window can ask first.
    ///
    /// # Errors
    /// As [`DialsState::dials_export`]; `conflict` naming the file when it exists and `replace`
    /// is false.
    pub async fn dials_export_with(
        &self,
        filter: Option<DialFilter>,
        query: Option<CompiledQuery>,
        path: String,
        source: Option<DialSource>,
        redact: bool,
        replace: bool,
    ) -> Result<ExportSummary, IpcError> {
        if path.trim().is_empty() {
            return Err(IpcError::invalid_input(
                "export path is empty: give a file name",
            ));
        }
        let target = self.resolve_export_path(path.trim())?;
        if !replace && std::fs::symlink_metadata(&target).is_ok() {
            return Err(IpcError::new(
                IpcErrorKind::Conflict,
                format!(
                    "{} already exists: choose another name, or replace it",
                    target.display()
                ),
            ));
        }
        if target.starts_with(&self.export_dir) {
            switchboard_wire::fsutil::make_private_dir(&self.export_dir).map_err(|e| {
                IpcError::io(format!(
                    "creating the export folder {}: {e}",
                    self.export_dir.display()
                ))
            })?;
        }
        let source = source.unwrap_or_default();
        let dials: Vec<Arc<Dial>> = match query {
            Some(q) => {
                let mut out = Vec::new();
                let mut cursor: Option<String> = None;
                // Bounded: each page moves the cursor down; 10^6 pages of up to 2000 rows.
                for _ in 0..1_000_000u32 {
                    let hq = HistoryQuery {
                        filter: String::new(),
                        cursor: cursor.clone(),
                        limit: Some(switchboard_dials::history::MAX_PAGE),
                        count: Some(false),
                        skip: None,
                    };
                    let page = self.history(q.clone(), &hq, source).await?;
                    out.extend(page.entries.into_iter().filter_map(|e| match e {
                        HistoryEntry::Dial(d) => Some(d),
                        HistoryEntry::Connection(_) => None,
                    }));
                    cursor = page.next;
                    if cursor.is_none() {
                        break;
                    }
                }
                out
            }
            None => {
                let filter = filter.unwrap_or_default();
                self.page(filter, source).await?.dials
            }
        };
        let t = target.clone();
        let lines = tokio::task::spawn_blocking(move || {
            switchboard_dials::jsonl::export_jsonl_file_with(&dials, &t, redact)
        })
        .await
        .map_err(|e| IpcError::internal(format!("export task: {e}")))??;
        Ok(ExportSummary {
            path: target.display().to_string(),
            lines,
        })
    }

    /// Imports a JSON Lines file of dials into the read-only `imported` view (replacing any earlier
    /// capture). All or nothing: a file with any bad line imports nothing.
    ///
    /// # Errors
    /// `invalid_input` for an empty path or bad lines (the message names the first bad line and
    /// field and the count); `io` when the file cannot be read.
    pub async fn dials_import(&self, path: String) -> Result<ImportSummary, IpcError> {
        if path.trim().is_empty() {
            return Err(IpcError::invalid_input(
                "import path is empty: give a JSON Lines file",
            ));
        }
        let file = PathBuf::from(path.trim());
        let f = file.clone();
        let log = tokio::task::spawn_blocking(move || ImportedLog::read_jsonl_file(&f))
            .await
            .map_err(|e| IpcError::internal(format!("import task: {e}")))??;
        let summary = ImportSummary {
            path: file.display().to_string(),
            dials: log.len() as u64,
        };
        self.set_imported(Some(ImportedCapture { path: file, log }));
        Ok(summary)
    }

    /// Closes the imported capture (the live view is untouched).
    pub fn dials_close_import(&self) {
        self.set_imported(None);
    }

    /// Clears the live view (`memory`: from now on its history pages, counts and stats hold
    /// only newer rows, until the next start; nothing is deleted, see [`ViewFloor`]) or deletes
    /// the whole history (`all`, which also ends an earlier `memory` clear); returns the stored
    /// rows deleted. An imported capture is never cleared (it is read only). Open views keep
    /// their rows: re-subscribe to see the cleared log.
    ///
    /// # Errors
    /// `io` when the history file cannot be changed; `internal` when the log has shut down.
    pub async fn dials_clear(&self, scope: DialClearScope) -> Result<u64, IpcError> {
        match scope {
            DialClearScope::Memory => {
                let all = CompiledQuery::new(&DialQuery::default(), 0, &|_: &str| Vec::new())
                    .map_err(|e| IpcError::internal(format!("the empty filter line: {e}")))?;
                let newest = self
                    .log
                    .history(all, None, Some(1), false)
                    .await?
                    .newest_seq;
                *lock(&self.floor) = Some(ViewFloor {
                    seq: newest,
                    at_ms: self.clock.now_ms_i64(),
                });
                Ok(0)
            }
            DialClearScope::All => {
                let deleted = self.log.clear(ClearScope::All).await?;
                *lock(&self.floor) = None;
                Ok(deleted)
            }
        }
    }

    /// The live log's counters, storage trouble and the imported capture.
    ///
    /// # Errors
    /// `internal` when the log has shut down.
    pub async fn dials_status(&self) -> Result<DialsStatus, IpcError> {
        Ok(DialsStatus {
            live: self.log.status().await?,
            storage_error: self.storage_error.clone(),
            recovery: self.recovery.clone(),
            imported: self.imported().map(|c| ImportSummary {
                path: c.path.display().to_string(),
                dials: c.log.len() as u64,
            }),
            export_dir: self.export_dir.display().to_string(),
            view_cleared_ms: lock(&self.floor).map(|f| f.at_ms),
        })
    }
}

impl App {
    /// Parses and compiles a filter line for now, with `phone:` names resolved to the paired
    /// phones' device ids.
    ///
    /// # Errors
    /// `invalid_input` with the parser's message (column and what was expected).
    pub fn compile_filter(&self, line: &str) -> Result<CompiledQuery, IpcError> {
        let q =
            DialQuery::parse(line).map_err(|e| IpcError::invalid_input(format!("filter: {e}")))?;
        let now = self.config.clock.now_ms_i64();
        CompiledQuery::new(&q, now, &|name| self.phones.ids_named(name))
            .map_err(|e| IpcError::invalid_input(format!("filter: {e}")))
    }

    /// One page of the whole dial history (the live log's ring and SQLite, or the imported
    /// capture) matching the query's filter line, newest first; see [`DialHistoryPage`].
    ///
    /// # Errors
    /// `invalid_input` for a filter line that does not parse (the message names the column and
    /// what was expected; `parse_dial_filter` gives the position) or a cursor no page gave;
    /// `not_found` for an absent capture; `io` when SQLite fails; `internal` when the log has
    /// shut down.
    pub async fn dials_history(
        &self,
        query: HistoryQuery,
        source: Option<DialSource>,
    ) -> Result<DialHistoryPage, IpcError> {
        let compiled = self.compile_filter(&query.filter)?;
        let page = self
            .dials()?
            .history(compiled, &query, source.unwrap_or_default())
            .await?;
        Ok(DialHistoryPage::of(&page))
    }

    /// Per-op stats over the whole dial history matching the filter line `line` (empty: every
    /// dial); see [`HistoryStats`].
    ///
    /// # Errors
    /// `invalid_input` for a line that does not parse; as [`App::dials_history`].
    pub async fn dials_history_stats(
        &self,
        line: String,
        source: Option<DialSource>,
    ) -> Result<HistoryStats, IpcError> {
        let compiled = self.compile_filter(&line)?;
        self.dials()?
            .history_stats(compiled, source.unwrap_or_default())
            .await
    }

    /// Follows a call or a session from dial `id`: every dial with its `callId` (`by: call`) or
    /// of its ifp/1 session (`by: session`), **oldest first**, at most [`MAX_FOLLOW`]. The
    /// page's `filter` is the filter line that shows the same (`call:<id>`, `session:<id>`).
    /// A dial with no `callId` (or no session) follows to itself alone (`filter` empty).
    ///
    /// # Errors
    /// `not_found` when the dial is no longer held or stored; as [`App::dials_history`].
    pub async fn dials_follow(
        &self,
        id: &str,
        start_ms: Option<i64>,
        by: FollowBy,
        source: Option<DialSource>,
    ) -> Result<DialHistoryPage, IpcError> {
        let source = source.unwrap_or_default();
        let dials = self.dials()?;
        let Some(d) = dials.find(id, start_ms, None, source).await? else {
            return Err(IpcError::not_found(format!(
                "dial {id} is no longer held or stored"
            )));
        };
        let Some((q, compiled)) = follow_query(&d, by)? else {
            return Ok(single_row_page(&d));
        };
        let mut rows: Vec<HistoryRow> = Vec::new();
        let mut cursor: Option<String> = None;
        let mut last = HistoryPage::default();
        for _ in 0..64 {
            let hq = HistoryQuery {
                filter: String::new(),
                cursor: cursor.clone(),
                limit: Some(2000),
                count: Some(false),
                skip: None,
            };
            last = dials.history(compiled.clone(), &hq, source).await?;
            rows.extend(last.entries.iter().map(HistoryRow::from));
            cursor = last.next.clone();
            if cursor.is_none() || rows.len() >= MAX_FOLLOW {
                break;
            }
        }
        Ok(followed_page(rows, cursor.is_none(), last.newest_seq, &q))
    }

    /// Exports dials to `path` as JSON Lines (see [`DialsState::dials_export_with`]): with a
    /// filter `line`, every matching dial of the whole history; else `filter`'s held dials;
    /// `redact` replaces request and response values by type markers; `replace` (default false)
    /// overwrites a file already at the path.
    ///
    /// # Errors
    /// `invalid_input` for a filter line that does not parse; `conflict` when the file exists
    /// and `replace` is not true; as [`DialsState::dials_export`].
    pub async fn dials_export(
        &self,
        filter: Option<DialFilter>,
        path: String,
        source: Option<DialSource>,
        line: Option<String>,
        redact: Option<bool>,
        replace: Option<bool>,
    ) -> Result<ExportSummary, IpcError> {
        let query = match line {
            Some(l) => Some(self.compile_filter(&l)?),
            None => None,
        };
        self.dials()?
            .dials_export_with(
                filter,
                query,
                path,
                source,
                redact.unwrap_or(false),
                replace.unwrap_or(false),
            )
            .await
    }

    /// The dials state, or `internal` when the dial log did not start.
    ///
    /// # Errors
    /// `internal` when even the in-memory dial log could not start.
    pub fn dials(&self) -> Result<&DialsState, IpcError> {
        self.dials
            .as_ref()
            .ok_or_else(|| IpcError::internal("the dial log did not start; see the app's log"))
    }

    /// The banner of dial `dial_id`, as the dial inspector shows it: the banner the hub raised
    /// (or repeated) for this dial, when the bridge-status store still knows what the dial did,
    /// with where that banner stands now; else (an imported capture, a dial from before the app
    /// started, or one the store no longer remembers) the banner derived from its error text
    /// with the extension directory the hub judges that phone's results with (the built-in
    /// manifests for an imported capture or a phone that sent none), marked as derived. `null`
    /// when the hub judged the dial and raised none, when a derivation gives none, or when the
    /// dial is no longer held.
    ///
    /// # Errors
    /// As [`DialsState::dials_query`].
    pub async fn dial_banner(
        &self,
        dial_id: &str,
        start_ms: Option<i64>,
        seq: Option<u64>,
        source: Option<DialSource>,
    ) -> Result<Option<DialBanner>, IpcError> {
        let source = source.unwrap_or_default();
        let Some(d) = self.dials()?.find(dial_id, start_ms, seq, source).await? else {
            return Ok(None);
        };
        if source == DialSource::Live {
            let judged = self.bridge.lock_store().dial_judgement(&d.phone, &d.id);
            match judged {
                Some((DialJudgement::Banner(banner), standing)) => {
                    return Ok(Some(DialBanner {
                        banner: *banner,
                        origin: BannerOrigin::RaisedByHub,
                        standing,
                    }))
                }
                Some((DialJudgement::NoBanner(_), _)) => return Ok(None),
                None => {}
            }
        }
        let dir = match source {
            DialSource::Live => self.extensions_of(&d.phone),
            DialSource::Imported => None,
        };
        let dir =
            dir.unwrap_or_else(|| switchboard_domain::bridge::explain::builtin_directory().clone());
        Ok(banner_for_dial(&d, &dir).map(|banner| DialBanner {
            banner,
            origin: BannerOrigin::Derived,
            standing: None,
        }))
    }
}
