//! The "Live dials" view: the app's one [`DialLogHandle`], the imported capture, the live
//! subscriptions streaming to the window, the forwarding loop, and what the view's commands do
//! (query, stats, stream, one whole dial, export, import, clear, status, a dial's banner).
//!
//! Why it exists: the dial log (`switchboard_dials`) is an actor on a tokio runtime with no notion
//! of windows. This module starts it on the app's runtime (data folder = the link's folder,
//! ring capacity = `settings.dial_ring_capacity`), keeps what the view's commands share
//! ([`DialsState`]), and turns a [`Subscription`](switchboard_dials::Subscription) into
//! messages for a sink such as the shell's `tauri::ipc::Channel` ([`forward`]).
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
//! comfortably in the page; the inspector fetches one whole [`Dial`](switchboard_dials::Dial)
//! with `dials_get`.
//!
//! Nothing here can approve, reject or cancel anything on a phone: the view only mirrors.
//!
//! ## Files
//! This file keeps [`DialsState`] (what the commands share, started once with the app), the
//! source a command reads ([`DialSource`]) and the view's status. One concept a file: `rows.rs`
//! (the rows the window shows), `batches.rs` (the snapshot and batch messages and their bounds),
//! `forwarder.rs` (subscriptions streamed to a sink), `queries.rs` (reads of the held dials and
//! the history), `floor.rs` ("Clear view"), `follow.rs` (a call or session followed),
//! `export.rs`, `import.rs` (the imported capture) and `banner.rs` (a dial's banner).

mod banner;
mod batches;
mod export;
mod floor;
mod follow;
mod forwarder;
mod import;
mod queries;
mod rows;

pub use banner::{BannerOrigin, DialBanner};
pub use batches::{
    DialBatchMsg, RateMeter, WindowPace, PACE_RATE_WINDOW, WINDOW_BATCH_INTERVAL,
    WINDOW_BATCH_ROWS, WINDOW_BUSY_ROWS_PER_S, WINDOW_HANDOVER_INTERVAL, WINDOW_QUICK_INTERVAL,
    WINDOW_QUIET_INTERVAL,
};
pub use export::{ExportRequest, ExportSummary};
pub use floor::DialClearScope;
pub use follow::{follow_in, FollowBy, MAX_FOLLOW};
pub use forwarder::{forward, forward_newest, forward_paced, ForwardEnd};
pub use import::{ImportSummary, ImportedCapture};
pub use queries::{parse_dial_filter, HISTORY_STATS_BUDGET};
pub use rows::{DialHistoryPage, DialRow, HistoryRow, HistoryStats};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;
use ts_rs::TS;

use switchboard_dials::repair::{self, HistoryRecovery};
use switchboard_dials::{DialLog, DialLogConfig, DialLogHandle, DialLogStatus};
use switchboard_wire::error::IpcError;
use switchboard_wire::sync::lock;

use super::App;
use floor::ViewFloor;

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

impl App {
    /// The dials state, or `internal` when the dial log did not start.
    ///
    /// # Errors
    /// `internal` when even the in-memory dial log could not start.
    pub fn dials(&self) -> Result<&DialsState, IpcError> {
        self.dials
            .as_ref()
            .ok_or_else(|| IpcError::internal("the dial log did not start; see the app's log"))
    }
}
