//! The bridge-status store: keeps the current banners in step with the results of calls.
//!
//! Why it exists: a banner must be driven by actual call outcomes and must not go stale
//! (spec `phone-line.md`, "Failure modes and the bridge banner": "Clear stale warnings when a
//! later result no longer reports an actionable permission failure"; "A successful probe
//! doesn't prove that LumiAgent can call your own handler"; "Filtering a warning doesn't turn a
//! failed RPC into a successful call").
//!
//! Rules, per phone and [`CallPath`] (the phone's device id, the caller and the called
//! endpoint): two phones are two hosts, so one phone's results never raise, repeat or clear
//! another phone's banners.
//! - an actionable permission failure raises a banner; the identical failure again only moves
//!   its `last_seen_ms` and `count`; a different actionable failure supersedes it (the old one
//!   goes to history);
//! - a later successful call on the same path clears the banner (to history, reason
//!   `call_succeeded`); a success on another path (e.g. the probe) leaves it alone;
//! - a later failure on the same path that is not an actionable permission failure (another
//!   kind of error, or a permission failure with nothing grantable) never invents a banner: it
//!   leaves a diagnostic, and — as the spec's "clear stale warnings" asks — retires the path's
//!   banner to history (reason `no_longer_actionable`);
//! - identical diagnostics (same phone, path and text) update `last_seen_ms` and `count`.
//!
//! Results that come as snapshots (a phone's settings repeat the last `describe` of each line)
//! go through [`BridgeStatusStore::record_if_newer`]: applied only when newer than every result
//! the store has seen on that phone and path, so a repeated or older snapshot changes nothing.
//!
//! For the dial inspector the store remembers, per phone and dial id, what a dial's result did
//! ([`BridgeStatusStore::remember_dial`], [`BridgeStatusStore::dial_judgement`]): the banner it
//! raised or repeated, or why it raised none.
//!
//! Timestamps are epoch milliseconds passed in by the caller; the store reads no clock.
//! Everything is bounded: at most [`MAX_BANNERS`] current banners, [`HISTORY_CAP`] retired
//! ones, [`DIAGNOSTICS_CAP`] diagnostics, [`MAX_LATEST`] paths' latest result times and
//! [`MAX_DIAL_JUDGEMENTS`] dials' judgements, the least recently seen (or oldest) dropped first.

use std::collections::VecDeque;
use std::sync::Arc;

// Looked up for every dial a phone reports (its path's latest result, its judgement): a fast
// hash, seeded for each process as the dial log's sets are.
use foldhash::HashMap;

use serde::Serialize;
use ts_rs::TS;

use super::{derive_banner, Banner, CallPath, Derived, ExtensionDirectory};
use crate::host_error::{self, HostError};

/// Most current banners kept (one per phone and path); past it the least recently seen is
/// retired with reason `evicted`.
pub const MAX_BANNERS: usize = 64;
/// Most retired banners kept in history; past it the oldest retired is dropped.
pub const HISTORY_CAP: usize = 100;
/// Most diagnostics kept; past it the least recently seen is dropped.
pub const DIAGNOSTICS_CAP: usize = 100;
/// Most (phone, path) latest-result times kept for [`BridgeStatusStore::record_if_newer`];
/// past it the oldest is forgotten.
pub const MAX_LATEST: usize = 1024;
/// Most dial judgements kept for the dial inspector; past it the oldest is forgotten (the
/// inspector then derives the banner from the error text and says so).
pub const MAX_DIAL_JUDGEMENTS: usize = 4096;

/// Most failure judgements kept for reuse ([`BridgeStatusStore::record_failure`]): a few
/// lines failing by turns each keep theirs.
const JUDGED_KEPT: usize = 8;

/// Most bytes of failure text the judgements kept hold, the newest apart (it is always kept,
/// whatever its size): a peer's long texts cannot make the store hold much more than one.
const JUDGED_TEXT_BYTES: usize = 64 * 1024;

/// Why a banner left the current list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum RetireReason {
    /// A later call on the same path succeeded.
    CallSucceeded,
    /// A later, different actionable permission failure on the same path replaced it.
    Superseded,
    /// A later failure on the same path no longer reported an actionable permission failure.
    NoLongerActionable,
    /// Dropped to keep at most [`MAX_BANNERS`] current.
    Evicted,
}

/// A banner that is no longer current.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct RetiredBanner {
    /// The banner as it last stood.
    pub banner: Banner,
    /// When it was retired, epoch milliseconds.
    #[ts(type = "number")]
    pub retired_at_ms: u64,
    /// Why.
    pub reason: RetireReason,
}

