//! # Confirmations: the desktop's mirror of every action a phone is asked to confirm
//!
//! Why this exists: the person confirms an action on the phone, never on the desktop
//! (`ifp1-notes.md`, "Action lifecycle (confirmation is local to the surface)"). Switchboard shows
//! what is waiting there, how each proposal ended and anything odd about it, so the person can
//! see at a glance what their phone is being asked to do. **Nothing here approves, rejects or
//! cancels anything**: the mirror only reads messages the phone sent and the receiver's verdict
//! on them ([`crate::ifp::Receiver`]), and the snapshot it produces has no control in it.
//!
//! Spec: `ifp1-notes.md` "Action lifecycle" (states, `binding_mismatch`, `action_expired`,
//! messages after the end), "params_hash" (the binding the view checks); `phone-actions.md` §2
//! (the card the phone shows, the server's refusals) and §3 (done, declined, failed, no answer);
//! `openphone-runtime-protocol.md` "Autonomy" (the table of what the phone will ask).
//!
//! ## How it is fed
//! The link's hub validates a frame, gives it to its [`crate::ifp::Receiver`], then calls
//! [`ConfirmationMirror::apply`] with the phone's name, the envelope, the receiver's
//! [`Outcome`] and the receive time. Only `action.*` messages change anything; other messages
//! give no change. Each call returns the [`MirrorChange`]s it caused (a proposal now waiting,
//! an approval, an end, an anomaly): the shell turns them into desktop notifications through
//! [`notify::notification_for`] and into UI refreshes; the view reads a [`ConfirmationsSnapshot`].
//!
//! ## Anomalies (shown, never acted on)
//! - `params_hash` that is not the hash of `params`: shown; the verdict is unchanged
//!   (`ifp1-notes.md`, "params_hash": the binding that matters is approve-vs-propose).
//! - an approval whose `params_hash` differs from the proposal's (`binding_mismatch`);
//! - an approval after `expires_at` (`action_expired`, the action ends `expired`);
//! - any message after the action ended (refused by the receiver, state unchanged);
//! - a proposal whose `risk` differs from the risk the phone's tool list gives the tool;
//! - any other message the receiver refused about a mirrored action (its reason is shown);
//! - a message about an action the mirror never saw proposed ("stray", kept in its own list).
//!
//! ## Our readings where the specs are silent
//! - A `phone_action` proposal's `params` is the call's arguments (`phone-actions.md` §2); its
//!   end reads as §3 ([`crate::phone_action::outcome`]): `executed` is done, `failed` is failed,
//!   `rejected` with `user_denied` is declined, `rejected` with `expired` and the states
//!   `expired` and `cancelled` are "no answer in time" (the card went away), other reject reasons
//!   are failed. The phone's message is the string `message` of the `action.result` or
//!   `action.reject` payload when there is one, cut at
//!   [`crate::phone_action::MESSAGE_MAX_CHARS`].
//! - The summary of a proposal is the card's summary for `phone_action`, else the proposal's
//!   `reason`, else the tool's description, else the tool's name.
//!
//! ## Bounds
//! At most [`MAX_WAITING`] proposals waiting (the oldest is dropped from view beyond that and
//! counted), [`MAX_ENDED`] ended ones (oldest dropped first, counted), [`MAX_TIMELINE`] messages
//! per proposal (the first is always kept; later overflow is counted), [`MAX_ANOMALIES`]
//! anomalies per proposal and [`MAX_STRAY`] stray messages. Whatever a phone sends, memory stays
//! bounded.

pub mod notify;

use std::collections::{HashMap, VecDeque};

use serde::Serialize;
use serde_json::{Map, Value};
use ts_rs::TS;

use crate::ifp::envelope::{Envelope, Timestamp};
use crate::ifp::payload::{
    ConfirmationMode as WireMode, IncomingAction, IncomingMessage, RejectReasonClass,
};
use crate::ifp::{params_hash, ActionState, ErrorClass, Outcome, Verdict};
use crate::phone_action::{self, PhoneActionCard, PhoneActionOutcome};
use crate::runtime::{
    autonomy_table, Access, Autonomy, AutonomyTable, ConfirmationPolicy, Risk, RuntimeError,
    ToolCatalogue,
};

/// Most proposals kept in the waiting list (per mirror, all phones together).
pub const MAX_WAITING: usize = 256;
/// Most ended proposals kept in the history (per mirror, all phones together); oldest dropped.
pub const MAX_ENDED: usize = 200;
/// Most timeline entries kept per proposal (the first, the proposal, is always kept).
pub const MAX_TIMELINE: usize = 32;
/// Most anomalies kept per proposal.
pub const MAX_ANOMALIES: usize = 16;
/// Most stray messages (about actions never seen proposed) kept.
pub const MAX_STRAY: usize = 50;

/// The tool name of the `phone_action` tool (`phone-actions.md`).
pub const PHONE_ACTION_TOOL: &str = "phone_action";

/// The OpenPhone ifp/1 tool list bundled with Switchboard (`data/openphone-tools.ifp1.json`, a
/// byte-identical copy of `corpus/ifp1/openphone-tools.ifp1.json`, checked by a test).
pub const BUNDLED_TOOLS_JSON: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/data/openphone-tools.ifp1.json"
));

