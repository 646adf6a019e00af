//! The Confirmations view: the mirror of every proposal seen from every phone, and the
//! autonomy table of a phone ("what this phone will ask you to confirm").
//!
//! There is deliberately no way here to approve, decline or cancel anything: the person
//! confirms on the phone (`ifp1-notes.md`, "Action lifecycle (confirmation is local to the
//! surface)"). The hub feeds the same mirror (`Arc`) and sets each phone's autonomy in it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use switchboard_domain::confirmations::history::HistoryError;
use switchboard_wire::clock::Clock;

use serde::Serialize;
use ts_rs::TS;

use super::App;
use switchboard_domain::confirmations::{ConfirmationMirror, ConfirmationsSnapshot};
use switchboard_domain::runtime::{Autonomy, AutonomyTable};
use switchboard_wire::error::IpcError;
use switchboard_wire::sync::lock;

/// "What this phone will ask you to confirm".
#[derive(Debug, Clone, Serialize, TS)]
#[ts(export)]
pub struct PhoneAutonomy {
    /// The phone asked about.
    pub phone: String,
    /// The autonomy level used.
    pub autonomy: Autonomy,
    /// False when the phone has not said its level (then `ask_before_action`, the spec's
    /// fallback, is shown).
    pub autonomy_known: bool,
    /// The table over the phone's tools.
    pub table: AutonomyTable,
}

/// How long after a proposal comes, moves or ends the history file is written (changes that
/// come together are written once).
pub const HISTORY_SAVE_DELAY: Duration = Duration::from_millis(500);

/// How long after a failed write of the history file it is tried again.
pub const HISTORY_RETRY_DELAY: Duration = Duration::from_secs(1);

/// Most writes of the history file tried for one change ([`HISTORY_RETRY_DELAY`] apart).
pub const HISTORY_SAVE_TRIES: u32 = 30;

/// The Confirmations view's state: the mirror the hub feeds (the hub is given the same `Arc`),
/// and the file its waiting and ended proposals are kept in across restarts
/// ([`switchboard_domain::confirmations::history`]).
#[derive(Debug)]
pub struct ConfirmationsState {
    /// The mirror of every proposal seen from every phone.
    pub mirror: Arc<Mutex<ConfirmationMirror>>,
    /// Where the waiting and ended proposals are kept (`None`: memory only).
    history: Option<PathBuf>,
    /// The mirror's [`ConfirmationMirror::kept_revision`] last written. The hub holds back
    /// acknowledgements of `action.*` messages until it reaches their revision
    /// ([`Self::saved_watch`]).
    saved_revision: tokio::sync::watch::Sender<u64>,
    /// A write is already on its way ([`App::keep_confirmation_history`]).
    save_due: AtomicBool,
    /// One writer at a time, each writing the newest history.
    writing: Mutex<()>,
}

impl Default for ConfirmationsState {
    fn default() -> Self {
        Self::new(ConfirmationMirror::with_bundled_catalogue())
    }
}

impl ConfirmationsState {
    /// A state over `mirror` (the shell passes the bundled catalogue's, or sample data in debug
    /// builds).
    pub fn new(mirror: ConfirmationMirror) -> Self {
        let saved = mirror.kept_revision();
        Self {
            mirror: Arc::new(Mutex::new(mirror)),
            history: None,
            saved_revision: tokio::sync::watch::Sender::new(saved),
            save_due: AtomicBool::new(false),
            writing: Mutex::new(()),
        }
    }

    /// A state over `mirror` whose waiting and ended proposals are kept in `file`: what an
    /// earlier run kept there is put back first ([`ConfirmationMirror::restore_ended`], then
    /// [`ConfirmationMirror::restore_waiting`]).
    ///
    /// A file that cannot be read as a history (not JSON, another shape or version) is moved
    /// aside to `<file>.unreadable-<epoch ms>`, named in the log, and this run starts a new
    /// history: its content is never overwritten. When it cannot be moved (or cannot be read
    /// at all) this run keeps nothing, so the file stays as it is.
    /// `clock` dates the name a file is moved aside under.
    pub fn with_history(mut mirror: ConfirmationMirror, file: PathBuf, clock: &dyn Clock) -> Self {
        let mut keep = true;
        match switchboard_domain::confirmations::history::load(&file) {
            Ok(Some(kept)) => {
                let n = mirror.restore_ended(kept.ended, kept.ended_dropped);
                let w = mirror.restore_waiting(kept.waiting);
                tracing::info!(ended = n, waiting = w, file = %file.display(), "confirmations kept from the last run");
            }
            Ok(None) => {}
            Err(e) => {
                let aside = aside_name(&file, clock.now_ms());
                match std::fs::rename(&file, &aside) {
                    Ok(()) => tracing::warn!(
                        "the confirmations of the last run are not shown: {e}; the file is kept as {}",
                        aside.display()
                    ),
                    Err(m) => {
                        keep = false;
                        tracing::warn!(
                            "the confirmations of the last run are not shown: {e}; it could not be moved aside ({m}), so this run keeps no history in it"
                        );
                    }
                }
            }
        }
        let mut state = Self::new(mirror);
        state.history = keep.then_some(file);
        state
    }

