//! What a Switchboard left running all day costs (`docs/performance.md`): the release app under
//! Xvfb with its own session bus and a stand-in tray (a StatusNotifier watcher, as KDE and GNOME
//! serve one), the embedded demo phone over loopback.
//!
//! `cargo bench -p switchboard-desktop --bench tray` prints, one `key=value` a line at the end:
//!
//! - `tray_rss_vs_core`: RSS of every process of the app (it and all below it) in the tray
//!   after 10 open/close cycles, over the RSS of the same app started `--hidden` at the same
//!   time and fed the same stream (the core alone: it never made a window), the demo phone
//!   streaming about 10 dials/s in both; each read 8 s after the close, the median of 5
//!   readings half a second apart.
//! - `tray_rss_growth_pct`: the same RSS in the tray after the 10th cycle against after the
//!   1st, in percent.
//! - `reopen_first_paint_ms`: the median over the cycles of the time from the window being made
//!   again to its page's first paint on the place that was left (the app logs it).
//! - `idle_cpu_pct_tray`, `idle_wakeups_per_s`: one paired phone connected and quiet, the
//!   window closed to the tray: CPU time of every process of the app over 60 s, in percent of
//!   one core, and how often their threads were scheduled in (`/proc/PID/task/*/schedstat`,
//!   the third field), per second.
//! - `idle_cpu_pct_window`: the same with the window open and idle, over 60 s.
//!
//! Both apps of the memory part start with a full ring: the demo scenario is first played at
//! full speed into each one's history (more dials than the ring holds), the bench waits until it
//! is stored and indexed, and the app is started again on it, as an app that has run for an hour
//! is; `TRAY_BENCH_FILL=0` starts them empty.
//!
//! Environment: `TRAY_BENCH_CYCLES` (default 10), `TRAY_BENCH_IDLE_S` (default 60);
//! `TRAY_BENCH_THREADS=1` lists the threads that woke; `TRAY_BENCH_SMAPS=1` prints where the
//! app's RSS in the tray differs from the core alone's, and where it grew from the first cycle to
//! the last, by mapping.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[cfg(target_os = "linux")]
use std::process::{Command, Stdio};
#[cfg(target_os = "linux")]
use std::time::{Duration, Instant};

#[cfg(target_os = "linux")]
#[path = "../tests/real_window/mod.rs"]
mod real_window;
#[cfg(target_os = "linux")]
#[path = "../tests/tray_stand_in/mod.rs"]
mod tray_stand_in;

#[cfg(target_os = "linux")]
use real_window::{
    close_window, descendants, rss_by_mapping, spawn_logged, start_desktop, windows, Desktop, Log,
    Proc,
};

#[cfg(target_os = "linux")]
/// The demo scenario's messages per second that make about 10 dials a second (13 of its 40
/// messages are dials).
const RATE_10_DIALS: &str = "31";

#[cfg(target_os = "linux")]
/// Repetitions of the demo scenario (13 dials each: 27 300 dials) played at full speed into
/// each app's history before the memory is measured, more than the live ring holds (25 000 by
/// default), so both apps start with a full ring loaded from it, as an app running all day has.
/// Otherwise both grow by the ring filling (at 10 dials/s it fills in about 40 minutes), which
/// is not what the cycles are measured for.
const FILL_REPEAT: &str = "2100";
#[cfg(target_os = "linux")]
/// The dials [`FILL_REPEAT`] repetitions store.
const FILL_DIALS: i64 = 2100 * 13;

#[cfg(target_os = "linux")]
/// `pid` and every process below it.
fn tree(pid: u32) -> Vec<u32> {
    std::iter::once(pid)
        .chain(descendants(pid).into_iter().map(|(p, _)| p))
        .collect()
}

