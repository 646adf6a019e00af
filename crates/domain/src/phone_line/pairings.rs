//! Pairing records: `phoneline-pairings.json`, in exactly the format the phone-line host
//! (LumiAgent) keeps in its storage (phone-line.md, "Discovery and pairing"):
//!
//! ```json
//! {"version":1,"pairings":{"<id>":{"identifier":"lumirealm","displayName":"LumiRealm",
//!   "allowed":true,"manifestHash":"<64 hex>","decidedAt":1726000000000}}}
//! ```
//!
//! `manifestHash` is the lowercase hex SHA-256 of `JSON.stringify` of the describe answer as
//! LumiAgent normalises it ([`super::manifest::SurfaceManifest::hash`]); `decidedAt` is
//! milliseconds since the Unix epoch. [`read_as_lumiagent`] reads a file as LumiAgent does
//! (upstream-behaviour.md): one it cannot read, whose `version` is not 1 or whose `pairings` is
//! not an object is treated as empty, with the reason in words. Unknown fields at every level are kept, in the order read. Reading a file of another
//! shape is an error naming the field and its line and column; writing goes through a temporary
//! file and a rename and keeps the previous file as `phoneline-pairings.json.bak`. Files are
//! written as `JSON.stringify(file, null, 2)` would write them, so a file Switchboard wrote reads
//! back and writes again byte for byte.

use std::io;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::json_path::{type_words, JsonPath, Position};

mod js_pretty;
mod lumiagent;

pub use js_pretty::js_pretty;
pub use lumiagent::{load_as_lumiagent, read_as_lumiagent, LumiAgentRead};

/// The file's usual name in LumiAgent's storage.
pub const PAIRINGS_FILE_NAME: &str = "phoneline-pairings.json";

/// The only `version` this module reads and writes.
pub const PAIRINGS_VERSION: u64 = 1;

/// Errors reading, writing or changing pairing records.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PairingsError {
    /// The text is not JSON.
    #[error("not JSON: {message} (line {line}, column {column})")]
    Syntax {
        /// serde_json's words.
        message: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
    },
    /// The JSON is not a pairings file: `path` names the field (e.g.
    /// `pairings.lumirealm.allowed`), `message` what is wrong, `position` where.
    #[error("{path}: {message} ({position})")]
    Shape {
        /// Where, as a JavaScript-style path.
        path: String,
        /// What is wrong, e.g. `expected a boolean, found a string`.
        message: String,
        /// Line and column of the value (or of the object missing it).
        position: Position,
    },
    /// No pairing record for this extension id.
    #[error("no pairing record for {0:?}")]
    NotFound(String),
    /// The record for this id is not one LumiAgent reads as a decision (not an object, or no
    /// boolean `allowed`): there is nothing to revoke, and LumiAgent rewrites it on its next
    /// discovery.
    #[error("the pairing record for {id:?} is not a decision LumiAgent keeps ({problems}): it rewrites it with allowed: true on its next discovery, so there is nothing to revoke")]
    NotADecision {
        /// The extension id.
        id: String,
        /// What is wrong with it, in words.
        problems: String,
    },
    /// Reading the file failed.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// Writing the file (or its backup) failed; the previous file is untouched.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
}

impl From<PairingsError> for switchboard_wire::error::IpcError {
    /// `invalid_input` for a file of the wrong shape, `not_found` for a missing record, `io`
    /// for read and write failures; the message is the error's words (field, line, column).
    fn from(e: PairingsError) -> Self {
        let kind = match &e {
            PairingsError::Syntax { .. }
            | PairingsError::Shape { .. }
            | PairingsError::NotADecision { .. } => {
                switchboard_wire::error::IpcErrorKind::InvalidInput
            }
            PairingsError::NotFound(_) => switchboard_wire::error::IpcErrorKind::NotFound,
            PairingsError::Read { .. } | PairingsError::Write { .. } => {
                switchboard_wire::error::IpcErrorKind::Io
            }
        };
        Self::new(kind, e.to_string())
    }
}

