//! Proposals that end without an answer: past their `expires_at`, or of a phone unpaired.
//!
//! Why its own file: every other change of a proposal comes from a message of the phone; these
//! come from the clock and from the person, so the hub looks for them itself. A proposal still
//! `requested` after its `expires_at` can no longer be approved (an approval after it is
//! `action_expired`), so it ends as "expired, no answer from the phone"; the waiting proposals
//! of a phone that was unpaired end too ("the phone was unpaired before it answered"). Each
//! sweep is one state change of the Confirmations mirror and one [`HubNotice::ProposalsLapsed`]
//! per phone, never a desktop notification per proposal. The time is the hub's injected clock
//! ([`super::HubParts::clock`]), so tests move it instead of sleeping. Spec: `docs/protocol.md`,
//! "Proposals that end without an answer".

use std::time::Duration;

use super::{lock, Hub, HubNotice};
use switchboard_domain::confirmations::MirrorChange;

/// How often [`Hub::run`] looks for proposals past their `expires_at` while any waits (1 s).
pub const EXPIRY_TICK: Duration = Duration::from_secs(1);

impl Hub {
    /// Ends every `requested` proposal whose `expires_at` is before the clock's now (module
    /// doc). [`Hub::run`] calls it every [`EXPIRY_TICK`] while a proposal waits; returns how
    /// many ended.
    pub fn expire_proposals(&self) -> usize {
        let Some(mirror) = &self.inner.confirmations else {
            return 0;
        };
        let now_ms = self.inner.clock.now_ms_i64();
        let changes = {
            let mut m = lock(mirror);
            if !m.next_expiry_ms().is_some_and(|t| t < now_ms) {
                return 0;
            }
            m.expire_due(now_ms)
        };
        self.lapsed(changes, "expired: no answer from the phone")
    }

    /// Whether any proposal is still `requested` (so [`Hub::run`] keeps its [`EXPIRY_TICK`]).
    pub(super) fn has_waiting_proposals(&self) -> bool {
        self.inner
            .confirmations
            .as_ref()
            .is_some_and(|m| lock(m).next_expiry_ms().is_some())
    }

    /// Ends the waiting proposals of `device_id` (it was unpaired); returns how many.
    pub(super) fn end_proposals_of(&self, device_id: &str) -> usize {
        let Some(mirror) = &self.inner.confirmations else {
            return 0;
        };
        let now_ms = self.inner.clock.now_ms_i64();
        let changes = lock(mirror).end_for_phone(device_id, now_ms);
        self.lapsed(changes, "the phone was unpaired")
    }

    /// Marks the hub's own records ended and sends one notice per phone.
    fn lapsed(&self, changes: Vec<MirrorChange>, why: &str) -> usize {
        let n = changes.len();
        let mut per_phone: Vec<(String, Vec<String>)> = Vec::new();
        {
            let mut st = lock(&self.inner.state);
            for c in changes.iter().filter_map(|c| c.confirmation.as_ref()) {
                if let Some(p) = st.phones.get_mut(&c.phone) {
                    p.end_record(&c.action_id, c.state);
                }
                match per_phone.iter_mut().find(|(d, _)| *d == c.phone) {
                    Some((_, ids)) => ids.push(c.action_id.clone()),
                    None => per_phone.push((c.phone.clone(), vec![c.action_id.clone()])),
                }
            }
        }
        for (device_id, action_ids) in per_phone {
            self.notify(HubNotice::ProposalsLapsed {
                device_id,
                action_ids,
                why: why.to_string(),
            });
        }
        n
    }
}
