//! `switchboard manifest check FILE` and `switchboard manifest excluded FILE PATH`.
//!
//! `check` first detects what kind of manifest FILE holds ([`detect`]), then runs that kind's
//! checker. Today it knows phone-line describe manifests (phone-line.md, "Manifest"); other
//! kinds (OpenPhone runtime manifests) are added as a [`ManifestKind`] variant, a clause in
//! [`detect`] and an arm in [`check`].

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::Value;
use switchboard::phone_line::{check, exclusions, manifest::SurfaceManifest};

use super::CliResult;

/// Arguments of `switchboard manifest`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: ManifestCommand,
}

#[derive(clap::Subcommand, Debug)]
enum ManifestCommand {
    /// List the problems of a manifest (exit 1 if any, 0 and "no problems" if none).
    Check {
        /// The manifest file (JSON), e.g. a phone line's describe answer.
        file: PathBuf,
    },
    /// Print the excludeFromSearch prefix of a describe manifest that covers PATH (exit 0), or
    /// say that none does (exit 1).
    Excluded {
        /// The describe manifest file (JSON).
        file: PathBuf,
        /// A path under character.extensions, e.g. lumirealm.payload.first_mes (a leading
        /// "character.extensions." is accepted).
        path: String,
    },
}

/// The kinds of manifest `manifest check` can tell apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ManifestKind {
    /// A phone line's describe answer (SurfaceManifest).
    PhoneLineDescribe,
    /// A Lumiverse extension's `spindle.json` (not checked here).
    SpindleExtension,
    /// An OpenPhone runtime-protocol manifest (commands, events or capabilities), checked by
    /// [`switchboard::runtime::check_manifest`] (version range, per-command rules).
    RuntimeProtocol,
}

impl ManifestKind {
    fn words(self) -> &'static str {
        match self {
            ManifestKind::PhoneLineDescribe => "phone-line describe manifest",
            ManifestKind::SpindleExtension => "Lumiverse extension manifest (spindle.json)",
            ManifestKind::RuntimeProtocol => "OpenPhone runtime-protocol manifest",
        }
    }
}

/// What kind of manifest `value` is, by its top-level members; `None` when it is none Switchboard
/// knows.
pub(crate) fn detect(value: &Value) -> Option<ManifestKind> {
    if switchboard::runtime::is_runtime_manifest(value) {
        return Some(ManifestKind::RuntimeProtocol);
    }
    let obj = value.as_object()?;
    if obj.contains_key("extension")
        || obj.contains_key("surfaces")
        || obj.contains_key("excludeFromSearch")
    {
        return Some(ManifestKind::PhoneLineDescribe);
    }
    if obj.contains_key("identifier")
        && (obj.contains_key("entry_backend") || obj.contains_key("permissions"))
    {
        return Some(ManifestKind::SpindleExtension);
    }
    None
}

fn read(file: &Path) -> Result<String, String> {
    std::fs::read_to_string(file).map_err(|e| format!("cannot read {}: {e}", file.display()))
}

/// Runs `switchboard manifest ...`.
pub(crate) fn run(args: Args) -> CliResult {
    match args.command {
        ManifestCommand::Check { file } => check(&file),
        ManifestCommand::Excluded { file, path } => excluded(&file, &path),
    }
}

fn check(file: &Path) -> CliResult {
    let text = read(file)?;
    let value: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", file.display()))?;
    let kind = detect(&value).ok_or_else(|| {
        format!(
            "{}: not a manifest switchboard knows (a phone-line describe manifest has \"extension\", \"surfaces\" and \"excludeFromSearch\"; an OpenPhone runtime manifest has \"version\" and \"commands\", \"events\" or \"capabilities\")",
            file.display()
        )
    })?;
    let problems: Vec<String> = match kind {
        ManifestKind::PhoneLineDescribe => check::check_manifest_text(&text, None)
            .map_err(|e| format!("{}: not JSON: {e}", file.display()))?
            .iter()
            .map(ToString::to_string)
            .collect(),
        ManifestKind::RuntimeProtocol => {
            let name = file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            switchboard::runtime::check_manifest(&value, &name)
                .iter()
                .map(ToString::to_string)
                .collect()
        }
        ManifestKind::SpindleExtension => {
            return Err(format!(
                "{}: a {}, which switchboard does not check; give a phone line's describe answer",
                file.display(),
                kind.words()
            ))
        }
    };
    if problems.is_empty() {
        println!("{}: {}: no problems", file.display(), kind.words());
        return Ok(ExitCode::SUCCESS);
    }
    let n = problems.len();
    println!(
        "{}: {}: {n} problem{}",
        file.display(),
        kind.words(),
        if n == 1 { "" } else { "s" }
    );
    for p in problems {
        println!("  {p}");
    }
    Ok(ExitCode::from(1))
}

fn excluded(file: &Path, path: &str) -> CliResult {
    let text = read(file)?;
    let manifest =
        SurfaceManifest::from_text(&text).map_err(|e| format!("{}: {e}", file.display()))?;
    let rel = exclusions::relative_to_extensions(path);
    match manifest.excluded_by(rel) {
        Some(prefix) => {
            println!("{prefix}");
            Ok(ExitCode::SUCCESS)
        }
        None => {
            println!("no excludeFromSearch prefix matches {rel}");
            Ok(ExitCode::from(1))
        }
    }
}
