//! The dial log's settings and the answers it gives: [`DialLogConfig`], [`IngestVerdict`],
//! [`ClearScope`], [`PruneReport`], [`DialLogStatus`]. A leaf: the handle and the task both use
//! it, it uses neither.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;
use ts_rs::TS;

/// Settings of a [`DialLog`]. [`Default`] gives the documented defaults.
#[derive(Debug, Clone)]
pub struct DialLogConfig {
    /// Folder of the SQLite file (`dials.sqlite3`); `None` keeps the log in memory only.
    pub data_dir: Option<PathBuf>,
    /// Dials held in memory (the ring, a cache of the newest: history pages, stats and the
    /// inspector read the stored ones from SQLite). Default 25 000.
    pub capacity: usize,
    /// Bytes the ring may hold: each dial counts its request, response and error text plus
    /// [`DIAL_OVERHEAD_BYTES`]. Default 256 MiB. Past it the oldest dials leave the ring
    /// (counted in `evicted`, as past `capacity`), so a phone sending frames near the 1 MiB limit
    /// cannot make the ring hold `capacity` of them. Stored dials stay in SQLite.
    pub max_bytes: usize,
    /// Bound of the command channel to the log's task (queries, stats, subscribe, prune, clear,
    /// flush, status). Default 1024. A full channel makes those calls wait; ingest does not use
    /// the channel (it runs under the log's lock), and a subscriber never makes anything wait.
    pub command_queue: usize,
    /// Dials per SQLite transaction at most. Default 1000.
    pub db_batch_size: usize,
    /// Bytes ([`DIAL_OVERHEAD_BYTES`] plus the texts, as `max_bytes` counts them) a batch for
    /// SQLite may gather before it is handed to the writer, whatever its count. Default 8 MiB.
    pub db_batch_bytes: usize,
    /// Bytes of persisting dials held and not yet written to SQLite (waiting in the batch or
    /// queued to the writer) past which ingest waits until the writer has caught up: the
    /// caller's [`DialLogHandle::ingest_batch`](super::DialLogHandle::ingest_batch) does not
    /// return until there is room, so the phone's link stops reading (its acknowledgements
    /// wait too: they are only sent for what is durable). Nothing is dropped. One batch may
    /// take it past the bound by its own size. Default 64 MiB.
    pub max_unwritten_bytes: usize,
    /// Longest time a held dial waits before its batch is handed to the writer. Default 100 ms.
    pub db_flush_interval: Duration,
    /// How often rows and ring entries past their retention are pruned; `None` disables
    /// automatic pruning (and the prune at start). Default 10 minutes.
    pub prune_interval: Option<Duration>,
    /// Default shortest time between two batches to one subscriber. Default 1/30 s.
    pub batch_interval: Duration,
    /// Default bound of a subscriber's batch queue. Default 4.
    pub subscriber_queue: usize,
    /// Default bound of the dials waiting for one subscriber; beyond it the oldest waiting dials
    /// are dropped and counted as `skipped`. Default 10 000.
    pub subscriber_max_pending: usize,
    /// Stored dials' dedup keys kept in memory for each phone once the dials have left the ring
    /// (the newest of that phone's): a resent dial is recognised among them, or in the ring, or
    /// on its way to SQLite, and is not stored twice. What a phone resends after a cut or a
    /// desktop restart is its outbox, the dials it has not seen acknowledged, which is what it
    /// sent in the last moments before the cut (`docs/protocol.md`, "Acknowledgement and
    /// replay"). About 24 bytes a key, so memory stays bounded however large the history grows.
    /// Default 65 536 (about 1.5 MiB a phone).
    pub dedup_keys_per_phone: usize,
    /// The wall clock retention is judged by (pruning at start and every `prune_interval`).
    /// Default [`SystemClock`](switchboard_wire::clock::SystemClock).
    pub clock: std::sync::Arc<dyn switchboard_wire::clock::Clock>,
}

impl Default for DialLogConfig {
    fn default() -> Self {
        Self {
            data_dir: None,
            capacity: 25_000,
            max_bytes: 256 * 1024 * 1024,
            command_queue: 1024,
            db_batch_size: 1000,
            db_batch_bytes: 8 * 1024 * 1024,
            max_unwritten_bytes: 64 * 1024 * 1024,
            db_flush_interval: Duration::from_millis(100),
            prune_interval: Some(Duration::from_secs(600)),
            batch_interval: Duration::from_micros(33_334),
            subscriber_queue: 4,
            subscriber_max_pending: 10_000,
            dedup_keys_per_phone: 65_536,
            clock: std::sync::Arc::new(switchboard_wire::clock::SystemClock),
        }
    }
}

/// What [`DialLogConfig::max_bytes`] counts for a dial besides its request, response and error
/// text (ids, names, the ring's bookkeeping), in bytes.
pub const DIAL_OVERHEAD_BYTES: usize = 256;

/// The bytes a held dial counts against [`DialLogConfig::max_bytes`].
pub(crate) fn held_bytes(d: &crate::Dial) -> usize {
    DIAL_OVERHEAD_BYTES
        + d.request.as_str().len()
        + d.response.as_ref().map_or(0, |r| r.as_str().len())
        + d.error.as_ref().map_or(0, |e| e.len())
}

/// What happened to one ingested dial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IngestVerdict {
    /// New: held in the ring, handed to subscribers, and (unless `transient`) queued for SQLite.
    Held,
    /// Its id was already seen (ifp/1 `acknowledged_duplicate`): not stored or counted again.
    Duplicate,
    /// Unusable (e.g. an empty id); the reason says what was wrong.
    Rejected(String),
}

/// What [`DialLogHandle::clear`] removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClearScope {
    /// Empty the ring only (the window's view). SQLite keeps its rows: they come back at the next
    /// start, and replays of them are still recognised as duplicates.
    Memory,
    /// Empty the ring and delete every row of SQLite, `permanent` ones included.
    All,
}

/// Counts from a prune.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, TS)]
#[ts(export)]
pub struct PruneReport {
    /// Dials removed from the ring.
    #[ts(type = "number")]
    pub memory: u64,
    /// Rows deleted from SQLite.
    #[ts(type = "number")]
    pub stored: u64,
}

/// Counters of a running log.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, TS)]
#[ts(export)]
pub struct DialLogStatus {
    /// Dials in the ring.
    #[ts(type = "number")]
    pub held: u64,
    /// Ring capacity.
    #[ts(type = "number")]
    pub capacity: u64,
    /// Dials held since start.
    #[ts(type = "number")]
    pub ingested: u64,
    /// Replays dropped since start.
    #[ts(type = "number")]
    pub duplicates: u64,
    /// Dials evicted from the ring because it was full.
    #[ts(type = "number")]
    pub evicted: u64,
    /// Rows committed to SQLite since start.
    #[ts(type = "number")]
    pub rows_written: u64,
    /// Bytes of persisting dials held and not yet written to SQLite now
    /// ([`DialLogConfig::max_unwritten_bytes`]).
    #[ts(type = "number")]
    pub unwritten_bytes: u64,
    /// The most `unwritten_bytes` has been since start.
    #[ts(type = "number")]
    pub peak_unwritten_bytes: u64,
    /// Live subscribers.
    #[ts(type = "number")]
    pub subscribers: u64,
    /// While the disk holding the history is full: which folder, and that the dials waiting
    /// are not acknowledged until there is room (writing resumes by itself). `None` otherwise.
    pub disk_full: Option<String>,
}
