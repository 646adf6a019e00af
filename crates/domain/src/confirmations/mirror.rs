//! The mirror: the state machine that follows every proposal a phone sends (`action.propose`)
//! through its approval, rejection, result, cancellation or expiry, as the receiver judged each
//! message, and records what was odd about it (see the [`crate::confirmations`] module doc).
//!
//! Why a module of its own: this is the one place that changes what the view shows; it reads
//! messages the phone sent and never answers them.
//!
//! Parts: `propose` (a proposal arriving), `follow_up` (the messages after it), `expiry`
//! (ending without a message), `autonomy` (the levels proposals are made under) and `kept`
//! (what is kept across restarts). The state and the moves they share are here.

use std::collections::{HashMap, VecDeque};

use serde_json::{Map, Value};

use super::catalogue::bundled_catalogue;
use super::texts::finish;
use super::view::{
    Anomaly, AnomalyKind, ChangeKind, ConfirmationView, ConfirmationsSnapshot, MirrorChange,
    TimelineItem,
};
use crate::phone_action;
use crate::runtime::{Autonomy, ToolCatalogue};
use switchboard_wire::ifp::envelope::{Envelope, Timestamp};
use switchboard_wire::ifp::payload::{IncomingAction, IncomingMessage};
use switchboard_wire::ifp::{ActionState, Outcome};

mod autonomy;
mod expiry;
mod follow_up;
mod kept;
mod propose;

pub use expiry::{EXPIRED_WORDS, UNPAIRED_WORDS};

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