#[cfg(target_os = "linux")]
/// The value of `field` (`VmRSS:`, `RssAnon:`, `Threads:`, ...) in `/proc/PID/status`: KiB for
/// the memory fields; 0 when the process is gone.
fn status_value(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

#[cfg(target_os = "linux")]
/// `VmRSS` of `pid` in KiB (0 when gone).
fn rss_kib(pid: u32) -> u64 {
    status_value(pid, "VmRSS:")
}

#[cfg(target_os = "linux")]
/// RSS of `pid` and every process below it, in KiB.
fn tree_rss_kib(pid: u32) -> u64 {
    tree(pid).into_iter().map(rss_kib).sum()
}

#[cfg(target_os = "linux")]
/// Where RSS by mapping `a` differs from `b`, largest first (printed with `TRAY_BENCH_SMAPS=1`):
/// the app in the tray against the core alone (which libraries' pages and which heaps the
/// window left behind), and the app after the last cycle against after the first (what grew).
fn print_rss_difference(
    what: &str,
    a: &std::collections::HashMap<String, u64>,
    c: &std::collections::HashMap<String, u64>,
) {
    let mut keys: Vec<&String> = a.keys().chain(c.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut diff: Vec<(i64, &String)> = keys
        .into_iter()
        .map(|k| {
            let (x, y) = (
                a.get(k).copied().unwrap_or(0),
                c.get(k).copied().unwrap_or(0),
            );
            (x as i64 - y as i64, k)
        })
        .filter(|(d, _)| *d != 0)
        .collect();
    diff.sort_by_key(|(d, _)| std::cmp::Reverse(d.abs()));
    let sum = |m: &std::collections::HashMap<String, u64>, file: bool| -> u64 {
        m.iter()
            .filter(|(k, _)| k.starts_with('/') == file)
            .map(|(_, v)| v)
            .sum()
    };
    eprintln!(
        "    RSS, {what}: files {} vs {} KiB, anonymous {} vs {} KiB",
        sum(a, true),
        sum(c, true),
        sum(a, false),
        sum(c, false)
    );
    for (d, k) in diff.iter().take(20) {
        eprintln!("    {d:+} KiB {k}");
    }
}

#[cfg(target_os = "linux")]
/// Nanoseconds on a CPU and times scheduled in of every thread of `pid` and the processes
/// below it (`/proc/PID/task/TID/schedstat`), by `(pid, tid)`.
fn sched(pid: u32) -> std::collections::HashMap<(u32, String), (u64, u64)> {
    let mut out = std::collections::HashMap::new();
    for p in tree(pid) {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            if let Ok(s) = std::fs::read_to_string(t.path().join("schedstat")) {
                let f: Vec<u64> = s
                    .split_whitespace()
                    .filter_map(|x| x.parse().ok())
                    .collect();
                if f.len() >= 3 {
                    let tid = t.file_name().to_string_lossy().into_owned();
                    out.insert((p, tid), (f[0], f[2]));
                }
            }
        }
    }
    out
}

#[cfg(target_os = "linux")]
/// CPU in percent of one core and wake-ups per second of `pid`'s tree over `secs`: each
/// thread's growth (a thread that started meanwhile counts whole; one that ended is missed).
fn idle(pid: u32, secs: u64) -> (f64, f64) {
    let before = sched(pid);
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs(secs));
    let after = sched(pid);
    let wall = t0.elapsed().as_secs_f64();
    let (mut ns, mut runs) = (0u64, 0u64);
    for (k, (n1, r1)) in &after {
        let (n0, r0) = before.get(k).copied().unwrap_or((0, 0));
        ns += n1.saturating_sub(n0);
        runs += r1.saturating_sub(r0);
    }
    if std::env::var_os("TRAY_BENCH_THREADS").is_some() {
        // Which threads woke, most first (to find the timers behind the figure).
        let mut per: Vec<(u64, u64, String)> = after
            .iter()
            .map(|((p, t), (n1, r1))| {
                let (n0, r0) = before.get(&(*p, t.clone())).copied().unwrap_or((0, 0));
                let comm =
                    std::fs::read_to_string(format!("/proc/{p}/task/{t}/comm")).unwrap_or_default();
                (
                    r1.saturating_sub(r0),
                    n1.saturating_sub(n0),
                    format!("{p}/{t} {}", comm.trim()),
                )
            })
            .filter(|(r, _, _)| *r > 0)
            .collect();
        per.sort_by_key(|p| std::cmp::Reverse(p.0));
        for (r, n, name) in per.iter().take(15) {
            eprintln!("    {name}: {r} runs, {:.1} ms", *n as f64 / 1e6);
        }
    }
    (ns as f64 / 1e9 / wall * 100.0, runs as f64 / wall)
}

#[cfg(target_os = "linux")]
/// A started app on its own desktop and home.
struct Running {
    desktop: Desktop,
    home: tempfile::TempDir,
    _tray: tray_stand_in::StandInTray,
    app: Proc,
    log: Log,
    started: Instant,
}

