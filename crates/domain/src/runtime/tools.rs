//! The phone's tool catalogue and where it comes from: the ifp/1 tool list
//! (`openphone-tools.ifp1.json`, parsed in the private `catalogue` module and re-exported
//! here), or, when no tool list is at hand, derived from the old commands manifest.
//!
//! Spec: `ifp1-notes.md` "Corpus" (the 37 OpenPhone tools as ifp/1 capabilities `tool:<name>`),
//! `openphone-runtime-protocol.md` "Single Sources Of Truth" (the commands manifest). See
//! `catalogue` for how read-only or mutating is read from the data.

use std::path::{Path, PathBuf};

pub use super::catalogue::{Tool, ToolCatalogue, ToolLookup, TOOLS_FILE};

use super::catalogue::access_from;
use super::manifest::{load_manifest_file, CommandsManifest, Manifest, COMMANDS_FILE};
use super::problem::{Problem, RuntimeError};

impl ToolCatalogue {
    /// Builds the catalogue from an old commands manifest, when no ifp/1 tool list is at hand:
    /// each command becomes the tool named by [`crate::runtime::Command::ifp1_tool`] (commands
    /// without the `openphone.` prefix keep their name), with the same risk, description and
    /// metadata.
    pub fn from_commands(commands: &CommandsManifest) -> Self {
        let tools = commands
            .commands
            .iter()
            .map(|cmd| {
                let name = cmd.ifp1_tool().unwrap_or(&cmd.name).to_string();
                Tool {
                    capability: format!("tool:{name}"),
                    name,
                    risk: cmd.risk,
                    description: cmd.description.clone(),
                    access: access_from(cmd.default_exposure.as_deref(), Some(cmd.confirmation)),
                    old_confirmation: Some(cmd.confirmation),
                    default_exposure: cmd.default_exposure.clone(),
                    surface_capability: Some(cmd.capability.clone()),
                    android_tool: Some(cmd.android_tool.clone()),
                    superseded_command: Some(cmd.name.clone()),
                    superseded_aliases: cmd.aliases.clone(),
                }
            })
            .collect();
        Self::new(COMMANDS_FILE.to_string(), None, tools)
    }
}

/// Finds and loads the tool catalogue for a directory: `openphone-tools.ifp1.json` in `dir`,
/// `dir/ifp1/` or `dir/../ifp1/` (the corpus layout); otherwise derived from
/// `openphone-commands.json` in `dir` or `dir/openphone/`. Returns the catalogue and the file it
/// came from.
pub fn load_catalogue_from_dir(dir: &Path) -> Result<(ToolCatalogue, PathBuf), RuntimeError> {
    let tool_candidates = [
        dir.join(TOOLS_FILE),
        dir.join("ifp1").join(TOOLS_FILE),
        dir.join("..").join("ifp1").join(TOOLS_FILE),
    ];
    if let Some(p) = tool_candidates.iter().find(|p| p.is_file()) {
        return Ok((ToolCatalogue::load(p)?, p.clone()));
    }
    let command_candidates = [
        dir.join(COMMANDS_FILE),
        dir.join("openphone").join(COMMANDS_FILE),
    ];
    if let Some(p) = command_candidates.iter().find(|p| p.is_file()) {
        return match load_manifest_file(p)? {
            Manifest::Commands(m) => Ok((ToolCatalogue::from_commands(&m), p.clone())),
            other => Err(RuntimeError::Invalid {
                problems: vec![Problem {
                    file: p.display().to_string(),
                    path: String::new(),
                    message: format!("expected the commands manifest, found {:?}", other.kind()),
                }],
            }),
        };
    }
    Err(RuntimeError::NoToolCatalogue {
        dir: dir.display().to_string(),
    })
}
