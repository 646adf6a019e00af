//! Fan-out of new dials to live views: the options and the [`Subscription`] a caller gets, the
//! [`DialBatch`]es it receives, and the per-subscriber waiting list the log's task keeps.
//!
//! A subscriber gets a batch at most once per interval; one whose bounded queue is full never
//! blocks the log: its dials wait and merge into its next batch (counted in `merged`), and when
//! even the waiting list overflows the oldest are dropped and counted in `skipped`.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::sync::mpsc;
use tokio::time::Instant;
use ts_rs::TS;

use crate::query::{DialFilter, DialPage};
use crate::record::Dial;

/// Options of one subscription; `None` fields take the log's defaults.
#[derive(Debug, Clone, Default)]
pub struct SubscribeOptions {
    /// Shortest time between two batches.
    pub interval: Option<Duration>,
    /// Bound of the batch queue (at least 1).
    pub queue: Option<usize>,
    /// Bound of the dials waiting while the queue is full (at least 1).
    pub max_pending: Option<usize>,
}

/// New dials for one subscriber: `{ dials, merged, skipped }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct DialBatch {
    /// New matching dials in arrival order (oldest first).
    pub dials: Vec<Arc<Dial>>,
    /// How many of `dials` were held back from an earlier batch because the subscriber's queue
    /// was full (they merged into this one).
    #[ts(type = "number")]
    pub merged: u64,
    /// Matching dials dropped for this subscriber since its last batch because too many were
    /// waiting; re-query to see them.
    #[ts(type = "number")]
    pub skipped: u64,
}

/// A live view: the snapshot at subscription time, then the batches.
///
/// Forward `batches` to the window (e.g. a Tauri `ipc::Channel`) in a loop; dropping the
/// receiver ends the subscription.
#[derive(Debug)]
pub struct Subscription {
    /// Dials matching the filter when the subscription started (the filter's `limit` and
    /// `offset` apply), newest first.
    pub snapshot: DialPage,
    /// Batches of dials held after the snapshot, matching the filter.
    pub batches: mpsc::Receiver<DialBatch>,
}

/// One subscriber as the log's task keeps it: its filter and channel, when it last got a
/// batch, and the dials waiting for it.
pub(super) struct Sub {
    pub(super) filter: DialFilter,
    /// A filter line, tested as well when set (`DialLogHandle::subscribe_line`).
    pub(super) line: Option<Box<crate::filter::CompiledQuery>>,
    pub(super) tx: mpsc::Sender<DialBatch>,
    pub(super) interval: Duration,
    pub(super) last_sent: Option<Instant>,
    pub(super) pending: VecDeque<Arc<Dial>>,
    /// How many of the oldest `pending` dials already missed a send because the queue was full.
    pub(super) held_back: usize,
    pub(super) skipped: u64,
    pub(super) max_pending: usize,
}

impl Sub {
    /// When the waiting dials are due, as seen at `now`: a subscriber that never got a batch is
    /// due at once (`now` itself, so the check in [`Sub::try_flush`] passes on the real clock).
    pub(super) fn due_at(&self, now: Instant) -> Option<Instant> {
        if self.pending.is_empty() {
            return None;
        }
        Some(match self.last_sent {
            Some(t) => t + self.interval,
            None => now,
        })
    }

    pub(super) fn push(&mut self, d: &Arc<Dial>) {
        if self.pending.len() >= self.max_pending {
            self.pending.pop_front();
            self.held_back = self.held_back.saturating_sub(1);
            self.skipped += 1;
        }
        self.pending.push_back(Arc::clone(d));
    }

    /// Tries to send the waiting dials; `false` when the receiver is gone.
    pub(super) fn try_flush(&mut self, now: Instant) -> bool {
        if !self.due_at(now).is_some_and(|t| t <= now) {
            return true;
        }
        let batch = DialBatch {
            dials: self.pending.drain(..).collect(),
            merged: self.held_back as u64,
            skipped: self.skipped,
        };
        self.last_sent = Some(now);
        match self.tx.try_send(batch) {
            Ok(()) => {
                self.held_back = 0;
                self.skipped = 0;
                true
            }
            Err(mpsc::error::TrySendError::Full(batch)) => {
                self.pending = batch.dials.into();
                self.held_back = self.pending.len();
                true
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }
}
