//! # switchboard-dials: the dial store, the live log of phone-line calls
//!
//! It may use `switchboard-wire` and `switchboard-domain` (the [`Dial`] record itself lives
//! there, with its conformance check). It must not know the LAN link, the app or any user
//! interface: the app feeds it dials and forwards what it answers.
//!
//! A *dial* is one call of a phone line (`phone-line.md`, "Operations", "Request and response
//! shapes"): the caller dials an extension's endpoint with an op and a request and gets a response,
//! a tool error, an error, or nothing within 15 s. The paired phone forwards every dial as an ifp/1
//! `event.*` message (`ifp1-notes.md`, "Envelope", "Events": `labels.retention`, payload `dedup`);
//! this module holds them for the "Live dials" window. No UI and no network here: the phone link
//! turns events into [`Dial`]s and calls [`DialLogHandle::ingest`]; the shell forwards
//! [`Subscription::batches`] to the window.
//!
//! - [`record`]: the [`Dial`] record, [`DialOutcome`], [`Retention`], compact [`JsonText`].
//! - [`query`]: [`DialFilter`], [`DialPage`], per-op [`OpStats`] (nearest-rank percentiles).
//! - [`log`]: the log ([`DialLog::spawn`] -> [`DialLogHandle`]): ring, SQLite, subscriptions.
//! - [`store`]: the SQLite schema and background writer.
//! - [`repair`]: a damaged history at start: checked, moved aside, salvaged into a fresh one.
//! - [`jsonl`]: export to JSON Lines and import into a read-only [`ImportedLog`].
//!
//! ## What is kept (ifp/1 retention labels)
//! `transient`: memory only, never written to SQLite. `standard`: 7 days from the dial's start.
//! `extended`: 90 days. `permanent`: until cleared ([`ClearScope::All`]). Pruning runs every
//! [`DialLogConfig::prune_interval`] and on [`DialLogHandle::prune`].
//!
//! ## Dedup
//! The dial id is the event's `dedup` key. A dial whose id is in the ring, in a batch not yet
//! committed, or in SQLite (known by its 64-bit key, [`store`]'s `dial_keys`: the newest
//! [`DialLogConfig::dedup_keys_per_phone`] of each phone are held in memory) is a replay ([`IngestVerdict::Duplicate`]): not held, not written, not sent to subscribers. A
//! `transient` dial is recognised only while the ring holds it.
//!
//! ## Who does what
//! [`DialLogHandle::ingest_batch`] works in the caller's task under the log's lock (held, handed
//! to subscribers, queued for the writer), so a dial reaches a live view without a hop to
//! another task; the log's own task answers the other calls, runs the subscribers' and the
//! writer's timers and prunes; SQLite is written on its own thread.

pub(crate) mod blocks;
pub mod filter;
pub mod history;
pub(crate) mod history_sql;
pub mod jsonl;
pub mod log;
pub mod query;
/// The dial record and its conformance check live with the other domain types; this crate
/// stores and queries them.
pub use switchboard_domain::dial as record;
pub mod repair;
pub mod store;

pub use filter::{CompiledQuery, DialQuery, FilterCheck, FilterError, RowKind, FILTER_HELP};
pub use history::{
    ConnectionEvent, ConnectionKind, HistoryEntry, HistoryPage, HistoryQuery, MatchCount,
};
pub use jsonl::{BadLine, ImportError, ImportedLog};
pub use log::{
    ClearScope, DialBatch, DialLog, DialLogConfig, DialLogHandle, DialLogStatus, IngestVerdict,
    PruneReport, SubscribeOptions, Subscription,
};
pub use query::{nearest_rank, DialFilter, DialPage, OpStats, StatsTally};
pub use record::{
    Arrival, Dial, DialOutcome, JsonText, JsonTextError, Retention, Seq, SpecMark, SLOW_DIAL_MS,
};

/// Errors of the dial log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DialLogError {
    /// The SQLite file or its folder could not be created, read or written; the message names the
    /// file and the step.
    #[error("dial store: {0}")]
    Storage(String),
    /// A [`DialLogConfig`] value is unusable; the message names it.
    #[error("dial log config: {0}")]
    Config(String),
    /// The log has shut down (or its task panicked); the call did nothing.
    #[error("the dial log has shut down")]
    Closed,
    /// Exporting failed.
    #[error(transparent)]
    Export(#[from] ImportError),
}

impl From<DialLogError> for switchboard_wire::error::IpcError {
    fn from(e: DialLogError) -> Self {
        let kind = match &e {
            DialLogError::Storage(_) | DialLogError::Export(_) => {
                switchboard_wire::error::IpcErrorKind::Io
            }
            DialLogError::Config(_) => switchboard_wire::error::IpcErrorKind::InvalidInput,
            DialLogError::Closed => switchboard_wire::error::IpcErrorKind::Internal,
        };
        switchboard_wire::error::IpcError::new(kind, e.to_string())
    }
}

impl From<ImportError> for switchboard_wire::error::IpcError {
    fn from(e: ImportError) -> Self {
        let kind = match &e {
            ImportError::Io { .. } => switchboard_wire::error::IpcErrorKind::Io,
            ImportError::BadLines { .. } => switchboard_wire::error::IpcErrorKind::InvalidInput,
        };
        switchboard_wire::error::IpcError::new(kind, e.to_string())
    }
}
