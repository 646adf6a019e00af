//! The ring's share of a history page and of the stats over the whole history: the rows
//! SQLite does not answer for (transient dials, rows not yet written and indexed, connection
//! events held), and where SQLite takes over, so the two parts merge without a row twice.

use super::actor::{Actor, Entry};
use crate::filter::CompiledQuery;
use crate::history::{count_in_memory, merge_newest_first, page_in_memory, HistoryEntry, MemRow};

/// The ring's part of a history page, and what the SQLite part needs to know.
#[derive(Debug, Default)]
pub(crate) struct MemPart {
    /// Matching rows held in memory that SQLite does not answer for (transient dials, rows not
    /// yet written and indexed, connection events held), newest first, at most `limit`.
    pub entries: Vec<HistoryEntry>,
    /// Whether more in-memory rows match below the last one.
    pub more: bool,
    /// How many in-memory rows (of those) match in all, when asked.
    pub count: u64,
    /// The oldest time held in memory.
    pub oldest_ms: Option<i64>,
    /// The newest sequence number given.
    pub newest_seq: u64,
    /// Stored rows up to this rowid are answered by SQL (written and indexed); 0 for none.
    pub sql_upto: u64,
    /// Stored rows above `sql_upto` and below this are not held in memory: SQLite has them
    /// but they are not indexed yet, so they are read and matched in Rust. Equal to
    /// `sql_upto + 1` when there are none.
    pub gap_below: u64,
}

/// The in-memory part of the stats over the whole history: the dials SQLite does not answer
/// for (as [`MemPart`]) tallied, and where SQLite takes over.
#[derive(Debug, Default)]
pub(crate) struct MemStats {
    /// The matching dials held in memory that SQLite does not answer for.
    pub tally: crate::StatsTally,
    /// As [`MemPart::sql_upto`].
    pub sql_upto: u64,
    /// As [`MemPart::gap_below`].
    pub gap_below: u64,
}

impl Actor {
    /// Stored rows SQL answers for (up to `sql_upto`) and the first rowid above the
    /// not-yet-indexed gap SQLite holds outside the ring (see [`MemPart`]).
    fn sql_bounds(&self) -> (u64, u64) {
        let sql_upto = self.db.as_ref().map_or(0, |db| db.sql_upto());
        let ring_floor = self.ring.front().map_or(self.next_arrival, |e| e.arrival);
        let gap_below = if self.db.is_some() {
            ring_floor.max(sql_upto + 1)
        } else {
            sql_upto + 1
        };
        (sql_upto, gap_below)
    }

    /// The in-memory part of the stats over the whole history (see [`MemStats`]).
    pub(super) fn history_stats_part(&self, q: &CompiledQuery) -> MemStats {
        let (sql_upto, gap_below) = self.sql_bounds();
        let mut tally = crate::StatsTally::default();
        if q.dials {
            for e in &self.ring {
                let mine = !e.dial.retention.persists() || e.arrival > sql_upto;
                if mine && q.matches_dial(&e.dial) {
                    tally.add_dial(&e.dial);
                }
            }
        }
        MemStats {
            tally,
            sql_upto,
            gap_below,
        }
    }

    /// The in-memory part of a history page (see [`MemPart`]).
    pub(super) fn history_part(
        &self,
        q: &CompiledQuery,
        before: u64,
        limit: usize,
        count: bool,
    ) -> MemPart {
        let (sql_upto, gap_below) = self.sql_bounds();
        // Dials SQLite does not answer for: transient ones, and any above `sql_upto`.
        let mine = |e: &&Entry| !e.dial.retention.persists() || e.arrival > sql_upto;
        let dials = self
            .ring
            .iter()
            .rev()
            .filter(mine)
            .map(|e| MemRow::Dial(&e.dial));
        let (d, d_more) = page_in_memory(dials, q, before, limit);
        let conns = self.conns.iter().rev().map(MemRow::Connection);
        let (c, c_more) = page_in_memory(conns, q, before, limit);
        let mut entries = merge_newest_first(d, c);
        let more = d_more || c_more || entries.len() > limit;
        entries.truncate(limit);
        let count = if count {
            count_in_memory(
                self.ring.iter().filter(mine).map(|e| MemRow::Dial(&e.dial)),
                q,
            ) + if self.db.is_none() {
                count_in_memory(self.conns.iter().map(MemRow::Connection), q)
            } else {
                // Held connection events are written at once: SQLite counts them.
                0
            }
        } else {
            0
        };
        let oldest_ms = self
            .ring
            .iter()
            .map(|e| e.dial.start_ms)
            .chain(self.conns.iter().map(|c| c.at_ms))
            .min();
        MemPart {
            entries,
            more,
            count,
            oldest_ms,
            newest_seq: self.next_arrival.saturating_sub(1),
            sql_upto,
            gap_below,
        }
    }
}
