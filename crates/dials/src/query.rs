//! Filters, pages and per-op statistics over dials.
//!
//! The same code answers queries on the live [`super::DialLog`] ring and on an
//! [`super::ImportedLog`] read from a JSON Lines file, so a window shows an exported file exactly
//! as it showed the live log. The slow threshold is the one second of `phone-line.md`, "Good
//! neighbour notes"; outcomes are [`DialOutcome`].
//!
//! ## Percentiles
//! `p50`, `p95` and `p99` use the **nearest-rank** method: sort the `n` durations ascending; the
//! `p`-th percentile is the value at 1-based rank `ceil(p / 100 * n)` (rank 1 when that is 0).
//! It is always one of the measured durations, never an interpolation. Example: durations
//! `[10, 20, 30, 40]` give p50 = rank 2 = 20, p95 = rank 4 = 40.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::record::{Dial, DialOutcome, SLOW_DIAL_MS};

/// Which dials to show. Every set field must match (AND); unset fields match everything.
///
/// Results are newest first: by arrival in the log (latest first), as the history and the window
/// order them, so a phone whose clock is wrong does not move its dials in the list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(default)]
#[ts(export)]
pub struct DialFilter {
    /// Only dials reported by this phone (`device` id, exact).
    #[ts(optional)]
    pub phone: Option<String>,
    /// Only dials by this caller extension id (exact).
    #[ts(optional)]
    pub caller: Option<String>,
    /// Only dials to this callee extension id (exact).
    #[ts(optional)]
    pub callee: Option<String>,
    /// Only this op (exact).
    #[ts(optional)]
    pub op: Option<String>,
    /// Only this outcome.
    #[ts(optional)]
    pub outcome: Option<DialOutcome>,
    /// `true`: only slow dials (over one second); `false`: only dials of one second or less.
    #[ts(optional)]
    pub slow: Option<bool>,
    /// `true`: only timed-out dials; `false`: all but timed-out dials.
    #[ts(optional)]
    pub timed_out: Option<bool>,
    /// `true`: only dials that follow `phone-line.md`; `false`: only dials that break it
    /// ("not to spec only": [`Dial::spec_findings`] above 0).
    #[ts(optional)]
    pub to_spec: Option<bool>,
    /// Case-insensitive substring of the request, response or error text. Request and response
    /// are searched as their compact JSON text, so a quote inside a string value is `\"` there.
    #[ts(optional)]
    pub text: Option<String>,
    /// Only dials that started at or after this time (epoch ms).
    #[ts(optional, type = "number")]
    pub from_ms: Option<i64>,
    /// Only dials that started before this time (epoch ms, exclusive).
    #[ts(optional, type = "number")]
    pub to_ms: Option<i64>,
    /// At most this many dials in a page (all when unset). Ignored by stats.
    #[ts(optional, type = "number")]
    pub limit: Option<u64>,
    /// Skip this many matching dials first (newest first). Ignored by stats.
    #[ts(optional, type = "number")]
    pub offset: Option<u64>,
}

/// A filter made ready to test many dials: the search text lowered once.
pub(crate) struct Matcher<'a> {
    filter: &'a DialFilter,
    needle: Option<Needle>,
}

enum Needle {
    /// ASCII needle, lowercase: compared with ASCII case folding, no allocation.
    Ascii(Vec<u8>),
    /// Non-ASCII needle, lowercase: haystacks are lowered with Unicode rules.
    Unicode(String),
}

impl<'a> Matcher<'a> {
    pub(crate) fn new(filter: &'a DialFilter) -> Self {
        let needle = filter.text.as_deref().filter(|t| !t.is_empty()).map(|t| {
            if t.is_ascii() {
                Needle::Ascii(t.to_ascii_lowercase().into_bytes())
            } else {
                Needle::Unicode(t.to_lowercase())
            }
        });
        Self { filter, needle }
    }

