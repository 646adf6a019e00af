//! `switchboard dials FILE.jsonl [filters] [--stats] [--json]`: reads a dial export (JSON Lines,
//! one dial per line, as the "Live dials" window exports it) and prints the matching dials or the
//! per-op stats (nearest-rank percentiles). Bad lines are listed with their line number and field,
//! and nothing else is printed (exit code 1).
//!
//! `switchboard dials check FILE.jsonl [--json]`: checks every dial against its op in
//! `phone-line.md` ([`switchboard::dial::conformance`]) and prints each dial that breaks
//! the spec with its id and its problems (path, what, the spec's line). Exit code 0 when every
//! dial follows the spec, 1 when one does not, 2 when the file cannot be read (bad lines listed),
//! so a phone-line author can run it in CI. Given a support bundle (`.tar.gz`), or a bundle's
//! `dials.jsonl` with its `dial-conformance.json` beside it, it reports the checks the bundle
//! recorded before it redacted the values (a redacted `"<string>"` cannot be checked again); a
//! redacted file without them is refused (exit 2), as is a bundle whose checks miss a dial.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use switchboard::dial::conformance::{check_dial, ScopeBook};
use switchboard::dials::{CompiledQuery, DialFilter, DialOutcome, ImportError, ImportedLog};

use super::CliResult;

/// Arguments of `switchboard dials`.
#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: Option<Sub>,
    /// The JSON Lines export to read.
    #[arg(required = true)]
    file: Option<PathBuf>,
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
    /// A filter line, as the Live dials view's (`docs/dial-filter.md`), e.g.
    /// `op:read_item -outcome:ok duration>1s word`; ANDed with the other options. Relative
    /// times (`after:-1h`) count from now; `phone:` matches device ids.
    #[arg(long, value_name = "LINE")]
    filter: Option<String>,
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

/// Subcommands of `switchboard dials`.
#[derive(clap::Subcommand, Debug)]
enum Sub {
    /// Check every dial of an export against phone-line.md; exit 1 when one breaks it.
    Check(CheckArgs),
}

/// Arguments of `switchboard dials check`.
#[derive(clap::Args, Debug)]
struct CheckArgs {
    /// The JSON Lines export to check, or a support bundle (`.tar.gz`: the checks it recorded
    /// before redacting its dials' values).
    file: PathBuf,
    /// Print one JSON object per dial that breaks the spec: `{id, op, callee, start_ms,
    /// op_class, findings}`.
    #[arg(long)]
    json: bool,
}

/// Most bad lines printed for a file that is refused (the count says how many there are).
const MAX_BAD_LINES_SHOWN: usize = 20;

