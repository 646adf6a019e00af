//! The one loader for OpenPhone runtime-protocol manifests, and their rule checks.
//!
//! Spec: `openphone-runtime-protocol.md`, "Single Sources Of Truth" (commands, events,
//! capabilities manifests), "Versioning" (every manifest carries an integer `version`, loaded
//! through one loader that accepts an inclusive supported range — here
//! [`crate::app_info::RUNTIME_PROTOCOL_RANGE`]) and "Version-bump policy" (a command's
//! `superseded_by` names an existing command and is set only alongside `deprecated: true`).
//!
//! Every manifest goes through [`parse_manifest`], which tells the kind apart by its top-level
//! list (`commands`, `events`, `capabilities`), checks the version first, then walks the whole
//! document and reports every problem it finds (file and field path each), not just the first.
//! Top-level `deprecated` and `superseded_by` are accepted (the corpus marks both manifests
//! `deprecated: true, superseded_by: "ifp1/"`): they are recorded, not enforced.
//!
//! Command to ifp/1 tool: the ifp/1 tool list (`openphone-tools.ifp1.json`) names each tool's old
//! command in `x-openphone.superseded_command`; across all 37 the tool's name is the command's
//! name without its `openphone.` prefix (`openphone.calls.place` -> `calls.place`), and
//! `x-openphone.superseded_aliases` repeats the command's aliases. [`Command::ifp1_tool`] applies
//! that rule; [`cross_check_catalogue`] checks it (and risk, capability, confirmation) against a
//! loaded tool list.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};
use ts_rs::TS;

use super::tools::ToolCatalogue;
use super::{kind_of, read_json, Checker, ConfirmationPolicy, Problem, Risk, RuntimeError};
use crate::app_info::RUNTIME_PROTOCOL_RANGE;

/// File name of the commands manifest (spec: "Single Sources Of Truth").
pub const COMMANDS_FILE: &str = "openphone-commands.json";
/// File name of the events manifest.
pub const EVENTS_FILE: &str = "openphone-events.json";
/// File name of the capabilities manifest (not in the public corpus: optional when loading a
/// directory; its absence is a warning in the load report).
pub const CAPABILITIES_FILE: &str = "openphone-capabilities.json";
/// The prefix the ifp/1 tool names drop from the old command names.
pub const COMMAND_PREFIX: &str = "openphone.";

/// Event directions allowed in the events manifest.
pub const EVENT_DIRECTIONS: [&str; 3] = ["phone_to_runtime", "runtime_to_phone", "bidirectional"];

/// Which of the three manifests a document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum ManifestKind {
    /// `openphone-commands.json`: has a top-level `commands` list.
    Commands,
    /// `openphone-events.json`: has a top-level `events` list.
    Events,
    /// `openphone-capabilities.json`: has a top-level `capabilities` list.
    Capabilities,
}

/// What every manifest carries at top level: its version and the tolerated deprecation marks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ManifestHeader {
    /// The manifest's integer `version`, within the supported range.
    pub version: u32,
    /// Top-level `deprecated` (false when absent).
    pub deprecated: bool,
    /// Top-level `superseded_by` (the corpus says `ifp1/`), recorded as given.
    pub superseded_by: Option<String>,
}

/// One command of the commands manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct Command {
    /// Full command name (`openphone.calls.place`).
    pub name: String,
    /// Other names that resolve to this command (`calls.place`).
    pub aliases: Vec<String>,
    /// The Android tool that runs it (`calls_place`).
    pub android_tool: String,
    /// What the command does, in words.
    pub description: String,
    /// Grouping (`calls`), empty when absent.
    pub category: String,
    /// `low`, `medium` or `high`.
    pub risk: Risk,
    /// The phone capability it needs (`calls.place`).
    pub capability: String,
    /// The old confirmation policy.
    pub confirmation: ConfirmationPolicy,
    /// `safe_read`, `private_read` or `dangerous` when given.
    pub default_exposure: Option<String>,
    /// `deprecated` (false when absent).
    pub deprecated: bool,
    /// `superseded_by`: the replacing command's name, only with `deprecated: true`.
    pub superseded_by: Option<String>,
}

