//! The log's handle: [`DialLog::spawn`] and the cloneable [`DialLogHandle`] every caller talks
//! through. Its settings and answers are in [`super::config`].
//!
//! Ingest runs here, in the caller's task, under the log's lock; every other call is a message
//! to the log's task ([`super::task`]).

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::config::{ClearScope, DialLogConfig, DialLogStatus, IngestVerdict, PruneReport};
use super::subscribers::{SubscribeOptions, Subscription};
use super::task::{self, Command, Shared};
use crate::filter::CompiledQuery;
use crate::history::{
    cursor_of, merge_newest_first, parse_cursor, ConnectionEvent, HistoryPage, MatchCount,
    DEFAULT_PAGE, MAX_PAGE,
};
use crate::query::{DialFilter, DialPage, OpStats};
use crate::record::Dial;
use crate::DialLogError;

/// The dial log. Start one with [`DialLog::spawn`]; talk to it through the returned handle.
pub struct DialLog;

impl DialLog {
    /// Opens the SQLite file (when `config.data_dir` is set), prunes it (when automatic pruning
    /// is on), and spawns the actor task on the current tokio runtime, the writer on its own
    /// thread and a loader thread that reads the newest `capacity` dials into the ring and every
    /// stored dial's dedup key. It returns before the loader is done: [`DialLogHandle::history`]
    /// answers at once (from SQLite), while ingest and the calls that read the ring
    /// ([`DialLogHandle::query`], [`DialLogHandle::stats`], [`DialLogHandle::subscribe`],
    /// [`DialLogHandle::prune`], [`DialLogHandle::clear`], [`DialLogHandle::export_jsonl`],
    /// [`DialLogHandle::status`]) wait
    /// for it (about a second for 100 000 dials and 1 000 000 keys; [`DialLogHandle::loaded`]).
    ///
    /// Must be called from inside a tokio runtime.
    ///
    /// # Errors
    /// [`DialLogError::Storage`] when the folder or file cannot be created, opened or read, or
    /// holds rows this version cannot read; [`DialLogError::Config`] for a zero capacity or queue.
    pub fn spawn(config: DialLogConfig) -> Result<DialLogHandle, DialLogError> {
        let (tx, shared) = task::start(config)?;
        Ok(DialLogHandle { tx, shared })
    }
}

/// Cloneable handle to a running [`DialLog`]. Ingest runs in the caller's task under the log's
/// lock; every other call is a message to the log's task. Calls fail with
/// [`DialLogError::Closed`] once the log has shut down.
#[derive(Clone)]
pub struct DialLogHandle {
    tx: mpsc::Sender<Command>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for DialLogHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DialLogHandle").finish_non_exhaustive()
    }
}

