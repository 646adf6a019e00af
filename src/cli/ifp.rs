//! `switchboard ifp ...`: check ifp/1 messages, replay conformance sequences, compute
//! `params_hash` (spec: `ifp1-notes.md`; corpus: `corpus/ifp1/fixtures/`).
//!
//! - `switchboard ifp validate [FILE]`: one message per line (stdin without FILE; blank lines
//!   skipped); prints `accept` or `reject <error_class> <reason>` per message; exit 1 when any is
//!   rejected.
//! - `switchboard ifp replay SEQUENCE.json`: runs a sequence file (the corpus's whole
//!   `sequences.json` or one scenario); prints `ok`/`MISMATCH` per step; exit 1 on any mismatch.
//! - `switchboard ifp hash [FILE]`: reads a params object; prints its canonical JSON, then its
//!   `params_hash`.
//!
//! Unreadable input or a file not in the expected format: message on stderr, exit 2.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;
use serde_json::Value;
use switchboard::ifp::{canonical_params, params_hash, validate_frame, MAX_FRAME_BYTES};

use super::CliResult;

/// Arguments of `switchboard ifp`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: IfpCommand,
}

#[derive(Subcommand, Debug)]
enum IfpCommand {
    /// Validate ifp/1 messages, one JSON object per line; prints `accept` or
    /// `reject <error_class> <reason>` per line. Exit 1 if any line is rejected.
    Validate {
        /// File of messages (one per line); stdin when omitted.
        file: Option<PathBuf>,
    },
    /// Replay a sequence file (corpus format) against a fresh receiver per scenario; prints
    /// `ok` or `MISMATCH` per step. Exit 1 on any mismatch.
    Replay {
        /// The sequence file: a whole `{scenarios: [...]}` file or one `{name, steps}` scenario.
        file: PathBuf,
    },
    /// Print the canonical JSON and the `params_hash` of a params object, one per line.
    Hash {
        /// File holding one JSON object; stdin when omitted.
        file: Option<PathBuf>,
    },
}

/// Runs `switchboard ifp ...`.
pub(crate) fn run(args: Args) -> CliResult {
    match args.command {
        IfpCommand::Validate { file } => validate_cmd(file.as_deref()),
        IfpCommand::Replay { file } => replay_cmd(&file),
        IfpCommand::Hash { file } => hash_cmd(file.as_deref()),
    }
}

fn open_input(file: Option<&Path>) -> Result<Box<dyn Read>, String> {
    match file {
        Some(p) => std::fs::File::open(p)
            .map(|f| Box::new(f) as Box<dyn Read>)
            .map_err(|e| format!("cannot read {}: {e}", p.display())),
        None => Ok(Box::new(std::io::stdin())),
    }
}

fn name_of(file: Option<&Path>) -> String {
    file.map_or_else(|| "stdin".to_string(), |p| p.display().to_string())
}

/// Reads one line (without `\n`) keeping at most `MAX_FRAME_BYTES + 1` bytes of it, so an
/// endless line cannot exhaust memory; the longer line is still reported as over the limit.
/// Returns `None` at end of input.
fn read_capped_line(reader: &mut impl BufRead) -> std::io::Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    let mut saw_any = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(saw_any.then_some(line));
        }
        saw_any = true;
        let (chunk, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (buf.get(..i).unwrap_or_default(), Some(i + 1)),
            None => (buf, None),
        };
        let room = (MAX_FRAME_BYTES + 1).saturating_sub(line.len());
        line.extend_from_slice(chunk.get(..chunk.len().min(room)).unwrap_or_default());
        let used = done.unwrap_or(buf.len());
        reader.consume(used);
        if done.is_some() {
            return Ok(Some(line));
        }
    }
}

fn validate_cmd(file: Option<&Path>) -> CliResult {
    let mut reader = BufReader::new(open_input(file)?);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut any_rejected = false;
    let mut line_no = 0usize;
    while let Some(mut line) = read_capped_line(&mut reader)
        .map_err(|e| format!("cannot read {} after line {line_no}: {e}", name_of(file)))?
    {
        line_no += 1;
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let text = match validate_frame(&line) {
            Ok(_) => "accept".to_string(),
            Err(r) => {
                any_rejected = true;
                format!("reject {} {}", r.class, r.reason.replace('\n', " "))
            }
        };
        writeln!(out, "{text}").map_err(|e| format!("cannot write output: {e}"))?;
    }
    Ok(if any_rejected {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn read_json(file: Option<&Path>) -> Result<Value, String> {
    let mut text = String::new();
    open_input(file)?
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read {}: {e}", name_of(file)))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: invalid JSON: {e}", name_of(file)))
}

fn replay_cmd(file: &Path) -> CliResult {
    let doc = read_json(Some(file))?;
    let reports = switchboard::ifp::conformance::run_document(&doc)
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let mismatches = reports.iter().filter(|r| !r.ok()).count();
    for r in &reports {
        println!("{r}");
    }
    println!("{} steps, {mismatches} mismatches", reports.len());
    Ok(if mismatches > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn hash_cmd(file: Option<&Path>) -> CliResult {
    let params = read_json(file)?;
    if !params.is_object() {
        return Err(format!("{}: expected a params JSON object", name_of(file)));
    }
    println!("{}", canonical_params(&params));
    println!("{}", params_hash(&params));
    Ok(ExitCode::SUCCESS)
}
