//! Commands of the "Live dials" view ([`switchboard::app::dials`]): query, stats, live
//! streaming over a `tauri::ipc::Channel`, export, import, clear, one whole dial, and the
//! bridge banner of a dial that failed on permissions. Every command that reads dials takes a
//! `source`: `"live"` (default) or `"imported"` (read only). Nothing here can approve, reject or
//! cancel anything on a phone.

use std::sync::Arc;

use switchboard::app::dials::{
    DialBanner, DialBatchMsg, DialClearScope, DialHistoryPage, DialSource, DialsStatus,
    ExportRequest, ExportSummary, FollowBy, HistoryStats, ImportSummary,
};
use switchboard::dials::{Dial, DialFilter, DialPage, FilterCheck, HistoryQuery, OpStats};
use switchboard::error::IpcError;
use tauri::ipc::Channel;

use super::Core;

/// The dials matching `filter` (default: all), newest first.
///
/// # Errors
/// `not_found` for an absent capture; `internal` when the log has shut down.
#[tauri::command]
pub async fn dials_query(
    core: Core<'_>,
    filter: Option<DialFilter>,
    source: Option<DialSource>,
) -> Result<DialPage, IpcError> {
    core.dials_query_shown(filter, source).await
}

/// Per-op stats over the dials matching `filter`, sorted by op.
///
/// # Errors
/// As [`dials_query`].
#[tauri::command]
pub async fn dials_stats(
    core: Core<'_>,
    filter: Option<DialFilter>,
    source: Option<DialSource>,
) -> Result<Vec<OpStats>, IpcError> {
    core.dials_stats_shown(filter, source).await
}

/// Per-op stats over the whole dial history matching the filter line `line` (the ring and
/// SQLite, the imported capture, or an opened bundle's dials): `{ ops, dials, complete, filter }`.
///
/// # Errors
/// `invalid_input` for a line that does not parse; as [`dials_query`].
#[tauri::command]
pub async fn dials_history_stats(
    core: Core<'_>,
    line: String,
    source: Option<DialSource>,
) -> Result<HistoryStats, IpcError> {
    core.dials_history_stats_shown(line, source).await
}

/// Starts a view of `filter` streamed over `channel` (a snapshot, then batches at most 30
/// times a second); returns the subscription id. With a filter `line` the snapshot is empty
/// and only new dials matching the line follow (page the history with `dials_history`).
///
/// # Errors
/// As [`dials_query`]; `invalid_input` for a line that does not parse.
#[tauri::command]
pub async fn dials_subscribe(
    core: Core<'_>,
    filter: Option<DialFilter>,
    source: Option<DialSource>,
    line: Option<String>,
    channel: Channel<DialBatchMsg>,
) -> Result<u64, IpcError> {
    core.dials_subscribe_shown(filter, source, line, move |m| channel.send(m))
        .await
}

/// One page of the whole history (dials and connection events), newest first, matching the
/// query's filter line, below its cursor.
///
/// # Errors
/// `invalid_input` for a filter line that does not parse or a bad cursor; as [`dials_query`].
#[tauri::command]
pub async fn dials_history(
    core: Core<'_>,
    query: HistoryQuery,
    source: Option<DialSource>,
) -> Result<DialHistoryPage, IpcError> {
    core.dials_history_shown(query, source).await
}

/// Every dial of the same call (`by: "call"`) or ifp/1 session (`by: "session"`) as dial
/// `id`, oldest first.
///
/// # Errors
/// `not_found` when the dial is gone; as [`dials_history`].
#[tauri::command]
pub async fn dials_follow(
    core: Core<'_>,
    id: String,
    start_ms: Option<i64>,
    by: FollowBy,
    source: Option<DialSource>,
) -> Result<DialHistoryPage, IpcError> {
    core.dials_follow_shown(&id, start_ms, by, source).await
}

/// Checks a filter line as it is typed: its canonical form, or the error with its position.
#[tauri::command]
pub fn parse_dial_filter(line: String) -> FilterCheck {
    switchboard::app::dials::parse_dial_filter(&line)
}

