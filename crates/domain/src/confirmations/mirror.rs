//! The mirror: the state machine that follows every proposal a phone sends (`action.propose`)
//! through its approval, rejection, result, cancellation or expiry, as the receiver judged each
//! message, and records what was odd about it (see the [`crate::confirmations`] module doc).
//!
//! Why a module of its own: this is the one place that changes what the view shows; it reads
//! messages the phone sent and never answers them.

use std::collections::{HashMap, VecDeque};

use serde_json::{Map, Value};

use super::catalogue::{bundled_catalogue, tool_info, PHONE_ACTION_TOOL};
use super::texts::{self, finish, summary_of};
use super::view::{
    Anomaly, AnomalyKind, AutonomySource, ChangeKind, ConfirmationView, ConfirmationsSnapshot,
    ConfirmedBy, HashCheck, MirrorChange, PhoneActionView, ProposalAutonomy, RejectReason,
    TimelineItem,
};
use crate::phone_action;
use crate::runtime::{autonomy_table, Autonomy, AutonomyTable, ToolCatalogue};
use switchboard_wire::ifp::envelope::{Envelope, Timestamp};
use switchboard_wire::ifp::payload::{
    ConfirmationMode as WireMode, IncomingAction, IncomingMessage,
};
use switchboard_wire::ifp::{params_hash, ActionState, ErrorClass, Outcome, Verdict};

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
/// Most (phone, session) autonomy levels kept; past it the oldest reported is forgotten (its
/// proposals then show the spec's fallback).
pub const MAX_SESSIONS: usize = 1024;
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
    /// Moves whenever what is kept across restarts changes
    /// ([`ConfirmationMirror::kept_revision`]).
    kept_revision: u64,
    autonomy: HashMap<String, Autonomy>,
    /// Each (phone, session)'s reported level and when it was received (epoch ms).
    session_autonomy: HashMap<(String, String), (Autonomy, i64)>,
    session_order: VecDeque<(String, String)>,
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

/// The number a proposal's key ends in (`<phone>#<n>`), if it has one.
fn key_number(key: &str) -> Option<u64> {
    key.rsplit_once('#')?.1.parse().ok()
}

