//! Reading a pairings file as LumiAgent reads it (upstream-behaviour.md, "LumiAgent's registry
//! and pairing records"): leniently, never refusing a file. A file it cannot use counts as
//! empty, a record of the wrong shape is kept with its problems in words. Apart from the strict
//! reader because Switchboard must predict what the host will do with a file, not only check it.

use std::io;
use std::path::Path;

use serde_json::{Map, Value};

use super::{is_version_one, record_problems, PairingRecord, PairingsError, PairingsFile};
use crate::phone_line::json_path::{type_words, JsonPath, Position};

/// A `phoneline-pairings.json` as LumiAgent reads it (upstream-behaviour.md, "LumiAgent's
/// registry and pairing records"): a file it cannot read, whose `version` is not 1 or whose
/// `pairings` is not an object is treated as empty.
#[derive(Debug, Clone, PartialEq)]
pub enum LumiAgentRead {
    /// The file's records (read as [`PairingsFile::parse`] reads them).
    Records(PairingsFile),
    /// LumiAgent treats the file as empty: nothing is paired by it.
    TreatedAsEmpty {
        /// What was wrong, in words (`its version is 2, not 1`).
        reason: String,
    },
}

impl LumiAgentRead {
    /// The records LumiAgent sees: the file's, or none.
    pub fn records_or_empty(&self) -> PairingsFile {
        match self {
            LumiAgentRead::Records(file) => file.clone(),
            LumiAgentRead::TreatedAsEmpty { .. } => PairingsFile::new(),
        }
    }

    /// Why LumiAgent treats the file as empty; `None` when it reads its records.
    pub fn empty_reason(&self) -> Option<&str> {
        match self {
            LumiAgentRead::Records(_) => None,
            LumiAgentRead::TreatedAsEmpty { reason } => Some(reason),
        }
    }
}

/// Reads a pairings file's text as LumiAgent does: empty text, text that is not JSON, a top
/// level that is not an object, a `version` other than the number 1 (JavaScript's
/// `version === 1`, so `1.0` counts) and a `pairings` that is missing, `null` or not an object
/// (an array included) give [`LumiAgentRead::TreatedAsEmpty`] naming what was wrong. Otherwise
/// every record is read as LumiAgent reads it, whatever its shape: LumiAgent only asks whether a
/// record's `allowed` is true and its `manifestHash` still matches (it keeps it unchanged) or not
/// (it rewrites it on its next discovery). A record of the wrong shape is kept, verbatim, with
/// its problems in words naming the field and its line and column ([`PairingRecord::problems`]);
/// one that is not an object or has no boolean `allowed` is not a decision
/// ([`PairingRecord::is_decision`]).
///
/// # Errors
/// None today (kept for the file reader's signature): every text gives a [`LumiAgentRead`].
pub fn read_as_lumiagent(text: &str) -> Result<LumiAgentRead, PairingsError> {
    let empty = |reason: String| Ok(LumiAgentRead::TreatedAsEmpty { reason });
    if text.is_empty() {
        return empty("the file is empty".into());
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            let full = e.to_string();
            let suffix = format!(" at line {} column {}", e.line(), e.column());
            let message = full.strip_suffix(&suffix).unwrap_or(&full);
            return empty(format!(
                "it is not JSON: {message} (line {}, column {})",
                e.line(),
                e.column()
            ));
        }
    };
    let Value::Object(top) = &value else {
        return empty(format!(
            "its top level is {}, not an object with version 1",
            type_words(&value)
        ));
    };
    match top.get("version") {
        None => return empty("it has no version (LumiAgent reads version 1 only)".into()),
        Some(v) if is_version_one(v) => {}
        Some(Value::Number(n)) => return empty(format!("its version is {n}, not 1")),
        Some(other) => {
            return empty(format!(
                "its version is {} ({}), not the number 1",
                type_words(other),
                switchboard_wire::js_json::stringify(other)
            ))
        }
    }
    match top.get("pairings") {
        Some(Value::Object(_)) => Ok(LumiAgentRead::Records(lenient(text, value.clone()))),
        None => empty("it has no pairings object".into()),
        Some(other) => empty(format!(
            "its pairings is {}, not an object",
            type_words(other)
        )),
    }
}

/// Reads the pairings file at `path` as LumiAgent does ([`read_as_lumiagent`]); a file that
/// exists but cannot be read (permissions, not UTF-8, a folder) is
/// [`LumiAgentRead::TreatedAsEmpty`] with the I/O error's words.
///
/// # Errors
/// [`PairingsError::Read`] when there is no file at `path` (most likely a mistyped path);
/// [`PairingsError::Shape`] for a record of the wrong shape.
pub fn load_as_lumiagent(path: &Path) -> Result<LumiAgentRead, PairingsError> {
    match std::fs::read_to_string(path) {
        Ok(text) => read_as_lumiagent(&text),
        Err(source) if source.kind() == io::ErrorKind::NotFound => Err(PairingsError::Read {
            path: path.to_path_buf(),
            source,
        }),
        Err(e) => Ok(LumiAgentRead::TreatedAsEmpty {
            reason: format!("it cannot be read: {e}"),
        }),
    }
}

/// The records of `value` (a top-level object whose `pairings` is an object), each read as
/// LumiAgent reads it: problems collected, nothing refused.
fn lenient(text: &str, value: Value) -> PairingsFile {
    let Value::Object(mut top) = value else {
        return PairingsFile::new();
    };
    let root = JsonPath::root();
    let pairings_path = root.key("pairings");
    let map = match top.insert("pairings".into(), Value::Object(Map::new())) {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    // `pairings.lumirealm.allowed: expected a boolean, found a string (line 8, column 18)`.
    let words = |path: &JsonPath, msg: &str| {
        let p = path
            .locate_nearest(text)
            .unwrap_or(Position { line: 1, column: 1 });
        format!("{path}: {msg} ({p})")
    };
    let mut records = Vec::with_capacity(map.len());
    for (id, record) in map {
        let at = pairings_path.key(&id);
        let rec = match record {
            Value::Object(fields) => {
                let problems = record_problems(&fields, &at)
                    .into_iter()
                    .map(|(path, msg)| words(&path, &msg))
                    .collect();
                PairingRecord {
                    fields,
                    problems,
                    not_object: None,
                }
            }
            other => PairingRecord {
                fields: Map::new(),
                problems: vec![words(
                    &at,
                    &format!(
                        "expected a pairing record object, found {}",
                        type_words(&other)
                    ),
                )],
                not_object: Some(other),
            },
        };
        records.push((id, rec));
    }
    PairingsFile { top, records }
}
