//! Problems and errors of the runtime-protocol module, and the [`Checker`] that collects every
//! problem of a document while it is walked.
//!
//! Why this exists: the manifests ([`super::manifest`]) and the ifp/1 tool list
//! ([`super::catalogue`]) report every problem they find, each with its file and field path
//! (spec `openphone-runtime-protocol.md` "Single Sources Of Truth"), so both share these types.
//! A leaf: it depends on nothing else in `runtime`.

use std::collections::HashMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use ts_rs::TS;

/// One thing wrong in a manifest or tool list: the file, the field path inside it
/// (`commands[3].superseded_by`, `version`; empty for the whole document) and what is wrong.
///
/// Displayed as `FILE: PATH: MESSAGE` (or `FILE: MESSAGE` when the path is empty).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct Problem {
    /// The file's name as given to the loader (`openphone-commands.json`).
    pub file: String,
    /// JSON field path inside the file, `a.b[2].c` style; empty for the document itself.
    pub path: String,
    /// What is wrong, in words.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: {}: {}", self.file, self.path, self.message)
        }
    }
}

fn join_problems(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Errors of the runtime-protocol module. Every variant names the file (and, for rule
/// violations, each field path) so a person can find what to fix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// The file could not be read.
    #[error("{file}: cannot read: {source}")]
    Io {
        /// Path of the file.
        file: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not JSON (serde_json's message carries line and column).
    #[error("{file}: not valid JSON: {source}")]
    Json {
        /// Path of the file.
        file: String,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// The document breaks one or more rules; every problem found is listed, one a line.
    #[error("{}", join_problems(.problems))]
    Invalid {
        /// All problems found, in document order.
        problems: Vec<Problem>,
    },
    /// Neither a tool list nor a commands manifest was found to build the tool catalogue from.
    #[error("{dir}: no openphone-tools.ifp1.json (here or in ifp1/ or ../ifp1/) and no openphone-commands.json (here or in openphone/)")]
    NoToolCatalogue {
        /// The directory searched.
        dir: String,
    },
    /// An autonomy level that is not one of the three.
    #[error(
        "unknown autonomy `{0}` (expected observe_only, ask_before_action or trusted_actions)"
    )]
    UnknownAutonomy(String),
}

impl RuntimeError {
    /// The problems this error carries: the list for [`RuntimeError::Invalid`], otherwise one
    /// problem made from the error itself.
    pub fn problems(&self) -> Vec<Problem> {
        match self {
            Self::Invalid { problems } => problems.clone(),
            Self::Io { file, .. } | Self::Json { file, .. } => vec![Problem {
                file: file.clone(),
                path: String::new(),
                message: self
                    .to_string()
                    .trim_start_matches(file.as_str())
                    .trim_start_matches(": ")
                    .to_string(),
            }],
            Self::NoToolCatalogue { dir } => vec![Problem {
                file: dir.clone(),
                path: String::new(),
                message: self
                    .to_string()
                    .trim_start_matches(dir.as_str())
                    .trim_start_matches(": ")
                    .to_string(),
            }],
            Self::UnknownAutonomy(_) => vec![Problem {
                file: String::new(),
                path: String::new(),
                message: self.to_string(),
            }],
        }
    }
}

impl From<RuntimeError> for switchboard_wire::error::IpcError {
    fn from(e: RuntimeError) -> Self {
        match e {
            RuntimeError::Io { .. } => Self::io(e.to_string()),
            RuntimeError::NoToolCatalogue { .. } => Self::new(
                switchboard_wire::error::IpcErrorKind::NotFound,
                e.to_string(),
            ),
            _ => Self::invalid_input(e.to_string()),
        }
    }
}

/// Reads a file as JSON, naming the file in any error.
pub(crate) fn read_json(path: &std::path::Path) -> Result<serde_json::Value, RuntimeError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| RuntimeError::Io {
        file: file.clone(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| RuntimeError::Json { file, source })
}

/// Collects problems for one file while a document is walked.
#[derive(Debug)]
pub(crate) struct Checker {
    file: String,
    problems: Vec<Problem>,
}

impl Checker {
    pub(crate) fn new(file: &str) -> Self {
        Self {
            file: file.to_string(),
            problems: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.problems.push(Problem {
            file: self.file.clone(),
            path: path.into(),
            message: message.into(),
        });
    }

    pub(crate) fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }

    pub(crate) fn into_problems(self) -> Vec<Problem> {
        self.problems
    }

    /// A required non-empty string at `obj[key]`.
    pub(crate) fn req_str(
        &mut self,
        obj: &serde_json::Map<String, serde_json::Value>,
        key: &str,
        path: &str,
    ) -> Option<String> {
        let p = join_path(path, key);
        match obj.get(key) {
            None | Some(serde_json::Value::Null) => {
                self.push(p, "missing (a non-empty string is required)");
                None
            }
            Some(serde_json::Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
            Some(serde_json::Value::String(_)) => {
                self.push(p, "must not be empty");
                None
            }
            Some(other) => {
                self.push(p, format!("must be a string, found {}", kind_of(other)));
                None
            }
        }
    }

    /// An optional string at `obj[key]` (missing or null is `None`; a non-string is a problem).
    pub(crate) fn opt_str(
        &mut self,
        obj: &serde_json::Map<String, serde_json::Value>,
        key: &str,
        path: &str,
    ) -> Option<String> {
        match obj.get(key) {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::String(s)) => Some(s.clone()),
            Some(other) => {
                self.push(
                    join_path(path, key),
                    format!("must be a string, found {}", kind_of(other)),
                );
                None
            }
        }
    }

    /// An optional boolean at `obj[key]`.
    pub(crate) fn opt_bool(
        &mut self,
        obj: &serde_json::Map<String, serde_json::Value>,
        key: &str,
        path: &str,
    ) -> Option<bool> {
        match obj.get(key) {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::Bool(b)) => Some(*b),
            Some(other) => {
                self.push(
                    join_path(path, key),
                    format!("must be true or false, found {}", kind_of(other)),
                );
                None
            }
        }
    }

    /// An optional list of non-empty strings at `obj[key]`.
    pub(crate) fn opt_str_list(
        &mut self,
        obj: &serde_json::Map<String, serde_json::Value>,
        key: &str,
        path: &str,
    ) -> Vec<String> {
        let mut out = Vec::new();
        match obj.get(key) {
            None | Some(serde_json::Value::Null) => {}
            Some(serde_json::Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    match item {
                        serde_json::Value::String(s) if !s.trim().is_empty() => out.push(s.clone()),
                        other => self.push(
                            format!("{}[{i}]", join_path(path, key)),
                            format!("must be a non-empty string, found {}", kind_of(other)),
                        ),
                    }
                }
            }
            Some(other) => self.push(
                join_path(path, key),
                format!("must be a list of strings, found {}", kind_of(other)),
            ),
        }
        out
    }
}