    pub(crate) fn matches(&self, d: &Dial) -> bool {
        let f = self.filter;
        if let Some(p) = &f.phone {
            if *d.phone != **p {
                return false;
            }
        }
        if let Some(c) = &f.caller {
            if *d.caller != **c {
                return false;
            }
        }
        if let Some(c) = &f.callee {
            if *d.callee != **c {
                return false;
            }
        }
        if let Some(op) = &f.op {
            if *d.op != **op {
                return false;
            }
        }
        if let Some(o) = f.outcome {
            if d.outcome != o {
                return false;
            }
        }
        if let Some(slow) = f.slow {
            if (d.duration_ms > SLOW_DIAL_MS) != slow {
                return false;
            }
        }
        if let Some(t) = f.timed_out {
            if (d.outcome == DialOutcome::TimedOut) != t {
                return false;
            }
        }
        if let Some(to_spec) = f.to_spec {
            if (d.spec_findings() == 0) != to_spec {
                return false;
            }
        }
        if let Some(from) = f.from_ms {
            if d.start_ms < from {
                return false;
            }
        }
        if let Some(to) = f.to_ms {
            if d.start_ms >= to {
                return false;
            }
        }
        match &self.needle {
            None => true,
            Some(n) => {
                n.found_in(d.request.as_str())
                    || d.response.as_ref().is_some_and(|r| n.found_in(r.as_str()))
                    || d.error.as_deref().is_some_and(|e| n.found_in(e))
            }
        }
    }
}

impl Needle {
    fn found_in(&self, hay: &str) -> bool {
        match self {
            Needle::Ascii(n) => contains_ascii_ci(hay.as_bytes(), n),
            Needle::Unicode(n) => hay.to_lowercase().contains(n.as_str()),
        }
    }
}

/// Whether `hay` contains `needle` (lowercase ASCII), ignoring ASCII case. Non-ASCII bytes of
/// `hay` never match an ASCII needle byte, so this is exact for ASCII needles.
///
/// Candidates are found with `memchr` on the needle byte least likely in JSON text (see
/// [`byte_commonness`]), in both cases for letters, then the whole window is compared.
pub(crate) fn contains_ascii_ci(hay: &[u8], needle: &[u8]) -> bool {
    if needle.is_empty() {
        return true;
    }
    if hay.len() < needle.len() {
        return false;
    }
    let (k, anchor) = needle
        .iter()
        .copied()
        .enumerate()
        .min_by_key(|&(i, b)| (byte_commonness(b), std::cmp::Reverse(i)))
        .unwrap_or((0, 0));
    let last_start = hay.len() - needle.len();
    let Some(search) = hay.get(k..=last_start + k) else {
        return false;
    };
    let at = |start: usize| {
        hay.get(start..start + needle.len())
            .is_some_and(|w| w.eq_ignore_ascii_case(needle))
    };
    let (lo, up) = (anchor.to_ascii_lowercase(), anchor.to_ascii_uppercase());
    if lo == up {
        memchr::memchr_iter(lo, search).any(at)
    } else {
        memchr::memchr2_iter(lo, up, search).any(at)
    }
}

/// A rough rank of how common a byte is in compact JSON text (higher is more common).
fn byte_commonness(b: u8) -> u8 {
    match b {
        b'"' | b':' | b',' | b' ' | b'{' | b'}' => 5,
        b'e' | b't' | b'a' | b'o' | b'i' | b'n' | b's' | b'r' | b'l' | b'd' => 4,
        b'a'..=b'z' => 3,
        b'0'..=b'9' => 2,
        _ => 1,
    }
}

/// One page of a query: `{ dials, total }`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct DialPage {
    /// The matching dials after `offset`, at most `limit`, newest first.
    pub dials: Vec<Arc<Dial>>,
    /// How many dials matched the filter in all (before `limit` and `offset`).
    #[ts(type = "number")]
    pub total: u64,
}

