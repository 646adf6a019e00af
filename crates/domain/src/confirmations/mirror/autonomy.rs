//! The autonomy levels a mirror knows: what each phone declared and what each (phone, session)
//! reported, so that a proposal shows the level it was made under. Kept apart from the state
//! machine because it only annotates proposals; it never moves one.

use super::{ConfirmationMirror, MAX_SESSIONS};
use crate::confirmations::texts;
use crate::confirmations::view::{AutonomySource, ConfirmationView, ProposalAutonomy};
use crate::runtime::{autonomy_table, Autonomy, AutonomyTable};

impl ConfirmationMirror {
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
}
