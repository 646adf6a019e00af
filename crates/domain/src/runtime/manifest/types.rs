//! The typed form of the three runtime-protocol manifests (commands, events, capabilities), the
//! file names and fixed vocabularies they use, and a directory's loaded [`RuntimeProtocol`].
//!
//! Spec: `openphone-runtime-protocol.md` "Single Sources Of Truth" and "Version-bump policy".
//! Parsing lives in [`super::commands`], [`super::events`] and [`super::load`].

use std::collections::HashMap;
use std::path::PathBuf;

use serde::Serialize;
use ts_rs::TS;

use crate::runtime::policy::{ConfirmationPolicy, Risk};

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
    /// Name or alias -> position in `commands` (built by the loader).
    #[serde(skip)]
    pub(super) index: HashMap<String, usize>,
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

/// Any of the three manifests, as [`parse_manifest`](super::parse_manifest) returns it.
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
