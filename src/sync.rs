//! Locks whose poisoning is recovered: every mutex in Switchboard guards plain data that stays
//! consistent between statements, so a panic elsewhere never makes it unusable.

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, recovering the guard when another thread panicked while holding it.
pub fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
