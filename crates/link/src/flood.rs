//! Coalescing of failures before hello, so a flood of failed connections costs a few log lines
//! and events a minute instead of one per attempt.
//!
//! Why a file of its own: anyone on the network can fail a TLS handshake, send garbage or a
//! wrong hello as fast as they can connect; [`super::shared::Shared`] passes those failures
//! through a [`FloodGate`] and keeps them apart from the real ones (after hello, key store,
//! mDNS, trust file), so they never push a real failure out of the diagnostics.
//! `docs/protocol.md`, "Diagnostics".
//!
//! Rules (link-clock milliseconds, minute buckets per source address):
//! - the first failure of a source in its minute is logged and sent as a failure event; the
//!   rest of that minute only count;
//! - the first failure after the minute carries the count of the minute before
//!   ("1 234 failed attempts from 192.0.2.7 in the last minute; ...");
//! - at most [`MAX_REPORTS_PER_MINUTE`] such reports a minute in total, whatever the number of
//!   sources; what is left out is counted and reported with the next minute's first report;
//! - at most [`MAX_FLOOD_SOURCES`] sources are counted one by one.

use std::collections::HashMap;
use std::net::IpAddr;

/// The length of a counting bucket, ms.
pub(super) const FLOOD_WINDOW_MS: u64 = 60_000;

/// Most pre-hello failure reports (log lines, events) a minute, all sources together.
pub(super) const MAX_REPORTS_PER_MINUTE: u32 = 20;

/// Most sources counted one by one; past it new sources count only in the global total.
pub(super) const MAX_FLOOD_SOURCES: usize = 1024;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    since_ms: u64,
    count: u64,
}

/// What the gate says about one failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Admission {
    /// Log it and send it as an event.
    pub(super) report: bool,
    /// Failures of this source in its previous minute, when that minute had more than one
    /// (reported with this one).
    pub(super) previous_minute: Option<u64>,
    /// Failures of this source in its current minute, this one included.
    pub(super) this_minute: u64,
    /// Failures (of any source) left unreported in the global minute before, when there were
    /// any (reported with this one).
    pub(super) unreported_before: Option<u64>,
}

/// Counts pre-hello failures per source and decides which ones are reported.
#[derive(Debug, Default)]
pub(super) struct FloodGate {
    sources: HashMap<Option<IpAddr>, Bucket>,
    global_since_ms: u64,
    global_reports: u32,
    global_unreported: u64,
    carried_unreported: u64,
}

impl FloodGate {
    /// Counts one failure from `source` at `now_ms`.
    pub(super) fn admit(&mut self, source: Option<IpAddr>, now_ms: u64) -> Admission {
        if now_ms >= self.global_since_ms.saturating_add(FLOOD_WINDOW_MS) {
            self.carried_unreported = self
                .carried_unreported
                .saturating_add(self.global_unreported);
            self.global_since_ms = now_ms;
            self.global_reports = 0;
            self.global_unreported = 0;
        }
        if !self.sources.contains_key(&source) && self.sources.len() >= MAX_FLOOD_SOURCES {
            self.sources
                .retain(|_, b| now_ms < b.since_ms.saturating_add(FLOOD_WINDOW_MS));
        }
        let tracked = self.sources.contains_key(&source) || self.sources.len() < MAX_FLOOD_SOURCES;
        let (previous_minute, this_minute, first) = if tracked {
            let b = self.sources.entry(source).or_insert(Bucket {
                since_ms: now_ms,
                count: 0,
            });
            let mut previous = None;
            if now_ms >= b.since_ms.saturating_add(FLOOD_WINDOW_MS) {
                previous = (b.count > 1).then_some(b.count);
                *b = Bucket {
                    since_ms: now_ms,
                    count: 0,
                };
            }
            b.count = b.count.saturating_add(1);
            (previous, b.count, b.count == 1)
        } else {
            // Too many sources at once: counted only against the global cap.
            (None, 1, true)
        };
        if first && self.global_reports < MAX_REPORTS_PER_MINUTE {
            self.global_reports += 1;
            let carried = std::mem::take(&mut self.carried_unreported);
            return Admission {
                report: true,
                previous_minute,
                this_minute,
                unreported_before: (carried > 0).then_some(carried),
            };
        }
        if first {
            self.global_unreported = self.global_unreported.saturating_add(1);
            if let Some(p) = previous_minute {
                // Its count is not lost: it goes with the next report.
                self.carried_unreported = self.carried_unreported.saturating_add(p);
            }
        }
        Admission {
            report: false,
            previous_minute: None,
            this_minute,
            unreported_before: None,
        }
    }
}

/// `n` with a space every three digits: `1 234 567`.
pub(super) fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn ip(n: u8) -> Option<IpAddr> {
        Some(IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, n)))
    }

    #[test]
    fn one_report_per_source_per_minute_then_the_count() {
        let mut g = FloodGate::default();
        let first = g.admit(ip(7), 0);
        assert!(first.report);
        assert_eq!(first.previous_minute, None);
        let mut reports = 0;
        for i in 1..1234u64 {
            let a = g.admit(ip(7), i * 10);
            assert_eq!(a.this_minute, i + 1);
            reports += u32::from(a.report);
        }
        assert_eq!(reports, 0);
        let next = g.admit(ip(7), FLOOD_WINDOW_MS);
        assert!(next.report);
        assert_eq!(next.previous_minute, Some(1234));
        assert_eq!(next.this_minute, 1);
    }

    #[test]
    fn many_sources_share_a_global_cap_and_nothing_is_lost() {
        let mut g = FloodGate::default();
        let mut reports = 0;
        for n in 0..100u8 {
            reports += u32::from(g.admit(ip(n), 5).report);
        }
        assert_eq!(reports, MAX_REPORTS_PER_MINUTE);
        let next = g.admit(ip(200), FLOOD_WINDOW_MS + 5);
        assert!(next.report);
        assert_eq!(
            next.unreported_before,
            Some(100 - u64::from(MAX_REPORTS_PER_MINUTE))
        );
    }

    #[test]
    fn source_memory_is_bounded() {
        let mut g = FloodGate::default();
        for n in 0..(MAX_FLOOD_SOURCES as u32 + 50) {
            let a = IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + n));
            let _ = g.admit(Some(a), 1);
        }
        assert_eq!(g.sources.len(), MAX_FLOOD_SOURCES);
    }

    #[test]
    fn grouping() {
        assert_eq!(grouped(7), "7");
        assert_eq!(grouped(1234), "1 234");
        assert_eq!(grouped(1_234_567), "1 234 567");
        assert_eq!(grouped(123_456), "123 456");
    }
}
