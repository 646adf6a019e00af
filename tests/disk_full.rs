//! A full disk (`docs/faults.md`, "Disk full"): the dial history on a 16 MB tmpfs mounted in a
//! private mount namespace (`unshare -m`, made and gone with the test's child process) while
//! dials with 4 KB payloads stream in until SQLite answers `SQLITE_FULL`.
//!
//! Checked: the log keeps running and says the disk is full and where; nothing past the durable
//! watermark is reported durable (acknowledgements wait for it: `docs/protocol.md`,
//! "Acknowledgement and replay"), and every dial reported durable is in the file; saving the
//! settings on the full disk fails with an error and leaves the old file whole (no temporary
//! file left). Then the tmpfs grows (`mount -o remount,size=256m`): writing resumes by itself,
//! the sender resends what was not acknowledged (as a phone does), and every dial is stored
//! exactly once.
//!
//! This is the dial log's part of the fault, in a form short enough for CI (about 10 s): the
//! link and the phone client are not in it (the phone's outbox and the hub's acknowledgement
//! on the durable watermark are what `tests/durable_acks.rs` checks under SIGKILL).
//!
//! Needs root (to mount) and `unshare`: without them the test fails, it never skips.
// Linux only: a tmpfs mounted in a private mount namespace (`unshare -m`, util-linux) is how
// the test fills a disk; Windows and macOS have neither, and the dial log's code for a full disk
// is the same on every system.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use switchboard::dials::{Dial, DialLog, DialLogConfig, IngestVerdict, JsonText, Retention, Seq};
use switchboard::link::trust::{PairedPhone, TrustFile};
use switchboard::phone_line::pairings::{backup_path, PairingRecord, PairingsFile};
use switchboard::settings::Settings;

const DIR_VAR: &str = "DISK_FULL_DIR";
/// Most dials sent before the disk is full (4 KB each: about 120 MB, far past 16 MB).
const MAX_DIALS: u64 = 30_000;
const BATCH: usize = 50;

#[test]
fn a_full_disk_stops_acknowledgements_and_writing_resumes_when_it_has_room() {
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "this test mounts a tmpfs in a private mount namespace and must run as root"
    );
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private"])
        .arg(&exe)
        .args(["--ignored", "--exact", "in_namespace", "--nocapture"])
        .env(DIR_VAR, dir.path())
        .output()
        .expect("running unshare (util-linux) to make a private mount namespace");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    assert!(out.status.success(), "the namespace part failed: {text}");
    assert!(
        text.contains("1 passed"),
        "the namespace part did not run: {text}"
    );
    // The mount went with the namespace: nothing is left mounted here.
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    assert!(!mounts.contains(&*dir.path().to_string_lossy()));
}

fn mount(args: &[&str]) {
    let st = Command::new("mount").args(args).status().unwrap();
    assert!(st.success(), "mount {args:?} failed");
}

/// The `i`th dial: a 4 KB request payload, kept 7 days.
fn dial(i: u64, now_ms: i64) -> Dial {
    let mut d = switchboard::app::sample::sample_dial(i, 0, now_ms);
    d.id = format!("dfull{i:08}").into();
    d.retention = Retention::Standard;
    d.seq = Seq(0);
    let filler: String = (0..4096)
        .map(|k| char::from(b'a' + ((i + k) % 26) as u8))
        .collect();
    d.request = JsonText::parse(&format!("{{\"op\":\"describe\",\"note\":\"{filler}\"}}")).unwrap();
    d
}

/// How often each dial id is stored in `db`: its rows and its journal (a flood's batches not
/// moved into rows yet), read beside the running app.
fn count_ids(db: &Path) -> HashMap<String, u64> {
    let c = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap();
    let mut s = c.prepare("SELECT id FROM dials").unwrap();
    let mut out = HashMap::new();
    for id in s.query_map([], |r| r.get::<_, String>(0)).unwrap() {
        *out.entry(id.unwrap()).or_insert(0) += 1;
    }
    for d in switchboard::dials::store::journaled_dials(&c, db).unwrap() {
        *out.entry(d.id.to_string()).or_insert(0) += 1;
    }
    out
}