fn push_bounded<T>(list: &mut Vec<T>, item: T, cap: usize) -> bool {
    if list.len() < cap {
        list.push(item);
        true
    } else {
        false
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
            kept_revision: 0,
            autonomy: HashMap::new(),
            session_autonomy: HashMap::new(),
            session_order: VecDeque::new(),
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

    /// Records the autonomy level `phone` reported for runtime session `session`
    /// (`event.runtime.autonomy`), received at `at_ms` (Unix epoch milliseconds): it becomes the
    /// phone's latest level (the autonomy table's) and the level of every proposal of that
    /// session, those waiting now and those to come. Returns the waiting proposals whose
    /// autonomy changed.
    pub fn set_session_autonomy(
        &mut self,
        phone: &str,
        session: &str,
        autonomy: Autonomy,
        at_ms: i64,
    ) -> Vec<ConfirmationView> {
        self.set_autonomy(phone, autonomy);
        let key = (phone.to_string(), session.to_string());
        if self
            .session_autonomy
            .insert(key.clone(), (autonomy, at_ms))
            .is_none()
        {
            self.session_order.push_back(key);
            while self.session_order.len() > MAX_SESSIONS {
                if let Some(old) = self.session_order.pop_front() {
                    self.session_autonomy.remove(&old);
                }
            }
        }
        let level = self.proposal_autonomy(phone, Some(session));
        let mut changed = Vec::new();
        for view in self
            .waiting
            .iter_mut()
            .filter(|c| c.phone == phone && c.session.as_deref() == Some(session))
        {
            if view.autonomy != level {
                view.autonomy = level.clone();
                changed.push(view.clone());
            }
        }
        changed
    }

    /// The autonomy that applies to a proposal of `phone` in `session`: the level the phone
    /// reported for that session (a proposal carries none of its own, so it inherits it), else
    /// `ask_before_action`, the spec's fallback (`openphone-runtime-protocol.md`, "Autonomy").
    pub fn proposal_autonomy(&self, phone: &str, session: Option<&str>) -> ProposalAutonomy {
        let reported = session.and_then(|s| {
            self.session_autonomy
                .get(&(phone.to_string(), s.to_string()))
        });
        let (autonomy, source, reported_at_ms) = match (session, reported) {
            (Some(_), Some((a, at))) => (*a, AutonomySource::Session, Some(*at)),
            (Some(_), None) => (
                Autonomy::AskBeforeAction,
                AutonomySource::SessionNotReported,
                None,
            ),
            (None, _) => (Autonomy::AskBeforeAction, AutonomySource::NoSession, None),
        };
        ProposalAutonomy {
            autonomy,
            source,
            reported_at_ms,
            words: texts::proposal_autonomy(autonomy, source, session),
        }
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

    /// The proposals waiting on a phone (requested or approved), in arrival order (the
    /// snapshot's `waiting` sorts them soonest expiry first).
    pub fn waiting(&self) -> &[ConfirmationView] {
        &self.waiting
    }

    /// The ended proposals kept, oldest first.
    pub fn ended(&self) -> impl Iterator<Item = &ConfirmationView> {
        self.ended.iter()
    }

    /// Number of proposals waiting.
    pub fn waiting_count(&self) -> usize {
        self.waiting.len()
    }

    /// Number of ended proposals kept.
    pub fn ended_count(&self) -> usize {
        self.ended.len()
    }

    /// A number that moves whenever what is kept across restarts changes (a proposal came,
    /// moved or ended, or a message was noted on one): the app writes the history file
    /// ([`super::history`]) only when it moved since the last write.
    pub fn kept_revision(&self) -> u64 {
        self.kept_revision
    }

    /// The ended history, oldest first, and how many ended proposals were dropped beyond
    /// [`MAX_ENDED`]: what is kept across restarts ([`super::history`]).
    pub fn ended_history(&self) -> (Vec<ConfirmationView>, u64) {
        (self.ended.iter().cloned().collect(), self.ended_dropped)
    }

    /// The proposals waiting, in arrival order: what is kept across restarts with the ended
    /// history ([`super::history`]), so that a proposal the desktop acknowledged before a
    /// restart is still shown waiting after it, and its end is matched to it.
    pub fn waiting_history(&self) -> Vec<ConfirmationView> {
        self.waiting.clone()
    }

    /// Puts back the proposals an earlier run had waiting (`waiting` as
    /// [`Self::waiting_history`] gives it), after [`Self::restore_ended`]: without proposals
    /// that have ended or whose key, or phone and action id, is already here, within
    /// [`MAX_WAITING`] (the rest counted as dropped). Those whose `expires_at` passed
    /// meanwhile end at the hub's next expiry check ([`Self::expire_due`]), as if the desktop
    /// had run all along. Returns how many were put back. The revision does not move.
    pub fn restore_waiting(&mut self, waiting: Vec<ConfirmationView>) -> usize {
        let mut n = 0;
        for c in waiting {
            let known = |o: &ConfirmationView| {
                o.key == c.key || (o.phone == c.phone && o.action_id == c.action_id)
            };
            if c.is_ended() || self.waiting.iter().any(known) || self.ended.iter().any(known) {
                continue;
            }
            if self.waiting.len() >= MAX_WAITING {
                self.waiting_dropped = self.waiting_dropped.saturating_add(1);
                continue;
            }
            if let Some(m) = key_number(&c.key) {
                self.next_n = self.next_n.max(m.saturating_add(1));
            }
            self.waiting.push(c);
            n += 1;
        }
        n
    }

    /// Puts back the ended history of an earlier run (`ended` oldest first, as
    /// [`Self::ended_history`] gives it), before what this run ended: kept within
    /// [`MAX_ENDED`] (the oldest dropped and counted), without proposals that had not ended or
    /// whose key is already here; later proposals get keys of their own. Returns how many were
    /// put back. The history's revision does not move: nothing new to write.
    pub fn restore_ended(&mut self, ended: Vec<ConfirmationView>, dropped: u64) -> usize {
        let mut restored: VecDeque<ConfirmationView> = ended
            .into_iter()
            .filter(|c| {
                c.is_ended()
                    && !self.ended.iter().any(|e| e.key == c.key)
                    && !self.waiting.iter().any(|w| w.key == c.key)
            })
            .collect();
        let n = restored.len();
        let next = restored
            .iter()
            .filter_map(|c| key_number(&c.key))
            .max()
            .map_or(0, |m| m.saturating_add(1));
        self.next_n = self.next_n.max(next);
        restored.extend(self.ended.drain(..));
        self.ended = restored;
        self.ended_dropped = self.ended_dropped.saturating_add(dropped);
        while self.ended.len() > MAX_ENDED {
            self.ended.pop_front();
            self.ended_dropped = self.ended_dropped.saturating_add(1);
        }
        n
    }

    /// Takes in one message from `phone` that the receiver judged `outcome`, received at `now_ms`
    /// (Unix epoch milliseconds), and returns what it changed. Only `action.*` messages change
    /// anything; any other message returns an empty list. Never panics on any input.
    ///
    /// `phone` is the phone's device id: it keys the proposals (with `action_id`); the app
    /// puts the phone's pairing label in its place before a notification text is made
    /// (`app::run`), as the views do. Call it with
    /// the same receiver outcome the link answered with, for every message, rejected ones
    /// included (they are how anomalies are seen).
    pub fn apply(
        &mut self,
        phone: &str,
        env: &Envelope,
        outcome: &Outcome,
        now_ms: i64,
    ) -> Vec<MirrorChange> {
        let changes = self.apply_action(phone, env, outcome, now_ms);
        if !changes.is_empty() {
            // A proposal came, moved or had a message noted: what is kept changed.
            self.kept_revision = self.kept_revision.wrapping_add(1);
        }
        changes
    }

    fn apply_action(
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

    fn find_mut(&mut self, phone: &str, action_id: &str) -> Option<&mut ConfirmationView> {
        if let Some(i) = self
            .waiting
            .iter()
            .position(|c| c.phone == phone && c.action_id == action_id)
        {
            return self.waiting.get_mut(i);
        }
        let i = self
            .ended
            .iter()
            .rposition(|c| c.phone == phone && c.action_id == action_id)?;
        // A message noted on an ended proposal changes the history kept across restarts.
        self.kept_revision = self.kept_revision.wrapping_add(1);
        self.ended.get_mut(i)
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

    /// Ends every proposal still `requested` whose `expires_at` is before `now_ms` (Unix epoch
    /// milliseconds): state `expired`, "expired: no answer from the phone". The phone can no
    /// longer approve it (an approval after `expires_at` is `action_expired`), so waiting on it
    /// is over. An approved proposal waiting for its result is left waiting. Returns one
    /// [`ChangeKind::Lapsed`] change per proposal ended (never notified: `notify.rs`).
    pub fn expire_due(&mut self, now_ms: i64) -> Vec<MirrorChange> {
        let due: Vec<(String, String)> = self
            .waiting
            .iter()
            .filter(|c| c.state == ActionState::Requested && now_ms > c.expires_at_ms)
            .map(|c| (c.phone.clone(), c.action_id.clone()))
            .collect();
        due.into_iter()
            .filter_map(|(phone, action_id)| {
                self.lapse(&phone, &action_id, now_ms, |c| {
                    format!("expired: no answer from the phone by {}", c.expires_at)
                })
            })
            .collect()
    }

    /// Ends every waiting proposal of `phone` (it was unpaired, so it will never answer): a
    /// `requested` one as `expired`, an `approved` one staying `approved`, both with "ended:
    /// the phone was unpaired before it answered". One [`ChangeKind::Lapsed`] change each.
    pub fn end_for_phone(&mut self, phone: &str, now_ms: i64) -> Vec<MirrorChange> {
        let due: Vec<String> = self
            .waiting
            .iter()
            .filter(|c| c.phone == phone)
            .map(|c| c.action_id.clone())
            .collect();
        due.into_iter()
            .filter_map(|action_id| {
                self.lapse(phone, &action_id, now_ms, |_| {
                    "ended: the phone was unpaired before it answered".to_string()
                })
            })
            .collect()
    }

    /// The earliest `expires_at` (epoch ms) of a proposal still `requested`, if any.
    pub fn next_expiry_ms(&self) -> Option<i64> {
        self.waiting
            .iter()
            .filter(|c| c.state == ActionState::Requested)
            .map(|c| c.expires_at_ms)
            .min()
    }

    /// Moves one waiting proposal to the ended history without a message from the phone.
    fn lapse(
        &mut self,
        phone: &str,
        action_id: &str,
        now_ms: i64,
        words: impl Fn(&ConfirmationView) -> String,
    ) -> Option<MirrorChange> {
        let i = self
            .waiting
            .iter()
            .position(|c| c.phone == phone && c.action_id == action_id)?;
        let mut view = self.waiting.remove(i);
        if view.state == ActionState::Requested {
            view.state = ActionState::Expired;
        }
        view.ended_at_ms = Some(now_ms);
        view.updated_at_ms = now_ms;
        finish(&mut view);
        if view.phone_action.is_none() {
            view.ended_text = Some(words(&view));
        }
        if self.ended.len() >= MAX_ENDED {
            self.ended.pop_front();
            self.ended_dropped = self.ended_dropped.saturating_add(1);
        }
        self.ended.push_back(view.clone());
        self.kept_revision = self.kept_revision.wrapping_add(1);
        Some(MirrorChange {
            kind: ChangeKind::Lapsed,
            confirmation: Some(view),
            anomaly: None,
        })
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
        self.kept_revision = self.kept_revision.wrapping_add(1);
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
