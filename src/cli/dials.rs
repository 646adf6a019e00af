//! `switchboard dials FILE.jsonl [filters] [--stats] [--json]`: reads a dial export (JSON Lines,
//! one dial per line, as the "Live dials" window exports it) and prints the matching dials or the
//! per-op stats (nearest-rank percentiles). Bad lines are listed with their line number and field,
//! and nothing else is printed (exit code 1).

use std::path::PathBuf;
use std::process::ExitCode;

use switchboard::dials::{DialFilter, DialOutcome, ImportError, ImportedLog};

use super::CliResult;

/// Arguments of `switchboard dials`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The JSON Lines export to read.
    file: PathBuf,
    /// Only this op (e.g. `read_item`).
    #[arg(long)]
    op: Option<String>,
    /// Only this callee extension id.
    #[arg(long)]
    callee: Option<String>,
    /// Only this outcome: ok, tool_error, error, timed_out.
    #[arg(long)]
    outcome: Option<String>,
    /// Only slow dials (over one second).
    #[arg(long)]
    slow: bool,
    /// Case-insensitive text in request, response or error.
    #[arg(long)]
    text: Option<String>,
    /// At most this many dials (newest first).
    #[arg(long)]
    limit: Option<u64>,
    /// Print per-op stats instead of dials.
    #[arg(long)]
    stats: bool,
    /// Print JSON (dials as JSON Lines, stats as one JSON array).
    #[arg(long)]
    json: bool,
}

/// Runs `switchboard dials`.
pub(crate) fn run(args: Args) -> CliResult {
    let outcome = match args.outcome.as_deref() {
        Some(o) => Some(DialOutcome::parse(o).ok_or_else(|| {
            format!("--outcome {o:?}: expected ok, tool_error, error or timed_out")
        })?),
        None => None,
    };
    let log = match ImportedLog::read_jsonl_file(&args.file) {
        Ok(log) => log,
        Err(ImportError::BadLines { lines, total, .. }) => {
            eprintln!(
                "{}: {total} bad line(s), nothing read:",
                args.file.display()
            );
            for b in lines {
                let field = if b.field.is_empty() { "-" } else { &b.field };
                eprintln!("  line {} field {field}: {}", b.line, b.message);
            }
            return Ok(ExitCode::from(1));
        }
        Err(e) => return Err(e.to_string()),
    };
    let filter = DialFilter {
        op: args.op,
        callee: args.callee,
        outcome,
        slow: args.slow.then_some(true),
        text: args.text,
        limit: args.limit,
        ..DialFilter::default()
    };
    if args.stats {
        let stats = log.stats(&filter);
        if args.json {
            println!(
                "{}",
                serde_json::to_string(&stats).map_err(|e| e.to_string())?
            );
        } else {
            println!("op                     count  errors%   p50ms   p95ms   p99ms   slow");
            for s in stats {
                println!(
                    "{:<20} {:>7} {:>8.1} {:>7} {:>7} {:>7} {:>6}",
                    s.op,
                    s.count,
                    s.error_rate * 100.0,
                    s.p50_ms,
                    s.p95_ms,
                    s.p99_ms,
                    s.slow
                );
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let page = log.query(&filter);
    for d in &page.dials {
        if args.json {
            println!(
                "{}",
                serde_json::to_string(&**d).map_err(|e| e.to_string())?
            );
        } else {
            println!(
                "{}  {:<10} {}->{} {:<14} {:>6} ms {}{}",
                d.start_ms,
                d.outcome.as_str(),
                d.caller,
                d.callee,
                d.op,
                d.duration_ms,
                if d.slow { "SLOW " } else { "" },
                d.error.as_deref().unwrap_or("")
            );
        }
    }
    if !args.json {
        println!("{} of {} dials matched", page.dials.len(), page.total);
    }
    Ok(ExitCode::SUCCESS)
}
