//! The one source of wall-clock time: state machines take a [`Clock`] (or a `now_ms` argument)
//! instead of reading the system time themselves, so tests drive time with a [`ManualClock`]
//! (`docs/ARCHITECTURE.md`, "Time is passed into state machines").
//!
//! Measuring durations and timeouts inside async loops (`Instant::now()`) is not wall-clock time
//! and stays where it is.

use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};

/// A source of wall-clock time in milliseconds since the Unix epoch (swappable for tests).
pub trait Clock: Send + Sync + Debug {
    /// Now, in milliseconds since 1970-01-01T00:00:00Z (UTC).
    fn now_ms(&self) -> u64;

    /// [`Clock::now_ms`] as an `i64` (saturating at `i64::MAX`), for stores and records that
    /// keep epoch milliseconds signed (SQLite, `decidedAt`).
    fn now_ms_i64(&self) -> i64 {
        i64::try_from(self.now_ms()).unwrap_or(i64::MAX)
    }
}

/// The system clock: `SystemTime::now()` in epoch milliseconds; 0 when the system time is before
/// 1970, `u64::MAX` past the year 584 million.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0)
    }
}

/// A clock that only moves when told to (tests of expiry, stamps and ordering).
#[derive(Debug, Default)]
pub struct ManualClock {
    now: AtomicU64,
}

impl ManualClock {
    /// A clock reading `start_ms` (epoch milliseconds).
    pub fn new(start_ms: u64) -> Self {
        Self {
            now: AtomicU64::new(start_ms),
        }
    }

    /// Moves the clock forward by `ms` milliseconds (saturating at `u64::MAX`).
    pub fn advance(&self, ms: u64) {
        let _ = self
            .now
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                Some(n.saturating_add(ms))
            });
    }

    /// Sets the clock to `ms` (epoch milliseconds), forward or back.
    pub fn set(&self, ms: u64) {
        self.now.store(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(1_000);
        assert_eq!(c.now_ms(), 1_000);
        c.advance(500);
        assert_eq!(c.now_ms(), 1_500);
        c.set(42);
        assert_eq!(c.now_ms(), 42);
        c.set(u64::MAX - 1);
        c.advance(10);
        assert_eq!(c.now_ms(), u64::MAX);
    }

    #[test]
    fn system_clock_is_after_2020() {
        assert!(SystemClock.now_ms() > 1_577_836_800_000);
    }
}
