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
//! waiting, in arrival order>]}`. Version 1, written before waiting proposals were kept, has
//! no `waiting`; it is read as having none, so an older file still gives its ended history. It only records what the phones said; nothing in it (or anywhere in
//! Switchboard) answers a proposal.

use std::path::{Path, PathBuf};

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

/// Why the history file could not be read or written; each names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryError {
    /// The file exists but could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the file system said.
        source: std::io::Error,
    },
    /// The file is not a history of this shape: `at` is the JSON path (`ended[0]`), `problem`
    /// serde's words.
    #[error("{}: {at}: {problem}", path.display())]
    Shape {
        /// The file.
        path: PathBuf,
        /// Where in the JSON.
        at: String,
        /// What is wrong there.
        problem: String,
    },
    /// The file's `version` is neither 1 nor [`HISTORY_VERSION`].
    #[error("{}: version: {version} is not 1 or {HISTORY_VERSION}", path.display())]
    Version {
        /// The file.
        path: PathBuf,
        /// The version found.
        version: u32,
    },
    /// The history could not be encoded as JSON (nothing was written).
    #[error("{}: {source}", path.display())]
    Encode {
        /// The file.
        path: PathBuf,
        /// serde_json's words.
        source: serde_json::Error,
    },
    /// The file could not be written; it is unchanged.
    #[error("{}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// What the file system said.
        source: std::io::Error,
    },
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
/// named), or of another version than 1 or 2, each with the file's path
/// ([`HistoryError::Read`], [`HistoryError::Shape`], [`HistoryError::Version`]).
pub fn load(path: &Path) -> Result<Option<Kept>, HistoryError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(HistoryError::Read {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let mut de = serde_json::Deserializer::from_str(&text);
    let body: FileBody =
        serde_path_to_error::deserialize(&mut de).map_err(|e| HistoryError::Shape {
            path: path.to_path_buf(),
            at: e.path().to_string(),
            problem: e.inner().to_string(),
        })?;
    if !(1..=HISTORY_VERSION).contains(&body.version) {
        return Err(HistoryError::Version {
            path: path.to_path_buf(),
            version: body.version,
        });
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
/// unchanged ([`HistoryError::Write`]; [`HistoryError::Encode`] should the JSON encoder fail).
pub fn save(path: &Path, kept: Kept) -> Result<(), HistoryError> {
    let body = FileBody {
        version: HISTORY_VERSION,
        ended_dropped: kept.ended_dropped,
        ended: kept.ended,
        waiting: kept.waiting,
    };
    let bytes = serde_json::to_vec(&body).map_err(|source| HistoryError::Encode {
        path: path.to_path_buf(),
        source,
    })?;
    switchboard_wire::fsutil::write_atomic(path, &bytes).map_err(|source| HistoryError::Write {
        path: path.to_path_buf(),
        source,
    })
}
