//! Locking std mutexes without panicking: the one place that decides what a poisoned lock means.
//!
//! A mutex is poisoned when a thread panicked while holding it. Switchboard's shared state is
//! plain data (stores, mirrors, settings) that stays consistent between statements, so a poisoned
//! lock is recovered and used as is rather than turned into a panic (`unwrap`/`expect` are denied
//! anyway).

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, recovering the guard when a previous holder panicked (the data is kept as that
/// holder left it). Never panics, never fails.
pub fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_poisoned_lock_is_recovered_with_its_data() {
        let m = Arc::new(Mutex::new(1));
        let m2 = Arc::clone(&m);
        let _ = std::thread::spawn(move || {
            let mut g = m2.lock().unwrap();
            *g = 2;
            panic!("poison it");
        })
        .join();
        assert!(m.is_poisoned());
        assert_eq!(*lock(&m), 2);
        *lock(&m) = 3;
        assert_eq!(*lock(&m), 3);
    }
}