/// Why a failure left a diagnostic instead of a banner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum DiagnosticReason {
    /// The error is not a permission failure.
    NotPermission,
    /// A permission failure, but none of its permissions is declared by the missing
    /// extension's manifest, so none can be granted.
    NothingGrantable,
}

/// A failed call that raised no banner (spec: "Enable Debug logging to inspect other
/// failures").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct Diagnostic {
    /// The device id of the phone that reported the call; empty when no phone did (a demo
    /// file's entry without one).
    pub phone: String,
    /// The call that failed.
    pub path: CallPath,
    /// Why it gave no banner.
    pub reason: DiagnosticReason,
    /// The classified error (its `text` is the latest occurrence).
    pub error: HostError,
    /// For [`DiagnosticReason::NothingGrantable`]: the permissions that cannot be granted.
    pub not_grantable: Vec<String>,
    /// First seen, epoch milliseconds.
    #[ts(type = "number")]
    pub first_seen_ms: u64,
    /// Last seen, epoch milliseconds.
    #[ts(type = "number")]
    pub last_seen_ms: u64,
    /// Times seen (>= 1).
    #[ts(type = "number")]
    pub count: u64,
}

/// Everything the UI shows of the bridge status, as one serialisable value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct BridgeSnapshot {
    /// Current banners, in the order first raised (each names its phone).
    pub banners: Vec<Banner>,
    /// Retired banners, oldest retired first (at most [`HISTORY_CAP`]).
    pub history: Vec<RetiredBanner>,
    /// Failures without a banner, in the order first seen (at most [`DIAGNOSTICS_CAP`]).
    pub diagnostics: Vec<Diagnostic>,
}

/// What [`BridgeStatusStore::record_failure`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureRecorded {
    /// A new banner was raised for the path (any earlier, different one was superseded).
    BannerRaised,
    /// The path's banner was the same failure: its last seen and count moved.
    BannerRepeated,
    /// No banner, for this reason: a diagnostic was added or repeated (and the path's banner,
    /// if any, retired).
    Diagnostic(DiagnosticReason),
}

/// What one dial's result did to the bridge status, as the dial inspector is told
/// ([`BridgeStatusStore::dial_judgement`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DialJudgement {
    /// The dial raised or repeated this banner: as it stands now while current or in history,
    /// else as it stood when the store forgot it.
    Banner(Box<Banner>),
    /// The dial raised no banner, for this reason (it left a diagnostic).
    NoBanner(DiagnosticReason),
}

/// What the store keeps of one dial's result ([`BridgeStatusStore::remember_dial`]): the
/// serial of the banner it raised or repeated, or why it raised none. A number, not a copy of
/// the banner: a phone reports dials by the thousand a second, and the banner itself is kept
/// once (current, in history, or set aside while a kept dial still names it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DialMark {
    /// The dial raised or repeated the banner with this [`Banner::serial`].
    Banner(u64),
    /// The dial raised no banner, for this reason (it left a diagnostic).
    NoBanner(DiagnosticReason),
}

/// Where a banner raised by the store stands now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case", tag = "state")]
#[ts(export)]
pub enum BannerStanding {
    /// Still current in the Bridge view.
    Current,
    /// Retired to history.
    Retired {
        /// Why.
        reason: RetireReason,
        /// When, epoch milliseconds.
        #[ts(type = "number")]
        at_ms: u64,
    },
    /// No longer current and no longer in the (bounded) history.
    Forgotten,
}

type Key = (String, CallPath);
type DialKey = (Arc<str>, Arc<str>);

/// Keeps the bridge banners current from call results. See the module docs for the rules.
#[derive(Debug, Clone, Default)]
pub struct BridgeStatusStore {
    banners: Vec<Banner>,
    history: VecDeque<RetiredBanner>,
    diagnostics: VecDeque<Diagnostic>,
    next_serial: u64,
    /// Phone -> path -> time: looked up from borrowed names (every dial touches it).
    latest: HashMap<String, HashMap<CallPath, u64>>,
    latest_order: VecDeque<Key>,
    /// (phone, dial id) -> what the dial did, oldest first in `dial_order`.
    dials: HashMap<DialKey, DialMark>,
    dial_order: VecDeque<DialKey>,
    /// Banner serial -> how many kept dial marks name it.
    marked: HashMap<u64, u32>,
    /// Banners that left the history while a kept dial mark still named them, by serial
    /// (dropped with the last mark naming them).
    forgotten: HashMap<u64, Banner>,
    /// How many times what the Bridge status view shows changed ([`BridgeStatusStore::changes`]).
    changes: u64,
    /// The failures judged lately, newest first ([`BridgeStatusStore::record_failure`];
    /// at most [`JUDGED_KEPT`], [`JUDGED_TEXT_BYTES`] of text besides the newest).
    judged: VecDeque<Judged>,
}