/// One pairing record: `{ identifier, displayName, allowed, manifestHash, decidedAt, ... }`.
///
/// The record keeps all its members, known and unknown, in the order read; the accessors read
/// the known ones (validated when the record was read or built).
#[derive(Debug, Clone, PartialEq)]
pub struct PairingRecord {
    fields: Map<String, Value>,
    /// What is of the wrong shape in it, in words naming the field (read leniently, as
    /// LumiAgent reads it: [`read_as_lumiagent`]); empty for a well-formed record.
    problems: Vec<String>,
    /// The value as read when it is not an object at all (kept verbatim when writing).
    not_object: Option<Value>,
}

impl PairingRecord {
    /// A new record with the five known fields in the host's order.
    /// `decided_at` is in epoch milliseconds.
    pub fn new(
        identifier: &str,
        display_name: &str,
        allowed: bool,
        manifest_hash: &str,
        decided_at: u64,
    ) -> Self {
        let mut fields = Map::new();
        fields.insert("identifier".into(), Value::from(identifier));
        fields.insert("displayName".into(), Value::from(display_name));
        fields.insert("allowed".into(), Value::Bool(allowed));
        fields.insert("manifestHash".into(), Value::from(manifest_hash));
        fields.insert("decidedAt".into(), Value::from(decided_at));
        Self {
            fields,
            problems: Vec::new(),
            not_object: None,
        }
    }

    /// Whether LumiAgent reads this record as a decision: an object whose `allowed` is a
    /// boolean. Any other record (not an object, `allowed` missing or of another type) has no
    /// `allowed` that is true, so LumiAgent does not keep it: on its next discovery whose
    /// `describe` succeeds it rewrites it with `allowed: true`, the new hash and `decidedAt` =
    /// now (upstream-behaviour.md, "LumiAgent's registry and pairing records").
    pub fn is_decision(&self) -> bool {
        self.not_object.is_none() && self.fields.get("allowed").is_some_and(Value::is_boolean)
    }

    /// What is of the wrong shape in the record, in words naming the field
    /// (`pairings.lumirealm.decidedAt: expected a number (epoch milliseconds), found a string`);
    /// empty for a well-formed record.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    fn str_field(&self, key: &str) -> &str {
        self.fields.get(key).and_then(Value::as_str).unwrap_or("")
    }

    /// `identifier`: the extension id the decision is about.
    pub fn identifier(&self) -> &str {
        self.str_field("identifier")
    }

    /// `displayName`: the name shown for the line (the registry's name).
    pub fn display_name(&self) -> &str {
        self.str_field("displayName")
    }

    /// `allowed`: whether the line is paired (false after a revoke).
    pub fn allowed(&self) -> bool {
        self.fields
            .get("allowed")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// `manifestHash`: lowercase hex SHA-256 of the describe manifest decided on.
    pub fn manifest_hash(&self) -> &str {
        self.str_field("manifestHash")
    }

    /// `decidedAt`: when the decision was made, in epoch milliseconds.
    pub fn decided_at(&self) -> u64 {
        self.fields
            .get("decidedAt")
            .and_then(|v| whole_ms(v).ok())
            .unwrap_or(0)
    }

    /// Sets `allowed` (its place in the record is kept).
    pub fn set_allowed(&mut self, allowed: bool) {
        self.fields.insert("allowed".into(), Value::Bool(allowed));
    }

    /// Sets `decidedAt`, in epoch milliseconds.
    pub fn set_decided_at(&mut self, ms: u64) {
        self.fields.insert("decidedAt".into(), Value::from(ms));
    }

    /// Sets `manifestHash`.
    pub fn set_manifest_hash(&mut self, hash: &str) {
        self.fields.insert("manifestHash".into(), Value::from(hash));
    }

    /// Sets `displayName`.
    pub fn set_display_name(&mut self, name: &str) {
        self.fields.insert("displayName".into(), Value::from(name));
    }

    /// The members the format does not define, in the order read.
    pub fn unknown_fields(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.fields
            .iter()
            .filter(|(k, _)| !RECORD_FIELDS.contains(&k.as_str()))
    }

    /// Whether `current_hash` (the `manifestHash` of the line's current describe) differs from
    /// the one decided on: the manifest changed since the decision.
    pub fn manifest_changed(&self, current_hash: &str) -> bool {
        self.manifest_hash() != current_hash
    }

    /// The record as JSON, all members in order (a record that is not an object: as read).
    pub fn to_value(&self) -> Value {
        match &self.not_object {
            Some(v) => v.clone(),
            None => Value::Object(self.fields.clone()),
        }
    }
}

