//! What each phone tool does at each autonomy level: runs, asks the person first, or is refused.
//!
//! Spec: `openphone-runtime-protocol.md` "Autonomy":
//! - `observe_only`: read-only tools may run; mutating tools are denied.
//! - `ask_before_action`: mutating tools require Android confirmation.
//! - `trusted_actions`: low/medium-risk mutating tools may run without OpenPhone confirmation,
//!   but high-risk tools still require confirmation.
//! - A tool call that omits autonomy inherits the phone session's; with no session it is
//!   `ask_before_action` ([`effective_autonomy`]).
//!
//! The table ([`autonomy_table`]) is what the UI shows as "what this phone will ask you to
//! confirm". It is a prediction made from the phone's declared tools and the spec's rules: the
//! confirmation itself happens on the phone, and nothing in Switchboard can approve, reject or
//! cancel an action there. (The phone's OS or an app may still ask on its own: the spec says
//! those confirmations stay.)

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

pub use super::policy::Access;

use super::catalogue::{Tool, ToolCatalogue, ToolLookup};
use super::policy::Risk;
use super::problem::RuntimeError;

/// A phone session's autonomy level (spec "Autonomy"; `attention_request.autonomy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum Autonomy {
    /// `observe_only`: reads run, changes are refused.
    ObserveOnly,
    /// `ask_before_action`: reads run, every change is put to the person first.
    AskBeforeAction,
    /// `trusted_actions`: reads and low/medium-risk changes run; high-risk changes ask.
    TrustedActions,
}

impl Autonomy {
    /// The three levels, from the most to the least careful.
    pub const ALL: [Autonomy; 3] = [
        Autonomy::ObserveOnly,
        Autonomy::AskBeforeAction,
        Autonomy::TrustedActions,
    ];

    /// The wire name (`observe_only`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ObserveOnly => "observe_only",
            Self::AskBeforeAction => "ask_before_action",
            Self::TrustedActions => "trusted_actions",
        }
    }
}

impl fmt::Display for Autonomy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Autonomy {
    type Err = RuntimeError;

    /// Parses the wire name; anything else is [`RuntimeError::UnknownAutonomy`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|a| a.as_str() == s)
            .ok_or_else(|| RuntimeError::UnknownAutonomy(s.to_string()))
    }
}

/// The autonomy that applies to one tool call: the call's own when given, else the phone
/// session's, else `ask_before_action` (spec "Autonomy", last paragraph).
pub fn effective_autonomy(call: Option<Autonomy>, session: Option<Autonomy>) -> Autonomy {
    call.or(session).unwrap_or(Autonomy::AskBeforeAction)
}

/// What the phone does with a tool call at a given autonomy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum Decision {
    /// Runs without asking.
    Run,
    /// The phone asks the person first.
    Ask,
    /// Refused without asking.
    Refuse,
}

/// A decision and its reason in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct ToolDecision {
    /// Run, ask or refuse.
    pub decision: Decision,
    /// Why, in a sentence a person can read.
    pub reason: String,
}

/// The decision for a known tool at `autonomy` (spec "Autonomy").
pub fn decide(tool: &Tool, autonomy: Autonomy) -> ToolDecision {
    let (decision, reason) = match (tool.access, autonomy, tool.risk) {
        (Access::ReadOnly, _, _) => (
            Decision::Run,
            "Only reads, so it runs at every autonomy level.".to_string(),
        ),
        (Access::Mutating, Autonomy::ObserveOnly, _) => (
            Decision::Refuse,
            "Changes something, and this phone session only observes: refused.".to_string(),
        ),
        (Access::Mutating, Autonomy::AskBeforeAction, _) => (
            Decision::Ask,
            "Changes something: the phone asks you before it runs.".to_string(),
        ),
        (Access::Mutating, Autonomy::TrustedActions, Risk::High) => (
            Decision::Ask,
            "High risk: the phone asks you first, even with trusted actions.".to_string(),
        ),
        (Access::Mutating, Autonomy::TrustedActions, risk) => (
            Decision::Run,
            format!("A {risk}-risk change, and this session trusts actions: runs without asking."),
        ),
    };
    ToolDecision { decision, reason }
}

/// The decision for a tool named `name` in `catalogue`: as [`decide`] for a known tool; an
/// `unknown` tool (not in the phone's list) is refused, since the phone does not declare it.
pub fn decide_tool(catalogue: &ToolCatalogue, name: &str, autonomy: Autonomy) -> ToolDecision {
    match catalogue.lookup(name) {
        ToolLookup::Known(tool) => decide(tool, autonomy),
        ToolLookup::Unknown => ToolDecision {
            decision: Decision::Refuse,
            reason: format!("Unknown tool: the phone does not declare {name:?}."),
        },
    }
}

/// One row of the "what this phone will ask you to confirm" table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct AutonomyRow {
    /// ifp/1 tool name (`calls.place`).
    pub tool: String,
    /// What the tool does.
    pub description: String,
    /// `low`, `medium` or `high`.
    pub risk: Risk,
    /// Read-only or mutating.
    pub access: Access,
    /// Run, ask or refuse at the table's autonomy.
    pub decision: Decision,
    /// Why, in words.
    pub reason: String,
}

/// The table for one autonomy level, over every tool the phone declares, in the tool list's
/// order, with counts per decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct AutonomyTable {
    /// The level the rows are computed for.
    pub autonomy: Autonomy,
    /// One row per tool.
    pub rows: Vec<AutonomyRow>,
    /// How many tools run without asking.
    pub run_count: u32,
    /// How many tools the phone asks about first.
    pub ask_count: u32,
    /// How many tools are refused.
    pub refuse_count: u32,
}

/// Computes the table for `autonomy` over `catalogue` (see [`decide`]).
pub fn autonomy_table(catalogue: &ToolCatalogue, autonomy: Autonomy) -> AutonomyTable {
    let rows: Vec<AutonomyRow> = catalogue
        .tools
        .iter()
        .map(|t| {
            let d = decide(t, autonomy);
            AutonomyRow {
                tool: t.name.clone(),
                description: t.description.clone(),
                risk: t.risk,
                access: t.access,
                decision: d.decision,
                reason: d.reason,
            }
        })
        .collect();
    let count = |d: Decision| {
        u32::try_from(rows.iter().filter(|r| r.decision == d).count()).unwrap_or(u32::MAX)
    };
    AutonomyTable {
        autonomy,
        run_count: count(Decision::Run),
        ask_count: count(Decision::Ask),
        refuse_count: count(Decision::Refuse),
        rows,
    }
}