impl Command {
    /// The ifp/1 tool name of this command: its name without the `openphone.` prefix
    /// (`openphone.calls.place` -> `calls.place`); `None` for a name without the prefix.
    pub fn ifp1_tool(&self) -> Option<&str> {
        self.name
            .strip_prefix(COMMAND_PREFIX)
            .filter(|rest| !rest.is_empty())
    }
}

/// The loaded commands manifest, with an index of names and aliases.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandsManifest {
    /// Version and deprecation marks.
    pub header: ManifestHeader,
    /// The commands in file order.
    pub commands: Vec<Command>,
    #[serde(skip)]
    index: HashMap<String, usize>,
}

impl CommandsManifest {
    /// The command named `name`, or whose alias is `name`; `None` when neither.
    pub fn resolve(&self, name: &str) -> Option<&Command> {
        self.index.get(name).and_then(|&i| self.commands.get(i))
    }

    /// Number of aliases across all commands.
    pub fn alias_count(&self) -> usize {
        self.commands.iter().map(|c| c.aliases.len()).sum()
    }
}

/// One event of the events manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct Event {
    /// Protocol event name (`runtime.tool.requested`).
    pub name: String,
    /// `phone_to_runtime`, `runtime_to_phone` or `bidirectional`.
    pub direction: String,
}

/// How one runtime carries protocol events on its wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct TransportMapping {
    /// The runtime (`openclaw`).
    pub runtime: String,
    /// Its transport (`node.event`).
    pub transport: String,
    /// `(protocol event, wire name)` pairs; one protocol event may have several wire names.
    pub events: Vec<(String, String)>,
}

/// The loaded events manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventsManifest {
    /// Version and deprecation marks.
    pub header: ManifestHeader,
    /// The events in file order.
    pub events: Vec<Event>,
    /// Per-runtime wire names.
    pub transport_mappings: Vec<TransportMapping>,
}

/// One capability of the capabilities manifest (its shape is not in the public corpus: an entry
/// is a non-empty string or an object with a non-empty `name` and optional `description`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export, rename = "RuntimeCapability")]
pub struct Capability {
    /// Capability name (`calls.place`).
    pub name: String,
    /// Optional description.
    pub description: Option<String>,
}

/// The loaded capabilities manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CapabilitiesManifest {
    /// Version and deprecation marks.
    pub header: ManifestHeader,
    /// The capabilities in file order.
    pub capabilities: Vec<Capability>,
}

/// Any of the three manifests, as [`parse_manifest`] returns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Manifest {
    /// A commands manifest.
    Commands(CommandsManifest),
    /// An events manifest.
    Events(EventsManifest),
    /// A capabilities manifest.
    Capabilities(CapabilitiesManifest),
}

impl Manifest {
    /// Which manifest this is.
    pub fn kind(&self) -> ManifestKind {
        match self {
            Self::Commands(_) => ManifestKind::Commands,
            Self::Events(_) => ManifestKind::Events,
            Self::Capabilities(_) => ManifestKind::Capabilities,
        }
    }

    /// The manifest's header (version and deprecation marks).
    pub fn header(&self) -> &ManifestHeader {
        match self {
            Self::Commands(m) => &m.header,
            Self::Events(m) => &m.header,
            Self::Capabilities(m) => &m.header,
        }
    }
}

/// A directory's runtime protocol: commands and events (required), capabilities (optional) and
/// the load report's warnings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuntimeProtocol {
    /// The directory loaded.
    pub dir: PathBuf,
    /// `openphone-commands.json`.
    pub commands: CommandsManifest,
    /// `openphone-events.json`.
    pub events: EventsManifest,
    /// `openphone-capabilities.json` when present.
    pub capabilities: Option<CapabilitiesManifest>,
    /// Warnings that do not fail the load, in words (a missing capabilities manifest; commands
    /// whose capability the capabilities manifest does not declare).
    pub warnings: Vec<String>,
}

/// Whether `value` looks like an OpenPhone runtime-protocol manifest: an object with a `version`
/// and exactly one of the lists `commands`, `events`, `capabilities`, and no `ifp` field (which
/// marks an ifp/1 document). Used to route `switchboard manifest check FILE` here.
pub fn is_runtime_manifest(value: &Value) -> bool {
    let Some(obj) = value.as_object() else {
        return false;
    };
    obj.contains_key("version") && !obj.contains_key("ifp") && detect_kind(obj).is_ok()
}

