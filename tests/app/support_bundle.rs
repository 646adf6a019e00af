//! Support bundles: nothing secret leaves a bundle of a running app (every key-store
//! entry, an open pairing window, a pending verification code, a log line with a session
//! proof, dial and parameter values); a bundle round-trips through `open_bundle` into the
//! same views; a bundle of the app's files when it is not running; damaged and foreign
//! archives are refused naming what is wrong; the tray's summary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use serde_json::{json, Value};
use switchboard::app::{App, AppConfig, AppPaths, IdentityStore, KeyStoreOverride, RecordingHost};
use switchboard::confirmations::ConfirmationMirror;
use switchboard::link::phone_client::{envelope, PhoneClient, PhoneIdentity};
use switchboard::link::rfc3339_ms;
use switchboard::link::secret_store::{MemoryStore, SecretStore, SecretStoreError};
use switchboard::support::open::{open_bundle, open_bundle_with, Limits};
use switchboard::support::{BundleOptions, BundleSource};

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const WAIT: Duration = Duration::from_secs(30);

/// The throwaway key store, remembering every secret written to it.
#[derive(Default)]
struct SeenStore {
    inner: MemoryStore,
    written: Mutex<Vec<(String, Vec<u8>)>>,
}

impl SecretStore for SeenStore {
    fn get(&self, name: &str) -> Result<Option<Vec<u8>>, SecretStoreError> {
        self.inner.get(name)
    }
    fn set(&self, name: &str, secret: &[u8]) -> Result<(), SecretStoreError> {
        self.written
            .lock()
            .unwrap()
            .push((name.to_string(), secret.to_vec()));
        self.inner.set(name, secret)
    }
    fn delete(&self, name: &str) -> Result<(), SecretStoreError> {
        self.inner.delete(name)
    }
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

struct Desk {
    app: Arc<App>,
    host: Arc<RecordingHost>,
    store: Arc<SeenStore>,
    home: tempfile::TempDir,
}

async fn start() -> Desk {
    let home = tempfile::tempdir().unwrap();
    let store = Arc::new(SeenStore::default());
    let mut config = AppConfig::new(AppPaths::under(home.path()), false);
    config.identity = IdentityStore::KeyStore;
    config.key_store = Some(KeyStoreOverride(store.clone()));
    config.listen = (LOOPBACK, 0);
    config.mdns = false;
    config.log_dir = Some(home.path().join("logs"));
    let host = Arc::new(RecordingHost::new());
    let app = App::new(
        config,
        host.clone(),
        tokio::runtime::Handle::current(),
        ConfirmationMirror::with_bundled_catalogue(),
    );
    app.start_link();
    until("the link to listen", || {
        app.phones.link().is_some() && app.hub().is_some()
    })
    .await;
    Desk {
        app,
        host,
        store,
        home,
    }
}

/// Pairs a phone through the pairing window (the person confirms the codes); returns it
/// connected, with the proof of the hello it said.
async fn pair(desk: &Desk, label: &str) -> (PhoneIdentity, PhoneClient, String) {
    let link = desk.app.phones.link().unwrap();
    let invite = link.open_pairing(LOOPBACK);
    let me = PhoneIdentity::generate(label);
    let addr = link.local_addr().unwrap();
    let mut phone = PhoneClient::connect(addr, link.identity().cert_fingerprint())
        .await
        .unwrap();
    let shown = phone.pair_start(&me, &invite.code, vec![]).await.unwrap();
    let pending = desk.app.phones.snapshot().pending.unwrap();
    desk.app
        .change()
        .unwrap()
        .confirm_pairing(&pending.id, true)
        .unwrap();
    phone.pair_confirm(&me, &shown, true, (1, 1)).await.unwrap();
    let proof = phone.hello_frame(&me, (1, 1))["payload"]["proof"]
        .as_str()
        .unwrap()
        .to_string();
    (me, phone, proof)
}

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

/// Every file of the archive at `path`, decompressed, and the whole decompressed tar stream.
fn unpack(path: &Path) -> (Vec<(String, Vec<u8>)>, Vec<u8>) {
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut raw)
        .unwrap();
    let mut files = Vec::new();
    let mut ar = tar::Archive::new(raw.as_slice());
    for e in ar.entries().unwrap() {
        let mut e = e.unwrap();
        let name = e.path().unwrap().display().to_string();
        let mut b = Vec::new();
        e.read_to_end(&mut b).unwrap();
        files.push((name, b));
    }
    (files, raw)
}

