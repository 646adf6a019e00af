//! The application layer without Tauri: a real [`App`] on loopback with a [`RecordingHost`],
//! a phone paired through the real link, and the app's own stores read back.
//!
//! - the Phones snapshot across connect and disconnect (and the tray and events the host got);
//! - phone-line settings and autonomy applied in order under a burst of 10 000 dials, with
//!   every notice reaching the host (nothing dropped);
//! - revoke in an opened pairings file that changed on disk (a conflict, nothing written);
//! - quit: dials the hub holds just before [`App::shutdown`] are all in SQLite after it.
//! - a key store locked at start: said in words, recovered without a restart once unlocked;
//!   locked again while running, the link keeps working and nothing private is in a file.
//!
//! Every test binds 127.0.0.1:0 and every wait is bounded.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use switchboard::app::{App, AppConfig, AppPaths, HostCall, IdentityStore, RecordingHost};
use switchboard::confirmations::ConfirmationMirror;
use switchboard::error::IpcErrorKind;
use switchboard::hub::HubNotice;
use switchboard::link::phone_client::{envelope, PhoneClient, PhoneIdentity};
use switchboard::link::rfc3339_ms;
use switchboard::runtime::Autonomy;

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const WAIT: Duration = Duration::from_secs(30);

struct Desk {
    app: Arc<App>,
    host: Arc<RecordingHost>,
    home: tempfile::TempDir,
}

fn build() -> Desk {
    build_in(tempfile::tempdir().unwrap())
}

