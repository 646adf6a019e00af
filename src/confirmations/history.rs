//! The ended confirmations kept across restarts: the Confirmations view's history of how each
//! proposal ended, within the mirror's own bound ([`super::MAX_ENDED`]).
//!
//! Why its own file: the mirror lives in memory and the phone does not send again what the
//! desktop acknowledged, so without this a restart forgot every ended proposal (the view
//! showed 15 confirmations before a restart and 7 after). What is waiting is not kept: the
//! phone still holds it and its end arrives as a message about an action this run never saw
//! proposed (shown as a stray message).
//!
//! File: [`HISTORY_FILE`] in the link's data folder (`<data>`, or `<data>/demo` with the demo
//! phone), beside the dial history, written atomically and private (`0600`,
//! [`crate::fsutil::write_atomic`]): `{"version": 1, "ended_dropped": <n>, "ended": [<the
//! ended proposals as the view shows them, oldest first>]}`. It only records what the phones
//! said; nothing in it (or anywhere in Switchboard) answers a proposal.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::view::ConfirmationView;

/// The file's name in the link's data folder.
pub const HISTORY_FILE: &str = "confirmation-history.json";

/// The file's shape (see the module doc).
#[derive(Debug, Serialize, Deserialize)]
struct FileBody {
    version: u32,
    #[serde(default)]
    ended_dropped: u64,
    ended: Vec<ConfirmationView>,
}

/// The history kept in `path`: the ended proposals, oldest first, and how many were dropped
/// beyond the bound before. `Ok(None)` when there is no file yet.
///
/// # Errors
/// The file cannot be read, or is not a history of this shape (the JSON path and the problem
/// named), each with the file's path.
pub fn load(path: &Path) -> Result<Option<(Vec<ConfirmationView>, u64)>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let mut de = serde_json::Deserializer::from_str(&text);
    let body: FileBody = serde_path_to_error::deserialize(&mut de)
        .map_err(|e| format!("{}: {}: {}", path.display(), e.path(), e.inner()))?;
    if body.version != 1 {
        return Err(format!(
            "{}: version: {} is not 1",
            path.display(),
            body.version
        ));
    }
    Ok(Some((body.ended, body.ended_dropped)))
}

/// Writes `ended` (oldest first) and `ended_dropped` to `path`, atomically.
///
/// # Errors
/// Any I/O error of [`crate::fsutil::write_atomic`], with the file's path; `path` is then
/// unchanged.
pub fn save(path: &Path, ended: Vec<ConfirmationView>, ended_dropped: u64) -> Result<(), String> {
    let body = FileBody {
        version: 1,
        ended_dropped,
        ended,
    };
    let bytes = serde_json::to_vec(&body).map_err(|e| format!("{}: {e}", path.display()))?;
    crate::fsutil::write_atomic(path, &bytes).map_err(|e| format!("{}: {e}", path.display()))
}
