//! The live dial log: the ring of recent dials, the SQLite writer and the subscribers behind one
//! lock, driven through a cloneable [`DialLogHandle`]. Ingest runs in the caller's task under
//! the lock; a tokio task of the log's own answers the other calls and runs the timers.
//!
//! Every phone-line call the phone reports (`phone-line.md`, "Operations") arrives here as a
//! [`Dial`], carried by an ifp/1 `event.*` message (`ifp1-notes.md`, "Events"). The log:
//!
//! 1. drops a dial whose id (the event's `dedup` key) it has already seen: in the ring, in a batch
//!    not yet written, or in SQLite (by its stored 64-bit key, `dial_keys`: the newest
//!    [`DialLogConfig::dedup_keys_per_phone`] of each phone, read at start on the loader thread
//!    and kept in memory, so a replay after a restart is also caught and memory stays bounded);
//! 2. holds the dial: pushes it into the bounded ring (evicting the oldest arrival when full) and
//!    queues it for every matching subscriber. A dial is *held* from this point;
//! 3. later, off the hot path, hands a batch of persisting dials (retention not `transient`) to a
//!    dedicated writer thread that inserts it in one SQLite transaction. Acknowledgements wait
//!    for that commit ([`DialLogHandle::durable_mark`], [`DialLogHandle::durable_watch`]): a
//!    dial acknowledged is durable. When it has nothing else to do, the writer indexes the
//!    committed rows for history search (`dial_fts`, `dial_by`, the spec count).
//!
//! Subscribers get batches at most once per interval (default 1/30 s); a subscriber whose bounded
//! queue is full never blocks the log: its dials wait and merge into its next batch, which says
//! how many were held back (`merged`) and how many were dropped because even the waiting list
//! overflowed (`skipped`).
//!
//! **History** ([`DialLogHandle::history`]) pages the whole store, newest first, by sequence
//! number (the SQLite rowid): SQLite answers for the rows written and indexed
//! ([`crate::history_sql`]), the ring for transient dials and rows not yet indexed, and
//! the two are merged. It answers as soon as [`DialLog::spawn`] returns.
//!
//! **The ring** holds the newest `capacity` dials (by default 100 000; at start the last
//! `capacity` rows of SQLite, in arrival order, read by a loader thread after `spawn` returns:
//! ingest and the calls that read the ring wait for it, [`DialLogHandle::loaded`]).
//! [`DialLogHandle::query`], [`DialLogHandle::stats`], [`DialLogHandle::subscribe`]'s snapshot
//! and [`DialLogHandle::export_jsonl`] read the ring only; older stored dials are reached through
//! [`DialLogHandle::history`].
//!
//! ## Layout
//! - `handle`: [`DialLogConfig`], [`DialLog::spawn`], the cloneable [`DialLogHandle`] and the
//!   answers it returns ([`IngestVerdict`], [`ClearScope`], [`PruneReport`], [`DialLogStatus`]).
//! - `task`: the actor (ring, dedup, SQLite batches), the loader thread that fills the ring and
//!   the dedup keys at start, and the actor's loop: commands, timers, pruning, ingest.
//! - `subscribers`: [`SubscribeOptions`], [`Subscription`], [`DialBatch`] and the per-subscriber
//!   waiting list with its counted drops.
//! - `interning`: the strings dials share.

mod config;
mod handle;
mod interning;
mod subscribers;
mod task;

pub(crate) use config::held_bytes;
pub use config::{
    ClearScope, DialLogConfig, DialLogStatus, IngestVerdict, PruneReport, DIAL_OVERHEAD_BYTES,
};
pub use handle::{DialLog, DialLogHandle};
pub use subscribers::{DialBatch, SubscribeOptions, Subscription};
