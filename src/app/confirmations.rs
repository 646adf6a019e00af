//! The Confirmations view: the mirror of every proposal seen from every phone, and the
//! autonomy table of a phone ("what this phone will ask you to confirm").
//!
//! There is deliberately no way here to approve, decline or cancel anything: the person
//! confirms on the phone (`ifp1-notes.md`, "Action lifecycle (confirmation is local to the
//! surface)"). The hub feeds the same mirror (`Arc`) and sets each phone's autonomy in it.

use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;
use ts_rs::TS;

use super::App;
use crate::confirmations::{ConfirmationMirror, ConfirmationsSnapshot};
use crate::error::IpcError;
use crate::runtime::{Autonomy, AutonomyTable};
use crate::sync::lock;

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

/// The Confirmations view's state: the mirror the hub feeds (the hub is given the same `Arc`).
#[derive(Debug)]
pub struct ConfirmationsState {
    /// The mirror of every proposal seen from every phone.
    pub mirror: Arc<Mutex<ConfirmationMirror>>,
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
        Self {
            mirror: Arc::new(Mutex::new(mirror)),
        }
    }

    /// Locks the mirror (a poisoned lock is recovered: the mirror is plain data).
    pub fn lock(&self) -> MutexGuard<'_, ConfirmationMirror> {
        lock(&self.mirror)
    }
}

impl App {
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
