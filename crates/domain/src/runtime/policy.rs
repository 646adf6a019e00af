//! What a tool or command risks and how it was confirmed: [`Risk`], the old
//! [`ConfirmationPolicy`] and [`Access`] (read-only or mutating).
//!
//! Why this exists: the manifests, the tool catalogue and the autonomy rules all classify tools
//! with these three (spec `openphone-runtime-protocol.md` "Autonomy"; `ifp1-notes.md` "Corpus":
//! high risk = the old `confirmation: always`), so they live in one leaf module that depends on
//! nothing else in `runtime`.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// A tool's or command's risk: the same `low | medium | high` as ifp/1 `action.propose`
/// `risk` (one type for both, re-exported here).
pub use switchboard_wire::ifp::payload::Risk;

/// The old OpenPhone confirmation policy of a command (`confirmation` in the commands manifest,
/// `x-openphone.confirmation` in the ifp/1 tool list): `none`, `ask_before_action`, `always`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum ConfirmationPolicy {
    /// `none`: a read; never confirmed.
    None,
    /// `ask_before_action`: confirmed unless the session trusts actions.
    AskBeforeAction,
    /// `always`: confirmed at every autonomy level.
    Always,
}

impl ConfirmationPolicy {
    /// Parses `none`, `ask_before_action` or `always`; anything else is `None`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "none" => Some(Self::None),
            "ask_before_action" => Some(Self::AskBeforeAction),
            "always" => Some(Self::Always),
            _ => None,
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::AskBeforeAction => "ask_before_action",
            Self::Always => "always",
        }
    }
}

/// Whether a tool only reads or changes something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum Access {
    /// Reads only (old exposure `safe_read` / `private_read`).
    ReadOnly,
    /// Changes something or acts (old exposure `dangerous`).
    Mutating,
}
