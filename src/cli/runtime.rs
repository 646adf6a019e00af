//! `switchboard runtime check DIR_OR_FILE [--json]` and
//! `switchboard runtime autonomy LEVEL [--dir DIR] [--json]`: the OpenPhone runtime-protocol
//! manifests and what a phone asks you to confirm at an autonomy level
//! (spec `openphone-runtime-protocol.md`; library: `switchboard::runtime`).
//!
//! Exit codes: 0 everything loads; 1 problems were found (each printed as `FILE: PATH: MESSAGE`);
//! 2 the command could not run (unreadable path, bad level).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::json;
use switchboard::runtime::manifest::{Manifest, COMMANDS_FILE};
use switchboard::runtime::tools::{load_catalogue_from_dir, ToolCatalogue};
use switchboard::runtime::{
    autonomy_table, check_manifest, cross_check_catalogue, is_runtime_manifest, load_dir,
    parse_manifest, Autonomy, Problem, RuntimeError,
};

use super::CliResult;

/// Arguments of `switchboard runtime`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(clap::Subcommand, Debug)]
enum Sub {
    /// Check a directory of runtime manifests (openphone-commands.json, openphone-events.json,
    /// optional openphone-capabilities.json) or one manifest or ifp/1 tool-list file; print every
    /// problem.
    Check {
        /// A directory or a JSON file.
        path: PathBuf,
        /// Print one JSON object: `{ok, problems: [{file, path, message}], warnings, ...}`.
        #[arg(long)]
        json: bool,
    },
    /// Print, for each phone tool, whether it runs, asks you first, or is refused at LEVEL
    /// (observe_only, ask_before_action, trusted_actions).
    Autonomy {
        /// observe_only, ask_before_action or trusted_actions.
        level: String,
        /// Where the tool list is: a directory holding openphone-tools.ifp1.json (or ifp1/ or
        /// ../ifp1/ beside it), else openphone-commands.json. Default: the current directory.
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        /// Print the table as JSON (the `AutonomyTable` shape the UI uses).
        #[arg(long)]
        json: bool,
    },
}

/// Runs `switchboard runtime ...`.
pub(crate) fn run(args: Args) -> CliResult {
    match args.command {
        Sub::Check { path, json } => check(&path, json),
        Sub::Autonomy { level, dir, json } => autonomy(&level, &dir, json),
    }
}

fn print_json(v: &serde_json::Value) -> Result<(), String> {
    println!(
        "{}",
        serde_json::to_string_pretty(v).map_err(|e| e.to_string())?
    );
    Ok(())
}