/// Runs `filter` over dials given in arrival order (oldest first) and returns a page, newest
/// arrival first.
pub(crate) fn run_query<'d, I>(dials: I, filter: &DialFilter) -> DialPage
where
    I: DoubleEndedIterator<Item = &'d Arc<Dial>>,
{
    let m = Matcher::new(filter);
    let hits: Vec<&Arc<Dial>> = dials.rev().filter(|d| m.matches(d)).collect();
    let total = hits.len() as u64;
    let offset = usize::try_from(filter.offset.unwrap_or(0)).unwrap_or(usize::MAX);
    let limit = filter
        .limit
        .map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
    let dials = hits
        .into_iter()
        .skip(offset)
        .take(limit)
        .map(Arc::clone)
        .collect();
    DialPage { dials, total }
}

/// Statistics for one op over the dials a filter matched.
///
/// Durations in milliseconds; percentiles by nearest rank (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct OpStats {
    /// The op.
    pub op: String,
    /// Dials of this op.
    #[ts(type = "number")]
    pub count: u64,
    /// Dials with outcome `ok`.
    #[ts(type = "number")]
    pub ok: u64,
    /// Dials with outcome `tool_error`.
    #[ts(type = "number")]
    pub tool_errors: u64,
    /// Dials with outcome `error`.
    #[ts(type = "number")]
    pub errors: u64,
    /// Dials with outcome `timed_out`.
    #[ts(type = "number")]
    pub timed_out: u64,
    /// Slow dials (over one second).
    #[ts(type = "number")]
    pub slow: u64,
    /// Dials that break `phone-line.md` ([`Dial::spec_findings`] above 0).
    #[ts(type = "number")]
    pub not_to_spec: u64,
    /// Share of dials that did not end `ok` (`tool_error`, `error` or `timed_out`): 0.0 to 1.0.
    pub error_rate: f64,
    /// Median duration (nearest rank), ms.
    #[ts(type = "number")]
    pub p50_ms: u64,
    /// 95th percentile duration (nearest rank), ms.
    #[ts(type = "number")]
    pub p95_ms: u64,
    /// 99th percentile duration (nearest rank), ms.
    #[ts(type = "number")]
    pub p99_ms: u64,
    /// Longest duration, ms.
    #[ts(type = "number")]
    pub max_ms: u64,
}

/// The nearest-rank `p`-th percentile of ascending `sorted` durations (0 when empty).
pub fn nearest_rank(sorted: &[u64], p: u32) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let n = sorted.len() as u64;
    // ceil(p * n / 100) in integers, at least rank 1.
    let rank = (u64::from(p) * n).div_ceil(100).clamp(1, n);
    let idx = usize::try_from(rank - 1).unwrap_or(0);
    sorted.get(idx).copied().unwrap_or(0)
}

/// Per-op stats gathered one dial at a time ([`OpStats`] once finished): durations, outcome
/// counts, slow dials and dials not to spec per op. Used over the ring ([`run_stats`]) and over
/// the whole history (`DialLogHandle::history_stats`, which feeds it SQLite's columns).
#[derive(Debug, Clone, Default)]
pub struct StatsTally {
    /// op -> (durations ms, outcome counts in [`DialOutcome::ALL`] order, slow, not to spec).
    by_op: BTreeMap<String, (Vec<u64>, [u64; 4], u64, u64)>,
    dials: u64,
}

impl StatsTally {
    /// Counts one dial: its op, outcome, duration (ms) and whether it breaks the spec.
    pub fn add(&mut self, op: &str, outcome: DialOutcome, duration_ms: u64, not_to_spec: bool) {
        let e = match self.by_op.get_mut(op) {
            Some(e) => e,
            None => self.by_op.entry(op.to_owned()).or_default(),
        };
        e.0.push(duration_ms);
        let slot = DialOutcome::ALL
            .iter()
            .position(|o| *o == outcome)
            .unwrap_or(0);
        if let Some(c) = e.1.get_mut(slot) {
            *c += 1;
        }
        if duration_ms > SLOW_DIAL_MS {
            e.2 += 1;
        }
        if not_to_spec {
            e.3 += 1;
        }
        self.dials += 1;
    }

    /// Counts one dial record.
    pub fn add_dial(&mut self, d: &Dial) {
        self.add(&d.op, d.outcome, d.duration_ms, d.spec_findings() > 0);
    }