/// A JSON value's kind in words, for messages (`a string "x"`, `a number 2`, `an object`...).
pub(crate) fn kind_of(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "null".to_string(),
        serde_json::Value::Bool(b) => format!("the boolean {b}"),
        serde_json::Value::Number(n) => format!("the number {n}"),
        serde_json::Value::String(s) if s.is_empty() => "an empty string".to_string(),
        serde_json::Value::String(s) => format!("the string {s:?}"),
        serde_json::Value::Array(_) => "a list".to_string(),
        serde_json::Value::Object(_) => "an object".to_string(),
    }
}

/// Joins a field path and a key: `join_path("", "version") == "version"`,
/// `join_path("commands[2]", "name") == "commands[2].name"`.
pub(crate) fn join_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// The list at `obj[key]`; a missing or non-list value is a problem and reads as empty.
pub(crate) fn list<'a>(c: &mut Checker, obj: &'a Map<String, Value>, key: &str) -> &'a [Value] {
    match obj.get(key) {
        Some(Value::Array(items)) => items,
        Some(other) => {
            c.push(key, format!("must be a list, found {}", kind_of(other)));
            &[]
        }
        None => {
            c.push(key, "missing (a list is required)");
            &[]
        }
    }
}

/// Records `name` as first used at `path`; a second use is a problem naming the first.
pub(crate) fn claim(
    c: &mut Checker,
    seen: &mut HashMap<String, String>,
    name: &str,
    path: &str,
    what: &str,
) {
    if let Some(first) = seen.get(name) {
        c.push(
            path.to_string(),
            format!("{what} {name:?} is already used at {first}"),
        );
    } else {
        seen.insert(name.to_string(), path.to_string());
    }
}
