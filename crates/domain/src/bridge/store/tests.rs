//! The bridge-status store's rules, one test a rule of the module doc: banners raised, repeated,
//! superseded and cleared per phone and path, diagnostics, snapshots and dial judgements.

#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::*;
use std::path::Path;

const CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/corpus/lumiverse"
);
const SPEC_EXAMPLE: &str = "Shared RPC endpoint \"lumirealm.phoneline\" requires requester \"lumiagent\" to inherit owner \"lumirealm\" permissions: push_notification";
const HANDLER_READ: &str = "could not read pending request from lumiagent: Shared RPC endpoint \"lumiagent.phoneline_request\" requires requester \"lumirealm\" to inherit owner \"lumiagent\" permissions: characters";

const PHONE: &str = "dev_aaaaaaaaaaaaaaaa";

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
        s.record_failure(PHONE, &dial(), SPEC_EXAMPLE, 100, &dir()),
        FailureRecorded::BannerRaised
    );
    assert_eq!(s.banners().len(), 1);
    assert!(s.record_success(PHONE, &dial(), 200));
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
    s.record_failure(PHONE, &dial(), HANDLER_READ, 100, &dir());
    assert!(!s.record_success(PHONE, &probe(), 150));
    assert_eq!(s.banners().len(), 1);
    assert_eq!(s.banners()[0].path, dial());
    assert!(s.snapshot().history.is_empty());
}

#[test]
fn non_permission_failure_leaves_a_diagnostic_and_invents_no_banner() {
    let mut s = BridgeStatusStore::new();
    let r = s.record_failure(
        PHONE,
        &dial(),
        "Shared RPC endpoint \"lumirealm.phoneline\" timed out",
        100,
        &dir(),
    );
    assert_eq!(
        r,
        FailureRecorded::Diagnostic(DiagnosticReason::NotPermission)
    );
    let snap = s.snapshot();
    assert!(snap.banners.is_empty());
    assert_eq!(snap.diagnostics.len(), 1);
    assert_eq!(snap.diagnostics[0].reason, DiagnosticReason::NotPermission);
    assert_eq!(snap.diagnostics[0].error.kind_name(), "endpoint_timed_out");
}

#[test]
fn later_non_permission_failure_retires_the_stale_banner_without_a_new_one() {
    let mut s = BridgeStatusStore::new();
    s.record_failure(PHONE, &dial(), SPEC_EXAMPLE, 100, &dir());
    s.record_failure(PHONE, &dial(), "Connection closed", 200, &dir());
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
    s.record_failure(PHONE, &dial(), SPEC_EXAMPLE, 100, &dir());
    assert_eq!(
        s.record_failure(PHONE, &dial(), SPEC_EXAMPLE, 300, &dir()),
        FailureRecorded::BannerRepeated
    );
    // Same failure wrapped by a JavaScript Error is still the same failure.
    let wrapped = format!("Error: {SPEC_EXAMPLE}");
    s.record_failure(PHONE, &dial(), &wrapped, 250, &dir());
    let b = &s.banners()[0];
    assert_eq!(s.banners().len(), 1);
    assert_eq!((b.first_seen_ms, b.last_seen_ms, b.count), (100, 300, 3));
    assert_eq!(b.raw_text, wrapped);
    for t in [400, 500] {
        s.record_failure(PHONE, &dial(), "Connection closed", t, &dir());
    }
    let snap = s.snapshot();
    assert_eq!(snap.diagnostics.len(), 1);
    assert_eq!(snap.diagnostics[0].count, 2);
    assert_eq!(snap.diagnostics[0].last_seen_ms, 500);
}