/// A failure text as [`BridgeStatusStore::record_failure`] last judged it: on which path, with
/// which manifests ([`ExtensionDirectory::stamp`]), the parsed error and what it gave (a
/// banner's times are those of each use, not these).
#[derive(Debug, Clone)]
struct Judged {
    path: CallPath,
    stamp: u64,
    error: HostError,
    derived: Derived,
}

impl BridgeStatusStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a failed call of phone `phone` (device id; empty: no phone) on `path` that
    /// returned `error_text`, at `at_ms` (epoch milliseconds), judging grantability with `dir`.
    pub fn record_failure(
        &mut self,
        phone: &str,
        path: &CallPath,
        error_text: &str,
        at_ms: u64,
        dir: &ExtensionDirectory,
    ) -> FailureRecorded {
        // A failure always changes the view: a banner raised or seen again, or a diagnostic.
        self.changes = self.changes.wrapping_add(1);
        self.touch_latest(phone, path, at_ms);
        // The same text on the same path with the same manifests is judged the same way: a
        // failing line fails with one text again and again, so the latest judgements are kept.
        let stamp = dir.stamp();
        let kept = self
            .judged
            .iter()
            .position(|j| j.stamp == stamp && j.path == *path && j.error.text == error_text)
            .and_then(|i| self.judged.remove(i));
        let judged = match kept {
            Some(j) => j,
            None => {
                let error = host_error::parse(error_text);
                Judged {
                    path: path.clone(),
                    stamp: dir.stamp(),
                    derived: derive_banner(path, &error, dir, 0),
                    error,
                }
            }
        };
        let recorded = match &judged.derived {
            Derived::Banner(template) => {
                if let Some(cur) = self
                    .banners
                    .iter_mut()
                    .find(|b| b.phone == phone && b.path == *path)
                {
                    if cur.same_failure_on_path(template) {
                        cur.count = cur.count.saturating_add(1);
                        cur.first_seen_ms = cur.first_seen_ms.min(at_ms);
                        cur.last_seen_ms = cur.last_seen_ms.max(at_ms);
                        cur.raw_text.clone_from(&judged.error.text);
                        self.keep_judged(judged);
                        return FailureRecorded::BannerRepeated;
                    }
                }
                let mut new = Banner::clone(template);
                new.phone = phone.to_string();
                new.id = Banner::key_of(phone, path);
                new.first_seen_ms = at_ms;
                new.last_seen_ms = at_ms;
                self.retire_path(phone, path, at_ms, RetireReason::Superseded);
                if self.banners.len() >= MAX_BANNERS {
                    self.evict_stalest_banner(at_ms);
                }
                self.next_serial = self.next_serial.saturating_add(1);
                new.serial = self.next_serial;
                self.banners.push(new);
                FailureRecorded::BannerRaised
            }
            Derived::NothingGrantable { not_grantable, .. } => {
                self.retire_path(phone, path, at_ms, RetireReason::NoLongerActionable);
                let reason = DiagnosticReason::NothingGrantable;
                self.note(phone, path, reason, &judged.error, not_grantable, at_ms);
                FailureRecorded::Diagnostic(reason)
            }
            Derived::NotPermission => {
                self.retire_path(phone, path, at_ms, RetireReason::NoLongerActionable);
                let reason = DiagnosticReason::NotPermission;
                self.note(phone, path, reason, &judged.error, &[], at_ms);
                FailureRecorded::Diagnostic(reason)
            }
        };
        self.keep_judged(judged);
        recorded
    }

    /// Keeps `judged` as the newest judgement, within [`JUDGED_KEPT`] and [`JUDGED_TEXT_BYTES`].
    fn keep_judged(&mut self, judged: Judged) {
        self.judged.push_front(judged);
        let mut bytes = 0usize;
        let mut keep = 1;
        for j in self.judged.iter().skip(1) {
            bytes = bytes.saturating_add(j.error.text.len());
            if keep >= JUDGED_KEPT || bytes > JUDGED_TEXT_BYTES {
                break;
            }
            keep += 1;
        }
        self.judged.truncate(keep);
    }

    /// Records a successful call of phone `phone` on `path` at `at_ms`: that phone's banner on
    /// the path, if any, is cleared to history. Returns whether a banner was cleared. Banners
    /// of other paths (a probe's success against a handler's failure) and of other phones are
    /// left alone.
    pub fn record_success(&mut self, phone: &str, path: &CallPath, at_ms: u64) -> bool {
        self.touch_latest(phone, path, at_ms);
        let cleared = self.retire_path(phone, path, at_ms, RetireReason::CallSucceeded);
        if cleared {
            self.changes = self.changes.wrapping_add(1);
        }
        cleared
    }

    /// A number that moves whenever what the Bridge status view shows changes (a banner raised,
    /// seen again or cleared, a diagnostic added), and only then: the app compares it after each
    /// notice to tell the window to read the view again (successes that clear nothing, the
    /// common case, do not move it).
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// Records a result that arrives as part of a snapshot (a phone's settings repeat the last
    /// `describe` of each line): `error` `Some(text)` a failure, `None` a success, at `at_ms`.
    /// Applied only when `at_ms` is later than every result the store has seen of this phone on
    /// this path (else a repeated snapshot would count the same describe again, and an old one
    /// would undo a newer dial's result). Returns `None` when not applied, else
    /// `Some(Some(what the failure did))` or `Some(None)` for a success.
    pub fn record_if_newer(
        &mut self,
        phone: &str,
        path: &CallPath,
        error: Option<&str>,
        at_ms: u64,
        dir: &ExtensionDirectory,
    ) -> Option<Option<FailureRecorded>> {
        if self.latest_at(phone, path).is_some_and(|t| t >= at_ms) {
            return None;
        }
        Some(match error {
            Some(text) => Some(self.record_failure(phone, path, text, at_ms, dir)),
            None => {
                self.record_success(phone, path, at_ms);
                None
            }
        })
    }

    /// The current banners, in the order first raised.
    pub fn banners(&self) -> &[Banner] {
        &self.banners
    }

    /// The current banner of `phone` on `path`, if any.
    pub fn banner(&self, phone: &str, path: &CallPath) -> Option<&Banner> {
        self.banners
            .iter()
            .find(|b| b.phone == phone && b.path == *path)
    }

    /// Remembers what dial `dial_id` of `phone` (shared strings: nothing is copied) did: the
    /// banner it raised or repeated, or why it raised none. At most [`MAX_DIAL_JUDGEMENTS`]
    /// dials are kept, the oldest forgotten first.
    pub fn remember_dial(&mut self, phone: Arc<str>, dial_id: Arc<str>, mark: DialMark) {
        if let DialMark::Banner(serial) = mark {
            *self.marked.entry(serial).or_insert(0) += 1;
        }
        let key = (phone, dial_id);
        match self.dials.insert(key.clone(), mark) {
            Some(old) => self.unmark(old),
            None => {
                self.dial_order.push_back(key);
                while self.dial_order.len() > MAX_DIAL_JUDGEMENTS {
                    if let Some(old) = self.dial_order.pop_front() {
                        if let Some(m) = self.dials.remove(&old) {
                            self.unmark(m);
                        }
                    }
                }
            }
        }
    }

    /// One kept dial mark less names `mark`'s banner.
    fn unmark(&mut self, mark: DialMark) {
        let DialMark::Banner(serial) = mark else {
            return;
        };
        if let Some(n) = self.marked.get_mut(&serial) {
            *n -= 1;
            if *n == 0 {
                self.marked.remove(&serial);
                self.forgotten.remove(&serial);
            }
        }
    }

    /// What dial `dial_id` of `phone` did to the bridge status, if the store still knows:
    /// the banner it raised (as it stands now when still current or in history, else as it
    /// stood when it left the history) with where it stands, or why it raised none.
    pub fn dial_judgement(
        &self,
        phone: &str,
        dial_id: &str,
    ) -> Option<(DialJudgement, Option<BannerStanding>)> {
        let mark = self.dials.get(&(Arc::from(phone), Arc::from(dial_id)))?;
        let serial = match *mark {
            DialMark::NoBanner(reason) => return Some((DialJudgement::NoBanner(reason), None)),
            DialMark::Banner(serial) => serial,
        };
        if let Some(cur) = self.banners.iter().find(|c| c.serial == serial) {
            return Some((
                DialJudgement::Banner(Box::new(cur.clone())),
                Some(BannerStanding::Current),
            ));
        }
        if let Some(h) = self
            .history
            .iter()
            .rev()
            .find(|h| h.banner.serial == serial)
        {
            return Some((
                DialJudgement::Banner(Box::new(h.banner.clone())),
                Some(BannerStanding::Retired {
                    reason: h.reason,
                    at_ms: h.retired_at_ms,
                }),
            ));
        }
        let gone = self.forgotten.get(&serial)?;
        Some((
            DialJudgement::Banner(Box::new(gone.clone())),
            Some(BannerStanding::Forgotten),
        ))
    }

    /// A serialisable copy of banners, history and diagnostics for the UI.
    pub fn snapshot(&self) -> BridgeSnapshot {
        BridgeSnapshot {
            banners: self.banners.clone(),
            history: self.history.iter().cloned().collect(),
            diagnostics: self.diagnostics.iter().cloned().collect(),
        }
    }

    /// The latest result time of `phone` on `path`.
    fn latest_at(&self, phone: &str, path: &CallPath) -> Option<u64> {
        self.latest.get(phone)?.get(path).copied()
    }

    fn touch_latest(&mut self, phone: &str, path: &CallPath, at_ms: u64) {
        if let Some(t) = self.latest.get_mut(phone).and_then(|m| m.get_mut(path)) {
            *t = (*t).max(at_ms);
            return;
        }
        self.latest
            .entry(phone.to_string())
            .or_default()
            .insert(path.clone(), at_ms);
        self.latest_order
            .push_back((phone.to_string(), path.clone()));
        while self.latest_order.len() > MAX_LATEST {
            if let Some((old_phone, old_path)) = self.latest_order.pop_front() {
                if let Some(m) = self.latest.get_mut(&old_phone) {
                    m.remove(&old_path);
                    if m.is_empty() {
                        self.latest.remove(&old_phone);
                    }
                }
            }
        }
    }

    /// Moves the phone's banner on the path (if any) to history; returns whether there was one.
    fn retire_path(
        &mut self,
        phone: &str,
        path: &CallPath,
        at_ms: u64,
        reason: RetireReason,
    ) -> bool {
        match self
            .banners
            .iter()
            .position(|b| b.phone == phone && b.path == *path)
        {
            Some(i) => {
                let banner = self.banners.remove(i);
                self.push_history(banner, at_ms, reason);
                true
            }
            None => false,
        }
    }

    fn evict_stalest_banner(&mut self, at_ms: u64) {
        let stalest = self
            .banners
            .iter()
            .enumerate()
            .min_by_key(|(_, b)| b.last_seen_ms)
            .map(|(i, _)| i);
        if let Some(i) = stalest {
            let banner = self.banners.remove(i);
            self.push_history(banner, at_ms, RetireReason::Evicted);
        }
    }

    fn push_history(&mut self, banner: Banner, at_ms: u64, reason: RetireReason) {
        if self.history.len() >= HISTORY_CAP {
            if let Some(old) = self.history.pop_front() {
                // A kept dial still names it: the dial inspector can still show it.
                if self.marked.contains_key(&old.banner.serial) {
                    self.forgotten.insert(old.banner.serial, old.banner);
                }
            }
        }
        self.history.push_back(RetiredBanner {
            banner,
            retired_at_ms: at_ms,
            reason,
        });
    }

    fn note(
        &mut self,
        phone: &str,
        path: &CallPath,
        reason: DiagnosticReason,
        error: &HostError,
        not_grantable: &[String],
        at_ms: u64,
    ) {
        if let Some(d) = self
            .diagnostics
            .iter_mut()
            .find(|d| d.phone == phone && d.path == *path && d.error.text == error.text)
        {
            d.count = d.count.saturating_add(1);
            d.first_seen_ms = d.first_seen_ms.min(at_ms);
            d.last_seen_ms = d.last_seen_ms.max(at_ms);
            return;
        }
        if self.diagnostics.len() >= DIAGNOSTICS_CAP {
            let stalest = self
                .diagnostics
                .iter()
                .enumerate()
                .min_by_key(|(_, d)| d.last_seen_ms)
                .map(|(i, _)| i);
            if let Some(i) = stalest {
                self.diagnostics.remove(i);
            }
        }
        self.diagnostics.push_back(Diagnostic {
            phone: phone.to_string(),
            path: path.clone(),
            reason,
            error: error.clone(),
            not_grantable: not_grantable.to_vec(),
            first_seen_ms: at_ms,
            last_seen_ms: at_ms,
            count: 1,
        });
    }
}

#[cfg(test)]
mod tests;
