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

fn count_ids(db: &Path) -> HashMap<String, u64> {
    let c = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap();
    let mut s = c.prepare("SELECT id FROM dials").unwrap();
    let mut out = HashMap::new();
    for id in s.query_map([], |r| r.get::<_, String>(0)).unwrap() {
        *out.entry(id.unwrap()).or_insert(0) += 1;
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