/// The forms a secret could leak in: its bytes, lowercase and uppercase hex, base64 and
/// base64url with and without padding; for a text secret also each line of 16 characters or
/// more (a PEM body line).
fn encodings(secret: &[u8]) -> Vec<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let mut out = vec![
        secret.to_vec(),
        hex::encode(secret).into_bytes(),
        hex::encode_upper(secret).into_bytes(),
        STANDARD.encode(secret).into_bytes(),
        STANDARD_NO_PAD.encode(secret).into_bytes(),
        URL_SAFE.encode(secret).into_bytes(),
        URL_SAFE_NO_PAD.encode(secret).into_bytes(),
    ];
    if let Ok(text) = std::str::from_utf8(secret) {
        for line in text.lines().map(str::trim).filter(|l| l.len() >= 16) {
            if !line.starts_with("-----") {
                out.push(line.as_bytes().to_vec());
            }
        }
    }
    out
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// Nothing secret leaves: a running app with every kind of secret (the key-store
/// entries its identity wrote, an open pairing window, a phone's session proof and the
/// pairing code in a log line, secret values in a dial and in a proposal's parameters) saves a
/// bundle, and none of those secrets, in any encoding, is anywhere in the decompressed
/// archive. Ticking the parameters in puts the parameter value in (so the check can fail).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_leaves_a_bundle_of_a_running_app() {
    let desk = start().await;
    let (me, mut phone, proof) = pair(&desk, "Ada's Pixel").await;
    let dial_secret = "dial-secret-value-7d1f";
    let param_secret = "param-secret-value-93ab";
    phone
        .send_value(&event(
            &me,
            "event.phoneline.dial",
            "ses_dial0000000001",
            1,
            json!({
                "call_id": "c1", "caller": "lumiagent", "callee": "lumirealm",
                "endpoint": "lumirealm.phoneline", "op": "read_item",
                "request": {"op": "read_item", "callId": "c1", "args": {"path": dial_secret, "n": 7}},
                "started_at": rfc3339_ms(1_790_000_000_000), "duration_ms": 3, "outcome": "ok",
                "response": {"ok": true, "text": dial_secret}
            }),
        ))
        .await
        .unwrap();
    let params = json!({"to": param_secret, "body": "hi"});
    let mut propose = envelope(
        "action.propose",
        Some(&me.entity_id()),
        json!({"action_id": "act_secret0001", "tool": "messages.send", "params": params,
            "params_hash": switchboard::ifp::params_hash(&params), "risk": "high",
            "idempotency_key": "act_secret0001", "expires_at": rfc3339_ms(4_000_000_000_000)}),
    );
    propose["session"] = json!("ses_runtime00000001");
    propose["device"] = json!(me.device_id());
    phone.send_value(&propose).await.unwrap();
    until("the dial and the proposal", || {
        desk.app.confirmations_snapshot().waiting.len() == 1
            && desk
                .app
                .hub()
                .is_some_and(|h| h.phone(me.device_id()).is_some_and(|p| p.dials == 1))
    })
    .await;

    // An open pairing window, and a second phone's pairing pending (its verification code).
    let link = desk.app.phones.link().unwrap();
    let invite = link.open_pairing(LOOPBACK);
    assert!(desk.app.phones.snapshot().pairing.is_some());
    let code_digits: String = invite.code.chars().filter(char::is_ascii_digit).collect();

    // A log file of today with lines holding the code, the link and the proof.
    let logs = desk.home.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let today = &rfc3339_ms(desk.app.config.clock.now_ms())[..10];
    // The identity's key-store entry: its Ed25519 seed and TLS key (and the public cert).
    let entries = desk.store.written.lock().unwrap().clone();
    assert_eq!(entries.len(), 1, "the identity is one key-store entry");
    let stored: Value = serde_json::from_slice(&entries[0].1).unwrap();
    let b64 = |k: &str| {
        base64::engine::general_purpose::STANDARD
            .decode(stored[k].as_str().unwrap())
            .unwrap()
    };
    let (seed, key_der) = (b64("ed25519_seed"), b64("key_der"));
    assert_eq!(seed.len(), 32);
    let pem_body = base64::engine::general_purpose::STANDARD.encode(&key_der);
    let key_pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----",
        pem_body
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect::<Vec<_>>()
            .join("\n")
    );
    std::fs::write(
        logs.join(format!("switchboard.log.{today}")),
        format!(
            "2026-12-01T10:00:00Z INFO link: pairing window open, code {}\n\
             2026-12-01T10:00:01Z DEBUG link: offered {}\n\
             2026-12-01T10:00:02Z DEBUG link: hello from {} proof={proof}\n\
             2026-12-01T10:00:03Z DEBUG link: verification code {code_digits} shown\n\
             2026-12-01T10:00:04Z ERROR key: {}\n\
             2026-12-01T10:00:04Z ERROR seed={}\n\
             2026-12-01T10:00:05Z INFO switchboard_desktop: Switchboard starting\n",
            invite.code,
            invite.link,
            me.device_id(),
            key_pem.replace('\n', " "),
            stored["ed25519_seed"].as_str().unwrap(),
        ),
    )
    .unwrap();

    let saved = desk
        .app
        .change()
        .unwrap()
        .save_support_bundle("bundle.tar.gz", BundleOptions::default())
        .await
        .unwrap();
    let (files, raw) = unpack(Path::new(&saved.path));
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    for want in [
        "manifest.json",
        "app.json",
        "phones.json",
        "link.json",
        "banners.json",
        "phone-lines.json",
        "confirmations.json",
        "dials.jsonl",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    assert!(names.contains(&format!("logs/switchboard.log.{today}").as_str()));

    let mut secrets: Vec<(String, Vec<u8>)> = desk
        .store
        .written
        .lock()
        .unwrap()
        .iter()
        .map(|(n, s)| (format!("key-store entry {n}"), s.clone()))
        .collect();
    secrets.extend([
        ("Ed25519 seed".to_string(), seed.clone()),
        ("TLS private key".to_string(), key_der.clone()),
        (
            "TLS private key PEM".to_string(),
            key_pem.as_bytes().to_vec(),
        ),
        ("pairing code".to_string(), invite.code.as_bytes().to_vec()),
        (
            "pairing code digits".to_string(),
            code_digits.as_bytes().to_vec(),
        ),
        ("pairing link".to_string(), invite.link.as_bytes().to_vec()),
        ("pairing QR".to_string(), invite.qr_svg.as_bytes().to_vec()),
        ("session proof".to_string(), proof.as_bytes().to_vec()),
        ("dial value".to_string(), dial_secret.as_bytes().to_vec()),
        (
            "parameter value".to_string(),
            param_secret.as_bytes().to_vec(),
        ),
    ]);
    for (what, secret) in &secrets {
        for form in encodings(secret) {
            assert!(
                !contains(&raw, &form),
                "{what} ({} bytes) is in the archive as {:?}",
                secret.len(),
                String::from_utf8_lossy(&form[..form.len().min(40)])
            );
            for (name, bytes) in &files {
                assert!(!contains(bytes, &form), "{what} is in {name}");
            }
        }
    }
    // What is kept: the phone, its key fingerprint, the log line that holds no secret.
    let text = |name: &str| {
        String::from_utf8(files.iter().find(|(n, _)| n == name).unwrap().1.clone()).unwrap()
    };
    assert!(text("phones.json").contains("Ada's Pixel"));
    assert!(text("phones.json").contains(me.device_id()));
    let log = text(&format!("logs/switchboard.log.{today}"));
    assert!(log.contains("Switchboard starting"), "{log}");
    assert!(log.contains("proof=[redacted: base64]"), "{log}");
    let dials = text("dials.jsonl");
    assert!(
        dials.contains(r#""args":{"path":"<string>","n":"<number>"}"#),
        "{dials}"
    );

    // Ticked in, the parameter value is there: the redaction is what hid it.
    let with = desk
        .app
        .change()
        .unwrap()
        .save_support_bundle(
            "with-params.tar.gz",
            BundleOptions {
                include_params: true,
            },
        )
        .await
        .unwrap();
    let (_, raw) = unpack(Path::new(&with.path));
    assert!(contains(&raw, param_secret.as_bytes()));
    assert!(
        !contains(&raw, dial_secret.as_bytes()),
        "dial values stay redacted"
    );
    phone.close().await;
    desk.app.shutdown().await;
    drop(desk.host);
}

/// A bundle of a running app opens into the same views: phones, banners, phone lines,
/// confirmations, dials; while it is open, `read_only` answers every change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bundle_opens_into_the_same_views_and_nothing_can_be_changed() {
    let desk = start().await;
    let (me, mut phone, _) = pair(&desk, "Round trip").await;
    for i in 0..3u64 {
        phone
            .send_value(&event(
                &me,
                "event.phoneline.dial",
                "ses_dial0000000002",
                i + 1,
                json!({
                    "call_id": format!("c{i}"), "caller": "lumiagent", "callee": "lumirealm",
                    "endpoint": "lumirealm.phoneline", "op": "notify",
                    "request": {"op": "notify", "callId": format!("c{i}")},
                    "started_at": rfc3339_ms(1_790_000_000_000 + i), "duration_ms": 3,
                    "outcome": "error",
                    "error": "Shared RPC endpoint \"lumirealm.phoneline\" requires requester \"lumiagent\" to inherit owner \"lumirealm\" permissions: push_notification"
                }),
            ))
            .await
            .unwrap();
    }
    until("a banner seen three times", || {
        desk.app
            .bridge_snapshot()
            .banners
            .first()
            .is_some_and(|b| b.count == 3)
    })
    .await;
    let tray = desk.host.trays();
    let last = tray.last().unwrap();
    assert_eq!(last.banners, 1);
    assert_eq!(
        last.tooltip(),
        "Switchboard: 1 phone connected, 1 banner raised"
    );
    let saved = desk
        .app
        .change()
        .unwrap()
        .save_support_bundle("", BundleOptions::default())
        .await
        .unwrap();
    let saved_at = std::path::Path::new(&saved.path);
    assert!(
        saved_at.parent().is_some_and(|d| d.ends_with("exports"))
            && saved_at
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("switchboard-support-")),
        "{}",
        saved.path
    );

    let info = desk.app.open_bundle(&saved.path).await.unwrap();
    assert_eq!(info.app_version, env!("CARGO_PKG_VERSION"));
    assert_eq!(info.source, BundleSource::RunningApp);
    assert_eq!(info.dials, 3);
    // The views answer from the bundle (the core decides, `App::*_shown`), which holds what
    // the live app showed when it was saved.
    let app = &desk.app;
    let live_phones = serde_json::to_value(app.phones.snapshot()).unwrap();
    assert_eq!(app.phones_shown().unwrap()["phones"], live_phones["phones"]);
    let live_banners = serde_json::to_value(app.bridge_snapshot()).unwrap();
    assert_eq!(app.bridge_shown().unwrap(), live_banners);
    let live_lines = serde_json::to_value(app.phone_lines_snapshot()).unwrap();
    assert_eq!(app.phone_lines_shown().unwrap(), live_lines);
    assert_eq!(
        app.confirmations_shown().unwrap()["waiting"],
        serde_json::to_value(app.confirmations_snapshot()).unwrap()["waiting"]
    );
    let notify = switchboard::dials::DialFilter {
        op: Some("notify".into()),
        ..Default::default()
    };
    let page = app.dials_query_shown(Some(notify), None).await.unwrap();
    assert_eq!(page.dials.len(), 3);
    let first = &page.dials[0];
    assert!(app
        .dial_banner_shown(&first.id, Some(first.start_ms), None, None)
        .await
        .unwrap()
        .is_some());
    // The spec marks are the ones checked on the values the phone sent, not on the markers.
    let not_to_spec = |to_spec| switchboard::dials::DialFilter {
        to_spec: Some(to_spec),
        ..Default::default()
    };
    let live_off = desk
        .app
        .dials()
        .unwrap()
        .log
        .query(not_to_spec(false))
        .await
        .unwrap()
        .dials
        .len();
    let shown_off = app
        .dials_query_shown(Some(not_to_spec(false)), None)
        .await
        .unwrap();
    assert_eq!(shown_off.dials.len(), live_off);
    for d in &page.dials {
        let c = app
            .dial_conformance_shown(d.id.to_string(), Some(d.start_ms), None, None)
            .await
            .unwrap();
        assert!(c.is_some(), "the bundle keeps dial {}'s conformance", d.id);
    }

    // Nothing can be changed while the bundle is open: the one way to change anything
    // (`App::change`) says so, naming the bundle.
    let e = desk.app.change().unwrap_err();
    assert_eq!(e.kind, switchboard::error::IpcErrorKind::ReadOnly);
    assert!(e.message.contains("read only"), "{}", e.message);
    assert!(e.message.contains(&saved.path), "{}", e.message);
    assert!(desk.app.close_bundle());
    assert!(desk.app.change().is_ok());
    assert!(desk.host.event_names().contains(&"switchboard://bundle"));
    phone.close().await;
    desk.app.shutdown().await;
}

