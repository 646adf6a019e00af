//! Action messages: `action.*` messages (proposals and what follows them) as the phone forwards
//! them, into the Confirmations mirror.
//!
//! Why its own file: action messages are not events. A replay is recognised by message id (the
//! phone may resend what it was not sure arrived), the ifp/1 receiver judges the rest (lifecycle,
//! expiry by the message's own `ts`, binding), a refusal is answered with an ifp/1 `error`, and
//! the (message, outcome) pair goes to the Confirmations mirror when one is given. The hub only
//! mirrors: it cannot send an `action.*` message. Spec: `ifp1-notes.md` ("Action lifecycle"),
//! `docs/protocol.md` ("Action messages").

use super::{lock, Hub, HubNotice, PhoneState, ProposalStep, ProposalView};
use crate::ifp::payload::{IncomingAction, IncomingMessage};
use crate::ifp::{ActionState, Envelope, Outcome, Verdict};

/// Most message ids remembered per phone for recognising replayed `action.*` messages.
pub const MAX_SEEN_IDS: usize = 16_384;
/// Most proposals kept per phone (oldest finished dropped first).
pub const MAX_PROPOSALS: usize = 1024;
/// Most (message, outcome) pairs kept per phone for the Confirmations mirror.
pub const MAX_ACTION_MESSAGES: usize = 4096;

/// One proposal as the hub keeps it: its view, and whether its end was already told.
#[derive(Debug)]
pub(super) struct ProposalRecord {
    pub(super) view: ProposalView,
    pub(super) ended: bool,
}

impl PhoneState {
    pub(super) fn remember_id(&mut self, id: &str) {
        if self.seen_ids.insert(id.to_string()) {
            self.seen_order.push_back(id.to_string());
            if self.seen_order.len() > MAX_SEEN_IDS {
                if let Some(old) = self.seen_order.pop_front() {
                    self.seen_ids.remove(&old);
                }
            }
        }
    }
}

impl Hub {
    pub(super) fn apply_action(&self, device_id: &str, p: &mut PhoneState, env: &Envelope) {
        if p.seen_ids.contains(&env.id) {
            // A replay of a message already applied (the phone was not sure it arrived).
            return;
        }
        p.remember_id(&env.id);
        let typed = IncomingMessage::from_envelope(env);
        let outcome = p.receiver.receive_at_ts(env);
        if outcome.verdict == Verdict::Rejected {
            p.problem(format!(
                "{} {} refused: {}",
                env.r#type,
                env.id,
                outcome.reason.clone().unwrap_or_default()
            ));
            self.refuse(device_id, &env.id, &outcome);
        }
        if let Some(mirror) = &self.inner.confirmations {
            let now_ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
                .unwrap_or(0);
            let changes = lock(mirror).apply(device_id, env, &outcome, now_ms);
            for change in changes {
                self.notify(HubNotice::ConfirmationChanged {
                    device_id: device_id.to_string(),
                    change: Box::new(change),
                });
            }
        }
        if p.action_messages.len() >= MAX_ACTION_MESSAGES {
            p.action_messages.pop_front();
        }
        p.action_messages.push_back((env.clone(), outcome.clone()));
        let Ok(IncomingMessage::Action(action)) = typed else {
            return;
        };
        let action_id = action.action_id().to_string();
        let step = ProposalStep {
            message_id: env.id.clone(),
            message_type: env.r#type.clone(),
            ts: env.ts.as_str().to_string(),
            verdict: outcome.verdict,
            error_class: outcome.error_class,
            reason: outcome.reason.clone(),
            state_after: outcome.action_state,
            detail: step_detail(&action, env),
        };
        let idx = p
            .proposals
            .iter()
            .position(|r| r.view.action_id == action_id);
        let idx = match (idx, &action) {
            (Some(i), _) => i,
            (None, IncomingAction::Propose(prop)) => {
                if p.proposals.len() >= MAX_PROPOSALS {
                    let drop = p.proposals.iter().position(|r| r.ended).unwrap_or(0);
                    p.proposals.remove(drop);
                }
                p.proposals.push(ProposalRecord {
                    view: ProposalView {
                        action_id: action_id.clone(),
                        session: env.session.clone(),
                        tool: prop.tool.clone(),
                        risk: prop.risk,
                        reason: prop.reason.clone(),
                        params: serde_json::Value::Object(prop.params.clone()),
                        params_hash: prop.params_hash.clone(),
                        params_hash_matches: outcome.params_hash_matches,
                        expires_at: prop.expires_at.as_str().to_string(),
                        state: outcome.action_state.unwrap_or(ActionState::Requested),
                        steps: Vec::new(),
                    },
                    ended: false,
                });
                if outcome.verdict == Verdict::Accepted {
                    self.notify(HubNotice::ProposalWaiting {
                        device_id: device_id.to_string(),
                        action_id: action_id.clone(),
                        tool: prop.tool.clone(),
                        risk: prop.risk,
                    });
                }
                p.proposals.len() - 1
            }
            (None, _) => return,
        };
        let Some(rec) = p.proposals.get_mut(idx) else {
            return;
        };
        rec.view.steps.push(step);
        if let Some(state) = outcome.action_state {
            rec.view.state = state;
        }
        if rec.view.state.is_terminal() && !rec.ended {
            rec.ended = true;
            self.notify(HubNotice::ProposalEnded {
                device_id: device_id.to_string(),
                action_id,
                state: rec.view.state,
            });
        }
    }

    /// Every `action.*` message applied from the phone with the receiver's outcome, oldest
    /// first (at most [`MAX_ACTION_MESSAGES`]): the feed for the Confirmations mirror.
    pub fn action_messages(&self, device_id: &str) -> Vec<(Envelope, Outcome)> {
        let st = lock(&self.inner.state);
        st.phones
            .get(device_id)
            .map(|p| p.action_messages.iter().cloned().collect())
            .unwrap_or_default()
    }
}

/// A readable detail of an action message for the proposal record: the reject's reason class,
/// the result's status and error class, and the phone's `message` (phone_action answers).
fn step_detail(action: &IncomingAction, env: &Envelope) -> Option<String> {
    let message = env
        .payload
        .get("message")
        .and_then(serde_json::Value::as_str)
        .map(str::to_string);
    let base = match action {
        IncomingAction::Reject(r) => Some(format!("{:?}", r.reason_class)),
        IncomingAction::Result(r) => Some(match r.error_class {
            Some(c) => format!("{:?} ({})", r.status, c.as_str()),
            None => format!("{:?}", r.status),
        }),
        IncomingAction::Approve(a) => Some(format!("{:?}", a.confirmation.mode)),
        _ => None,
    };
    match (base, message) {
        (Some(b), Some(m)) => Some(format!("{b}: {m}")),
        (b, m) => b.or(m),
    }
}
