//! The ifp/1 receiver state machine: what happens to a validated message.
//!
//! Why: validity of one message is not enough; a replayed event must be acknowledged and not
//! stored twice, a writer from an old home generation must be fenced, a session's events must
//! not go backwards, and each action must follow its lifecycle (`ifp1-notes.md`, "Events: dedup,
//! generation fence, ordering" and "Action lifecycle"). The 10 scenarios of
//! `corpus/ifp1/fixtures/sequences.json` (home generation 3) are its oracle.
//!
//! ## Events (`event.*`), in this order
//! 1. `dedup` key already seen in the session: `acknowledged_duplicate`, not stored (wins over
//!    the fence).
//! 2. `generation` below [`Receiver::home_generation`]: `stale_generation`, with
//!    `current_generation` in the [`Outcome`].
//! 3. `seq` lower than the last accepted `seq` of the session: `ordering_violation` (an equal
//!    `seq` with a new dedup key is accepted).
//! 4. Otherwise `accepted`, stored.
//!
//! ## Actions (`action.*`)
//! States `requested -> approved -> executed | failed`; terminal also `rejected`, `cancelled`,
//! `expired` ([`ActionState`]). Per message:
//! - any message on a finished action: `invalid_envelope`, state unchanged, except an `action.result`
//!   whose payload is identical to the recorded result: `acknowledged_duplicate`;
//! - an `action.approve`/`action.result` (or a propose carrying `generation`) below the home
//!   generation: `stale_generation`;
//! - `action.approve` on `requested`: after `expires_at` (strictly later than it) `action_expired`
//!   and state `expired`; else a `params_hash` differing from the proposal's `binding_mismatch`,
//!   state stays `requested`; else `approved`;
//! - `action.reject` on `requested`: `rejected`; `action.cancel` on `requested` or `approved`:
//!   `cancelled`; `action.result` on `approved`: `executed` or `failed`.
//!
//! Choices where the notes are silent: a message about an `action_id` never proposed (or already
//! forgotten) is `invalid_envelope`; a repeated identical propose or approve is
//! `acknowledged_duplicate`, a different one `invalid_envelope`; `action.reject` after approval and
//! `action.result` before approval are `invalid_envelope`. A generation above the home generation
//! is accepted and does not move the home generation (only [`Receiver::set_home_generation`]
//! does). Other message types are `accepted` and not stored (routing ignores them).
//!
//! ## Time
//! There is no hidden clock: [`Receiver::receive`] takes `now`. The corpus gives "now" as the
//! message's own `ts` (e.g. `action_expiry` approves at `ts` 01:07:00 after `expires_at`
//! 01:06:30); [`Receiver::receive_at_ts`] does exactly that.
//!
//! ## Memory bound
//! State is bounded whatever the peer sends ([`ReceiverLimits`]):
//! - at most `max_sessions` sessions (default 256), least recently used evicted first;
//! - per session at most `max_dedup_keys` dedup keys (default 1024), oldest evicted first; a key is
//!   kept as a 16-byte keyed hash, whatever its length, with an 8-byte hash of the message id it
//!   came with first ([`Receiver::is_resend`]; the hashes are seeded at random for each receiver);
//! - at most `max_actions` actions (default 1024), the oldest finished one evicted first, else
//!   the oldest.
//!
//! Worst case about 256 x 1024 x ~100 bytes = ~26 MB. After eviction a replay of a forgotten
//! key is judged by the remaining rules (usually `ordering_violation`); a forgotten action's late
//! messages are `invalid_envelope`.
//!
//! The [`Outcome`] a message gets (and [`Verdict`], [`ActionState`]) is in `outcome`, the action
//! lifecycle in `action`; events, sessions and the memory bound stay here.

use std::collections::VecDeque;

use foldhash::{HashMap, HashMapExt as _};

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::envelope::{Envelope, Timestamp};
use super::error_class::ErrorClass;
use super::payload::{EventCommon, IncomingAction, IncomingMessage, ResultStatus};
use super::validate::validate;

mod action;
mod outcome;

pub use outcome::{ActionState, Outcome, Verdict};

/// Bounds on what a [`Receiver`] keeps (see the module doc, "Memory bound").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReceiverLimits {
    /// Most sessions tracked at once (least recently used evicted). At least 1.
    pub max_sessions: usize,
    /// Most dedup keys kept per session (oldest evicted). At least 1.
    pub max_dedup_keys: usize,
    /// Most actions tracked at once (oldest finished evicted first). At least 1.
    pub max_actions: usize,
}