/// `switchboard bundle` with the app not running reads its files: the trust file's phones,
/// the dial history (newest 1 000), the ended confirmations kept for the next start, the logs
/// of the last three days, the settings; it writes nothing in the app's folders.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bundle_of_the_app_files_when_it_is_not_running() {
    let desk = start().await;
    let (me, mut phone, _) = pair(&desk, "Offline phone").await;
    for i in 0..1005u64 {
        phone
            .send_value(&event(
                &me,
                "event.phoneline.dial",
                "ses_dial0000000003",
                i + 1,
                json!({
                    "call_id": format!("c{i}"), "caller": "lumiagent", "callee": "lumirealm",
                    "endpoint": "lumirealm.phoneline", "op": "describe",
                    "request": {"op": "describe", "callId": format!("c{i}")},
                    "started_at": rfc3339_ms(1_790_000_000_000 + i), "duration_ms": 3,
                    "outcome": "ok", "response": {"name": "LumiRealm"}
                }),
            ))
            .await
            .unwrap();
    }
    until("the dials", || {
        desk.app
            .hub()
            .is_some_and(|h| h.phone(me.device_id()).is_some_and(|p| p.dials == 1005))
    })
    .await;
    // One proposal the phone's person declined: kept for the next start, so in the bundle.
    let params = json!({"to": "+1 555 0100", "body": "hi"});
    for (id, kind, payload) in [
        (
            "msg_offprop00001",
            "action.propose",
            json!({"action_id": "act_offline0001", "tool": "messages.send", "params": params,
                   "params_hash": switchboard::ifp::params_hash(&params), "risk": "high",
                   "idempotency_key": "act_offline0001",
                   "expires_at": rfc3339_ms(4_000_000_000_000)}),
        ),
        (
            "msg_offrej000001",
            "action.reject",
            json!({"action_id": "act_offline0001", "reason_class": "user_denied"}),
        ),
    ] {
        let mut v = envelope(kind, Some(&me.entity_id()), payload);
        v["id"] = json!(id);
        v["session"] = json!("ses_offline0000001");
        v["device"] = json!(me.device_id());
        phone.send_value(&v).await.unwrap();
    }
    until("the declined proposal", || {
        desk.app.confirmations_snapshot().ended.len() == 1
    })
    .await;
    phone.close().await;
    desk.app.shutdown().await;
    let paths = AppPaths::under(desk.home.path());
    std::fs::create_dir_all(&paths.log_dir).unwrap();
    let now = 1_800_000_000_000u64; // 2027-01-15
    for (day, keep) in [
        ("2027-01-15", true),
        ("2027-01-14", true),
        ("2027-01-13", true),
        ("2027-01-12", false),
    ] {
        std::fs::write(
            paths.log_dir.join(format!("switchboard.log.{day}")),
            format!("{day} line\n"),
        )
        .unwrap();
        let _ = keep;
    }
    let before = listing(desk.home.path());
    let bundle =
        switchboard::support::collect::from_files(&paths, false, BundleOptions::default(), now)
            .unwrap();
    assert_eq!(
        before,
        listing(desk.home.path()),
        "nothing written in the app's folders"
    );
    let names: Vec<&str> = bundle.files.iter().map(|f| f.name.as_str()).collect();
    assert!(
        names.contains(&"logs/switchboard.log.2027-01-13"),
        "{names:?}"
    );
    assert!(names.contains(&"logs/switchboard.log.2027-01-15"));
    assert!(!names.contains(&"logs/switchboard.log.2027-01-12"));
    assert_eq!(bundle.manifest.source, BundleSource::AppFiles);
    assert!(bundle
        .manifest
        .left_out
        .iter()
        .any(|l| l.contains("read from the app's files")));
    let out = desk.home.path().join("offline.tar.gz");
    bundle.save(&out).unwrap();
    let opened = open_bundle(&out).unwrap();
    assert_eq!(opened.dials.len(), 1000, "the newest 1 000 dials");
    assert_eq!(&*opened.dials.dials()[0].call_id, "c1004", "newest first");
    let phones = opened.phones["phones"].as_array().unwrap();
    assert_eq!(phones.len(), 1);
    assert_eq!(phones[0]["record"]["label"], "Offline phone");
    assert_eq!(phones[0]["connected"], false);
    assert!(phones[0]["key_fingerprint"].as_str().unwrap().len() > 8);
    let ended = opened.confirmations["ended"].as_array().unwrap();
    assert_eq!(ended.len(), 1, "{:?}", opened.confirmations);
    assert_eq!(ended[0]["action_id"], "act_offline0001");
    assert_eq!(ended[0]["state"], "rejected");
}