impl DialLogHandle {
    async fn ask<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<T>) -> Command,
    ) -> Result<T, DialLogError> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(make(reply))
            .await
            .map_err(|_| DialLogError::Closed)?;
        rx.await.map_err(|_| DialLogError::Closed)
    }

    /// Ingests one dial (see the module docs for what happens). The dial's `slow` flag is
    /// recomputed.
    ///
    /// # Errors
    /// [`DialLogError::Closed`] when the log has shut down.
    pub async fn ingest(&self, dial: Dial) -> Result<IngestVerdict, DialLogError> {
        let mut v = self.ingest_batch(vec![dial]).await?;
        v.pop().ok_or(DialLogError::Closed)
    }

    /// Ingests several dials in order with one message; one verdict per dial, same order.
    ///
    /// Back-pressure: while the persisting dials held and not yet written to SQLite pass
    /// [`DialLogConfig::max_unwritten_bytes`](super::DialLogConfig::max_unwritten_bytes), this
    /// waits (before holding any of `dials`) until the writer has made room. Nothing is dropped.
    ///
    /// # Errors
    /// [`DialLogError::Closed`] when the log has shut down.
    pub async fn ingest_batch(&self, dials: Vec<Dial>) -> Result<Vec<IngestVerdict>, DialLogError> {
        self.shared.ready().await?;
        self.shared.room_for_ingest().await;
        let (verdicts, wake) = {
            let mut guard = self.shared.lock();
            let actor = guard.as_mut().ok_or(DialLogError::Closed)?;
            // One clock reading for the batch: its dials arrived together.
            let now_ms = actor.cfg.clock.now_ms_i64();
            let verdicts = dials.into_iter().map(|d| actor.ingest(d, now_ms)).collect();
            actor.flush_due(Instant::now());
            self.shared
                .mark
                .store(actor.stored_mark, std::sync::atomic::Ordering::Release);
            (verdicts, actor.deadline_moved_earlier())
        };
        if wake {
            self.shared.wake.notify_one();
        }
        Ok(verdicts)
    }

    /// The durability mark of everything held so far: the arrival number of the newest dial
    /// with a stored retention label the log has held (0 when none, or when the log runs in
    /// memory only). Every dial held before this call is durable (its SQLite transaction
    /// committed, or it is `transient` and never stored) once [`DialLogHandle::is_durable`]
    /// says so for the mark, or [`DialLogHandle::durable_watch`] reaches it.
    pub fn durable_mark(&self) -> u64 {
        self.shared.mark.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Whether every dial held when `mark` was taken ([`DialLogHandle::durable_mark`]) is
    /// durable. Always true for a log in memory only (nothing is ever stored, so "held" is
    /// as durable as it gets), and for mark 0.
    pub fn is_durable(&self, mark: u64) -> bool {
        mark <= *self.shared.committed.borrow()
    }

    /// The durable watermark, as a [`tokio::sync::watch`] receiver: the highest mark whose
    /// dials are all committed to SQLite. It moves after each committed transaction (the
    /// writer commits in groups of up to [`DialLogConfig::db_batch_size`], at least every
    /// [`DialLogConfig::db_flush_interval`]), never moves for a log in memory only, and stops
    /// moving after a failed write (logged, and reported by [`DialLogHandle::flush`]): dials
    /// after a failure are never reported durable by this run of the log.
    pub fn durable_watch(&self) -> tokio::sync::watch::Receiver<u64> {
        self.shared.committed.subscribe()
    }

    /// The page of held dials matching `filter`, newest first.
    ///
    /// # Errors
    /// [`DialLogError::Closed`] when the log has shut down.
    pub async fn query(&self, filter: DialFilter) -> Result<DialPage, DialLogError> {
        self.shared.ready().await?;
        self.ask(|reply| Command::Query { filter, reply }).await
    }

    /// Per-op stats over the held dials matching `filter` (its `limit`/`offset` ignored).
    ///
    /// # Errors
    /// [`DialLogError::Closed`] when the log has shut down.
    pub async fn stats(&self, filter: DialFilter) -> Result<Vec<OpStats>, DialLogError> {
        self.shared.ready().await?;
        self.ask(|reply| Command::Stats { filter, reply }).await
    }

    /// Starts a live view of `filter`: a snapshot, then batches of new matching dials.
    ///
    /// # Errors
    /// [`DialLogError::Closed`] when the log has shut down.
    pub async fn subscribe(
        &self,
        filter: DialFilter,
        options: SubscribeOptions,
    ) -> Result<Subscription, DialLogError> {
        self.shared.ready().await?;
        self.ask(|reply| Command::Subscribe {
            filter,
            line: None,
            options,
            reply,
        })
        .await
    }

    /// Starts a live view of a filter line: **no snapshot rows** (page the history with
    /// [`DialLogHandle::history`]; subscribe first, then page, and drop streamed dials whose
    /// `seq` the pages already hold), then batches of new dials matching `query`.
    ///
    /// # Errors
    /// [`DialLogError::Closed`] when the log has shut down.
    pub async fn subscribe_line(
        &self,
        query: CompiledQuery,
        options: SubscribeOptions,
    ) -> Result<Subscription, DialLogError> {
        self.ask(|reply| Command::Subscribe {
            filter: DialFilter::default(),
            line: Some(Box::new(query)),
            options,
            reply,
        })
        .await
    }

    /// Removes dials past their retention at `now_ms` (epoch ms) from the ring and from SQLite
    /// (after writing every dial held so far). The periodic prune does the same with the clock.
    ///
    /// # Errors
    /// [`DialLogError::Closed`]; [`DialLogError::Storage`] when SQLite fails.
    pub async fn prune(&self, now_ms: i64) -> Result<PruneReport, DialLogError> {
        self.shared.ready().await?;
        let (memory, db) = self.ask(|reply| Command::Prune { now_ms, reply }).await?;
        let stored = match db {
            Some(rx) => rx.await.map_err(|_| DialLogError::Closed)?? as u64,
            None => 0,
        };
        Ok(PruneReport { memory, stored })
    }

    /// Clears the log (see [`ClearScope`]). Returns the SQLite rows deleted (0 for `Memory`).
    ///
    /// # Errors
    /// [`DialLogError::Closed`]; [`DialLogError::Storage`] when SQLite fails.
    pub async fn clear(&self, scope: ClearScope) -> Result<u64, DialLogError> {
        self.shared.ready().await?;
        match self.ask(|reply| Command::Clear { scope, reply }).await? {
            Some(rx) => Ok(rx.await.map_err(|_| DialLogError::Closed)?? as u64),
            None => Ok(0),
        }
    }

    /// Waits until every dial held so far is committed to SQLite.
    ///
    /// # Errors
    /// [`DialLogError::Closed`]; [`DialLogError::Storage`] with the first write error since the
    /// last flush (the failed batch is not retried).
    pub async fn flush(&self) -> Result<(), DialLogError> {
        match self.ask(|reply| Command::Flush { reply }).await? {
            Some(rx) => rx.await.map_err(|_| DialLogError::Closed)?,
            None => Ok(()),
        }
    }

    /// Exports the dials matching `filter` (its `limit`/`offset` honoured; leave them unset for
    /// all) to `path` as JSON Lines, newest first, atomically. Returns the lines written.
    ///
    /// # Errors
    /// [`DialLogError::Closed`]; [`DialLogError::Export`] naming the file when writing fails.
    pub async fn export_jsonl(
        &self,
        filter: DialFilter,
        path: PathBuf,
    ) -> Result<u64, DialLogError> {
        let page = self.query(filter).await?;
        let n = tokio::task::spawn_blocking(move || {
            crate::jsonl::export_jsonl_file(&page.dials, &path)
        })
        .await
        .map_err(|_| DialLogError::Closed)??;
        Ok(n)
    }

    /// Holds a connection event in the timeline (connected, disconnected, pairing, ...): it gets
    /// the next sequence number and is stored for
    /// [`CONNECTION_EVENT_MAX_AGE_MS`](crate::history::CONNECTION_EVENT_MAX_AGE_MS).
    /// Returns its sequence number (0 once the log has shut down).
    pub fn record_connection(&self, event: ConnectionEvent) -> u64 {
        let mut guard = self.shared.lock();
        guard.as_mut().map_or(0, |a| a.record_connection(event))
    }

    /// One page of the whole history (ring and SQLite) matching `query`, newest first: the rows
    /// below `cursor` (a `next` of an earlier page; `None` for the first page), at most `limit`
    /// (default 200, at most 2000), with the number of matching rows when `count`.
    ///
    /// # Errors
    /// [`DialLogError::Config`] for a cursor this log did not give; [`DialLogError::Closed`];
    /// [`DialLogError::Storage`] when SQLite fails.
    pub async fn history(
        &self,
        query: CompiledQuery,
        cursor: Option<&str>,
        limit: Option<u32>,
        count: bool,
    ) -> Result<HistoryPage, DialLogError> {
        let before = match cursor {
            Some(c) => parse_cursor(c).map_err(|e| DialLogError::Config(e.to_string()))?,
            None => u64::MAX,
        };
        let limit = limit.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE) as usize;
        let query = Arc::new(query);
        let q = Arc::clone(&query);
        let mem = self
            .ask(|reply| Command::History {
                query: Box::new((*q).clone()),
                before,
                limit,
                count,
                reply,
            })
            .await?;
        let stored = match self.shared.reader() {
            Some(reader) => {
                let q = Arc::clone(&query);
                let (upto, gap) = (mem.sql_upto, mem.gap_below);
                tokio::task::spawn_blocking(move || {
                    reader.page(&q, before, limit, count, upto, gap)
                })
                .await
                .map_err(|_| DialLogError::Closed)??
            }
            None => crate::history_sql::StoredPart::default(),
        };
        let more = mem.more || stored.more;
        let mut entries = merge_newest_first(mem.entries, stored.entries);
        let mut next = None;
        if entries.len() > limit {
            entries.truncate(limit);
        }
        // Rows below the stored part's stopping point were not searched yet.
        if let Some(stop) = stored.stopped_at {
            entries.retain(|e| e.seq() >= stop);
            if entries.len() < limit {
                next = Some(cursor_of(stop));
            }
        }
        if next.is_none() && (more || entries.len() == limit) {
            if let Some(last) = entries.last() {
                next = Some(cursor_of(last.seq()));
            }
        }
        if entries.is_empty() && next.is_none() && stored.stopped_at.is_some() {
            next = stored.stopped_at.map(cursor_of);
        }
        let matched = count.then(|| MatchCount {
            count: mem.count + stored.count.count,
            exact: stored.count.exact,
        });
        let oldest_ms = match (mem.oldest_ms, stored.oldest_ms) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Ok(HistoryPage {
            entries,
            next,
            matched,
            oldest_ms,
            newest_seq: mem.newest_seq,
            filter: query.line.clone(),
            skipped: 0,
        })
    }

    /// Per-op stats over the whole history (the ring and SQLite) matching `query`: the dials
    /// SQLite does not answer for (transient, not yet written) from memory, the stored ones
    /// from SQLite for at most `budget` (newest first). Returns the stats sorted by op, the
    /// dials counted, and whether every matching dial was counted (`false`: the budget ran out
    /// and the stats cover the newest of them).
    ///
    /// # Errors
    /// [`DialLogError::Closed`]; [`DialLogError::Storage`] when SQLite fails.
    pub async fn history_stats(
        &self,
        query: CompiledQuery,
        budget: std::time::Duration,
    ) -> Result<(Vec<OpStats>, u64, bool), DialLogError> {
        let query = Arc::new(query);
        let q = Arc::clone(&query);
        let mem = self
            .ask(|reply| Command::HistoryStats {
                query: Box::new((*q).clone()),
                reply,
            })
            .await?;
        let mut tally = mem.tally;
        let mut complete = true;
        if let Some(reader) = self.shared.reader() {
            let (upto, gap) = (mem.sql_upto, mem.gap_below);
            let (stored, done) = tokio::task::spawn_blocking(move || {
                let mut t = crate::StatsTally::default();
                reader
                    .stats(&query, upto, gap, budget, &mut t)
                    .map(|d| (t, d))
            })
            .await
            .map_err(|_| DialLogError::Closed)??;
            tally.merge(stored);
            complete = done;
        }
        let n = tally.dials();
        Ok((tally.finish(), n, complete))
    }

    /// The stored dial with sequence number `seq` ([`Dial::seq`], its place in the timeline),
    /// read from SQLite: for a dial the ring no longer holds. `None` when it is not stored
    /// (never was, pruned, or a log in memory only).
    ///
    /// # Errors
    /// [`DialLogError::Storage`] when SQLite fails; [`DialLogError::Closed`].
    pub async fn stored_dial(&self, seq: u64) -> Result<Option<Dial>, DialLogError> {
        let Some(reader) = self.shared.reader() else {
            return Ok(None);
        };
        tokio::task::spawn_blocking(move || reader.dial_at(seq))
            .await
            .map_err(|_| DialLogError::Closed)?
    }

    /// Whether every stored row is in the history indexes, the column blocks included (the
    /// writer indexes when it has nothing else to do; until then history queries match the rest
    /// in Rust, and use the plans without blocks while a file of an older schema gets them).
    /// Always true for a log in memory only.
    ///
    /// # Errors
    /// [`DialLogError::Storage`] when SQLite fails.
    pub async fn history_indexed(&self) -> Result<bool, DialLogError> {
        match self.shared.reader() {
            Some(r) => tokio::task::spawn_blocking(move || r.indexed_all())
                .await
                .map_err(|_| DialLogError::Closed)?,
            None => Ok(true),
        }
    }

    /// Waits until the ring and the stored dials' dedup keys are loaded (see [`DialLog::spawn`]).
    ///
    /// # Errors
    /// [`DialLogError::Storage`] naming the file when loading failed (ingest then fails the
    /// same way: a dial whose stored replay cannot be recognised is not taken in);
    /// [`DialLogError::Closed`].
    pub async fn loaded(&self) -> Result<(), DialLogError> {
        self.shared.ready().await
    }

    /// Counters of the log.
    ///
    /// # Errors
    /// [`DialLogError::Closed`] when the log has shut down.
    pub async fn status(&self) -> Result<DialLogStatus, DialLogError> {
        self.status_inner().await
    }

    /// While the disk holding the history is full, the words saying so and where
    /// ([`DialLogStatus::disk_full`]); read without asking the log's task (the tray asks).
    pub fn disk_full(&self) -> Option<String> {
        self.shared
            .writer
            .as_ref()
            .and_then(|w| w.disk_full.borrow().clone())
    }

    /// A receiver that wakes when [`DialLogHandle::disk_full`] changes (the disk fills up,
    /// or has room again); `None` for a log that keeps nothing on disk (its disk never fills).
    /// Lets a watcher wait for the change instead of asking every so often.
    pub fn disk_full_changes(&self) -> Option<tokio::sync::watch::Receiver<Option<String>>> {
        self.shared.writer.as_ref().map(|w| w.disk_full.subscribe())
    }

    async fn status_inner(&self) -> Result<DialLogStatus, DialLogError> {
        self.shared.ready().await?;
        self.ask(|reply| Command::Status { reply }).await
    }

    /// Writes everything held, stops the actor and waits for the writer to finish. Other handles
    /// get [`DialLogError::Closed`] afterwards; subscribers' receivers end.
    ///
    /// # Errors
    /// [`DialLogError::Closed`] when the log had already shut down.
    pub async fn shutdown(&self) -> Result<(), DialLogError> {
        if let Some(done) = self.ask(|reply| Command::Shutdown { reply }).await? {
            let _ = done.await;
        }
        Ok(())
    }
}
