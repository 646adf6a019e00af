//! What a subscribed view receives: one snapshot, then batches ([`DialBatchMsg`]), and how often
//! and how large the batches of a filter line's view are ([`WindowPace`], [`WINDOW_BATCH_ROWS`]).
//!
//! Why apart: the message shape and its bounds are what keeps the page up with the log at
//! 1 000 dials a second; the forwarder only carries them.

use serde::Serialize;
use ts_rs::TS;

use switchboard_dials::{DialBatch, DialPage};

use super::DialRow;

/// One message on a dials channel, tagged by `kind`:
///
/// - `{ kind: "snapshot", id, rows, total }`: first message of a subscription: the matching
///   dials held when it started, **oldest first** (`total` counts all matches, `rows` may be
///   fewer when the filter has a `limit`).
/// - `{ kind: "batch", rows, merged, skipped, left_out }`: new matching dials, oldest first;
///   `merged` of them were held back from an earlier batch because the forwarder fell behind,
///   `skipped` matching dials were dropped for this view (re-query to see them), `left_out` the
///   sequence numbers of older matching dials of this batch not sent (a view's bound on rows
///   per batch, [`WINDOW_BATCH_ROWS`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[ts(export)]
pub enum DialBatchMsg {
    /// The subscription's starting rows.
    Snapshot {
        /// The subscription id (for `dials_unsubscribe`).
        #[ts(type = "number")]
        id: u64,
        /// Matching dials, oldest first.
        rows: Vec<DialRow>,
        /// All matching dials (before `limit`).
        #[ts(type = "number")]
        total: u64,
    },
    /// New dials since the last message.
    Batch {
        /// New matching dials, oldest first.
        rows: Vec<DialRow>,
        /// How many of `rows` were held back from an earlier batch.
        #[ts(type = "number")]
        merged: u64,
        /// Matching dials dropped for this view since the last batch.
        #[ts(type = "number")]
        skipped: u64,
        /// Sequence numbers ([`DialRow::seq`]) of this batch's matching dials left out to keep
        /// it within the view's bound (older than `rows`, oldest first; read them from the
        /// history when wanted). A view that read the history up to some `seq` counts only
        /// the ones above it.
        #[ts(type = "number[]")]
        left_out: Vec<u64>,
    },
}

impl DialBatchMsg {
    /// The snapshot message of subscription `id`: the page's dials reversed to oldest first.
    pub fn snapshot(id: u64, page: &DialPage) -> Self {
        Self::Snapshot {
            id,
            rows: page
                .dials
                .iter()
                .rev()
                .map(|d| DialRow::from(&**d))
                .collect(),
            total: page.total,
        }
    }

    /// A batch message from a core [`DialBatch`].
    pub fn batch(b: &DialBatch) -> Self {
        Self::batch_newest(b, None)
    }

    /// A batch message from a core [`DialBatch`] with at most `max_rows` of its newest dials
    /// (`None`: all); the older ones are named by their sequence number in `left_out` (the
    /// page reads them from the history when it wants them), and `merged` counts only rows
    /// that are sent.
    pub fn batch_newest(b: &DialBatch, max_rows: Option<usize>) -> Self {
        let keep = max_rows.map_or(b.dials.len(), |m| m.min(b.dials.len()));
        let cut = b.dials.len() - keep;
        Self::Batch {
            rows: b.dials[cut..].iter().map(|d| DialRow::from(&**d)).collect(),
            merged: b.merged.min(keep as u64),
            skipped: b.skipped,
            left_out: b.dials[..cut].iter().map(|d| d.seq.0).collect(),
        }
    }
}

/// Shortest time between two batches of a filter line's view (`dials_subscribe` with `line`,
/// the Live dials window) under load ([`WindowPace::WINDOW`]): 5 a second. A Tauri channel
/// hands a message over 8 KB to the page through a fetch of its own (tauri `ipc::channel`), the
/// cost of which is per message: at 1 000 dials a second, 30 batches of ~33 rows kept the page
/// ~5 times behind (journey 8: the header counted ~200 dials/s), fewer and larger batches carry
/// the same rows at a fraction of the cost. The table shows only each batch's newest rows
/// then, whose wait does not depend on the spacing.
pub const WINDOW_BATCH_INTERVAL: std::time::Duration = std::time::Duration::from_millis(200);

/// Shortest time between two batches of a filter line's view while its stream is light
/// ([`WindowPace::WINDOW`]): every dial of a light stream is shown, and this is its longest
/// wait for a batch (at 100 dials/s, 200 ms spacing made the time from the phone to the pixel
/// 221-234 ms at p99; `docs/performance.md`, "Dial to pixel").
pub const WINDOW_QUICK_INTERVAL: std::time::Duration = std::time::Duration::from_millis(25);

/// Dials a second from which a filter line's view is under load ([`WindowPace::WINDOW`]): at
/// 500 a second a quick batch holds ~12 rows (~4 KB, below the channel's 8 KB) and the page
/// gets 40 a second; above it the rows and messages a second would grow to the cost that kept
/// the page behind.
pub const WINDOW_BUSY_ROWS_PER_S: u64 = 500;

