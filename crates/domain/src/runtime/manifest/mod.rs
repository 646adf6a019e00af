//! The one loader for OpenPhone runtime-protocol manifests, and their rule checks.
//!
//! Spec: `openphone-runtime-protocol.md`, "Single Sources Of Truth" (commands, events,
//! capabilities manifests), "Versioning" (every manifest carries an integer `version`, loaded
//! through one loader that accepts an inclusive supported range — here
//! [`switchboard_wire::app_info::RUNTIME_PROTOCOL_RANGE`]) and "Version-bump policy" (a command's
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
//!
//! ## Layout
//! - `types`: the typed manifests, file names and vocabularies, [`RuntimeProtocol`].
//! - `commands`: the commands manifest's rules and [`cross_check_catalogue`].
//! - `events`: the events and capabilities manifests' rules.
//! - `load`: [`parse_manifest`], [`load_manifest_file`], [`load_dir`] and the version check.

mod commands;
mod events;
mod load;
mod types;

pub use commands::cross_check_catalogue;
pub use load::{
    check_manifest, is_runtime_manifest, load_dir, load_manifest_file, parse_manifest,
    unsupported_version_message,
};
pub use types::{
    CapabilitiesManifest, Capability, Command, CommandsManifest, Event, EventsManifest, Manifest,
    ManifestHeader, ManifestKind, RuntimeProtocol, TransportMapping, CAPABILITIES_FILE,
    COMMANDS_FILE, COMMAND_PREFIX, EVENTS_FILE, EVENT_DIRECTIONS,
};