/// The bundled OpenPhone tool list as a [`ToolCatalogue`] (37 tools).
///
/// # Errors
/// [`RuntimeError`] if the bundled file does not parse (a build problem, caught by tests).
pub fn bundled_catalogue() -> Result<ToolCatalogue, RuntimeError> {
    let value: Value =
        serde_json::from_str(BUNDLED_TOOLS_JSON).map_err(|e| RuntimeError::Invalid {
            problems: vec![crate::runtime::Problem {
                file: crate::runtime::tools::TOOLS_FILE.to_string(),
                path: String::new(),
                message: format!("bundled tool list is not JSON: {e}"),
            }],
        })?;
    ToolCatalogue::parse(&value, crate::runtime::tools::TOOLS_FILE)
}

/// How an approval was given (`action.approve` `confirmation.mode`), for display.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum ConfirmedBy {
    /// `user_confirmed`: the person confirmed on the phone.
    UserConfirmed,
    /// `policy_auto`: the phone's own policy approved it (the old `trusted_actions`).
    PolicyAuto,
}

/// Why the phone rejected an action (`action.reject` `reason_class`), for display.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum RejectReason {
    /// `capability_missing`.
    CapabilityMissing,
    /// `policy_denied`.
    PolicyDenied,
    /// `user_denied`: the person said no.
    UserDenied,
    /// `expired`: nobody decided in time.
    Expired,
    /// `other`.
    Other,
}

impl RejectReason {
    fn from_wire(r: RejectReasonClass) -> Self {
        match r {
            RejectReasonClass::CapabilityMissing => Self::CapabilityMissing,
            RejectReasonClass::PolicyDenied => Self::PolicyDenied,
            RejectReasonClass::UserDenied => Self::UserDenied,
            RejectReasonClass::Expired => Self::Expired,
            RejectReasonClass::Other => Self::Other,
        }
    }

    /// In words: `declined on the phone`, `refused by the phone's policy`, ...
    pub fn words(self) -> &'static str {
        match self {
            Self::CapabilityMissing => "refused: the phone lacks a capability it needs",
            Self::PolicyDenied => "refused by the phone's own policy",
            Self::UserDenied => "declined on the phone",
            Self::Expired => "expired on the phone before anyone decided",
            Self::Other => "refused on the phone",
        }
    }
}

/// The tool a proposal names, with its details from the phone's tool list, or `known: false`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ToolInfo {
    /// Tool name as proposed (`messages.send`, `phone_action`).
    pub name: String,
    /// True when the tool list has it (or it is `phone_action`, the server's own tool).
    pub known: bool,
    /// What the tool does.
    pub description: Option<String>,
    /// The tool list's risk for it.
    pub risk: Option<Risk>,
    /// The ifp/1 capability (`tool:messages.send`).
    pub capability: Option<String>,
    /// The old OpenPhone confirmation policy (`x-openphone.confirmation`).
    pub old_confirmation: Option<ConfirmationPolicy>,
    /// Read-only or mutating.
    pub access: Option<Access>,
}

/// The `params_hash` check: what the proposal gave and what its `params` hash to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct HashCheck {
    /// `params_hash` as proposed.
    pub given: String,
    /// `sha256:` + hex of the canonical JSON of `params` ([`crate::ifp::params_hash()`]).
    pub computed: String,
    /// `given == computed`.
    pub matches: bool,
}

/// A `phone_action` proposal as the phone shows it (`phone-actions.md` §2, §3).
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct PhoneActionView {
    /// The card the phone shows, when the call passes the checks.
    pub card: Option<PhoneActionCard>,
    /// When the call fails the checks: `the server would refuse this: <refusal text>`.
    pub server_would_refuse: Option<String>,
    /// How it ended, in the spec's words (done, declined, failed, no answer); `None` while open.
    pub end: Option<PhoneActionOutcome>,
}

/// What kind of anomaly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum AnomalyKind {
    /// The proposal's `params_hash` is not the hash of its `params` (verdict unchanged).
    ParamsHashMismatch,
    /// An approval's `params_hash` differs from the proposal's (`binding_mismatch`).
    BindingMismatch,
    /// An approval came after `expires_at` (`action_expired`).
    ApprovedAfterExpiry,
    /// A message came after the action had ended.
    MessageAfterEnd,
    /// The proposal's `risk` differs from the tool list's.
    RiskDiffers,
    /// The receiver refused a message about this action for another reason.
    Refused,
    /// A message about an action this mirror never saw proposed.
    Stray,
}

/// Something odd, explained in plain words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct Anomaly {
    /// What kind.
    pub kind: AnomalyKind,
    /// The phone it came from.
    pub phone: String,
    /// The action it is about.
    pub action_id: String,
    /// The message that showed it (`id`).
    pub message_id: String,
    /// The message's type (`action.approve`).
    pub message_type: String,
    /// When Switchboard received it (Unix epoch milliseconds).
    #[ts(type = "number")]
    pub at_ms: i64,
    /// The explanation.
    pub text: String,
}

