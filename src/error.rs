//! The one error type that crosses the IPC boundary to the front end.
//!
//! Every fallible command of the desktop shell maps its module error into [`IpcError`], which
//! serialises as `{ "kind": "...", "message": "..." }` (see `ui/src/bindings/IpcError.ts`). The
//! `kind` is stable and machine-readable; the `message` is for people.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// The error shape every IPC command returns: `{ kind, message }`.
///
/// `kind` is one of a small stable set of snake_case strings (`invalid_input`, `not_found`,
/// `io`, `key_store`, `link`, `internal`, ...); `message` says what was wrong and where, in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, thiserror::Error)]
#[ts(export)]
#[error("{kind}: {message}")]
pub struct IpcError {
    /// Stable, machine-readable class of the error (snake_case).
    pub kind: String,
    /// Human-readable explanation naming what was wrong and where.
    pub message: String,
}

impl IpcError {
    /// Builds an error of the given `kind` with a human-readable `message`.
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            kind: kind.into(),
            message: message.into(),
        }
    }

    /// Shorthand for an `invalid_input` error: the user or a file gave something unusable.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new("invalid_input", message)
    }

    /// Shorthand for an `io` error: reading or writing a file or socket failed.
    pub fn io(message: impl Into<String>) -> Self {
        Self::new("io", message)
    }

    /// Shorthand for an `internal` error: a bug or an unexpected state in Switchboard itself.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new("internal", message)
    }
}

impl From<std::io::Error> for IpcError {
    fn from(e: std::io::Error) -> Self {
        Self::io(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialises_as_kind_and_message() {
        let e = IpcError::new("not_found", "no phone with id dev_abcd");
        let v = serde_json::to_value(&e).unwrap_or_default();
        assert_eq!(
            v,
            serde_json::json!({"kind": "not_found", "message": "no phone with id dev_abcd"})
        );
    }
}
