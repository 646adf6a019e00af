//! Measurements of the real window (figures printed, never asserted against a time or a size):
//! the memory of the web processes below a process (PSS and RSS from `/proc/PID/smaps_rollup`),
//! an empty WebKitGTK page opened in the same X server as the baseline, and the gaps between
//! animation frames recorded in the page with `requestAnimationFrame`.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::env::{first_line, Proc, R};

/// Memory of a set of processes, kB.
#[derive(Debug, Clone, Copy, Default)]
pub struct Mem {
    /// Proportional set size: private pages plus a share of the shared ones.
    pub pss_kb: u64,
    /// Resident set size: every page resident, shared ones counted whole.
    pub rss_kb: u64,
    /// How many processes were summed.
    pub processes: usize,
}

impl std::fmt::Display for Mem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "PSS {:.1} MB, RSS {:.1} MB ({} process{})",
            self.pss_kb as f64 / 1024.0,
            self.rss_kb as f64 / 1024.0,
            self.processes,
            if self.processes == 1 { "" } else { "es" }
        )
    }
}

/// Every process below `root` (children, their children, ...), from `/proc/*/stat`.
pub fn descendants(root: u32) -> Vec<u32> {
    let mut parent_of = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for e in entries.flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            // `pid (comm) state ppid ...`: comm may hold spaces, so read after the last ')'.
            let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
                continue;
            };
            if let Some(ppid) = rest.split_whitespace().nth(1).and_then(|p| p.parse().ok()) {
                parent_of.push((pid, ppid));
            }
        }
    }
    let mut out = Vec::new();
    let mut frontier = vec![root];
    // Bounded: a process tree has fewer levels than processes.
    for _ in 0..parent_of.len().max(1) {
        let next: Vec<u32> = parent_of
            .iter()
            .filter(|(_, pp)| frontier.contains(pp))
            .map(|(p, _)| *p)
            .filter(|p| !out.contains(p))
            .collect();
        if next.is_empty() {
            break;
        }
        out.extend(&next);
        frontier = next;
    }
    out
}

/// The WebKit web processes (`WebKitWebProcess`) below `root`.
pub fn web_processes(root: u32) -> Vec<u32> {
    descendants(root)
        .into_iter()
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm"))
                .map(|c| c.trim().starts_with("WebKitWebProces"))
                .unwrap_or(false)
        })
        .collect()
}

/// PSS and RSS of `pids`, summed.
pub fn memory(pids: &[u32]) -> R<Mem> {
    let mut m = Mem::default();
    for p in pids {
        let path = format!("/proc/{p}/smaps_rollup");
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
        let field = |name: &str| -> u64 {
            text.lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        m.pss_kb += field("Pss:");
        m.rss_kb += field("Rss:");
        m.processes += 1;
    }
    Ok(m)
}

/// The median by PSS of three readings of `pids`' memory, a second apart (a web process's
/// memory moves with its collections). Blocks for about 3 s; errors as [`memory`].
pub fn settled(pids: &[u32]) -> R<Mem> {
    let mut v = Vec::with_capacity(3);
    for _ in 0..3 {
        std::thread::sleep(Duration::from_secs(1));
        v.push(memory(pids)?);
    }
    v.sort_by_key(|m| m.pss_kb);
    Ok(v[1])
}

/// The biggest mappings of `pid` by PSS (name, kB), to say what dominates.
pub fn top_mappings(pid: u32, n: usize) -> Vec<(String, u64)> {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/smaps")) else {
        return Vec::new();
    };
    let mut by: std::collections::BTreeMap<String, u64> = Default::default();
    let mut name = String::new();
    for l in text.lines() {
        let first = l.split_whitespace().next().unwrap_or("");
        if first.contains('-') && first.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            name = l
                .split_whitespace()
                .nth(5)
                .unwrap_or("[anon]")
                .rsplit('/')
                .next()
                .unwrap_or("")
                .to_string();
        } else if let Some(v) = l.strip_prefix("Pss:") {
            *by.entry(name.clone()).or_default() += v
                .split_whitespace()
                .next()
                .and_then(|x| x.parse().ok())
                .unwrap_or(0);
        }
    }
    let mut v: Vec<(String, u64)> = by.into_iter().collect();
    v.sort_by_key(|m| std::cmp::Reverse(m.1));
    v.truncate(n);
    v
}

/// An empty WebKitGTK page in its own window on `display` (`e2e/empty_page.py`), open until
/// dropped.
pub struct EmptyPage {
    proc: Proc,
}

