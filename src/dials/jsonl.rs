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
use super::record::Dial;

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

/// Writes `dials` as JSON Lines to `path` atomically ([`crate::fsutil::write_atomic_with`]: temp
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
    crate::fsutil::write_atomic_with(path, |file| write_jsonl(dials, file)).map_err(io)
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
        let dials = parse_jsonl(input, path)?;
        Ok(Self {
            dials: dials.into_iter().map(Arc::new).collect(),
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
        run_query(self.dials.iter(), filter)
    }

    /// Per-op stats over the dials matching `filter`.
    pub fn stats(&self, filter: &DialFilter) -> Vec<OpStats> {
        run_stats(self.dials.iter(), filter)
    }
}