/// Most rows in one batch of a filter line's view: the newest ones, the older ones of the batch
/// named by sequence number in `left_out` ([`DialBatchMsg::batch_newest`]). The table shows at most about 80 rows
/// (a 2 160 px high window) and follows the newest while at the top; scrolled down, it keeps the
/// rows in view and needs none of the new ones. At 1 000 dials a second a batch holds ~200 rows:
/// the rest were parsed and kept by the page only to be dropped from its cache, ~1.2 MB of
/// script garbage a second. Rows that are wanted later come from the history, as after any
/// `skipped`; their sequence numbers let a view that just read the history count only the
/// ones it has not (a count alone would count some twice).
pub const WINDOW_BATCH_ROWS: usize = 120;

/// How often the log hands a filter line's view its new dials ([`WindowPace::WINDOW`]'s
/// `handover`): the forwarder sees a heavy stream stop within a few of these. Handed over every
/// [`WINDOW_QUICK_INTERVAL`], the end of a 1 000 dials/s stream reached the page 150-190 ms
/// late (the last rows waited for the busy pace); a handover costs the forwarder one wake-up,
/// at most 200 a second while dials flow and none while none do.
pub const WINDOW_HANDOVER_INTERVAL: std::time::Duration = std::time::Duration::from_millis(5);

/// How long a heavy stream must bring nothing for the forwarder to send what it holds at once
/// ([`WindowPace::WINDOW`]'s `quiet`): two handovers missed. At 1 000 dials a second the log
/// hands dials over every [`WINDOW_HANDOVER_INTERVAL`] while they flow, so a longer gap means
/// the stream stopped or paused, and its last rows (the ones the table then shows) should not
/// wait for the busy pace.
pub const WINDOW_QUIET_INTERVAL: std::time::Duration = std::time::Duration::from_millis(10);

/// How the batches of a filter line's view are spaced: at once when the view has had no batch
/// for [`WindowPace::quick`], then at most one a `quick` while the stream is light, and one a
/// [`WindowPace::busy`] once the view's dials come at [`WindowPace::busy_rows_per_s`] or more
/// (counted over the last [`PACE_RATE_WINDOW`]); under load, what is held goes at once when
/// the stream has been quiet for [`WindowPace::quiet`] (still at most one batch a `quick`).
///
/// Why two paces: while the table follows the newest row, a light stream shows every dial, so
/// the spacing is the time a dial waits for its batch; a heavy stream shows only each batch's
/// newest rows (the older ones land below the view at once), whose wait does not depend on the
/// spacing, while each message costs the page the same whatever it holds (a channel message
/// over 8 KB is a fetch of its own, the rows are parsed, the rows in view painted again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowPace {
    /// Shortest time between two batches while the stream is light.
    pub quick: std::time::Duration,
    /// Shortest time between two batches under load.
    pub busy: std::time::Duration,
    /// Dials a second (the view's matching dials) from which the view is under load.
    pub busy_rows_per_s: u64,
    /// How often the log hands the view's new dials to the forwarder
    /// ([`SubscribeOptions::interval`](switchboard_dials::SubscribeOptions)).
    pub handover: std::time::Duration,
    /// No handover for this long under load: the stream stopped, send what is held.
    pub quiet: std::time::Duration,
}

/// Over how long the rate of a view's dials is counted ([`WindowPace`]).
pub const PACE_RATE_WINDOW: std::time::Duration = std::time::Duration::from_millis(500);

impl WindowPace {
    /// The pace of the Live dials window.
    pub const WINDOW: Self = Self {
        quick: WINDOW_QUICK_INTERVAL,
        busy: WINDOW_BATCH_INTERVAL,
        busy_rows_per_s: WINDOW_BUSY_ROWS_PER_S,
        handover: WINDOW_HANDOVER_INTERVAL,
        quiet: WINDOW_QUIET_INTERVAL,
    };

    /// The shortest time between two batches when the view's dials come at `rows_per_s`.
    pub fn spacing(&self, rows_per_s: u64) -> std::time::Duration {
        if rows_per_s >= self.busy_rows_per_s {
            self.busy.max(self.quick)
        } else {
            self.quick
        }
    }
}

/// The rate of a view's dials over the last [`PACE_RATE_WINDOW`]: dials counted as they reach
/// the forwarder.
#[derive(Debug, Default)]
pub struct RateMeter {
    seen: std::collections::VecDeque<(tokio::time::Instant, u64)>,
    sum: u64,
}

impl RateMeter {
    /// Counts `n` dials seen at `now`.
    pub fn add(&mut self, now: tokio::time::Instant, n: u64) {
        self.seen.push_back((now, n));
        self.sum += n;
        self.expire(now);
    }

    /// Dials a second over the last [`PACE_RATE_WINDOW`] before `now`.
    pub fn per_s(&mut self, now: tokio::time::Instant) -> u64 {
        self.expire(now);
        self.sum * 1000 / PACE_RATE_WINDOW.as_millis().max(1) as u64
    }

    fn expire(&mut self, now: tokio::time::Instant) {
        while let Some(&(t, n)) = self.seen.front() {
            if now.duration_since(t) < PACE_RATE_WINDOW {
                break;
            }
            self.seen.pop_front();
            self.sum -= n;
        }
    }
}
