//! The bridge-status store: keeps the current banners in step with the results of calls.
//!
//! Why it exists: a banner must be driven by actual call outcomes and must not go stale
//! (spec `phone-line.md`, "Failure modes and the bridge banner": "Clear stale warnings when a
//! later result no longer reports an actionable permission failure"; "A successful probe
//! doesn't prove that LumiAgent can call your own handler"; "Filtering a warning doesn't turn a
//! failed RPC into a successful call").
//!
//! Rules, per [`CallPath`] (caller and called endpoint):
//! - an actionable permission failure raises a banner; the identical failure again only moves
//!   its `last_seen_ms` and `count`; a different actionable failure supersedes it (the old one
//!   goes to history);
//! - a later successful call on the same path clears the banner (to history, reason
//!   `call_succeeded`); a success on another path (e.g. the probe) leaves it alone;
//! - a later failure on the same path that is not an actionable permission failure (another
//!   kind of error, or a permission failure with nothing grantable) never invents a banner: it
//!   leaves a diagnostic, and — as the spec's "clear stale warnings" asks — retires the path's
//!   banner to history (reason `no_longer_actionable`);
//! - identical diagnostics (same path, same text) update `last_seen_ms` and `count`.
//!
//! Timestamps are epoch milliseconds passed in by the caller; the store reads no clock.
//! Everything is bounded: at most [`MAX_BANNERS`] current banners, [`HISTORY_CAP`] retired
//! ones and [`DIAGNOSTICS_CAP`] diagnostics, the least recently seen dropped first.

use std::collections::VecDeque;

use serde::Serialize;
use ts_rs::TS;

use super::{derive_banner, Banner, CallPath, Derived, ExtensionDirectory};
use crate::host_error::{self, HostError};

/// Most current banners kept (one per path); past it the least recently seen is retired with
/// reason `evicted`.
pub const MAX_BANNERS: usize = 64;
/// Most retired banners kept in history; past it the oldest retired is dropped.
pub const HISTORY_CAP: usize = 100;
/// Most diagnostics kept; past it the least recently seen is dropped.
pub const DIAGNOSTICS_CAP: usize = 100;

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
    /// Current banners, in the order first raised.
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
    /// No banner: a diagnostic was added or repeated (and the path's banner, if any, retired).
    Diagnostic,
}

/// Keeps the bridge banners current from call results. See the module docs for the rules.
#[derive(Debug, Clone, Default)]
pub struct BridgeStatusStore {
    banners: Vec<Banner>,
    history: VecDeque<RetiredBanner>,
    diagnostics: VecDeque<Diagnostic>,
}

