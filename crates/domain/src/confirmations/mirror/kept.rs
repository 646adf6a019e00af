//! What a mirror keeps across restarts: the waiting proposals and the ended history, read out
//! for the history file and put back from it, and the revision that says when to write it.

use crate::confirmations::view::ConfirmationView;
use std::collections::VecDeque;

use super::expiry::EXPIRED_WORDS;
use super::{key_number, ConfirmationMirror, MAX_ENDED, MAX_WAITING};

/// How [`EXPIRED_WORDS`] began in histories written before, when the deadline followed it.
const OLD_EXPIRED_PREFIX: &str = "expired: no answer from the phone by ";

impl ConfirmationMirror {
    /// A number that moves whenever what is kept across restarts changes (a proposal came,
    /// moved or ended, or a message was noted on one): the app writes the history file
    /// ([`crate::confirmations::history`]) only when it moved since the last write.
    pub fn kept_revision(&self) -> u64 {
        self.kept_revision
    }

    /// The ended history, oldest first, and how many ended proposals were dropped beyond
    /// [`MAX_ENDED`]: what is kept across restarts ([`crate::confirmations::history`]).
    pub fn ended_history(&self) -> (Vec<ConfirmationView>, u64) {
        (self.ended.iter().cloned().collect(), self.ended_dropped)
    }

    /// The proposals waiting, in arrival order: what is kept across restarts with the ended
    /// history ([`crate::confirmations::history`]), so that a proposal the desktop acknowledged
    /// before a restart is still shown waiting after it, and its end is matched to it.
    pub fn waiting_history(&self) -> Vec<ConfirmationView> {
        self.waiting.clone()
    }

    /// Forgets every proposal of `phone`, waiting or ended, and its messages about actions
    /// never seen proposed: for a phone whose earlier records a replay supersedes. The
    /// built-in demo phone (`--demo`) plays its script again at every start, with action ids
    /// of its own each time, so the earlier run's proposals would otherwise be shown again
    /// beside the replay's. Other phones' proposals, the count of ended ones dropped and the
    /// keys' numbering are left as they are. Returns how many proposals were forgotten; when
    /// any were, the revision moves, so the history file is written without them.
    pub fn forget_phone(&mut self, phone: &str) -> usize {
        let before = self.waiting.len() + self.ended.len();
        self.waiting.retain(|c| c.phone != phone);
        self.ended.retain(|c| c.phone != phone);
        self.stray.retain(|a| a.phone != phone);
        let n = before - (self.waiting.len() + self.ended.len());
        if n > 0 {
            self.kept_revision = self.kept_revision.wrapping_add(1);
        }
        n
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
    /// whose key is already here; later proposals get keys of their own. An expiry's words from
    /// an older history, with the deadline in them as a raw timestamp, become
    /// [`EXPIRED_WORDS`]. Returns how many were put back. The history's revision does not
    /// move: nothing new to write.
    pub fn restore_ended(&mut self, ended: Vec<ConfirmationView>, dropped: u64) -> usize {
        let mut restored: VecDeque<ConfirmationView> = ended
            .into_iter()
            .filter(|c| {
                c.is_ended()
                    && !self.ended.iter().any(|e| e.key == c.key)
                    && !self.waiting.iter().any(|w| w.key == c.key)
            })
            .collect();
        for c in &mut restored {
            // Histories written before kept the deadline in the words, as a raw UTC timestamp
            // (`expired: no answer from the phone by <expires_at>`); the proposal keeps it as a
            // time, which the view shows in local time.
            let old = c
                .ended_text
                .as_deref()
                .and_then(|t| t.strip_prefix(OLD_EXPIRED_PREFIX))
                == Some(c.expires_at.as_str());
            if old {
                c.ended_text = Some(EXPIRED_WORDS.to_string());
            }
        }
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
}
