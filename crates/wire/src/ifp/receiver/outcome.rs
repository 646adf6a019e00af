//! What the receiver says about one message: its [`Verdict`], the error class and reason when
//! refused, the action's new [`ActionState`], and the ifp/1 `error` the desktop answers with.
//!
//! Apart from the state machine ([`super`]) because callers (the link, the app, the conformance
//! runner) read outcomes without ever touching receiver state.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::ifp::error_class::ErrorClass;
use crate::ifp::outgoing::OutgoingMessage;
use crate::ifp::validate::Rejection;

/// The receiver's verdict on one message (the corpus's `verdict`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum Verdict {
    /// Taken in.
    Accepted,
    /// Refused; [`Outcome::error_class`] says why.
    Rejected,
    /// A repeat of something already taken in: acknowledged, not stored again.
    AcknowledgedDuplicate,
}

/// An action's lifecycle state (`ifp1-notes.md`, "Action lifecycle").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum ActionState {
    /// Proposed, awaiting the surface's decision.
    Requested,
    /// Approved on the surface, awaiting its result.
    Approved,
    /// Ran (terminal).
    Executed,
    /// Attempted and failed (terminal).
    Failed,
    /// Refused on the surface (terminal).
    Rejected,
    /// Cancelled by the runtime (terminal).
    Cancelled,
    /// Approved too late (terminal).
    Expired,
}

impl ActionState {
    /// The state's wire name (`requested`, `executed`, ...), as it serialises.
    pub fn as_str(self) -> &'static str {
        match self {
            ActionState::Requested => "requested",
            ActionState::Approved => "approved",
            ActionState::Executed => "executed",
            ActionState::Failed => "failed",
            ActionState::Rejected => "rejected",
            ActionState::Cancelled => "cancelled",
            ActionState::Expired => "expired",
        }
    }
}

impl ActionState {
    /// True for the finished states (`executed, failed, rejected, cancelled, expired`).
    pub fn is_terminal(self) -> bool {
        !matches!(self, ActionState::Requested | ActionState::Approved)
    }
}

/// What the receiver did with one message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct Outcome {
    /// The verdict.
    pub verdict: Verdict,
    /// The error class when `verdict` is `rejected`.
    pub error_class: Option<ErrorClass>,
    /// Readable reason when `verdict` is `rejected` or `acknowledged_duplicate`.
    pub reason: Option<String>,
    /// The receiver's home generation, given with `stale_generation`.
    pub current_generation: Option<u64>,
    /// The action the message was about (`action.*`).
    pub action_id: Option<String>,
    /// The action's state after the message (`action.*` with a known action).
    pub action_state: Option<ActionState>,
    /// True when the message was taken into state (an accepted event or action message).
    pub stored: bool,
    /// On `action.propose`: whether `params_hash` is the hash of `params` (`false` is an
    /// anomaly to show, not a verdict change).
    pub params_hash_matches: Option<bool>,
}

impl Outcome {
    pub(super) fn base(verdict: Verdict) -> Self {
        Outcome {
            verdict,
            error_class: None,
            reason: None,
            current_generation: None,
            action_id: None,
            action_state: None,
            stored: false,
            params_hash_matches: None,
        }
    }

    pub(super) fn accepted(stored: bool) -> Self {
        Outcome {
            stored,
            ..Outcome::base(Verdict::Accepted)
        }
    }

    pub(super) fn duplicate(reason: impl Into<String>) -> Self {
        Outcome {
            reason: Some(reason.into()),
            ..Outcome::base(Verdict::AcknowledgedDuplicate)
        }
    }

    pub(super) fn rejected(class: ErrorClass, reason: impl Into<String>) -> Self {
        Outcome {
            error_class: Some(class),
            reason: Some(reason.into()),
            ..Outcome::base(Verdict::Rejected)
        }
    }

    /// The outcome of a message the validator refused: `rejected` with its class and reason.
    pub fn from_rejection(rejection: Rejection) -> Self {
        Outcome::rejected(rejection.class, rejection.reason)
    }

    pub(super) fn with_action(mut self, action_id: &str, state: Option<ActionState>) -> Self {
        self.action_id = Some(action_id.to_string());
        self.action_state = state;
        self
    }

    /// The rejection, when the verdict is `rejected`.
    pub fn rejection(&self) -> Option<Rejection> {
        self.error_class
            .map(|class| Rejection::new(class, self.reason.clone().unwrap_or_default()))
    }

    /// The `error` message to answer a rejected message with (carrying `current_generation` for
    /// `stale_generation`); `None` unless the verdict is `rejected`.
    pub fn error_message(&self) -> Option<OutgoingMessage> {
        self.rejection()
            .map(|r| OutgoingMessage::error_for(&r, self.current_generation))
    }
}