/// An app over the data in `home` (a second start of the same desktop).
fn build_in(home: tempfile::TempDir) -> Desk {
    let mut config = AppConfig::new(AppPaths::under(home.path()), false);
    config.identity = IdentityStore::Memory;
    config.listen = (LOOPBACK, 0);
    config.mdns = false;
    // A bound only a hang breaks: these tests prove the shutdown's order and what it keeps,
    // not its speed, and run under wine beside compilers too.
    config.shutdown_budget = std::time::Duration::from_secs(30);
    let host = Arc::new(RecordingHost::new());
    let app = App::new(
        config,
        host.clone(),
        tokio::runtime::Handle::current(),
        ConfirmationMirror::with_bundled_catalogue(),
    );
    Desk { app, host, home }
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

async fn start() -> Desk {
    let desk = build();
    desk.app.start_link();
    until("the link to listen", || {
        desk.app.phones.link().is_some() && desk.app.hub().is_some()
    })
    .await;
    desk
}

/// A phone paired through the link's pairing window, still connected (pairing says hello).
async fn pair(desk: &Desk, label: &str) -> (PhoneIdentity, PhoneClient) {
    let link = desk.app.phones.link().unwrap();
    let invite = link.open_pairing(LOOPBACK);
    let me = PhoneIdentity::generate(label);
    let addr = link.local_addr().unwrap();
    let mut phone = PhoneClient::connect(addr, link.identity().cert_fingerprint())
        .await
        .unwrap();
    // As the person does it: the Phones view shows the pending pairing's code, "Codes match".
    let shown = phone.pair_start(&me, &invite.code, vec![]).await.unwrap();
    let snap = desk.app.phones.snapshot();
    let pending = snap
        .pending
        .expect("the Phones view shows the pending pairing");
    assert_eq!(pending.verification_code, shown.verification_code);
    assert!(
        snap.pairing.is_none(),
        "the used window is not offered meanwhile"
    );
    assert!(!snap
        .phones
        .iter()
        .any(|p| p.record.device_id == me.device_id()));
    let stale = desk
        .app
        .change()
        .unwrap()
        .confirm_pairing("pairing_0", true)
        .unwrap_err();
    assert_eq!(stale.kind, switchboard::error::IpcErrorKind::NotFound);
    desk.app
        .change()
        .unwrap()
        .confirm_pairing(&pending.id, true)
        .unwrap();
    phone
        .pair_confirm(&me, &shown, true, (1, 1))
        .await
        .expect("pairing succeeds");
    (me, phone)
}

/// An `event.*` message of `me` in `session` with `seq` and `dedup`.
fn event(me: &PhoneIdentity, kind: &str, session: &str, seq: u64, mut payload: Value) -> Value {
    payload["seq"] = json!(seq);
    payload["dedup"] = json!(format!("{kind}-{session}-{seq}"));
    let mut v = envelope(kind, Some(&me.entity_id()), payload);
    v["session"] = json!(session);
    v["device"] = json!(me.device_id());
    v["generation"] = json!(1);
    v["provenance"] =
        json!({"sensor": format!("{}:phoneline", me.device_id()), "captured_at": v["ts"]});
    v["labels"] = json!({"consent": "product_operation", "retention": "standard"});
    v
}

fn dial(i: u64) -> Value {
    let start = 1_790_000_000_000 + i;
    json!({
        "call_id": format!("c{i}"), "caller": "lumiagent", "callee": "lumirealm",
        "endpoint": "lumirealm.phoneline", "op": "describe",
        "request": {"op": "describe", "callId": format!("c{i}")},
        "started_at": rfc3339_ms(start), "duration_ms": 3, "outcome": "ok",
        "response": {"name": "LumiRealm"}
    })
}

fn settings(lines: &[&str]) -> Value {
    json!({
        "registry": {"version": 1, "phoneLines":
            lines.iter().map(|l| json!({"identifier": l, "name": l})).collect::<Vec<_>>()},
        "lines": lines.iter().map(|l| json!({"identifier": l, "name": l, "permissions": []})).collect::<Vec<_>>()
    })
}

fn notices(host: &RecordingHost) -> Vec<HubNotice> {
    host.calls()
        .into_iter()
        .filter_map(|c| match c {
            HostCall::Emit(switchboard::app::AppEvent::Notice(n)) => Some(n),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_phones_snapshot_follows_connect_and_disconnect() {
    let desk = start().await;
    let before = desk.app.phones.snapshot();
    assert!(before.phones.is_empty() && before.link_error.is_none());
    assert!(before.diagnostics.is_some(), "the link runs");

    let (me, phone) = pair(&desk, "Test phone").await;
    until("the phone to show as connected", || {
        desk.app
            .phones
            .snapshot()
            .phones
            .iter()
            .any(|p| p.record.device_id == me.device_id() && p.connected)
    })
    .await;
    let snap = desk.app.phones.snapshot();
    let status = &snap.phones[0];
    assert_eq!(status.record.label, "Test phone");
    assert_eq!(status.protocol_version, Some(1));
    assert!(status.address.as_deref().unwrap().starts_with("127.0.0.1:"));
    assert_eq!(
        snap.last_pairing
            .as_ref()
            .map(|p| (p.device_id.as_str(), p.ended)),
        Some((me.device_id(), None)),
        "the last pairing ended paired"
    );
    assert!(snap.pending.is_none(), "nothing waits once confirmed");
    assert!(desk.host.trays().iter().any(|t| t.connected == 1
        && t.tooltip() == "Switchboard: 1 phone connected"
        && t.entries
            .iter()
            .any(|e| e.label == "Test phone (connected)")));

    phone.close().await;
    until("the phone to show as disconnected", || {
        desk.app
            .phones
            .snapshot()
            .phones
            .iter()
            .any(|p| p.record.device_id == me.device_id() && !p.connected)
    })
    .await;
    until("the tray to say no phone", || {
        desk.host.trays().last().is_some_and(|t| t.connected == 0)
    })
    .await;
    let names = desk.host.event_names();
    assert!(
        names
            .iter()
            .filter(|n| **n == "switchboard://phones")
            .count()
            >= 3
    );
    assert!(desk.app.shutdown().await.in_time);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_and_autonomy_apply_in_order_under_a_burst_of_dials() {
    const DIALS: u64 = 10_000;
    let desk = start().await;
    let (me, mut phone) = pair(&desk, "Busy phone").await;
    let mirror_session = "ses_mirror0000000001";
    let runtime_session = "ses_runtime000000001";
    let mut seq = 0;
    let mut next = || {
        seq += 1;
        seq
    };
    phone
        .send_value(&event(
            &me,
            "event.phoneline.settings",
            mirror_session,
            next(),
            settings(&["lumirealm"]),
        ))
        .await
        .unwrap();
    for i in 0..DIALS {
        let s = next();
        phone
            .send_value(&event(
                &me,
                "event.phoneline.dial",
                mirror_session,
                s,
                dial(i),
            ))
            .await
            .unwrap();
        if i == DIALS / 2 {
            phone
                .send_value(&event(
                    &me,
                    "event.runtime.autonomy",
                    runtime_session,
                    1,
                    json!({"autonomy": "trusted_actions"}),
                ))
                .await
                .unwrap();
        }
    }
    let s = next();
    phone
        .send_value(&event(
            &me,
            "event.phoneline.settings",
            mirror_session,
            s,
            settings(&["lumirealm", "lumiweather"]),
        ))
        .await
        .unwrap();

    let device = me.device_id().to_string();
    until("the second settings snapshot to be applied", || {
        notices(&desk.host)
            .iter()
            .filter(|n| matches!(n, HubNotice::SettingsUpdated { .. }))
            .count()
            == 2
    })
    .await;
    let seen = notices(&desk.host);
    // Every dial-count notice reached the host, in order, ending at the total.
    let counts: Vec<u64> = seen
        .iter()
        .filter_map(|n| match n {
            HubNotice::DialCount { total, .. } => Some(*total),
            _ => None,
        })
        .collect();
    assert_eq!(counts.last(), Some(&DIALS), "{counts:?}");
    assert!(counts.windows(2).all(|w| w[0] < w[1]), "counts go up");
    let pos = |f: &dyn Fn(&HubNotice) -> bool| seen.iter().position(f).unwrap();
    let first_settings = pos(&|n| matches!(n, HubNotice::SettingsUpdated { lines: 1, .. }));
    let autonomy = pos(&|n| matches!(n, HubNotice::AutonomyChanged { .. }));
    let second_settings = pos(&|n| matches!(n, HubNotice::SettingsUpdated { lines: 2, .. }));
    assert!(first_settings < autonomy && autonomy < second_settings);
    // The dial counted just before the autonomy notice is the one sent before it.
    let before_autonomy = seen[..autonomy]
        .iter()
        .rev()
        .find_map(|n| match n {
            HubNotice::DialCount { total, .. } => Some(*total),
            _ => None,
        })
        .unwrap();
    assert!(before_autonomy <= DIALS / 2 + 1, "{before_autonomy}");

    // The hub set the autonomy in the Confirmations mirror itself.
    assert_eq!(
        desk.app.confirmations.lock().autonomy_of(&device),
        (Autonomy::TrustedActions, true)
    );
    // The Phone lines view shows the phone's latest settings.
    let lines = desk.app.phone_lines_snapshot();
    assert_eq!(
        lines.source,
        switchboard::app::phone_lines::SourceInfo::Phone {
            phone: device.clone()
        }
    );
    let ids: Vec<_> = lines.lines.iter().map(|l| l.identifier.as_str()).collect();
    assert!(ids.contains(&"lumiweather"), "{ids:?}");
    assert!(desk
        .host
        .event_names()
        .contains(&"switchboard://phone-lines"));
    let held = desk.app.dials().unwrap().log.status().await.unwrap();
    assert_eq!(held.held, DIALS, "{held:?}");
    phone.close().await;
    assert!(desk.app.shutdown().await.in_time);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dials_held_just_before_quit_are_all_in_sqlite_after_it() {
    const DIALS: u64 = 2_000;
    let desk = start().await;
    let (me, mut phone) = pair(&desk, "Quitting phone").await;
    for i in 0..DIALS {
        phone
            .send_value(&event(
                &me,
                "event.phoneline.dial",
                "ses_mirror0000000001",
                i + 1,
                dial(i),
            ))
            .await
            .unwrap();
    }
    let hub = desk.app.hub().unwrap();
    until("the hub to hold every dial", || {
        hub.phone(me.device_id()).is_some_and(|p| p.dials == DIALS)
    })
    .await;
    let report = desk.app.shutdown().await;
    assert!(report.in_time && !report.already, "{report:?}");
    eprintln!(
        "shutdown with {DIALS} dials held took {} ms",
        report.took_ms
    );
    assert!(
        desk.app.shutdown().await.already,
        "a second call does nothing"
    );
    // The phone was told: its connection ends with the desktop's close frame (after any
    // acknowledgements still queued), not a timeout.
    let mut ended = None;
    for _ in 0..DIALS {
        if let Err(e) = phone.recv().await {
            ended = Some(e);
            break;
        }
    }
    assert!(
        matches!(
            ended,
            Some(switchboard::link::phone_client::PhoneError::Closed)
        ),
        "{ended:?}"
    );
    let path = desk.home.path().join("data").join("dials.sqlite3");
    let db = rusqlite::Connection::open(&path).unwrap();
    let rows: i64 = db
        .query_row("SELECT COUNT(*) FROM dials", [], |r| r.get(0))
        .unwrap();
    // A flood's batches may still be in the journal (committed, not moved into rows yet).
    let journaled = switchboard::dials::store::journaled_dials(&db, &path)
        .unwrap()
        .len();
    assert_eq!(rows as u64 + journaled as u64, DIALS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoke_refuses_a_file_changed_on_disk_and_writes_nothing() {
    let desk = build();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("phoneline-pairings.json");
    // LumiAgent's file shape (`phone-line.md`, "Discovery and pairing").
    let original = serde_json::to_string_pretty(&json!({
        "version": 1,
        "pairings": {
            "lumirealm": {"identifier": "lumirealm", "displayName": "LumiRealm", "allowed": true,
                          "manifestHash": "cd".repeat(32), "decidedAt": 1_726_000_000_000u64}
        }
    }))
    .unwrap();
    std::fs::write(&file, &original).unwrap();
    desk.app
        .change()
        .unwrap()
        .open_pairings_file(file.to_str().unwrap())
        .unwrap();
    let id = "lumirealm".to_string();

    let e = desk
        .app
        .change()
        .unwrap()
        .revoke_phone_line(&id, false)
        .unwrap_err();
    assert_eq!(e.kind, IpcErrorKind::InvalidInput);

    // Someone else changes the file after it was opened.
    let mut changed: Value = serde_json::from_str(&original).unwrap();
    changed["note"] = json!("edited elsewhere");
    let changed = serde_json::to_string_pretty(&changed).unwrap();
    std::fs::write(&file, &changed).unwrap();
    let e = desk
        .app
        .change()
        .unwrap()
        .revoke_phone_line(&id, true)
        .unwrap_err();
    assert_eq!(e.kind, IpcErrorKind::Conflict, "{e}");
    assert!(e.message.contains("changed on disk"), "{e}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), changed);
    assert!(!dir.path().join("phoneline-pairings.json.bak").exists());

    // Now shown as it is, a second revoke goes through and keeps the previous file.
    desk.app
        .change()
        .unwrap()
        .revoke_phone_line(&id, true)
        .unwrap();
    let after: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(after["note"], "edited elsewhere");
    assert_eq!(after["pairings"]["lumirealm"]["allowed"], false);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("phoneline-pairings.json.bak")).unwrap(),
        changed
    );
    desk.app.shutdown().await;
}

/// upstream-behaviour.md: a pairings file LumiAgent treats as empty (version not 1, `pairings`
/// not an object, not JSON) opens with nothing paired and the reason in words, and is never
/// written: revoke refuses, and no describe can be pasted against it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_lumiagent_treats_as_empty_shows_nothing_paired_and_is_never_written() {
    let desk = build();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("phoneline-pairings.json");
    let record = json!({"identifier": "lumirealm", "displayName": "LumiRealm", "allowed": true,
                        "manifestHash": "cd".repeat(32), "decidedAt": 1_726_000_000_000u64});
    let describe = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/corpus/lumiverse/lumirealm.describe.json"
    ))
    .unwrap();
    for (text, want) in [
        (
            json!({"version": 2, "pairings": {"lumirealm": record}}).to_string(),
            "because its version is 2, not 1",
        ),
        (
            json!({"version": 1, "pairings": [record]}).to_string(),
            "because its pairings is an array, not an object",
        ),
        (
            format!("{{\"version\":1,\"pairings\":{{\"lumirealm\":{record}}}"),
            "because it is not JSON",
        ),
    ] {
        std::fs::write(&file, &text).unwrap();
        let snap = desk
            .app
            .change()
            .unwrap()
            .open_pairings_file(file.to_str().unwrap())
            .unwrap();
        let src = serde_json::to_value(&snap.source).unwrap();
        let words = src["treated_as_empty"].as_str().unwrap();
        assert!(
            words.starts_with("LumiAgent treats this file as empty"),
            "{words}"
        );
        assert!(words.contains(want), "{words}");
        assert_eq!(src["records"], 0);
        assert!(!snap.can_revoke);
        let realm = snap
            .lines
            .iter()
            .find(|l| l.identifier == "lumirealm")
            .unwrap();
        assert_eq!(realm.allowed, None);
        assert!(snap
            .lines
            .iter()
            .all(|l| l.state != switchboard::phone_line::pairing::PhoneLineState::Paired));

        let e = desk
            .app
            .change()
            .unwrap()
            .revoke_phone_line("lumirealm", true)
            .unwrap_err();
        assert_eq!(e.kind, IpcErrorKind::InvalidInput, "{e}");
        assert!(e.message.contains(want), "{e}");
        let e = desk
            .app
            .change()
            .unwrap()
            .attach_describe("lumirealm", &describe)
            .unwrap_err();
        assert_eq!(e.kind, IpcErrorKind::InvalidInput, "{e}");
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            text,
            "never written"
        );
        assert!(!dir.path().join("phoneline-pairings.json.bak").exists());
    }
    // A well-formed file opened after it shows its record again.
    std::fs::write(
        &file,
        json!({"version": 1, "pairings": {"lumirealm": record}}).to_string(),
    )
    .unwrap();
    let snap = desk
        .app
        .change()
        .unwrap()
        .open_pairings_file(file.to_str().unwrap())
        .unwrap();
    assert!(snap.can_revoke);
    let src = serde_json::to_value(&snap.source).unwrap();
    assert_eq!(src["treated_as_empty"], Value::Null);
    assert_eq!(snap.lines[0].allowed, Some(true));
    desk.app.shutdown().await;
}

/// One directory for every banner: a phone that reported no manifests is judged with the
/// built-in LumiAgent and LumiRealm ones, by the hub and by the dial inspector alike, so
/// nobody is told to grant a permission the extension does not declare.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hub_and_the_dial_inspector_judge_banners_with_one_directory() {
    let desk = start().await;
    let (me, mut phone) = pair(&desk, "Banner phone").await;
    let failing = |i: u64, perm: &str| {
        let mut d = dial(i);
        d["outcome"] = json!("error");
        d["error"] = json!(format!("Shared RPC endpoint \"lumirealm.phoneline\" requires requester \"lumiagent\" to inherit owner \"lumirealm\" permissions: {perm}"));
        d.as_object_mut().unwrap().remove("response");
        d
    };
    // LumiAgent's manifest declares push_notification, not mcp_servers.
    for (seq, perm) in [(1, "mcp_servers"), (2, "push_notification")] {
        phone
            .send_value(&event(
                &me,
                "event.phoneline.dial",
                "ses_mirror0000000001",
                seq,
                failing(seq, perm),
            ))
            .await
            .unwrap();
    }
    let hub = desk.app.hub().unwrap();
    until("both dials", || {
        hub.phone(me.device_id()).is_some_and(|p| p.dials == 2)
    })
    .await;
    let banners = desk.app.bridge_snapshot().banners;
    assert_eq!(banners.len(), 1, "{banners:?}");
    assert_eq!(
        banners[0].message,
        "LumiAgent is missing push_notification, required for LumiRealm communication."
    );
    let page = desk
        .app
        .dials()
        .unwrap()
        .dials_query(None, None)
        .await
        .unwrap();
    for d in &page.dials {
        let shown = desk
            .app
            .dial_banner(&d.id, Some(d.start_ms), None, None)
            .await
            .unwrap();
        let wants_push = d.error.as_deref().unwrap().ends_with("push_notification");
        assert_eq!(
            shown.as_ref().map(|b| b.banner.message.as_str()),
            wants_push.then_some(banners[0].message.as_str()),
            "{}",
            d.id
        );
    }
    phone.close().await;
    desk.app.shutdown().await;
}

const SPEC_EXAMPLE: &str = "Shared RPC endpoint \"lumirealm.phoneline\" requires requester \"lumiagent\" to inherit owner \"lumirealm\" permissions: push_notification";
const SPEC_BANNER: &str =
    "LumiAgent is missing push_notification, required for LumiRealm communication.";

/// Dial `i` on lumiagent → lumirealm.phoneline: `ok`, or failed with the spec's example.
fn dial_on_the_line(i: u64, fails: bool) -> Value {
    let mut d = dial(i);
    if fails {
        d["outcome"] = json!("error");
        d["error"] = json!(SPEC_EXAMPLE);
        d.as_object_mut().unwrap().remove("response");
    }
    d
}

/// A banner that flaps (a line's calls fail and succeed in turn) raises and clears it each
/// time, and the window hears of each, but the desktop notification comes once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flapping_banner_notifies_the_desktop_once() {
    use switchboard::confirmations::notify::BANNER_TITLE;
    let desk = start().await;
    let (a, mut phone) = pair(&desk, "Phone A").await;
    let hub = desk.app.hub().unwrap();
    let session = "ses_flapping00000001";
    for i in 1..=6u64 {
        phone
            .send_value(&event(
                &a,
                "event.phoneline.dial",
                session,
                i,
                dial_on_the_line(i, i % 2 == 1),
            ))
            .await
            .unwrap();
    }
    until("six dials", || {
        hub.phone(a.device_id()).is_some_and(|p| p.dials == 6)
    })
    .await;
    until("the third banner cleared", || {
        notices(&desk.host)
            .iter()
            .filter(|n| matches!(n, HubNotice::BannerCleared { .. }))
            .count()
            == 3
    })
    .await;
    let raised = notices(&desk.host)
        .iter()
        .filter(|n| matches!(n, HubNotice::BannerRaised { .. }))
        .count();
    assert_eq!(raised, 3, "the hub raised the banner three times");
    let notified = desk
        .host
        .calls()
        .into_iter()
        .filter(|c| matches!(c, HostCall::Notify(n) if n.title == BANNER_TITLE))
        .count();
    assert_eq!(
        notified, 1,
        "one desktop notification for the flapping banner"
    );
}

/// The Bridge status view reads again when the bridge store changed, and only then: a failing
/// dial raises a banner, the same failure again changes its count (no notice of its own says
/// so), and a success on a path with no banner changes nothing the view shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_window_hears_of_every_bridge_change_and_nothing_else() {
    let desk = start().await;
    let (a, mut phone) = pair(&desk, "Phone A").await;
    let hub = desk.app.hub().unwrap();
    let session = "ses_bridgeevent000001";
    let bridge_events = |host: &switchboard::app::RecordingHost| {
        host.event_names()
            .into_iter()
            .filter(|n| *n == "switchboard://bridge")
            .count()
    };
    let mut sent = 0u64;
    // (fails, whether the view changes): raised, seen again, cleared, a success with none.
    for (fails, changes) in [(true, true), (true, true), (false, true), (false, false)] {
        let before = bridge_events(&desk.host);
        let dial_counts = |host: &switchboard::app::RecordingHost| {
            notices(host)
                .iter()
                .filter(|n| matches!(n, HubNotice::DialCount { .. }))
                .count()
        };
        let counts_before = dial_counts(&desk.host);
        let count_before = desk.app.bridge_snapshot().banners.first().map(|b| b.count);
        sent += 1;
        phone
            .send_value(&event(
                &a,
                "event.phoneline.dial",
                session,
                sent,
                dial_on_the_line(sent, fails),
            ))
            .await
            .unwrap();
        until("the dial applied", || {
            hub.phone(a.device_id()).is_some_and(|p| p.dials == sent)
        })
        .await;
        // The app decides on the bridge event before it passes the dial's count notice on
        // (synchronously, in the hub's task), so once that notice is here the event is too.
        until("the dial's count notice", || {
            dial_counts(&desk.host) > counts_before
        })
        .await;
        let after = bridge_events(&desk.host);
        assert_eq!(
            after > before,
            changes,
            "dial {sent} (fails: {fails}): bridge events {before} -> {after}, banner count {count_before:?} -> {:?}",
            desk.app.bridge_snapshot().banners.first().map(|b| b.count)
        );
    }
}