const RECORD_FIELDS: [&str; 5] = [
    "identifier",
    "displayName",
    "allowed",
    "manifestHash",
    "decidedAt",
];

/// A whole `phoneline-pairings.json`: `version` 1, the records by extension id (in file order),
/// and any other top-level members (kept in order).
#[derive(Debug, Clone, PartialEq)]
pub struct PairingsFile {
    /// Top-level members in order; the value under `pairings` is a placeholder, the records are
    /// in `records`.
    top: Map<String, Value>,
    records: Vec<(String, PairingRecord)>,
}

impl Default for PairingsFile {
    fn default() -> Self {
        Self::new()
    }
}

impl PairingsFile {
    /// An empty file: `{"version":1,"pairings":{}}`.
    pub fn new() -> Self {
        let mut top = Map::new();
        top.insert("version".into(), Value::from(PAIRINGS_VERSION));
        top.insert("pairings".into(), Value::Object(Map::new()));
        Self {
            top,
            records: Vec::new(),
        }
    }

    /// Reads a pairings file's text. Errors: [`PairingsError::Syntax`] for text that is not
    /// JSON; [`PairingsError::Shape`] naming the field, line and column when the top level is
    /// not an object, `version` is not 1, `pairings` is not an object, a record is not an
    /// object, or a record's `identifier` / `displayName` / `manifestHash` is missing or not a
    /// string, `allowed` missing or not a boolean, `decidedAt` missing or not a whole,
    /// non-negative number of milliseconds.
    pub fn parse(text: &str) -> Result<Self, PairingsError> {
        let value: Value = serde_json::from_str(text).map_err(|e| {
            let full = e.to_string();
            let suffix = format!(" at line {} column {}", e.line(), e.column());
            PairingsError::Syntax {
                message: full.strip_suffix(&suffix).unwrap_or(&full).to_string(),
                line: e.line(),
                column: e.column(),
            }
        })?;
        let shape = |path: &JsonPath, message: String| PairingsError::Shape {
            path: path.to_string(),
            message,
            position: path
                .locate_nearest(text)
                .unwrap_or(Position { line: 1, column: 1 }),
        };
        let root = JsonPath::root();
        let Value::Object(top) = value else {
            return Err(shape(
                &root,
                format!("expected an object, found {}", type_words(&value)),
            ));
        };
        let version_path = root.key("version");
        match top.get("version") {
            None => return Err(shape(&version_path, "missing (expected 1)".into())),
            Some(v) if is_version_one(v) => {}
            Some(Value::Number(n)) => {
                return Err(shape(
                    &version_path,
                    format!("unsupported version {n} (this reader knows version 1)"),
                ))
            }
            Some(other) => {
                return Err(shape(
                    &version_path,
                    format!("expected the number 1, found {}", type_words(other)),
                ))
            }
        }
        let pairings_path = root.key("pairings");
        let records = match top.get("pairings") {
            None => return Err(shape(&pairings_path, "missing (expected an object)".into())),
            Some(Value::Object(map)) => {
                let mut records = Vec::with_capacity(map.len());
                for (id, record) in map {
                    let at = pairings_path.key(id);
                    let Value::Object(fields) = record else {
                        return Err(shape(
                            &at,
                            format!(
                                "expected a pairing record object, found {}",
                                type_words(record)
                            ),
                        ));
                    };
                    check_record(fields, &at).map_err(|(path, msg)| shape(&path, msg))?;
                    records.push((
                        id.clone(),
                        PairingRecord {
                            fields: fields.clone(),
                            problems: Vec::new(),
                            not_object: None,
                        },
                    ));
                }
                records
            }
            Some(other) => {
                return Err(shape(
                    &pairings_path,
                    format!("expected an object, found {}", type_words(other)),
                ))
            }
        };
        let mut top = top;
        top.insert("pairings".into(), Value::Object(Map::new()));
        Ok(Self { top, records })
    }

