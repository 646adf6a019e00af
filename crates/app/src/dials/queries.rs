//! What the view's commands read: the held dials (`dials_query`, `dials_stats`), the whole
//! history page by page (`dials_history`, with a seek), the stats over it
//! (`dials_history_stats`), one whole dial (`dials_get`) and its spec conformance
//! (`dial_conformance`), from the live log or the imported capture ([`DialSource`]), and the
//! filter line compiled for them ([`App::compile_filter`]).
//!
//! Why apart: every read goes through here, so the "Clear view" floor and the choice of source
//! are applied in one place.

use std::sync::Arc;

use switchboard_dials::history::{seek, MAX_SKIP};
use switchboard_dials::{
    CompiledQuery, Dial, DialFilter, DialPage, DialQuery, FilterCheck, HistoryEntry, HistoryPage,
    HistoryQuery, MatchCount, OpStats,
};
use switchboard_domain::dial::conformance::{check_dial, DialConformance, ScopeBook};
use switchboard_wire::error::IpcError;
use switchboard_wire::sync::lock;

use super::floor::{cut_at_floor, FLOOR_COUNT_BUDGET};
use super::{DialHistoryPage, DialSource, DialsState, HistoryStats};
use crate::App;

/// How long `dials_history_stats` reads SQLite for (the view asks again every few seconds).
pub const HISTORY_STATS_BUDGET: std::time::Duration = std::time::Duration::from_millis(400);

/// Checks a filter line as the person types it: the canonical line, or the error with its
/// position and what was expected there.
pub fn parse_dial_filter(line: &str) -> FilterCheck {
    FilterCheck::of(line)
}

impl DialsState {
    /// A page of history from `source` (see [`App::dials_history`]).
    ///
    /// # Errors
    /// As [`App::dials_history`].
    ///
    /// A seek (`q.skip`, [`seek`]) walks the pages below the cursor in the core, without
    /// counting, for at most [`switchboard_dials::history::SEEK_BUDGET`], and answers the page after the rows
    /// it passed over (`skipped` says how many: exact, so the window places the page right even
    /// when the walk stopped early).
    pub async fn history(
        &self,
        query: CompiledQuery,
        q: &HistoryQuery,
        source: DialSource,
    ) -> Result<HistoryPage, IpcError> {
        let count = q.count.unwrap_or(true);
        let skip = u64::from(q.skip.unwrap_or(0).min(MAX_SKIP));
        let started = std::time::Instant::now();
        let (cursor, skipped) = seek(q.cursor.clone(), skip, |c, limit| {
            self.page_of(query.clone(), c, Some(limit), false, source)
        })
        .await?;
        if started.elapsed() > std::time::Duration::from_millis(500) {
            tracing::info!(
                filter = %query.line,
                skip,
                skipped,
                ms = started.elapsed().as_millis() as u64,
                "slow history seek"
            );
        }
        let mut page = self.page_of(query, cursor, q.limit, count, source).await?;
        page.skipped = skipped;
        Ok(page)
    }

    async fn page_of(
        &self,
        query: CompiledQuery,
        cursor: Option<String>,
        limit: Option<u32>,
        count: bool,
        source: DialSource,
    ) -> Result<HistoryPage, IpcError> {
        match source {
            DialSource::Live => {
                let floor = *lock(&self.floor);
                let Some(floor) = floor else {
                    return Ok(self
                        .log
                        .history(query, cursor.as_deref(), limit, count)
                        .await?);
                };
                let mut page = self
                    .log
                    .history(query.clone(), cursor.as_deref(), limit, false)
                    .await?;
                cut_at_floor(&mut page, floor.seq);
                if count {
                    let mut n = 0u64;
                    let walk = self.walk_above(&query, floor.seq, FLOOR_COUNT_BUDGET, |_| n += 1);
                    let (reached, newest) = walk.await?;
                    page.matched = Some(match reached {
                        None => MatchCount {
                            count: n,
                            exact: true,
                        },
                        // Out of time at `r`: the rows above the floor, counted down to `r`,
                        // scaled to the whole span above the floor.
                        Some(r) => {
                            let span = newest.saturating_sub(floor.seq).max(1);
                            let walked = newest.saturating_sub(r).max(1);
                            MatchCount {
                                count: ((n as f64) * (span as f64) / (walked as f64)).round()
                                    as u64,
                                exact: false,
                            }
                        }
                    });
                }
                page.oldest_ms = Some(floor.at_ms);
                Ok(page)
            }
            DialSource::Imported => self
                .imported_capture()?
                .log
                .history(&query, cursor.as_deref(), limit, count)
                .map_err(IpcError::invalid_input),
        }
    }

