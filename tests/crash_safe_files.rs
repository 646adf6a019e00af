//! Crash-safe files: the trust file, the settings, the pairings file (with its
//! `.bak`) and dial exports survive a kill at any moment of a write. After every kill the file
//! is exactly its old or its new content, as the app's own writer wrote them — never a mix, an
//! empty or a missing file — and the app's reader reads it. All four are written by
//! `fsutil::write_atomic*` (temporary file in the same folder, fsync, rename, folder fsync).
//!
//! Two tests, both with the writer in a separate process: this test binary run again with
//! `--ignored --exact writer_process` and `CRASH_SAFE_KIND`/`CRASH_SAFE_DIR` set
//! ([`writer_process`], ignored in normal runs), which writes one file kind through the app's
//! writer in a loop, alternating between two valid contents.
//! - [`random_sigkills_leave_the_old_or_the_new_file`]: [`KILLS_PER_KIND`] SIGKILLs per kind at
//!   random moments (seeded; the seed is printed and `CRASH_SAFE_SEED=...` repeats a run).
//! - [`a_kill_at_each_step_of_a_write`]: the writer, run under `strace` with syscall fault
//!   injection, is killed exactly as it enters each `fsync` and `rename` of one write: before
//!   the temporary file is synced, before the rename, and between the rename and the folder's
//!   fsync. A kill there cannot undo the rename (the kernel has done it; only a power cut before
//!   the folder fsync could, and then the old file is what is found): the file is the new one.
//!
//! A kill mid-write leaves the temporary file `.NAME.<random>.tmp` behind (no process is left
//! to remove it). Nothing reads it — the app and LumiAgent read only the file's own name — and
//! the app removes those of its own folders at start (`AppPaths::make_private`); the tests check
//! that nothing else is ever left and that the clean-up removes exactly those.
// Unix only: the writer is killed with SIGKILL and, for each step, under strace's syscall fault
// injection (fsync, rename); Windows has neither, so nothing here could run there.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use rand::{Rng as _, SeedableRng as _};
use switchboard::dials::jsonl::{export_jsonl_file, parse_jsonl};
use switchboard::dials::{Dial, ImportedLog};
use switchboard::fsutil::{is_temp_file_name, remove_stale_temp_files};
use switchboard::link::{PairedPhone, TrustFile};
use switchboard::phone_line::pairings::{backup_path, PairingsFile};
use switchboard::settings::{KnownLineSetting, Settings};

const KIND_VAR: &str = "CRASH_SAFE_KIND";
const DIR_VAR: &str = "CRASH_SAFE_DIR";
/// Set: the writer writes the other content once and exits (the strace test).
const ONCE_VAR: &str = "CRASH_SAFE_ONCE";
const KILLS_PER_KIND: usize = 50;
/// Most writes of one writer process, and its longest life (it is killed long before).
const MAX_WRITES: u64 = 1_000_000;
const MAX_LIFE: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Trust,
    Settings,
    Pairings,
    Export,
}

const KINDS: [Kind; 4] = [Kind::Trust, Kind::Settings, Kind::Pairings, Kind::Export];

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Trust => "trust",
            Kind::Settings => "settings",
            Kind::Pairings => "pairings",
            Kind::Export => "export",
        }
    }

    fn from_name(s: &str) -> Kind {
        *KINDS.iter().find(|k| k.name() == s).unwrap()
    }

    /// The file the kind's writer writes in `dir`.
    fn path(self, dir: &Path) -> PathBuf {
        dir.join(match self {
            Kind::Trust => switchboard::link::trust::TRUST_FILE,
            Kind::Settings => "settings.json",
            Kind::Pairings => "phoneline-pairings.json",
            Kind::Export => "dials-export.jsonl",
        })
    }

    /// Writes content `which` (0 or 1) through the app's own writer for this kind.
    fn write(self, dir: &Path, which: usize) {
        let path = self.path(dir);
        match self {
            Kind::Trust => TrustFile::in_dir(dir).save(&phones(which)).unwrap(),
            Kind::Settings => settings(which).save(&path).unwrap(),
            Kind::Pairings => cached_pairings(which).save(&path).unwrap(),
            Kind::Export => {
                export_jsonl_file(cached_dials(which), &path).unwrap();
            }
        }
    }

    /// Reads the file back with the app's own reader (panics when it does not read).
    fn read(self, dir: &Path) {
        let path = self.path(dir);
        match self {
            Kind::Trust => {
                TrustFile::in_dir(dir).load().unwrap();
            }
            Kind::Settings => {
                Settings::load(&path).unwrap();
            }
            Kind::Pairings => {
                PairingsFile::load(&path).unwrap();
            }
            Kind::Export => {
                ImportedLog::read_jsonl_file(&path).unwrap();
            }
        }
    }
}

