//! The human-readable wording of the Confirmations view: how a state, a rejection and an end are
//! put in words, a proposal's summary line, and the text of each timeline entry and anomaly.
//!
//! Why a module of its own: the wording is what the person reads; keeping it apart from the
//! mirror's state machine lets either change without touching the other.

use serde_json::{Map, Value};

use super::catalogue::PHONE_ACTION_TOOL;
use super::view::{
    ConfirmationView, ConfirmedBy, HashCheck, PhoneActionView, RejectReason, ToolInfo,
};
use crate::phone_action;
use crate::runtime::Risk;
use switchboard_wire::ifp::envelope::Timestamp;
use switchboard_wire::ifp::payload::{ConfirmationMode as WireMode, IncomingAction};
use switchboard_wire::ifp::{ActionState, Verdict};

impl RejectReason {
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

/// The line a proposal shows (module doc of [`crate::confirmations`]): the card's summary for
/// `phone_action`, else the proposal's `reason`, else the tool's description, else its name.
pub(super) fn summary_of(
    p: &switchboard_wire::ifp::payload::ActionPropose,
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
pub(super) fn finish(view: &mut ConfirmationView) {
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

/// The timeline text of a proposal that did not start a new one: a repeat (`verdict` is
/// acknowledged-duplicate), or one the receiver refused (`reason`).
pub(super) fn proposal_not_new(verdict: Verdict, reason: &str) -> String {
    match verdict {
        Verdict::AcknowledgedDuplicate => {
            "The same proposal again; acknowledged, nothing changed.".to_string()
        }
        _ => format!("A proposal the receiver refused: {reason}"),
    }
}

/// The timeline text of a new proposal: its tool, risk and how long it may wait for an answer
/// (from its arrival to its `expires_at`, on the desktop's clock). The deadline as a time is
/// not in the words: the view shows it in the person's own time ("Expires at").
pub(super) fn proposed(view: &ConfirmationView) -> String {
    let wait_ms = view.expires_at_ms.saturating_sub(view.proposed_at_ms);
    if wait_ms <= 0 {
        return format!(
            "Proposed: {} (risk {}), already past its deadline when it came.",
            view.tool.name, view.risk
        );
    }
    format!(
        "Proposed: {} (risk {}); it may wait {} for an answer.",
        view.tool.name,
        view.risk,
        wait_words(wait_ms)
    )
}

/// `ms` (positive) in the largest whole unit that fits, rounded down below a minute only to the
/// second: "45 s", "2 min", "2 min 30 s", "1 h", "1 h 5 min".
fn wait_words(ms: i64) -> String {
    let s = ms / 1000;
    match s {
        0 => "under a second".to_string(),
        1..=59 => format!("{s} s"),
        60..=3599 if s % 60 == 0 => format!("{} min", s / 60),
        60..=3599 => format!("{} min {} s", s / 60, s % 60),
        _ if (s / 60) % 60 == 0 => format!("{} h", s / 3600),
        _ => format!("{} h {} min", s / 3600, (s / 60) % 60),
    }
}

/// The anomaly text of a proposal whose `params_hash` is not the hash of its `params`.
pub(super) fn params_hash_mismatch(hash: &HashCheck) -> String {
    format!(
        "The proposal's params_hash ({}) is not the hash of its params ({}): whoever proposed it computed the binding wrongly. The phone still judges approvals against the proposal's own hash, so the verdict is unchanged.",
        hash.given, hash.computed
    )
}

/// The anomaly text of a proposal whose risk differs from `list_risk`, the tool list's.
pub(super) fn risk_differs(view: &ConfirmationView, list_risk: Risk) -> String {
    format!(
        "The proposal says risk {}, but the phone's tool list gives {} risk {}.",
        view.risk, view.tool.name, list_risk
    )
}

/// The anomaly text of a message of type `message_type` about `action_id`, which `phone` was
/// never seen proposing; `tail` follows after a space (it may be empty).
pub(super) fn stray(message_type: &str, action_id: &str, phone: &str, tail: &str) -> String {
    format!(
        "{message_type} about action {action_id}, which Switchboard never saw proposed by {phone}. {tail}"
    )
}

/// `The receiver said: <reason>.`, or empty with no reason.
pub(super) fn receiver_said(reason: Option<&str>) -> String {
    reason
        .map(|r| format!("The receiver said: {r}."))
        .unwrap_or_default()
}

/// The timeline text of an identical repeat of a follow-up message.
pub(super) fn repeated(message_type: &str) -> String {
    format!("{message_type} repeated, identical; acknowledged, nothing changed.")
}

/// The anomaly text of an approval sent at `sent` after the proposal's `expires_at`.
pub(super) fn approved_after_expiry(sent: &Timestamp, expires_at: &str) -> String {
    format!(
        "An approval came at {sent} (sent), after the proposal expired at {expires_at}; the phone treats it as expired and nothing runs."
    )
}

/// The anomaly text of an approval naming `given` where the proposal's hash is `proposal_hash`.
pub(super) fn binding_mismatch(given: &str, proposal_hash: &str) -> String {
    format!(
        "An approval named params_hash {given}, but the proposal's is {proposal_hash}: it approves different parameters from the ones proposed, so it was refused and the action is still waiting."
    )
}

/// The anomaly text of a message that came after the action ended in `state`.
pub(super) fn message_after_end(message_type: &str, state: ActionState) -> String {
    format!(
        "{message_type} came after the action had already ended ({}); it was refused and nothing changed.",
        state.as_str()
    )
}

/// The anomaly text of a message the receiver refused for `reason`.
pub(super) fn refused(message_type: &str, reason: &str) -> String {
    format!("{message_type} was refused: {reason}")
}

/// The timeline text of an accepted message that changed no state.
pub(super) fn accepted(message_type: &str) -> String {
    format!("{message_type} accepted.")
}

/// The timeline text of an accepted message that moved the action to `new_state`: how it was
/// approved, why it was rejected, the result, or the cancellation.
pub(super) fn accepted_action(
    action: Option<&IncomingAction>,
    new_state: ActionState,
    message_type: &str,
) -> String {
    match action {
        Some(IncomingAction::Approve(a)) => match a.confirmation.mode {
            WireMode::UserConfirmed => {
                "Approved: the person confirmed it on the phone.".to_string()
            }
            WireMode::PolicyAuto => {
                "Approved by the phone's own policy (policy_auto), without asking the person."
                    .to_string()
            }
        },
        Some(IncomingAction::Reject(r)) => format!(
            "Rejected: {}.",
            RejectReason::from_wire(r.reason_class).words()
        ),
        Some(IncomingAction::Result(r)) => match r.error_class {
            Some(c) => format!("Result: {} (error class {c}).", new_state.as_str()),
            None => format!("Result: {}.", new_state.as_str()),
        },
        Some(IncomingAction::Cancel(_)) => "Cancelled by the runtime.".to_string(),
        _ => accepted(message_type),
    }
}

/// Why a `policy_auto` approval of a `phone_action` is odd.
pub(super) fn policy_auto_phone_action() -> String {
    "Approved by the phone's own policy (policy_auto), but a phone_action is confirmed by the \
     person on the phone every time (phone-actions.md): the phone did not ask them."
        .to_string()
}

/// Why a `policy_auto` approval of a high-risk tool under `trusted_actions` is odd.
pub(super) fn policy_auto_high_risk(tool: &str) -> String {
    format!(
        "Approved by the phone's own policy (policy_auto) under trusted_actions, but {tool} is \
         high risk, and high-risk tools still require confirmation at that level \
         (openphone-runtime-protocol.md, \"Autonomy\"): the phone did not ask the person."
    )
}

/// The autonomy beside a proposal in words: the level and where it came from
/// (`openphone-runtime-protocol.md`, "Autonomy").
pub(super) fn proposal_autonomy(
    autonomy: crate::runtime::Autonomy,
    source: super::view::AutonomySource,
    session: Option<&str>,
) -> String {
    use super::view::AutonomySource;
    let level = autonomy.as_str().replace('_', " ");
    match (source, session) {
        (AutonomySource::Session, Some(s)) => format!(
            "{level}: the level the phone reported for this proposal's session {s}, which a \
             tool call without its own autonomy inherits"
        ),
        (AutonomySource::SessionNotReported, Some(s)) => {
            format!(
                "{level} (the spec's fallback): the phone has not reported the level of this \
                 proposal's session {s}"
            )
        }
        _ => format!("{level} (the spec's fallback): the proposal names no session"),
    }
}

#[cfg(test)]
mod tests {
    use super::wait_words;

    #[test]
    fn a_wait_reads_in_the_largest_units_that_fit() {
        assert_eq!(wait_words(400), "under a second");
        assert_eq!(wait_words(45_900), "45 s");
        assert_eq!(wait_words(120_000), "2 min");
        assert_eq!(wait_words(150_000), "2 min 30 s");
        assert_eq!(wait_words(3_600_000), "1 h");
        assert_eq!(wait_words(3_900_000), "1 h 5 min");
    }
}