#[cfg(target_os = "linux")]
impl Running {
    fn cmd(
        desktop: &Desktop,
        home: &std::path::Path,
        args: &[&str],
        rate: &str,
        repeat: &str,
    ) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_switchboard-desktop"));
        c.args(args)
            .env("DISPLAY", &desktop.display)
            .env("DBUS_SESSION_BUS_ADDRESS", &desktop.bus)
            .env("SWITCHBOARD_HOME", home)
            .env("HOME", home)
            .env("SWITCHBOARD_DEMO_RATE", rate)
            .env("SWITCHBOARD_DEMO_REPEAT", repeat)
            .stdout(Stdio::null());
        c
    }

    fn start(args: &[&str], rate: &str, repeat: &str) -> Self {
        let desktop = start_desktop();
        let tray = tray_stand_in::stand_in_tray(&desktop.bus);
        let home = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let (app, log) = spawn_logged(&mut Self::cmd(&desktop, home.path(), args, rate, repeat));
        Self {
            desktop,
            home,
            _tray: tray,
            app,
            log,
            started,
        }
    }

    /// The same desktop and home, the app started again with `args`, `rate` and `repeat`: the
    /// running one is stopped first (SIGTERM: it runs its shutdown) and waited for.
    fn restart(&mut self, args: &[&str], rate: &str, repeat: &str) {
        assert!(
            self.app.terminate(Duration::from_secs(30)),
            "the app did not stop within 30 s of SIGTERM: {}",
            real_window::app_state(&mut self.app, &self.log, self.started)
        );
        self.started = Instant::now();
        let (app, log) = spawn_logged(&mut Self::cmd(
            &self.desktop,
            self.home.path(),
            args,
            rate,
            repeat,
        ));
        self.app = app;
        self.log = log;
    }

    /// Started hidden on an empty home, the demo scenario played [`FILL_REPEAT`] times at full
    /// speed into its history (and indexed), then started again with `args` at `rate`: its ring
    /// is full from the start.
    fn start_filled(args: &[&str], rate: &str, repeat: &str) -> Self {
        let mut r = Self::start(&["--demo", "--hidden"], "max", FILL_REPEAT);
        // The demo phone stays connected after its scenario: the file says when it is in, and
        // when the history's indexes have caught up with it (as they have in an app that has
        // run a while: started again on a backlog, the app would index it during the cycles).
        let db = r.home.path().join("data/demo/dials.sqlite3");
        r.wait(600, "the history filled and indexed", |_| {
            let (stored, newest, indexed) = stored_dials(&db);
            stored >= FILL_DIALS && indexed >= newest
        });
        r.restart(args, rate, repeat);
        r
    }

    fn pid(&self) -> u32 {
        self.app.0.id()
    }

    fn count(&self, what: &str) -> usize {
        self.log.text().lines().filter(|l| l.contains(what)).count()
    }

    fn wait(&mut self, secs: u64, what: &str, mut cond: impl FnMut(&Self) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while !cond(self) {
            if Instant::now() > deadline {
                panic!(
                    "{what}: not within {secs} s: {}",
                    real_window::app_state(&mut self.app, &self.log, self.started)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The window to the tray; waits until nothing but the app is left.
    fn close(&mut self) {
        let n = self.count("window closed to the tray");
        let win = windows(&self.desktop.display, true);
        assert_eq!(win.len(), 1, "one window: {win:?}");
        close_window(&self.desktop.display, &win[0]);
        self.wait(20, "closed to the tray", |r| {
            r.count("window closed to the tray") > n && tree(r.pid()).len() == 1
        });
    }

    /// The window again through a second start (the single-instance hand-off); the ms to its
    /// first paint as the app logged it.
    fn reopen(&mut self) -> f64 {
        let n = self.count("first paint");
        let mut second = Self::cmd(&self.desktop, self.home.path(), &["--demo"], "1", "1")
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.wait(60, "the window's page painted", |r| {
            r.count("first paint") > n
        });
        let _ = second.wait();
        let text = self.log.text();
        let line = text.lines().rfind(|l| l.contains("first paint")).unwrap();
        // Where the time went, as the app logged it: the web process and the page's request
        // (`page_start_ms`), then the page's script, place and paint (ms from its start).
        let parts: Vec<&str> = line
            .split_whitespace()
            .filter(|w| w.contains("_ms="))
            .collect();
        if !parts.is_empty() {
            eprintln!("    {}", parts.join(" "));
        }
        line.split("first paint ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
            .expect("the paint time")
    }
}

#[cfg(target_os = "linux")]
/// Dials stored in the history file at `db`, the newest one's rowid, and the rowid its indexes
/// have reached (`dial_meta.indexed_upto`), read-only beside the app writing it; zeros while it
/// cannot be read yet.
fn stored_dials(db: &std::path::Path) -> (i64, i64, i64) {
    rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .and_then(|c| {
            c.query_row(
                "SELECT (SELECT count(*) FROM dials), (SELECT max(rowid) FROM dials), \
                        (SELECT v FROM dial_meta WHERE k = 'indexed_upto')",
                [],
                |r| {
                    Ok((
                        r.get(0)?,
                        r.get::<_, Option<i64>>(1)?.unwrap_or(0),
                        r.get::<_, Option<i64>>(2)?.unwrap_or(0),
                    ))
                },
            )
        })
        .unwrap_or((0, 0, 0))
}

#[cfg(target_os = "linux")]
/// `TRAY_BENCH_SAMPLE_S=N`: only the core alone (started hidden on a filled history, fed about
/// 10 dials/s), its anonymous and file RSS printed every second for `secs` seconds, to see when
/// it grows and by what.
fn sample_core(secs: u64) {
    let core = Running::start_filled(&["--demo", "--hidden"], RATE_10_DIALS, "1000000");
    let mut first = std::collections::HashMap::new();
    for i in 1..=secs {
        std::thread::sleep(Duration::from_secs(1));
        let pid = core.pid();
        eprintln!(
            "  {i} s: anonymous {} KiB, files {} KiB, threads {}",
            status_value(pid, "RssAnon:"),
            status_value(pid, "RssFile:"),
            status_value(pid, "Threads:")
        );
        // The first seconds are the start itself; what grows after it is the question.
        if i == secs.min(5) {
            first = rss_by_mapping(pid);
        }
    }
    print_rss_difference(
        "core alone, last second vs the fifth",
        &rss_by_mapping(core.pid()),
        &first,
    );
    eprintln!("{}", core.log.text());
}

#[cfg(target_os = "linux")]
/// Seconds after the close at which the tray's RSS is read: the app gives the window's memory
/// back a second after it went, and in the seconds after that the code WebKitGTK still runs
/// with no window (its allocator's scavenger, its timers) pages some of its libraries in
/// again, about 0.5-1.2 MB; read at 3 s the figure caught that halfway.
const TRAY_SETTLE_S: u64 = 8;

#[cfg(target_os = "linux")]
/// Readings of each app's RSS, half a second apart, whose median is taken: a single reading
/// moves by a megabyte with what the demo's dials hold at that moment.
const TRAY_READINGS: usize = 5;

#[cfg(target_os = "linux")]
/// RSS in KiB of `app`'s tree and of `core`'s, [`TRAY_SETTLE_S`] after the window went: the
/// median of [`TRAY_READINGS`] readings of each, taken at the same moments.
fn settled_rss(app: &Running, core: &Running) -> (u64, u64) {
    std::thread::sleep(Duration::from_secs(TRAY_SETTLE_S));
    let (mut a, mut c) = (Vec::new(), Vec::new());
    for i in 0..TRAY_READINGS {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(500));
        }
        a.push(tree_rss_kib(app.pid()));
        c.push(tree_rss_kib(core.pid()));
    }
    let mid = |v: Vec<u64>| median(v.into_iter().map(|k| k as f64).collect()) as u64;
    (mid(a), mid(c))
}

#[cfg(target_os = "linux")]
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

#[cfg(target_os = "linux")]
fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The bench reads Linux's /proc and runs the app under Xvfb with WebKitGTK: elsewhere it
/// says so and fails, rather than printing figures it did not measure.
#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("the tray bench runs on Linux only (it reads /proc and needs Xvfb and WebKitGTK)");
    std::process::exit(1);
}

#[cfg(target_os = "linux")]
fn main() {
    // `cargo bench` passes `--bench`; anything naming a filter that is not this bench skips it.
    if std::env::args()
        .skip(1)
        .any(|a| !a.starts_with('-') && !"tray".contains(&a))
    {
        return;
    }
    let cycles = env_u64("TRAY_BENCH_CYCLES", 10).max(1);
    let idle_s = env_u64("TRAY_BENCH_IDLE_S", 60).max(1);
    if let Some(secs) = std::env::var("TRAY_BENCH_SAMPLE_S")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        sample_core(secs.clamp(1, 3600));
        return;
    }

    // Memory: the app opened and closed `cycles` times next to the same app that never had a
    // window, both fed about 10 dials/s.
    // Both start with a full ring (FILL_REPEAT) unless TRAY_BENCH_FILL=0 asks for empty ones.
    let fill = std::env::var("TRAY_BENCH_FILL").map_or(true, |v| v != "0");
    eprintln!(
        "tray bench: memory over {cycles} open/close cycles, demo phone at ~10 dials/s, {}",
        if fill {
            "the ring full from the start (the history filled first)"
        } else {
            "the ring empty at the start (TRAY_BENCH_FILL=0)"
        }
    );
    let start: fn(&[&str], &str, &str) -> Running = if fill {
        Running::start_filled
    } else {
        Running::start
    };
    let mut core = start(&["--demo", "--hidden"], RATE_10_DIALS, "1000000");
    let mut app = start(&["--demo"], RATE_10_DIALS, "1000000");
    app.wait(120, "the first window's page painted", |r| {
        r.count("first paint") > 0
    });
    core.wait(60, "the hidden start", |r| r.count("started hidden") > 0);
    let mut paints = Vec::new();
    let mut in_tray = Vec::new();
    let mut first_maps = std::collections::HashMap::new();
    for i in 0..cycles {
        // A moment with the window open, as a person glances at it.
        std::thread::sleep(Duration::from_secs(2));
        app.close();
        let (all, alone) = settled_rss(&app, &core);
        eprintln!(
            "  cycle {}: in the tray {all} KiB (processes: {}), core alone {alone} KiB",
            i + 1,
            tree(app.pid()).len()
        );
        in_tray.push((all, alone));
        if std::env::var_os("TRAY_BENCH_SMAPS").is_some() {
            if i == 0 {
                first_maps = rss_by_mapping(app.pid());
            }
            if i + 1 == cycles {
                let last_maps = rss_by_mapping(app.pid());
                print_rss_difference(
                    "app in the tray vs core alone",
                    &last_maps,
                    &rss_by_mapping(core.pid()),
                );
                print_rss_difference(
                    "app in the tray, last cycle vs first",
                    &last_maps,
                    &first_maps,
                );
            }
        }
        if i + 1 < cycles {
            let ms = app.reopen();
            eprintln!("  reopened: first paint {ms} ms after the window was made");
            paints.push(ms);
        }
    }
    let (last, alone) = *in_tray.last().unwrap();
    let first = in_tray[0].0;
    let rss_vs_core = last as f64 / alone.max(1) as f64;
    let growth = (last as f64 - first as f64) / first.max(1) as f64 * 100.0;
    let core_first = in_tray[0].1;
    eprintln!(
        "  the core alone over the same cycles: {:.1} %",
        (alone as f64 - core_first as f64) / core_first.max(1) as f64 * 100.0
    );
    drop(app);
    drop(core);

    // Idle: the demo plays its scenario at once, then stays connected, quiet.
    eprintln!("tray bench: idle, one phone connected and quiet, {idle_s} s each");
    let mut quiet = Running::start(&["--demo"], "max", "1");
    quiet.wait(120, "the window's page painted", |r| {
        r.count("first paint") > 0
    });
    // Let the scenario and the start settle.
    std::thread::sleep(Duration::from_secs(15));
    let (cpu_window, wake_window) = idle(quiet.pid(), idle_s);
    eprintln!("  window open: {cpu_window:.3} % of a core, {wake_window:.1} wake-ups/s");
    quiet.close();
    std::thread::sleep(Duration::from_secs(5));
    let (cpu_tray, wake_tray) = idle(quiet.pid(), idle_s);
    eprintln!("  in the tray: {cpu_tray:.3} % of a core, {wake_tray:.1} wake-ups/s");
    drop(quiet);

    let paint = if paints.is_empty() {
        "not measured".to_string()
    } else {
        format!("{:.0}", median(paints.clone()))
    };
    eprintln!("  reopen first paints (ms): {paints:?}");
    println!("tray_rss_vs_core={rss_vs_core:.3}");
    println!("tray_rss_growth_pct={growth:.1}");
    println!("reopen_first_paint_ms={paint}");
    println!("idle_cpu_pct_tray={cpu_tray:.3}");
    println!("idle_cpu_pct_window={cpu_window:.3}");
    println!("idle_wakeups_per_s={wake_tray:.2}");
}
