//! ifp/1 messages from a phone ([`LinkEvent::Message`](switchboard_link::LinkEvent)): each
//! taken in once (a resend changes nothing and repeats the acknowledgement), `action.*` handed to
//! `actions.rs`, `event.*` through the phone's receiver and then applied by type; here the
//! events that are neither dials nor bridge results: settings (phone-line summaries, the
//! extension directory) and autonomy.
//!
//! Why apart: this is the one path every message other than a dial read in one pass takes, and
//! the order of its steps (under the state lock, then outside it) is what keeps each applied
//! exactly once.

use std::sync::Arc;

use switchboard_dials::Retention;
use switchboard_domain::bridge::{ExtensionDirectory, ExtensionManifest};
use switchboard_domain::phone_events::{timestamp_ms, PhoneEvent, PhoneEventError, PhoneSettings};
use switchboard_domain::phone_line::summary::{summarize, DialResult};
use switchboard_wire::ifp::{Envelope, Outcome, Verdict};

use super::{lock, After, Hub, HubNotice, PhoneState};

impl Hub {
    pub(super) async fn apply_message(&self, device_id: &str, env: Envelope) {
        let after = self.apply_message_state(device_id, &env);
        self.apply_after(device_id, after).await;
        if self.ack_due(device_id) {
            self.take_ack_point(device_id);
        }
    }

