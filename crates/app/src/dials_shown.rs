//! The Live dials view as shown: every read of the view answers from the open support bundle's
//! dials while one is open ([`App::open_bundle`]), else from the live log or the imported
//! capture (`source`). Decided here, once, so the shell's commands are one call each and keep
//! no branch of their own; the changes (export, import, clear) go through [`crate::Change`].

use std::sync::Arc;

use switchboard_dials::history::{seek, MAX_SKIP};
use switchboard_dials::{Dial, DialFilter, DialPage, HistoryQuery, OpStats};
use switchboard_wire::error::IpcError;

use crate::dials::{
    follow_in, DialBanner, DialBatchMsg, DialHistoryPage, DialSource, DialsStatus, FollowBy,
    HistoryStats, ImportSummary,
};
use crate::App;

impl App {
    /// The dials matching `filter` (default: all), newest first.
    ///
    /// # Errors
    /// `not_found` for an absent capture; `internal` when the log has shut down.
    pub async fn dials_query_shown(
        &self,
        filter: Option<DialFilter>,
        source: Option<DialSource>,
    ) -> Result<DialPage, IpcError> {
        if let Some(b) = self.viewing() {
            return Ok(b.dials.query(&filter.unwrap_or_default()));
        }
        self.dials()?.dials_query(filter, source).await
    }

    /// Per-op stats over the dials matching `filter`, sorted by op.
    ///
    /// # Errors
    /// As [`App::dials_query_shown`].
    pub async fn dials_stats_shown(
        &self,
        filter: Option<DialFilter>,
        source: Option<DialSource>,
    ) -> Result<Vec<OpStats>, IpcError> {
        if let Some(b) = self.viewing() {
            return Ok(b.dials.stats(&filter.unwrap_or_default()));
        }
        self.dials()?.dials_stats(filter, source).await
    }

    /// Per-op stats over the whole dial history matching the filter line `line`.
    ///
    /// # Errors
    /// `invalid_input` for a line that does not parse; as [`App::dials_query_shown`].
    pub async fn dials_history_stats_shown(
        &self,
        line: String,
        source: Option<DialSource>,
    ) -> Result<HistoryStats, IpcError> {
        if let Some(b) = self.viewing() {
            let compiled = self.compile_filter(&line)?;
            return Ok(HistoryStats::of_capture(&b.dials, &compiled));
        }
        self.dials_history_stats(line, source).await
    }