fn listing(dir: &Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                out.push((e.path().display().to_string(), m.len()));
            }
        }
    }
    out.sort();
    out
}

/// A tar.gz of `entries` (name, bytes, entry type), names written raw (so `..` and `/` can be
/// tried).
fn tar_gz(entries: &[(&str, &[u8], tar::EntryType)]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut t = tar::Builder::new(gz);
    for (name, bytes, kind) in entries {
        let mut h = tar::Header::new_gnu();
        h.set_size(bytes.len() as u64);
        h.set_entry_type(*kind);
        h.set_mode(0o600);
        let raw = h.as_old_mut();
        raw.name[..name.len()].copy_from_slice(name.as_bytes());
        h.set_cksum();
        t.append(&h, *bytes).unwrap();
    }
    t.into_inner().unwrap().finish().unwrap()
}

fn refused(dir: &Path, name: &str, bytes: &[u8], limits: Limits) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    match open_bundle_with(&p, limits) {
        Ok(_) => panic!("{name} was opened"),
        Err(e) => e.to_string(),
    }
}

/// A damaged or foreign archive gets a clear error naming what is wrong.
#[test]
fn damaged_or_foreign_archives_are_refused_naming_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let l = Limits::default();
    let file = tar::EntryType::Regular;
    // A real bundle to tamper with.
    let paths = AppPaths::under(dir.path());
    let good = switchboard::support::collect::from_files(
        &paths,
        false,
        BundleOptions::default(),
        1_800_000_000_000,
    )
    .unwrap();
    let manifest = good.manifest_bytes().unwrap();
    let entries: Vec<(String, Vec<u8>)> =
        std::iter::once(("manifest.json".to_string(), manifest.clone()))
            .chain(good.files.iter().map(|f| (f.name.clone(), f.bytes.clone())))
            .collect();
    let as_tar = |es: &[(String, Vec<u8>)]| {
        let v: Vec<(&str, &[u8], tar::EntryType)> = es
            .iter()
            .map(|(n, b)| (n.as_str(), b.as_slice(), file))
            .collect();
        tar_gz(&v)
    };
    let ok = dir.path().join("good.tar.gz");
    std::fs::write(&ok, as_tar(&entries)).unwrap();
    open_bundle(&ok).unwrap();

    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "zip.zip",
            b"PK\x03\x04 a zip file".to_vec(),
            "not gzip-compressed",
        ),
        ("text.tar.gz", b"just text".to_vec(), "not gzip-compressed"),
        (
            "notar.tar.gz",
            {
                use std::io::Write;
                let mut g = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                g.write_all(&[7u8; 1500]).unwrap();
                g.finish().unwrap()
            },
            "damaged",
        ),
        (
            "nomanifest.tar.gz",
            as_tar(&entries[1..]),
            "has no manifest.json",
        ),
        (
            "foreign.tar.gz",
            as_tar(&[(
                "manifest.json".into(),
                br#"{"format":"other-app","version":1}"#.to_vec(),
            )]),
            "format \"other-app\"",
        ),
        (
            "newer.tar.gz",
            {
                let mut m: Value = serde_json::from_slice(&manifest).unwrap();
                m["version"] = json!(2);
                let mut es = entries.clone();
                es[0].1 = serde_json::to_vec(&m).unwrap();
                as_tar(&es)
            },
            "made by a newer Switchboard",
        ),
        (
            "escape.tar.gz",
            tar_gz(&[("../evil.json", b"{}", file)]),
            "leaves the bundle (..)",
        ),
        (
            "absolute.tar.gz",
            tar_gz(&[("/etc/evil.json", b"{}", file)]),
            "is absolute",
        ),
        (
            "link.tar.gz",
            tar_gz(&[("phones.json", b"", tar::EntryType::Symlink)]),
            "not a plain file",
        ),
        (
            "tampered.tar.gz",
            {
                let mut es = entries.clone();
                let i = es.iter().position(|(n, _)| n == "phones.json").unwrap();
                es[i].1 = b"{\"phones\": []}\n".to_vec();
                as_tar(&es)
            },
            "phones.json is damaged",
        ),
        (
            "extra.tar.gz",
            {
                let mut es = entries.clone();
                es.push(("notes.txt".into(), b"hi".to_vec()));
                as_tar(&es)
            },
            "notes.txt is in it but not listed",
        ),
    ];
    for (name, bytes, want) in cases {
        let e = refused(dir.path(), name, &bytes, l);
        assert!(e.contains(want), "{name}: {e}");
        assert!(e.contains(name), "{name}: the error names the file: {e}");
    }

    // A zip bomb: 8 MiB of zeros in a few kilobytes stops at the bound, before being read.
    let bomb = tar_gz(&[("dials.jsonl", &vec![0u8; 8 << 20], file)]);
    assert!(bomb.len() < 64 * 1024);
    let small = Limits {
        max_entry_bytes: 1 << 20,
        ..l
    };
    let e = refused(dir.path(), "bomb.tar.gz", &bomb, small);
    assert!(e.contains("more than the 1048576 one file may be"), "{e}");
    let e = refused(
        dir.path(),
        "bomb2.tar.gz",
        &bomb,
        Limits {
            max_total_bytes: 2 << 20,
            ..l
        },
    );
    assert!(e.contains("2097152"), "{e}");
    let many: Vec<(String, Vec<u8>)> = (0..70)
        .map(|i| (format!("f{i}.txt"), b"x".to_vec()))
        .collect();
    let e = refused(dir.path(), "many.tar.gz", &as_tar(&many), l);
    assert!(e.contains("more than 64 files"), "{e}");
}