/// The tray's summary, which the app computes on every notice that may move a count (a
/// flapping banner raises and clears one many times a second), is built from the parts it lists
/// rather than the views' whole snapshots (those enumerated the network interfaces
/// and read the routing table each time, a quarter of the app's CPU while a phone streamed);
/// it is still the summary those snapshots give: the phone named, the banner, the waiting
/// confirmations soonest expiry first although they came the other way round.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tray_summary_is_the_one_the_views_snapshots_give() {
    use switchboard::app::tray::{summarize, TrayView};
    let desk = start().await;
    let (me, mut phone) = pair(&desk, "Tray phone").await;
    let session = "ses_trayline00000001";
    phone
        .send_value(&event(
            &me,
            "event.phoneline.dial",
            session,
            1,
            dial_on_the_line(1, true),
        ))
        .await
        .unwrap();
    let propose = |id: &str, action: &str, summary: &str, expires_ms: u64| {
        let params = json!({"to": "+1 555 0100", "body": action});
        let mut v = envelope(
            "action.propose",
            Some(&me.entity_id()),
            json!({
            "action_id": action, "tool": "messages.send", "params": params, "reason": summary,
            "params_hash": switchboard::ifp::params_hash(&params), "risk": "high",
            "idempotency_key": action, "expires_at": rfc3339_ms(expires_ms)}),
        );
        v["id"] = json!(id);
        v["session"] = json!(session);
        v["device"] = json!(me.device_id());
        v
    };
    // The later expiry first.
    phone
        .send_value(&propose(
            "msg_tray000000001",
            "act_tray_later01",
            "Send the later one",
            4_000_000_000_000,
        ))
        .await
        .unwrap();
    phone
        .send_value(&propose(
            "msg_tray000000002",
            "act_tray_soon001",
            "Send the sooner one",
            3_900_000_000_000,
        ))
        .await
        .unwrap();
    until("the banner and both proposals", || {
        let t = desk.app.tray_summary();
        t.banners == 1 && t.waiting == 2
    })
    .await;
    let live = desk.app.tray_summary();
    let from_views = summarize(
        &desk.app.phones.snapshot().tray_phones(),
        &desk.app.bridge_snapshot(),
        &desk.app.confirmations_snapshot(),
    );
    assert_eq!(live, from_views);
    assert_eq!((live.connected, live.banners, live.waiting), (1, 1, 2));
    let labels: Vec<(&str, TrayView)> = live
        .entries
        .iter()
        .map(|e| (e.label.as_str(), e.view))
        .collect();
    assert_eq!(labels[0], ("Tray phone (connected)", TrayView::Phones));
    assert_eq!(labels[1].1, TrayView::Bridge);
    assert!(labels[1].0.starts_with("Banner: "), "{labels:?}");
    assert_eq!(
        &labels[2..],
        &[
            (
                "Waiting: Send the sooner one (Tray phone)",
                TrayView::Confirmations
            ),
            (
                "Waiting: Send the later one (Tray phone)",
                TrayView::Confirmations
            ),
        ]
    );
    // The host was given it: the last tray it got is the live one.
    let last = desk
        .host
        .calls()
        .into_iter()
        .filter_map(|c| match c {
            HostCall::Tray(t) => Some(t),
            _ => None,
        })
        .next_back();
    assert_eq!(last, Some(live));
}

