//! THE loader: reading a manifest from a file ([`load_manifest_file`]) or a JSON value
//! ([`parse_manifest`]), telling the kind apart, checking the version against the supported
//! range, and loading a whole directory with its load report ([`load_dir`]).
//!
//! Spec: `openphone-runtime-protocol.md` "Versioning" (one loader, inclusive supported range
//! [`switchboard_wire::app_info::RUNTIME_PROTOCOL_RANGE`]).

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Map, Value};

use super::commands::parse_commands;
use super::events::{parse_capabilities, parse_events};
use super::types::{
    Manifest, ManifestHeader, ManifestKind, RuntimeProtocol, CAPABILITIES_FILE, COMMANDS_FILE,
    EVENTS_FILE,
};
use crate::runtime::problem::{kind_of, read_json, Checker, Problem, RuntimeError};
use switchboard_wire::app_info::RUNTIME_PROTOCOL_RANGE;

/// Whether `value` looks like an OpenPhone runtime-protocol manifest: an object with a `version`
/// and exactly one of the lists `commands`, `events`, `capabilities`, and no `ifp` field (which
/// marks an ifp/1 document). Used to route `switchboard manifest check FILE` here.
pub fn is_runtime_manifest(value: &Value) -> bool {
    let Some(obj) = value.as_object() else {
        return false;
    };
    obj.contains_key("version") && !obj.contains_key("ifp") && detect_kind(obj).is_ok()
}

/// Why a document's kind cannot be told from its top-level lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
enum KindError {
    /// None of `commands`, `events`, `capabilities`.
    #[error(
        "not a runtime manifest: expected a top-level `commands`, `events` or `capabilities` list"
    )]
    NoList,
    /// More than one of them: which kind is meant is not for the loader to guess.
    #[error(
        "ambiguous manifest: more than one of `commands`, `events`, `capabilities` at top level"
    )]
    Ambiguous,
}

/// The manifest's kind, told by the one top-level list it has.
fn detect_kind(obj: &Map<String, Value>) -> Result<ManifestKind, KindError> {
    let found: Vec<ManifestKind> = [
        ("commands", ManifestKind::Commands),
        ("events", ManifestKind::Events),
        ("capabilities", ManifestKind::Capabilities),
    ]
    .into_iter()
    .filter(|(k, _)| obj.contains_key(*k))
    .map(|(_, kind)| kind)
    .collect();
    match found.as_slice() {
        [one] => Ok(*one),
        [] => Err(KindError::NoList),
        _ => Err(KindError::Ambiguous),
    }
}

/// Every problem in a runtime manifest (empty when it loads). `file` names the document in the
/// messages. This is what `switchboard manifest check FILE` prints for a runtime manifest.
pub fn check_manifest(value: &Value, file: &str) -> Vec<Problem> {
    match parse_manifest(value, file) {
        Ok(_) => Vec::new(),
        Err(e) => e.problems(),
    }
}

/// Reads and loads one manifest file through [`parse_manifest`]; errors name the file.
pub fn load_manifest_file(path: &Path) -> Result<Manifest, RuntimeError> {
    let value = read_json(path)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    parse_manifest(&value, &name)
}

/// THE loader: turns a commands, events or capabilities manifest into its typed form.
///
/// Order: the document must be an object; the kind is told by its top-level list; `version` must
/// be an integer inside [`RUNTIME_PROTOCOL_RANGE`] (otherwise the only problem reported is, e.g.,
/// `version: unsupported runtime protocol version: 2 (supported range: 1..1)`, since the rest of
/// a manifest of another version may mean something else); then the whole document is walked and
/// every problem found is returned in [`RuntimeError::Invalid`].
pub fn parse_manifest(value: &Value, file: &str) -> Result<Manifest, RuntimeError> {
    let mut c = Checker::new(file);
    let Some(obj) = value.as_object() else {
        c.push(
            "",
            format!("must be a JSON object, found {}", kind_of(value)),
        );
        return Err(RuntimeError::Invalid {
            problems: c.into_problems(),
        });
    };
    let kind = match detect_kind(obj) {
        Ok(k) => k,
        Err(e) => {
            c.push("", e.to_string());
            return Err(RuntimeError::Invalid {
                problems: c.into_problems(),
            });
        }
    };
    let Some(header) = check_header(&mut c, obj) else {
        return Err(RuntimeError::Invalid {
            problems: c.into_problems(),
        });
    };
    let manifest = match kind {
        ManifestKind::Commands => Manifest::Commands(parse_commands(&mut c, obj, header)),
        ManifestKind::Events => Manifest::Events(parse_events(&mut c, obj, header)),
        ManifestKind::Capabilities => {
            Manifest::Capabilities(parse_capabilities(&mut c, obj, header))
        }
    };
    if c.is_clean() {
        Ok(manifest)
    } else {
        Err(RuntimeError::Invalid {
            problems: c.into_problems(),
        })
    }
}

