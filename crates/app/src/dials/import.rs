//! The imported capture: a JSON Lines file of dials read into a read-only view
//! (`dials_import`, `dials_close_import`), which every read command can take as its source
//! (`source: "imported"`).
//!
//! Why apart: the capture is the view's second set of dials, held beside the live log and never
//! changed by it.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;
use ts_rs::TS;

use switchboard_dials::ImportedLog;
use switchboard_wire::error::IpcError;
use switchboard_wire::sync::lock;

use super::DialsState;

/// A JSON Lines file imported for reading.
#[derive(Debug)]
pub struct ImportedCapture {
    /// The file it came from (absolute when given so).
    pub path: PathBuf,
    /// Its dials.
    pub log: ImportedLog,
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

impl DialsState {
    /// The imported capture, if one is loaded.
    pub fn imported(&self) -> Option<Arc<ImportedCapture>> {
        lock(&self.imported).clone()
    }

    /// Replaces the imported capture (`None` closes it).
    pub fn set_imported(&self, capture: Option<ImportedCapture>) {
        *lock(&self.imported) = capture.map(Arc::new);
    }

    pub(super) fn imported_capture(&self) -> Result<Arc<ImportedCapture>, IpcError> {
        self.imported().ok_or_else(|| {
            IpcError::not_found("no capture is imported: import a JSON Lines file first")
        })
    }

    /// Imports a JSON Lines file of dials into the read-only `imported` view (replacing any earlier
    /// capture). All or nothing: a file with any bad line imports nothing.
    ///
    /// # Errors
    /// `invalid_input` for an empty path, a gzip file (a support bundle: the message says where
    /// bundles open) or bad lines (the message names the first bad line and field and the
    /// count); `io` when the file cannot be read.
    pub(crate) async fn dials_import(&self, path: String) -> Result<ImportSummary, IpcError> {
        if path.trim().is_empty() {
            return Err(IpcError::invalid_input(
                "import path is empty: give a JSON Lines file",
            ));
        }
        let file = PathBuf::from(path.trim());
        if crate::bundle::open::is_gzip_file(&file) {
            return Err(IpcError::invalid_input(format!(
                "{} is gzip-compressed, not a dial export's JSON Lines text: a support bundle \
                 is, and opens with File → Open support bundle… (Ctrl+O), which shows its \
                 dials here",
                file.display()
            )));
        }
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
    pub(crate) fn dials_close_import(&self) {
        self.set_imported(None);
    }
}