/// Banners per phone: two phones on one hub, the same call path. A phone's result
/// raises and clears only that phone's banner; the dial inspector shows the banner the hub
/// raised for a dial (and where it stands), and one derived from the text only for an imported
/// capture, marked as derived.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_phones_on_one_path_raise_and_clear_only_their_own_banners() {
    use switchboard::app::dials::{BannerOrigin, DialSource};
    use switchboard::bridge::store::{BannerStanding, RetireReason};
    let desk = start().await;
    let (a, mut phone_a) = pair(&desk, "Phone A").await;
    let (b, mut phone_b) = pair(&desk, "Phone B").await;
    let hub = desk.app.hub().unwrap();
    // One session each: the dial ids (`dedup` keys) differ between the phones.
    let (sa, sb) = ("ses_mirrorA000000001", "ses_mirrorB000000001");
    let held = |me: &PhoneIdentity, n: u64| hub.phone(me.device_id()).is_some_and(|p| p.dials == n);

    // A fails, then B succeeds on the same path: A's banner stays.
    phone_a
        .send_value(&event(
            &a,
            "event.phoneline.dial",
            sa,
            1,
            dial_on_the_line(1, true),
        ))
        .await
        .unwrap();
    until("A's failing dial", || held(&a, 1)).await;
    phone_b
        .send_value(&event(
            &b,
            "event.phoneline.dial",
            sb,
            1,
            dial_on_the_line(2, false),
        ))
        .await
        .unwrap();
    until("B's ok dial", || held(&b, 1)).await;
    let banners = desk.app.bridge_snapshot().banners;
    assert_eq!(banners.len(), 1, "{banners:?}");
    assert_eq!(banners[0].phone, a.device_id());
    assert_eq!(banners[0].message, SPEC_BANNER);
    let a_banner = banners[0].clone();

    // B fails, then A succeeds: only B's stays.
    phone_b
        .send_value(&event(
            &b,
            "event.phoneline.dial",
            sb,
            2,
            dial_on_the_line(3, true),
        ))
        .await
        .unwrap();
    until("B's failing dial", || held(&b, 2)).await;
    assert_eq!(desk.app.bridge_snapshot().banners.len(), 2);
    phone_a
        .send_value(&event(
            &a,
            "event.phoneline.dial",
            sa,
            2,
            dial_on_the_line(4, false),
        ))
        .await
        .unwrap();
    until("A's ok dial", || held(&a, 2)).await;
    let snap = desk.app.bridge_snapshot();
    let phones: Vec<_> = snap.banners.iter().map(|x| x.phone.as_str()).collect();
    assert_eq!(phones, [b.device_id()]);
    assert_eq!(snap.history.len(), 1);
    assert_eq!(snap.history[0].banner.phone, a.device_id());
    assert_eq!(snap.history[0].reason, RetireReason::CallSucceeded);
    // The notices name each phone's own banner (the observer emits a notice after the stores
    // show what it says: wait for it, bounded, rather than race it).
    until("the notice clearing A's banner", || {
        notices(&desk.host).iter().any(
            |n| matches!(n, HubNotice::BannerCleared { banner_id } if *banner_id == a_banner.id),
        )
    })
    .await;
    let seen = notices(&desk.host);
    assert!(!seen.iter().any(|n| matches!(n, HubNotice::BannerCleared { banner_id } if banner_id.starts_with(b.device_id()))));

    // The dial inspector: the hub's banner for each failing dial, with where it stands now.
    let page = desk
        .app
        .dials()
        .unwrap()
        .dials_query(None, None)
        .await
        .unwrap();
    let failing: Vec<_> = page.dials.iter().filter(|d| d.error.is_some()).collect();
    assert_eq!(failing.len(), 2);
    for d in &failing {
        let shown = desk
            .app
            .dial_banner(&d.id, Some(d.start_ms), None, None)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(shown.origin, BannerOrigin::RaisedByHub, "{}", d.id);
        assert_eq!(shown.banner.phone, *d.phone);
        let want = if *d.phone == *a.device_id() {
            BannerStanding::Retired {
                reason: RetireReason::CallSucceeded,
                at_ms: snap.history[0].retired_at_ms,
            }
        } else {
            BannerStanding::Current
        };
        assert_eq!(shown.standing, Some(want), "{}", d.id);
    }
    for d in page.dials.iter().filter(|d| d.error.is_none()) {
        assert_eq!(
            desk.app
                .dial_banner(&d.id, Some(d.start_ms), None, None)
                .await
                .unwrap(),
            None
        );
    }
    // The same dials as an imported capture: derived from the text, said so.
    let out = desk
        .app
        .change()
        .unwrap()
        .dials_export(switchboard::app::dials::ExportRequest {
            path: "capture.jsonl".into(),
            replace: Some(true),
            ..Default::default()
        })
        .await
        .unwrap();
    desk.app
        .change()
        .unwrap()
        .dials_import(out.path)
        .await
        .unwrap();
    let d = failing[0];
    let shown = desk
        .app
        .dial_banner(&d.id, Some(d.start_ms), None, Some(DialSource::Imported))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(shown.origin, BannerOrigin::Derived);
    assert_eq!(shown.standing, None);
    assert_eq!(shown.banner.message, SPEC_BANNER);
    assert_eq!(shown.banner.serial, 0);
    phone_a.close().await;
    phone_b.close().await;
    desk.app.shutdown().await;
}

/// A phone's settings carry each line's last `describe`: a failed one raises the phone's
/// banner on the describe path (lumiagent → lumirealm.phoneline) with the texts a dial there
/// gives; the same snapshot again changes nothing; a later answered describe clears it. A
/// pairing record of the wrong shape in the same settings is read, not refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_failures_in_settings_raise_and_clear_banners_as_a_dial_does() {
    let desk = start().await;
    let (me, mut phone) = pair(&desk, "Describe phone").await;
    let hub = desk.app.hub().unwrap();
    let session = "ses_mirror0000000001";
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/corpus/lumiverse/lumirealm.describe.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let with_describe = |describe: Value| {
        json!({
            "registry": {"version": 1, "phoneLines": [{"identifier": "lumirealm", "name": "LumiRealm"}]},
            "pairings": {"version": 1, "pairings": {"lumirealm": {"identifier": "lumirealm",
                "displayName": "LumiRealm", "allowed": "yes", "manifestHash": "ab", "decidedAt": 1}}},
            "lines": [{"identifier": "lumirealm", "name": "LumiRealm", "describe": describe}]
        })
    };
    let failed = json!({"at": "2026-07-21T01:00:00.000Z", "status": "failed",
        "error": "Shared RPC endpoint \"lumirealm.phoneline\" requires requester \"lumiagent\"\r\n  to inherit owner \"lumirealm\" permissions: push_notification"});
    let updates = || {
        notices(&desk.host)
            .iter()
            .filter(|n| matches!(n, HubNotice::SettingsUpdated { .. }))
            .count()
    };
    for seq in [1, 2] {
        phone
            .send_value(&event(
                &me,
                "event.phoneline.settings",
                session,
                seq,
                with_describe(failed.clone()),
            ))
            .await
            .unwrap();
        until("the settings", || updates() == seq as usize).await;
    }
    let banners = desk.app.bridge_snapshot().banners;
    assert_eq!(banners.len(), 1, "{banners:?}");
    let banner = &banners[0];
    assert_eq!(banner.message, SPEC_BANNER);
    assert_eq!(
        banner.fix,
        "In Lumiverse, open Extensions, then LumiAgent, and grant push_notification"
    );
    assert!(
        banner.manifest_checked,
        "judged with the built-in manifests"
    );
    assert_eq!(banner.phone, me.device_id());
    assert_eq!(banner.path, switchboard::hub::describe_path("lumirealm"));
    assert_eq!(
        banner.count, 1,
        "the repeated snapshot is not counted again"
    );
    // The settings were applied, their odd pairing record read as LumiAgent reads it.
    let line = hub
        .phone(me.device_id())
        .unwrap()
        .lines
        .into_iter()
        .find(|l| l.identifier == "lumirealm")
        .unwrap();
    assert!(
        line.warnings
            .iter()
            .any(|w| w.contains("rewrites it with allowed: true")),
        "{:?}",
        line.warnings
    );
    assert!(
        line.warnings.iter().any(|w| w.contains("describe failed")),
        "{:?}",
        line.warnings
    );

    // A later answered describe clears the banner.
    let answered =
        json!({"at": "2026-07-21T01:05:00.000Z", "status": "answered", "manifest": manifest});
    phone
        .send_value(&event(
            &me,
            "event.phoneline.settings",
            session,
            3,
            with_describe(answered),
        ))
        .await
        .unwrap();
    until("the third settings", || updates() == 3).await;
    let snap = desk.app.bridge_snapshot();
    assert!(snap.banners.is_empty(), "{:?}", snap.banners);
    assert_eq!(snap.history.len(), 1);
    // The old failed describe sent again (older than the answer) raises nothing.
    phone
        .send_value(&event(
            &me,
            "event.phoneline.settings",
            session,
            4,
            with_describe(failed),
        ))
        .await
        .unwrap();
    until("the fourth settings", || updates() == 4).await;
    assert!(desk.app.bridge_snapshot().banners.is_empty());
    phone.close().await;
    desk.app.shutdown().await;
}

