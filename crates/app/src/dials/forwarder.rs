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

use switchboard_dials::DialBatch;

use super::{DialBatchMsg, DialSource, DialsState, RateMeter, WindowPace, WINDOW_BATCH_ROWS};

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

/// Sends the subscription's snapshot first; the batches to follow, or `None` when the sink is
/// closed.
fn send_snapshot<E>(
    id: u64,
    sub: Subscription,
    sink: &mut impl FnMut(DialBatchMsg) -> Result<(), E>,
) -> Option<tokio::sync::mpsc::Receiver<DialBatch>> {
    let Subscription { snapshot, batches } = sub;
    sink(DialBatchMsg::snapshot(id, &snapshot)).ok()?;
    Some(batches)
}

/// As [`forward`], each batch with at most `max_rows` of its newest dials
/// ([`DialBatchMsg::batch_newest`]; `None`: all).
pub async fn forward_newest<E>(
    id: u64,
    sub: Subscription,
    max_rows: Option<usize>,
    mut sink: impl FnMut(DialBatchMsg) -> Result<(), E>,
) -> ForwardEnd {
    let Some(mut batches) = send_snapshot(id, sub, &mut sink) else {
        return ForwardEnd::SinkClosed;
    };
    while let Some(b) = batches.recv().await {
        if sink(DialBatchMsg::batch_newest(&b, max_rows)).is_err() {
            return ForwardEnd::SinkClosed;
        }
    }
    ForwardEnd::LogClosed
}

/// As [`forward_newest`], the batches spaced by `pace` ([`WindowPace`]): the log hands its
/// dials over at most every `pace.handover` (the subscription's interval), and the forwarder
/// holds them (merged into one batch) until `pace.spacing` of the view's current rate has passed
/// since the last batch it sent (under load, until the log's first handover after that), or,
/// under load, until no handover came for `pace.quiet` (the stream stopped: its last rows go at
/// once, at least `pace.quick` after the last batch). What it holds when the log ends the
/// subscription is sent before it returns.
pub async fn forward_paced<E>(
    id: u64,
    sub: Subscription,
    max_rows: Option<usize>,
    pace: WindowPace,
    mut sink: impl FnMut(DialBatchMsg) -> Result<(), E>,
) -> ForwardEnd {
    let Some(mut batches) = send_snapshot(id, sub, &mut sink) else {
        return ForwardEnd::SinkClosed;
    };
    let mut held: Option<DialBatch> = None;
    let mut last_sent: Option<tokio::time::Instant> = None;
    let mut last_handover: Option<tokio::time::Instant> = None;
    let mut meter = RateMeter::default();
    loop {
        let now = tokio::time::Instant::now();
        // Under load the log hands dials over every `handover`: the batch goes with the first
        // handover after it is due, so its newest rows (the ones the table shows) are fresh,
        // not a timer's wait old; the timer wakes the forwarder when the stream went quiet, so
        // a stopped stream's last rows do not wait for the busy pace.
        let due = match (&held, last_sent) {
            (None, _) => None,
            (Some(_), None) => Some(now),
            (Some(_), Some(t)) => {
                let rate = meter.per_s(now);
                let wake = t + pace.spacing(rate);
                Some(if rate >= pace.busy_rows_per_s {
                    let quiet_at = last_handover
                        .map_or(now, |h| h + pace.quiet)
                        .max(t + pace.quick);
                    (wake + pace.quick).min(quiet_at)
                } else {
                    wake
                })
            }
        };
        // A handover already waiting counts before the timer: a forwarder the machine stalled
        // past `quiet` wakes with both ready, and the stream was not quiet.
        tokio::select! {
            biased;
            b = batches.recv() => match b {
                Some(b) => {
                    let got = tokio::time::Instant::now();
                    last_handover = Some(got);
                    meter.add(got, b.dials.len() as u64 + b.skipped);
                    held = Some(match held.take() {
                        None => b,
                        Some(mut h) => {
                            h.dials.extend(b.dials);
                            h.merged += b.merged;
                            h.skipped += b.skipped;
                            h
                        }
                    });
                }
                None => {
                    if let Some(h) = held.take() {
                        if sink(DialBatchMsg::batch_newest(&h, max_rows)).is_err() {
                            return ForwardEnd::SinkClosed;
                        }
                    }
                    return ForwardEnd::LogClosed;
                }
            },
            () = tokio::time::sleep_until(due.unwrap_or(now)), if due.is_some() => {}
        }
        let now = tokio::time::Instant::now();
        let ready = match last_sent {
            None => true,
            Some(t) => {
                let quiet = last_handover.is_some_and(|h| now >= h + pace.quiet);
                now >= t + if quiet {
                    pace.quick
                } else {
                    pace.spacing(meter.per_s(now))
                }
            }
        };
        if ready {
            if let Some(h) = held.take() {
                if sink(DialBatchMsg::batch_newest(&h, max_rows)).is_err() {
                    return ForwardEnd::SinkClosed;
                }
                // Spaced from when the batch left: a sink slowed by the machine (its message
                // built, the page's channel written) does not shorten the gap to the next.
                last_sent = Some(tokio::time::Instant::now());
            }
        }
    }
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
        self.start_forwarding_paced(sub, max_rows, None, sink)
    }

    /// As [`DialsState::start_forwarding_newest`], spaced by `pace` when given
    /// ([`forward_paced`]).
    pub fn start_forwarding_paced<E: 'static>(
        &self,
        sub: Subscription,
        max_rows: Option<usize>,
        pace: Option<WindowPace>,
        sink: impl FnMut(DialBatchMsg) -> Result<(), E> + Send + 'static,
    ) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let subs = Arc::clone(&self.subs);
        // Held across the spawn so the task's own removal cannot run before the insert.
        let mut map = lock(&self.subs);
        tracing::debug!("dial view {id} started");
        let task = self.rt.spawn(async move {
            let end = match pace {
                Some(pace) => forward_paced(id, sub, max_rows, pace, sink).await,
                None => forward_newest(id, sub, max_rows, sink).await,
            };
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
    /// with `dials_history`), in batches spaced by [`WindowPace::WINDOW`], each with at
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
                let (sub, max_rows, pace) = match line {
                    Some(q) => {
                        let pace = WindowPace::WINDOW;
                        let options = SubscribeOptions {
                            interval: Some(pace.handover),
                            ..SubscribeOptions::default()
                        };
                        let sub = self.log.subscribe_line(q, options).await?;
                        (sub, Some(WINDOW_BATCH_ROWS), Some(pace))
                    }
                    None => {
                        let sub = self
                            .log
                            .subscribe(filter, SubscribeOptions::default())
                            .await?;
                        (sub, None, None)
                    }
                };
                Ok(self.start_forwarding_paced(sub, max_rows, pace, sink))
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
