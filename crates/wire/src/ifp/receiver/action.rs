//! The action lifecycle of the receiver: `requested -> approved -> executed | failed`, with
//! `rejected`, `cancelled` and `expired` as the other ends, the generation fence on approvals and
//! results, the `params_hash` binding, and the bound on actions kept.
//!
//! `ifp1-notes.md`, "Action lifecycle"; the rules are listed in the module doc of [`super`].

use serde_json::Value;

use super::{digest, repeat_after_restart, ActionRecord, ActionState, Digest32, Outcome, Receiver};
use crate::ifp::envelope::{Envelope, Timestamp};
use crate::ifp::error_class::ErrorClass;
use crate::ifp::params_hash::params_hash_matches;
use crate::ifp::payload::{ActionPropose, IncomingAction, ResultStatus};

impl Receiver {
    pub(super) fn receive_action(
        &mut self,
        env: &Envelope,
        action: IncomingAction,
        now: &Timestamp,
    ) -> Outcome {
        let id = action.action_id().to_string();
        let payload_digest = digest(&crate::js_json::canonical(&Value::Object(
            env.payload.clone(),
        )));
        if let IncomingAction::Propose(p) = &action {
            return self.receive_propose(env, p, payload_digest);
        }
        let Some(record) = self.actions.get(&id) else {
            return Outcome::rejected(
                ErrorClass::InvalidEnvelope,
                format!("payload.action_id: no proposal {id:?} is known to this receiver"),
            )
            .with_action(&id, None);
        };
        let state = record.state;
        if record.propose_digest.is_none() {
            if let Some(o) = repeat_after_restart(&id, &action, record) {
                return o;
            }
        }
        if state.is_terminal() {
            if matches!(action, IncomingAction::Result(_))
                && record.result_digest == Some(payload_digest)
            {
                return Outcome::duplicate(format!("action {id}: identical result repeated"))
                    .with_action(&id, Some(state));
            }
            return Outcome::rejected(
                ErrorClass::InvalidEnvelope,
                format!(
                    "{}: action {id} is already {} (finished)",
                    env.r#type,
                    state.as_str()
                ),
            )
            .with_action(&id, Some(state));
        }
        if let Some(fenced) = self.fence(env.generation) {
            return fenced.with_action(&id, Some(state));
        }
        let refuse = |why: &str| {
            Outcome::rejected(
                ErrorClass::InvalidEnvelope,
                format!("{}: action {id} is {}: {why}", env.r#type, state.as_str()),
            )
            .with_action(&id, Some(state))
        };
        let (new_state, outcome) = match (&action, state) {
            (IncomingAction::Approve(a), ActionState::Requested) => {
                let Some(record) = self.actions.get_mut(&id) else {
                    return refuse("not tracked");
                };
                if *now > record.expires_at {
                    record.state = ActionState::Expired;
                    return Outcome::rejected(
                        ErrorClass::ActionExpired,
                        format!(
                            "action {id}: approved at {now}, after expires_at {}",
                            record.expires_at
                        ),
                    )
                    .with_action(&id, Some(ActionState::Expired));
                }
                if a.params_hash != record.params_hash {
                    return Outcome::rejected(
                        ErrorClass::BindingMismatch,
                        format!(
                            "payload.params_hash: {} differs from the proposal's {}",
                            a.params_hash, record.params_hash
                        ),
                    )
                    .with_action(&id, Some(ActionState::Requested));
                }
                record.approve_digest = Some(payload_digest);
                (ActionState::Approved, Outcome::accepted(true))
            }
            (IncomingAction::Approve(_), ActionState::Approved) => {
                if self.actions.get(&id).and_then(|r| r.approve_digest) == Some(payload_digest) {
                    return Outcome::duplicate(format!("action {id}: identical approval repeated"))
                        .with_action(&id, Some(state));
                }
                return refuse("a different approval was already accepted");
            }
            (IncomingAction::Reject(_), ActionState::Requested) => {
                (ActionState::Rejected, Outcome::accepted(true))
            }
            (IncomingAction::Reject(_), _) => {
                return refuse("only a requested action can be rejected")
            }
            (IncomingAction::Cancel(_), _) => (ActionState::Cancelled, Outcome::accepted(true)),
            (IncomingAction::Result(r), ActionState::Approved) => {
                if let Some(record) = self.actions.get_mut(&id) {
                    record.result_digest = Some(payload_digest);
                }
                let s = match r.status {
                    ResultStatus::Executed => ActionState::Executed,
                    ResultStatus::Failed => ActionState::Failed,
                };
                (s, Outcome::accepted(true))
            }
            (IncomingAction::Result(_), _) => return refuse("a result needs an approved action"),
            _ => return refuse("message not allowed in this state"),
        };
        if let Some(record) = self.actions.get_mut(&id) {
            record.state = new_state;
        }
        outcome.with_action(&id, Some(new_state))
    }

    pub(super) fn receive_propose(
        &mut self,
        env: &Envelope,
        p: &ActionPropose,
        payload_digest: Digest32,
    ) -> Outcome {
        let id = p.action_id.as_str();
        let matches = params_hash_matches(p);
        if let Some(record) = self.actions.get(id) {
            let state = record.state;
            let same = match record.propose_digest {
                Some(d) => d == payload_digest,
                None => record.params_hash == p.params_hash,
            };
            // An action put back from an earlier run may have ended since its proposal: the
            // phone resends the proposal with everything after it that was not acknowledged.
            if same && (!state.is_terminal() || record.propose_digest.is_none()) {
                let mut o = Outcome::duplicate(format!("action {id}: identical proposal repeated"))
                    .with_action(id, Some(state));
                o.params_hash_matches = Some(matches);
                return o;
            }
            return Outcome::rejected(
                ErrorClass::InvalidEnvelope,
                format!(
                    "payload.action_id: action {id} was already proposed (now {})",
                    state.as_str()
                ),
            )
            .with_action(id, Some(state));
        }
        if let Some(fenced) = self.fence(env.generation) {
            return fenced.with_action(id, None);
        }
        self.track(
            id,
            ActionRecord {
                state: ActionState::Requested,
                params_hash: p.params_hash.clone(),
                expires_at: p.expires_at.clone(),
                propose_digest: Some(payload_digest),
                approve_digest: None,
                result_digest: None,
            },
        );
        let mut o = Outcome::accepted(true).with_action(id, Some(ActionState::Requested));
        o.params_hash_matches = Some(matches);
        o
    }

    pub(super) fn evict_one_action(&mut self) {
        let finished = self
            .action_order
            .iter()
            .position(|id| !matches!(self.actions.get(id), Some(a) if !a.state.is_terminal()));
        let victim = match finished {
            Some(i) => self.action_order.remove(i),
            None => self.action_order.pop_front(),
        };
        if let Some(id) = victim {
            self.actions.remove(&id);
        }
    }
}