/// The autonomy beside a proposal is its session's (`openphone-runtime-protocol.md`,
/// "Autonomy": a tool call without its own autonomy inherits the session's; with none,
/// `ask_before_action`), not the phone's latest, and says where it came from.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_autonomy_beside_a_proposal_is_its_sessions() {
    use switchboard::confirmations::AutonomySource;
    let desk = start().await;
    let (me, mut phone) = pair(&desk, "Runtime phone").await;
    let (trusted, observing, silent) = (
        "ses_trusted000000001",
        "ses_observe000000001",
        "ses_silent0000000001",
    );
    let propose = |id: &str, action: &str, session: &str| {
        let params = json!({"to": "+1 555 0100", "body": "hi"});
        let mut v = envelope(
            "action.propose",
            Some(&me.entity_id()),
            json!({
            "action_id": action, "tool": "messages.send", "params": params,
            "params_hash": switchboard::ifp::params_hash(&params), "risk": "high",
            "idempotency_key": action, "expires_at": rfc3339_ms(4_000_000_000_000)}),
        );
        v["id"] = json!(id);
        v["session"] = json!(session);
        v["device"] = json!(me.device_id());
        v
    };
    phone
        .send_value(&event(
            &me,
            "event.runtime.autonomy",
            trusted,
            1,
            json!({"autonomy": "trusted_actions"}),
        ))
        .await
        .unwrap();
    // The phone's latest level is another session's.
    phone
        .send_value(&event(
            &me,
            "event.runtime.autonomy",
            observing,
            1,
            json!({"autonomy": "observe_only"}),
        ))
        .await
        .unwrap();
    phone
        .send_value(&propose("msg_prop00000001", "act_trusted0001", trusted))
        .await
        .unwrap();
    phone
        .send_value(&propose("msg_prop00000002", "act_silent00001", silent))
        .await
        .unwrap();
    until("both proposals", || {
        desk.app.confirmations_snapshot().waiting.len() == 2
    })
    .await;
    let device = me.device_id().to_string();
    assert_eq!(
        desk.app.confirmations.lock().autonomy_of(&device),
        (Autonomy::ObserveOnly, true)
    );
    // The "asks you to confirm" notification names the phone as the person paired it, not
    // by the device id the mirror keys it by.
    let bodies: Vec<String> = desk
        .host
        .calls()
        .into_iter()
        .filter_map(|c| match c {
            HostCall::Notify(n) => Some(n.body),
            _ => None,
        })
        .collect();
    assert!(
        bodies
            .iter()
            .any(|b| b.starts_with("Runtime phone asks you to confirm")),
        "{bodies:?}"
    );
    assert!(!bodies.iter().any(|b| b.contains(&device)), "{bodies:?}");
    let snap = desk.app.confirmations_snapshot();
    let of = |action: &str| {
        snap.waiting
            .iter()
            .find(|c| c.action_id == action)
            .unwrap()
            .autonomy
            .clone()
    };
    let t = of("act_trusted0001");
    assert_eq!(
        (t.autonomy, t.source),
        (Autonomy::TrustedActions, AutonomySource::Session)
    );
    assert!(t.reported_at_ms.is_some());
    assert!(
        t.words.contains(trusted) && t.words.starts_with("trusted actions"),
        "{}",
        t.words
    );
    let s = of("act_silent00001");
    assert_eq!(
        (s.autonomy, s.source),
        (
            Autonomy::AskBeforeAction,
            AutonomySource::SessionNotReported
        )
    );
    assert!(
        s.words.contains("fallback") && s.words.contains(silent),
        "{}",
        s.words
    );
    // The silent session's level arrives later: its waiting proposal follows.
    phone
        .send_value(&event(
            &me,
            "event.runtime.autonomy",
            silent,
            1,
            json!({"autonomy": "trusted_actions"}),
        ))
        .await
        .unwrap();
    until("the silent session's level", || {
        desk.app.confirmations_snapshot().waiting.iter().any(|c| {
            c.action_id == "act_silent00001" && c.autonomy.source == AutonomySource::Session
        })
    })
    .await;
    phone.close().await;
    desk.app.shutdown().await;
}

/// A stand-in for the OS key store that can be locked and unlocked while the app runs: locked,
/// every call fails as a locked Secret Service does ([`SecretStoreError::Unavailable`]).
#[derive(Default)]
struct LockableStore {
    locked: std::sync::atomic::AtomicBool,
    inner: switchboard::link::secret_store::MemoryStore,
}

impl switchboard::link::secret_store::SecretStore for LockableStore {
    fn get(
        &self,
        name: &str,
    ) -> Result<Option<Vec<u8>>, switchboard::link::secret_store::SecretStoreError> {
        self.check()?;
        self.inner.get(name)
    }
    fn set(
        &self,
        name: &str,
        secret: &[u8],
    ) -> Result<(), switchboard::link::secret_store::SecretStoreError> {
        self.check()?;
        self.inner.set(name, secret)
    }
    fn delete(&self, name: &str) -> Result<(), switchboard::link::secret_store::SecretStoreError> {
        self.check()?;
        self.inner.delete(name)
    }
}

impl LockableStore {
    fn check(&self) -> Result<(), switchboard::link::secret_store::SecretStoreError> {
        if self.locked.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(
                switchboard::link::secret_store::SecretStoreError::Unavailable {
                    reason: "the collection is locked".into(),
                },
            );
        }
        Ok(())
    }
}

/// Key store going away: started while the key store is locked, the Phones view
/// says so in words and nothing is written in its place; unlocking brings the link up without
/// a restart; locking it again while the app runs leaves the link and its phones working (the
/// keys are held in memory) and the Phones view says so when the pairing window opens (the
/// periodic check is an hour away here), and unlocking makes the words go away without a
/// restart; no file under the app's folders holds the private key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_key_store_is_said_in_words_and_unlocking_recovers_without_a_restart() {
    use switchboard::link::secret_store::SecretStore as _;
    let store = Arc::new(LockableStore::default());
    store
        .locked
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let home = tempfile::tempdir().unwrap();
    let mut config = AppConfig::new(AppPaths::under(home.path()), false);
    config.identity = IdentityStore::KeyStore;
    config.key_store = Some(switchboard::app::KeyStoreOverride(store.clone()));
    // Only the pairing window makes it look within this test (see the next test for the
    // periodic check).
    config.key_store_check_every = Duration::from_secs(3600);
    config.listen = (LOOPBACK, 0);
    config.mdns = false;
    let host = Arc::new(RecordingHost::new());
    let app = App::new(
        config,
        host.clone(),
        tokio::runtime::Handle::current(),
        ConfirmationMirror::with_bundled_catalogue(),
    );
    let desk = Desk { app, host, home };
    desk.app.start_link();
    until("the Phones view to say the key store is locked", || {
        desk.app
            .phones
            .snapshot()
            .link_error
            .is_some_and(|e| e.contains("No OS key store") && e.contains("tries again"))
    })
    .await;
    assert!(desk.app.phones.link().is_none());
    let words = desk.app.phones.snapshot().link_error.unwrap();
    assert!(words.contains("the collection is locked"), "{words}");
    assert!(
        words.contains("never keeps its private keys in a plain"),
        "{words}"
    );

    store
        .locked
        .store(false, std::sync::atomic::Ordering::SeqCst);
    until("the link to start once the key store is unlocked", || {
        desk.app.phones.link().is_some() && desk.app.hub().is_some()
    })
    .await;
    until("the error to be gone", || {
        desk.app.phones.snapshot().link_error.is_none()
    })
    .await;
    let stored = store
        .get(switchboard::link::identity::IDENTITY_SECRET)
        .unwrap()
        .expect("the identity was written to the key store once it was unlocked");
    let stored: Value = serde_json::from_slice(&stored).unwrap();
    let private: Vec<String> = ["ed25519_seed", "key_der"]
        .iter()
        .map(|k| stored[k].as_str().expect("a private part").to_string())
        .collect();

    assert!(desk.app.phones.snapshot().key_store_problem.is_none());

    // Locked again while the app runs: the Phones view says so once a pairing needs the
    // store (the window opens), the link keeps running, and a phone still pairs and says
    // hello.
    store
        .locked
        .store(true, std::sync::atomic::Ordering::SeqCst);
    desk.app.change().unwrap().open_pairing().unwrap();
    until("the Phones view to say the key store went away", || {
        desk.app.phones.snapshot().key_store_problem.is_some()
    })
    .await;
    let words = desk.app.phones.snapshot().key_store_problem.unwrap();
    for needle in [
        "stopped answering while Switchboard runs",
        "the collection is locked",
        "Phones already connected keep working",
        "never in a file",
        "goes away by itself",
    ] {
        assert!(words.contains(needle), "{needle:?} not in {words}");
    }
    // `switchboard status` (the control channel's status request) says the same words.
    let status =
        switchboard::control::serve::answer(&desk.app, switchboard::control::Request::Status)
            .await
            .unwrap();
    assert_eq!(status["key_store_problem"], json!(words), "{status}");
    let (_me, phone) = pair(&desk, "Phone while locked").await;
    phone.close().await;
    let snap = desk.app.phones.snapshot();
    assert!(snap.link_error.is_none());
    assert!(
        snap.phones
            .iter()
            .any(|p| p.record.label == "Phone while locked"),
        "the phone paired while the store was locked"
    );

    // Unlocked: the words go away at the next check, no restart.
    store
        .locked
        .store(false, std::sync::atomic::Ordering::SeqCst);
    desk.app.change().unwrap().open_pairing().unwrap();
    until("the key-store words to go away", || {
        desk.app.phones.snapshot().key_store_problem.is_none()
    })
    .await;
    desk.app.change().unwrap().close_pairing();

    // Nothing under the app's folders holds a private part in plain text.
    let mut stack = vec![desk.home.path().to_path_buf()];
    let mut files = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files += 1;
                let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
                for p in &private {
                    assert!(
                        !text.contains(p.as_str()),
                        "{} holds a private key",
                        path.display()
                    );
                }
            }
        }
    }
    assert!(files > 0, "the app wrote its files (trust file, settings)");
    desk.app.shutdown().await;
}