/// Reads `file`, or prints its bad lines to stderr (at most [`MAX_BAD_LINES_SHOWN`]; a file
/// that is one JSON document, not JSON Lines, is said to be so first) and gives the exit code
/// to end with.
fn read(file: &Path, bad_exit: u8) -> Result<Result<ImportedLog, ExitCode>, String> {
    match ImportedLog::read_jsonl_file(file) {
        Ok(log) => Ok(Ok(log)),
        Err(ImportError::BadLines { lines, total, .. }) => {
            if let Some(what) = one_json_document(file) {
                eprintln!(
                    "{}: not a dial export: the file is one JSON {what} over several lines, and a \
                     dial export is JSON Lines, one dial per line (as Live dials' Export and \
                     `switchboard bundle` write it)",
                    file.display()
                );
            }
            eprintln!("{}: {total} bad line(s), nothing read:", file.display());
            let shown = lines.len().min(MAX_BAD_LINES_SHOWN);
            for b in lines.iter().take(shown) {
                let field = if b.field.is_empty() { "-" } else { &b.field };
                eprintln!("  line {} field {field}: {}", b.line, b.message);
            }
            if (total as usize) > shown {
                eprintln!("  ... and {} more", total as usize - shown);
            }
            Ok(Err(ExitCode::from(bad_exit)))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// `Some("object")` / `Some("array")` when `file` holds a single JSON document spread over
/// more than one line (a pretty-printed file, not JSON Lines).
fn one_json_document(file: &Path) -> Option<&'static str> {
    let text = std::fs::read_to_string(file).ok()?;
    if text.trim().lines().count() < 2 {
        return None;
    }
    match serde_json::from_str::<serde_json::Value>(&text).ok()? {
        serde_json::Value::Object(_) => Some("object"),
        serde_json::Value::Array(_) => Some("array"),
        _ => None,
    }
}

/// Where `dials check` takes each dial's conformance from.
enum Checks {
    /// Checked here, on the request and response in the file.
    Here,
    /// As a support bundle recorded them (`dial-conformance.json`, by dial id: `{op_class,
    /// findings}`), checked on the values the phone sent before the bundle redacted them.
    /// `from` names the file, for the summary.
    Recorded {
        by_id: BTreeMap<String, serde_json::Value>,
        from: String,
    },
}

/// The name of a support bundle's conformance file (`switchboard::support`).
const CONFORMANCE_FILE: &str = "dial-conformance.json";

/// Reads what `dials check` checks: a dial export, a support bundle (`.tar.gz`: its dials with
/// the checks it recorded), or a bundle's `dials.jsonl` taken out of it, whose values are
/// redacted: then the `dial-conformance.json` beside it is used, and without one the file is
/// refused (exit 2), since a redacted value cannot be checked against the spec.
fn open_for_check(file: &Path) -> Result<Result<(ImportedLog, Checks), ExitCode>, String> {
    if switchboard::support::open::is_gzip_file(file) {
        let bundle = switchboard::support::open::open_bundle(file).map_err(|e| e.to_string())?;
        return Ok(Ok((
            bundle.dials,
            Checks::Recorded {
                by_id: bundle.conformance,
                from: format!("{CONFORMANCE_FILE} in {}", file.display()),
            },
        )));
    }
    let log = match read(file, 2)? {
        Ok(log) => log,
        Err(code) => return Ok(Err(code)),
    };
    let page = log.query(&DialFilter::default());
    let Some(redacted) = page.dials.iter().rev().find(|d| {
        d.request
            .to_value()
            .is_ok_and(|v| switchboard::support::redact::is_redacted(&v))
    }) else {
        return Ok(Ok((log, Checks::Here)));
    };
    let beside = file
        .parent()
        .unwrap_or(Path::new("."))
        .join(CONFORMANCE_FILE);
    if !beside.exists() {
        eprintln!(
            "{}: its dials' values are redacted (dial {} has only type markers such as \
             \"<string>\" for its request's values), as a support bundle's dials.jsonl is: they \
             cannot be checked against the spec. The bundle's {CONFORMANCE_FILE} holds each \
             dial's check, made before the values were redacted: run `switchboard dials check` \
             on the bundle (.tar.gz), or keep {CONFORMANCE_FILE} beside this file.",
            file.display(),
            redacted.id
        );
        return Ok(Err(ExitCode::from(2)));
    }
    let text =
        std::fs::read_to_string(&beside).map_err(|e| format!("{}: {e}", beside.display()))?;
    let by_id =
        serde_json::from_str::<BTreeMap<String, serde_json::Value>>(&text).map_err(|e| {
            format!(
                "{}: not a support bundle's {CONFORMANCE_FILE} (a JSON object of each dial's \
             check by dial id): {e}",
                beside.display()
            )
        })?;
    Ok(Ok((
        log,
        Checks::Recorded {
            by_id,
            from: beside.display().to_string(),
        },
    )))
}

/// One finding of a recorded check (a [`switchboard::dial::conformance::SpecFinding`] as JSON)
/// in the words `SpecFinding`'s `Display` uses.
fn recorded_finding(f: &serde_json::Value) -> String {
    let s = |k: &str| f.get(k).and_then(serde_json::Value::as_str).unwrap_or("?");
    let line = f
        .get("spec_line")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    format!(
        "{}: {} ({} line {line}, \"{}\")",
        s("path"),
        s("problem"),
        s("spec"),
        s("spec_section")
    )
}

fn check(args: CheckArgs) -> CliResult {
    let (log, checks) = match open_for_check(&args.file)? {
        Ok(x) => x,
        Err(code) => return Ok(code),
    };
    let page = log.query(&DialFilter::default());
    let mut broken = 0u64;
    let mut unchecked = 0u64;
    // Oldest first, as the capture was taken.
    for d in page.dials.iter().rev() {
        let (op_class, findings): (serde_json::Value, Vec<(serde_json::Value, String)>) =
            match &checks {
                Checks::Here => {
                    let c = check_dial(d, ScopeBook::builtin());
                    (
                        serde_json::json!(c.op_class),
                        c.findings
                            .iter()
                            .map(|f| (serde_json::json!(f), f.to_string()))
                            .collect(),
                    )
                }
                Checks::Recorded { by_id, .. } => match by_id.get(&*d.id) {
                    Some(c) => (
                        c.get("op_class").cloned().unwrap_or_default(),
                        c.get("findings")
                            .and_then(serde_json::Value::as_array)
                            .map(|fs| {
                                fs.iter()
                                    .map(|f| (f.clone(), recorded_finding(f)))
                                    .collect()
                            })
                            .unwrap_or_default(),
                    ),
                    None => {
                        unchecked += 1;
                        if !args.json {
                            println!(
                                "{}  {} -> {} {}: not checked ({CONFORMANCE_FILE} has no entry \
                                 for it)",
                                d.id, d.caller, d.callee, d.op
                            );
                        }
                        continue;
                    }
                },
            };
        if findings.is_empty() {
            continue;
        }
        broken += 1;
        if args.json {
            let line = serde_json::json!({
                "id": &*d.id,
                "op": &*d.op,
                "callee": &*d.callee,
                "start_ms": d.start_ms,
                "op_class": op_class,
                "findings": findings.iter().map(|(v, _)| v).collect::<Vec<_>>(),
            });
            println!("{line}");
        } else {
            println!(
                "{}  {} -> {} {}: {} problem(s)",
                d.id,
                d.caller,
                d.callee,
                d.op,
                findings.len()
            );
            for (_, words) in &findings {
                println!("  {words}");
            }
        }
    }
    if !args.json {
        println!("{broken} of {} dials break phone-line.md", page.dials.len());
        if let Checks::Recorded { from, .. } = &checks {
            println!(
                "(as checked on the values the phone sent, before the support bundle redacted \
                 them: {from})"
            );
        }
        if unchecked > 0 {
            println!("{unchecked} dial(s) not checked: {CONFORMANCE_FILE} has no entry for them");
        }
    }
    Ok(if broken > 0 {
        ExitCode::from(1)
    } else if unchecked > 0 {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

/// Runs `switchboard dials`.
pub(crate) fn run(args: Args) -> CliResult {
    if let Some(Sub::Check(c)) = args.command {
        return check(c);
    }
    let Some(file) = args.file else {
        return Err("switchboard dials: give FILE.jsonl (or `check FILE.jsonl`)".to_string());
    };
    let outcome = match args.outcome.as_deref() {
        Some(o) => Some(DialOutcome::parse(o).ok_or_else(|| {
            format!("--outcome {o:?}: expected ok, tool_error, error or timed_out")
        })?),
        None => None,
    };
    let line = match args.filter.as_deref() {
        Some(l) => {
            let now = i64::try_from(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_millis())
                    .unwrap_or(0),
            )
            .unwrap_or(i64::MAX);
            Some(CompiledQuery::parse(l, now).map_err(|e| format!("--filter {l:?}: {e}"))?)
        }
        None => None,
    };
    if line.is_some() && args.stats {
        return Err(
            "--filter applies to the listing; use --op/--callee/--outcome with --stats".into(),
        );
    }
    let log = match read(&file, 1)? {
        Ok(log) => log,
        Err(code) => return Ok(code),
    };
    let limit = args.limit;
    let in_file = log.len();
    let filter = DialFilter {
        op: args.op,
        callee: args.callee,
        outcome,
        slow: args.slow.then_some(true),
        text: args.text,
        limit: if line.is_some() { None } else { limit },
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
    let mut page = log.query(&filter);
    if let Some(q) = &line {
        page.dials.retain(|d| q.matches_dial(d));
        page.total = page.dials.len() as u64;
        if let Some(l) = limit {
            page.dials
                .truncate(usize::try_from(l).unwrap_or(usize::MAX));
        }
    }
    for d in &page.dials {
        if args.json {
            println!(
                "{}",
                serde_json::to_string(&**d).map_err(|e| e.to_string())?
            );
        } else {
            println!(
                "{}  {:<10} {}->{} {:<14} {:>6} ms {}{}",
                switchboard::timefmt::utc_text_ms(u64::try_from(d.start_ms).unwrap_or(0)),
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
        println!(
            "{} of {in_file} dials matched{}",
            page.total,
            if (page.dials.len() as u64) < page.total {
                format!(", the newest {} shown (--limit)", page.dials.len())
            } else {
                String::new()
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}
