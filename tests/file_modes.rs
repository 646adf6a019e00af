//! Every folder and file a real [`App`] creates is private on Unix: folders
//! `0700`, files `0600`, under the most permissive umask (`0o000`), and files an earlier version
//! left readable are tightened at the next start.
//!
//! The app runs on loopback with a [`RecordingHost`]: the link starts, a phone with a hostile
//! label pairs, sends a dial and a proposal with a hostile reason (whose notification must come
//! escaped), settings are saved, dials exported (relative and absolute paths; a `..`
//! path is refused), a pairings file opened and a phone line revoked (with its backup); then the
//! demo app starts on the same home. After each step the whole home folder is walked and the
//! mode of everything in it checked.
//!
//! The umask is per process: this file holds one test so nothing else runs under it.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/confirm.rs"]
mod confirm;
use std::net::{IpAddr, Ipv4Addr};
use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use switchboard::app::{App, AppConfig, AppPaths, HostCall, IdentityStore, RecordingHost};
use switchboard::confirmations::ConfirmationMirror;
use switchboard::error::IpcErrorKind;
use switchboard::link::phone_client::{envelope, PhoneClient, PhoneIdentity};
use switchboard::link::rfc3339_ms;

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const WAIT: Duration = Duration::from_secs(30);
const HOSTILE_LABEL: &str = "<a href=\"x\">Pixel</a> &amp;\nApproved";
const HOSTILE_REASON: &str =
    "<b>Send</b> <a href=\"https://evil.example\">this</a> &amp; more\nline two";

fn app(home: &Path, demo: bool, host: &Arc<RecordingHost>) -> Arc<App> {
    let mut config = AppConfig::new(AppPaths::under(home), demo);
    config.identity = IdentityStore::Memory;
    config.listen = (LOOPBACK, 0);
    config.mdns = false;
    // A bound only a hang breaks: these tests prove the shutdown's order and what it keeps,
    // not its speed, and run under wine beside compilers too.
    config.shutdown_budget = std::time::Duration::from_secs(30);
    App::new(
        config,
        host.clone(),
        tokio::runtime::Handle::current(),
        ConfirmationMirror::with_bundled_catalogue(),
    )
}

