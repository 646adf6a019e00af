//! The hub's loop ([`Hub::run`], [`Hub::run_until`]): link events applied in the order they
//! came, consecutive dials handed to the dial log in batches, acknowledgement points taken and
//! released as dials become durable, waiting proposals ended on time, and the observer told.
//!
//! Why apart: the loop only orders the work (what waits for what); applying each event is the
//! other files' concern.

use tokio::sync::mpsc;

use switchboard_link::LinkEvent;

use super::{dials, lock, Hub, EXPIRY_TICK};
#[cfg(doc)]
use super::{HubParts, ACK_EVERY, MAX_DIAL_BATCH};

impl Hub {
    /// Applies link events until the channel closes. An acknowledgement point is taken every
    /// [`ACK_EVERY`] messages and whenever the queue runs dry, and sent once the dials before it
    /// are durable (the dial log's watermark is watched here; module `acks.rs`).
    ///
    /// Consecutive dials are handed to the dial log in batches (at most [`MAX_DIAL_BATCH`]): a
    /// batch goes before any other event is applied, before an acknowledgement point is taken
    /// (an acknowledged dial is always durable) and when the queue runs dry, so the effects
    /// happen in the order the events came, as with [`Hub::apply`] one by one.
    pub async fn run(self, link_events: mpsc::UnboundedReceiver<LinkEvent>) {
        self.run_until(link_events, std::future::pending::<()>())
            .await;
    }

    /// [`Hub::run`] until the channel closes or `stop` completes; then it stops taking new
    /// events, applies those already queued, flushes its dials and acknowledgements, and
    /// returns. The observer ([`HubParts::observer`]) hears each event before it is applied
    /// and each notice after.
    pub async fn run_until(
        self,
        mut link_events: mpsc::UnboundedReceiver<LinkEvent>,
        stop: impl std::future::Future<Output = ()>,
    ) {
        let mut pending = Vec::new();
        tokio::pin!(stop);
        let mut stopping = false;
        // Acknowledgements wait for the dial log's durable watermark (`acks.rs`).
        let mut durable = self.inner.dials.durable_watch();
        let mut watching = true;
        // ... and for the Confirmations mirror to be written, when it is kept in a file.
        let mut saved = self.inner.confirmations_saved.clone();
        let mut watching_saved = saved.is_some();
        let mut expiry = tokio::time::interval(EXPIRY_TICK);
        expiry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            // The expiry tick runs only while a proposal waits: an idle desktop in the tray is
            // not woken every second for nothing. A proposal only starts waiting through an
            // event this loop applies (or at start, restored), so the next turn sees it.
            let waiting = self.has_waiting_proposals();
            let event = if stopping {
                link_events.recv().await
            } else {
                tokio::select! {
                    e = link_events.recv() => e,
                    _ = expiry.tick(), if waiting => {
                        self.expire_proposals();
                        self.deliver();
                        continue;
                    }
                    () = self.inner.wake.notified() => {
                        self.deliver();
                        continue;
                    }
                    moved = durable.changed(), if watching => {
                        // An error: the log is gone, nothing more becomes durable.
                        watching = moved.is_ok();
                        self.release_acks();
                        continue;
                    }
                    moved = async {
                        match saved.as_mut() {
                            Some(s) => s.changed().await,
                            None => std::future::pending().await,
                        }
                    }, if watching_saved => {
                        watching_saved = moved.is_ok();
                        self.release_acks();
                        continue;
                    }
                    () = &mut stop => {
                        stopping = true;
                        // No new events; what is queued is still received below.
                        link_events.close();
                        continue;
                    }
                }
            };
            let Some(event) = event else { break };
            self.observe_and_apply(event, &mut pending).await;
            let mut burst = 0u32;
            while burst < 1024 {
                match link_events.try_recv() {
                    Ok(e) => {
                        self.observe_and_apply(e, &mut pending).await;
                        burst += 1;
                    }
                    Err(_) => break,
                }
            }
            self.flush_dials(&mut pending).await;
            self.deliver();
            self.flush_acks();
        }
        self.flush_dials(&mut pending).await;
        self.deliver();
        self.flush_acks();
    }

    async fn observe_and_apply(&self, event: LinkEvent, pending: &mut Vec<dials::PendingDial>) {
        if let Some(o) = &self.inner.observer {
            o.link_event(&event);
        }
        self.apply_deferring(event, pending).await;
        self.deliver();
    }

    /// Hands the notices raised so far to the observer, oldest first (outside every lock).
    fn deliver(&self) {
        let Some(o) = &self.inner.observer else {
            return;
        };
        loop {
            let batch = std::mem::take(&mut *lock(&self.inner.undelivered));
            if batch.is_empty() {
                return;
            }
            for n in &batch {
                o.notice(self, n);
            }
        }
    }
}
