//! A proposal arriving (`action.propose`): a new one becomes a waiting confirmation with its
//! tool, summary, risk and `params_hash` check; a repeat or a refused one is noted on the
//! proposal already kept, or kept as a stray message when there is none.

use serde_json::Value;

use super::{push_bounded, push_timeline, ts_ms, ConfirmationMirror, MAX_ANOMALIES, MAX_WAITING};
use crate::confirmations::catalogue::{tool_info, PHONE_ACTION_TOOL};
use crate::confirmations::texts::{self, summary_of};
use crate::confirmations::view::{
    AnomalyKind, ChangeKind, ConfirmationView, HashCheck, MirrorChange, PhoneActionView,
};
use crate::phone_action;
use switchboard_wire::ifp::envelope::Envelope;
use switchboard_wire::ifp::{params_hash, ActionState, Outcome, Verdict};

impl ConfirmationMirror {
    pub(super) fn apply_propose(
        &mut self,
        phone: &str,
        env: &Envelope,
        outcome: &Outcome,
        now_ms: i64,
        action_id: &str,
        p: &switchboard_wire::ifp::payload::ActionPropose,
    ) -> Vec<MirrorChange> {
        let accepted_new = outcome.verdict == Verdict::Accepted
            && outcome.action_state == Some(ActionState::Requested);
        if !accepted_new {
            // A repeat, or a refused proposal: note it on the proposal we have, if any.
            let reason = outcome.reason.clone().unwrap_or_default();
            let text = texts::proposal_not_new(outcome.verdict, &reason);
            return self.follow_up_on_existing(phone, env, outcome, now_ms, action_id, text, None);
        }
        let computed = params_hash(&Value::Object(p.params.clone()));
        let hash = HashCheck {
            matches: computed == p.params_hash,
            given: p.params_hash.clone(),
            computed,
        };
        let tool = tool_info(self.catalogue.as_ref(), &p.tool);
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
        let autonomy = self.proposal_autonomy(phone, env.session.as_deref());
        let mut view = ConfirmationView {
            key: format!("{phone}/{action_id}#{n}"),
            phone: phone.to_string(),
            action_id: action_id.to_string(),
            session: env.session.clone(),
            autonomy,
            summary,
            tool,
            params: p.params.clone(),
            hash,
            risk: p.risk,
            reason: p.reason.clone(),
            idempotency_key: p.idempotency_key.clone(),
            expires_at: p.expires_at.to_string(),
            // The countdown runs on the desktop's clock: the lifetime the phone gave the
            // proposal by its own clock (`expires_at` - `ts`), from when it arrived here, so a
            // phone clock a day off does not show it expired (or a day long).
            expires_at_ms: now_ms
                .saturating_add(ts_ms(&p.expires_at).saturating_sub(ts_ms(&env.ts))),
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
        let risk_text = texts::proposed(&view);
        push_timeline(&mut view, env, outcome, now_ms, risk_text);
        let mut anomalies = Vec::new();
        if !view.hash.matches {
            anomalies.push(Self::anomaly(
                phone,
                action_id,
                env,
                now_ms,
                AnomalyKind::ParamsHashMismatch,
                texts::params_hash_mismatch(&view.hash),
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
                    texts::risk_differs(&view, list_risk),
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
    pub(super) fn follow_up_on_existing(
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
                texts::stray(&env.r#type, action_id, phone, &text),
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
}