    /// Writes the waiting and ended proposals to their file now when they changed since the
    /// last write (blocking file I/O: call it off the async threads). Returns whether it wrote.
    ///
    /// # Errors
    /// [`HistoryError`]: the file could not be written (its path and the reason); the next
    /// change tries again.
    pub fn save_history(&self) -> Result<bool, HistoryError> {
        let Some(path) = &self.history else {
            return Ok(false);
        };
        let _one = lock(&self.writing);
        let (kept, revision) = {
            let m = self.lock();
            if m.kept_revision() == *self.saved_revision.borrow() {
                return Ok(false);
            }
            let (ended, ended_dropped) = m.ended_history();
            let kept = switchboard_domain::confirmations::history::Kept {
                ended,
                ended_dropped,
                waiting: m.waiting_history(),
            };
            (kept, m.kept_revision())
        };
        switchboard_domain::confirmations::history::save(path, kept)?;
        self.saved_revision.send_replace(revision);
        Ok(true)
    }

    /// The revision of the mirror last written to the file
    /// ([`ConfirmationMirror::kept_revision`]), watched: what the hub waits for before it
    /// acknowledges an `action.*` message ([`crate::hub::HubParts::confirmations_saved`]).
    /// `None` when nothing is kept in a file (then acknowledged means applied, in memory).
    pub fn saved_watch(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.history
            .as_ref()
            .map(|_| self.saved_revision.subscribe())
    }

    /// Locks the mirror (a poisoned lock is recovered: the mirror is plain data).
    pub fn lock(&self) -> MutexGuard<'_, ConfirmationMirror> {
        lock(&self.mirror)
    }
}

impl App {
    /// Writes the waiting and ended confirmations to their file soon ([`HISTORY_SAVE_DELAY`])
    /// when they changed, off the hub's thread; [`App::shutdown`] writes what is left. Called
    /// for every notice that may have changed a proposal.
    pub(super) fn keep_confirmation_history(self: &Arc<Self>) {
        let c = &self.confirmations;
        if c.history.is_none()
            || c.lock().kept_revision() == *c.saved_revision.borrow()
            || c.save_due.swap(true, Ordering::SeqCst)
        {
            return;
        }
        let app = Arc::downgrade(self);
        self.rt.spawn(async move {
            tokio::time::sleep(HISTORY_SAVE_DELAY).await;
            // A failed write is tried again (the hub holds back the acknowledgements of the
            // `action.*` messages it has not written), a bounded number of times; after that
            // the next change tries again.
            for _ in 0..HISTORY_SAVE_TRIES {
                let Some(app) = app.upgrade() else {
                    return;
                };
                app.confirmations.save_due.store(false, Ordering::SeqCst);
                let saved = tokio::task::spawn_blocking(move || app.save_confirmation_history())
                    .await
                    .unwrap_or(false);
                if saved {
                    return;
                }
                tokio::time::sleep(HISTORY_RETRY_DELAY).await;
            }
        });
    }

    /// Writes the waiting and ended confirmations now when they changed; a failure is logged.
    /// Returns false only when a write failed.
    pub(super) fn save_confirmation_history(&self) -> bool {
        match self.confirmations.save_history() {
            Ok(_) => true,
            Err(e) => {
                tracing::warn!("the confirmations were not kept for the next start: {e}");
                false
            }
        }
    }

    /// Everything the Confirmations view shows: waiting, ended, stray messages.
    pub fn confirmations_snapshot(&self) -> ConfirmationsSnapshot {
        self.confirmations.lock().snapshot()
    }

    /// The autonomy table for `phone` at its autonomy level (`ask_before_action` when unknown).
    ///
    /// # Errors
    /// `invalid_input` for an empty phone name; `not_found` when no tool list is loaded.
    pub fn autonomy_table(&self, phone: &str) -> Result<PhoneAutonomy, IpcError> {
        if phone.trim().is_empty() {
            return Err(IpcError::invalid_input("phone: a phone name is required"));
        }
        let mirror = self.confirmations.lock();
        let (autonomy, autonomy_known) = mirror.autonomy_of(phone);
        let table = mirror.autonomy_table(phone).ok_or_else(|| {
            IpcError::not_found(
                "no OpenPhone tool list is loaded, so the autonomy table cannot be computed",
            )
        })?;
        Ok(PhoneAutonomy {
            phone: phone.to_string(),
            autonomy,
            autonomy_known,
            table,
        })
    }
}

/// Where an unreadable history file `file` is moved: `<file>.unreadable-<at_ms>`.
fn aside_name(file: &std::path::Path, at_ms: u64) -> PathBuf {
    let mut name = file.as_os_str().to_os_string();
    name.push(format!(".unreadable-{at_ms}"));
    PathBuf::from(name)
}
