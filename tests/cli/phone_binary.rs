//! The `switchboard-phone` binary against an in-test desktop (Link + Hub + DialLog): pair with a
//! code, play a small scenario at `--rate max`, then come back with only the identity file
//! (hello, no pairing) and play it again with fresh ids.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::confirm;
use std::net::{IpAddr, Ipv4Addr};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchboard::bridge::store::BridgeStatusStore;
use switchboard::confirmations::ConfirmationMirror;
use switchboard::dials::{DialLog, DialLogConfig};
use switchboard::hub::{Hub, HubParts};
use switchboard::link::{bind, DesktopIdentity, Link, LinkConfig, MemoryStore};
use tokio::sync::oneshot;

const PERMISSION_ERROR: &str = "Shared RPC endpoint \"lumirealm.phoneline\" requires requester \"lumiagent\" to inherit owner \"lumirealm\" permissions: push_notification";

fn scenario() -> String {
    let describe: serde_json::Value = serde_json::from_str(include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/corpus/lumiverse/lumirealm.describe.json"
    )))
    .unwrap();
    let dial = |name: &str, at: u64, outcome: &str, extra: serde_json::Value| {
        let mut p = serde_json::json!({
            "dedup": format!("{{{{id:dial:{name}}}}}"), "caller": "lumiagent", "callee": "lumirealm",
            "endpoint": "lumirealm.phoneline", "op": "describe", "request": {"op": "describe"},
            "started_at": "{{ts}}", "duration_ms": 30, "outcome": outcome
        });
        for (k, v) in extra.as_object().unwrap() {
            p[k] = v.clone();
        }
        serde_json::json!({"at_ms": at, "msg": {"type": "event.phoneline.dial", "session": "{{id:ses:m}}", "payload": p}})
    };
    [
        serde_json::json!({"at_ms": 0, "msg": {"type": "event.runtime.autonomy", "session": "{{id:ses:rt}}", "payload": {"autonomy": "observe_only"}}}),
        dial("a", 10, "error", serde_json::json!({"error": PERMISSION_ERROR})),
        dial("b", 20, "ok", serde_json::json!({"response": describe})),
        serde_json::json!({"at_ms": 30, "msg": {"type": "action.propose", "session": "{{id:ses:rt}}", "payload": {
            "action_id": "{{id:act:x}}", "tool": "messages.send", "params": {"to": "+1 555 0100", "body": "hi", "reason": "test"},
            "params_hash": "{{params_hash}}", "risk": "high", "idempotency_key": "{{id:k:x}}", "expires_at": "{{ts+60000}}"}}}),
    ]
    .iter()
    .map(|l| l.to_string() + "\n")
    .collect()
}