fn detect_kind(obj: &Map<String, Value>) -> Result<ManifestKind, String> {
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
        [] => Err("not a runtime manifest: expected a top-level `commands`, `events` or `capabilities` list".to_string()),
        _ => Err("ambiguous manifest: more than one of `commands`, `events`, `capabilities` at top level".to_string()),
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
        Err(msg) => {
            c.push("", msg);
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

fn list<'a>(c: &mut Checker, obj: &'a Map<String, Value>, key: &str) -> &'a [Value] {
    match obj.get(key) {
        Some(Value::Array(items)) => items,
        Some(other) => {
            c.push(key, format!("must be a list, found {}", kind_of(other)));
            &[]
        }
        None => {
            c.push(key, "missing (a list is required)");
            &[]
        }
    }
}

fn parse_commands(
    c: &mut Checker,
    obj: &Map<String, Value>,
    header: ManifestHeader,
) -> CommandsManifest {
    let items = list(c, obj, "commands");
    let mut commands: Vec<Command> = Vec::new();
    // Positions in `items` of each kept command, for field paths in later checks.
    let mut positions: Vec<usize> = Vec::new();
    let mut first_seen: HashMap<String, String> = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        let path = format!("commands[{i}]");
        let Some(cmd) = item.as_object() else {
            c.push(path, format!("must be an object, found {}", kind_of(item)));
            continue;
        };
        let name = c.req_str(cmd, "name", &path);
        let aliases = c.opt_str_list(cmd, "aliases", &path);
        let android_tool = c.req_str(cmd, "android_tool", &path);
        let description = c.req_str(cmd, "description", &path);
        let category = c.opt_str(cmd, "category", &path).unwrap_or_default();
        let risk = enum_field(c, cmd, "risk", &path, Risk::parse, "low, medium or high");
        let capability = c.req_str(cmd, "capability", &path);
        let confirmation = enum_field(
            c,
            cmd,
            "confirmation",
            &path,
            ConfirmationPolicy::parse,
            "none, ask_before_action or always",
        );
        let default_exposure = c.opt_str(cmd, "default_exposure", &path);
        let _ = c.opt_bool(cmd, "mcp", &path);
        let _ = c.opt_bool(cmd, "remote_runtime", &path);
        let deprecated = c.opt_bool(cmd, "deprecated", &path);
        let superseded_by = c.opt_str(cmd, "superseded_by", &path);

        // Names and aliases must each resolve to exactly one command.
        if let Some(n) = &name {
            claim(
                c,
                &mut first_seen,
                n,
                &format!("{path}.name"),
                "command name",
            );
        }
        for (j, a) in aliases.iter().enumerate() {
            claim(
                c,
                &mut first_seen,
                a,
                &format!("{path}.aliases[{j}]"),
                "alias",
            );
        }
        // superseded_by only alongside deprecated: true (checked here; the reference is
        // checked once every name is known).
        if let Some(s) = &superseded_by {
            if deprecated != Some(true) {
                c.push(
                    format!("{path}.superseded_by"),
                    format!(
                        "superseded_by {s:?} is set without deprecated: true (it may only appear on a deprecated command)"
                    ),
                );
            }
        }
        if let (
            Some(name),
            Some(android_tool),
            Some(description),
            Some(risk),
            Some(capability),
            Some(confirmation),
        ) = (
            name,
            android_tool,
            description,
            risk,
            capability,
            confirmation,
        ) {
            commands.push(Command {
                name,
                aliases,
                android_tool,
                description,
                category,
                risk,
                capability,
                confirmation,
                default_exposure,
                deprecated: deprecated.unwrap_or(false),
                superseded_by,
            });
            positions.push(i);
        } else if let Some(s) = superseded_by {
            // Still check the reference of an otherwise broken command.
            let names = command_names(items);
            check_reference(c, &names, &path, None, &s);
        }
    }
    let names = command_names(items);
    for (cmd, i) in commands.iter().zip(&positions) {
        if let Some(s) = &cmd.superseded_by {
            check_reference(c, &names, &format!("commands[{i}]"), Some(&cmd.name), s);
        }
    }
    let mut index = HashMap::new();
    for (i, cmd) in commands.iter().enumerate() {
        index.entry(cmd.name.clone()).or_insert(i);
    }
    for (i, cmd) in commands.iter().enumerate() {
        for a in &cmd.aliases {
            index.entry(a.clone()).or_insert(i);
        }
    }
    CommandsManifest {
        header,
        commands,
        index,
    }
}