/// One message in a proposal's timeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct TimelineItem {
    /// The message's `id`.
    pub message_id: String,
    /// Its `type` (`action.propose`, ...).
    pub message_type: String,
    /// Its `ts` as sent (RFC 3339 UTC).
    pub ts: String,
    /// When Switchboard received it (Unix epoch milliseconds).
    #[ts(type = "number")]
    pub received_at_ms: i64,
    /// The receiver's verdict.
    pub verdict: Verdict,
    /// The receiver's error class when refused.
    pub error_class: Option<ErrorClass>,
    /// The action's state after the message.
    pub state_after: ActionState,
    /// What the message did, in words.
    pub text: String,
}

/// One proposal as the view shows it.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct ConfirmationView {
    /// Unique key for the UI: `<phone>/<action_id>#<n>`.
    pub key: String,
    /// The phone's name.
    pub phone: String,
    /// `action_id`.
    pub action_id: String,
    /// The proposal's `session`.
    pub session: Option<String>,
    /// The line to show: the card's summary, the reason, or the tool's description.
    pub summary: String,
    /// The tool and its details from the phone's tool list.
    pub tool: ToolInfo,
    /// `params` as proposed.
    #[ts(type = "Record<string, unknown>")]
    pub params: Map<String, Value>,
    /// The `params_hash` check.
    pub hash: HashCheck,
    /// The proposal's risk.
    pub risk: Risk,
    /// Why the runtime proposes it.
    pub reason: Option<String>,
    /// `idempotency_key`.
    pub idempotency_key: String,
    /// `expires_at` as sent (RFC 3339 UTC).
    pub expires_at: String,
    /// `expires_at` as Unix epoch milliseconds (for the live countdown).
    #[ts(type = "number")]
    pub expires_at_ms: i64,
    /// When the proposal was received (Unix epoch milliseconds).
    #[ts(type = "number")]
    pub proposed_at_ms: i64,
    /// When anything last changed (Unix epoch milliseconds).
    #[ts(type = "number")]
    pub updated_at_ms: i64,
    /// When it ended (Unix epoch milliseconds), if it has.
    #[ts(type = "number | null")]
    pub ended_at_ms: Option<i64>,
    /// Lifecycle state.
    pub state: ActionState,
    /// How the approval was given, once approved.
    pub confirmed_by: Option<ConfirmedBy>,
    /// The approval's audit reference (`confirmation.ref`).
    pub confirmation_ref: Option<String>,
    /// Why it was rejected.
    pub reject_reason: Option<RejectReason>,
    /// The result's `error_class`.
    pub result_error_class: Option<ErrorClass>,
    /// The phone's message with the result or rejection, cut at
    /// [`crate::phone_action::MESSAGE_MAX_CHARS`].
    pub result_message: Option<String>,
    /// Whether the phone's message was longer and was cut.
    pub result_message_cut: bool,
    /// How it ended, in words; `None` while waiting or approved.
    pub ended_text: Option<String>,
    /// For `phone_action`: the card, the server's refusal, the end.
    pub phone_action: Option<PhoneActionView>,
    /// The messages about it, in arrival order.
    pub timeline: Vec<TimelineItem>,
    /// Timeline entries dropped beyond [`MAX_TIMELINE`].
    pub timeline_dropped: u32,
    /// Anything odd.
    pub anomalies: Vec<Anomaly>,
}

impl ConfirmationView {
    /// True when the proposal has ended (executed, failed, rejected, cancelled, expired).
    pub fn is_ended(&self) -> bool {
        self.state.is_terminal()
    }
}

/// What one message changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum ChangeKind {
    /// A new proposal is waiting for the person on the phone.
    Waiting,
    /// The phone approved it (see `confirmed_by`).
    Approved,
    /// It ended (executed, failed, rejected, cancelled, expired).
    Ended,
    /// Something odd (see `anomaly`).
    Anomaly,
    /// Recorded in the timeline, nothing else changed (e.g. a repeated message).
    Noted,
}

/// One change caused by one message, for notifications and UI refreshes.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct MirrorChange {
    /// What changed.
    pub kind: ChangeKind,
    /// The proposal after the change (`None` for a stray message).
    pub confirmation: Option<ConfirmationView>,
    /// The anomaly, for [`ChangeKind::Anomaly`].
    pub anomaly: Option<Anomaly>,
}

/// What the Confirmations view reads.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct ConfirmationsSnapshot {
    /// Waiting on a phone (requested or approved), soonest expiry first.
    pub waiting: Vec<ConfirmationView>,
    /// Ended, most recent first (at most [`MAX_ENDED`]).
    pub ended: Vec<ConfirmationView>,
    /// Messages about actions never seen proposed, most recent first.
    pub stray: Vec<Anomaly>,
    /// Ended proposals dropped from the history (beyond [`MAX_ENDED`]).
    #[ts(type = "number")]
    pub ended_dropped: u64,
    /// Waiting proposals dropped from view (beyond [`MAX_WAITING`]).
    #[ts(type = "number")]
    pub waiting_dropped: u64,
    /// The history cap ([`MAX_ENDED`]).
    pub ended_cap: u32,
    /// Where tool details come from (`openphone-tools.ifp1.json`), or `None` with no list.
    pub tool_list: Option<String>,
}

