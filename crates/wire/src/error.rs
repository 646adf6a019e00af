//! The one error type that crosses the IPC boundary to the front end.
//!
//! Every fallible command of the desktop shell maps its module error into [`IpcError`], which
//! serialises as `{ "kind": "...", "message": "..." }` (see `ui/src/bindings/IpcError.ts`). The
//! `kind` is stable and machine-readable; the `message` is for people.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// The stable, machine-readable class of an [`IpcError`] (snake_case on the wire; a closed
/// union in TypeScript).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
#[non_exhaustive]
pub enum IpcErrorKind {
    /// The user or a file gave something unusable.
    InvalidInput,
    /// What was asked for does not exist (no such phone, line, dial, capture, tool list).
    NotFound,
    /// Reading or writing a file or socket failed.
    Io,
    /// The OS key store is missing, locked or refused.
    KeyStore,
    /// The phone link is not running or could not do what was asked.
    Link,
    /// The file changed on disk since it was read; nothing was written.
    Conflict,
    /// A bug or an unexpected state in Switchboard itself.
    Internal,
    /// The front end runs without the desktop host (a plain browser); never sent by Rust.
    NoHost,
    /// A support bundle is open for reading: nothing can be changed until it is closed.
    ReadOnly,
}

impl IpcErrorKind {
    /// Every kind, in declaration order.
    pub const ALL: [IpcErrorKind; 9] = [
        Self::InvalidInput,
        Self::NotFound,
        Self::Io,
        Self::KeyStore,
        Self::Link,
        Self::Conflict,
        Self::Internal,
        Self::NoHost,
        Self::ReadOnly,
    ];

    /// The wire name (`invalid_input`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidInput => "invalid_input",
            Self::NotFound => "not_found",
            Self::Io => "io",
            Self::KeyStore => "key_store",
            Self::Link => "link",
            Self::Conflict => "conflict",
            Self::Internal => "internal",
            Self::NoHost => "no_host",
            Self::ReadOnly => "read_only",
        }
    }
}

impl std::fmt::Display for IpcErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error shape every IPC command returns: `{ kind, message }`.
///
/// `kind` is one of the closed set [`IpcErrorKind`]; `message` says what was wrong and where,
/// in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, thiserror::Error)]
#[ts(export)]
#[error("{kind}: {message}")]
pub struct IpcError {
    /// Stable, machine-readable class of the error.
    pub kind: IpcErrorKind,
    /// Human-readable explanation naming what was wrong and where.
    pub message: String,
}

impl IpcError {
    /// Builds an error of the given `kind` with a human-readable `message`.
    pub fn new(kind: IpcErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// Shorthand for an `invalid_input` error: the user or a file gave something unusable.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(IpcErrorKind::InvalidInput, message)
    }

    /// Shorthand for an `io` error: reading or writing a file or socket failed.
    pub fn io(message: impl Into<String>) -> Self {
        Self::new(IpcErrorKind::Io, message)
    }

    /// Shorthand for an `internal` error: a bug or an unexpected state in Switchboard itself.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(IpcErrorKind::Internal, message)
    }

    /// Shorthand for a `not_found` error.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(IpcErrorKind::NotFound, message)
    }

    /// Shorthand for a `link` error: the phone link is not running or failed.
    pub fn link(message: impl Into<String>) -> Self {
        Self::new(IpcErrorKind::Link, message)
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
        let e = IpcError::new(IpcErrorKind::NotFound, "no phone with id dev_abcd");
        let v = serde_json::to_value(&e).unwrap_or_default();
        assert_eq!(
            v,
            serde_json::json!({"kind": "not_found", "message": "no phone with id dev_abcd"})
        );
    }
}
