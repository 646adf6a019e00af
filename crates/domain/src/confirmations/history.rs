//! The confirmations kept across restarts: the proposals waiting on a phone and the
//! Confirmations view's history of how each proposal ended, within the mirror's own bounds
//! ([`super::MAX_WAITING`], [`super::MAX_ENDED`]).
//!
//! Why its own file: the mirror lives in memory and the phone does not send again what the
//! desktop acknowledged, so without this a restart forgot every ended proposal (the view
//! showed 15 confirmations before a restart and 7 after), and every proposal still waiting:
//! its end then arrived as a message about an action the desktop never saw proposed (a stray
//! message), and until then the person saw nothing of what their phone was asking.
//!
//! File: [`HISTORY_FILE`] in the link's data folder (`<data>`, or `<data>/demo` with the demo
//! phone), beside the dial history, written atomically and private (`0600`,
//! [`switchboard_wire::fsutil::write_atomic`]): `{"version": 2, "ended_dropped": <n>, "ended": [<the
//! ended proposals as the view shows them, oldest first>], "waiting": [<the proposals
//! waiting, in arrival order>]}`. Version 1 (before session 15) had no `waiting`; it is read
//! as having none. It only records what the phones said; nothing in it (or anywhere in
//! Switchboard) answers a proposal.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::view::ConfirmationView;

/// The file's name in the link's data folder.
pub const HISTORY_FILE: &str = "confirmation-history.json";

/// The version written; [`load`] also reads version 1.
pub const HISTORY_VERSION: u32 = 2;

/// The file's shape (see the module doc).
#[derive(Debug, Serialize, Deserialize)]
struct FileBody {
    version: u32,
    #[serde(default)]
    ended_dropped: u64,
    ended: Vec<ConfirmationView>,
    #[serde(default)]
    waiting: Vec<ConfirmationView>,
}

/// What a run keeps for the next ([`load`], [`save`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Kept {
    /// The ended proposals, oldest first.
    pub ended: Vec<ConfirmationView>,
    /// How many ended proposals were dropped beyond the bound before.
    pub ended_dropped: u64,
    /// The proposals waiting on a phone, in arrival order.
    pub waiting: Vec<ConfirmationView>,
}

/// What is kept in `path`. `Ok(None)` when there is no file yet.
///
/// # Errors
/// The file cannot be read, or is not a history of this shape (the JSON path and the problem
/// named), or of another version than 1 or 2, each with the file's path.
pub fn load(path: &Path) -> Result<Option<Kept>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let mut de = serde_json::Deserializer::from_str(&text);
    let body: FileBody = serde_path_to_error::deserialize(&mut de)
        .map_err(|e| format!("{}: {}: {}", path.display(), e.path(), e.inner()))?;
    if !(1..=HISTORY_VERSION).contains(&body.version) {
        return Err(format!(
            "{}: version: {} is not 1 or {HISTORY_VERSION}",
            path.display(),
            body.version
        ));
    }
    Ok(Some(Kept {
        ended: body.ended,
        ended_dropped: body.ended_dropped,
        waiting: body.waiting,
    }))
}

/// Writes `kept` to `path`, atomically, as version [`HISTORY_VERSION`].
///
/// # Errors
/// Any I/O error of [`switchboard_wire::fsutil::write_atomic`], with the file's path; `path` is then
/// unchanged.
pub fn save(path: &Path, kept: Kept) -> Result<(), String> {
    let body = FileBody {
        version: HISTORY_VERSION,
        ended_dropped: kept.ended_dropped,
        ended: kept.ended,
        waiting: kept.waiting,
    };
    let bytes = serde_json::to_vec(&body).map_err(|e| format!("{}: {e}", path.display()))?;
    switchboard_wire::fsutil::write_atomic(path, &bytes)
        .map_err(|e| format!("{}: {e}", path.display()))
}