/// The key store going away, the periodic check: a key store that stops answering while
/// the app runs is noticed without anyone pairing, the Phones view is told to reload and says
/// so while the phone already connected keeps working; when the store answers again the words
/// go away by themselves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_store_going_away_while_running_is_noticed_by_the_periodic_check() {
    let store = Arc::new(LockableStore::default());
    let home = tempfile::tempdir().unwrap();
    let mut config = AppConfig::new(AppPaths::under(home.path()), false);
    config.identity = IdentityStore::KeyStore;
    config.key_store = Some(switchboard::app::KeyStoreOverride(store.clone()));
    config.key_store_check_every = Duration::from_millis(100);
    config.listen = (LOOPBACK, 0);
    config.mdns = false;
    let host = Arc::new(RecordingHost::new());
    let app = App::new(
        config,
        host.clone(),
        tokio::runtime::Handle::current(),
        ConfirmationMirror::with_bundled_catalogue(),
    );
    let desk = Desk { app, host, home };
    desk.app.start_link();
    until("the link to listen", || {
        desk.app.phones.link().is_some() && desk.app.hub().is_some()
    })
    .await;
    let (me, mut phone) = pair(&desk, "Phone").await;
    // Several checks pass while the store answers: nothing is said.
    tokio::time::sleep(Duration::from_millis(350)).await;
    assert!(desk.app.phones.snapshot().key_store_problem.is_none());

    let reloads = || {
        desk.host
            .calls()
            .iter()
            .filter(|c| matches!(c, HostCall::Emit(switchboard::app::AppEvent::Phones)))
            .count()
    };
    let before = reloads();
    store
        .locked
        .store(true, std::sync::atomic::Ordering::SeqCst);
    until("the periodic check to notice", || {
        desk.app.phones.snapshot().key_store_problem.is_some()
    })
    .await;
    let words = desk.app.phones.snapshot().key_store_problem.unwrap();
    assert!(words.contains("the collection is locked"), "{words}");
    assert!(reloads() > before, "the Phones view was told to reload");
    // The phone already connected keeps working.
    assert!(desk
        .app
        .phones
        .snapshot()
        .phones
        .iter()
        .any(|p| p.connected));
    let ping = envelope("control.ping", Some(&me.entity_id()), json!({}));
    phone.send_value(&ping).await.unwrap();
    let pong = phone.expect("control.pong").await.unwrap();
    assert_eq!(pong["type"], "control.pong");

    store
        .locked
        .store(false, std::sync::atomic::Ordering::SeqCst);
    until("the words to go away", || {
        desk.app.phones.snapshot().key_store_problem.is_none()
    })
    .await;
    assert!(desk.app.phones.snapshot().link_error.is_none());
    phone.close().await;
    desk.app.shutdown().await;
}

/// The usual port held by another listener: the link takes the next one, its pairing link
/// carries the port in use, and diagnostics name the port that was taken. A port fixed in
/// Settings that is held is said in words, and no other port is taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taken_port_is_skipped_and_named_and_a_fixed_one_is_said() {
    // Another program on the port this app prefers (found free, then held).
    let other = std::net::TcpListener::bind((LOOPBACK, 0)).unwrap();
    let usual = other.local_addr().unwrap().port();
    let home = tempfile::tempdir().unwrap();
    let mut config = AppConfig::new(AppPaths::under(home.path()), false);
    config.identity = IdentityStore::Memory;
    config.listen = (LOOPBACK, usual);
    config.mdns = false;
    let host = Arc::new(RecordingHost::new());
    let app = App::new(
        config.clone(),
        host,
        tokio::runtime::Handle::current(),
        ConfirmationMirror::with_bundled_catalogue(),
    );
    app.start_link();
    until("the link to listen", || {
        app.phones.link().and_then(|l| l.local_addr()).is_some()
    })
    .await;
    let link = app.phones.link().unwrap();
    let port = link.local_addr().unwrap().port();
    assert!(
        port > usual && port < usual + 10,
        "{usual} taken, {port} bound"
    );
    let invite = app.change().unwrap().open_pairing().unwrap();
    assert_eq!(invite.port, port);
    assert!(
        invite.link.contains(&format!("&port={port}&")),
        "{}",
        invite.link
    );
    let diag = app.phones.snapshot().diagnostics.unwrap();
    assert_eq!(diag.ports_taken, vec![usual], "the conflict is named");
    assert_eq!(diag.port, Some(port));
    app.shutdown().await;

    // Fixed in Settings (for a firewall rule) and held by the other program: said, not moved.
    let home2 = tempfile::tempdir().unwrap();
    let mut config2 = config;
    config2.paths = AppPaths::under(home2.path());
    let fixed = App::new(
        config2,
        Arc::new(RecordingHost::new()),
        tokio::runtime::Handle::current(),
        ConfirmationMirror::with_bundled_catalogue(),
    );
    let mut s = fixed.get_settings();
    s.link_port = Some(80);
    let e = fixed
        .change()
        .unwrap()
        .save_settings(s.clone())
        .unwrap_err();
    assert!(e.message.contains("below 1024"), "{e:?}");
    s.link_port = Some(usual);
    fixed.change().unwrap().save_settings(s).unwrap();
    fixed.start_link();
    until("the link error", || {
        fixed.phones.snapshot().link_error.is_some()
    })
    .await;
    let words = fixed.phones.snapshot().link_error.unwrap();
    assert!(
        words.contains(&format!("port {usual}")) && words.contains("taken by another program"),
        "{words}"
    );
    assert!(fixed.phones.link().is_none(), "no other port was taken");
    fixed.shutdown().await;
    drop(other);
}

/// History through the app's commands: a phone's dials found by its name, its connection
/// events in the same timeline, a session followed oldest first, an export of a filter line
/// with the values redacted, and a filter line that does not parse answered with its column.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_by_filter_line_follow_and_redacted_export() {
    use switchboard::app::dials::{ExportRequest, FollowBy, HistoryRow};
    use switchboard::dials::HistoryQuery;
    let desk = start().await;
    let (me, mut phone) = pair(&desk, "Demo phone").await;
    for i in 0..6u64 {
        let session = if i < 4 {
            "ses_first000000001"
        } else {
            "ses_second00000001"
        };
        phone
            .send_value(&event(&me, "event.phoneline.dial", session, i + 1, dial(i)))
            .await
            .unwrap();
    }
    let hq = |filter: &str| HistoryQuery {
        filter: filter.into(),
        ..HistoryQuery::default()
    };
    let app = &desk.app;
    until("six dials held", || {
        futures_now(app.dials_history(hq("kind:dial"), None)).is_some_and(|p| p.rows.len() == 6)
    })
    .await;
    let page = app
        .dials_history(hq("phone:\"demo PHONE\" -op:read_item"), None)
        .await
        .unwrap();
    assert_eq!(page.rows.len(), 6, "a phone's name means its device id");
    assert_eq!(page.matched.unwrap().count, 6);
    let conns = app
        .dials_history(hq("kind:connection"), None)
        .await
        .unwrap();
    let kinds: Vec<String> = conns
        .rows
        .iter()
        .map(|r| match r {
            HistoryRow::Connection(c) => format!("{:?}", c.event),
            HistoryRow::Dial(_) => "dial".into(),
        })
        .collect();
    assert!(kinds.contains(&"Connected".to_string()), "{kinds:?}");
    assert!(kinds.contains(&"Paired".to_string()), "{kinds:?}");
    // A pairing row says first who has confirmed (a narrow table cuts the end of the text).
    let pending: Vec<&str> = conns
        .rows
        .iter()
        .filter_map(|r| match r {
            HistoryRow::Connection(c) if format!("{:?}", c.event) == "PairingPending" => {
                Some(c.detail.as_str())
            }
            _ => None,
        })
        .collect();
    assert!(!pending.is_empty(), "{kinds:?}");
    assert!(
        pending.iter().all(|d| (d.starts_with("neither side")
            || d.starts_with("the phone confirmed")
            || d.starts_with("the desktop confirmed")
            || d.starts_with("both sides"))
            && d.contains("verification code")),
        "{pending:?}"
    );
    // Follow the first session from one of its dials: oldest first.
    let followed = app
        .dials_follow(
            "event.phoneline.dial-ses_first000000001-2",
            None,
            FollowBy::Session,
            None,
        )
        .await
        .unwrap();
    let calls: Vec<String> = followed
        .rows
        .iter()
        .filter_map(|r| match r {
            HistoryRow::Dial(d) => Some(d.call_id.to_string()),
            HistoryRow::Connection(_) => None,
        })
        .collect();
    assert_eq!(calls, ["c0", "c1", "c2", "c3"]);
    assert_eq!(followed.filter, "session:ses_first000000001");
    // Export the line, redacted.
    let out = app
        .change()
        .unwrap()
        .dials_export(ExportRequest {
            path: "red.jsonl".into(),
            line: Some("session:ses_second00000001".into()),
            redact: Some(true),
            ..ExportRequest::default()
        })
        .await
        .unwrap();
    assert_eq!(out.lines, 2);
    let text = std::fs::read_to_string(&out.path).unwrap();
    assert!(
        text.contains("\"callId\":\"<string>\"") && !text.contains("LumiRealm"),
        "{text}"
    );
    // The same name again: the file is left alone unless the person chose to replace it.
    let again = |replace| {
        app.change().unwrap().dials_export(ExportRequest {
            path: "red.jsonl".into(),
            line: Some("session:ses_first000000001".into()),
            replace,
            ..ExportRequest::default()
        })
    };
    let err = again(None).await.unwrap_err();
    assert_eq!(err.kind, IpcErrorKind::Conflict, "{}", err.message);
    assert!(err.message.contains("red.jsonl"), "{}", err.message);
    assert_eq!(std::fs::read_to_string(&out.path).unwrap(), text);
    let replaced = again(Some(true)).await.unwrap();
    assert_eq!(replaced.lines, 4);
    let now = std::fs::read_to_string(&out.path).unwrap();
    assert_eq!(now.lines().count(), 4, "{now}");
    assert!(!now.contains("<string>"), "not redacted this time: {now}");
    // A bad line: invalid_input naming the column.
    let err = app
        .dials_history(hq("op:x colour:red"), None)
        .await
        .unwrap_err();
    assert_eq!(err.kind, IpcErrorKind::InvalidInput);
    assert!(err.message.contains("column 6"), "{}", err.message);
    drop(phone);
}