/// The filter line's help text (the grammar in short).
#[tauri::command]
pub fn dial_filter_help() -> String {
    switchboard::dials::FILTER_HELP.to_owned()
}

/// Ends live view `id`; `false` when it had already ended.
#[tauri::command]
pub fn dials_unsubscribe(core: Core<'_>, id: u64) -> bool {
    core.dials().is_ok_and(|d| d.dials_unsubscribe(id))
}

/// One whole dial by id, or `null` when it is no longer held or stored. `seq` (the row's place
/// in the timeline, from a history page) finds a dial the ring no longer holds in SQLite.
///
/// # Errors
/// As [`dials_query`].
#[tauri::command]
pub async fn dials_get(
    core: Core<'_>,
    id: String,
    start_ms: Option<i64>,
    seq: Option<u64>,
    source: Option<DialSource>,
) -> Result<Option<Arc<Dial>>, IpcError> {
    core.dials_get_shown(id, start_ms, seq, source).await
}

/// One dial's spec conformance (`phone-line.md`): op class and findings, or `null` when the
/// dial is no longer held or stored (`seq` as [`dials_get`]).
///
/// # Errors
/// As [`dials_query`].
#[tauri::command]
pub async fn dial_conformance(
    core: Core<'_>,
    id: String,
    start_ms: Option<i64>,
    seq: Option<u64>,
    source: Option<DialSource>,
) -> Result<Option<serde_json::Value>, IpcError> {
    core.dial_conformance_shown(id, start_ms, seq, source).await
}

/// Exports dials as `request` asks ([`ExportRequest`]: the dials matching its `filter`, or, with
/// a filter `line`, every matching dial of the whole history) to its `path` as JSON Lines,
/// atomically; `redact` replaces request and response values by type markers (keys and shapes
/// kept); `replace` overwrites a file already there.
///
/// # Errors
/// `invalid_input` for an empty path or a bad line; `conflict` when the file exists and
/// `replace` is not true; `io`; `not_found` for an absent capture.
#[tauri::command]
pub async fn dials_export(
    core: Core<'_>,
    request: ExportRequest,
) -> Result<ExportSummary, IpcError> {
    core.change()?.dials_export(request).await
}

/// Imports a JSON Lines file of dials into the read-only `imported` view (all or nothing).
///
/// # Errors
/// `invalid_input` for an empty path or bad lines; `io` when the file cannot be read.
#[tauri::command]
pub async fn dials_import(core: Core<'_>, path: String) -> Result<ImportSummary, IpcError> {
    core.change()?.dials_import(path).await
}

/// Closes the imported capture.
#[tauri::command]
pub fn dials_close_import(core: Core<'_>) -> Result<(), IpcError> {
    core.change()?.dials_close_import();
    Ok(())
}

/// Clears the live log (`memory` or `all`); returns the stored rows deleted.
///
/// # Errors
/// `io` when the history file cannot be changed; `internal` when the log has shut down.
#[tauri::command]
pub async fn dials_clear(core: Core<'_>, scope: DialClearScope) -> Result<u64, IpcError> {
    core.change()?.dials_clear(scope).await
}

/// The live log's counters, storage trouble and the imported capture.
///
/// # Errors
/// `internal` when the log has shut down.
#[tauri::command]
pub async fn dials_status(core: Core<'_>) -> Result<DialsStatus, IpcError> {
    core.dials_status_shown().await
}

/// The banner of dial `dial_id` when it failed on permissions, judged as the hub judged it
/// (`seq` as [`dials_get`]).
///
/// # Errors
/// As [`dials_query`].
#[tauri::command]
pub async fn dial_banner(
    core: Core<'_>,
    dial_id: String,
    start_ms: Option<i64>,
    seq: Option<u64>,
    source: Option<DialSource>,
) -> Result<Option<DialBanner>, IpcError> {
    core.dial_banner_shown(&dial_id, start_ms, seq, source)
        .await
}