    /// Starts a view of `filter` streamed to `sink` (a snapshot, then batches); returns the
    /// subscription id. An open bundle does not change: its snapshot only, id 0.
    ///
    /// # Errors
    /// As [`App::dials_query_shown`]; `invalid_input` for a line that does not parse;
    /// `internal` when `sink` refuses the bundle's snapshot.
    pub async fn dials_subscribe_shown<E: std::fmt::Display + 'static>(
        &self,
        filter: Option<DialFilter>,
        source: Option<DialSource>,
        line: Option<String>,
        mut sink: impl FnMut(DialBatchMsg) -> Result<(), E> + Send + 'static,
    ) -> Result<u64, IpcError> {
        if let Some(b) = self.viewing() {
            let page = b.dials.query(&filter.unwrap_or_default());
            sink(DialBatchMsg::snapshot(0, &page))
                .map_err(|e| IpcError::internal(format!("sending the snapshot: {e}")))?;
            return Ok(0);
        }
        let line = match line {
            Some(l) => Some(self.compile_filter(&l)?),
            None => None,
        };
        self.dials()?
            .dials_subscribe_with(filter, line, source, sink)
            .await
    }

    /// One page of the whole history (dials and connection events), newest first, matching
    /// the query's filter line, below its cursor.
    ///
    /// # Errors
    /// `invalid_input` for a filter line that does not parse or a bad cursor; as
    /// [`App::dials_query_shown`].
    pub async fn dials_history_shown(
        &self,
        query: HistoryQuery,
        source: Option<DialSource>,
    ) -> Result<DialHistoryPage, IpcError> {
        if let Some(b) = self.viewing() {
            let compiled = self.compile_filter(&query.filter)?;
            let skip = u64::from(query.skip.unwrap_or(0).min(MAX_SKIP));
            let (cursor, skipped) = seek(query.cursor.clone(), skip, |c, limit| {
                std::future::ready(b.dials.history(&compiled, c.as_deref(), Some(limit), false))
            })
            .await
            .map_err(IpcError::invalid_input)?;
            let mut page = b
                .dials
                .history(
                    &compiled,
                    cursor.as_deref(),
                    query.limit,
                    query.count.unwrap_or(true),
                )
                .map_err(IpcError::invalid_input)?;
            page.skipped = skipped;
            return Ok(DialHistoryPage::of(&page));
        }
        self.dials_history(query, source).await
    }

    /// Every dial of the same call or ifp/1 session as dial `id`, oldest first.
    ///
    /// # Errors
    /// `not_found` when the dial is gone; as [`App::dials_history_shown`].
    pub async fn dials_follow_shown(
        &self,
        id: &str,
        start_ms: Option<i64>,
        by: FollowBy,
        source: Option<DialSource>,
    ) -> Result<DialHistoryPage, IpcError> {
        if let Some(b) = self.viewing() {
            let Some(d) = b.dial(id, start_ms) else {
                return Err(IpcError::not_found(format!(
                    "dial {id} is not in the opened bundle"
                )));
            };
            return follow_in(&b.dials, &d, by);
        }
        self.dials_follow(id, start_ms, by, source).await
    }

    /// One whole dial by id, or `None` when it is no longer held or stored (`seq`: the row's
    /// place in the timeline, which finds a dial the ring no longer holds).
    ///
    /// # Errors
    /// As [`App::dials_query_shown`].
    pub async fn dials_get_shown(
        &self,
        id: String,
        start_ms: Option<i64>,
        seq: Option<u64>,
        source: Option<DialSource>,
    ) -> Result<Option<Arc<Dial>>, IpcError> {
        if let Some(b) = self.viewing() {
            return Ok(b.dial(&id, start_ms));
        }
        self.dials()?.dials_get(id, start_ms, seq, source).await
    }

    /// One dial's spec conformance as JSON, or `None` when the dial is no longer held or
    /// stored; in an open bundle, as checked when it was saved (before redaction).
    ///
    /// # Errors
    /// As [`App::dials_query_shown`].
    pub async fn dial_conformance_shown(
        &self,
        id: String,
        start_ms: Option<i64>,
        seq: Option<u64>,
        source: Option<DialSource>,
    ) -> Result<Option<serde_json::Value>, IpcError> {
        if let Some(b) = self.viewing() {
            return Ok(b
                .dial(&id, start_ms)
                .and_then(|d| b.conformance.get(&*d.id).cloned()));
        }
        let c = self
            .dials()?
            .dial_conformance(id, start_ms, seq, source)
            .await?;
        c.map(|c| serde_json::to_value(&c).map_err(|e| IpcError::internal(format!("answer: {e}"))))
            .transpose()
    }

    /// The live log's counters, storage trouble and the imported capture; with a bundle open,
    /// the bundle's dials as the capture and none of the live log's trouble.
    ///
    /// # Errors
    /// `internal` when the log has shut down.
    pub async fn dials_status_shown(&self) -> Result<DialsStatus, IpcError> {
        let live = self.dials()?.dials_status().await?;
        match self.viewing() {
            Some(b) => Ok(DialsStatus {
                storage_error: None,
                recovery: None,
                view_cleared_ms: None,
                imported: Some(ImportSummary {
                    path: b.path.clone(),
                    dials: b.dials.len() as u64,
                }),
                ..live
            }),
            None => Ok(live),
        }
    }

    /// The banner of dial `dial_id` when it failed on permissions, judged as the hub judged it.
    ///
    /// # Errors
    /// As [`App::dials_query_shown`].
    pub async fn dial_banner_shown(
        &self,
        dial_id: &str,
        start_ms: Option<i64>,
        seq: Option<u64>,
        source: Option<DialSource>,
    ) -> Result<Option<DialBanner>, IpcError> {
        if let Some(b) = self.viewing() {
            return Ok(b.dial_banner(dial_id, start_ms));
        }
        self.dial_banner(dial_id, start_ms, seq, source).await
    }
}
