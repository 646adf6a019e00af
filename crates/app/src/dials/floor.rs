//! "Clear view": the live view's floor ([`ViewFloor`]), below which its history pages, counts
//! and stats hold nothing until the next start, and `dials_clear`, which sets it (`memory`) or
//! deletes the stored history (`all`).
//!
//! Why apart: clearing the view deletes nothing (a support bundle still reads the ring, the
//! stored history comes back at the next start); the floor is how reads pretend otherwise, and
//! its walk over the rows above it is shared by counts and stats.

use switchboard_dials::{ClearScope, CompiledQuery, DialQuery, HistoryEntry, HistoryPage};
use switchboard_wire::error::IpcError;
use switchboard_wire::sync::lock;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::DialsState;

/// The live view after "Clear view": its history pages, counts and stats hold only the rows
/// newer than the ones it cleared, until the app restarts or the history is deleted. Kept in
/// memory only, so the stored history comes back at the next start; nothing is deleted, and the
/// ring a support bundle reads keeps its dials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ViewFloor {
    /// The newest sequence number when the view was cleared: rows at or below it are hidden.
    pub(super) seq: u64,
    /// When the view was cleared (epoch ms, the desktop's clock): where its history now begins.
    pub(super) at_ms: i64,
}

/// Most pages one walk over the rows above a [`ViewFloor`] reads (2 000 rows each).
const FLOOR_WALK_PAGES: usize = 1000;

/// How long a first page after "Clear view" counts the rows above the floor before it
/// estimates the rest (as the history's own counts do past their budget).
pub(super) const FLOOR_COUNT_BUDGET: std::time::Duration = std::time::Duration::from_millis(100);

/// What `dials_clear` removes: `"memory"` empties the view (the history file keeps its rows and
/// they come back at the next start), `"all"` also deletes the stored history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum DialClearScope {
    /// Only the dials held in memory.
    Memory,
    /// Memory and the stored dial history, `permanent` dials included.
    All,
}

/// Drops a live page's rows at or below sequence number `floor` ([`ViewFloor`]) and ends the
/// history there: no `next` once the page reached the floor.
pub(super) fn cut_at_floor(page: &mut HistoryPage, floor: u64) {
    let held = page.entries.len();
    page.entries.retain(|e| e.seq() > floor);
    let next_at = page
        .next
        .as_deref()
        .and_then(|c| switchboard_dials::history::parse_cursor(c).ok());
    // A cursor `s<n>` reads the rows below `n`: at `floor + 1` or lower, none is above it.
    if page.entries.len() < held || next_at.is_some_and(|n| n <= floor.saturating_add(1)) {
        page.next = None;
    }
}

impl DialsState {
    /// Reads the live rows matching `query` above sequence number `floor`, newest first, page by
    /// page, calling `each` on each, for at most `budget` (and [`FLOOR_WALK_PAGES`] pages).
    /// Returns `None` when every one was read, else the sequence number it stopped above; and
    /// the newest sequence number when it started.
    ///
    /// # Errors
    /// As [`DialLogHandle::history`].
    pub(super) async fn walk_above(
        &self,
        query: &CompiledQuery,
        floor: u64,
        budget: std::time::Duration,
        mut each: impl FnMut(&HistoryEntry),
    ) -> Result<(Option<u64>, u64), IpcError> {
        let started = std::time::Instant::now();
        let mut cursor: Option<String> = None;
        let mut newest = 0;
        for _ in 0..FLOOR_WALK_PAGES {
            let mut p = self
                .log
                .history(query.clone(), cursor.as_deref(), Some(2000), false)
                .await?;
            if cursor.is_none() {
                newest = p.newest_seq;
            }
            cut_at_floor(&mut p, floor);
            p.entries.iter().for_each(&mut each);
            let Some(next) = p.next else {
                return Ok((None, newest));
            };
            let at = switchboard_dials::history::parse_cursor(&next).unwrap_or(floor);
            cursor = Some(next);
            if started.elapsed() > budget {
                return Ok((Some(at), newest));
            }
        }
        let at = cursor
            .as_deref()
            .and_then(|c| switchboard_dials::history::parse_cursor(c).ok())
            .unwrap_or(floor);
        Ok((Some(at), newest))
    }

    /// Clears the live view (`memory`: from now on its history pages, counts and stats hold
    /// only newer rows, until the next start; nothing is deleted, see `ViewFloor`) or deletes
    /// the whole history (`all`, which also ends an earlier `memory` clear); returns the stored
    /// rows deleted. An imported capture is never cleared (it is read only). Open views keep
    /// their rows: re-subscribe to see the cleared log.
    ///
    /// # Errors
    /// `io` when the history file cannot be changed; `internal` when the log has shut down.
    pub(crate) async fn dials_clear(&self, scope: DialClearScope) -> Result<u64, IpcError> {
        match scope {
            DialClearScope::Memory => {
                let all = CompiledQuery::new(&DialQuery::default(), 0, &|_: &str| Vec::new())
                    .map_err(|e| IpcError::internal(format!("the empty filter line: {e}")))?;
                let newest = self
                    .log
                    .history(all, None, Some(1), false)
                    .await?
                    .newest_seq;
                *lock(&self.floor) = Some(ViewFloor {
                    seq: newest,
                    at_ms: self.clock.now_ms_i64(),
                });
                Ok(0)
            }
            DialClearScope::All => {
                let deleted = self.log.clear(ClearScope::All).await?;
                *lock(&self.floor) = None;
                Ok(deleted)
            }
        }
    }
}