    /// Dials counted so far.
    pub fn dials(&self) -> u64 {
        self.dials
    }

    /// Adds another tally's dials.
    pub fn merge(&mut self, other: StatsTally) {
        for (op, (durs, counts, slow, spec)) in other.by_op {
            let e = self.by_op.entry(op).or_default();
            e.0.extend(durs);
            for (a, b) in e.1.iter_mut().zip(counts) {
                *a += b;
            }
            e.2 += slow;
            e.3 += spec;
        }
        self.dials += other.dials;
    }

    /// The stats per op, sorted by op (percentiles by nearest rank).
    pub fn finish(self) -> Vec<OpStats> {
        self.by_op
            .into_iter()
            .map(|(op, (mut durs, counts, slow, not_to_spec))| {
                durs.sort_unstable();
                let count = durs.len() as u64;
                let [ok, tool_errors, errors, timed_out] = counts;
                OpStats {
                    op,
                    count,
                    ok,
                    tool_errors,
                    errors,
                    timed_out,
                    slow,
                    not_to_spec,
                    error_rate: if count == 0 {
                        0.0
                    } else {
                        (count - ok) as f64 / count as f64
                    },
                    p50_ms: nearest_rank(&durs, 50),
                    p95_ms: nearest_rank(&durs, 95),
                    p99_ms: nearest_rank(&durs, 99),
                    max_ms: durs.last().copied().unwrap_or(0),
                }
            })
            .collect()
    }
}

/// Per-op stats over the dials `filter` matches (`limit` and `offset` ignored), sorted by op.
pub(crate) fn run_stats<'d, I>(dials: I, filter: &DialFilter) -> Vec<OpStats>
where
    I: Iterator<Item = &'d Arc<Dial>>,
{
    let m = Matcher::new(filter);
    let mut tally = StatsTally::default();
    for d in dials.filter(|d| m.matches(d)) {
        tally.add_dial(d);
    }
    tally.finish()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn nearest_rank_by_hand() {
        assert_eq!(nearest_rank(&[], 50), 0);
        assert_eq!(nearest_rank(&[7], 99), 7);
        assert_eq!(nearest_rank(&[10, 20, 30, 40], 50), 20);
        assert_eq!(nearest_rank(&[10, 20, 30, 40], 95), 40);
        let hundred: Vec<u64> = (1..=100).collect();
        assert_eq!(nearest_rank(&hundred, 50), 50);
        assert_eq!(nearest_rank(&hundred, 95), 95);
        assert_eq!(nearest_rank(&hundred, 99), 99);
        assert_eq!(nearest_rank(&hundred, 0), 1);
    }

    #[test]
    fn ascii_case_insensitive_search() {
        assert!(contains_ascii_ci(b"Hello World", b"world"));
        assert!(contains_ascii_ci(b"xHELLO", b"hello"));
        assert!(!contains_ascii_ci(b"hell", b"hello"));
        assert!(contains_ascii_ci(b"caf\xc3\xa9 Bar", b"bar"));
        assert!(contains_ascii_ci(b"", b""));
        assert!(contains_ascii_ci(
            b"\"itemId\":\"ITEM_004242\"",
            b"item_004242"
        ));
        assert!(!contains_ascii_ci(
            b"\"itemId\":\"ITEM_004243\"",
            b"item_004242"
        ));
        assert!(contains_ascii_ci(b"x_y", b"x_y"));
        assert!(!contains_ascii_ci(b"x_", b"x_y"));
        assert!(contains_ascii_ci(b"ab", b"b"));
    }

    proptest::proptest! {
        #[test]
        fn ascii_search_agrees_with_lowercase_contains(
            hay in "[aAbB_1\" :é]{0,40}",
            needle in "[aAbB_1\" :]{1,5}",
        ) {
            let expected = hay.to_ascii_lowercase().contains(&needle.to_ascii_lowercase());
            let got = contains_ascii_ci(hay.as_bytes(), needle.to_ascii_lowercase().as_bytes());
            proptest::prop_assert_eq!(got, expected);
        }
    }
}
