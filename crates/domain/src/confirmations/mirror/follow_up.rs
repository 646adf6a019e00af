//! Every message after a proposal (`action.approve`, `action.reject`, `action.result`,
//! `action.cancel`): moves the proposal as the receiver judged the message and notes what was
//! odd about it (a refused follow-up, a policy-auto approval, a stray message).

use super::{cut_message, push_bounded, push_timeline, ConfirmationMirror, MAX_ANOMALIES};
use crate::confirmations::catalogue::PHONE_ACTION_TOOL;
use crate::confirmations::texts;
use crate::confirmations::view::{
    AnomalyKind, ChangeKind, ConfirmedBy, MirrorChange, RejectReason,
};
use crate::runtime::Autonomy;
use switchboard_wire::ifp::envelope::Envelope;
use switchboard_wire::ifp::payload::{ConfirmationMode as WireMode, IncomingAction};
use switchboard_wire::ifp::{ErrorClass, Outcome, Verdict};

impl ConfirmationMirror {
    pub(super) fn apply_follow_up(
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
            let why = texts::receiver_said(outcome.reason.as_deref());
            return self.add_stray(Self::anomaly(
                phone,
                action_id,
                env,
                now_ms,
                AnomalyKind::Stray,
                texts::stray(&env.r#type, action_id, phone, &why)
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
                texts::repeated(&env.r#type),
                None,
            ),
            Verdict::Rejected => {
                let (kind, text) = match outcome.error_class {
                    Some(ErrorClass::ActionExpired) => (
                        AnomalyKind::ApprovedAfterExpiry,
                        texts::approved_after_expiry(&env.ts, &expires_at),
                    ),
                    Some(ErrorClass::BindingMismatch) => {
                        let given = match action {
                            Some(IncomingAction::Approve(a)) => a.params_hash.clone(),
                            _ => "another hash".to_string(),
                        };
                        (
                            AnomalyKind::BindingMismatch,
                            texts::binding_mismatch(&given, &proposal_hash),
                        )
                    }
                    _ if state_before.is_terminal() => (
                        AnomalyKind::MessageAfterEnd,
                        texts::message_after_end(&env.r#type, state_before),
                    ),
                    _ => (AnomalyKind::Refused, texts::refused(&env.r#type, &reason)),
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
                        texts::accepted(&env.r#type),
                        None,
                    );
                };
                let text = texts::accepted_action(action, new_state, &env.r#type);
                let mut odd = None;
                if let Some(view) = self.find_mut(phone, action_id) {
                    push_timeline(view, env, outcome, now_ms, text);
                    view.updated_at_ms = now_ms;
                    match action {
                        Some(IncomingAction::Approve(a)) => {
                            view.confirmed_by = Some(match a.confirmation.mode {
                                WireMode::UserConfirmed => ConfirmedBy::UserConfirmed,
                                WireMode::PolicyAuto => ConfirmedBy::PolicyAuto,
                            });
                            if a.confirmation.mode == WireMode::PolicyAuto {
                                odd = if view.tool.name == PHONE_ACTION_TOOL {
                                    Some((
                                        AnomalyKind::PolicyAutoPhoneAction,
                                        texts::policy_auto_phone_action(),
                                    ))
                                } else if view.risk == crate::runtime::Risk::High
                                    // The proposal's own (its session's) level, not the
                                    // phone's latest of any session.
                                    && view.autonomy.autonomy == Autonomy::TrustedActions
                                {
                                    Some((
                                        AnomalyKind::PolicyAutoHighRisk,
                                        texts::policy_auto_high_risk(&view.tool.name),
                                    ))
                                } else {
                                    None
                                };
                                if let Some((kind, words)) = &odd {
                                    let a = Self::anomaly(
                                        phone,
                                        action_id,
                                        env,
                                        now_ms,
                                        *kind,
                                        words.clone(),
                                    );
                                    push_bounded(&mut view.anomalies, a, MAX_ANOMALIES);
                                }
                            }
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
                let mut changes = Vec::new();
                if let Some((kind, words)) = odd {
                    changes.push(MirrorChange {
                        kind: ChangeKind::Anomaly,
                        confirmation: self.find_mut(phone, action_id).map(|v| v.clone()),
                        anomaly: Some(Self::anomaly(phone, action_id, env, now_ms, kind, words)),
                    });
                }
                changes.extend(self.transition(phone, action_id, new_state, now_ms));
                changes
            }
        }
    }
}