impl EmptyPage {
    /// Opens the page and waits until it has loaded.
    pub fn open(display: &str, home: &std::path::Path) -> R<Self> {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/e2e/empty_page.py");
        let python = "/usr/bin/python3";
        let mut child = Command::new(python)
            .arg(script)
            .env("DISPLAY", display)
            .env("HOME", home)
            .env("NO_AT_BRIDGE", "1")
            .env("GSETTINGS_BACKEND", "memory")
            .env_remove("WAYLAND_DISPLAY")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| {
                format!("{python} {script}: {e} (install python3-gi gir1.2-webkit2-4.1: scripts/install-deps.sh)")
            })?;
        let line = first_line(
            &mut child,
            "the empty WebKitGTK page",
            Duration::from_secs(60),
        );
        let proc = Proc::new("empty WebKitGTK page", child, true);
        let line = line.map_err(|e| {
            format!("{e} (python3-gi and gir1.2-webkit2-4.1 installed? scripts/install-deps.sh)")
        })?;
        if line != "loaded" {
            return Err(format!("the empty page printed {line:?}, not \"loaded\""));
        }
        Ok(Self { proc })
    }

    /// The page's web processes.
    pub fn web_processes(&self) -> Vec<u32> {
        self.proc.pid().map(web_processes).unwrap_or_default()
    }

    /// Closes the window.
    pub fn close(mut self) {
        self.proc.stop();
    }
}

/// Installed in the page: records every animation frame's time in `window.__raf.t` until
/// `window.__raf.on` is false, with `now` (ms, when the frame's first callback ran) and `after`
/// (ms, when a `MessageChannel` message posted in the frame ran: the frame's scripts, style,
/// layout and paint are done by then), and the page's timed callbacks in `busy`
/// (`[start, end, kind]`, ms; kinds `raf`, `ipc`, `event`, `timer`, and `task` for the
/// page's own `MessageChannel` handlers).
pub const RAF_START: &str = r#"
window.__raf = { t: [], now: [], after: [], marks: [], busy: [], on: true };
// Time what the page's own code does: animation-frame callbacks and the callbacks of IPC
// answers and channels made from now on (at most 200 000 intervals are kept).
if (!window.__raf_wrapped) {
  window.__raf_wrapped = true;
  // A callback's time runs until the microtasks it queued have run (Svelte applies changes to
  // the page in a microtask): the end is taken in a microtask queued a few turns later.
  const timed = (kind, cb) => function (...a) {
    const s = performance.now();
    try { return cb.apply(this, a); } finally {
      let turns = 4;
      const end = () => {
        if (--turns > 0) { queueMicrotask(end); return; }
        const b = window.__raf && window.__raf.busy;
        if (b && window.__raf.on && b.length < 200000) b.push([s, performance.now(), kind]);
      };
      queueMicrotask(end);
    }
  };
  const raf = window.requestAnimationFrame.bind(window);
  window.__raf_native = raf;
  window.requestAnimationFrame = (cb) => raf(timed('raf', cb));
  const ti = window.__TAURI_INTERNALS__;
  if (ti && ti.transformCallback) {
    const tc = ti.transformCallback.bind(ti);
    ti.transformCallback = (cb, once) => tc(cb && timed('ipc', cb), once);
  }
  // Events the app sends (`emit`: one script per event, which calls the listeners' callbacks).
  if (ti && ti.runCallback) {
    const rc = ti.runCallback.bind(ti);
    ti.runCallback = (id, data) => timed('event', rc)(id, data);
  }
  // Tasks the page posts itself through a `MessageChannel` (`afterFrame` applies a batch of
  // live dials in one): timed as `task`. The recorder's own channel below sets its handler
  // with the native setter and is not timed.
  const port = Object.getOwnPropertyDescriptor(MessagePort.prototype, 'onmessage');
  if (port && port.set) {
    window.__raf_port_set = port.set;
    Object.defineProperty(MessagePort.prototype, 'onmessage', {
      configurable: true,
      enumerable: port.enumerable,
      get() { return port.get.call(this); },
      set(cb) { port.set.call(this, typeof cb === 'function' ? timed('task', cb) : cb); },
    });
  }
  const st = window.setTimeout.bind(window);
  window.setTimeout = (cb, ms, ...a) => typeof cb === 'function' ? st(timed('timer', cb), ms, ...a) : st(cb, ms, ...a);
}
// One recording loop, however often this runs (the loop reads `window.__raf` each frame).
if (!window.__raf_loop) {
  window.__raf_loop = true;
  // The recorder's own frames are not timed (it does nothing but note the time).
  const next = window.__raf_native || window.requestAnimationFrame.bind(window);
  // A message posted in each frame is handled once the frame's rendering (style, layout,
  // paint) is done: `after` is when that was.
  const ch = new MessageChannel();
  const mark = () => { const r = window.__raf; if (r.on) r.after.push(performance.now()); };
  if (window.__raf_port_set) window.__raf_port_set.call(ch.port1, mark); else ch.port1.onmessage = mark;
  const f = (t) => { if (!window.__raf.on) { window.__raf_loop = false; return; } window.__raf.t.push(t); window.__raf.now.push(performance.now()); ch.port2.postMessage(0); next(f); };
  next(f);
}
return true;
"#;