    /// Reads the pairings file at `path`. Errors as [`PairingsFile::parse`], or
    /// [`PairingsError::Read`].
    pub fn load(path: &Path) -> Result<Self, PairingsError> {
        let text = std::fs::read_to_string(path).map_err(|source| PairingsError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text)
    }

    /// The records in file order, by extension id.
    pub fn records(&self) -> impl Iterator<Item = (&str, &PairingRecord)> {
        self.records.iter().map(|(id, r)| (id.as_str(), r))
    }

    /// The record for extension id `id`.
    pub fn get(&self, id: &str) -> Option<&PairingRecord> {
        self.records.iter().find(|(k, _)| k == id).map(|(_, r)| r)
    }

    /// The record for extension id `id`, to change.
    pub fn get_mut(&mut self, id: &str) -> Option<&mut PairingRecord> {
        self.records
            .iter_mut()
            .find(|(k, _)| k == id)
            .map(|(_, r)| r)
    }

    /// Puts `record` under `id`: in place of an existing record (same position), else last.
    pub fn insert(&mut self, id: &str, record: PairingRecord) {
        match self.get_mut(id) {
            Some(existing) => *existing = record,
            None => self.records.push((id.to_string(), record)),
        }
    }

    /// The top-level members the format does not define, in order.
    pub fn unknown_fields(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.top
            .iter()
            .filter(|(k, _)| k.as_str() != "version" && k.as_str() != "pairings")
    }

    /// The desktop's revoke: sets the record's `allowed` to false and `decidedAt` to `now_ms`
    /// (epoch milliseconds), keeping everything else. Errors with [`PairingsError::NotFound`]
    /// when there is no record for `id`.
    pub fn revoke(&mut self, id: &str, now_ms: u64) -> Result<&PairingRecord, PairingsError> {
        let record = self
            .get_mut(id)
            .ok_or_else(|| PairingsError::NotFound(id.to_string()))?;
        if !record.is_decision() {
            return Err(PairingsError::NotADecision {
                id: id.to_string(),
                problems: record.problems.join("; "),
            });
        }
        record.set_allowed(false);
        record.set_decided_at(now_ms);
        Ok(record)
    }

    /// The file as JSON, members in order.
    pub fn to_value(&self) -> Value {
        let mut top = self.top.clone();
        let pairings: Map<String, Value> = self
            .records
            .iter()
            .map(|(id, r)| (id.clone(), r.to_value()))
            .collect();
        top.insert("pairings".into(), Value::Object(pairings));
        Value::Object(top)
    }

    /// The file's text as `JSON.stringify(file, null, 2)` writes it (no trailing newline).
    pub fn to_text(&self) -> String {
        js_pretty(&self.to_value())
    }

    /// Writes the file to `path` atomically (temporary file in the same folder, fsync, rename),
    /// first copying the previous file, if any, to `<path>.bak` (also atomically). Errors with
    /// [`PairingsError::Write`]; on error the previous file is untouched.
    pub fn save(&self, path: &Path) -> Result<(), PairingsError> {
        let backup = backup_path(path);
        switchboard_wire::fsutil::write_atomic_with_backup(path, self.to_text().as_bytes(), &backup)
            .map_err(|source| PairingsError::Write {
                path: path.to_path_buf(),
                source,
            })
    }
}

/// Whether `v` is what JavaScript's `version === 1` accepts: the number 1 (also written `1.0`
/// or `1e0`).
fn is_version_one(v: &Value) -> bool {
    v.as_u64() == Some(PAIRINGS_VERSION) || v.as_f64() == Some(1.0)
}

