//! The forwarder: turns a log [`Subscription`] into [`DialBatchMsg`]s for a sink (the shell's
//! `tauri::ipc::Channel`), one task per live view on the app's runtime, and the commands that
//! start and end views (`dials_subscribe`, `dials_unsubscribe`).
//!
//! Why apart: the forwarding tasks are the only part of the view that runs on its own; their
//! bookkeeping (ids, ending a task when the window goes away) is kept here.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use switchboard_dials::{CompiledQuery, DialFilter, SubscribeOptions, Subscription};
use switchboard_wire::error::IpcError;
use switchboard_wire::sync::lock;

use super::{DialBatchMsg, DialSource, DialsState, WINDOW_BATCH_INTERVAL, WINDOW_BATCH_ROWS};

/// How a [`forward`] loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForwardEnd {
    /// The sink refused a message (the window closed the channel or went away).
    SinkClosed,
    /// The log ended the subscription (it shut down).
    LogClosed,
}

/// Forwards a subscription to `sink`: first the snapshot (as subscription `id`), then every
/// batch as it arrives, until the sink fails or the log ends the subscription. Dropping the
/// receiver on return ends the subscription in the log.
///
/// The sink is called synchronously and should not block (a `Channel::send` queues and returns);
/// while it does block, the log merges the waiting dials into the next batch and reports
/// `merged`.
pub async fn forward<E>(
    id: u64,
    sub: Subscription,
    sink: impl FnMut(DialBatchMsg) -> Result<(), E>,
) -> ForwardEnd {
    forward_newest(id, sub, None, sink).await
}

/// As [`forward`], each batch with at most `max_rows` of its newest dials
/// ([`DialBatchMsg::batch_newest`]; `None`: all).
pub async fn forward_newest<E>(
    id: u64,
    sub: Subscription,
    max_rows: Option<usize>,
    mut sink: impl FnMut(DialBatchMsg) -> Result<(), E>,
) -> ForwardEnd {
    let Subscription {
        snapshot,
        mut batches,
    } = sub;
    if sink(DialBatchMsg::snapshot(id, &snapshot)).is_err() {
        return ForwardEnd::SinkClosed;
    }
    drop(snapshot);
    while let Some(b) = batches.recv().await {
        if sink(DialBatchMsg::batch_newest(&b, max_rows)).is_err() {
            return ForwardEnd::SinkClosed;
        }
    }
    ForwardEnd::LogClosed
}

impl DialsState {
    /// Starts forwarding `sub` to `sink` in a task on the app's runtime; returns the subscription
    /// id. The task ends (and the subscription with it) when the sink fails, the log closes, or
    /// [`DialsState::unsubscribe`] is called.
    pub fn start_forwarding<E: 'static>(
        &self,
        sub: Subscription,
        sink: impl FnMut(DialBatchMsg) -> Result<(), E> + Send + 'static,
    ) -> u64 {
        self.start_forwarding_newest(sub, None, sink)
    }

    /// As [`DialsState::start_forwarding`], each batch with at most `max_rows` of its newest
    /// dials ([`forward_newest`]).
    pub fn start_forwarding_newest<E: 'static>(
        &self,
        sub: Subscription,
        max_rows: Option<usize>,
        sink: impl FnMut(DialBatchMsg) -> Result<(), E> + Send + 'static,
    ) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let subs = Arc::clone(&self.subs);
        // Held across the spawn so the task's own removal cannot run before the insert.
        let mut map = lock(&self.subs);
        tracing::debug!("dial view {id} started");
        let task = self.rt.spawn(async move {
            let end = forward_newest(id, sub, max_rows, sink).await;
            tracing::debug!("dial view {id} ended: {end:?}");
            lock(&subs).remove(&id);
        });
        map.insert(id, task);
        id
    }

    /// Ends subscription `id`; `false` when no such subscription is running (already ended).
    pub fn unsubscribe(&self, id: u64) -> bool {
        match lock(&self.subs).remove(&id) {
            Some(task) => {
                task.abort();
                true
            }
            None => false,
        }
    }

    /// How many views are subscribed.
    pub fn subscriptions(&self) -> usize {
        lock(&self.subs).len()
    }

    /// Starts a view of `filter` streamed over `channel`: a `snapshot` message, then `batch`
    /// messages at most 30 times a second (see [`DialBatchMsg`]). Returns the subscription id. For
    /// the `imported` source only the snapshot is sent (a capture does not change).
    ///
    /// The stream ends when a send fails (the window went away) or on `dials_unsubscribe`.
    ///
    /// # Errors
    /// As [`DialsState::dials_query`].
    pub async fn dials_subscribe<E: std::fmt::Display + 'static>(
        &self,
        filter: Option<DialFilter>,
        source: Option<DialSource>,
        sink: impl FnMut(DialBatchMsg) -> Result<(), E> + Send + 'static,
    ) -> Result<u64, IpcError> {
        self.dials_subscribe_with(filter, None, source, sink).await
    }

    /// As [`DialsState::dials_subscribe`]; with `line` (a compiled filter line) the live view
    /// sends an empty snapshot and then only new dials matching the line (page the history
    /// with `dials_history`), in batches at most [`WINDOW_BATCH_INTERVAL`] apart, each with at
    /// most [`WINDOW_BATCH_ROWS`] of the newest (the others counted as `skipped`); an imported
    /// capture's snapshot holds its matching dials.
    ///
    /// # Errors
    /// As [`DialsState::dials_subscribe`].
    pub async fn dials_subscribe_with<E: std::fmt::Display + 'static>(
        &self,
        filter: Option<DialFilter>,
        line: Option<CompiledQuery>,
        source: Option<DialSource>,
        sink: impl FnMut(DialBatchMsg) -> Result<(), E> + Send + 'static,
    ) -> Result<u64, IpcError> {
        let filter = filter.unwrap_or_default();
        match source.unwrap_or_default() {
            DialSource::Live => {
                let (sub, max_rows) = match line {
                    Some(q) => {
                        let options = SubscribeOptions {
                            interval: Some(WINDOW_BATCH_INTERVAL),
                            ..SubscribeOptions::default()
                        };
                        let sub = self.log.subscribe_line(q, options).await?;
                        (sub, Some(WINDOW_BATCH_ROWS))
                    }
                    None => {
                        let sub = self
                            .log
                            .subscribe(filter, SubscribeOptions::default())
                            .await?;
                        (sub, None)
                    }
                };
                Ok(self.start_forwarding_newest(sub, max_rows, sink))
            }
            DialSource::Imported => {
                let capture = self.imported_capture()?;
                let mut page = capture.log.query(&filter);
                if let Some(q) = &line {
                    page.dials.retain(|d| q.matches_dial(d));
                    page.total = page.dials.len() as u64;
                }
                let mut sink = sink;
                sink(DialBatchMsg::snapshot(0, &page))
                    .map_err(|e| IpcError::internal(format!("sending the snapshot: {e}")))?;
                Ok(0)
            }
        }
    }

    /// Ends live view `id`; `false` when it had already ended.
    pub fn dials_unsubscribe(&self, id: u64) -> bool {
        self.unsubscribe(id)
    }
}
