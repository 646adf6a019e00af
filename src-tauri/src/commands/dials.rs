//! Commands of the "Live dials" view: query, stats, live streaming over a `tauri::ipc::Channel`,
//! export to and import from JSON Lines, clear, one whole dial, and the bridge banner of a dial
//! that failed on permissions.
//!
//! Every command that reads dials takes a `source`: `"live"` (default, the app's dial log) or
//! `"imported"` (the read-only capture loaded by [`dials_import`]). Nothing here writes to an
//! imported capture, and nothing here can approve, reject or cancel anything on a phone.
//!
//! Spec: `phone-line.md`, "Operations" (what a dial is), "Good neighbour notes" (slow = over one
//! second; the caller gives up after 15 s), "Failure modes and the bridge banner" (banners).

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use switchboard::bridge::{derive_banner, Banner, CallPath, Derived, ExtensionDirectory};
use switchboard::dials::{
    ClearScope, Dial, DialFilter, DialLogStatus, DialOutcome, DialPage, ImportedLog, OpStats,
    SubscribeOptions,
};
use switchboard::error::IpcError;
use tauri::ipc::Channel;
use tauri::State;
use ts_rs::TS;

use crate::dials::{DialBatchMsg, DialSource, DialsState, ImportedCapture};

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
    /// The imported capture, if one is loaded.
    pub imported: Option<ImportSummary>,
    /// Where relative export paths are written.
    pub export_dir: String,
}

fn imported(state: &DialsState) -> Result<Arc<ImportedCapture>, IpcError> {
    state.imported().ok_or_else(|| {
        IpcError::new(
            "not_found",
            "no capture is imported: import a JSON Lines file first",
        )
    })
}

async fn page(
    state: &DialsState,
    filter: DialFilter,
    source: DialSource,
) -> Result<DialPage, IpcError> {
    match source {
        DialSource::Live => Ok(state.log.query(filter).await?),
        DialSource::Imported => Ok(imported(state)?.log.query(&filter)),
    }
}

/// Finds one dial by id. `start_ms`, when given, narrows the search to dials that started then.
async fn find(
    state: &DialsState,
    id: &str,
    start_ms: Option<i64>,
    source: DialSource,
) -> Result<Option<Arc<Dial>>, IpcError> {
    let filter = DialFilter {
        from_ms: start_ms,
        to_ms: start_ms.map(|s| s.saturating_add(1)),
        ..DialFilter::default()
    };
    let page = page(state, filter, source).await?;
    Ok(page.dials.into_iter().find(|d| &*d.id == id))
}

/// The dials matching `filter` (default: all), newest first, from `source` (default live).
///
/// # Errors
/// `not_found` when `source` is `imported` and nothing is imported; `internal` when the log has
/// shut down.
#[tauri::command]
pub async fn dials_query(
    state: State<'_, DialsState>,
    filter: Option<DialFilter>,
    source: Option<DialSource>,
) -> Result<DialPage, IpcError> {
    page(
        &state,
        filter.unwrap_or_default(),
        source.unwrap_or_default(),
    )
    .await
}

