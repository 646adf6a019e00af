//! The serialisable types the Confirmations view shows (exported to `ui/src/bindings/` with
//! ts-rs): one proposal ([`ConfirmationView`]) with its tool, hash check, `phone_action` card,
//! timeline and anomalies; what one message changed ([`MirrorChange`]); the whole view
//! ([`ConfirmationsSnapshot`]).
//!
//! Why a module of its own: these are the shapes that cross IPC; the mirror fills them in and the
//! texts word them, but neither changes their shape.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use ts_rs::TS;

use crate::phone_action::{PhoneActionCard, PhoneActionOutcome};
use crate::runtime::{Access, Autonomy, ConfirmationPolicy, Risk};
use switchboard_wire::ifp::payload::RejectReasonClass;
use switchboard_wire::ifp::{ActionState, ErrorClass, Verdict};

#[cfg(doc)]
use super::{MAX_ENDED, MAX_TIMELINE, MAX_WAITING};

/// How an approval was given (`action.approve` `confirmation.mode`), for display.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum ConfirmedBy {
    /// `user_confirmed`: the person confirmed on the phone.
    UserConfirmed,
    /// `policy_auto`: the phone's own policy approved it (the old `trusted_actions`).
    PolicyAuto,
}

/// Why the phone rejected an action (`action.reject` `reason_class`), for display.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
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
    /// The reason as the phone sent it (`reason_class`).
    pub(super) fn from_wire(r: RejectReasonClass) -> Self {
        match r {
            RejectReasonClass::CapabilityMissing => Self::CapabilityMissing,
            RejectReasonClass::PolicyDenied => Self::PolicyDenied,
            RejectReasonClass::UserDenied => Self::UserDenied,
            RejectReasonClass::Expired => Self::Expired,
            RejectReasonClass::Other => Self::Other,
        }
    }
}

/// The tool a proposal names, with its details from the phone's tool list, or `known: false`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct HashCheck {
    /// `params_hash` as proposed.
    pub given: String,
    /// `sha256:` + hex of the canonical JSON of `params` ([`switchboard_wire::ifp::params_hash()`]).
    pub computed: String,
    /// `given == computed`.
    pub matches: bool,
}

/// A `phone_action` proposal as the phone shows it (`phone-actions.md` §2, §3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
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
    /// The phone's own policy (`policy_auto`) approved a `phone_action`, which the person must
    /// confirm on the phone every time (`phone-actions.md`).
    PolicyAutoPhoneAction,
    /// The phone's own policy approved a high-risk tool under `trusted_actions`, which still
    /// requires confirmation for high-risk tools (`openphone-runtime-protocol.md`, "Autonomy").
    PolicyAutoHighRisk,
    /// A message about an action this mirror never saw proposed.
    Stray,
}

/// Something odd, explained in plain words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
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

/// Where the autonomy beside a proposal comes from (`openphone-runtime-protocol.md`,
/// "Autonomy": "If a runtime tool call omits autonomy, OpenPhone inherits the phone execution
/// session's autonomy. If no session is available, it falls back to ask_before_action."). A
/// proposal carries no autonomy of its own, so it always inherits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum AutonomySource {
    /// Inherited from the proposal's session: the level the phone reported for that session
    /// (`event.runtime.autonomy`).
    Session,
    /// The proposal names a session, but the phone has not reported that session's level:
    /// shown as `ask_before_action`, the spec's fallback when no session level is available.
    SessionNotReported,
    /// The proposal names no session: `ask_before_action`, the spec's fallback.
    NoSession,
}

/// The autonomy that applies to a proposal, with where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct ProposalAutonomy {
    /// The level.
    pub autonomy: Autonomy,
    /// Where it came from.
    pub source: AutonomySource,
    /// When the phone's report of the session's level was received (Unix epoch milliseconds);
    /// `null` unless [`AutonomySource::Session`].
    #[ts(type = "number | null")]
    pub reported_at_ms: Option<i64>,
    /// The same in words, for the view.
    pub words: String,
}

/// One proposal as the view shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
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
    /// The autonomy that applies to it: its session's, or the spec's fallback, with where it
    /// came from. While it waits, a later report of the session's level updates it; once ended
    /// it keeps the level it ended under.
    pub autonomy: ProposalAutonomy,
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
    /// When the proposal expires on the desktop's clock, Unix epoch milliseconds (for the live
    /// countdown): the time it was received plus its lifetime by the phone's own clock
    /// (`expires_at` - the proposal's `ts`), so a phone clock that is off does not shift it.
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
    /// It ended without a word from the phone: a `requested` proposal past its `expires_at`
    /// ("expired: Switchboard heard nothing from the phone by its deadline, ..."), or a waiting
    /// one of a phone that was unpaired.
    /// Shown in the view; never a desktop notification (many may lapse at once).
    Lapsed,
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