fn phones(which: usize) -> Vec<PairedPhone> {
    (0..[1, 6][which])
        .map(|i| PairedPhone {
            device_id: format!("dev_phone{i:04}"),
            public_key: "A".repeat(43),
            label: format!("Phone {i}"),
            capabilities: vec![serde_json::json!({"type": "tool:messages.send"})],
            paired_at_ms: 1_784_595_600_000 + i,
            last_seen_ms: (which == 1).then_some(1_784_595_700_000),
            last_address: Some(format!("127.0.0.1:{}", 5000 + i)),
            binding: Default::default(),
        })
        .collect()
}

fn settings(which: usize) -> Settings {
    let mut s = Settings::default();
    if which == 1 {
        s.close_to_tray = false;
        s.dial_ring_capacity = 250_000;
        s.extra_phone_lines = (0..20)
            .map(|i| KnownLineSetting {
                identifier: format!("line{i}"),
                name: format!("Line {i}"),
            })
            .collect();
    }
    s
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn pairings(which: usize) -> PairingsFile {
    let mut f = PairingsFile::load(&repo().join("tests/data/phoneline-pairings.sample.json"))
        .expect("the sample pairings file reads");
    if which == 1 {
        let ids: Vec<String> = f.records().map(|(id, _)| id.to_string()).collect();
        assert!(!ids.is_empty());
        for id in ids {
            let _ = f.revoke(&id, 1_784_595_700_000);
        }
    }
    f
}

/// The demo's dials (the fuzz seed export), repeated under fresh ids: 9 dials or 900, so the
/// second content takes many writes' worth of bytes.
fn dials(which: usize) -> Vec<Arc<Dial>> {
    let seed = repo().join("fuzz/seeds/jsonl_import/demo-dials.jsonl");
    let base = parse_jsonl(BufReader::new(std::fs::File::open(&seed).unwrap()), &seed).unwrap();
    assert!(!base.is_empty());
    (0..[1, 100][which])
        .flat_map(|rep| {
            base.iter().map(move |d| {
                Arc::new(Dial {
                    id: Arc::from(format!("{}-{rep}", d.id)),
                    ..d.clone()
                })
            })
        })
        .collect()
}

/// [`pairings`], made once per process (a writer writes them many times).
fn cached_pairings(which: usize) -> &'static PairingsFile {
    static FILES: OnceLock<[PairingsFile; 2]> = OnceLock::new();
    &FILES.get_or_init(|| [pairings(0), pairings(1)])[which]
}

/// [`dials`], made once per process.
fn cached_dials(which: usize) -> &'static [Arc<Dial>] {
    static DIALS: OnceLock<[Vec<Arc<Dial>>; 2]> = OnceLock::new();
    &DIALS.get_or_init(|| [dials(0), dials(1)])[which]
}

