//! The human-readable wording of the Confirmations view: how a state, a rejection and an end are
//! put in words, a proposal's summary line, and the text of each timeline entry and anomaly.
//!
//! Why a module of its own: the wording is what the person reads; keeping it apart from the
//! mirror's state machine lets either change without touching the other.

use serde_json::{Map, Value};

use super::catalogue::PHONE_ACTION_TOOL;
use super::view::{ConfirmationView, ConfirmedBy, PhoneActionView, RejectReason, ToolInfo};
use crate::ifp::ActionState;
use crate::phone_action;

/// The description shown for the `phone_action` tool (the server's own tool, not in any phone's
/// tool list).
pub(super) const PHONE_ACTION_DESCRIPTION: &str = "Do something on the person's phone (alarm, timer, route, draft, ...): the phone shows a card and does nothing until the person confirms it there.";

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

/// The state in one word (`requested`, `executed`, ...).
pub(super) fn state_word(s: ActionState) -> &'static str {
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

/// The line a proposal shows (module doc of [`crate::confirmations`]): the card's summary for
/// `phone_action`, else the proposal's `reason`, else the tool's description, else its name.
pub(super) fn summary_of(
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