/// The tray's summary counts phones, banners and confirmations waiting on a phone; its
/// tooltip has counts only, its entries name them and open their views.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tray_counts_banners_and_waiting_confirmations() {
    use switchboard::app::tray::TrayView;
    let home = tempfile::tempdir().unwrap();
    let config = AppConfig::new(AppPaths::under(home.path()), false);
    let host = Arc::new(RecordingHost::new());
    let mut mirror = ConfirmationMirror::with_bundled_catalogue();
    switchboard::app::sample::fill_confirmations(&mut mirror, 1_790_000_000_000);
    let app = App::new(
        config,
        host.clone(),
        tokio::runtime::Handle::current(),
        mirror,
    );
    app.refresh_tray();
    let first = host.trays().last().cloned().unwrap();
    assert_eq!(first.banners, 0);
    assert!(first.waiting >= 1, "{first:?}");
    let calls = home.path().join("calls.json");
    std::fs::write(
        &calls,
        json!([{"phone": "dev_pixel_ada", "caller": "lumiagent", "endpoint": "lumirealm.phoneline",
            "error": "Shared RPC endpoint \"lumirealm.phoneline\" requires requester \"lumiagent\" to inherit owner \"lumirealm\" permissions: push_notification",
            "at_ms": 1}])
        .to_string(),
    )
    .unwrap();
    app.bridge.record_demo(&calls).unwrap();
    app.refresh_tray();
    let t = host.trays().last().cloned().unwrap();
    assert_eq!(t.connected, 0);
    assert_eq!(t.banners, 1);
    let tip = t.tooltip();
    assert!(
        tip.starts_with("Switchboard: no phone connected, 1 banner raised, "),
        "{tip}"
    );
    assert!(
        tip.ends_with(&format!(
            "{} waiting on a phone",
            if t.waiting == 1 {
                "1 confirmation".to_string()
            } else {
                format!("{} confirmations", t.waiting)
            }
        )),
        "{tip}"
    );
    assert!(t.needs_attention());
    let banner = t
        .entries
        .iter()
        .find(|e| e.view == TrayView::Bridge)
        .unwrap();
    assert!(banner.label.starts_with("Banner: "), "{}", banner.label);
    assert!(banner.label.chars().count() <= 60);
    assert!(t
        .entries
        .iter()
        .any(|e| e.view == TrayView::Confirmations && e.label.starts_with("Waiting: ")));
    assert!(
        !tip.contains("LumiRealm"),
        "the tooltip carries counts only"
    );
}