fn command_names(items: &[Value]) -> BTreeSet<String> {
    items
        .iter()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .map(str::to_string)
        .collect()
}

fn check_reference(
    c: &mut Checker,
    names: &BTreeSet<String>,
    path: &str,
    own: Option<&str>,
    target: &str,
) {
    if own == Some(target) {
        c.push(
            format!("{path}.superseded_by"),
            format!("superseded_by {target:?} names the command itself"),
        );
    } else if !names.contains(target) {
        c.push(
            format!("{path}.superseded_by"),
            format!("superseded_by {target:?} does not name an existing command"),
        );
    }
}

fn claim(c: &mut Checker, seen: &mut HashMap<String, String>, name: &str, path: &str, what: &str) {
    if let Some(first) = seen.get(name) {
        c.push(
            path.to_string(),
            format!("{what} {name:?} is already used at {first}"),
        );
    } else {
        seen.insert(name.to_string(), path.to_string());
    }
}

fn enum_field<T>(
    c: &mut Checker,
    obj: &Map<String, Value>,
    key: &str,
    path: &str,
    parse: fn(&str) -> Option<T>,
    expected: &str,
) -> Option<T> {
    let p = super::join_path(path, key);
    match obj.get(key) {
        None | Some(Value::Null) => {
            c.push(p, format!("missing (one of {expected})"));
            None
        }
        Some(Value::String(s)) => {
            let parsed = parse(s);
            if parsed.is_none() {
                c.push(p, format!("{s:?} is not one of {expected}"));
            }
            parsed
        }
        Some(other) => {
            c.push(
                p,
                format!("must be one of {expected}, found {}", kind_of(other)),
            );
            None
        }
    }
}

fn parse_events(
    c: &mut Checker,
    obj: &Map<String, Value>,
    header: ManifestHeader,
) -> EventsManifest {
    let items = list(c, obj, "events");
    let mut events = Vec::new();
    let mut seen = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        let path = format!("events[{i}]");
        let Some(ev) = item.as_object() else {
            c.push(path, format!("must be an object, found {}", kind_of(item)));
            continue;
        };
        let name = c.req_str(ev, "name", &path);
        let direction = c.req_str(ev, "direction", &path);
        if let Some(d) = &direction {
            if !EVENT_DIRECTIONS.contains(&d.as_str()) {
                c.push(
                    format!("{path}.direction"),
                    format!("{d:?} is not one of {}", EVENT_DIRECTIONS.join(", ")),
                );
            }
        }
        if let Some(n) = &name {
            claim(c, &mut seen, n, &format!("{path}.name"), "event name");
        }
        if let (Some(name), Some(direction)) = (name, direction) {
            events.push(Event { name, direction });
        }
    }
    let known: BTreeSet<&str> = events.iter().map(|e| e.name.as_str()).collect();
    let mut transport_mappings = Vec::new();
    match obj.get("transport_mappings") {
        None | Some(Value::Null) => {}
        Some(Value::Array(maps)) => {
            for (i, m) in maps.iter().enumerate() {
                let path = format!("transport_mappings[{i}]");
                let Some(m) = m.as_object() else {
                    c.push(path, format!("must be an object, found {}", kind_of(m)));
                    continue;
                };
                let runtime = c.req_str(m, "runtime", &path);
                let transport = c.req_str(m, "transport", &path);
                let mut pairs = Vec::new();
                let epath = format!("{path}.events");
                match m.get("events") {
                    Some(Value::Array(es)) => {
                        for (j, e) in es.iter().enumerate() {
                            let p = format!("{epath}[{j}]");
                            let Some(e) = e.as_object() else {
                                c.push(p, format!("must be an object, found {}", kind_of(e)));
                                continue;
                            };
                            let protocol = c.req_str(e, "protocol", &p);
                            let wire = c.req_str(e, "wire", &p);
                            if let Some(pr) = &protocol {
                                if !known.contains(pr.as_str()) {
                                    c.push(
                                        format!("{p}.protocol"),
                                        format!("{pr:?} is not an event of this manifest"),
                                    );
                                }
                            }
                            if let (Some(pr), Some(w)) = (protocol, wire) {
                                pairs.push((pr, w));
                            }
                        }
                    }
                    Some(other) => {
                        c.push(epath, format!("must be a list, found {}", kind_of(other)))
                    }
                    None => c.push(epath, "missing (a list is required)"),
                }
                if let (Some(runtime), Some(transport)) = (runtime, transport) {
                    transport_mappings.push(TransportMapping {
                        runtime,
                        transport,
                        events: pairs,
                    });
                }
            }
        }
        Some(other) => c.push(
            "transport_mappings",
            format!("must be a list, found {}", kind_of(other)),
        ),
    }
    EventsManifest {
        header,
        events,
        transport_mappings,
    }
}