    pub(super) async fn page(
        &self,
        filter: DialFilter,
        source: DialSource,
    ) -> Result<DialPage, IpcError> {
        match source {
            DialSource::Live => Ok(self.log.query(filter).await?),
            DialSource::Imported => Ok(self.imported_capture()?.log.query(&filter)),
        }
    }

    /// Finds one dial by id. `start_ms`, when given, narrows the search to dials that started then.
    pub(super) async fn find(
        &self,
        id: &str,
        start_ms: Option<i64>,
        seq: Option<u64>,
        source: DialSource,
    ) -> Result<Option<Arc<Dial>>, IpcError> {
        let filter = DialFilter {
            from_ms: start_ms,
            to_ms: start_ms.map(|s| s.saturating_add(1)),
            ..DialFilter::default()
        };
        let page = self.page(filter, source).await?;
        if let Some(d) = page.dials.into_iter().find(|d| &*d.id == id) {
            return Ok(Some(d));
        }
        // Beyond the ring: the stored row at `seq`, when it is this dial.
        let (Some(seq), DialSource::Live) = (seq, source) else {
            return Ok(None);
        };
        let stored = self.log.stored_dial(seq).await?;
        Ok(stored
            .filter(|d| &*d.id == id && start_ms.map_or(true, |t| d.start_ms == t))
            .map(Arc::new))
    }

    /// The dials matching `filter` (default: all), newest first, from `source` (default live).
    ///
    /// # Errors
    /// `not_found` when `source` is `imported` and nothing is imported; `internal` when the log has
    /// shut down.
    pub async fn dials_query(
        &self,
        filter: Option<DialFilter>,
        source: Option<DialSource>,
    ) -> Result<DialPage, IpcError> {
        self.page(filter.unwrap_or_default(), source.unwrap_or_default())
            .await
    }

    /// Per-op stats (count, outcomes, error rate, p50/p95/p99 by nearest rank) over the dials
    /// matching `filter`, sorted by op.
    ///
    /// # Errors
    /// As [`DialsState::dials_query`].
    pub async fn dials_stats(
        &self,
        filter: Option<DialFilter>,
        source: Option<DialSource>,
    ) -> Result<Vec<OpStats>, IpcError> {
        let filter = filter.unwrap_or_default();
        match source.unwrap_or_default() {
            DialSource::Live => Ok(self.log.stats(filter).await?),
            DialSource::Imported => Ok(self.imported_capture()?.log.stats(&filter)),
        }
    }

    /// Per-op stats over the whole history (the ring and SQLite, or the imported capture)
    /// matching a compiled filter line; see [`HistoryStats`].
    ///
    /// # Errors
    /// As [`DialsState::dials_query`]; `io` when SQLite fails.
    pub async fn history_stats(
        &self,
        query: CompiledQuery,
        source: DialSource,
    ) -> Result<HistoryStats, IpcError> {
        match source {
            DialSource::Live => {
                let filter = query.line.clone();
                let floor = *lock(&self.floor);
                if let Some(floor) = floor {
                    // After "Clear view": the dials above the floor, newest first, as far as
                    // the budget goes.
                    let mut tally = switchboard_dials::StatsTally::default();
                    let each = |e: &HistoryEntry| {
                        if let HistoryEntry::Dial(d) = e {
                            tally.add_dial(d);
                        }
                    };
                    let (reached, _) = self
                        .walk_above(&query, floor.seq, HISTORY_STATS_BUDGET, each)
                        .await?;
                    return Ok(HistoryStats {
                        dials: tally.dials(),
                        ops: tally.finish(),
                        complete: reached.is_none(),
                        filter,
                    });
                }
                let (ops, dials, complete) =
                    self.log.history_stats(query, HISTORY_STATS_BUDGET).await?;
                Ok(HistoryStats {
                    ops,
                    dials,
                    complete,
                    filter,
                })
            }
            DialSource::Imported => Ok(HistoryStats::of_capture(
                &self.imported_capture()?.log,
                &query,
            )),
        }
    }

