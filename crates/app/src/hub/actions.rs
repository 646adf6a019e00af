//! Action messages: `action.*` messages (proposals and what follows them) as the phone forwards
//! them, into the Confirmations mirror.
//!
//! Why its own file: action messages are not events. A replay is recognised by message id (the
//! phone may resend what it was not sure arrived), the ifp/1 receiver judges the rest (lifecycle,
//! expiry by the message's own `ts`, binding), a refusal is answered with an ifp/1 `error`, and
//! the (message, outcome) pair goes to the Confirmations mirror when one is given. The hub itself
//! follows each proposal's state only as far as its notices need ([`HubNotice::ProposalWaiting`],
//! [`HubNotice::ProposalEnded`]). The hub only mirrors: it cannot send an `action.*` message.
//! Spec: `ifp1-notes.md` ("Action lifecycle"), `docs/protocol.md` ("Action messages").

use super::{lock, Hub, HubNotice, PhoneState};
use switchboard_wire::ifp::payload::{IncomingAction, IncomingMessage};
use switchboard_wire::ifp::{ActionState, Envelope, Verdict};

/// Most message ids remembered per phone for recognising replayed `action.*` messages.
pub const MAX_SEEN_IDS: usize = 16_384;
/// Most proposals followed per phone for the proposal notices (oldest finished dropped first).
pub const MAX_PROPOSALS: usize = 1024;

/// One proposal as the hub follows it: its state, and whether its end was already told.
#[derive(Debug)]
pub(super) struct ProposalRecord {
    action_id: String,
    state: ActionState,
    ended: bool,
}

impl PhoneState {
    /// Marks the proposal `action_id` ended in `state` without a message (it lapsed:
    /// `expiry.rs`); its end is told by [`HubNotice::ProposalsLapsed`], not `ProposalEnded`.
    pub(super) fn end_record(&mut self, action_id: &str, state: ActionState) {
        if let Some(r) = self.proposals.iter_mut().find(|r| r.action_id == action_id) {
            r.state = state;
            r.ended = true;
        }
    }

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
    /// Puts back, in a phone's new state, the proposals of that phone the Confirmations mirror
    /// has from an earlier run, waiting and ended (`switchboard_domain::confirmations::history`): into its
    /// receiver ([`switchboard_wire::ifp::Receiver::restore_action`]), so the approval, result or
    /// cancellation that comes after the restart is judged against the proposal, and a message
    /// the phone sends again because it was not acknowledged before the restart is a
    /// duplicate, rather than refused as about an action never proposed; and into the records
    /// the proposal notices follow. A proposal whose `expires_at` cannot be read is left out of
    /// the receiver (and logged); the mirror still shows it.
    pub(super) fn restore_proposals(&self, device_id: &str, p: &mut PhoneState) {
        let Some(mirror) = &self.inner.confirmations else {
            return;
        };
        let m = lock(mirror);
        // Oldest first, so the receiver's bound would evict the oldest ended ones first.
        for c in m
            .ended()
            .chain(m.waiting().iter())
            .filter(|c| c.phone == device_id)
        {
            let expires_at = match c.expires_at.parse::<switchboard_wire::ifp::Timestamp>() {
                Ok(t) => t,
                Err(e) => {
                    tracing::warn!(
                        action_id = %c.action_id,
                        "a proposal kept from the last run has an unreadable expires_at {:?}: {e}",
                        c.expires_at
                    );
                    continue;
                }
            };
            if p.receiver
                .restore_action(&c.action_id, c.state, &c.hash.given, expires_at)
                && p.proposals.len() < MAX_PROPOSALS
            {
                p.proposals.push(ProposalRecord {
                    action_id: c.action_id.clone(),
                    state: c.state,
                    ended: c.state.is_terminal(),
                });
            }
        }
    }

    pub(super) fn apply_action(&self, device_id: &str, p: &mut PhoneState, env: &Envelope) {
        if p.seen_ids.contains(&env.id) {
            // A replay of a message already applied (the phone was not sure it arrived).
            return;
        }
        p.remember_id(&env.id);
        let typed = IncomingMessage::from_envelope(env);
        let outcome = p.receiver.receive_at_ts(env);
        if outcome.verdict == Verdict::Accepted {
            self.raise_generation(device_id, p, env.generation);
        }
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
            let now_ms = self.inner.clock.now_ms_i64();
            let changes = lock(mirror).apply(device_id, env, &outcome, now_ms);
            for change in changes {
                self.notify(HubNotice::ConfirmationChanged {
                    device_id: device_id.to_string(),
                    change: Box::new(change),
                });
            }
        }
        let Ok(IncomingMessage::Action(action)) = typed else {
            return;
        };
        let action_id = action.action_id().to_string();
        let idx = p.proposals.iter().position(|r| r.action_id == action_id);
        let idx = match (idx, &action) {
            (Some(i), _) => i,
            (None, IncomingAction::Propose(prop)) => {
                if p.proposals.len() >= MAX_PROPOSALS {
                    let drop = p.proposals.iter().position(|r| r.ended).unwrap_or(0);
                    p.proposals.remove(drop);
                }
                p.proposals.push(ProposalRecord {
                    action_id: action_id.clone(),
                    state: outcome.action_state.unwrap_or(ActionState::Requested),
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
        if let Some(state) = outcome.action_state {
            rec.state = state;
        }
        if rec.state.is_terminal() && !rec.ended {
            rec.ended = true;
            self.notify(HubNotice::ProposalEnded {
                device_id: device_id.to_string(),
                action_id,
                state: rec.state,
            });
        }
    }
}
