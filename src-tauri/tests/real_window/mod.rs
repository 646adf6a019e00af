//! The real app's window under Xvfb, for the tests that start it (tests/window/: smoke,
//! hidden_start, tray_window, realtime_threads, window_theme; the tray bench): child processes ended
//! when dropped, the tools they need, and the app's windows as `xdotool` finds them. Every wait
//! is bounded.
// Each test binary compiles this module and uses a part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `Rss` in KiB of `pid`'s mappings, summed by what they map (`/proc/PID/smaps`): a file's
/// path, `[heap]`, `[stack]`, or `[anon]` for anonymous mappings without a name.
pub fn rss_by_mapping(pid: u32) -> std::collections::HashMap<String, u64> {
    let mut out = std::collections::HashMap::new();
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/smaps")) else {
        return out;
    };
    let mut name = String::new();
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let Some(first) = f.next() else { continue };
        if first.contains('-') && !first.ends_with(':') {
            // `start-end perms offset dev inode [path]`
            name = f
                .nth(4)
                .map_or_else(|| "[anon]".to_string(), str::to_string);
        } else if first == "Rss:" {
            let kib: u64 = f.next().and_then(|n| n.parse().ok()).unwrap_or(0);
            *out.entry(name.clone()).or_default() += kib;
        }
    }
    out
}

/// A child process ended (SIGTERM, then kill) when dropped.
pub struct Proc(pub Child);

