//! The backoff on failed `pair.request`s, per source address and global.
//!
//! Separate from the window: it lives across windows (opening a new one does not reset it) and
//! decides only whether a request is checked at all, never whether its code is right.

use std::collections::HashMap;
use std::net::IpAddr;

/// First delay a source waits after a failed `pair.request`, ms; it doubles with each further
/// failure from that source, up to [`SOURCE_BACKOFF_MAX_MS`].
pub const SOURCE_BACKOFF_BASE_MS: u64 = 1_000;

/// Longest delay a source waits between two checked `pair.request`s, ms (1 minute).
pub const SOURCE_BACKOFF_MAX_MS: u64 = 60_000;

/// A source's failures are forgotten after this long without one, ms (10 minutes).
pub const SOURCE_FORGET_MS: u64 = 600_000;

/// After any wrong code, no code from any source is checked for this long, ms.
pub const GLOBAL_BACKOFF_MS: u64 = 1_000;

/// Sources whose failures are remembered at once; past it, only the global backoff applies to
/// new sources (so a flood of addresses cannot grow memory without bound).
pub const MAX_TRACKED_SOURCES: usize = 1024;

#[derive(Debug, Clone, Copy)]
struct SourceFailures {
    failures: u32,
    last_ms: u64,
    next_ok_ms: u64,
}

/// The backoff on failed `pair.request`s, per source address and global, in link-clock ms.
///
/// - Per source: after its `n`th failed `pair.request` (no window, expired, wrong code), a
///   source's next request is checked no earlier than `min(1 s * 2^(n-1), 60 s)` later.
/// - Global: after any wrong code, no request from any source is checked for 1 s.
///
/// A request inside a backoff is refused unchecked: it uses none of the window's budget and
/// does not lengthen the backoff. Lives across windows (the person opening a new window does not
/// reset it).
#[derive(Debug, Default)]
pub struct PairingBackoff {
    sources: HashMap<IpAddr, SourceFailures>,
    global_next_ok_ms: u64,
}

impl PairingBackoff {
    /// Whether a `pair.request` from `ip` may be checked at `now_ms`.
    pub fn allows(&self, ip: IpAddr, now_ms: u64) -> bool {
        if now_ms < self.global_next_ok_ms {
            return false;
        }
        self.sources
            .get(&ip)
            .map(|s| now_ms >= s.next_ok_ms || now_ms >= s.last_ms.saturating_add(SOURCE_FORGET_MS))
            .unwrap_or(true)
    }

    /// Records a checked `pair.request` from `ip` that failed at `now_ms`; `wrong_code` also
    /// starts the global backoff.
    pub fn failed(&mut self, ip: IpAddr, now_ms: u64, wrong_code: bool) {
        if wrong_code {
            self.global_next_ok_ms = now_ms.saturating_add(GLOBAL_BACKOFF_MS);
        }
        if !self.sources.contains_key(&ip) && self.sources.len() >= MAX_TRACKED_SOURCES {
            self.sources
                .retain(|_, s| now_ms < s.last_ms.saturating_add(SOURCE_FORGET_MS));
            if self.sources.len() >= MAX_TRACKED_SOURCES {
                return;
            }
        }
        let s = self.sources.entry(ip).or_insert(SourceFailures {
            failures: 0,
            last_ms: now_ms,
            next_ok_ms: now_ms,
        });
        if now_ms >= s.last_ms.saturating_add(SOURCE_FORGET_MS) {
            s.failures = 0;
        }
        s.failures = s.failures.saturating_add(1);
        s.last_ms = now_ms;
        let shift = s.failures.saturating_sub(1).min(16);
        let delay = SOURCE_BACKOFF_BASE_MS
            .saturating_mul(1u64 << shift)
            .min(SOURCE_BACKOFF_MAX_MS);
        s.next_ok_ms = now_ms.saturating_add(delay);
    }

    /// How many sources are remembered now.
    pub fn tracked_sources(&self) -> usize {
        self.sources.len()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn backoff_grows_per_source_and_holds_everyone_for_a_second_after_a_wrong_code() {
        let a: IpAddr = "192.0.2.7".parse().unwrap();
        let b: IpAddr = "192.0.2.8".parse().unwrap();
        let mut g = PairingBackoff::default();
        assert!(g.allows(a, 0));
        g.failed(a, 0, true);
        // Global: nobody for 1 s after a wrong code.
        assert!(!g.allows(b, 999));
        assert!(g.allows(b, 1_000));
        // Per source: 1 s, 2 s, 4 s, ... up to 60 s.
        let mut now = 1_000;
        let mut expected = 2_000;
        for _ in 0..10 {
            assert!(g.allows(a, now));
            g.failed(a, now, false);
            assert!(!g.allows(a, now + expected - 1), "at {now} + {expected}");
            assert!(g.allows(a, now + expected));
            now += expected;
            expected = (expected * 2).min(SOURCE_BACKOFF_MAX_MS);
        }
        assert_eq!(expected, SOURCE_BACKOFF_MAX_MS);
        // Another source is not slowed by a's failures once the global second is over.
        assert!(g.allows(b, now));
        // Forgotten after 10 quiet minutes: back to 1 s.
        let later = now + SOURCE_FORGET_MS;
        g.failed(a, later, false);
        assert!(g.allows(a, later + SOURCE_BACKOFF_BASE_MS));
    }

    #[test]
    fn backoff_memory_is_bounded() {
        let mut g = PairingBackoff::default();
        for i in 0..(MAX_TRACKED_SOURCES as u32 + 100) {
            g.failed(
                IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + i)),
                5,
                false,
            );
        }
        assert_eq!(g.tracked_sources(), MAX_TRACKED_SOURCES);
        // Once the old ones are forgotten, new sources are tracked again.
        let fresh = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));
        g.failed(fresh, 5 + SOURCE_FORGET_MS, false);
        assert_eq!(g.tracked_sources(), 1);
        assert!(!g.allows(fresh, 5 + SOURCE_FORGET_MS));
    }
}