impl Default for ReceiverLimits {
    fn default() -> Self {
        ReceiverLimits {
            max_sessions: 256,
            max_dedup_keys: 1024,
            max_actions: 1024,
        }
    }
}

type Digest32 = [u8; 32];

/// For an action put back from an earlier run ([`Receiver::restore_action`]): the
/// `acknowledged_duplicate` outcome when `action` says what the action's state already records
/// (the phone resending a message not acknowledged before the restart), else `None` (the usual
/// rules judge it).
fn repeat_after_restart(
    id: &str,
    action: &IncomingAction,
    record: &ActionRecord,
) -> Option<Outcome> {
    let state = record.state;
    let repeated = match action {
        IncomingAction::Propose(_) => false,
        IncomingAction::Approve(a) => {
            a.params_hash == record.params_hash
                && matches!(
                    state,
                    ActionState::Approved | ActionState::Executed | ActionState::Failed
                )
        }
        IncomingAction::Reject(_) => state == ActionState::Rejected,
        IncomingAction::Cancel(_) => state == ActionState::Cancelled,
        IncomingAction::Result(r) => matches!(
            (r.status, state),
            (ResultStatus::Executed, ActionState::Executed)
                | (ResultStatus::Failed, ActionState::Failed)
        ),
    };
    repeated.then(|| {
        Outcome::duplicate(format!(
            "action {id}: repeated after the desktop restarted (already {})",
            state.as_str()
        ))
        .with_action(id, Some(state))
    })
}

fn digest(text: &str) -> Digest32 {
    Sha256::digest(text.as_bytes()).into()
}

/// Hashes of dedup keys and message ids: two independent keyed hashes seeded at random for each
/// receiver, so a phone cannot choose keys that collide without knowing the seeds, and two
/// different keys of a session's window (at most [`ReceiverLimits::max_dedup_keys`]) share a
/// 128-bit value with odds far below any hardware fault's. Kept in memory only, never compared
/// across runs (a SHA-256 a key would take a tenth of the hub's time per dial).
#[derive(Debug, Default)]
struct KeyHasher {
    a: foldhash::quality::RandomState,
    b: foldhash::quality::RandomState,
}

impl KeyHasher {
    /// A dedup key's 128-bit hash.
    fn key(&self, text: &str) -> u128 {
        use std::hash::BuildHasher as _;
        (u128::from(self.a.hash_one(text)) << 64) | u128::from(self.b.hash_one(text))
    }

    /// A message id's 64-bit tag: enough to tell a message sent again (same id) from another
    /// message repeating its dedup key, in 8 bytes a key.
    fn id_tag(&self, id: &str) -> u64 {
        use std::hash::BuildHasher as _;
        self.a.hash_one(id)
    }
}

#[derive(Debug, Default)]
struct SessionState {
    last_seq: Option<u64>,
    /// Each dedup key's hash ([`KeyHasher::key`]), with the tag of the message id it was
    /// accepted with ([`KeyHasher::id_tag`]).
    dedup: HashMap<u128, u64>,
    dedup_order: VecDeque<u128>,
    last_used: u64,
}

#[derive(Debug)]
struct ActionRecord {
    state: ActionState,
    params_hash: String,
    expires_at: Timestamp,
    /// The proposal's payload digest; `None` for an action put back from an earlier run
    /// ([`Receiver::restore_action`]), whose payload is not kept: a proposal repeated for it is
    /// then judged by its `params_hash`.
    propose_digest: Option<Digest32>,
    approve_digest: Option<Digest32>,
    result_digest: Option<Digest32>,
}

/// The ifp/1 receiver: dedup, generation fence and ordering for events, the lifecycle for
/// actions (module doc). Bounded in memory; not persisted.
#[derive(Debug)]
pub struct Receiver {
    home_generation: u64,
    limits: ReceiverLimits,
    sessions: HashMap<String, SessionState>,
    actions: HashMap<String, ActionRecord>,
    action_order: VecDeque<String>,
    tick: u64,
    hasher: KeyHasher,
}

impl Receiver {
    /// A fresh receiver whose home generation is `home_generation` (>= 1; the corpus uses 3),
    /// with [`ReceiverLimits::default`].
    pub fn new(home_generation: u64) -> Self {
        Receiver::with_limits(home_generation, ReceiverLimits::default())
    }