/// A pinned phone as the trust file keeps it.
fn phone(device_id: &str) -> PairedPhone {
    PairedPhone {
        device_id: device_id.to_string(),
        public_key: "A".repeat(43),
        label: "Pixel 8".into(),
        capabilities: vec![serde_json::json!({"type": "tool:messages.send"})],
        paired_at_ms: 1_789_000_000_000,
        last_seen_ms: None,
        last_address: Some("127.0.0.1:5000".into()),
        binding: Default::default(),
    }
}

/// The temporary files an atomic write left in `dir`.
fn temp_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| switchboard::fsutil::is_temp_file_name(n, None))
        .collect()
}

/// Fills what room is left on the tmpfs with one file, until the kernel says no.
fn fill(path: &Path) {
    use std::io::Write as _;
    let mut f = std::fs::File::create(path).unwrap();
    let block = vec![0u8; 4096];
    for _ in 0..100_000 {
        if f.write_all(&block).and_then(|_| f.sync_all()).is_err() {
            return;
        }
    }
    panic!("the tmpfs never filled");
}

#[test]
#[ignore = "run by the test above inside its private mount namespace"]
fn in_namespace() {
    let dir = PathBuf::from(std::env::var_os(DIR_VAR).expect("run by the outer test"));
    mount(&[
        "-t",
        "tmpfs",
        "-o",
        "size=16m,mode=0700",
        "tmpfs",
        dir.to_str().unwrap(),
    ]);
    let data = dir.join("data");
    let settings_path = dir.join("settings.json");
    let old = Settings::default();
    old.save(&settings_path).unwrap();
    let old_text = std::fs::read_to_string(&settings_path).unwrap();
    // A trust file pinning one phone, and a pairings file allowing one phone line, both
    // saved while there is room (the second save of the pairings file makes its backup).
    let trust = TrustFile::in_dir(&data);
    trust.save(&[phone("dev_00000000000000a1")]).unwrap();
    let trust_before = std::fs::read(trust.path()).unwrap();
    let pairings_path = dir.join("phoneline-pairings.json");
    let mut pairings = PairingsFile::new();
    pairings.insert(
        "lumirealm",
        PairingRecord::new(
            "lumirealm",
            "LumiRealm",
            true,
            &"ab".repeat(32),
            1_789_000_000_000,
        ),
    );
    pairings.save(&pairings_path).unwrap();
    pairings.save(&pairings_path).unwrap();
    let pairings_before = std::fs::read_to_string(&pairings_path).unwrap();
    let pairings_backup_before = std::fs::read_to_string(backup_path(&pairings_path)).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let now_ms = 1_790_000_000_000i64;
    rt.block_on(async {
        let log = DialLog::spawn(DialLogConfig {
            data_dir: Some(data.clone()),
            ..DialLogConfig::default()
        })
        .unwrap();
        log.loaded().await.unwrap();
        // Stream until the disk is full; each batch's durability mark is what a hub would
        // acknowledge once durable.
        let t0 = Instant::now();
        let mut marks: Vec<(u64, u64)> = Vec::new(); // (dials sent so far, their mark)
        let mut sent = 0u64;
        let mut blocked = None;
        while sent < MAX_DIALS && t0.elapsed() < Duration::from_secs(60) {
            let batch: Vec<Dial> = (sent..sent + BATCH as u64)
                .map(|i| dial(i, now_ms))
                .collect();
            let l = log.clone();
            let mut task = tokio::spawn(async move { l.ingest_batch(batch).await });
            match tokio::time::timeout(Duration::from_secs(3), &mut task).await {
                Ok(r) => {
                    let v = r.unwrap().unwrap();
                    assert!(v.iter().all(|v| *v == IngestVerdict::Held));
                    sent += BATCH as u64;
                    marks.push((sent, log.durable_mark()));
                }
                // Ingest waits for room once the unwritten bytes reach their limit.
                Err(_) => {
                    blocked = Some(task);
                    break;
                }
            }
            if log.disk_full().is_some() && blocked.is_none() && sent > 0 {
                // Keep sending a little after the first refusal: it must not be acknowledged.
                if marks.len() > 4 && log.disk_full().is_some() {
                    break;
                }
            }
        }
        let full = {
            let t = Instant::now();
            loop {
                if let Some(f) = log.disk_full() {
                    break f;
                }
                assert!(t.elapsed() < Duration::from_secs(30), "never full");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        println!(
            "full after {sent} dials sent ({:.1} s): {full}",
            t0.elapsed().as_secs_f64()
        );
        assert!(
            full.contains(&*data.to_string_lossy()),
            "names the folder: {full}"
        );
        let status = log.status().await.unwrap();
        assert_eq!(status.disk_full.as_deref(), Some(full.as_str()));
        // The watermark holds still while full; everything reported durable is in the file.
        let durable = *log.durable_watch().borrow();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(
            *log.durable_watch().borrow(),
            durable,
            "nothing more became durable"
        );
        let acked = marks
            .iter()
            .filter(|(_, m)| *m <= durable)
            .map(|(n, _)| *n)
            .max()
            .unwrap_or(0);
        assert!(
            acked < sent,
            "the dials sent last are not acknowledged ({acked} of {sent})"
        );
        assert!(!log.is_durable(marks.last().unwrap().1));
        let stored = count_ids(&data.join("dials.sqlite3"));
        for i in 0..acked {
            assert_eq!(
                stored.get(&format!("dfull{i:08}")),
                Some(&1),
                "acknowledged dial {i}"
            );
        }
        println!(
            "{acked} acknowledged, {} in the file while full",
            stored.len()
        );
        // Settings saved on the full disk: an error, and the old file whole.
        fill(&dir.join("filler"));
        let mut new = old.clone();
        new.dial_ring_capacity = old.dial_ring_capacity + 1;
        let err = new
            .save(&settings_path)
            .expect_err("saving on a full disk fails");
        println!("saving the settings on the full disk: {err}");
        assert_eq!(std::fs::read_to_string(&settings_path).unwrap(), old_text);
        // The trust file (pinned phones): the second phone's pairing fails to save, the file
        // still pins the first alone, byte for byte.
        let trust_err = trust
            .save(&[phone("dev_00000000000000a1"), phone("dev_00000000000000b2")])
            .expect_err("saving the trust file on a full disk fails");
        println!("saving the trust file on the full disk: {trust_err}");
        assert!(
            trust_err.to_string().contains("trust"),
            "names the file: {trust_err}"
        );
        assert_eq!(std::fs::read(trust.path()).unwrap(), trust_before);
        assert_eq!(trust.load().unwrap(), vec![phone("dev_00000000000000a1")]);
        // The phone-line pairings file (and its backup): a revocation fails to save, both
        // files keep what they held.
        let mut revoked = pairings.clone();
        revoked.revoke("lumirealm", 1_790_000_100_000).unwrap();
        let pairings_err = revoked
            .save(&pairings_path)
            .expect_err("saving the pairings file on a full disk fails");
        println!("saving the pairings file on the full disk: {pairings_err}");
        assert!(
            pairings_err.to_string().contains("phoneline-pairings.json"),
            "names the file: {pairings_err}"
        );
        assert_eq!(
            std::fs::read_to_string(&pairings_path).unwrap(),
            pairings_before
        );
        assert_eq!(
            std::fs::read_to_string(backup_path(&pairings_path)).unwrap(),
            pairings_backup_before
        );
        assert!(PairingsFile::load(&pairings_path)
            .unwrap()
            .get("lumirealm")
            .unwrap()
            .allowed());
        let mut left = temp_files(&dir);
        left.extend(temp_files(&data));
        assert!(left.is_empty(), "temporary files left: {left:?}");
        std::fs::remove_file(dir.join("filler")).unwrap();
        // Room again: writing resumes by itself.
        mount(&["-o", "remount,size=256m", dir.to_str().unwrap()]);
        let t = Instant::now();
        while log.disk_full().is_some() {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "writing never resumed"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if let Some(task) = blocked {
            let v = tokio::time::timeout(Duration::from_secs(30), task)
                .await
                .unwrap()
                .unwrap()
                .unwrap();
            assert_eq!(v.len(), BATCH);
            sent += BATCH as u64;
        }
        println!(
            "resumed {:.1} s after the remount",
            t.elapsed().as_secs_f64()
        );
        new.save(&settings_path).unwrap();
        trust
            .save(&[phone("dev_00000000000000a1"), phone("dev_00000000000000b2")])
            .unwrap();
        revoked.save(&pairings_path).unwrap();
        assert_eq!(trust.load().unwrap().len(), 2);
        assert!(!PairingsFile::load(&pairings_path)
            .unwrap()
            .get("lumirealm")
            .unwrap()
            .allowed());
        // The sender resends everything not acknowledged, then a few more.
        let total = sent + 500;
        let resend: Vec<Dial> = (acked..total).map(|i| dial(i, now_ms)).collect();
        for chunk in resend.chunks(BATCH) {
            log.ingest_batch(chunk.to_vec()).await.unwrap();
        }
        log.flush().await.unwrap();
        let mark = log.durable_mark();
        assert!(log.is_durable(mark));
        log.shutdown().await.unwrap();
        let stored = count_ids(&data.join("dials.sqlite3"));
        assert_eq!(stored.len() as u64, total, "every dial stored");
        assert!(stored.values().all(|n| *n == 1), "none stored twice");
        println!("{total} dials stored exactly once");
    });
    drop(rt);
    let _ = Command::new("umount").arg(&dir).status();
}

const APP_DIR_VAR: &str = "DISK_FULL_APP_DIR";

/// The whole app on a full disk: a real [`App`] whose home is a 16 MB tmpfs (in a private
/// mount namespace), a phone paired through the link streaming 4 KB dials on loopback and
/// keeping what is not acknowledged, as a phone does. While the disk is full: no
/// acknowledgement goes past what is in the file, the tray, the Phones view and
/// `switchboard status` (the real CLI, exit 1) say the disk is full and where, and the phone
/// stays connected. After the remount: acknowledgements resume by themselves without a
/// reconnect, `switchboard status` says dials are saved (exit 0), and every dial the phone sent
/// is stored exactly once.
#[test]
fn the_app_on_a_full_disk_says_so_everywhere_and_its_phone_loses_nothing() {
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "this test mounts a tmpfs in a private mount namespace and must run as root"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private"])
        .arg(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "app_in_namespace", "--nocapture"])
        .env(APP_DIR_VAR, dir.path())
        .output()
        .expect("running unshare (util-linux) to make a private mount namespace");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    assert!(out.status.success(), "the namespace part failed: {text}");
    assert!(
        text.contains("1 passed"),
        "the namespace part did not run: {text}"
    );
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    assert!(!mounts.contains(&*dir.path().to_string_lossy()));
}

/// What the phone sent and has not seen acknowledged, in order: (message id, dial id).
#[derive(Default)]
struct Outbox {
    waiting: std::collections::VecDeque<(String, String)>,
    acked: std::collections::HashSet<String>,
    sent: u64,
}

impl Outbox {
    /// `control.ack {last_id}` drops everything up to `last_id`.
    fn on_frame(&mut self, text: &str) {
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        if v["type"] != "control.ack" {
            return;
        }
        let Some(last) = v["payload"]["last_id"].as_str() else {
            return;
        };
        if let Some(pos) = self.waiting.iter().position(|(id, _)| id == last) {
            for (_, dial) in self.waiting.drain(..=pos) {
                assert!(self.acked.insert(dial), "a dial acknowledged twice");
            }
        }
    }

    /// The next dial's text: 4 KB of request, kept 7 days.
    fn next(&mut self, me: &switchboard::link::phone_client::PhoneIdentity) -> String {
        use serde_json::json;
        self.sent += 1;
        let n = self.sent;
        let dial_id = format!("app-full-{n:06}");
        let filler: String = (0..4096)
            .map(|k| char::from(b'a' + ((n + k) % 26) as u8))
            .collect();
        let start = switchboard::clock::Clock::now_ms(&switchboard::clock::SystemClock);
        let payload = json!({
            "seq": n, "dedup": &dial_id,
            "call_id": format!("c{n}"), "caller": "lumiagent", "callee": "lumirealm",
            "endpoint": "lumirealm.phoneline", "op": "describe",
            "request": {"op": "describe", "callId": format!("c{n}"), "note": filler},
            "started_at": switchboard::link::rfc3339_ms(start), "duration_ms": 3,
            "outcome": "ok", "response": {"name": "LumiRealm"}
        });
        let mut v = switchboard::link::phone_client::envelope(
            "event.phoneline.dial",
            Some(&me.entity_id()),
            payload,
        );
        v["session"] = json!("ses_diskfull000001");
        v["device"] = json!(me.device_id());
        v["generation"] = json!(1);
        v["provenance"] =
            json!({"sensor": format!("{}:phoneline", me.device_id()), "captured_at": v["ts"]});
        v["labels"] = json!({"consent": "product_operation", "retention": "standard"});
        self.waiting
            .push_back((v["id"].as_str().unwrap().to_string(), dial_id));
        v.to_string()
    }
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>;

/// Reads the frames already there (acknowledgements), without waiting.
fn read_ready(ws: &mut Ws, outbox: &mut Outbox) {
    use futures_util::{FutureExt as _, StreamExt as _};
    use tokio_tungstenite::tungstenite::Message;
    for _ in 0..100_000 {
        match ws.next().now_or_never() {
            Some(Some(Ok(Message::Text(t)))) => outbox.on_frame(&t),
            Some(Some(Ok(_))) => {}
            Some(Some(Err(e))) => panic!("the connection failed: {e}"),
            Some(None) => panic!("the desktop closed the connection"),
            None => return,
        }
    }
}

/// Sends `n` new dials in one burst; false when the desktop stopped reading (the burst is
/// still queued on this side and goes out later).
async fn burst(
    ws: &mut Ws,
    me: &switchboard::link::phone_client::PhoneIdentity,
    outbox: &mut Outbox,
    n: usize,
) -> bool {
    use futures_util::SinkExt as _;
    use tokio_tungstenite::tungstenite::Message;
    for _ in 0..n {
        let t = outbox.next(me);
        ws.feed(Message::text(t)).await.unwrap();
    }
    matches!(
        tokio::time::timeout(Duration::from_secs(3), ws.flush()).await,
        Ok(Ok(()))
    )
}

/// `switchboard status` of the app in `home`: (exit code, what it printed).
async fn status_cli(home: &Path) -> (Option<i32>, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_switchboard"));
    c.arg("status").env("SWITCHBOARD_HOME", home);
    let out = tokio::task::spawn_blocking(move || c.output().unwrap())
        .await
        .unwrap();
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
#[ignore = "run by the test above inside its private mount namespace"]
fn app_in_namespace() {
    use std::net::{IpAddr, Ipv4Addr};
    use std::sync::Arc;
    use switchboard::app::{App, AppConfig, AppPaths, HostCall, IdentityStore, RecordingHost};
    use switchboard::link::phone_client::{PhoneClient, PhoneIdentity};

    let dir = PathBuf::from(std::env::var_os(APP_DIR_VAR).expect("run by the outer test"));
    mount(&[
        "-t",
        "tmpfs",
        "-o",
        "size=16m,mode=0700",
        "tmpfs",
        dir.to_str().unwrap(),
    ]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let lo = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let mut config = AppConfig::new(AppPaths::under(&dir), false);
        config.identity = IdentityStore::Memory;
        config.listen = (lo, 0);
        config.mdns = false;
        let host = Arc::new(RecordingHost::new());
        let app = App::new(
            config,
            host.clone(),
            tokio::runtime::Handle::current(),
            switchboard::confirmations::ConfirmationMirror::with_bundled_catalogue(),
        );
        app.start_link();
        let t = Instant::now();
        while app.phones.link().and_then(|l| l.local_addr()).is_none() || app.hub().is_none() {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "the link did not start"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        switchboard::control::start_control(&app).expect("the control socket starts");
        let (code, said) = status_cli(&dir).await;
        assert_eq!(code, Some(0), "{said}");

        // Pair a phone as the person does (the Phones view's "Codes match").
        let link = app.phones.link().unwrap();
        let invite = link.open_pairing(lo);
        let me = PhoneIdentity::generate("Full disk phone");
        let mut phone = PhoneClient::connect(
            link.local_addr().unwrap(),
            link.identity().cert_fingerprint(),
        )
        .await
        .unwrap();
        let shown = phone.pair_start(&me, &invite.code, vec![]).await.unwrap();
        let pending = app.phones.snapshot().pending.unwrap();
        app.change()
            .unwrap()
            .confirm_pairing(&pending.id, true)
            .unwrap();
        phone.pair_confirm(&me, &shown, true, (1, 1)).await.unwrap();
        let mut ws = phone.into_ws();
        let mut outbox = Outbox::default();

        // Stream until the app says the disk is full.
        let t0 = Instant::now();
        let mut stalled = false;
        while app.tray_summary().storage_problem.is_none() {
            assert!(
                t0.elapsed() < Duration::from_secs(90) && outbox.sent < 40_000,
                "the disk never filled ({} dials sent)",
                outbox.sent
            );
            if !burst(&mut ws, &me, &mut outbox, 32).await {
                stalled = true;
                break;
            }
            read_ready(&mut ws, &mut outbox);
        }
        let t = Instant::now();
        let problem = loop {
            if let Some(p) = app.tray_summary().storage_problem {
                break p;
            }
            assert!(t.elapsed() < Duration::from_secs(30), "never said full");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        println!(
            "full after {} dials sent ({:.1} s; the desktop stopped reading: {stalled}): {problem}",
            outbox.sent,
            t0.elapsed().as_secs_f64()
        );
        let data = dir.join("data");
        assert!(problem.contains(&*data.to_string_lossy()), "{problem}");

        // Nothing acknowledged past what is in the file; the phone keeps the rest.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        read_ready(&mut ws, &mut outbox);
        let acked_while_full = outbox.acked.len();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        read_ready(&mut ws, &mut outbox);
        assert_eq!(
            outbox.acked.len(),
            acked_while_full,
            "no acknowledgement while the disk is full"
        );
        assert!(
            !outbox.waiting.is_empty(),
            "the phone keeps what is not acknowledged"
        );
        let stored = count_ids(&data.join("dials.sqlite3"));
        for id in &outbox.acked {
            assert_eq!(
                stored.get(id),
                Some(&1),
                "acknowledged dial {id} is in the file once"
            );
        }
        println!(
            "{} acknowledged and in the file, {} kept by the phone",
            outbox.acked.len(),
            outbox.waiting.len()
        );

        // Said everywhere: the tray, the Phones view, `switchboard status`.
        let tray = app.tray_summary();
        assert!(tray.tooltip().contains("disk full"), "{}", tray.tooltip());
        assert!(tray.needs_attention());
        assert!(
            host.calls()
                .iter()
                .any(|c| matches!(c, HostCall::Tray(s) if s.storage_problem.is_some())),
            "the host's tray was told"
        );
        assert_eq!(
            app.phones_snapshot().storage_problem.as_deref(),
            Some(problem.as_str())
        );
        let (code, said) = status_cli(&dir).await;
        assert_eq!(code, Some(1), "{said}");
        assert!(
            said.contains("Dial history: DISK FULL, dials are not being saved: ")
                && said.contains(&*data.to_string_lossy()),
            "{said}"
        );
        assert!(
            app.phones.snapshot().phones.iter().all(|p| p.connected),
            "the phone stays connected"
        );

        // Room again: acknowledgements resume by themselves on the same connection.
        mount(&["-o", "remount,size=256m", dir.to_str().unwrap()]);
        let t = Instant::now();
        let mut more = 0;
        while !outbox.waiting.is_empty() || more < 200 {
            assert!(
                t.elapsed() < Duration::from_secs(90),
                "{} dials never acknowledged",
                outbox.waiting.len()
            );
            if more < 200 && burst(&mut ws, &me, &mut outbox, 20).await {
                more += 20;
            }
            read_ready(&mut ws, &mut outbox);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        println!(
            "every dial acknowledged {:.1} s after the remount",
            t.elapsed().as_secs_f64()
        );
        assert_eq!(app.tray_summary().storage_problem, None);
        assert_eq!(app.phones_snapshot().storage_problem, None);
        // The host's tray is told too, without being asked: the writer's change wakes the
        // app's watcher (it does not look every so often).
        let t = Instant::now();
        loop {
            let last_tray = host.calls().into_iter().rev().find_map(|c| match c {
                HostCall::Tray(s) => Some(s),
                _ => None,
            });
            if last_tray.is_some_and(|s| s.storage_problem.is_none()) {
                break;
            }
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "the host's tray was not told the disk has room again"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let (code, said) = status_cli(&dir).await;
        assert_eq!(code, Some(0), "{said}");
        assert!(
            said.contains("Dial history: dials are being saved"),
            "{said}"
        );
        drop(ws);
        app.shutdown().await;
        let stored = count_ids(&data.join("dials.sqlite3"));
        assert_eq!(stored.len() as u64, outbox.sent, "every dial stored");
        assert!(stored.values().all(|n| *n == 1), "none stored twice");
        println!("{} dials stored exactly once", outbox.sent);
    });
    drop(rt);
    let _ = Command::new("umount").arg(&dir).status();
}
