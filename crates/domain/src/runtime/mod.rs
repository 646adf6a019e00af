//! # OpenPhone runtime protocol: manifests, tool catalogue and autonomy
//!
//! Why this exists: a paired phone that still speaks the OpenPhone runtime protocol describes
//! itself with three manifests (commands, events, capabilities), and its ifp/1 successor declares
//! the same 37 phone tools in `openphone-tools.ifp1.json`. Switchboard reads them to show the
//! person which phone tools exist, what each one risks, and what the phone will ask them to
//! confirm at each autonomy level. Switchboard only mirrors: nothing here approves, rejects or
//! cancels an action on the phone.
//!
//! Spec: `openphone-runtime-protocol.md` — "Single Sources Of Truth" and "Versioning" (the one
//! loader with an inclusive supported range, [`switchboard_wire::app_info::RUNTIME_PROTOCOL_RANGE`]),
//! "Version-bump policy" (`deprecated` / `superseded_by`), "Autonomy" (the three levels and the
//! inheritance rule); `ifp1-notes.md` "Corpus" (`risk`, high = the old `confirmation: always`).
//!
//! ## Layout
//! Modules, each depending only on those listed before it (a DAG; this file only re-exports):
//! - `problem`: [`Problem`], [`RuntimeError`] and the checker that collects every problem.
//! - `policy`: [`Risk`], [`ConfirmationPolicy`], [`Access`].
//! - `catalogue`: the ifp/1 tool list (per tool: description, risk, capability, the old
//!   confirmation policy, read-only or mutating); lookup by tool name.
//! - [`manifest`]: the one loader for commands, events and capabilities manifests, the rule
//!   checks (all problems, not just the first), directory loading with its load report, alias
//!   resolution and the command-to-ifp/1-tool mapping (checked against `catalogue`).
//! - [`tools`]: the tool catalogue and where it comes from (`catalogue`'s tool list, or derived
//!   from the commands manifest; found in a directory).
//! - [`autonomy`]: what each tool does at `observe_only`, `ask_before_action`,
//!   `trusted_actions` (run, ask the person first, refused) and the table the UI shows.

pub mod autonomy;
mod catalogue;
pub mod manifest;
mod policy;
mod problem;
pub mod tools;

pub use autonomy::{
    autonomy_table, decide, decide_tool, effective_autonomy, Access, Autonomy, AutonomyRow,
    AutonomyTable, Decision, ToolDecision,
};
pub use manifest::{
    check_manifest, cross_check_catalogue, is_runtime_manifest, load_dir, load_manifest_file,
    parse_manifest, Command, CommandsManifest, Manifest, RuntimeProtocol,
};
pub use policy::{ConfirmationPolicy, Risk};
pub use problem::{Problem, RuntimeError};
pub use tools::{Tool, ToolCatalogue, ToolLookup};