    /// A fresh receiver with explicit bounds (each raised to at least 1).
    pub fn with_limits(home_generation: u64, limits: ReceiverLimits) -> Self {
        Receiver {
            home_generation,
            limits: ReceiverLimits {
                max_sessions: limits.max_sessions.max(1),
                max_dedup_keys: limits.max_dedup_keys.max(1),
                max_actions: limits.max_actions.max(1),
            },
            sessions: HashMap::new(),
            actions: HashMap::new(),
            action_order: VecDeque::new(),
            tick: 0,
            hasher: KeyHasher::default(),
        }
    }

    /// The current home generation: events and action messages below it are fenced.
    pub fn home_generation(&self) -> u64 {
        self.home_generation
    }

    /// Moves the home generation (after a home transfer).
    pub fn set_home_generation(&mut self, generation: u64) {
        self.home_generation = generation;
    }

    /// Puts back an action this receiver's phone proposed in an earlier run of the desktop, in
    /// the `state` it had then (the Confirmations mirror keeps waiting and ended proposals
    /// across restarts, `switchboard_domain::confirmations::history`), so the messages that follow it are
    /// judged as they would have been without the restart (`ifp1-notes.md`, "Action
    /// lifecycle"): an approval before `expires_at` with the same `params_hash` is accepted, a
    /// result after approval is.
    ///
    /// The earlier run's payloads are not kept, so a message the phone sends again because it
    /// was not acknowledged before the restart is recognised by what it says instead: a
    /// proposal with the same `params_hash`, an approval with the same `params_hash` once
    /// approved (or ended after approval), a rejection of a rejected action, a cancellation of
    /// a cancelled one, a result whose status is the action's end are
    /// `acknowledged_duplicate`. An action already tracked is left alone. Returns whether it
    /// was put back.
    pub fn restore_action(
        &mut self,
        action_id: &str,
        state: ActionState,
        params_hash: &str,
        expires_at: Timestamp,
    ) -> bool {
        if self.actions.contains_key(action_id) {
            return false;
        }
        self.track(
            action_id,
            ActionRecord {
                state,
                params_hash: params_hash.to_string(),
                expires_at,
                propose_digest: None,
                approve_digest: None,
                result_digest: None,
            },
        );
        true
    }

    /// Starts tracking action `id` (not tracked yet) as `record`, within `max_actions`.
    fn track(&mut self, id: &str, record: ActionRecord) {
        if self.actions.len() >= self.limits.max_actions {
            self.evict_one_action();
        }
        self.actions.insert(id.to_string(), record);
        self.action_order.push_back(id.to_string());
    }

    /// The state of an action, if it is tracked.
    pub fn action_state(&self, action_id: &str) -> Option<ActionState> {
        self.actions.get(action_id).map(|a| a.state)
    }

    /// Number of sessions tracked (<= `max_sessions`).
    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    /// Number of dedup keys kept for `session` (<= `max_dedup_keys`).
    pub fn dedup_key_count(&self, session: &str) -> usize {
        self.sessions.get(session).map_or(0, |s| s.dedup.len())
    }

    /// Number of actions tracked (<= `max_actions`).
    pub fn action_count(&self) -> usize {
        self.actions.len()
    }

    /// Validates a raw frame and, if valid, receives it with "now" = its own `ts` (the corpus's
    /// convention). A refused frame gives a `rejected` outcome with the validator's class.
    pub fn receive_value_at_ts(&mut self, value: &Value) -> Outcome {
        match validate(value) {
            Ok(env) => self.receive_at_ts(&env),
            Err(r) => Outcome::from_rejection(r),
        }
    }

    /// [`Receiver::receive`] with "now" = the message's own `ts`, as the corpus sequences do.
    pub fn receive_at_ts(&mut self, env: &Envelope) -> Outcome {
        let now = env.ts.clone();
        self.receive(env, &now)
    }

    /// Applies one validated message at time `now` and returns the verdict (module doc).
    pub fn receive(&mut self, env: &Envelope, now: &Timestamp) -> Outcome {
        self.tick = self.tick.wrapping_add(1);
        let typed = match IncomingMessage::from_envelope(env) {
            Ok(t) => t,
            Err(r) => return Outcome::from_rejection(r),
        };
        match typed {
            IncomingMessage::Event(common) => self.receive_event(env, &common),
            IncomingMessage::Action(action) => self.receive_action(env, action, now),
            _ => Outcome::accepted(false),
        }
    }

