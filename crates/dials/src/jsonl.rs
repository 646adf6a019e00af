//! Export of dials to JSON Lines and import of such a file into a read-only [`ImportedLog`].
//!
//! One [`Dial`] per line, as its JSON object (shape in [`Dial`]'s docs), UTF-8, `\n` after every
//! line. Export writes a temporary file in the target folder, fsyncs it and renames it over the
//! target, so a file is either whole or absent. Import is all or nothing: it reads every line,
//! and if any is bad returns [`ImportError::BadLines`] naming each bad line (1-based) and the
//! field at fault; only a file with no bad line becomes an [`ImportedLog`].

use std::collections::HashMap;
use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use ts_rs::TS;

use super::query::{run_query, run_stats, DialFilter, DialPage, OpStats};
use super::record::{Dial, JsonText};

/// Bad lines reported at most in one [`ImportError::BadLines`] (the total is always given).
pub const MAX_REPORTED_BAD_LINES: usize = 100;

/// What was wrong with one line of an imported file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct BadLine {
    /// 1-based line number.
    pub line: u64,
    /// The field at fault as a path (`outcome`, `request`, ...), or `""` when the line as a
    /// whole is not a JSON object.
    pub field: String,
    /// What was wrong.
    pub message: String,
}

/// Errors of export and import.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// Reading or writing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Some lines are not dials; nothing was imported.
    #[error("{path}: {total} bad line(s), nothing imported; first: {}", first_bad(.lines))]
    BadLines {
        /// The file.
        path: PathBuf,
        /// The first [`MAX_REPORTED_BAD_LINES`] bad lines, in file order.
        lines: Vec<BadLine>,
        /// How many lines were bad in all.
        total: u64,
    },
}

fn first_bad(lines: &[BadLine]) -> String {
    match lines.first() {
        Some(b) if b.field.is_empty() => format!("line {}: {}", b.line, b.message),
        Some(b) => format!("line {} field {}: {}", b.line, b.field, b.message),
        None => String::new(),
    }
}

/// Writes `dials` as JSON Lines to `out`. Returns the lines written.
///
/// # Errors
/// The writer's I/O errors.
pub fn write_jsonl<'d, W: Write>(
    dials: impl IntoIterator<Item = &'d Arc<Dial>>,
    out: W,
) -> std::io::Result<u64> {
    let mut out = BufWriter::new(out);
    let mut n = 0;
    for d in dials {
        serde_json::to_writer(&mut out, &**d).map_err(std::io::Error::other)?;
        out.write_all(b"\n")?;
        n += 1;
    }
    out.flush()?;
    Ok(n)
}

/// The marker a redacted export puts in place of a string value (see [`redact_value`]).
pub const REDACTED_STRING: &str = "<string>";
/// The marker in place of a number.
pub const REDACTED_NUMBER: &str = "<number>";
/// The marker in place of `true` or `false`.
pub const REDACTED_BOOL: &str = "<bool>";

/// A JSON value with its keys and shape kept and every value replaced by a type marker: a
/// string by `"<string>"`, a number by `"<number>"`, `true`/`false` by `"<bool>"`; `null`,
/// objects (every key, in order) and arrays (every element, in order) stay as they are, their
/// contents redacted the same way. Documented in `docs/protocol.md`, "Redacted exports".
pub fn redact_value(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Null => Value::Null,
        Value::Bool(_) => Value::String(REDACTED_BOOL.into()),
        Value::Number(_) => Value::String(REDACTED_NUMBER.into()),
        Value::String(_) => Value::String(REDACTED_STRING.into()),
        Value::Array(a) => Value::Array(a.iter().map(redact_value).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), redact_value(v)))
                .collect(),
        ),
    }
}

/// `d` with its request and response redacted ([`redact_value`]); everything else (ids, op,
/// times, outcome, error text) as it was.
pub fn redact_dial(d: &Dial) -> Dial {
    let red = |t: &JsonText| match t.to_value() {
        Ok(v) => JsonText::from_value(&redact_value(&v)),
        Err(_) => JsonText::from_value(&serde_json::Value::String(REDACTED_STRING.into())),
    };
    let mut out = d.clone();
    out.request = red(&d.request);
    out.response = d.response.as_ref().map(red);
    out
}