/// Where [`PairingsFile::save`] keeps the previous file: `path` with `.bak` appended
/// (`phoneline-pairings.json.bak`).
pub fn backup_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(".bak");
    PathBuf::from(s)
}

/// Why a `decidedAt` is not a time LumiAgent keeps: the words a record's problem list shows.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
enum EpochMsError {
    /// A number, but negative, fractional or past JavaScript's exact integers (2^53).
    #[error(
        "expected a whole, non-negative number of milliseconds since the Unix epoch, found {0}"
    )]
    NotWhole(serde_json::Number),
    /// Not a number at all (the JSON type's words).
    #[error("expected a number (epoch milliseconds), found {0}")]
    NotANumber(&'static str),
}

/// `v` as whole epoch milliseconds: an integer, or a float with no fraction below 2^53 (what
/// JavaScript's `Date.now()` can have written).
fn whole_ms(v: &Value) -> Result<u64, EpochMsError> {
    if let Some(n) = v.as_u64() {
        return Ok(n);
    }
    match v {
        Value::Number(n) => match n.as_f64() {
            Some(f) if f >= 0.0 && f.fract() == 0.0 && f < 9.007_199_254_740_992e15 => Ok(f as u64),
            _ => Err(EpochMsError::NotWhole(n.clone())),
        },
        other => Err(EpochMsError::NotANumber(type_words(other))),
    }
}

/// Every field of a record that is missing or of the wrong shape, in the format's order.
fn record_problems(fields: &Map<String, Value>, at: &JsonPath) -> Vec<(JsonPath, String)> {
    RECORD_FIELDS
        .iter()
        .filter_map(|key| field_problem(key, fields.get(*key)).map(|m| (at.key(key), m)))
        .collect()
}

/// What is wrong with field `key` of a record holding `v` (`None`: missing), if anything.
fn field_problem(key: &str, v: Option<&Value>) -> Option<String> {
    let Some(v) = v else {
        return Some("missing".into());
    };
    match key {
        "allowed" if !v.is_boolean() => {
            Some(format!("expected a boolean, found {}", type_words(v)))
        }
        "decidedAt" => whole_ms(v).err().map(|e| e.to_string()),
        "identifier" | "displayName" | "manifestHash" if !v.is_string() => {
            Some(format!("expected a string, found {}", type_words(v)))
        }
        _ => None,
    }
}

fn check_record(fields: &Map<String, Value>, at: &JsonPath) -> Result<(), (JsonPath, String)> {
    match record_problems(fields, at).into_iter().next() {
        Some(first) => Err(first),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use proptest::prelude::*;

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            (-1e6f64..1e6)
                .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
            "\\PC{0,8}".prop_map(Value::String),
            "[\\x00-\\x1f\"\\\\\u{2028}]{0,4}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(("[a-z0-9]{1,4}", inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// `js_pretty` writes JSON that reads back to the same value (JavaScript's key order and
        /// number forms), and re-writing it is byte-identical.
        #[test]
        fn js_pretty_round_trips(v in json_value()) {
            let text = js_pretty(&v);
            let back: Value = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(switchboard_wire::js_json::stringify(&back), switchboard_wire::js_json::stringify(&v));
            prop_assert_eq!(js_pretty(&back), text);
        }

        /// A file with arbitrary unknown members at every level round-trips byte for byte.
        #[test]
        fn unknown_members_survive(top in json_value(), rec in json_value(), ms in 0u64..(1u64 << 53)) {
            let mut file = PairingsFile::new();
            let mut record = PairingRecord::new("x", "X", true, "ab", ms);
            record.fields.insert("zExtra".into(), rec);
            file.insert("x", record);
            file.top.insert("zTop".into(), top);
            let text = file.to_text();
            let back = PairingsFile::parse(&text).unwrap();
            prop_assert_eq!(back.to_text(), text);
            prop_assert_eq!(back.get("x").unwrap().decided_at(), ms);
        }
    }
}