#[test]
fn different_permission_failure_supersedes_the_banner() {
    let mut s = BridgeStatusStore::new();
    s.record_failure(PHONE, &dial(), SPEC_EXAMPLE, 100, &dir());
    s.record_failure(PHONE, &dial(), HANDLER_READ, 200, &dir());
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
        s.record_failure(PHONE, &probe(), text, 1, &dir()),
        FailureRecorded::Diagnostic(DiagnosticReason::NothingGrantable)
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
        s.record_failure(PHONE, &path, SPEC_EXAMPLE, i, &d);
        s.record_failure(PHONE, &path, &format!("unknown op: op{i}"), i, &d);
    }
    for i in 0..(MAX_BANNERS as u64 + 10) {
        let path = CallPath::new(format!("other{i}"), "lumirealm.phoneline");
        s.record_failure(PHONE, &path, SPEC_EXAMPLE, 10_000 + i, &d);
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
    s.record_failure(PHONE, &dial(), SPEC_EXAMPLE, 100, &dir());
    s.record_failure(PHONE, &probe(), "not authorised", 120, &dir());
    let v = serde_json::to_value(s.snapshot()).unwrap();
    assert_eq!(v["banners"][0]["missing_name"], "LumiAgent");
    assert_eq!(v["banners"][0]["form"], "inherit");
    assert_eq!(v["banners"][0]["grantable"][0], "push_notification");
    assert_eq!(v["diagnostics"][0]["reason"], "not_permission");
    assert_eq!(v["diagnostics"][0]["error"]["kind"], "not_authorised");
    assert_eq!(v["diagnostics"][0]["path"]["caller"], "lumirealm");
}

const OTHER: &str = "dev_bbbbbbbbbbbbbbbb";

#[test]
fn each_phone_raises_and_clears_only_its_own_banners() {
    let mut s = BridgeStatusStore::new();
    s.record_failure(PHONE, &dial(), SPEC_EXAMPLE, 100, &dir());
    // The other phone's success on the same path clears nothing of the first phone's.
    assert!(!s.record_success(OTHER, &dial(), 110));
    assert_eq!(s.banners().len(), 1);
    assert_eq!(s.banners()[0].phone, PHONE);
    assert_eq!(
        s.banners()[0].id,
        format!("{PHONE}|lumiagent>lumirealm.phoneline")
    );
    // Its failure on the same path is its own banner, not a repeat of the first phone's.
    assert_eq!(
        s.record_failure(OTHER, &dial(), SPEC_EXAMPLE, 120, &dir()),
        FailureRecorded::BannerRaised
    );
    assert_eq!(s.banners().len(), 2);
    assert_eq!(s.banner(PHONE, &dial()).unwrap().count, 1);
    assert!(s.record_success(PHONE, &dial(), 130));
    let left: Vec<_> = s.banners().iter().map(|b| b.phone.as_str()).collect();
    assert_eq!(left, [OTHER]);
    // Diagnostics are per phone too.
    s.record_failure(PHONE, &probe(), "not authorised", 140, &dir());
    s.record_failure(OTHER, &probe(), "not authorised", 150, &dir());
    assert_eq!(s.snapshot().diagnostics.len(), 2);
}

#[test]
fn a_repeated_or_older_snapshot_result_changes_nothing() {
    let mut s = BridgeStatusStore::new();
    assert_eq!(
        s.record_if_newer(PHONE, &dial(), Some(SPEC_EXAMPLE), 100, &dir()),
        Some(Some(FailureRecorded::BannerRaised))
    );
    // The same describe in the next settings snapshot: not counted again.
    assert_eq!(
        s.record_if_newer(PHONE, &dial(), Some(SPEC_EXAMPLE), 100, &dir()),
        None
    );
    assert_eq!(s.banners()[0].count, 1);
    // A dial that succeeded later clears it; the old describe, sent again, does not
    // raise it back.
    s.record_success(PHONE, &dial(), 200);
    assert_eq!(
        s.record_if_newer(PHONE, &dial(), Some(SPEC_EXAMPLE), 100, &dir()),
        None
    );
    assert!(s.banners().is_empty());
    // Another phone's times are its own.
    assert!(s
        .record_if_newer(OTHER, &dial(), Some(SPEC_EXAMPLE), 150, &dir())
        .is_some());
    // A newer describe success clears.
    assert_eq!(
        s.record_if_newer(OTHER, &dial(), None, 300, &dir()),
        Some(None)
    );
    assert!(s.banners().is_empty());
}