impl BridgeStatusStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a failed call on `path` that returned `error_text`, at `at_ms` (epoch
    /// milliseconds), judging grantability with `dir`.
    pub fn record_failure(
        &mut self,
        path: &CallPath,
        error_text: &str,
        at_ms: u64,
        dir: &ExtensionDirectory,
    ) -> FailureRecorded {
        let error = host_error::parse(error_text);
        match derive_banner(path, &error, dir, at_ms) {
            Derived::Banner(new) => {
                if let Some(cur) = self.banners.iter_mut().find(|b| b.path == *path) {
                    if cur.same_failure(&new) {
                        cur.count = cur.count.saturating_add(1);
                        cur.first_seen_ms = cur.first_seen_ms.min(at_ms);
                        cur.last_seen_ms = cur.last_seen_ms.max(at_ms);
                        cur.raw_text.clone_from(&new.raw_text);
                        return FailureRecorded::BannerRepeated;
                    }
                }
                self.retire_path(path, at_ms, RetireReason::Superseded);
                if self.banners.len() >= MAX_BANNERS {
                    self.evict_stalest_banner(at_ms);
                }
                self.banners.push(*new);
                FailureRecorded::BannerRaised
            }
            Derived::NothingGrantable { not_grantable, .. } => {
                self.retire_path(path, at_ms, RetireReason::NoLongerActionable);
                self.note(
                    path,
                    DiagnosticReason::NothingGrantable,
                    error,
                    not_grantable,
                    at_ms,
                );
                FailureRecorded::Diagnostic
            }
            Derived::NotPermission => {
                self.retire_path(path, at_ms, RetireReason::NoLongerActionable);
                self.note(
                    path,
                    DiagnosticReason::NotPermission,
                    error,
                    Vec::new(),
                    at_ms,
                );
                FailureRecorded::Diagnostic
            }
        }
    }

    /// Records a successful call on `path` at `at_ms`: the path's banner, if any, is cleared to
    /// history. Returns whether a banner was cleared. Banners of other paths (a probe's success
    /// against a handler's failure) are left alone.
    pub fn record_success(&mut self, path: &CallPath, at_ms: u64) -> bool {
        self.retire_path(path, at_ms, RetireReason::CallSucceeded)
    }

    /// The current banners, in the order first raised.
    pub fn banners(&self) -> &[Banner] {
        &self.banners
    }

    /// A serialisable copy of banners, history and diagnostics for the UI.
    pub fn snapshot(&self) -> BridgeSnapshot {
        BridgeSnapshot {
            banners: self.banners.clone(),
            history: self.history.iter().cloned().collect(),
            diagnostics: self.diagnostics.iter().cloned().collect(),
        }
    }

    /// Moves the path's banner (if any) to history; returns whether there was one.
    fn retire_path(&mut self, path: &CallPath, at_ms: u64, reason: RetireReason) -> bool {
        match self.banners.iter().position(|b| b.path == *path) {
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
            self.history.pop_front();
        }
        self.history.push_back(RetiredBanner {
            banner,
            retired_at_ms: at_ms,
            reason,
        });
    }

    fn note(
        &mut self,
        path: &CallPath,
        reason: DiagnosticReason,
        error: HostError,
        not_grantable: Vec<String>,
        at_ms: u64,
    ) {
        if let Some(d) = self
            .diagnostics
            .iter_mut()
            .find(|d| d.path == *path && d.error.text == error.text)
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
            path: path.clone(),
            reason,
            error,
            not_grantable,
            first_seen_ms: at_ms,
            last_seen_ms: at_ms,
            count: 1,
        });
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::path::Path;

    const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus/lumiverse");
    const SPEC_EXAMPLE: &str = "Shared RPC endpoint \"lumirealm.phoneline\" requires requester \"lumiagent\" to inherit owner \"lumirealm\" permissions: push_notification";
    const HANDLER_READ: &str = "could not read pending request from lumiagent: Shared RPC endpoint \"lumiagent.phoneline_request\" requires requester \"lumirealm\" to inherit owner \"lumiagent\" permissions: characters";

    fn dir() -> ExtensionDirectory {
        ExtensionDirectory::load_dir(Path::new(CORPUS)).unwrap()
    }
    fn dial() -> CallPath {
        CallPath::new("lumiagent", "lumirealm.phoneline")
    }
    fn probe() -> CallPath {
        CallPath::new("lumirealm", "lumiagent.phoneline_probe")
    }

    #[test]
    fn success_on_the_same_path_clears_the_banner_into_history() {
        let mut s = BridgeStatusStore::new();
        assert_eq!(
            s.record_failure(&dial(), SPEC_EXAMPLE, 100, &dir()),
            FailureRecorded::BannerRaised
        );
        assert_eq!(s.banners().len(), 1);
        assert!(s.record_success(&dial(), 200));
        let snap = s.snapshot();
        assert!(snap.banners.is_empty());
        assert_eq!(snap.history.len(), 1);
        assert_eq!(snap.history[0].reason, RetireReason::CallSucceeded);
        assert_eq!(snap.history[0].retired_at_ms, 200);
        assert_eq!(
            snap.history[0].banner.message,
            "LumiAgent is missing push_notification, required for LumiRealm communication."
        );
    }

    #[test]
    fn successful_probe_does_not_clear_the_handler_calls_banner() {
        let mut s = BridgeStatusStore::new();
        s.record_failure(&dial(), HANDLER_READ, 100, &dir());
        assert!(!s.record_success(&probe(), 150));
        assert_eq!(s.banners().len(), 1);
        assert_eq!(s.banners()[0].path, dial());
        assert!(s.snapshot().history.is_empty());
    }

    #[test]
    fn non_permission_failure_leaves_a_diagnostic_and_invents_no_banner() {
        let mut s = BridgeStatusStore::new();
        let r = s.record_failure(
            &dial(),
            "Shared RPC endpoint \"lumirealm.phoneline\" timed out",
            100,
            &dir(),
        );
        assert_eq!(r, FailureRecorded::Diagnostic);
        let snap = s.snapshot();
        assert!(snap.banners.is_empty());
        assert_eq!(snap.diagnostics.len(), 1);
        assert_eq!(snap.diagnostics[0].reason, DiagnosticReason::NotPermission);
        assert_eq!(snap.diagnostics[0].error.kind_name(), "endpoint_timed_out");
    }

    #[test]
    fn later_non_permission_failure_retires_the_stale_banner_without_a_new_one() {
        let mut s = BridgeStatusStore::new();
        s.record_failure(&dial(), SPEC_EXAMPLE, 100, &dir());
        s.record_failure(&dial(), "Connection closed", 200, &dir());
        let snap = s.snapshot();
        assert!(snap.banners.is_empty());
        assert_eq!(snap.history.len(), 1);
        assert_eq!(snap.history[0].reason, RetireReason::NoLongerActionable);
        assert_eq!(snap.diagnostics.len(), 1);
        assert_eq!(snap.diagnostics[0].error.kind_name(), "connection_closed");
    }

    #[test]
    fn identical_failures_update_last_seen_and_count() {
        let mut s = BridgeStatusStore::new();
        s.record_failure(&dial(), SPEC_EXAMPLE, 100, &dir());
        assert_eq!(
            s.record_failure(&dial(), SPEC_EXAMPLE, 300, &dir()),
            FailureRecorded::BannerRepeated
        );
        // Same failure wrapped by a JavaScript Error is still the same failure.
        let wrapped = format!("Error: {SPEC_EXAMPLE}");
        s.record_failure(&dial(), &wrapped, 250, &dir());
        let b = &s.banners()[0];
        assert_eq!(s.banners().len(), 1);
        assert_eq!((b.first_seen_ms, b.last_seen_ms, b.count), (100, 300, 3));
        assert_eq!(b.raw_text, wrapped);
        for t in [400, 500] {
            s.record_failure(&dial(), "Connection closed", t, &dir());
        }
        let snap = s.snapshot();
        assert_eq!(snap.diagnostics.len(), 1);
        assert_eq!(snap.diagnostics[0].count, 2);
        assert_eq!(snap.diagnostics[0].last_seen_ms, 500);
    }

    #[test]
    fn different_permission_failure_supersedes_the_banner() {
        let mut s = BridgeStatusStore::new();
        s.record_failure(&dial(), SPEC_EXAMPLE, 100, &dir());
        s.record_failure(&dial(), HANDLER_READ, 200, &dir());
        let snap = s.snapshot();
        assert_eq!(snap.banners.len(), 1);
        assert_eq!(
            snap.banners[0].message,
            "LumiRealm is missing characters, required for LumiAgent communication."
        );
        assert_eq!(snap.history[0].reason, RetireReason::Superseded);
    }

    #[test]
    fn nothing_grantable_is_a_diagnostic_listing_what_cannot_be_granted() {
        let mut s = BridgeStatusStore::new();
        let text = "Shared RPC endpoint \"lumiagent.phoneline_probe\" requires requester \"lumirealm\" to inherit owner \"lumiagent\" permissions: mcp_servers, mcp_servers.create";
        assert_eq!(
            s.record_failure(&probe(), text, 1, &dir()),
            FailureRecorded::Diagnostic
        );
        let snap = s.snapshot();
        assert!(snap.banners.is_empty());
        assert_eq!(
            snap.diagnostics[0].reason,
            DiagnosticReason::NothingGrantable
        );
        assert_eq!(
            snap.diagnostics[0].not_grantable,
            vec!["mcp_servers", "mcp_servers.create"]
        );
    }

    #[test]
    fn history_banners_and_diagnostics_stay_bounded() {
        let mut s = BridgeStatusStore::new();
        let d = dir();
        for i in 0..(HISTORY_CAP as u64 + MAX_BANNERS as u64 + 50) {
            let path = CallPath::new(format!("ext{i}"), "lumirealm.phoneline");
            s.record_failure(&path, SPEC_EXAMPLE, i, &d);
            s.record_failure(&path, &format!("unknown op: op{i}"), i, &d);
        }
        for i in 0..(MAX_BANNERS as u64 + 10) {
            let path = CallPath::new(format!("other{i}"), "lumirealm.phoneline");
            s.record_failure(&path, SPEC_EXAMPLE, 10_000 + i, &d);
        }
        let snap = s.snapshot();
        assert_eq!(snap.history.len(), HISTORY_CAP);
        assert_eq!(snap.diagnostics.len(), DIAGNOSTICS_CAP);
        assert_eq!(snap.banners.len(), MAX_BANNERS);
        // The least recently seen banners were the ones evicted.
        assert!(snap.banners.iter().all(|b| b.first_seen_ms >= 10_010));
        assert_eq!(snap.history.last().unwrap().reason, RetireReason::Evicted);
    }

    #[test]
    fn snapshot_serialises_with_stable_names() {
        let mut s = BridgeStatusStore::new();
        s.record_failure(&dial(), SPEC_EXAMPLE, 100, &dir());
        s.record_failure(&probe(), "not authorised", 120, &dir());
        let v = serde_json::to_value(s.snapshot()).unwrap();
        assert_eq!(v["banners"][0]["missing_name"], "LumiAgent");
        assert_eq!(v["banners"][0]["form"], "inherit");
        assert_eq!(v["banners"][0]["grantable"][0], "push_notification");
        assert_eq!(v["diagnostics"][0]["reason"], "not_permission");
        assert_eq!(v["diagnostics"][0]["error"]["kind"], "not_authorised");
        assert_eq!(v["diagnostics"][0]["path"]["caller"], "lumirealm");
    }
}