async fn run_phone(args: Vec<String>) -> Output {
    tokio::time::timeout(
        Duration::from_secs(60),
        tokio::task::spawn_blocking(move || {
            Command::new(env!("CARGO_BIN_EXE_switchboard-phone"))
                .args(&args)
                .output()
                .unwrap()
        }),
    )
    .await
    .expect("switchboard-phone did not finish within 60 s")
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_pairs_with_a_code_and_plays_a_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = LinkConfig::new(dir.path());
    cfg.mdns = false;
    // One clock for the desktop: the hub judges time by the link's.
    let clock = Arc::clone(&cfg.clock);
    let (link, events) = Link::new(
        DesktopIdentity::load_or_create(&MemoryStore::new()).unwrap(),
        cfg,
    )
    .unwrap();
    let listener = bind(IpAddr::V4(Ipv4Addr::LOCALHOST), 0).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    tokio::spawn(link.run(listener, async {
        let _ = stop_rx.await;
    }));
    let dials = DialLog::spawn(DialLogConfig::default()).unwrap();
    let bridge = Arc::new(Mutex::new(BridgeStatusStore::new()));
    let confirmations = Arc::new(Mutex::new(ConfirmationMirror::new(None)));
    let mut parts = HubParts::new(dials.clone(), bridge.clone(), Some(link.clone()), clock);
    parts.confirmations = Some(confirmations.clone());
    let hub = Hub::new(parts);
    let proposals = || {
        let m = confirmations.lock().unwrap();
        m.waiting_count() + m.ended_count()
    };
    tokio::spawn(hub.clone().run(events));

    let scenario_path = dir.path().join("small.jsonl");
    std::fs::write(&scenario_path, scenario()).unwrap();
    let identity = dir.path().join("phone-identity.json");
    let invite = link.open_pairing(IpAddr::V4(Ipv4Addr::LOCALHOST));
    let fp = link.identity().cert_fingerprint().to_string();

    // Without --confirm-code and without a terminal, pairing is refused before anything is
    // sent: the phone's person has to compare the codes.
    let out = run_phone(vec![
        "--identity".into(),
        dir.path().join("no-person.json").display().to_string(),
        "--addr".into(),
        addr.to_string(),
        "--fp".into(),
        fp.clone(),
        "--code".into(),
        invite.code.clone(),
    ])
    .await;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--confirm-code"), "{err}");
    assert!(link.pending_pairing().is_none());

    let help = run_phone(vec!["--help".into()]).await;
    assert!(String::from_utf8_lossy(&help.stdout).contains("SIMULATOR"));

    let desktop_person = confirm::confirm_when_pending(link.clone(), Duration::from_secs(60));
    let out = run_phone(vec![
        "--identity".into(),
        identity.display().to_string(),
        "--label".into(),
        "Test phone".into(),
        "--addr".into(),
        addr.to_string(),
        "--fp".into(),
        fp.clone(),
        "--code".into(),
        invite.code.clone(),
        "--confirm-code".into(),
        "--scenario".into(),
        scenario_path.display().to_string(),
        "--rate".into(),
        "max".into(),
    ])
    .await;
    let person = desktop_person
        .await
        .unwrap()
        .expect("a pending pairing on the desktop");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    assert!(stderr.contains("SIMULATOR"), "says so on start: {stderr}");
    assert!(
        stdout.contains(&format!(
            "paired: verification code {}",
            person.verification_code
        )),
        "the phone showed the code the desktop's person confirmed ({}): {stdout}",
        person.verification_code
    );
    assert!(stdout.contains("0 unacknowledged"), "{stdout}");

    let phones = hub.phones();
    assert_eq!(phones.len(), 1);
    let p = &phones[0];
    assert_eq!(p.label, "Test phone");
    assert_eq!(p.dials, 2);
    assert_eq!(proposals(), 1);
    assert_eq!(p.autonomy.len(), 1);
    let snap = bridge.lock().unwrap().snapshot();
    assert!(snap.banners.is_empty());
    assert_eq!(
        snap.history.len(),
        1,
        "raised by the permission error, cleared by the ok dial"
    );
    assert_eq!(link.paired_phones().len(), 1);
    let kept: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&identity).unwrap()).unwrap();
    assert_eq!(kept["desktop"]["cert_fp"], fp.as_str());

    // Again with only the identity file: hello without pairing, fresh ids, twice the dials.
    let out = run_phone(vec![
        "--identity".into(),
        identity.display().to_string(),
        "--scenario".into(),
        scenario_path.display().to_string(),
        "--rate".into(),
        "500/s".into(),
        "--count".into(),
        "2".into(),
    ])
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!stdout.contains("paired:"), "{stdout}");
    assert_eq!(hub.phones()[0].dials, 6);
    assert_eq!(proposals(), 3);

    // A wrong fingerprint is refused before anything is sent.
    let out = run_phone(vec![
        "--identity".into(),
        dir.path().join("other.json").display().to_string(),
        "--addr".into(),
        addr.to_string(),
        "--fp".into(),
        "0".repeat(64),
        "--code".into(),
        "123456".into(),
        "--confirm-code".into(),
        "--scenario".into(),
        scenario_path.display().to_string(),
    ])
    .await;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("certificate mismatch"));

    // A code without the desktop's fingerprint from the link or the person is refused before
    // anything is looked up or sent: mDNS is only a hint.
    let out = run_phone(vec![
        "--identity".into(),
        dir.path().join("mdns.json").display().to_string(),
        "--code".into(),
        "123456".into(),
        "--mdns-wait".into(),
        "1".into(),
    ])
    .await;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("never from mDNS"), "{err}");
    assert!(!err.contains("looking for a Switchboard desktop"), "{err}");
    let _ = stop_tx.send(());
}