fn finish(problems: &[Problem], warnings: &[String], summary: &[String], json: bool) -> CliResult {
    if json {
        print_json(&json!({
            "ok": problems.is_empty(),
            "problems": problems,
            "warnings": warnings,
            "summary": summary,
        }))?;
    } else {
        for line in summary {
            println!("{line}");
        }
        for w in warnings {
            println!("warning: {w}");
        }
        for p in problems {
            println!("{p}");
        }
        if problems.is_empty() {
            println!("ok");
        } else {
            println!("{} problem(s)", problems.len());
        }
    }
    Ok(if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn check(path: &Path, json: bool) -> CliResult {
    if path.is_dir() {
        return check_dir(path, json);
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    let value: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            let p = Problem {
                file: name,
                path: String::new(),
                message: format!("not valid JSON: {e}"),
            };
            return finish(&[p], &[], &[], json);
        }
    };
    if is_runtime_manifest(&value) {
        let problems = check_manifest(&value, &name);
        let summary = match parse_manifest(&value, &name) {
            Ok(m) => vec![describe(&name, &m)],
            Err(_) => vec![],
        };
        return finish(&problems, &[], &summary, json);
    }
    if value.get("ifp").is_some() && value.get("tools").is_some() {
        return match ToolCatalogue::parse(&value, &name) {
            Ok(c) => finish(
                &[],
                &[],
                &[format!("{name}: ifp/1 tool list, {} tools", c.tools.len())],
                json,
            ),
            Err(e) => finish(&e.problems(), &[], &[], json),
        };
    }
    let p = Problem {
        file: name,
        path: String::new(),
        message: "neither a runtime manifest (version + commands, events or capabilities) nor an ifp/1 tool list".to_string(),
    };
    finish(&[p], &[], &[], json)
}

fn describe(file: &str, m: &Manifest) -> String {
    let h = m.header();
    let dep = match (&h.deprecated, &h.superseded_by) {
        (true, Some(s)) => format!(", deprecated, superseded by {s}"),
        (true, None) => ", deprecated".to_string(),
        _ => String::new(),
    };
    let body = match m {
        Manifest::Commands(c) => {
            format!("{} commands, {} aliases", c.commands.len(), c.alias_count())
        }
        Manifest::Events(e) => format!(
            "{} events, {} transport mapping(s)",
            e.events.len(),
            e.transport_mappings.len()
        ),
        Manifest::Capabilities(c) => format!("{} capabilities", c.capabilities.len()),
    };
    format!("{file}: version {}{dep}: {body}", h.version)
}

fn check_dir(dir: &Path, json: bool) -> CliResult {
    let proto = match load_dir(dir) {
        Ok(p) => p,
        Err(e @ RuntimeError::Invalid { .. }) => return finish(&e.problems(), &[], &[], json),
        Err(e) => return Err(e.to_string()),
    };
    let mut summary = vec![
        describe(COMMANDS_FILE, &Manifest::Commands(proto.commands.clone())),
        describe(
            switchboard::runtime::manifest::EVENTS_FILE,
            &Manifest::Events(proto.events.clone()),
        ),
    ];
    if let Some(c) = &proto.capabilities {
        summary.push(describe(
            switchboard::runtime::manifest::CAPABILITIES_FILE,
            &Manifest::Capabilities(c.clone()),
        ));
    }
    let mut problems = Vec::new();
    let mut warnings = proto.warnings.clone();
    match load_catalogue_from_dir(dir) {
        Ok((catalogue, from)) if catalogue.source != COMMANDS_FILE => {
            problems.extend(cross_check_catalogue(&proto.commands, &catalogue));
            summary.push(format!(
                "every command checked against its ifp/1 tool in {}",
                from.display()
            ));
        }
        Err(e @ RuntimeError::Invalid { .. }) => problems.extend(e.problems()),
        Err(e @ (RuntimeError::Io { .. } | RuntimeError::Json { .. })) => {
            problems.extend(e.problems())
        }
        Ok(_) | Err(_) => warnings.push(format!(
            "no openphone-tools.ifp1.json found beside {}: commands were mapped to ifp/1 tool names by rule, not checked against the tool list",
            dir.display()
        )),
    }
    let unmapped: Vec<_> = proto
        .commands
        .commands
        .iter()
        .filter(|c| c.ifp1_tool().is_none())
        .map(|c| c.name.clone())
        .collect();
    if !unmapped.is_empty() {
        warnings.push(format!(
            "commands without an ifp/1 tool name: {}",
            unmapped.join(", ")
        ));
    }
    finish(&problems, &warnings, &summary, json)
}

fn autonomy(level: &str, dir: &Path, json: bool) -> CliResult {
    let autonomy: Autonomy = level.parse().map_err(|e: RuntimeError| e.to_string())?;
    let (catalogue, from) = load_catalogue_from_dir(dir).map_err(|e| e.to_string())?;
    let table = autonomy_table(&catalogue, autonomy);
    if json {
        print_json(&serde_json::to_value(&table).map_err(|e| e.to_string())?)?;
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "At {} ({} tools from {}): {} run, {} ask you first, {} refused",
        table.autonomy,
        table.rows.len(),
        from.display(),
        table.run_count,
        table.ask_count,
        table.refuse_count
    );
    let width = table.rows.iter().map(|r| r.tool.len()).max().unwrap_or(4);
    for r in &table.rows {
        let decision = match r.decision {
            switchboard::runtime::Decision::Run => "run",
            switchboard::runtime::Decision::Ask => "ASK",
            switchboard::runtime::Decision::Refuse => "refused",
        };
        println!(
            "{:<width$}  {:<6}  {:<7}  {}",
            r.tool,
            r.risk.as_str(),
            decision,
            r.reason
        );
    }
    println!("(A prediction from the phone's tool list: the phone asks and decides; Switchboard only mirrors.)");
    Ok(ExitCode::SUCCESS)
}