fn parse_capabilities(
    c: &mut Checker,
    obj: &Map<String, Value>,
    header: ManifestHeader,
) -> CapabilitiesManifest {
    let items = list(c, obj, "capabilities");
    let mut capabilities = Vec::new();
    let mut seen = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        let path = format!("capabilities[{i}]");
        let cap = match item {
            Value::String(s) if !s.trim().is_empty() => Some(Capability {
                name: s.clone(),
                description: None,
            }),
            Value::Object(o) => {
                let name = c.req_str(o, "name", &path);
                let description = c.opt_str(o, "description", &path);
                name.map(|name| Capability { name, description })
            }
            other => {
                c.push(
                    path.clone(),
                    format!(
                        "must be a capability name or an object with a name, found {}",
                        kind_of(other)
                    ),
                );
                None
            }
        };
        if let Some(cap) = cap {
            claim(c, &mut seen, &cap.name, &path, "capability");
            capabilities.push(cap);
        }
    }
    CapabilitiesManifest {
        header,
        capabilities,
    }
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

/// Checks the commands manifest against the ifp/1 tool list: every command maps (by
/// [`Command::ifp1_tool`]) to a tool whose `x-openphone.superseded_command` names it back, with
/// the same aliases, risk, capability (`x-openphone.surface_capability`), confirmation and
/// Android tool; and every tool's old command exists. Returns every mismatch (empty when the two
/// agree, as they do in the corpus).
pub fn cross_check_catalogue(
    commands: &CommandsManifest,
    catalogue: &ToolCatalogue,
) -> Vec<Problem> {
    let mut c = Checker::new(COMMANDS_FILE);
    for (i, cmd) in commands.commands.iter().enumerate() {
        let path = format!("commands[{i}]");
        let Some(tool_name) = cmd.ifp1_tool() else {
            c.push(
                format!("{path}.name"),
                format!(
                    "{:?} does not start with {COMMAND_PREFIX:?}, so it has no ifp/1 tool name",
                    cmd.name
                ),
            );
            continue;
        };
        let Some(tool) = catalogue.get(tool_name) else {
            c.push(
                format!("{path}.name"),
                format!(
                    "{} maps to ifp/1 tool {tool_name:?}, which the tool list does not declare",
                    cmd.name
                ),
            );
            continue;
        };
        let mut differ = |field: &str, ours: String, theirs: String| {
            if ours != theirs {
                c.push(
                    format!("{path}.{field}"),
                    format!("{ours:?} here, but ifp/1 tool {tool_name} says {theirs:?}"),
                );
            }
        };
        differ(
            "name",
            cmd.name.clone(),
            tool.superseded_command.clone().unwrap_or_default(),
        );
        differ(
            "aliases",
            cmd.aliases.join(", "),
            tool.superseded_aliases.join(", "),
        );
        differ("risk", cmd.risk.to_string(), tool.risk.to_string());
        differ(
            "capability",
            cmd.capability.clone(),
            tool.surface_capability.clone().unwrap_or_default(),
        );
        differ(
            "confirmation",
            cmd.confirmation.as_str().to_string(),
            tool.old_confirmation
                .map(|p| p.as_str().to_string())
                .unwrap_or_default(),
        );
        differ(
            "android_tool",
            cmd.android_tool.clone(),
            tool.android_tool.clone().unwrap_or_default(),
        );
    }
    for tool in &catalogue.tools {
        if let Some(old) = &tool.superseded_command {
            if commands.resolve(old).map(|c| c.name.as_str()) != Some(old.as_str()) {
                c.push(
                    String::new(),
                    format!("ifp/1 tool {} supersedes command {old:?}, which this manifest does not have", tool.name),
                );
            }
        }
    }
    c.into_problems()
}