    /// One whole dial (request, response, error) by id, or `null` when it is no longer held
    /// or stored. `start_ms` (the row's start) makes the look-up in the ring cheap; `seq` (the
    /// row's place in the timeline, from a history page) finds a live dial the ring no longer
    /// holds in SQLite (by its rowid).
    ///
    /// # Errors
    /// As [`DialsState::dials_query`].
    pub async fn dials_get(
        &self,
        id: String,
        start_ms: Option<i64>,
        seq: Option<u64>,
        source: Option<DialSource>,
    ) -> Result<Option<Arc<Dial>>, IpcError> {
        self.find(&id, start_ms, seq, source.unwrap_or_default())
            .await
    }

    /// One dial's spec conformance (`phone-line.md`): its op's class and every finding (what is
    /// wrong, the JSON path, the spec's line and words), checked with the same
    /// [`ScopeBook::builtin`] as the row's mark; `null` when the dial is no longer held.
    ///
    /// # Errors
    /// As [`DialsState::dials_query`].
    pub async fn dial_conformance(
        &self,
        id: String,
        start_ms: Option<i64>,
        seq: Option<u64>,
        source: Option<DialSource>,
    ) -> Result<Option<DialConformance>, IpcError> {
        let d = self
            .find(&id, start_ms, seq, source.unwrap_or_default())
            .await?;
        Ok(d.map(|d| check_dial(&d, ScopeBook::builtin())))
    }
}

impl App {
    /// Parses and compiles a filter line for now, with `phone:` names resolved to the paired
    /// phones' device ids.
    ///
    /// # Errors
    /// `invalid_input` with the parser's message (column and what was expected).
    pub fn compile_filter(&self, line: &str) -> Result<CompiledQuery, IpcError> {
        let q =
            DialQuery::parse(line).map_err(|e| IpcError::invalid_input(format!("filter: {e}")))?;
        let now = self.config.clock.now_ms_i64();
        CompiledQuery::new(&q, now, &|name| self.phones.ids_named(name))
            .map_err(|e| IpcError::invalid_input(format!("filter: {e}")))
    }

    /// One page of the whole dial history (the live log's ring and SQLite, or the imported
    /// capture) matching the query's filter line, newest first; see [`DialHistoryPage`].
    ///
    /// # Errors
    /// `invalid_input` for a filter line that does not parse (the message names the column and
    /// what was expected; `parse_dial_filter` gives the position) or a cursor no page gave;
    /// `not_found` for an absent capture; `io` when SQLite fails; `internal` when the log has
    /// shut down.
    pub async fn dials_history(
        &self,
        query: HistoryQuery,
        source: Option<DialSource>,
    ) -> Result<DialHistoryPage, IpcError> {
        let compiled = self.compile_filter(&query.filter)?;
        let page = self
            .dials()?
            .history(compiled, &query, source.unwrap_or_default())
            .await?;
        Ok(DialHistoryPage::of(&page))
    }

    /// Per-op stats over the whole dial history matching the filter line `line` (empty: every
    /// dial); see [`HistoryStats`].
    ///
    /// # Errors
    /// `invalid_input` for a line that does not parse; as [`App::dials_history`].
    pub async fn dials_history_stats(
        &self,
        line: String,
        source: Option<DialSource>,
    ) -> Result<HistoryStats, IpcError> {
        let compiled = self.compile_filter(&line)?;
        self.dials()?
            .history_stats(compiled, source.unwrap_or_default())
            .await
    }
}