/// "Clear view" empties the live view's pages, counts and stats and shows what comes after it;
/// it deletes nothing (the ring a support bundle reads keeps its dials) and ends at the next
/// start; "clear and delete history" ends it too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clear_view_hides_what_it_cleared_and_deletes_nothing() {
    use switchboard::app::dials::{DialClearScope, HistoryRow};
    use switchboard::dials::{DialFilter, HistoryQuery};
    let hq = |filter: &str, limit: Option<u32>, cursor: Option<String>| HistoryQuery {
        filter: filter.into(),
        limit,
        cursor,
        ..HistoryQuery::default()
    };
    let ids = |rows: &[HistoryRow]| -> Vec<String> {
        rows.iter()
            .filter_map(|r| match r {
                HistoryRow::Dial(d) => Some(d.id.to_string()),
                HistoryRow::Connection(_) => None,
            })
            .collect()
    };
    // Dials of a minute ago: stored (the seek test's dials are older than 7 days, kept in the
    // ring only).
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let recent_dial = |i: usize| {
        let mut d = capture_dial(i);
        d.start_ms = now_ms - 60_000 + i as i64 * 10;
        d
    };
    let desk = build();
    let state = desk.app.dials().unwrap();
    for i in 0..5 {
        state.log.ingest(recent_dial(i)).await.unwrap();
    }
    let app = &desk.app;
    let page = app.dials_history(hq("", None, None), None).await.unwrap();
    assert_eq!(page.rows.len(), 5);

    assert_eq!(
        app.change()
            .unwrap()
            .dials_clear(DialClearScope::Memory)
            .await
            .unwrap(),
        0
    );
    let page = app.dials_history(hq("", None, None), None).await.unwrap();
    assert!(page.rows.is_empty(), "{:?}", ids(&page.rows));
    let matched = page.matched.unwrap();
    assert_eq!((matched.count, matched.exact), (0, true));
    assert!(page.next.is_none());
    let stats = app.dials_history_stats(String::new(), None).await.unwrap();
    assert_eq!((stats.dials, stats.complete), (0, true));
    // Nothing deleted: the ring a support bundle reads keeps the dials.
    let ring = state.log.query(DialFilter::default()).await.unwrap();
    assert_eq!(ring.total, 5);

    // The dials after the clear show, with their count, stats and pages that end at the clear.
    for i in 5..8 {
        state.log.ingest(recent_dial(i)).await.unwrap();
    }
    let page = app.dials_history(hq("", None, None), None).await.unwrap();
    assert_eq!(ids(&page.rows), ["dial-00007", "dial-00006", "dial-00005"]);
    assert_eq!(page.matched.unwrap().count, 3);
    let page = app
        .dials_history(hq("-op:grep_items", None, None), None)
        .await
        .unwrap();
    assert_eq!(ids(&page.rows), ["dial-00007", "dial-00005"]);
    assert_eq!(page.matched.unwrap().count, 2);
    let stats = app.dials_history_stats(String::new(), None).await.unwrap();
    assert_eq!((stats.dials, stats.complete), (3, true));
    let first = app
        .dials_history(hq("", Some(2), None), None)
        .await
        .unwrap();
    assert_eq!(ids(&first.rows), ["dial-00007", "dial-00006"]);
    let second = app
        .dials_history(hq("", Some(2), first.next.clone()), None)
        .await
        .unwrap();
    assert_eq!(ids(&second.rows), ["dial-00005"]);
    assert!(
        second.next.is_none(),
        "the view's history ends at the clear"
    );

    // The next start shows the whole stored history again.
    state.log.flush().await.unwrap();
    assert!(desk.app.shutdown().await.in_time);
    let Desk { app, host, home } = desk;
    drop((app, host));
    let again = build_in(home);
    let app = &again.app;
    until("the stored history after the restart", || {
        futures_now(app.dials_history(hq("", None, None), None)).is_some_and(|p| p.rows.len() == 8)
    })
    .await;

    // "Clear and delete history" ends a view clear as well.
    let state = again.app.dials().unwrap();
    again
        .app
        .change()
        .unwrap()
        .dials_clear(DialClearScope::Memory)
        .await
        .unwrap();
    assert!(again
        .app
        .dials_history(hq("", None, None), None)
        .await
        .unwrap()
        .rows
        .is_empty());
    again
        .app
        .change()
        .unwrap()
        .dials_clear(DialClearScope::All)
        .await
        .unwrap();
    state.log.ingest(recent_dial(9)).await.unwrap();
    let page = again
        .app
        .dials_history(hq("", None, None), None)
        .await
        .unwrap();
    assert_eq!(ids(&page.rows), ["dial-00009"]);
}

/// Polls a future once (the history answers without waiting on anything but the log).
fn futures_now<T>(
    f: impl std::future::Future<Output = Result<T, switchboard::error::IpcError>>,
) -> Option<T> {
    let rt = tokio::runtime::Handle::current();
    tokio::task::block_in_place(|| rt.block_on(f)).ok()
}

/// A dial of a capture for the seek test: ops in turn, every fifth one an error.
fn capture_dial(i: usize) -> switchboard::dials::Dial {
    use switchboard::dials::{Dial, DialOutcome, JsonText, Retention};
    let op = ["read_item", "list_items", "grep_items", "write_field"][i % 4];
    let outcome = if i % 5 == 2 {
        DialOutcome::Error
    } else {
        DialOutcome::Ok
    };
    let mut d = Dial {
        id: format!("dial-{i:05}").into(),
        phone: "dev_alpha1".into(),
        call_id: format!("call-{i}").into(),
        session: "ses_run001".into(),
        caller: "lumiagent".into(),
        callee: "lumirealm".into(),
        endpoint: "lumirealm.phoneline".into(),
        op: op.into(),
        request: JsonText::from_value(
            &json!({"op": op, "userId": "u1", "callId": format!("call-{i}")}),
        ),
        start_ms: 1_790_000_000_000 + i as i64 * 10,
        duration_ms: 40,
        outcome,
        response: (outcome == DialOutcome::Ok).then(|| JsonText::from_value(&json!({"value": i}))),
        error: (outcome == DialOutcome::Error)
            .then(|| "permission denied: push_notification".into()),
        retention: Retention::Standard,
        slow: false,
        spec: Default::default(),
        seq: Default::default(),
        arrived: Default::default(),
    };
    d.normalise();
    d
}

/// A seek (`HistoryQuery::skip`) answers the rows a walk through every page above them reaches,
/// from the top and from a cursor, with and without a filter, and says how many it passed over
/// (fewer when the history ends first).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seek_lands_where_walking_the_pages_does() {
    use switchboard::app::dials::DialSource;
    use switchboard::dials::HistoryQuery;
    let desk = build();
    let dials: Vec<Arc<switchboard::dials::Dial>> =
        (0..5_000).map(|i| Arc::new(capture_dial(i))).collect();
    let path = desk.home.path().join("seek.jsonl");
    let file = std::fs::File::create(&path).unwrap();
    switchboard::dials::jsonl::write_jsonl(&dials, file).unwrap();
    desk.app
        .change()
        .unwrap()
        .dials_import(path.display().to_string())
        .await
        .unwrap();
    let src = Some(DialSource::Imported);
    for filter in ["", "op:read_item -outcome:ok", "outcome:ok"] {
        // Every matching row, by walking the pages of 300.
        let mut all = Vec::new();
        let mut cursors = vec![None];
        let mut cursor: Option<String> = None;
        for _ in 0..100 {
            let q = HistoryQuery {
                filter: filter.into(),
                cursor: cursor.clone(),
                limit: Some(300),
                count: Some(false),
                skip: None,
            };
            let p = desk.app.dials_history(q, src).await.unwrap();
            all.extend(p.rows.iter().map(|r| r.seq()));
            match p.next {
                Some(n) => {
                    cursor = Some(n);
                    cursors.push(cursor.clone());
                }
                None => break,
            }
        }
        let n = all.len();
        assert!(n >= 250, "{filter:?}: only {n} rows match");
        for (from_page, skip) in [
            (0usize, 0u32),
            (0, 1),
            (0, 299),
            (0, 2000),
            (0, 2001),
            (1, 77),
            (2, 1234),
            (0, n as u32 - 1),
            (0, n as u32),
            (1, n as u32 + 500),
        ] {
            let from = from_page * 300;
            if from >= n {
                continue;
            }
            let q = HistoryQuery {
                filter: filter.into(),
                cursor: cursors[from_page].clone(),
                limit: Some(50),
                count: Some(true),
                skip: Some(skip),
            };
            let p = desk.app.dials_history(q, src).await.unwrap();
            let start = (from + skip as usize).min(n);
            let want: Vec<u64> = all[start..(start + 50).min(n)].to_vec();
            let got: Vec<u64> = p.rows.iter().map(|r| r.seq()).collect();
            assert_eq!(got, want, "{filter:?} from row {from} skipping {skip}");
            assert_eq!(
                p.skipped,
                (start - from) as u64,
                "{filter:?} from row {from} skipping {skip}"
            );
            assert_eq!(
                p.matched.map(|m| m.count),
                Some(n as u64),
                "{filter:?}: the count"
            );
            assert_eq!(
                p.next.is_none(),
                start + 50 >= n,
                "{filter:?} from {from} skipping {skip}: next"
            );
        }
    }
    desk.app.shutdown().await;
}