/// A phone's phone-line settings naming `lines` (registry and lines, no permissions).
fn line_settings(lines: &[&str]) -> Value {
    json!({
        "registry": {"version": 1, "phoneLines":
            lines.iter().map(|l| json!({"identifier": l, "name": l})).collect::<Vec<_>>()},
        "lines": lines.iter().map(|l| json!({"identifier": l, "name": l, "permissions": []})).collect::<Vec<_>>()
    })
}

/// The call ids and ops of a followed page's dials, in its order.
fn followed(page: &switchboard::app::dials::DialHistoryPage) -> Vec<(String, String, i64)> {
    page.rows
        .iter()
        .filter_map(|r| match r {
            switchboard::app::dials::HistoryRow::Dial(d) => {
                Some((d.call_id.to_string(), d.op.to_string(), d.start_ms))
            }
            switchboard::app::dials::HistoryRow::Connection(_) => None,
        })
        .collect()
}

/// What an opened bundle shows beside the views: the sender's tray counts (the window's "at a
/// glance" line) while the live app moves on, the sender's settings (never the viewer's),
/// each paired phone's Phone lines view (the per-phone picker), and a call followed inside
/// the bundle's dials (`app::dials::follow_in`): the dials of that call id, oldest first,
/// the other call's left out, as the live app follows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_opened_bundle_shows_the_senders_counts_settings_phone_lines_and_follows_a_call() {
    use switchboard::app::dials::FollowBy;
    let desk = start().await;
    let (a, mut phone_a, _) = pair(&desk, "Phone A").await;
    let (b, mut phone_b, _) = pair(&desk, "Phone B").await;
    phone_a
        .send_value(&event(
            &a,
            "event.phoneline.settings",
            "ses_settingsA00001",
            1,
            line_settings(&["lumirealm"]),
        ))
        .await
        .unwrap();
    phone_b
        .send_value(&event(
            &b,
            "event.phoneline.settings",
            "ses_settingsB00001",
            1,
            line_settings(&["lumirealm", "lumiweather"]),
        ))
        .await
        .unwrap();
    // Call "cf" (describe, read_item, then a failing notify that raises a banner) interleaved
    // with call "co", started 10 ms apart in this order.
    let plan = [
        ("cf", "describe", false),
        ("co", "describe", false),
        ("cf", "read_item", false),
        ("co", "read_item", false),
        ("cf", "notify", true),
    ];
    for (i, (call, op, fails)) in plan.iter().enumerate() {
        let i = i as u64;
        let mut d = json!({
            "call_id": call, "caller": "lumiagent", "callee": "lumirealm",
            "endpoint": "lumirealm.phoneline", "op": op,
            "request": {"op": op, "callId": call},
            "started_at": rfc3339_ms(1_790_000_000_000 + 10 * i), "duration_ms": 3,
            "outcome": "ok", "response": {"ok": true}
        });
        if *fails {
            d["outcome"] = json!("error");
            d["error"] = json!("Shared RPC endpoint \"lumirealm.phoneline\" requires requester \"lumiagent\" to inherit owner \"lumirealm\" permissions: push_notification");
            d.as_object_mut().unwrap().remove("response");
        }
        phone_a
            .send_value(&event(
                &a,
                "event.phoneline.dial",
                "ses_dialsA00000001",
                i + 1,
                d,
            ))
            .await
            .unwrap();
    }
    let hub = desk.app.hub().unwrap();
    until("the dials, the banner and both phones' settings", || {
        hub.phone(a.device_id()).is_some_and(|p| p.dials == 5)
            && hub.settings(a.device_id()).is_some()
            && hub.settings(b.device_id()).is_some()
            && desk.app.tray_summary().banners == 1
    })
    .await;
    let sender_tray = desk.app.tray_summary();
    assert_eq!((sender_tray.connected, sender_tray.banners), (2, 1));
    let mut sender_settings = desk.app.get_settings();
    sender_settings.dial_ring_capacity = 20_000;
    let sender_settings = desk
        .app
        .change()
        .unwrap()
        .save_settings(sender_settings)
        .unwrap();
    let saved = desk
        .app
        .change()
        .unwrap()
        .save_support_bundle("leftovers.tar.gz", BundleOptions::default())
        .await
        .unwrap();
    // The live call followed, before the live app moves on.
    let live_follow = desk
        .app
        .dials_follow(
            "event.phoneline.dial-ses_dialsA00000001-3",
            None,
            FollowBy::Call,
            None,
        )
        .await
        .unwrap();

    // The live app moves on: phone B goes away, the viewer's own settings change.
    phone_b.close().await;
    until("phone B gone", || desk.app.tray_summary().connected == 1).await;
    let mut mine = desk.app.get_settings();
    mine.dial_ring_capacity = 7_000;
    let mine = desk.app.change().unwrap().save_settings(mine).unwrap();

    desk.app.open_bundle(&saved.path).await.unwrap();
    // The glance line: the sender's counts, not the live app's; the tray stays live.
    assert_eq!(desk.app.glance(), sender_tray);
    assert_eq!(desk.app.tray_summary().connected, 1);
    assert_ne!(desk.app.glance(), desk.app.tray_summary());
    // The sender's settings and app, not the viewer's.
    let details = desk.app.bundle_details().unwrap();
    assert_eq!(details.settings.as_ref(), Some(&sender_settings));
    assert_eq!(
        details.settings.as_ref().map(|s| s.dial_ring_capacity),
        Some(20_000)
    );
    assert_eq!(desk.app.get_settings(), mine);
    assert_eq!(
        details.app.as_ref().map(|a| a.version.as_str()),
        Some(env!("CARGO_PKG_VERSION"))
    );
    assert!(details.problems.is_empty(), "{:?}", details.problems);
    assert!(details.data_dir.is_some());
    // Each paired phone's Phone lines view, for the picker.
    let views: Vec<(String, String, Vec<String>)> = details
        .phone_lines
        .iter()
        .map(|p| {
            let lines = p.view["lines"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l["identifier"].as_str().unwrap().to_string())
                .collect();
            (p.device_id.clone(), p.label.clone(), lines)
        })
        .collect();
    assert_eq!(views.len(), 2, "{views:?}");
    let of = |id: &str| views.iter().find(|v| v.0 == id).unwrap();
    assert_eq!(of(a.device_id()).1, "Phone A");
    assert_eq!(of(b.device_id()).1, "Phone B");
    assert!(!of(a.device_id()).2.contains(&"lumiweather".to_string()));
    assert!(of(b.device_id()).2.contains(&"lumiweather".to_string()));
    assert!(of(b.device_id()).2.contains(&"lumirealm".to_string()));

    // Following call "cf" inside the bundle: its three dials, oldest first, as live.
    let middle = desk
        .app
        .dials_get_shown(
            "event.phoneline.dial-ses_dialsA00000001-3".into(),
            None,
            None,
            None,
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!((&*middle.call_id, &*middle.op), ("cf", "read_item"));
    let page = desk
        .app
        .dials_follow_shown(&middle.id, None, FollowBy::Call, None)
        .await
        .unwrap();
    let rows = followed(&page);
    assert_eq!(
        rows.iter()
            .map(|(c, o, _)| (c.as_str(), o.as_str()))
            .collect::<Vec<_>>(),
        [("cf", "describe"), ("cf", "read_item"), ("cf", "notify")]
    );
    assert!(rows.windows(2).all(|w| w[0].2 < w[1].2), "{rows:?}");
    assert_eq!(page.filter, "call:cf");
    assert_eq!(rows, followed(&live_follow));
    // The other call is followed to its own two dials.
    let rows = followed(
        &desk
            .app
            .dials_follow_shown(
                "event.phoneline.dial-ses_dialsA00000001-4",
                None,
                FollowBy::Call,
                None,
            )
            .await
            .unwrap(),
    );
    assert_eq!(
        rows.iter()
            .map(|(c, o, _)| (c.as_str(), o.as_str()))
            .collect::<Vec<_>>(),
        [("co", "describe"), ("co", "read_item")]
    );

    // Closed: the glance line is the live app's again, and there are no bundle details.
    assert!(desk.app.close_bundle());
    assert_eq!(desk.app.glance(), desk.app.tray_summary());
    assert!(desk.app.bundle_details().is_none());
    phone_a.close().await;
    desk.app.shutdown().await;
}