#[test]
fn a_dials_judgement_follows_its_banner_into_history() {
    let mut s = BridgeStatusStore::new();
    s.record_failure(PHONE, &dial(), SPEC_EXAMPLE, 100, &dir());
    let b = s.banner(PHONE, &dial()).unwrap().clone();
    assert!(b.serial > 0);
    s.remember_dial(PHONE.into(), "dial_1".into(), DialMark::Banner(b.serial));
    s.record_failure(PHONE, &dial(), SPEC_EXAMPLE, 150, &dir());
    let (j, standing) = s.dial_judgement(PHONE, "dial_1").unwrap();
    let DialJudgement::Banner(now) = j else {
        panic!()
    };
    assert_eq!((now.serial, now.count), (b.serial, 2));
    assert_eq!(standing, Some(BannerStanding::Current));
    assert!(s.dial_judgement(OTHER, "dial_1").is_none());
    s.record_success(PHONE, &dial(), 200);
    let (_, standing) = s.dial_judgement(PHONE, "dial_1").unwrap();
    assert_eq!(
        standing,
        Some(BannerStanding::Retired {
            reason: RetireReason::CallSucceeded,
            at_ms: 200
        })
    );
    s.remember_dial(
        PHONE.into(),
        "dial_2".into(),
        DialMark::NoBanner(DiagnosticReason::NotPermission),
    );
    assert_eq!(
        s.dial_judgement(PHONE, "dial_2").unwrap(),
        (
            DialJudgement::NoBanner(DiagnosticReason::NotPermission),
            None
        )
    );
    for i in 0..MAX_DIAL_JUDGEMENTS {
        s.remember_dial(
            PHONE.into(),
            format!("d{i}").into(),
            DialMark::NoBanner(DiagnosticReason::NotPermission),
        );
    }
    assert!(s.dial_judgement(PHONE, "dial_1").is_none());
}

#[test]
fn a_banner_a_kept_dial_names_outlives_the_history_until_that_dial_is_forgotten() {
    let mut s = BridgeStatusStore::new();
    s.record_failure(PHONE, &dial(), SPEC_EXAMPLE, 100, &dir());
    s.record_failure(PHONE, &dial(), SPEC_EXAMPLE, 110, &dir());
    let first = s.banner(PHONE, &dial()).unwrap().clone();
    assert_eq!(first.count, 2);
    s.remember_dial(
        PHONE.into(),
        "dial_1".into(),
        DialMark::Banner(first.serial),
    );
    s.record_success(PHONE, &dial(), 120);
    // A stream of other banners, each raised and cleared, pushes it out of the history.
    for k in 0..HISTORY_CAP as u64 {
        let at = 200 + 10 * k;
        s.record_failure(PHONE, &dial(), SPEC_EXAMPLE, at, &dir());
        let serial = s.banner(PHONE, &dial()).unwrap().serial;
        s.remember_dial(
            PHONE.into(),
            format!("d{k}").into(),
            DialMark::Banner(serial),
        );
        s.record_success(PHONE, &dial(), at + 5);
    }
    assert!(s
        .snapshot()
        .history
        .iter()
        .all(|h| h.banner.serial != first.serial));
    let (j, standing) = s.dial_judgement(PHONE, "dial_1").unwrap();
    assert_eq!(j, DialJudgement::Banner(Box::new(first.clone())));
    assert_eq!(standing, Some(BannerStanding::Forgotten));
    // A banner no kept dial names is not set aside: only the marked ones are.
    assert_eq!(s.forgotten.len(), 1);
    // Once the dial's mark goes (the oldest of too many), so does the banner.
    for i in 0..MAX_DIAL_JUDGEMENTS {
        s.remember_dial(
            PHONE.into(),
            format!("n{i}").into(),
            DialMark::NoBanner(DiagnosticReason::NotPermission),
        );
    }
    assert!(s.dial_judgement(PHONE, "dial_1").is_none());
    assert!(s.forgotten.is_empty());
    assert!(s.marked.is_empty());
}