/// The mirror: every proposal seen from every phone, bounded (module doc).
#[derive(Debug, Clone)]
pub struct ConfirmationMirror {
    catalogue: Option<ToolCatalogue>,
    waiting: Vec<ConfirmationView>,
    ended: VecDeque<ConfirmationView>,
    stray: VecDeque<Anomaly>,
    ended_dropped: u64,
    waiting_dropped: u64,
    next_n: u64,
    autonomy: HashMap<String, Autonomy>,
}

impl Default for ConfirmationMirror {
    fn default() -> Self {
        Self::new(None)
    }
}

fn ts_ms(ts: &Timestamp) -> i64 {
    ts.unix_seconds()
        .saturating_mul(1000)
        .saturating_add(i64::from(ts.nanos() / 1_000_000))
}

fn push_bounded<T>(list: &mut Vec<T>, item: T, cap: usize) -> bool {
    if list.len() < cap {
        list.push(item);
        true
    } else {
        false
    }
}

fn state_word(s: ActionState) -> &'static str {
    match s {
        ActionState::Requested => "requested",
        ActionState::Approved => "approved",
        ActionState::Executed => "executed",
        ActionState::Failed => "failed",
        ActionState::Rejected => "rejected",
        ActionState::Cancelled => "cancelled",
        ActionState::Expired => "expired",
    }
}

/// The phone's `message` in a payload, trimmed and cut at
/// [`phone_action::MESSAGE_MAX_CHARS`] characters, and whether it was cut.
fn cut_message(payload: &Map<String, Value>) -> (Option<String>, bool) {
    let Some(m) = payload
        .get("message")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|m| !m.is_empty())
    else {
        return (None, false);
    };
    let cut = m.chars().count() > phone_action::MESSAGE_MAX_CHARS;
    (
        Some(m.chars().take(phone_action::MESSAGE_MAX_CHARS).collect()),
        cut,
    )
}

impl ConfirmationMirror {
    /// An empty mirror; `catalogue` is the phone's tool list (tools not in it are shown as
    /// unknown; with `None` every tool but `phone_action` is unknown).
    pub fn new(catalogue: Option<ToolCatalogue>) -> Self {
        Self {
            catalogue,
            waiting: Vec::new(),
            ended: VecDeque::new(),
            stray: VecDeque::new(),
            ended_dropped: 0,
            waiting_dropped: 0,
            next_n: 0,
            autonomy: HashMap::new(),
        }
    }

    /// An empty mirror with the bundled OpenPhone tool list ([`bundled_catalogue`]); with no
    /// tool list if it does not parse (logged).
    pub fn with_bundled_catalogue() -> Self {
        match bundled_catalogue() {
            Ok(c) => Self::new(Some(c)),
            Err(e) => {
                tracing::warn!("bundled tool list unusable, tools shown as unknown: {e}");
                Self::new(None)
            }
        }
    }

    /// The tool list in use.
    pub fn catalogue(&self) -> Option<&ToolCatalogue> {
        self.catalogue.as_ref()
    }

    /// Records the autonomy level a phone declared (when the hub learns it).
    pub fn set_autonomy(&mut self, phone: &str, autonomy: Autonomy) {
        self.autonomy.insert(phone.to_string(), autonomy);
    }

    /// The phone's autonomy level, and whether it is known; `ask_before_action` when unknown
    /// (`openphone-runtime-protocol.md`, "Autonomy": the fallback with no session).
    pub fn autonomy_of(&self, phone: &str) -> (Autonomy, bool) {
        match self.autonomy.get(phone) {
            Some(a) => (*a, true),
            None => (Autonomy::AskBeforeAction, false),
        }
    }

    /// "What this phone will ask you to confirm": [`autonomy_table`] over the tool list at the
    /// phone's autonomy ([`Self::autonomy_of`]); `None` with no tool list.
    pub fn autonomy_table(&self, phone: &str) -> Option<AutonomyTable> {
        let (autonomy, _) = self.autonomy_of(phone);
        self.catalogue.as_ref().map(|c| autonomy_table(c, autonomy))
    }

    /// What the view shows now.
    pub fn snapshot(&self) -> ConfirmationsSnapshot {
        let mut waiting = self.waiting.clone();
        waiting.sort_by_key(|c| (c.expires_at_ms, c.proposed_at_ms));
        ConfirmationsSnapshot {
            waiting,
            ended: self.ended.iter().rev().cloned().collect(),
            stray: self.stray.iter().rev().cloned().collect(),
            ended_dropped: self.ended_dropped,
            waiting_dropped: self.waiting_dropped,
            ended_cap: u32::try_from(MAX_ENDED).unwrap_or(u32::MAX),
            tool_list: self.catalogue.as_ref().map(|c| c.source.clone()),
        }
    }

    /// The most recent proposal for `(phone, action_id)`, waiting or ended.
    pub fn get(&self, phone: &str, action_id: &str) -> Option<&ConfirmationView> {
        self.waiting
            .iter()
            .find(|c| c.phone == phone && c.action_id == action_id)
            .or_else(|| {
                self.ended
                    .iter()
                    .rev()
                    .find(|c| c.phone == phone && c.action_id == action_id)
            })
    }