/// A phone that cannot scan pairs from the one typed line (`address:port code`, no
/// fingerprint): it trusts the certificate on first use, both screens show the same
/// verification code (which binds that certificate), and the identity file pins the desktop's
/// real fingerprint for every later connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_pairs_from_a_typed_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = LinkConfig::new(dir.path());
    cfg.mdns = false;
    let (link, mut events) = Link::new(
        DesktopIdentity::load_or_create(&MemoryStore::new()).unwrap(),
        cfg,
    )
    .unwrap();
    let listener = bind(IpAddr::V4(Ipv4Addr::LOCALHOST), 0).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (_stop_tx, stop_rx) = oneshot::channel::<()>();
    tokio::spawn(link.run(listener, async {
        let _ = stop_rx.await;
    }));
    tokio::spawn(async move { while events.recv().await.is_some() {} });
    let invite = link.open_pairing(IpAddr::V4(Ipv4Addr::LOCALHOST));
    assert_eq!(invite.typed_line, format!("{addr} {}", invite.code));
    let identity = dir.path().join("typed.json");
    let desktop_person = confirm::confirm_when_pending(link.clone(), Duration::from_secs(60));
    let out = run_phone(vec![
        "--identity".into(),
        identity.display().to_string(),
        "--typed".into(),
        invite.typed_line.clone(),
        "--confirm-code".into(),
        "--pair-only".into(),
    ])
    .await;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fp = link.identity().cert_fingerprint().to_string();
    assert!(
        text.contains(&format!("certificate {fp} trusted on first use")),
        "{text}"
    );
    let shown = desktop_person
        .await
        .unwrap()
        .expect("the desktop showed a pending pairing");
    assert!(
        text.contains(&format!(
            "paired: verification code {}",
            shown.verification_code
        )),
        "the phone and the desktop showed the same code: {text}"
    );
    assert_eq!(link.paired_phones().len(), 1);
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&identity).unwrap()).unwrap();
    assert_eq!(
        file["desktop"]["cert_fp"], fp,
        "the real certificate is pinned"
    );

    // A bad line is refused in words before anything is sent.
    let out = run_phone(vec![
        "--identity".into(),
        dir.path().join("bad.json").display().to_string(),
        "--typed".into(),
        format!("{} 12-34", addr.ip()),
        "--pair-only".into(),
    ])
    .await;
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("address:port"),
        "{out:?}"
    );

    // A line naming two addresses, the first one where nothing listens: the phone tries both
    // (as a link's), pairs over the second and reports the first as failed.
    let dead = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let dead_addr = dead.local_addr().unwrap();
    drop(dead);
    let invite = link.open_pairing(IpAddr::V4(Ipv4Addr::LOCALHOST));
    let desktop_person = confirm::confirm_when_pending(link.clone(), Duration::from_secs(60));
    let out = run_phone(vec![
        "--identity".into(),
        dir.path().join("typed2.json").display().to_string(),
        "--typed".into(),
        format!("{dead_addr} {addr} {}", invite.code),
        "--confirm-code".into(),
        "--pair-only".into(),
    ])
    .await;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains(&format!("connected to {addr}")), "{text}");
    assert!(
        text.contains(&format!("attempt {dead_addr} Failed")),
        "the dead address was tried first: {text}"
    );
    assert!(desktop_person.await.unwrap().is_some());
    assert_eq!(link.paired_phones().len(), 2);
}

/// `switchboard-phone --help` begins with what it is (a simulator, and where its key is
/// kept), not the package's description of the crates.
#[test]
fn help_says_what_the_simulator_is() {
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard-phone"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("A simulated phone for Switchboard. SIMULATOR:"),
        "{text}"
    );
}