/// Per-op stats (count, outcomes, error rate, p50/p95/p99 by nearest rank) over the dials
/// matching `filter`, sorted by op.
///
/// # Errors
/// As [`dials_query`].
#[tauri::command]
pub async fn dials_stats(
    state: State<'_, DialsState>,
    filter: Option<DialFilter>,
    source: Option<DialSource>,
) -> Result<Vec<OpStats>, IpcError> {
    let filter = filter.unwrap_or_default();
    match source.unwrap_or_default() {
        DialSource::Live => Ok(state.log.stats(filter).await?),
        DialSource::Imported => Ok(imported(&state)?.log.stats(&filter)),
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
#[tauri::command]
pub async fn dials_subscribe(
    state: State<'_, DialsState>,
    filter: Option<DialFilter>,
    source: Option<DialSource>,
    channel: Channel<DialBatchMsg>,
) -> Result<u64, IpcError> {
    let filter = filter.unwrap_or_default();
    match source.unwrap_or_default() {
        DialSource::Live => {
            let sub = state
                .log
                .subscribe(filter, SubscribeOptions::default())
                .await?;
            Ok(state.start_forwarding(sub, move |m| channel.send(m)))
        }
        DialSource::Imported => {
            let capture = imported(&state)?;
            let page = capture.log.query(&filter);
            channel
                .send(DialBatchMsg::snapshot(0, &page))
                .map_err(|e| IpcError::internal(format!("sending the snapshot: {e}")))?;
            Ok(0)
        }
    }
}

/// Ends live view `id`; `false` when it had already ended.
#[tauri::command]
pub fn dials_unsubscribe(state: State<'_, DialsState>, id: u64) -> bool {
    state.unsubscribe(id)
}

/// One whole dial (request, response, error) by id, or `null` when it is no longer held.
/// `start_ms` (the row's start) makes the look-up cheap.
///
/// # Errors
/// As [`dials_query`].
#[tauri::command]
pub async fn dials_get(
    state: State<'_, DialsState>,
    id: String,
    start_ms: Option<i64>,
    source: Option<DialSource>,
) -> Result<Option<Arc<Dial>>, IpcError> {
    find(&state, &id, start_ms, source.unwrap_or_default()).await
}

/// Exports the dials matching `filter` (default all) from `source` to `path` as JSON Lines,
/// newest first, atomically. A relative `path` is written in the export folder
/// (`<data folder>/exports`, created when missing).
///
/// # Errors
/// `invalid_input` for an empty path; `io` naming the file when it cannot be written;
/// `not_found` when exporting an absent capture.
#[tauri::command]
pub async fn dials_export(
    state: State<'_, DialsState>,
    filter: Option<DialFilter>,
    path: String,
    source: Option<DialSource>,
) -> Result<ExportSummary, IpcError> {
    if path.trim().is_empty() {
        return Err(IpcError::invalid_input(
            "export path is empty: give a file name",
        ));
    }
    let target = state.resolve_export_path(path.trim());
    if target.starts_with(&state.export_dir) {
        std::fs::create_dir_all(&state.export_dir).map_err(|e| {
            IpcError::io(format!(
                "creating the export folder {}: {e}",
                state.export_dir.display()
            ))
        })?;
    }
    let filter = filter.unwrap_or_default();
    let lines = match source.unwrap_or_default() {
        DialSource::Live => state.log.export_jsonl(filter, target.clone()).await?,
        DialSource::Imported => {
            let page = imported(&state)?.log.query(&filter);
            let t = target.clone();
            tauri::async_runtime::spawn_blocking(move || {
                switchboard::dials::jsonl::export_jsonl_file(&page.dials, &t)
            })
            .await
            .map_err(|e| IpcError::internal(format!("export task: {e}")))??
        }
    };
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
#[tauri::command]
pub async fn dials_import(
    state: State<'_, DialsState>,
    path: String,
) -> Result<ImportSummary, IpcError> {
    if path.trim().is_empty() {
        return Err(IpcError::invalid_input(
            "import path is empty: give a JSON Lines file",
        ));
    }
    let file = PathBuf::from(path.trim());
    let f = file.clone();
    let log = tauri::async_runtime::spawn_blocking(move || ImportedLog::read_jsonl_file(&f))
        .await
        .map_err(|e| IpcError::internal(format!("import task: {e}")))??;
    let summary = ImportSummary {
        path: file.display().to_string(),
        dials: log.len() as u64,
    };
    state.set_imported(Some(ImportedCapture { path: file, log }));
    Ok(summary)
}

/// Closes the imported capture (the live view is untouched).
#[tauri::command]
pub fn dials_close_import(state: State<'_, DialsState>) {
    state.set_imported(None);
}

/// Clears the live log (`memory` or `all`, see [`DialClearScope`]); returns the stored rows
/// deleted. An imported capture is never cleared (it is read only). Open views keep their rows:
/// re-subscribe to see the cleared log.
///
/// # Errors
/// `io` when the history file cannot be changed; `internal` when the log has shut down.
#[tauri::command]
pub async fn dials_clear(
    state: State<'_, DialsState>,
    scope: DialClearScope,
) -> Result<u64, IpcError> {
    let scope = match scope {
        DialClearScope::Memory => ClearScope::Memory,
        DialClearScope::All => ClearScope::All,
    };
    Ok(state.log.clear(scope).await?)
}

/// The live log's counters, storage trouble and the imported capture.
///
/// # Errors
/// `internal` when the log has shut down.
#[tauri::command]
pub async fn dials_status(state: State<'_, DialsState>) -> Result<DialsStatus, IpcError> {
    Ok(DialsStatus {
        live: state.log.status().await?,
        storage_error: state.storage_error.clone(),
        imported: state.imported().map(|c| ImportSummary {
            path: c.path.display().to_string(),
            dials: c.log.len() as u64,
        }),
        export_dir: state.export_dir.display().to_string(),
    })
}

/// The bridge banner a failed dial raises: `None` unless the dial failed (`error`, `tool_error`
/// or `timed_out`) with an error text that is an actionable host permission failure.
pub fn banner_for(dial: &Dial, dir: &ExtensionDirectory) -> Option<Banner> {
    if dial.outcome == DialOutcome::Ok {
        return None;
    }
    let text = dial.error.as_deref()?;
    let parsed = switchboard::host_error::parse(text);
    let path = CallPath::new(&*dial.caller, &*dial.endpoint);
    let at = u64::try_from(dial.start_ms).unwrap_or(0);
    match derive_banner(&path, &parsed, dir, at) {
        Derived::Banner(b) => Some(*b),
        Derived::NothingGrantable { .. } | Derived::NotPermission => None,
    }
}

/// The banner of dial `dial_id` when it failed on permissions (its error text parsed with the
/// host-error classifier, the banner derived as the Bridge view derives it; names from the known
/// phone lines, permissions unchecked against manifests); `null` otherwise or when the dial is
/// no longer held.
///
/// # Errors
/// As [`dials_query`].
#[tauri::command]
pub async fn dial_banner(
    state: State<'_, DialsState>,
    dial_id: String,
    start_ms: Option<i64>,
    source: Option<DialSource>,
) -> Result<Option<Banner>, IpcError> {
    let dial = find(&state, &dial_id, start_ms, source.unwrap_or_default()).await?;
    Ok(dial.and_then(|d| banner_for(&d, &ExtensionDirectory::new())))
}