    /// Number of proposals waiting.
    pub fn waiting_count(&self) -> usize {
        self.waiting.len()
    }

    /// Number of ended proposals kept.
    pub fn ended_count(&self) -> usize {
        self.ended.len()
    }

    /// Takes in one message from `phone` that the receiver judged `outcome`, received at `now_ms`
    /// (Unix epoch milliseconds), and returns what it changed. Only `action.*` messages change
    /// anything; any other message returns an empty list. Never panics on any input.
    ///
    /// `phone` is the phone's name as the person knows it (its pairing label): it keys the
    /// proposals (with `action_id`) and is the `<Phone>` of the notification texts. Call it with
    /// the same receiver outcome the link answered with, for every message, rejected ones
    /// included (they are how anomalies are seen).
    pub fn apply(
        &mut self,
        phone: &str,
        env: &Envelope,
        outcome: &Outcome,
        now_ms: i64,
    ) -> Vec<MirrorChange> {
        if !env.r#type.starts_with("action.") {
            return Vec::new();
        }
        let typed = match IncomingMessage::from_envelope(env) {
            Ok(IncomingMessage::Action(a)) => Some(a),
            _ => None,
        };
        let action_id = typed
            .as_ref()
            .map(|a| a.action_id().to_string())
            .or_else(|| outcome.action_id.clone())
            .or_else(|| {
                env.payload
                    .get("action_id")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .unwrap_or_default();
        match typed {
            Some(IncomingAction::Propose(p)) => {
                self.apply_propose(phone, env, outcome, now_ms, &action_id, &p)
            }
            other => self.apply_follow_up(phone, env, outcome, now_ms, &action_id, other.as_ref()),
        }
    }

    fn tool_info(&self, name: &str) -> ToolInfo {
        if name == PHONE_ACTION_TOOL {
            return ToolInfo {
                name: name.to_string(),
                known: true,
                description: Some(
                    "Do something on the person's phone (alarm, timer, route, draft, ...): the phone shows a card and does nothing until the person confirms it there."
                        .to_string(),
                ),
                risk: None,
                capability: Some(phone_action::PHONE.capability.to_string()),
                old_confirmation: Some(ConfirmationPolicy::Always),
                access: Some(Access::Mutating),
            };
        }
        match self.catalogue.as_ref().and_then(|c| c.get(name)) {
            Some(t) => ToolInfo {
                name: name.to_string(),
                known: true,
                description: Some(t.description.clone()),
                risk: Some(t.risk),
                capability: Some(t.capability.clone()),
                old_confirmation: t.old_confirmation,
                access: Some(t.access),
            },
            None => ToolInfo {
                name: name.to_string(),
                known: false,
                description: None,
                risk: None,
                capability: None,
                old_confirmation: None,
                access: None,
            },
        }
    }

    fn anomaly(
        phone: &str,
        action_id: &str,
        env: &Envelope,
        now_ms: i64,
        kind: AnomalyKind,
        text: String,
    ) -> Anomaly {
        Anomaly {
            kind,
            phone: phone.to_string(),
            action_id: action_id.to_string(),
            message_id: env.id.clone(),
            message_type: env.r#type.clone(),
            at_ms: now_ms,
            text,
        }
    }

    fn add_stray(&mut self, a: Anomaly) -> Vec<MirrorChange> {
        if self.stray.len() >= MAX_STRAY {
            self.stray.pop_front();
        }
        self.stray.push_back(a.clone());
        vec![MirrorChange {
            kind: ChangeKind::Anomaly,
            confirmation: None,
            anomaly: Some(a),
        }]
    }

    fn apply_propose(
        &mut self,
        phone: &str,
        env: &Envelope,
        outcome: &Outcome,
        now_ms: i64,
        action_id: &str,
        p: &crate::ifp::payload::ActionPropose,
    ) -> Vec<MirrorChange> {
        let accepted_new = outcome.verdict == Verdict::Accepted
            && outcome.action_state == Some(ActionState::Requested);
        if !accepted_new {
            // A repeat, or a refused proposal: note it on the proposal we have, if any.
            let reason = outcome.reason.clone().unwrap_or_default();
            let text = match outcome.verdict {
                Verdict::AcknowledgedDuplicate => {
                    "The same proposal again; acknowledged, nothing changed.".to_string()
                }
                _ => format!("A proposal the receiver refused: {reason}"),
            };
            return self.follow_up_on_existing(phone, env, outcome, now_ms, action_id, text, None);
        }
        let computed = params_hash(&Value::Object(p.params.clone()));
        let hash = HashCheck {
            matches: computed == p.params_hash,
            given: p.params_hash.clone(),
            computed,
        };
        let tool = self.tool_info(&p.tool);
        let phone_action_view =
            (p.tool == PHONE_ACTION_TOOL).then(|| {
                match phone_action::check_call(&Value::Object(p.params.clone())) {
                    Ok(card) => PhoneActionView {
                        card: Some(card),
                        server_would_refuse: None,
                        end: None,
                    },
                    Err(r) => PhoneActionView {
                        card: None,
                        server_would_refuse: Some(format!(
                            "the server would refuse this: {}",
                            r.text()
                        )),
                        end: None,
                    },
                }
            });
        let summary = summary_of(p, &tool, phone_action_view.as_ref());
        let n = self.next_n;
        self.next_n = self.next_n.wrapping_add(1);
        let mut view = ConfirmationView {
            key: format!("{phone}/{action_id}#{n}"),
            phone: phone.to_string(),
            action_id: action_id.to_string(),
            session: env.session.clone(),
            summary,
            tool,
            params: p.params.clone(),
            hash,
            risk: p.risk,
            reason: p.reason.clone(),
            idempotency_key: p.idempotency_key.clone(),
            expires_at: p.expires_at.to_string(),
            expires_at_ms: ts_ms(&p.expires_at),
            proposed_at_ms: now_ms,
            updated_at_ms: now_ms,
            ended_at_ms: None,
            state: ActionState::Requested,
            confirmed_by: None,
            confirmation_ref: None,
            reject_reason: None,
            result_error_class: None,
            result_message: None,
            result_message_cut: false,
            ended_text: None,
            phone_action: phone_action_view,
            timeline: Vec::new(),
            timeline_dropped: 0,
            anomalies: Vec::new(),
        };
        let risk_text = format!(
            "Proposed: {} (risk {}), expires {}.",
            view.tool.name, view.risk, view.expires_at
        );
        push_timeline(&mut view, env, outcome, now_ms, risk_text);
        let mut anomalies = Vec::new();
        if !view.hash.matches {
            anomalies.push(Self::anomaly(
                phone,
                action_id,
                env,
                now_ms,
                AnomalyKind::ParamsHashMismatch,
                format!(
                    "The proposal's params_hash ({}) is not the hash of its params ({}): whoever proposed it computed the binding wrongly. The phone still judges approvals against the proposal's own hash, so the verdict is unchanged.",
                    view.hash.given, view.hash.computed
                ),
            ));
        }
        if let Some(list_risk) = view.tool.risk {
            if list_risk != view.risk {
                anomalies.push(Self::anomaly(
                    phone,
                    action_id,
                    env,
                    now_ms,
                    AnomalyKind::RiskDiffers,
                    format!(
                        "The proposal says risk {}, but the phone's tool list gives {} risk {}.",
                        view.risk, view.tool.name, list_risk
                    ),
                ));
            }
        }
        for a in &anomalies {
            push_bounded(&mut view.anomalies, a.clone(), MAX_ANOMALIES);
        }
        if self.waiting.len() >= MAX_WAITING {
            if let Some(i) = self
                .waiting
                .iter()
                .enumerate()
                .min_by_key(|(_, c)| c.proposed_at_ms)
                .map(|(i, _)| i)
            {
                self.waiting.remove(i);
                self.waiting_dropped = self.waiting_dropped.saturating_add(1);
            }
        }
        self.waiting.push(view.clone());
        let mut changes = vec![MirrorChange {
            kind: ChangeKind::Waiting,
            confirmation: Some(view.clone()),
            anomaly: None,
        }];
        changes.extend(anomalies.into_iter().map(|a| MirrorChange {
            kind: ChangeKind::Anomaly,
            confirmation: Some(view.clone()),
            anomaly: Some(a),
        }));
        changes
    }

    #[allow(clippy::too_many_arguments)]
    fn follow_up_on_existing(
        &mut self,
        phone: &str,
        env: &Envelope,
        outcome: &Outcome,
        now_ms: i64,
        action_id: &str,
        text: String,
        anomaly_kind: Option<AnomalyKind>,
    ) -> Vec<MirrorChange> {
        let Some(view) = self.find_mut(phone, action_id) else {
            return self.add_stray(Self::anomaly(
                phone,
                action_id,
                env,
                now_ms,
                AnomalyKind::Stray,
                format!("{} about action {action_id}, which Switchboard never saw proposed by {phone}. {text}", env.r#type),
            ));
        };
        push_timeline(view, env, outcome, now_ms, text.clone());
        view.updated_at_ms = now_ms;
        let mut changes = Vec::new();
        let kind = anomaly_kind.or(match outcome.verdict {
            Verdict::Rejected => Some(AnomalyKind::Refused),
            _ => None,
        });
        if let Some(kind) = kind {
            let a = Self::anomaly(phone, action_id, env, now_ms, kind, text);
            push_bounded(&mut view.anomalies, a.clone(), MAX_ANOMALIES);
            changes.push(MirrorChange {
                kind: ChangeKind::Anomaly,
                confirmation: Some(view.clone()),
                anomaly: Some(a),
            });
        } else {
            changes.push(MirrorChange {
                kind: ChangeKind::Noted,
                confirmation: Some(view.clone()),
                anomaly: None,
            });
        }
        changes
    }

    fn find_mut(&mut self, phone: &str, action_id: &str) -> Option<&mut ConfirmationView> {
        if let Some(i) = self
            .waiting
            .iter()
            .position(|c| c.phone == phone && c.action_id == action_id)
        {
            return self.waiting.get_mut(i);
        }
        self.ended
            .iter_mut()
            .rev()
            .find(|c| c.phone == phone && c.action_id == action_id)
    }

    fn apply_follow_up(
        &mut self,
        phone: &str,
        env: &Envelope,
        outcome: &Outcome,
        now_ms: i64,
        action_id: &str,
        action: Option<&IncomingAction>,
    ) -> Vec<MirrorChange> {
        let current = self
            .get(phone, action_id)
            .map(|c| (c.state, c.hash.given.clone(), c.expires_at.clone()));
        let Some((state_before, proposal_hash, expires_at)) = current else {
            let why = outcome
                .reason
                .as_deref()
                .map(|r| format!("The receiver said: {r}."))
                .unwrap_or_default();
            return self.add_stray(Self::anomaly(
                phone,
                action_id,
                env,
                now_ms,
                AnomalyKind::Stray,
                format!(
                    "{} about action {action_id}, which Switchboard never saw proposed by {phone}. {why}",
                    env.r#type
                )
                .trim_end()
                .to_string(),
            ));
        };
        let reason = outcome.reason.clone().unwrap_or_default();
        match outcome.verdict {
            Verdict::AcknowledgedDuplicate => self.follow_up_on_existing(
                phone,
                env,
                outcome,
                now_ms,
                action_id,
                format!(
                    "{} repeated, identical; acknowledged, nothing changed.",
                    env.r#type
                ),
                None,
            ),
            Verdict::Rejected => {
                let (kind, text) = match outcome.error_class {
                    Some(ErrorClass::ActionExpired) => (
                        AnomalyKind::ApprovedAfterExpiry,
                        format!(
                            "An approval came at {} (sent), after the proposal expired at {expires_at}; the phone treats it as expired and nothing runs.",
                            env.ts
                        ),
                    ),
                    Some(ErrorClass::BindingMismatch) => {
                        let given = match action {
                            Some(IncomingAction::Approve(a)) => a.params_hash.clone(),
                            _ => "another hash".to_string(),
                        };
                        (
                            AnomalyKind::BindingMismatch,
                            format!(
                                "An approval named params_hash {given}, but the proposal's is {proposal_hash}: it approves different parameters from the ones proposed, so it was refused and the action is still waiting."
                            ),
                        )
                    }
                    _ if state_before.is_terminal() => (
                        AnomalyKind::MessageAfterEnd,
                        format!(
                            "{} came after the action had already ended ({}); it was refused and nothing changed.",
                            env.r#type,
                            state_word(state_before)
                        ),
                    ),
                    _ => (
                        AnomalyKind::Refused,
                        format!("{} was refused: {reason}", env.r#type),
                    ),
                };
                let mut changes = self.follow_up_on_existing(
                    phone,
                    env,
                    outcome,
                    now_ms,
                    action_id,
                    text,
                    Some(kind),
                );
                if let Some(new_state) = outcome.action_state {
                    if new_state != state_before && new_state.is_terminal() {
                        changes.extend(self.transition(phone, action_id, new_state, now_ms));
                    }
                }
                changes
            }
            Verdict::Accepted => {
                let Some(new_state) = outcome.action_state else {
                    return self.follow_up_on_existing(
                        phone,
                        env,
                        outcome,
                        now_ms,
                        action_id,
                        format!("{} accepted.", env.r#type),
                        None,
                    );
                };
                let text = match action {
                    Some(IncomingAction::Approve(a)) => match a.confirmation.mode {
                        WireMode::UserConfirmed => {
                            "Approved: the person confirmed it on the phone.".to_string()
                        }
                        WireMode::PolicyAuto => {
                            "Approved by the phone's own policy (policy_auto), without asking the person.".to_string()
                        }
                    },
                    Some(IncomingAction::Reject(r)) => format!(
                        "Rejected: {}.",
                        RejectReason::from_wire(r.reason_class).words()
                    ),
                    Some(IncomingAction::Result(r)) => match r.error_class {
                        Some(c) => format!("Result: {} (error class {c}).", state_word(new_state)),
                        None => format!("Result: {}.", state_word(new_state)),
                    },
                    Some(IncomingAction::Cancel(_)) => {
                        "Cancelled by the runtime.".to_string()
                    }
                    _ => format!("{} accepted.", env.r#type),
                };
                if let Some(view) = self.find_mut(phone, action_id) {
                    push_timeline(view, env, outcome, now_ms, text);
                    view.updated_at_ms = now_ms;
                    match action {
                        Some(IncomingAction::Approve(a)) => {
                            view.confirmed_by = Some(match a.confirmation.mode {
                                WireMode::UserConfirmed => ConfirmedBy::UserConfirmed,
                                WireMode::PolicyAuto => ConfirmedBy::PolicyAuto,
                            });
                            view.confirmation_ref = a.confirmation.reference.clone();
                        }
                        Some(IncomingAction::Reject(r)) => {
                            view.reject_reason = Some(RejectReason::from_wire(r.reason_class));
                            (view.result_message, view.result_message_cut) =
                                cut_message(&env.payload);
                        }
                        Some(IncomingAction::Result(r)) => {
                            view.result_error_class = r.error_class;
                            (view.result_message, view.result_message_cut) =
                                cut_message(&env.payload);
                        }
                        _ => {}
                    }
                }
                self.transition(phone, action_id, new_state, now_ms)
            }
        }
    }

    /// Moves a proposal to `new_state`; a terminal state moves it to the ended history.
    fn transition(
        &mut self,
        phone: &str,
        action_id: &str,
        new_state: ActionState,
        now_ms: i64,
    ) -> Vec<MirrorChange> {
        let Some(i) = self
            .waiting
            .iter()
            .position(|c| c.phone == phone && c.action_id == action_id)
        else {
            // Already ended (a late message the receiver accepted cannot happen; keep as is).
            return Vec::new();
        };
        let Some(view) = self.waiting.get_mut(i) else {
            return Vec::new();
        };
        view.state = new_state;
        if !new_state.is_terminal() {
            let kind = if new_state == ActionState::Approved {
                ChangeKind::Approved
            } else {
                ChangeKind::Noted
            };
            return vec![MirrorChange {
                kind,
                confirmation: Some(view.clone()),
                anomaly: None,
            }];
        }
        let mut view = self.waiting.remove(i);
        view.ended_at_ms = Some(now_ms);
        finish(&mut view);
        if self.ended.len() >= MAX_ENDED {
            self.ended.pop_front();
            self.ended_dropped = self.ended_dropped.saturating_add(1);
        }
        self.ended.push_back(view.clone());
        vec![MirrorChange {
            kind: ChangeKind::Ended,
            confirmation: Some(view),
            anomaly: None,
        }]
    }
}

fn push_timeline(
    view: &mut ConfirmationView,
    env: &Envelope,
    outcome: &Outcome,
    now_ms: i64,
    text: String,
) {
    let item = TimelineItem {
        message_id: env.id.clone(),
        message_type: env.r#type.clone(),
        ts: env.ts.to_string(),
        received_at_ms: now_ms,
        verdict: outcome.verdict,
        error_class: outcome.error_class,
        state_after: outcome.action_state.unwrap_or(view.state),
        text,
    };
    if !push_bounded(&mut view.timeline, item, MAX_TIMELINE) {
        view.timeline_dropped = view.timeline_dropped.saturating_add(1);
    }
}

fn summary_of(
    p: &crate::ifp::payload::ActionPropose,
    tool: &ToolInfo,
    pa: Option<&PhoneActionView>,
) -> String {
    if let Some(card) = pa.and_then(|v| v.card.as_ref()) {
        return card.summary.clone();
    }
    if pa.is_some() {
        let given = p
            .params
            .get("summary")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .or_else(|| p.params.get("action").and_then(Value::as_str));
        return given.unwrap_or(PHONE_ACTION_TOOL).to_string();
    }
    if let Some(r) = p.reason.as_deref().map(str::trim).filter(|r| !r.is_empty()) {
        return r.to_string();
    }
    match &tool.description {
        Some(d) => d.trim().trim_end_matches('.').to_string(),
        None => p.tool.clone(),
    }
}

/// Sets the end texts of a proposal that just ended.
fn finish(view: &mut ConfirmationView) {
    let mode = match view.confirmed_by {
        Some(ConfirmedBy::PolicyAuto) => " (approved by the phone's own policy)",
        _ => "",
    };
    let generic = match view.state {
        ActionState::Executed => format!("done on the phone{mode}"),
        ActionState::Failed => match view.result_error_class {
            Some(c) => format!("failed on the phone{mode} (error class {c})"),
            None => format!("failed on the phone{mode}"),
        },
        ActionState::Rejected => view
            .reject_reason
            .map_or("refused on the phone", RejectReason::words)
            .to_string(),
        ActionState::Cancelled => "cancelled by the runtime before it ran".to_string(),
        ActionState::Expired => {
            "expired: the approval came after its time ran out, so nothing ran".to_string()
        }
        ActionState::Requested | ActionState::Approved => String::new(),
    };
    let generic = match (&view.result_message, view.phone_action.is_some()) {
        (Some(m), false) => format!("{generic}; the phone says: {m}"),
        _ => generic,
    };
    view.ended_text = Some(generic);
    if let Some(pa) = view.phone_action.as_mut() {
        let answer = phone_action_answer(
            view.state,
            view.reject_reason,
            view.result_message.as_deref(),
        );
        let mut end = phone_action::outcome(answer.as_ref());
        end.message_cut = end.message.is_some() && view.result_message_cut;
        view.ended_text = Some(end.text.clone());
        pa.end = Some(end);
    }
}

/// The phone's answer `{status, message?}` a `phone_action` end stands for (module doc), or
/// `None` for "no answer in time".
fn phone_action_answer(
    state: ActionState,
    reject: Option<RejectReason>,
    message: Option<&str>,
) -> Option<Value> {
    let status = match (state, reject) {
        (ActionState::Executed, _) => "done",
        (ActionState::Failed, _) => "failed",
        (ActionState::Rejected, Some(RejectReason::UserDenied)) => "declined",
        (ActionState::Rejected, Some(RejectReason::Expired)) => return None,
        (ActionState::Rejected, _) => "failed",
        _ => return None,
    };
    let mut m = Map::new();
    m.insert("status".into(), Value::String(status.into()));
    if let Some(msg) = message {
        m.insert("message".into(), Value::String(msg.into()));
    }
    Some(Value::Object(m))
}