    fn fence(&self, generation: Option<u64>) -> Option<Outcome> {
        match generation {
            Some(g) if g < self.home_generation => Some(Outcome {
                current_generation: Some(self.home_generation),
                ..Outcome::rejected(
                    ErrorClass::StaleGeneration,
                    format!(
                        "generation: {g} is below the current generation {}",
                        self.home_generation
                    ),
                )
            }),
            _ => None,
        }
    }

    fn receive_event(&mut self, env: &Envelope, common: &EventCommon) -> Outcome {
        self.event_rules(
            &env.r#type,
            env.session.as_deref(),
            env.generation,
            common.seq,
            &common.dedup,
            &env.id,
        )
    }

    /// Whether an event whose `dedup` key this receiver already holds for `session` is that
    /// event sent again (the key came first with this message `id`), rather than another
    /// message repeating the key under a new id. `false` when the key is not held.
    ///
    /// Why: a resend is acknowledged by the acknowledgement that already covers it (it never
    /// moves the acknowledgement back), a new message by its own id (`docs/protocol.md`,
    /// "Acknowledgement and replay").
    pub fn is_resend(&self, session: Option<&str>, dedup: &str, id: &str) -> bool {
        session
            .and_then(|s| self.sessions.get(s))
            .and_then(|s| s.dedup.get(&self.hasher.key(dedup)))
            .is_some_and(|tag| *tag == self.hasher.id_tag(id))
    }

    /// The event rules of [`Receiver::receive`] applied to an event's fields alone (for callers
    /// that validated and typed the frame themselves, such as the link's one-pass reading of
    /// `event.phoneline.dial`): dedup per session, the generation fence, then `seq` ordering
    /// (`ifp1-notes.md`, "Events: dedup, generation fence, ordering"). `msg_type` only words the
    /// reason of a missing `session`; `id` is the message's id (kept with an accepted key for
    /// [`Receiver::is_resend`]). Same outcomes as `receive` gives the whole envelope.
    pub fn receive_event_fields(
        &mut self,
        msg_type: &str,
        session: Option<&str>,
        generation: Option<u64>,
        seq: u64,
        dedup: &str,
        id: &str,
    ) -> Outcome {
        self.tick = self.tick.wrapping_add(1);
        self.event_rules(msg_type, session, generation, seq, dedup, id)
    }

    fn event_rules(
        &mut self,
        msg_type: &str,
        session: Option<&str>,
        generation: Option<u64>,
        seq: u64,
        dedup: &str,
        id: &str,
    ) -> Outcome {
        let Some(session) = session else {
            return Outcome::rejected(
                ErrorClass::InvalidEnvelope,
                format!("session: required on {msg_type} messages"),
            );
        };
        let key = self.hasher.key(dedup);
        let tick = self.tick;
        // One lookup for a known session (every event of a flood): `Some(last accepted seq)`.
        let known = match self.sessions.get_mut(session) {
            Some(state) => {
                state.last_used = tick;
                if state.dedup.contains_key(&key) {
                    return Outcome::duplicate(format!(
                        "payload.dedup: {dedup:?} already received in {session}"
                    ));
                }
                Some(state.last_seq)
            }
            None => None,
        };
        if let Some(fenced) = self.fence(generation) {
            return fenced;
        }
        if let Some(Some(last)) = known {
            if seq < last {
                return Outcome::rejected(
                    ErrorClass::OrderingViolation,
                    format!(
                        "payload.seq: {} is below the last accepted seq {last} of {session}",
                        seq
                    ),
                );
            }
        }
        if known.is_none() {
            if self.sessions.len() >= self.limits.max_sessions {
                self.evict_least_recent_session();
            }
            // Not `entry`, which would allocate the session's name for every event.
            self.sessions
                .insert(session.to_string(), SessionState::default());
        }
        let max_keys = self.limits.max_dedup_keys;
        let tag = self.hasher.id_tag(id);
        if let Some(state) = self.sessions.get_mut(session) {
            state.last_used = tick;
            state.last_seq = Some(seq);
            if state.dedup.insert(key, tag).is_none() {
                state.dedup_order.push_back(key);
            }
            while state.dedup_order.len() > max_keys {
                if let Some(old) = state.dedup_order.pop_front() {
                    state.dedup.remove(&old);
                }
            }
        }
        Outcome::accepted(true)
    }

    fn evict_least_recent_session(&mut self) {
        let oldest = self
            .sessions
            .iter()
            .min_by_key(|(_, s)| s.last_used)
            .map(|(k, _)| k.clone());
        if let Some(k) = oldest {
            self.sessions.remove(&k);
        }
    }
}