/// As [`export_jsonl_file`], with the request and response values redacted when `redact`
/// ([`redact_dial`]: keys and shapes kept).
///
/// # Errors
/// As [`export_jsonl_file`].
pub fn export_jsonl_file_with(
    dials: &[Arc<Dial>],
    path: &Path,
    redact: bool,
) -> Result<u64, ImportError> {
    if !redact {
        return export_jsonl_file(dials, path);
    }
    let redacted: Vec<Arc<Dial>> = dials.iter().map(|d| Arc::new(redact_dial(d))).collect();
    export_jsonl_file(&redacted, path)
}

/// Writes `dials` as JSON Lines to `path` atomically ([`switchboard_wire::fsutil::write_atomic_with`]: temp
/// file in the same folder, fsync, rename). Returns the lines written. The folder must exist: a
/// mistyped folder is an error, not a new folder (the app creates its own export folder).
///
/// # Errors
/// [`ImportError::Io`] naming `path` when its folder does not exist or cannot be written.
pub fn export_jsonl_file(dials: &[Arc<Dial>], path: &Path) -> Result<u64, ImportError> {
    let io = |source| ImportError::Io {
        path: path.to_owned(),
        source,
    };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(io(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("the folder {} does not exist", dir.display()),
        )));
    }
    switchboard_wire::fsutil::write_atomic_with(path, |file| write_jsonl(dials, file)).map_err(io)
}