/// The message for a version outside the supported range (spec "Versioning").
pub fn unsupported_version_message(version: &str) -> String {
    format!(
        "unsupported runtime protocol version: {version} (supported range: {}..{})",
        RUNTIME_PROTOCOL_RANGE.0, RUNTIME_PROTOCOL_RANGE.1
    )
}

/// Version (range-checked; `None` stops the load) and the tolerated deprecation marks.
fn check_header(c: &mut Checker, obj: &Map<String, Value>) -> Option<ManifestHeader> {
    let version = match obj.get("version") {
        None | Some(Value::Null) => {
            c.push(
                "version",
                "missing: every runtime manifest carries an integer version",
            );
            return None;
        }
        Some(Value::Number(n)) => {
            if let Some(v) = n.as_u64() {
                let in_range = u32::try_from(v)
                    .ok()
                    .filter(|v| (RUNTIME_PROTOCOL_RANGE.0..=RUNTIME_PROTOCOL_RANGE.1).contains(v));
                match in_range {
                    Some(v) => v,
                    None => {
                        c.push("version", unsupported_version_message(&v.to_string()));
                        return None;
                    }
                }
            } else if let Some(v) = n.as_i64() {
                c.push("version", unsupported_version_message(&v.to_string()));
                return None;
            } else {
                c.push(
                    "version",
                    format!("must be an integer, found the number {n}"),
                );
                return None;
            }
        }
        Some(other) => {
            c.push(
                "version",
                format!("must be an integer, found {}", kind_of(other)),
            );
            return None;
        }
    };
    let deprecated = c.opt_bool(obj, "deprecated", "").unwrap_or(false);
    let superseded_by = c.opt_str(obj, "superseded_by", "");
    Some(ManifestHeader {
        version,
        deprecated,
        superseded_by,
    })
}

/// Loads a directory's runtime protocol: `openphone-commands.json` and `openphone-events.json`
/// (both required) and `openphone-capabilities.json` (optional).
///
/// A missing capabilities manifest is a warning in the report (the public corpus does not carry
/// it), never a failure of the other two. Problems in the commands, events and capabilities
/// manifests, and a missing commands or events manifest, are all collected and returned together
/// in [`RuntimeError::Invalid`] (an unreadable or non-JSON file is one problem there). When the
/// capabilities manifest is present, a command whose `capability` it does not declare is a
/// warning.
pub fn load_dir(dir: &Path) -> Result<RuntimeProtocol, RuntimeError> {
    let mut problems = Vec::new();
    let mut warnings = Vec::new();
    let mut load = |file: &str, what: &str| -> Result<Option<Manifest>, RuntimeError> {
        let path = dir.join(file);
        if !path.is_file() {
            problems.push(Problem {
                file: file.to_string(),
                path: String::new(),
                message: format!(
                    "not found in {} (the {what} manifest is required)",
                    dir.display()
                ),
            });
            return Ok(None);
        }
        match load_manifest_file(&path) {
            Ok(m) if kind_name(m.kind()) == what => Ok(Some(m)),
            Ok(m) => {
                problems.push(Problem {
                    file: file.to_string(),
                    path: String::new(),
                    message: format!(
                        "expected the {what} manifest, found a {} manifest",
                        kind_name(m.kind())
                    ),
                });
                Ok(None)
            }
            // Unreadable, not JSON, or rule problems: all reported together.
            Err(e) => {
                problems.extend(e.problems());
                Ok(None)
            }
        }
    };
    let commands = load(COMMANDS_FILE, "commands")?;
    let events = load(EVENTS_FILE, "events")?;
    let capabilities = if dir.join(CAPABILITIES_FILE).is_file() {
        load(CAPABILITIES_FILE, "capabilities")?
    } else {
        warnings.push(format!(
            "{CAPABILITIES_FILE}: not found in {}: capabilities were not loaded or checked (the commands and events manifests were)",
            dir.display()
        ));
        None
    };
    match (commands, events) {
        (Some(Manifest::Commands(commands)), Some(Manifest::Events(events)))
            if problems.is_empty() =>
        {
            let capabilities = match capabilities {
                Some(Manifest::Capabilities(caps)) => {
                    let declared: BTreeSet<&str> =
                        caps.capabilities.iter().map(|c| c.name.as_str()).collect();
                    for cmd in &commands.commands {
                        if !declared.contains(cmd.capability.as_str()) {
                            warnings.push(format!(
                                "{COMMANDS_FILE}: command {} needs capability {:?}, which {CAPABILITIES_FILE} does not declare",
                                cmd.name, cmd.capability
                            ));
                        }
                    }
                    Some(caps)
                }
                _ => None,
            };
            Ok(RuntimeProtocol {
                dir: dir.to_path_buf(),
                commands,
                events,
                capabilities,
                warnings,
            })
        }
        _ => Err(RuntimeError::Invalid { problems }),
    }
}

fn kind_name(kind: ManifestKind) -> &'static str {
    match kind {
        ManifestKind::Commands => "commands",
        ManifestKind::Events => "events",
        ManifestKind::Capabilities => "capabilities",
    }
}