/// Stops the recording and returns `{ frames, span_ms, max_ms, p99_ms, p50_ms, over50, over50_at_mark }` over
/// the gaps between consecutive frames (p99 by nearest rank).
pub const RAF_STOP: &str = r#"
window.__raf.on = false;
const t = window.__raf.t;
const g = [];
for (let i = 1; i < t.length; i++) g.push(t[i] - t[i - 1]);
g.sort((a, b) => a - b);
const rank = (p) => g.length ? g[Math.max(0, Math.ceil(p / 100 * g.length) - 1)] : null;
return { frames: t.length, span_ms: t.length > 1 ? t[t.length - 1] - t[0] : 0, max_ms: g.length ? g[g.length - 1] : null,
  p99_ms: rank(99), p50_ms: rank(50), over50: g.filter((x) => x > 50).length,
  // For the gaps over 50 ms: the page's own code timed inside them (ms), summed, and the
  // longest single callback with its kind.
  busy_in_long: (() => { const b = window.__raf.busy.slice().sort((x, y) => x[0] - y[0]); let j = 0, sum = 0, gapsum = 0, top = [0, ''];
    for (let i = 1; i < t.length; i++) { const a = t[i - 1], z = t[i]; if (z - a <= 50) continue; gapsum += z - a;
      while (j < b.length && b[j][1] < a) j++;
      for (let k = j; k < b.length && b[k][0] < z; k++) { const d = Math.min(z, b[k][1]) - Math.max(a, b[k][0]); if (d > 0) sum += d; if (b[k][1] - b[k][0] > top[0]) top = [b[k][1] - b[k][0], b[k][2]]; } }
    const all = window.__raf.busy.reduce((n, x) => n + x[1] - x[0], 0);
    return { gap_ms: gapsum, busy_ms: sum, longest_ms: top[0], longest_kind: top[1], all_busy_ms: all, callbacks: window.__raf.busy.length }; })(),
  // The same over the gaps no harness script fell in (a WebDriver script runs on the page's
  // thread: the frame it falls in is the harness's as much as the app's).
  unmarked: (() => { const k = window.__raf.marks; const u = []; let m = 0;
    for (let i = 1; i < t.length; i++) { while (m < k.length && k[m] < t[i - 1]) m++; if (!(m < k.length && k[m] <= t[i])) u.push(t[i] - t[i - 1]); }
    u.sort((a, b) => a - b); const r = (p) => u.length ? u[Math.max(0, Math.ceil(p / 100 * u.length) - 1)] : null;
    return { gaps: u.length, max_ms: u.length ? u[u.length - 1] : null, p99_ms: r(99), over50: u.filter((x) => x > 50).length }; })(),
  over50_at_mark: (() => { let n = 0, m = 0; const k = window.__raf.marks;
    for (let i = 1; i < t.length; i++) { while (m < k.length && k[m] < t[i - 1]) m++;
      if (t[i] - t[i - 1] > 50 && m < k.length && k[m] <= t[i]) n++; } return n; })(),
  // The gaps over 50 ms (at most 20): when they began (ms after the first frame) and how long.
  long_gaps: (() => { const out = []; for (let i = 1; i < t.length && out.length < 20; i++) if (t[i] - t[i - 1] > 50) out.push([Math.round(t[i - 1] - t[0]), Math.round(t[i] - t[i - 1])]); return out; })(),
  // The harness's own actions on the page (`window.__raf.acts`: [what, ms after the first frame]).
  acts: (window.__raf.acts || []).map(([w, at]) => [w, Math.round(at - (t[0] || 0))]),
  // The page's callbacks by kind: how many, and their durations' p50 / p99 / longest and sum
  // (ms), the animation-frame callbacks of the recorder itself left out (they do nothing).
  by_kind: (() => { const by = {}; for (const [s0, e0, k] of window.__raf.busy) (by[k] = by[k] || []).push(e0 - s0);
    const out = {}; for (const [k, d] of Object.entries(by)) { d.sort((x, y) => x - y); const r = (p) => d[Math.max(0, Math.ceil(p / 100 * d.length) - 1)];
      out[k] = { n: d.length, p50: r(50), p99: r(99), max: d[d.length - 1], sum: Math.round(d.reduce((a, x) => a + x, 0)) }; } return out; })() };