async fn until(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !ok() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Every folder and file under `root` (itself included) with its permission bits; at most
/// 10 000 entries, 16 levels deep.
fn walk(root: &Path) -> Vec<(PathBuf, bool, u32)> {
    let mut out = Vec::new();
    let mut todo = vec![(root.to_path_buf(), 0)];
    while let Some((p, depth)) = todo.pop() {
        assert!(
            out.len() < 10_000 && depth < 16,
            "runaway walk at {}",
            p.display()
        );
        let m = std::fs::symlink_metadata(&p).unwrap();
        assert!(!m.file_type().is_symlink(), "no symlinks: {}", p.display());
        out.push((p.clone(), m.is_dir(), m.permissions().mode() & 0o7777));
        if m.is_dir() {
            for e in std::fs::read_dir(&p).unwrap() {
                todo.push((e.unwrap().path(), depth + 1));
            }
        }
    }
    out.sort();
    out
}

/// Asserts every folder under `home` is 0700 and every file 0600, and that `expected` (paths
/// relative to `home`) are among them.
fn assert_private(home: &Path, step: &str, expected: &[&str]) {
    let all = walk(home);
    let wrong: Vec<String> = all
        .iter()
        .filter(|(_, dir, mode)| *mode != if *dir { 0o700 } else { 0o600 })
        .map(|(p, dir, mode)| {
            format!(
                "{} {} {mode:o}",
                if *dir { "folder" } else { "file" },
                p.display()
            )
        })
        .collect();
    assert!(wrong.is_empty(), "{step}: not private: {wrong:#?}");
    for e in expected {
        assert!(
            all.iter().any(|(p, _, _)| *p == home.join(e)),
            "{step}: {e} missing from {all:#?}"
        );
    }
}

fn loosen(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn message(
    me: &PhoneIdentity,
    kind: &str,
    session: &str,
    seq: Option<u64>,
    mut payload: Value,
) -> Value {
    if let Some(seq) = seq {
        payload["seq"] = json!(seq);
        payload["dedup"] = json!(format!("{kind}-{session}-{seq}"));
    }
    let mut v = envelope(kind, Some(&me.entity_id()), payload);
    v["session"] = json!(session);
    v["device"] = json!(me.device_id());
    v["generation"] = json!(1);
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_file_and_folder_the_app_creates_is_private_whatever_the_umask() {
    // SAFETY: umask only sets the process's file-creation mask; this binary runs one test.
    unsafe { libc::umask(0o000) };
    let tmp = tempfile::tempdir().unwrap();
    // A home that does not exist yet: the app creates it and everything in it.
    let home = tmp.path().join("home");
    let host = Arc::new(RecordingHost::new());
    let desk = app(&home, false, &host);
    assert_private(
        &home,
        "after App::new",
        &["config", "data", "data/dials.sqlite3"],
    );

    desk.start_link();
    until("the link to listen", || {
        desk.phones.link().is_some() && desk.hub().is_some()
    })
    .await;
    let link = desk.phones.link().unwrap();
    let invite = link.open_pairing(LOOPBACK);
    let me = PhoneIdentity::generate(HOSTILE_LABEL);
    let mut phone = PhoneClient::connect(
        link.local_addr().unwrap(),
        link.identity().cert_fingerprint(),
    )
    .await
    .unwrap();
    confirm::pair_confirmed(&link, &mut phone, &me, &invite.code, vec![], (1, 1))
        .await
        .expect("pairing succeeds");

    // A dial, and a proposal whose reason is hostile markup.
    let start = 1_790_000_000_000u64;
    let dial = json!({
        "call_id": "c1", "caller": "lumiagent", "callee": "lumirealm",
        "endpoint": "lumirealm.phoneline", "op": "describe",
        "request": {"op": "describe", "callId": "c1"},
        "started_at": rfc3339_ms(start), "duration_ms": 3, "outcome": "ok",
        "response": {"name": "LumiRealm"}
    });
    let mut dial_msg = message(
        &me,
        "event.phoneline.dial",
        "ses_mirror0000000001",
        Some(1),
        dial,
    );
    dial_msg["provenance"] =
        json!({"sensor": format!("{}:phoneline", me.device_id()), "captured_at": dial_msg["ts"]});
    dial_msg["labels"] = json!({"consent": "product_operation", "retention": "standard"});
    phone.send_value(&dial_msg).await.unwrap();
    let params = json!({"to": "+15551234567", "body": "hi"});
    let now = switchboard::clock::Clock::now_ms(&switchboard::clock::SystemClock);
    let propose = message(
        &me,
        "action.propose",
        "ses_runtime000000001",
        None,
        json!({"action_id": "act_hostile01", "tool": "messages.send", "params": params,
               "params_hash": switchboard::ifp::params_hash(&params), "risk": "medium",
               "idempotency_key": "act_hostile01", "reason": HOSTILE_REASON,
               "expires_at": rfc3339_ms(now + 300_000)}),
    );
    phone.send_value(&propose).await.unwrap();
    until("the dial to be held", || {
        desk.hub()
            .and_then(|h| h.phone(me.device_id()))
            .is_some_and(|p| p.dials == 1)
    })
    .await;
    until("the proposal's notification", || {
        host.calls()
            .iter()
            .any(|c| matches!(c, HostCall::Notify(_)))
    })
    .await;
    let shown: Vec<_> = host
        .calls()
        .into_iter()
        .filter_map(|c| match c {
            HostCall::Notify(n) => Some(n),
            _ => None,
        })
        .collect();
    assert_eq!(
        shown[0].body,
        // The phone is named by the label it paired under (markup in it escaped too).
        "&lt;a href=\"x\"&gt;Pixel&lt;/a&gt; &amp;amp; Approved asks you to confirm: &lt;b&gt;Send&lt;/b&gt; \
         &lt;a href=\"https://evil.example\"&gt;this&lt;/a&gt; &amp;amp; more line two. Confirm on the phone.",
        "{shown:?}"
    );

    // Settings, exports (relative, nested, absolute), and a path leaving the export folder.
    desk.change()
        .unwrap()
        .save_settings(desk.get_settings())
        .unwrap();
    let s = desk
        .change()
        .unwrap()
        .dials_export(switchboard::app::dials::ExportRequest {
            path: "all.jsonl".into(),
            replace: Some(true),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(s.lines, 1, "{s:?}");
    // A folder the person chose (it must exist); the file in it is private.
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(home.join("elsewhere"))
        .unwrap();
    let outside = home.join("elsewhere").join("out.jsonl");
    desk.change()
        .unwrap()
        .dials_export(switchboard::app::dials::ExportRequest {
            path: outside.display().to_string(),
            replace: Some(true),
            ..Default::default()
        })
        .await
        .unwrap();
    for bad in ["../escape.jsonl", "sub/../../escape.jsonl", "./.."] {
        let e = desk
            .change()
            .unwrap()
            .dials_export(switchboard::app::dials::ExportRequest {
                path: bad.into(),
                replace: Some(true),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(e.kind, IpcErrorKind::InvalidInput, "{bad}: {e}");
        assert!(e.message.contains(bad), "names the path: {e}");
    }
    assert!(!home.join("data").join("escape.jsonl").exists());

    // A pairings file (LumiAgent's) opened and a phone line revoked, with its backup.
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(home.join("lumi"))
        .unwrap();
    let pairings = home.join("lumi").join("phoneline-pairings.json");
    std::fs::write(
        &pairings,
        serde_json::to_string_pretty(&json!({"version": 1, "pairings": {
            "lumirealm": {"identifier": "lumirealm", "displayName": "LumiRealm", "allowed": true,
                          "manifestHash": "cd".repeat(32), "decidedAt": 1_726_000_000_000u64}}}))
        .unwrap(),
    )
    .unwrap();
    loosen(&pairings, 0o600); // the test wrote it (under umask 0); the app rewrites it
    desk.change()
        .unwrap()
        .open_pairings_file(pairings.to_str().unwrap())
        .unwrap();
    desk.change()
        .unwrap()
        .revoke_phone_line("lumirealm", true)
        .unwrap();

    let running = [
        "config/settings.json",
        "data/paired-phones.json",
        "data/dials.sqlite3",
        "data/dials.sqlite3-wal",
        "data/dials.sqlite3-shm",
        "data/exports/all.jsonl",
        "elsewhere/out.jsonl",
        "lumi/phoneline-pairings.json",
        "lumi/phoneline-pairings.json.bak",
    ];
    assert_private(&home, "while running", &running);
    phone.close().await;
    assert!(desk.shutdown().await.in_time);
    assert_private(&home, "after shutdown", &running[..3]);

    // What an earlier version left readable is tightened at the next start.
    for (p, mode) in [
        ("config", 0o755),
        ("data", 0o755),
        ("config/settings.json", 0o644),
        ("data/paired-phones.json", 0o644),
        ("data/dials.sqlite3", 0o644),
    ] {
        loosen(&home.join(p), mode);
    }
    let again = app(&home, false, &host);
    assert_private(&home, "after a restart", &running[..3]);
    again.shutdown().await;

    // The demo keeps its files in <data>/demo.
    let demo = app(&home, true, &host);
    assert_private(
        &home,
        "with the demo",
        &["data/demo", "data/demo/dials.sqlite3"],
    );
    demo.shutdown().await;
}
