//! `switchboard pairings show FILE [--json] [--registry FILE] [--describe ID=FILE]...`: the
//! phone lines of a `phoneline-pairings.json` (phone-line.md, "Discovery and pairing") as the
//! phone-line settings would show them. The file is read as LumiAgent reads it: one it treats
//! as empty (unreadable, not JSON, `version` not 1, `pairings` not an object) is said so on
//! stderr, naming what was wrong, and shows no line as paired.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use switchboard::phone_line::pairing::DescribeOutcome;
use switchboard::phone_line::pairings::{load_as_lumiagent, PairingsFile};
use switchboard::phone_line::registry::PhoneLineRegistry;
use switchboard::phone_line::summary::{summarize, DialResult, PhoneLineSummary};

use super::CliResult;

/// Arguments of `switchboard pairings`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: PairingsCommand,
}

#[derive(clap::Subcommand, Debug)]
enum PairingsCommand {
    /// Show each phone line of a pairings file: state, record, surfaces, warnings.
    Show {
        /// The pairings file (phoneline-pairings.json).
        file: PathBuf,
        /// Print the summaries as JSON (an array of PhoneLineSummary).
        #[arg(long)]
        json: bool,
        /// A phone-line registry settings file; the built-in registry (LumiRealm) otherwise.
        #[arg(long)]
        registry: Option<PathBuf>,
        /// A line's current describe answer, as ID=FILE (repeatable): compares its hash with the
        /// record's and shows its surfaces and exclusions.
        #[arg(long, value_name = "ID=FILE")]
        describe: Vec<String>,
    },
}

/// Runs `switchboard pairings ...`.
pub(crate) fn run(args: Args) -> CliResult {
    match args.command {
        PairingsCommand::Show {
            file,
            json,
            registry,
            describe,
        } => show(&file, json, registry.as_deref(), &describe),
    }
}

fn show(file: &Path, json: bool, registry: Option<&Path>, describe: &[String]) -> CliResult {
    let read = load_as_lumiagent(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let treated_as_empty = read.empty_reason().is_some();
    if let Some(reason) = read.empty_reason() {
        eprintln!(
            "{}: LumiAgent treats this file as empty because {reason}; no line is paired by it{}",
            file.display(),
            if describe.is_empty() {
                ""
            } else {
                " (the --describe answers have no record to compare with and are not used)"
            }
        );
    }
    let pairings = read.records_or_empty();
    let registry = match registry {
        Some(p) => PhoneLineRegistry::load(p).map_err(|e| format!("{}: {e}", p.display()))?,
        None => PhoneLineRegistry::builtin(),
    };
    let mut dials = Vec::new();
    for arg in describe.iter().filter(|_| !treated_as_empty) {
        let (id, path) = arg
            .split_once('=')
            .ok_or_else(|| format!("--describe {arg:?}: expected ID=FILE"))?;
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
        let value = serde_json::from_str(&text).map_err(|e| format!("{path}: not JSON: {e}"))?;
        dials.push(DialResult {
            namespace: id.to_string(),
            outcome: DescribeOutcome::Answered(value),
        });
    }
    let summaries = summarize(&registry, Some(&pairings), &dials);
    if json {
        let text = serde_json::to_string_pretty(&summaries).map_err(|e| e.to_string())?;
        println!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    for (i, s) in summaries.iter().enumerate() {
        if i > 0 {
            println!();
        }
        print_summary(s, &pairings);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_summary(s: &PhoneLineSummary, pairings: &PairingsFile) {
    let state = serde_json::to_value(s.state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    println!("{} ({}): {}", s.identifier, s.display_name, state);
    match s.allowed {
        Some(allowed) => println!("  allowed: {allowed}"),
        None => println!("  no pairing record"),
    }
    if let Some(ms) = s.decided_at {
        println!(
            "  decided at: {} ({ms} ms)",
            switchboard::timefmt::utc_text_ms(ms)
        );
    }
    if let Some(h) = &s.manifest_hash {
        println!("  manifest hash: {h}");
    }
    match (s.hash_matches_current, &s.current_manifest_hash) {
        (Some(true), _) => println!("  current describe: same manifest as decided on"),
        (Some(false), Some(h)) => {
            println!("  current describe: manifest changed since the decision (now {h}); LumiAgent re-approves it on its next discovery, nothing to do")
        }
        (_, Some(h)) => println!("  current describe hash: {h}"),
        _ => {}
    }
    if s.self_declared_name.is_some() || s.self_declared_version.is_some() {
        println!(
            "  self-declared (untrusted): name {:?}, version {:?}",
            s.self_declared_name.as_deref().unwrap_or(""),
            s.self_declared_version.as_deref().unwrap_or("")
        );
    }
    for note in &s.normalisation_notes {
        println!("  normalising dropped or changed: {note}");
    }
    for surface in &s.surfaces {
        let scope = serde_json::to_value(surface.scope)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        println!("  surface {} ({scope}): {}", surface.id, surface.label);
    }
    if !s.exclusions.is_empty() {
        println!("  excludeFromSearch: {}", s.exclusions.join(", "));
    }
    if let Some(record) = pairings.get(&s.identifier) {
        let unknown: Vec<&str> = record.unknown_fields().map(|(k, _)| k.as_str()).collect();
        if !unknown.is_empty() {
            println!("  other record fields (kept): {}", unknown.join(", "));
        }
    }
    for w in &s.warnings {
        println!("  warning: {w}");
    }
}