/// Held for the whole of a test that starts the real app: one real window at a time in a test
/// program, whose tests otherwise run on parallel threads (two WebKit windows at once on a
/// 2-core machine turn every bounded wait into a race).
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE.lock().unwrap_or_else(|p| p.into_inner())
}
impl Proc {
    /// Sends SIGTERM (so the app runs its shutdown) and waits up to `within` for it to end;
    /// `true` when it ended in time or had already ended. An already ended (and reaped)
    /// process is not signalled: its pid may be another process's by now.
    pub fn terminate(&mut self, within: Duration) -> bool {
        if let Ok(Some(_)) = self.0.try_wait() {
            return true;
        }
        // SAFETY: kill(2) on a child we started and have not reaped (checked just above).
        unsafe {
            libc::kill(self.0.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + within;
        loop {
            if let Ok(Some(_)) = self.0.try_wait() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        // SIGTERM first so the app runs its shutdown; then make sure.
        if !self.terminate(Duration::from_secs(5)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Fails loudly when `tool` is not on the PATH (never skips).
pub fn need(tool: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(
        found,
        "{tool} is missing: run `bash scripts/install-deps.sh`"
    );
}

/// Starts `program args` and returns it with the first line of its stdout.
pub fn start_printing(program: &str, args: &[&str]) -> (Proc, String) {
    let mut child = Command::new(program)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{program} starts: {e}"));
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (Proc(child), line.trim().to_string())
}

/// Xvfb's arguments in every real-window test (and journey's world, tests/e2e/env.rs): a free
/// display printed on stdout, one 1280x800 screen of 24 bits, no TCP, and no reset when its
/// last client leaves: by default the X server starts over then, and an app started right after
/// another one quit on the same display (a test starting the app twice) can find it refusing
/// connections meanwhile and stop with "could not open the display".
pub const XVFB_ARGS: [&str; 8] = [
    "-displayfd",
    "1",
    "-screen",
    "0",
    "1280x800x24",
    "-nolisten",
    "tcp",
    "-noreset",
];

/// Starts Xvfb ([`XVFB_ARGS`]) on a free display: the process and the display (":N").
/// Fails loudly when Xvfb is missing or prints no display number.
pub fn start_xvfb() -> (Proc, String) {
    need("Xvfb");
    let (xvfb, n) = start_printing("Xvfb", &XVFB_ARGS);
    assert!(!n.is_empty(), "Xvfb gave no display number");
    (xvfb, format!(":{n}"))
}

/// A display and a session bus of their own (Xvfb, dbus-daemon), ended when dropped: the
/// processes, the display (":N") and the bus address ("unix:...").
pub struct Desktop {
    pub display: String,
    pub bus: String,
    _xvfb: Proc,
    _bus: Proc,
}

/// Starts a [`Desktop`] ([`start_xvfb`] and a session `dbus-daemon`), failing loudly when
/// either is missing or prints nothing.
pub fn start_desktop() -> Desktop {
    need("dbus-daemon");
    let (xvfb, display) = start_xvfb();
    let (bus_proc, bus) = start_printing(
        "dbus-daemon",
        &["--session", "--nofork", "--print-address=1"],
    );
    assert!(bus.starts_with("unix:"), "dbus-daemon gave {bus:?}");
    Desktop {
        display,
        bus,
        _xvfb: xvfb,
        _bus: bus_proc,
    }
}

/// The ids of the windows titled exactly "Switchboard"; only mapped ones with `visible`.
pub fn windows(display: &str, visible: bool) -> Vec<String> {
    let mut args = vec!["search"];
    if visible {
        args.push("--onlyvisible");
    }
    args.extend(["--name", "^Switchboard$"]);
    let out = Command::new("xdotool")
        .args(&args)
        .env("DISPLAY", display)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

/// What a started app wrote to its stderr so far (`RUST_LOG=info`), kept by a reader thread.
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<String>>);

impl Log {
    /// Whether any line so far contains `what`.
    pub fn said(&self, what: &str) -> bool {
        self.0.lock().unwrap().contains(what)
    }
    /// Everything so far.
    pub fn text(&self) -> String {
        self.0.lock().unwrap().clone()
    }
}

/// Spawns `cmd` with `RUST_LOG=info` and its stderr kept in a [`Log`], so a failed wait can say
/// what the app did.
pub fn spawn_logged(cmd: &mut Command) -> (Proc, Log) {
    let mut child = cmd
        .env("RUST_LOG", "info")
        .stderr(Stdio::piped())
        .spawn()
        .expect("the app starts");
    let stderr = child.stderr.take().unwrap();
    let log = Log::default();
    let sink = log.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let mut l = sink.0.lock().unwrap();
            l.push_str(&line);
            l.push('\n');
        }
    });
    (Proc(child), log)
}

/// Why a wait on `app` gave up: whether it is still running (or how it ended), after how long,
/// and its stderr so far.
pub fn app_state(app: &mut Proc, log: &Log, started: Instant) -> String {
    let state = match app.0.try_wait() {
        Ok(Some(status)) => format!("the app exited ({status})"),
        Ok(None) => "the app is still running".to_string(),
        Err(e) => format!("the app's state is unknown: {e}"),
    };
    format!(
        "{state}, {:.1} s after it was started; its stderr:\n{}",
        started.elapsed().as_secs_f64(),
        log.text()
    )
}

/// Asks window `id` on `display` to close as a window manager does (a `WM_DELETE_WINDOW`
/// client message), which is what the close button does.
#[cfg(target_os = "linux")]
pub fn close_window(display: &str, id: &str) {
    use x11_dl::xlib;
    let id: xlib::Window = id.parse().expect("a window id");
    let x = xlib::Xlib::open().expect("libX11 loads");
    let name = std::ffi::CString::new(display).unwrap();
    unsafe {
        let d = (x.XOpenDisplay)(name.as_ptr());
        assert!(!d.is_null(), "the display {display} opens");
        let protocols = (x.XInternAtom)(d, c"WM_PROTOCOLS".as_ptr(), xlib::False);
        let delete = (x.XInternAtom)(d, c"WM_DELETE_WINDOW".as_ptr(), xlib::False);
        let mut ev: xlib::XClientMessageEvent = std::mem::zeroed();
        ev.type_ = xlib::ClientMessage;
        ev.window = id;
        ev.message_type = protocols;
        ev.format = 32;
        ev.data.set_long(0, delete as std::os::raw::c_long);
        ev.data
            .set_long(1, xlib::CurrentTime as std::os::raw::c_long);
        let mut event = xlib::XEvent { client_message: ev };
        let sent = (x.XSendEvent)(d, id, xlib::False, xlib::NoEventMask, &mut event);
        assert_ne!(sent, 0, "the close request was sent");
        (x.XFlush)(d);
        (x.XCloseDisplay)(d);
    }
}

#[cfg(target_os = "linux")]
/// The processes below `pid` (children, theirs, ...), as `(pid, comm)`.
pub fn descendants(pid: u32) -> Vec<(u32, String)> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(p) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`: comm may hold spaces, so split after its last ')'.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = stat[open + 1..close].to_string();
        let ppid = stat[close + 1..]
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse::<u32>().ok())
            .unwrap_or(0);
        all.push((p, ppid, comm));
    }
    let mut found = Vec::new();
    let mut parents = vec![pid];
    while let Some(parent) = parents.pop() {
        for (p, pp, comm) in &all {
            if *pp == parent {
                found.push((*p, comm.clone()));
                parents.push(*p);
            }
        }
    }
    found
}