/// How long one write of each content takes here (median of a few, in a scratch folder): the
/// random kills are spread over a few writes' time.
fn write_time(kind: Kind) -> Duration {
    let scratch = tempfile::tempdir().unwrap();
    let mut times: Vec<Duration> = (0..10)
        .map(|i| {
            let t = Instant::now();
            kind.write(scratch.path(), i % 2);
            t.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

/// The writer process: writes `CRASH_SAFE_KIND`'s file in `CRASH_SAFE_DIR`, alternating the two
/// contents (content 0 is already there), until killed (bounded in count and time); with
/// `CRASH_SAFE_ONCE`, writes content 1 once and exits.
#[test]
#[ignore = "the writer process of the crash-safe-file tests, which run it"]
fn writer_process() {
    let (Some(kind), Some(dir)) = (std::env::var(KIND_VAR).ok(), std::env::var_os(DIR_VAR)) else {
        return;
    };
    let kind = Kind::from_name(&kind);
    let dir = PathBuf::from(dir);
    if std::env::var_os(ONCE_VAR).is_some() {
        kind.write(&dir, 1);
        return;
    }
    // Contents made before READY, so the kills fall on writes, not on the set-up.
    let _ = (cached_pairings(0), cached_dials(0));
    println!("READY");
    let start = Instant::now();
    for i in 0..MAX_WRITES {
        if start.elapsed() > MAX_LIFE {
            break;
        }
        kind.write(&dir, ((i + 1) % 2) as usize);
    }
}

fn writer(kind: Kind, dir: &Path, once: bool, under: Option<&[String]>) -> Child {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = match under {
        Some(strace) => {
            let mut c = Command::new("strace");
            c.args(strace).arg("--").arg(&exe);
            c
        }
        None => Command::new(&exe),
    };
    cmd.args([
        "--exact",
        "writer_process",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(KIND_VAR, kind.name())
    .env(DIR_VAR, dir)
    .stdout(Stdio::piped())
    .stderr(Stdio::inherit());
    if once {
        cmd.env(ONCE_VAR, "1");
    }
    cmd.spawn().unwrap()
}

/// Every name in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut n: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    n.sort();
    n
}

/// The contents the app's writer gives for `kind` (0 and 1), each written in a scratch folder.
fn contents(kind: Kind) -> [Vec<u8>; 2] {
    let scratch = tempfile::tempdir().unwrap();
    [0, 1].map(|which| {
        kind.write(scratch.path(), which);
        std::fs::read(kind.path(scratch.path())).unwrap()
    })
}

/// Checks `dir` after a kill: the file is whole (one of `both`, by bytes) and reads; the
/// pairings backup, when there, is whole too; nothing else is there but temporary files of
/// the writer, which the clean-up removes. Returns (which content, temporary files left).
fn check_after_kill(kind: Kind, dir: &Path, both: &[Vec<u8>; 2], what: &str) -> (usize, usize) {
    let path = kind.path(dir);
    let bytes = std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{what}: {} is missing after the kill: {e}", path.display()));
    let which = both.iter().position(|c| *c == bytes).unwrap_or_else(|| {
        panic!(
            "{what}: {} is neither the old nor the new content ({} bytes; old {}, new {}):\n{}",
            path.display(),
            bytes.len(),
            both[0].len(),
            both[1].len(),
            String::from_utf8_lossy(&bytes)
        )
    });
    kind.read(dir);
    let name = path.file_name().unwrap().to_str().unwrap().to_string();
    let mut expected = vec![name.clone()];
    if kind == Kind::Pairings {
        let bak = backup_path(&path);
        if let Ok(b) = std::fs::read(&bak) {
            assert!(
                both.contains(&b),
                "{what}: the backup is not a whole pairings file ({} bytes)",
                b.len()
            );
            expected.push(bak.file_name().unwrap().to_str().unwrap().to_string());
        }
    }
    let temps: Vec<String> = names(dir)
        .into_iter()
        .filter(|n| !expected.contains(n))
        .collect();
    for t in &temps {
        assert!(
            is_temp_file_name(t, None),
            "{what}: {t} left beside {name} is not a temporary file of the writer"
        );
    }
    let removed = remove_stale_temp_files(dir, None).unwrap();
    assert_eq!(removed.len(), temps.len(), "{what}: clean-up missed some");
    expected.sort();
    assert_eq!(names(dir), expected, "{what}: after the clean-up");
    (which, temps.len())
}

#[cfg(unix)]
#[test]
fn random_sigkills_leave_the_old_or_the_new_file() {
    let seed: u64 = std::env::var("CRASH_SAFE_SEED")
        .ok()
        .map(|s| s.parse().expect("CRASH_SAFE_SEED is a number"))
        .unwrap_or_else(rand::random);
    println!("CRASH_SAFE_SEED={seed}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    for kind in KINDS {
        let both = contents(kind);
        assert_ne!(both[0], both[1]);
        let dir = tempfile::tempdir().unwrap();
        kind.write(dir.path(), 0);
        // Kills land from the writer's start to about four writes later (the writer is
        // built and warm by READY: its contents are made before it says so).
        let mut window = (write_time(kind) * 4).max(Duration::from_millis(2));
        let (mut tally, mut mid_write) = ([0usize; 2], 0usize);
        // A loaded machine can make writes slower than the calibration said (a CI run saw 90
        // kills within 1.07 s of the start land before one whole export: its fsync stalled):
        // when no kill has yet come after a whole write, up to 40 more kills follow, the window
        // doubling every 5 (to 256 times the first).
        let mut round = 0;
        while round < KILLS_PER_KIND || (tally[1] == 0 && round < KILLS_PER_KIND + 40) {
            if round >= KILLS_PER_KIND && (round - KILLS_PER_KIND) % 5 == 0 {
                window *= 2;
            }
            let mut child = writer(kind, dir.path(), false, None);
            // Wait for the writer to be at its loop (bounded: one line, or it ended).
            // libtest prints its own lines first; the pipe stays open until the kill.
            let mut out = BufReader::new(child.stdout.take().unwrap());
            let mut ready = false;
            for _ in 0..20 {
                let mut line = String::new();
                if out.read_line(&mut line).unwrap() == 0 {
                    break;
                }
                // ("test writer_process ... READY": libtest names the test on the same line)
                if line.trim_end().ends_with("READY") {
                    ready = true;
                    break;
                }
            }
            assert!(ready, "{}: the writer did not start", kind.name());
            std::thread::sleep(window.mul_f64(rng.gen_range(0.0..1.0)));
            child.kill().unwrap(); // SIGKILL on Unix
            let status = child.wait().unwrap();
            drop(out);
            assert!(
                !status.success(),
                "{}: the writer ended before the kill ({status})",
                kind.name()
            );
            let what = format!("{} kill {}", kind.name(), round + 1);
            let (which, temps) = check_after_kill(kind, dir.path(), &both, &what);
            tally[which] += 1;
            mid_write += usize::from(temps > 0);
            round += 1;
        }
        println!(
            "{}: {round} kills within {window:?} of the writer's start; file holds content \
             A/B {}/{}; {mid_write} landed mid-write (temporary file left, removed by the \
             clean-up)",
            kind.name(),
            tally[0],
            tally[1],
        );
        assert!(
            tally[1] > 0,
            "{}: no kill came after a whole write; the test proved nothing",
            kind.name()
        );
        assert!(
            mid_write > 0,
            "{}: no kill landed during a write; the test proved nothing",
            kind.name()
        );
    }
}

/// One step of a write the writer is killed at: the `n`th call of `syscall` (counting from 1).
struct Step {
    syscall: &'static str,
    n: u32,
    /// Which content the file must have after the kill.
    expect: usize,
    /// Where in the write that is.
    words: &'static str,
}

fn steps(kind: Kind) -> Vec<Step> {
    let one = |syscall, n, expect, words| Step {
        syscall,
        n,
        expect,
        words,
    };
    let rename = "rename,renameat,renameat2";
    if kind == Kind::Pairings {
        // The backup is written first, atomically too, then the file.
        vec![
            one(
                "fsync",
                1,
                0,
                "before the backup's temporary file is synced",
            ),
            one(rename, 1, 0, "before the backup's rename"),
            one(
                "fsync",
                2,
                0,
                "between the backup's rename and its folder fsync",
            ),
            one("fsync", 3, 0, "before the temporary file is synced"),
            one(rename, 2, 0, "before the rename"),
            one("fsync", 4, 1, "between the rename and the folder fsync"),
        ]
    } else {
        vec![
            one("fsync", 1, 0, "before the temporary file is synced"),
            one(rename, 1, 0, "before the rename"),
            one("fsync", 2, 1, "between the rename and the folder fsync"),
        ]
    }
}

#[cfg(unix)]
#[test]
fn a_kill_at_each_step_of_a_write() {
    use std::os::unix::process::ExitStatusExt as _;
    let found = Command::new("strace").arg("-V").output();
    assert!(
        found.as_ref().is_ok_and(|o| o.status.success()),
        "strace is needed (Debian package strace; scripts/install-deps.sh installs it): {found:?}"
    );
    let mut killed = 0;
    for kind in KINDS {
        let both = contents(kind);
        for step in steps(kind) {
            let dir = tempfile::tempdir().unwrap();
            kind.write(dir.path(), 0);
            let args: Vec<String> = [
                "-qq",
                "-f",
                "-o",
                "/dev/null",
                "-e",
                "trace=fsync,rename,renameat,renameat2",
                "-e",
                &format!("inject={}:signal=KILL:when={}", step.syscall, step.n),
            ]
            .map(String::from)
            .to_vec();
            let child = writer(kind, dir.path(), true, Some(&args));
            let out = child.wait_with_output().unwrap();
            let what = format!("{} killed {}", kind.name(), step.words);
            // strace reports the tracee's death by signal as its own exit 128 + 9 (or the signal).
            assert!(
                out.status.code() == Some(128 + 9) || out.status.signal() == Some(9),
                "{what}: the writer was not killed there ({})",
                out.status
            );
            let (which, temps) = check_after_kill(kind, dir.path(), &both, &what);
            assert_eq!(
                which,
                step.expect,
                "{what}: expected the {} content",
                ["old", "new"][step.expect]
            );
            println!(
                "{what}: {} content, {temps} temporary file(s) left",
                ["old", "new"][which]
            );
            killed += 1;
        }
    }
    assert_eq!(killed, 3 * 3 + 6);
}