    /// The part of applying a message done under the state lock; returns what is left to do.
    pub(super) fn apply_message_state(&self, device_id: &str, env: &Envelope) -> After {
        let mut st = lock(&self.inner.state);
        let p = self.phone_mut(&mut st, device_id);
        if p.seen_ids.contains(&env.id) {
            // Sent again: this run already took it in (refused, an action message, another
            // type). Nothing changes, nothing is counted, the acknowledgement does not move
            // (it is repeated).
            p.reack = true;
            return After::Nothing;
        }
        let (after, new) = if env.r#type.starts_with("action.") {
            self.apply_action(device_id, p, env);
            (After::Nothing, true)
        } else if env.is_event() {
            self.apply_event(device_id, p, env)
        } else {
            p.remember_id(&env.id);
            (After::Nothing, true)
        };
        if new {
            p.took(&env.id);
        } else {
            p.reack = true;
        }
        after
    }

    pub(super) async fn apply_after(&self, device_id: &str, after: After) {
        match after {
            After::Nothing => {}
            After::Dial {
                dial,
                session,
                retention,
            } => self.apply_dial(device_id, &dial, &session, retention).await,
            After::Bridge(b, at_ms) => self.apply_bridge(device_id, &b, at_ms),
            After::Describes(lines) => self.apply_describes(device_id, &lines),
        }
    }

    /// Applies an event; also says whether it was new (taken in for the first time this run:
    /// accepted or refused) rather than a duplicate by its `dedup` key.
    fn apply_event(&self, device_id: &str, p: &mut PhoneState, env: &Envelope) -> (After, bool) {
        let outcome = p.receiver.receive_at_ts(env);
        match outcome.verdict {
            Verdict::AcknowledgedDuplicate => {
                let dedup = env.payload.get("dedup").and_then(serde_json::Value::as_str);
                if dedup.is_some_and(|d| p.receiver.is_resend(env.session.as_deref(), d, &env.id)) {
                    // The same event sent again: the acknowledgement covering it is repeated.
                    return (After::Nothing, false);
                }
                // Another message repeating an event's dedup key: it changes nothing and is
                // acknowledged by its own id like any new message (the event it repeats was
                // taken in before it); its id is kept so that its own resends are recognised.
                p.remember_id(&env.id);
                return (After::Nothing, true);
            }
            Verdict::Rejected => {
                p.problem(format!(
                    "{} {} refused: {}",
                    env.r#type,
                    env.id,
                    outcome.reason.clone().unwrap_or_default()
                ));
                p.remember_id(&env.id);
                self.refuse(device_id, &env.id, &outcome);
                return (After::Nothing, true);
            }
            Verdict::Accepted => self.raise_generation(device_id, p, env.generation),
        }
        (self.apply_accepted_event(device_id, p, env), true)
    }

    fn apply_accepted_event(&self, device_id: &str, p: &mut PhoneState, env: &Envelope) -> After {
        let typed = match PhoneEvent::from_envelope(env) {
            Ok(t) => t,
            Err(PhoneEventError::NotPhoneEvent(_)) => return After::Nothing,
            Err(e) => {
                let words = e.to_string();
                p.problem(format!("{} unreadable: {words}", env.id));
                p.remember_id(&env.id);
                let refusal = Outcome::from_rejection(switchboard_wire::ifp::Rejection::invalid(
                    words.clone(),
                ));
                self.refuse(device_id, &env.id, &refusal);
                self.notify(HubNotice::EventRefused {
                    device_id: device_id.to_string(),
                    message_id: env.id.clone(),
                    detail: words,
                });
                return After::Nothing;
            }
        };
        match typed {
            PhoneEvent::Settings(s) => {
                let described: Vec<_> = s
                    .lines
                    .iter()
                    .filter(|l| l.last_describe.is_some())
                    .cloned()
                    .collect();
                self.apply_settings(p, *s, env.ts.as_str());
                self.notify(HubNotice::SettingsUpdated {
                    device_id: device_id.to_string(),
                    lines: p.summaries.len() as u64,
                });
                // Judged after the lock is released, with the directory these settings gave.
                After::Describes(described)
            }
            PhoneEvent::Dial(d) => After::Dial {
                dial: d,
                session: env.session.clone().unwrap_or_default(),
                retention: env
                    .labels
                    .map(|l| l.retention)
                    .unwrap_or(Retention::Standard),
            },
            PhoneEvent::Bridge(b) => After::Bridge(b, ts_ms(env)),
            PhoneEvent::Autonomy(a) => {
                p.autonomy.insert(a.session.clone(), a.autonomy);
                // The session's level goes beside its proposals; the Confirmations table
                // shows the phone's latest session level.
                if let Some(mirror) = &self.inner.confirmations {
                    let at = self.inner.clock.now_ms_i64();
                    let changed =
                        lock(mirror).set_session_autonomy(device_id, &a.session, a.autonomy, at);
                    for view in changed {
                        self.notify(HubNotice::ConfirmationChanged {
                            device_id: device_id.to_string(),
                            change: Box::new(switchboard_domain::confirmations::MirrorChange {
                                kind: switchboard_domain::confirmations::ChangeKind::Noted,
                                confirmation: Some(view),
                                anomaly: None,
                            }),
                        });
                    }
                }
                self.notify(HubNotice::AutonomyChanged {
                    device_id: device_id.to_string(),
                    session: a.session,
                    autonomy: a.autonomy,
                });
                After::Nothing
            }
        }
    }

    fn apply_settings(&self, p: &mut PhoneState, s: PhoneSettings, at: &str) {
        let describes: Vec<DialResult> = s
            .lines
            .iter()
            .filter_map(|l| {
                l.last_describe.as_ref().map(|d| DialResult {
                    namespace: l.identifier.clone(),
                    outcome: d.outcome.clone(),
                })
            })
            .collect();
        p.summaries = summarize(&s.registry, s.pairings.as_ref(), &describes);
        if let Some(reason) = &s.pairings_treated_as_empty {
            for line in &mut p.summaries {
                line.warnings.push(format!(
                    "LumiAgent treats the phone's pairings file as empty because {reason}: no pairing record is read from it"
                ));
            }
        }
        let mut dir = ExtensionDirectory::new();
        for l in &s.lines {
            if let Some(perms) = &l.permissions {
                dir.add_manifest(ExtensionManifest {
                    identifier: l.identifier.clone(),
                    name: l.name.clone(),
                    permissions: perms.clone(),
                });
            }
        }
        p.directory = Arc::new(switchboard_domain::bridge::explain::with_builtin(dir));
        p.settings = Some(s);
        p.settings_at = Some(at.to_string());
    }
}

/// Epoch ms of the envelope's `ts` (0 before 1970).
fn ts_ms(env: &Envelope) -> u64 {
    u64::try_from(timestamp_ms(&env.ts)).unwrap_or(0)
}