/// Parses JSON Lines into dials. Blank lines are skipped. A line is bad when it is not a JSON
/// object with every [`Dial`] field of the right type, when its `id` is empty, or when its `id`
/// repeats an earlier line's.
///
/// # Errors
/// [`ImportError::BadLines`] listing the bad lines (nothing is returned then);
/// [`ImportError::Io`] when reading fails. `path` only names the source in errors.
pub fn parse_jsonl<R: BufRead>(input: R, path: &Path) -> Result<Vec<Dial>, ImportError> {
    let mut dials = Vec::new();
    let mut bad = Vec::new();
    let mut total_bad = 0u64;
    let mut seen: HashMap<Arc<str>, u64> = HashMap::new();
    for (i, line) in input.lines().enumerate() {
        let line_no = i as u64 + 1;
        let line = line.map_err(|source| ImportError::Io {
            path: path.to_owned(),
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let mut report = |field: &str, message: String| {
            total_bad += 1;
            if bad.len() < MAX_REPORTED_BAD_LINES {
                bad.push(BadLine {
                    line: line_no,
                    field: field.to_owned(),
                    message,
                });
            }
        };
        let mut de = serde_json::Deserializer::from_str(&line);
        let parsed: Result<Dial, _> = serde_path_to_error::deserialize(&mut de);
        let mut dial = match parsed {
            Ok(d) => d,
            Err(e) => {
                let field = e.path().to_string();
                let message = e.into_inner().to_string();
                // Missing fields are reported at the object itself: name them.
                // Syntax errors before any key have path `?`: the line as a whole.
                let field = if field == "." || field == "?" {
                    missing_field(&message).unwrap_or_default()
                } else {
                    field
                };
                report(&field, message);
                continue;
            }
        };
        if let Err(e) = de.end() {
            report("", format!("text after the dial object: {e}"));
            continue;
        }
        if dial.id.is_empty() {
            report("id", "empty dial id".into());
            continue;
        }
        if let Some(first) = seen.get(&dial.id) {
            report(
                "id",
                format!("duplicate dial id {:?} (first on line {first})", dial.id),
            );
            continue;
        }
        seen.insert(Arc::clone(&dial.id), line_no);
        dial.normalise();
        dials.push(dial);
    }
    if total_bad > 0 {
        return Err(ImportError::BadLines {
            path: path.to_owned(),
            lines: bad,
            total: total_bad,
        });
    }
    Ok(dials)
}

fn missing_field(message: &str) -> Option<String> {
    let rest = message.strip_prefix("missing field `")?;
    Some(rest.split('`').next()?.to_owned())
}

/// A read-only set of dials imported from a JSON Lines file, queried like the live log.
#[derive(Debug, Clone, Default)]
pub struct ImportedLog {
    dials: Vec<Arc<Dial>>,
    /// Indices into `dials` by timeline place: oldest arrival first
    /// ([`Dial::arrived_or_started_ms`]: a file written before arrivals were kept orders by
    /// start); a tie: the later line, as an export is newest first. A dial's `seq` is its place
    /// here plus one.
    order: Vec<usize>,
}

impl ImportedLog {
    /// Reads and validates a whole JSON Lines file (see [`parse_jsonl`]).
    ///
    /// # Errors
    /// [`ImportError::Io`] when the file cannot be read; [`ImportError::BadLines`] when any line
    /// is not a dial (then nothing is imported).
    pub fn read_jsonl_file(path: &Path) -> Result<Self, ImportError> {
        let f = std::fs::File::open(path).map_err(|source| ImportError::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::from_reader(std::io::BufReader::new(f), path)
    }

    /// Like [`ImportedLog::read_jsonl_file`] from any reader; `path` names the source in errors.
    ///
    /// # Errors
    /// As [`ImportedLog::read_jsonl_file`].
    pub fn from_reader<R: BufRead>(input: R, path: &Path) -> Result<Self, ImportError> {
        let mut dials = parse_jsonl(input, path)?;
        let mut order: Vec<usize> = (0..dials.len()).collect();
        order.sort_by_key(|&i| {
            (
                dials.get(i).map_or(0, Dial::arrived_or_started_ms),
                std::cmp::Reverse(i),
            )
        });
        for (place, &i) in order.iter().enumerate() {
            if let Some(d) = dials.get_mut(i) {
                d.seq = crate::record::Seq(place as u64 + 1);
            }
        }
        Ok(Self {
            dials: dials.into_iter().map(Arc::new).collect(),
            order,
        })
    }

    /// A page of the capture matching `query`, newest first, below `cursor` (as the live log's
    /// [`crate::DialLogHandle::history`], the same filter code): the rows, the next
    /// cursor, the exact count.
    ///
    /// # Errors
    /// [`crate::history::BadCursor`] for a cursor no page gave.
    pub fn history(
        &self,
        query: &crate::filter::CompiledQuery,
        cursor: Option<&str>,
        limit: Option<u32>,
        count: bool,
    ) -> Result<crate::history::HistoryPage, crate::history::BadCursor> {
        use crate::history::{self as h, MemRow};
        let before = match cursor {
            Some(c) => h::parse_cursor(c)?,
            None => u64::MAX,
        };
        let limit = limit.unwrap_or(h::DEFAULT_PAGE).clamp(1, h::MAX_PAGE) as usize;
        let rows = || {
            self.order
                .iter()
                .rev()
                .filter_map(|&i| self.dials.get(i))
                .map(MemRow::Dial)
        };
        let (entries, more) = h::page_in_memory(rows(), query, before, limit);
        let next = more
            .then(|| entries.last().map(|e| h::cursor_of(e.seq())))
            .flatten();
        Ok(h::HistoryPage {
            next,
            matched: count.then(|| h::MatchCount {
                count: h::count_in_memory(rows(), query),
                exact: true,
            }),
            oldest_ms: self.dials.iter().map(|d| d.start_ms).min(),
            newest_seq: self.dials.len() as u64,
            filter: query.line.clone(),
            skipped: 0,
            entries,
        })
    }

    /// The dials in file order.
    pub fn dials(&self) -> &[Arc<Dial>] {
        &self.dials
    }

    /// How many dials were imported.
    pub fn len(&self) -> usize {
        self.dials.len()
    }

    /// Whether the file held no dial.
    pub fn is_empty(&self) -> bool {
        self.dials.is_empty()
    }

    /// The page matching `filter`, newest first (file order counts as arrival order for ties).
    pub fn query(&self, filter: &DialFilter) -> DialPage {
        run_query(self.order.iter().filter_map(|&i| self.dials.get(i)), filter)
    }

    /// Per-op stats over the dials matching `filter`.
    pub fn stats(&self, filter: &DialFilter) -> Vec<OpStats> {
        run_stats(self.dials.iter(), filter)
    }

    /// Per-op stats over the capture's dials matching a compiled filter line, with how many
    /// were counted (all of them: a capture is in memory).
    pub fn line_stats(&self, query: &crate::filter::CompiledQuery) -> (Vec<OpStats>, u64) {
        let mut tally = crate::StatsTally::default();
        if query.dials {
            for d in self.dials.iter().filter(|d| query.matches_dial(d)) {
                tally.add_dial(d);
            }
        }
        let n = tally.dials();
        (tally.finish(), n)
    }
}