#[test]
fn a_judgement_is_reused_only_for_the_same_text_path_and_manifests() {
    let mut s = BridgeStatusStore::new();
    let text = "Shared RPC endpoint \"lumiagent.phoneline_probe\" requires requester \"lumirealm\" to inherit owner \"lumiagent\" permissions: mcp_servers, mcp_servers.create";
    let corpus = dir();
    assert_ne!(corpus.stamp(), 0);
    assert_eq!(corpus.clone().stamp(), corpus.stamp());
    // The corpus manifests declare neither permission: nothing grantable.
    assert_eq!(
        s.record_failure(PHONE, &probe(), text, 1, &corpus),
        FailureRecorded::Diagnostic(DiagnosticReason::NothingGrantable)
    );
    // The same text without manifests (every permission unchecked): a banner, not the kept
    // judgement.
    assert_eq!(
        s.record_failure(PHONE, &probe(), text, 2, &ExtensionDirectory::new()),
        FailureRecorded::BannerRaised
    );
    // The same manifests loaded again are a new directory: judged again, the same way.
    let again = dir();
    assert_ne!(again.stamp(), corpus.stamp());
    assert_eq!(
        s.record_failure(PHONE, &probe(), text, 3, &again),
        FailureRecorded::Diagnostic(DiagnosticReason::NothingGrantable)
    );
    assert_eq!(s.snapshot().diagnostics[0].count, 2);
    // One text on two paths: each path's own banner, with its own times.
    s.record_failure(PHONE, &dial(), SPEC_EXAMPLE, 10, &corpus);
    s.record_failure(PHONE, &dial(), SPEC_EXAMPLE, 20, &corpus);
    s.record_failure(PHONE, &probe(), SPEC_EXAMPLE, 30, &corpus);
    let on_dial = s.banner(PHONE, &dial()).unwrap().clone();
    let on_probe = s.banner(PHONE, &probe()).unwrap().clone();
    assert_eq!(
        (on_dial.count, on_dial.first_seen_ms, on_dial.last_seen_ms),
        (2, 10, 20)
    );
    assert_eq!(on_dial.id, Banner::key_of(PHONE, &dial()));
    assert_eq!(on_probe.path, probe());
    assert_eq!(on_probe.id, Banner::key_of(PHONE, &probe()));
    assert_eq!(
        (
            on_probe.count,
            on_probe.first_seen_ms,
            on_probe.last_seen_ms
        ),
        (1, 30, 30)
    );
    assert_eq!(on_probe.raw_text, SPEC_EXAMPLE);
}

#[test]
fn failures_by_turns_on_several_paths_are_judged_as_a_store_without_memory_judges_them() {
    let corpus = dir();
    let texts = [SPEC_EXAMPLE, HANDLER_READ, "no answer within 15 s"];
    let paths = [
        dial(),
        probe(),
        CallPath::new("lumiagent", "lorekeeper.phoneline"),
    ];
    let mut kept = BridgeStatusStore::new();
    let mut fresh = BridgeStatusStore::new();
    for i in 0..60u64 {
        let path = &paths[(i % 3) as usize];
        let text = texts[((i / 2) % 3) as usize];
        // Every fourth result a success, so banners are raised and retired by turns.
        if i % 4 == 3 {
            assert_eq!(
                kept.record_success(PHONE, path, i),
                fresh.record_success(PHONE, path, i)
            );
            continue;
        }
        fresh.judged.clear();
        let a = kept.record_failure(PHONE, path, text, i, &corpus);
        let b = fresh.record_failure(PHONE, path, text, i, &corpus);
        assert_eq!(a, b, "result {i}");
    }
    // Several judgements were kept and reused, and everything shown is the same.
    assert!(kept.judged.len() > 1);
    assert_eq!(
        serde_json::to_value(kept.snapshot()).unwrap(),
        serde_json::to_value(fresh.snapshot()).unwrap()
    );
}

#[test]
fn the_judgements_kept_are_bounded_in_count_and_in_text() {
    let corpus = dir();
    let mut s = BridgeStatusStore::new();
    for i in 0..40u64 {
        s.record_failure(PHONE, &dial(), &format!("{SPEC_EXAMPLE} {i}"), i, &corpus);
    }
    assert_eq!(s.judged.len(), JUDGED_KEPT);
    assert!(s.judged[0].error.text.ends_with(" 39"), "newest first");
    // Long texts: the newest is kept whatever its size, the others within the byte bound.
    let long = "x".repeat(40 * 1024);
    for i in 0..4u64 {
        s.record_failure(PHONE, &probe(), &format!("{long}{i}"), 100 + i, &corpus);
    }
    let bytes: usize = s.judged.iter().skip(1).map(|j| j.error.text.len()).sum();
    assert!(bytes <= JUDGED_TEXT_BYTES, "{bytes}");
    assert!(s.judged[0].error.text.ends_with("x3"));
    let huge = "y".repeat(200 * 1024);
    s.record_failure(PHONE, &probe(), &huge, 200, &corpus);
    assert_eq!(
        s.judged[0].error.text.len(),
        huge.len(),
        "kept though past the bound"
    );
    // Besides it, one long text fits the bound and the next one would not.
    assert_eq!(s.judged.len(), 2);
    assert!(s.judged[1].error.text.ends_with("x3"));
}