/// A demo app (`--demo`, its built-in demo phone) over the data in `home`.
fn build_demo_in(home: &std::path::Path) -> (Arc<App>, Arc<RecordingHost>) {
    let config = AppConfig::new(AppPaths::under(home), true);
    let host = Arc::new(RecordingHost::new());
    let app = App::new(
        config,
        host.clone(),
        tokio::runtime::Handle::current(),
        ConfirmationMirror::with_bundled_catalogue(),
    );
    (app, host)
}

/// The fresh user's first bug: "Paired Demo phone: the verification codes matched" showed at
/// every demo start. The demo desktop's identity is new at every start (in memory: no
/// development credential is kept), so the demo phone pairs again each time; only its first
/// pairing is news. A second start over the same data pairs the same demo phone again without
/// announcing it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_phone_is_announced_paired_only_the_first_time() {
    let home = tempfile::tempdir().unwrap();
    let connected = |app: &App| {
        app.phones
            .snapshot()
            .phones
            .iter()
            .find(|p| p.connected)
            .map(|p| p.record.device_id.clone())
    };

    let (first, _host) = build_demo_in(home.path());
    first.start_link();
    until("the demo phone to connect", || connected(&first).is_some()).await;
    let demo_dir = first.config.paths.link_dir(true);
    until("the demo phone to keep its pairing", || {
        switchboard::phone::demo::paired_before(&demo_dir).is_some()
    })
    .await;
    let id = connected(&first).unwrap();
    let shown = first
        .phones
        .snapshot()
        .last_pairing
        .expect("first pairing shown");
    assert_eq!(shown.device_id, id);
    assert!(shown.ended.is_none(), "{shown:?}");
    first.shutdown().await;

    let (second, _host) = build_demo_in(home.path());
    second.start_link();
    until("the demo phone to connect again", || {
        connected(&second).is_some()
    })
    .await;
    let snap = second.phones.snapshot();
    assert_eq!(
        connected(&second).as_deref(),
        Some(id.as_str()),
        "the same demo phone"
    );
    assert_eq!(snap.phones.len(), 1, "{:?}", snap.phones);
    assert!(
        snap.last_pairing.is_none(),
        "the demo phone's pairing again at a restart is not announced: {:?}",
        snap.last_pairing
    );
    second.shutdown().await;
}

/// A demo app over the data in `home` whose demo phone plays its whole script as fast as the
/// link takes it.
fn build_fast_demo_in(home: &std::path::Path) -> Arc<App> {
    let mut config = AppConfig::new(AppPaths::under(home), true);
    config.demo_rate = Some(switchboard::phone::player::Rate::Max);
    // A bound only a hang breaks (as `build_in`'s).
    config.shutdown_budget = Duration::from_secs(30);
    App::new(
        config,
        Arc::new(RecordingHost::new()),
        tokio::runtime::Handle::current(),
        ConfirmationMirror::with_bundled_catalogue(),
    )
}

/// A restarted `--demo` showed the last run's ended confirmations beside the replay's: each
/// demo card twice. The demo phone plays its script again at every start, with action ids of
/// its own, so what it proposed in the run before gives way to the replay: three starts over
/// the same data end with the demo's proposals once each, all of this start's. A record of
/// another phone in the same history stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_demo_shows_each_of_its_confirmations_once() {
    use switchboard::confirmations::history;
    let lines: Vec<Value> = switchboard::phone::demo::DEMO_SCENARIO
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let total = lines.len() as u64;
    let proposals = lines
        .iter()
        .filter(|v| v["msg"]["type"] == "action.propose")
        .count();
    let home = tempfile::tempdir().unwrap();
    let file = AppPaths::under(home.path())
        .link_dir(true)
        .join(history::HISTORY_FILE);
    let other = "dev_anotherphone01";
    let mut before: Vec<String> = Vec::new();
    for start in 1..=3 {
        let app = build_fast_demo_in(home.path());
        app.start_link();
        until("the demo's script to be applied", || {
            app.hub()
                .and_then(|h| h.phones().into_iter().find(|p| p.label == "Demo phone"))
                .is_some_and(|p| p.applied >= total)
        })
        .await;
        let snap = app.confirmations.lock().snapshot();
        let demo = app
            .hub()
            .and_then(|h| h.phones().into_iter().find(|p| p.label == "Demo phone"))
            .unwrap()
            .device_id;
        let ids: Vec<String> = snap
            .ended
            .iter()
            .filter(|c| c.phone == demo)
            .map(|c| c.action_id.clone())
            .collect();
        assert!(snap.waiting.is_empty(), "start {start}: {:?}", snap.waiting);
        assert_eq!(
            ids.len(),
            proposals,
            "start {start}: the demo's proposals once each: {ids:?}"
        );
        assert!(
            ids.iter().all(|id| !before.contains(id)),
            "start {start}: only this start's replay: {ids:?}, the last start's {before:?}"
        );
        let others = snap.ended.iter().filter(|c| c.phone == other).count();
        assert_eq!(
            others,
            usize::from(start > 1),
            "start {start}: another phone's record stays"
        );
        app.shutdown().await;
        before = ids;

        let mut kept = history::load(&file).unwrap().unwrap();
        assert_eq!(
            kept.ended.len(),
            proposals + usize::from(start > 1),
            "start {start}: the file keeps what was shown"
        );
        if start == 1 {
            // Another phone's ended proposal in the same history (a real phone may pair with
            // the demo desktop): the demo's replays must not take it away.
            let mut c = kept.ended[0].clone();
            c.key = format!("{other}/{}#9000", c.action_id);
            c.phone = other.to_string();
            kept.ended.insert(0, c);
            history::save(&file, kept).unwrap();
        }
    }
}

/// The fresh user's second bug: 15 confirmations before a restart, 7 after (the ended ones were
/// gone). Ended proposals are kept in the link's data folder and shown again after a restart,
/// as they ended; so are the waiting ones, still waiting (the phone does not send them again:
/// the desktop acknowledged them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confirmations_are_kept_across_a_restart() {
    let desk = start().await;
    let (me, mut phone) = pair(&desk, "Runtime phone").await;
    let session = "ses_restart000000001";
    let msg = |id: &str, kind: &str, payload: Value| {
        let mut v = envelope(kind, Some(&me.entity_id()), payload);
        v["id"] = json!(id);
        v["session"] = json!(session);
        v["device"] = json!(me.device_id());
        v
    };
    let params = json!({"to": "+1 555 0100", "body": "hi"});
    let propose = |id: &str, action: &str| {
        msg(
            id,
            "action.propose",
            json!({
            "action_id": action, "tool": "messages.send", "params": params,
            "params_hash": switchboard::ifp::params_hash(&params), "risk": "high",
            "idempotency_key": action, "expires_at": rfc3339_ms(4_000_000_000_000)}),
        )
    };
    for (id, action) in [
        ("msg_prop00000001", "act_declined001"),
        ("msg_prop00000002", "act_waiting0001"),
    ] {
        phone.send_value(&propose(id, action)).await.unwrap();
    }
    phone
        .send_value(&msg(
            "msg_reject000001",
            "action.reject",
            json!({"action_id": "act_declined001", "reason_class": "user_denied"}),
        ))
        .await
        .unwrap();
    until("one ended, one waiting", || {
        let s = desk.app.confirmations_snapshot();
        s.ended.len() == 1 && s.waiting.len() == 1
    })
    .await;
    let before = desk.app.confirmations_snapshot();
    phone.close().await;
    desk.app.shutdown().await;
    let home = desk.home;

    let again = build_in(home);
    let snap = again.app.confirmations_snapshot();
    assert_eq!(
        snap.ended, before.ended,
        "the ended proposal is shown again as it ended"
    );
    assert_eq!(snap.ended[0].action_id, "act_declined001");
    assert_eq!(snap.ended[0].state, switchboard::ifp::ActionState::Rejected);
    assert_eq!(
        snap.waiting, before.waiting,
        "the waiting proposal is shown again, still waiting"
    );
    assert_eq!(snap.waiting[0].action_id, "act_waiting0001");

    again.app.shutdown().await;
}

/// A support bundle given to Live dials' import is not read as JSON Lines ("stream did not
/// contain valid UTF-8"): the refusal says it is gzip and where bundles open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_support_bundle_given_to_the_dial_import_is_sent_where_bundles_open() {
    let desk = build();
    let bundle = switchboard::support::collect::from_files(
        &switchboard::app::AppPaths::under(desk.home.path()),
        false,
        switchboard::support::BundleOptions::default(),
        1_760_000_000_000,
    )
    .unwrap();
    let path = desk.home.path().join("support.tar.gz");
    bundle.save(&path).unwrap();
    let err = desk
        .app
        .change()
        .unwrap()
        .dials_import(path.display().to_string())
        .await
        .unwrap_err();
    assert_eq!(
        err.kind,
        switchboard::error::IpcErrorKind::InvalidInput,
        "{err:?}"
    );
    assert!(
        err.message.contains("gzip-compressed")
            && err.message.contains("File → Open support bundle"),
        "{}",
        err.message
    );
}