"#;

/// Frame-gap figures read back from the page.
#[derive(Debug, Clone)]
pub struct FrameGaps {
    pub frames: u64,
    pub span_ms: f64,
    pub max_ms: f64,
    pub p99_ms: f64,
    pub p50_ms: f64,
    pub over50: u64,
    /// Of `over50`, the gaps during which the harness read the page (`window.__raf.marks`).
    pub over50_at_mark: u64,
    /// The page's own code timed inside the gaps over 50 ms (`busy_in_long`, as the page said).
    pub busy_in_long: Value,
    /// The page's callbacks by kind (`by_kind`: count and p50 / p99 / longest / sum in ms).
    pub by_kind: Value,
    /// The gaps over 50 ms: `[began ms after the first frame, ms]`, at most 20.
    pub long_gaps: Value,
    /// The gaps no harness script fell in: `{ gaps, max_ms, p99_ms, over50 }`.
    pub unmarked: Value,
    /// The harness's own actions on the page: `[what, ms after the first frame]`.
    pub acts: Value,
}

impl FrameGaps {
    /// Reads `RAF_STOP`'s answer.
    pub fn from_value(v: &Value) -> R<Self> {
        let f = |k: &str| {
            v[k].as_f64()
                .ok_or_else(|| format!("no {k} in the frame record: {v}"))
        };
        Ok(Self {
            frames: f("frames")? as u64,
            span_ms: f("span_ms")?,
            max_ms: f("max_ms")?,
            p99_ms: f("p99_ms")?,
            p50_ms: f("p50_ms")?,
            over50: f("over50")? as u64,
            over50_at_mark: f("over50_at_mark")? as u64,
            busy_in_long: v["busy_in_long"].clone(),
            by_kind: v["by_kind"].clone(),
            long_gaps: v["long_gaps"].clone(),
            unmarked: v["unmarked"].clone(),
            acts: v["acts"].clone(),
        })
    }
}

/// The host's steal time (`steal` in `/proc/stat`, all CPUs, ms) sampled every
/// [`STEAL_EVERY`] on a thread of its own, with the wall-clock time of each sample: on a shared
/// virtual machine the hypervisor may run other guests while this one's CPUs want to run, and a
/// frame gap that such a stall fell in says nothing about the app. At most [`STEAL_SAMPLES`]
/// samples (an hour) are kept.
pub struct StealSampler {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Vec<(f64, u64)>>,
}

/// How often [`StealSampler`] reads `/proc/stat`.
pub const STEAL_EVERY: Duration = Duration::from_millis(10);
/// The most samples [`StealSampler`] keeps.
pub const STEAL_SAMPLES: usize = 360_000;

/// Cumulative steal of all CPUs in ms (`None`: no `/proc/stat` or no steal column).
fn steal_now_ms() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let cpu = stat.lines().find(|l| l.starts_with("cpu "))?;
    let ticks: u64 = cpu.split_whitespace().nth(8)?.parse().ok()?;
    Some(ticks * 10)
}

fn epoch_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(0.0)
}

impl StealSampler {
    /// Starts sampling.
    pub fn start() -> Self {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = std::sync::Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut v = Vec::new();
            while !flag.load(std::sync::atomic::Ordering::Relaxed) && v.len() < STEAL_SAMPLES {
                if let Some(s) = steal_now_ms() {
                    v.push((epoch_ms(), s));
                }
                std::thread::sleep(STEAL_EVERY);
            }
            v
        });
        Self { stop, thread }
    }

    /// Stops sampling and returns the log.
    pub fn stop(self) -> StealLog {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        StealLog {
            samples: self.thread.join().unwrap_or_default(),
        }
    }
}

/// What [`StealSampler`] saw: `(epoch ms, cumulative steal ms)`, oldest first.
pub struct StealLog {
    samples: Vec<(f64, u64)>,
}

