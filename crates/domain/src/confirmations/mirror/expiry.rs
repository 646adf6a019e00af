//! Proposals that end without a message from the phone: their `expires_at` passed, or their
//! phone was unpaired. Both move the proposal to the ended history with words saying why.

use super::{ConfirmationMirror, MAX_ENDED};
use crate::confirmations::texts::finish;
use crate::confirmations::view::{ChangeKind, MirrorChange};
use switchboard_wire::ifp::ActionState;

/// How a proposal that passed its `expires_at` unanswered ended ([`ConfirmationMirror::expire_due`]).
/// The deadline itself is not in the words: it stays in the proposal as a time
/// (`expires_at_ms`, on the desktop's clock, and `expires_at` as sent), for a view to show in
/// the person's own time zone and format, as it shows its other times; a raw UTC timestamp in
/// a sentence is neither. Worded apart from the phone's own "no answer in time" (a rejection
/// for `expired` that the phone sent): here the phone sent nothing at all.
pub const EXPIRED_WORDS: &str =
    "expired: Switchboard heard nothing from the phone by its deadline, so how it ended there is not known";

/// How a waiting proposal of a phone that was unpaired ended ([`ConfirmationMirror::end_for_phone`]).
pub const UNPAIRED_WORDS: &str = "ended: the phone was unpaired before it answered";

impl ConfirmationMirror {
    /// Ends every proposal still `requested` whose `expires_at` is before `now_ms` (Unix epoch
    /// milliseconds): state `expired`, [`EXPIRED_WORDS`]. The phone can no longer approve it
    /// (an approval after `expires_at` is `action_expired`), so waiting on it is over. An
    /// approved proposal waiting for its result is left waiting. Returns one
    /// [`ChangeKind::Lapsed`] change per proposal ended (never notified: `notify.rs`).
    pub fn expire_due(&mut self, now_ms: i64) -> Vec<MirrorChange> {
        let due: Vec<(String, String)> = self
            .waiting
            .iter()
            .filter(|c| c.state == ActionState::Requested && now_ms > c.expires_at_ms)
            .map(|c| (c.phone.clone(), c.action_id.clone()))
            .collect();
        due.into_iter()
            .filter_map(|(phone, action_id)| self.lapse(&phone, &action_id, now_ms, EXPIRED_WORDS))
            .collect()
    }

    /// Ends every waiting proposal of `phone` (it was unpaired, so it will never answer): a
    /// `requested` one as `expired`, an `approved` one staying `approved`, both with
    /// [`UNPAIRED_WORDS`]. One [`ChangeKind::Lapsed`] change each.
    pub fn end_for_phone(&mut self, phone: &str, now_ms: i64) -> Vec<MirrorChange> {
        let due: Vec<String> = self
            .waiting
            .iter()
            .filter(|c| c.phone == phone)
            .map(|c| c.action_id.clone())
            .collect();
        due.into_iter()
            .filter_map(|action_id| self.lapse(phone, &action_id, now_ms, UNPAIRED_WORDS))
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
        words: &str,
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
            view.ended_text = Some(words.to_string());
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
}
