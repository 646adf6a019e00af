//! Exporting dials as JSON Lines (`dials_export`): what the window asks for ([`ExportRequest`]),
//! where a relative name is written (the export folder, never outside it), and what was
//! written ([`ExportSummary`]).
//!
//! Why apart: the export is the view's only write to a place the person chooses; the path
//! rules, the refusal to overwrite unasked and the atomic write are kept together.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use switchboard_dials::{CompiledQuery, Dial, DialFilter, HistoryEntry, HistoryQuery};
use switchboard_wire::error::{IpcError, IpcErrorKind};

use super::{DialSource, DialsState};
use crate::App;

/// What the window asks `dials_export` for: one request instead of six loose arguments, so the
/// page's call and the command are checked against one generated type (`ExportRequest.ts`).
///
/// Shape: `{ path, filter?, source?, line?, redact?, replace? }`. With a filter `line`, every
/// matching dial of the whole history is exported (the ring and SQLite, or the imported
/// capture; `filter` is then not used); else the held dials matching `filter`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct ExportRequest {
    /// The file to write: a full path as given, or a name inside the export folder
    /// (`<data folder>/exports`, [`DialsState::resolve_export_path`]).
    pub path: String,
    /// Which held dials to export when there is no `line` (default: all).
    #[serde(default)]
    #[ts(optional)]
    pub filter: Option<DialFilter>,
    /// Which dials: `live` (default) or the `imported` capture.
    #[serde(default)]
    #[ts(optional)]
    pub source: Option<DialSource>,
    /// A filter line (`docs/dial-filter.md`): export every matching dial of the whole history.
    #[serde(default)]
    #[ts(optional)]
    pub line: Option<String>,
    /// Replace request and response values by type markers, keys and shapes kept (default
    /// false).
    #[serde(default)]
    #[ts(optional)]
    pub redact: Option<bool>,
    /// Overwrite a file already at the path (default false: the export fails with `conflict`,
    /// so the window can ask first).
    #[serde(default)]
    #[ts(optional)]
    pub replace: Option<bool>,
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

impl DialsState {
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

    /// Exports the dials matching `filter` (default all) from `source` to `path` as JSON Lines,
    /// newest first, atomically (the file `0600` on Unix). A relative `path` is written in the
    /// export folder (`<data folder>/exports`, created `0700` when missing) and may not leave it
    /// ([`DialsState::resolve_export_path`]). Two more choices: `query` (a compiled filter
    /// line) exports every matching dial of the whole history (the ring and SQLite, newest
    /// first; connection events are not exported) instead of `filter`'s held dials, and
    /// `redact` replaces the request and response values by type markers, keys and shapes kept
    /// ([`switchboard_dials::jsonl::redact_value`]). Without `replace`, a file already at the path is
    /// left alone and the export fails (`conflict`), so the window can ask first.
    ///
    /// # Errors
    /// `invalid_input` for an empty path or a relative path leaving the export folder; `io`
    /// naming the file when it cannot be written; `not_found` when exporting an absent capture;
    /// `conflict` naming the file when it exists and `replace` is false.
    pub(crate) async fn dials_export_with(
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
}

impl App {
    /// Exports dials as JSON Lines as `request` asks (see [`DialsState::dials_export_with`]):
    /// with a filter `line`, every matching dial of the whole history; else `filter`'s held
    /// dials; `redact` replaces request and response values by type markers; `replace`
    /// (default false) overwrites a file already at the path.
    ///
    /// # Errors
    /// `invalid_input` for a filter line that does not parse; `conflict` when the file exists
    /// and `replace` is not true; as [`DialsState::dials_export_with`].
    pub(crate) async fn dials_export(
        &self,
        request: ExportRequest,
    ) -> Result<ExportSummary, IpcError> {
        let ExportRequest {
            path,
            filter,
            source,
            line,
            redact,
            replace,
        } = request;
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
}