impl StealLog {
    /// Steal between the last sample at or before `from` and the first at or after `to` (epoch
    /// ms), so a gap counts every stall that may have touched it; `None` outside the log.
    pub fn between(&self, from: f64, to: f64) -> Option<u64> {
        let s = &self.samples;
        let a = s.partition_point(|x| x.0 <= from).checked_sub(1)?;
        let b = s.partition_point(|x| x.0 < to);
        let end = s.get(b)?;
        Some(end.1.saturating_sub(s[a].1))
    }

    /// Steal over the whole log, ms, and the log's length, s.
    pub fn total(&self) -> (u64, f64) {
        match (self.samples.first(), self.samples.last()) {
            (Some(a), Some(b)) => (b.1.saturating_sub(a.1), (b.0 - a.0) / 1000.0),
            _ => (0, 0.0),
        }
    }
}

/// The page's frame times read back after [`RAF_STOP`]: `performance.timeOrigin` and every
/// frame's `performance.now()`.
pub const RAF_TIMES: &str = "return { origin: performance.timeOrigin, t: window.__raf.t };";

/// Frame gaps set against the host's steal: the gaps no stall touched (count, longest, p99),
/// and the gaps over 50 ms with the steal in each. `v` is [`RAF_TIMES`]' answer.
pub fn gaps_beside_steal(v: &Value, log: &StealLog) -> R<String> {
    let origin = v["origin"]
        .as_f64()
        .ok_or_else(|| format!("no timeOrigin in {v}"))?;
    let t: Vec<f64> = v["t"]
        .as_array()
        .ok_or("no frame times")?
        .iter()
        .filter_map(Value::as_f64)
        .collect();
    let mut clean = Vec::new();
    let mut long = Vec::new();
    let mut touched = 0usize;
    for w in t.windows(2) {
        let gap = w[1] - w[0];
        let stolen = log.between(origin + w[0], origin + w[1]);
        match stolen {
            Some(0) => clean.push(gap),
            _ => touched += 1,
        }
        if gap > 50.0 && long.len() < 20 {
            long.push(format!(
                "[{:.0}, {:.0} ms, stolen {}]",
                w[0] - t[0],
                gap,
                stolen.map_or("?".to_string(), |s| format!("{s} ms"))
            ));
        }
    }
    clean.sort_by(f64::total_cmp);
    let rank = |p: f64| {
        let i = ((p / 100.0 * clean.len() as f64).ceil() as usize).saturating_sub(1);
        clean.get(i).copied().unwrap_or(0.0)
    };
    let (total, span) = log.total();
    Ok(format!(
        "the host stole {total} ms of CPU time in {span:.0} s (steal in /proc/stat, 2 CPUs); \
         gaps no steal touched: {} of {} (longest {:.1} ms, p99 {:.1} ms); gaps over 50 ms with \
         the steal around each: {}",
        clean.len(),
        clean.len() + touched,
        clean.last().copied().unwrap_or(0.0),
        rank(99.0),
        if long.is_empty() {
            "none".to_string()
        } else {
            long.join(" ")
        }
    ))
}

/// CPU time (user + system, ms) each process of `pids` has used so far, summed by command name
/// (`/proc/PID/comm`, 15 characters: `switchboard-des`, `WebKitWebProces`, ...); processes gone
/// are left out.
pub fn cpu_by_name(pids: &[u32]) -> std::collections::BTreeMap<String, f64> {
    // SAFETY: sysconf only reads a system constant.
    let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let mut out = std::collections::BTreeMap::new();
    for p in pids {
        let (Ok(stat), Ok(comm)) = (
            std::fs::read_to_string(format!("/proc/{p}/stat")),
            std::fs::read_to_string(format!("/proc/{p}/comm")),
        ) else {
            continue;
        };
        // `pid (comm) state ...`: utime and stime are the 12th and 13th fields after the ')'.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        *out.entry(comm.trim().to_string()).or_insert(0.0) +=
            (ticks(11) + ticks(12)) * 1000.0 / tick;
    }
    out
}

/// The machine's CPU time (all CPUs, ms) as `(busy, total)` from `/proc/stat`'s first line:
/// busy is everything but idle and iowait.
pub fn machine_cpu_ms() -> (f64, f64) {
    // SAFETY: sysconf only reads a system constant.
    let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let v: Vec<f64> = text
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let total: f64 = v.iter().sum();
    let idle = v.get(3).copied().unwrap_or(0.0) + v.get(4).copied().unwrap_or(0.0);
    ((total - idle) * 1000.0 / tick, total * 1000.0 / tick)
}
