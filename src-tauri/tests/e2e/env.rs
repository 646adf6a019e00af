//! The world one journey runs in: its own X server (Xvfb), a private D-Bus session with an
//! unlocked gnome-keyring (the OS key store the app keeps its keys in), tauri-driver with
//! WebKitWebDriver on free loopback ports, and throwaway `HOME` / `SWITCHBOARD_HOME` folders.
//! Plus the reference phone, `switchboard-phone`, as a child process.
//!
//! Every process started here is stopped by its id with SIGTERM when its guard drops (Xvfb,
//! the bus and the keyring get SIGKILL only if they ignore SIGTERM for 10 s; tauri-driver never
//! does, as SIGKILL would orphan WebKitWebDriver). Every wait is bounded.

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder};
use serde_json::json;

/// Result of a journey step: the error says what was expected and what was seen.
pub type R<T> = Result<T, String>;

/// How long the app may take to open its window under WebDriver.
pub const APP_START: Duration = Duration::from_secs(90);

/// A child process stopped with SIGTERM (by its id) when dropped.
pub struct Proc {
    name: String,
    child: Option<Child>,
    /// SIGKILL after SIGTERM went unheeded for 10 s (never for tauri-driver).
    may_kill: bool,
}

impl Proc {
    pub fn new(name: &str, child: Child, may_kill: bool) -> Self {
        Self {
            name: name.to_string(),
            child: Some(child),
            may_kill,
        }
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Exit status if it has ended, without waiting.
    pub fn try_status(&mut self) -> Option<ExitStatus> {
        self.child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
    }

    /// Waits (bounded) for the process to end by itself.
    pub fn wait_exit(&mut self, limit: Duration) -> R<ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(s) = self.try_status() {
                return Ok(s);
            }
            if Instant::now() > deadline {
                return Err(format!("{} did not end within {limit:?}", self.name));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// SIGTERM, then wait up to 10 s.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        if let Ok(pid) = i32::try_from(child.id()) {
            // SAFETY: kill(2) on the id of a child we started and have not reaped yet.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if self.may_kill {
            eprintln!("e2e: {} ignored SIGTERM for 10 s: killing it", self.name);
            let _ = child.kill();
            let _ = child.wait();
        } else {
            eprintln!(
                "e2e: {} (pid {}) still running 10 s after SIGTERM",
                self.name,
                child.id()
            );
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stop();
    }
}

fn need(tool: &str, hint: &str) -> R<PathBuf> {
    let out = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .map_err(|e| format!("sh: {e}"))?;
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if out.status.success() && !path.is_empty() {
        return Ok(PathBuf::from(path));
    }
    // cargo install puts tauri-driver in $CARGO_HOME/bin, which may not be on PATH.
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    if let Some(p) = home
        .map(|h| h.join("bin").join(tool))
        .filter(|p| p.exists())
    {
        return Ok(p);
    }
    Err(format!("{tool} is missing: {hint}"))
}

/// Reads the first line a child writes on stdout, waiting at most `limit`.
pub fn first_line(child: &mut Child, what: &str, limit: Duration) -> R<String> {
    let out = child
        .stdout
        .take()
        .ok_or_else(|| format!("{what}: no stdout"))?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut r = BufReader::new(out);
        let mut line = String::new();
        let _ = r.read_line(&mut line);
        let _ = tx.send(line);
        // Keep draining so the child never blocks on a full pipe.
        let mut sink = String::new();
        while r.read_line(&mut sink).map(|n| n > 0).unwrap_or(false) {
            sink.clear();
        }
    });
    let line = rx
        .recv_timeout(limit)
        .map_err(|_| format!("{what} printed nothing within {limit:?}"))?;
    let line = line.trim().to_string();
    if line.is_empty() {
        return Err(format!("{what} ended without printing its address"));
    }
    Ok(line)
}

/// A free loopback TCP port (bound then released).
pub fn free_port() -> R<u16> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

/// Whether something accepts connections on 127.0.0.1:`port`.
pub fn accepts(port: u16) -> bool {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    TcpStream::connect_timeout(&addr, Duration::from_millis(300)).is_ok()
}

/// Waits until `port` accepts (`up`) or stops accepting (`!up`), bounded.
pub fn wait_port(port: u16, up: bool, limit: Duration, what: &str) -> R<()> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if accepts(port) == up {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(format!(
        "{what}: port {port} still {} after {limit:?}",
        if up { "closed" } else { "open" }
    ))
}

/// The cargo target folder (`…/target`), from where cargo put the app.
pub fn target_dir() -> PathBuf {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_switchboard-desktop"));
    exe.parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("target"))
}

/// The reference phone, built next to the app by `cargo test --workspace`.
pub fn phone_binary() -> R<PathBuf> {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_switchboard-desktop"));
    let phone = exe.with_file_name(format!("switchboard-phone{}", std::env::consts::EXE_SUFFIX));
    if phone.exists() {
        Ok(phone)
    } else {
        Err(format!(
            "{} is missing: run the e2e tests with `cargo test --workspace` (or first `cargo build -p switchboard --bin switchboard-phone`)",
            phone.display()
        ))
    }
}

/// The tests' scenario files (`tests/data/e2e/*.jsonl` at the repository root).
pub fn scenario(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("tests/data/e2e")
        .join(name)
}

/// One journey's world.
pub struct Env {
    /// The X display of this world (`:N`).
    pub display: String,
    pub home: PathBuf,
    pub switchboard_home: PathBuf,
    pub driver_port: u16,
    pub driver_log: PathBuf,
    /// The private session bus's address, and the runtime folder (`XDG_RUNTIME_DIR`).
    bus_address: String,
    runtime: PathBuf,
    // Fields drop in declaration order: tauri-driver, keyring, bus, X server, then the folders.
    driver: Proc,
    _keyring: Proc,
    _bus: Proc,
    _xvfb: Proc,
    pub root: tempfile::TempDir,
}

impl Env {
    /// Starts Xvfb, a D-Bus session, an unlocked gnome-keyring and tauri-driver.
    pub fn start() -> R<Env> {
        let tools = "run `bash scripts/install-deps.sh` (Debian packages xvfb, dbus, gnome-keyring, webkit2gtk-driver)";
        let xvfb_bin = need("Xvfb", tools)?;
        let dbus_bin = need("dbus-daemon", tools)?;
        need("dbus-send", tools)?;
        let keyring_bin = need("gnome-keyring-daemon", tools)?;
        let native = need("WebKitWebDriver", tools)?;
        let driver_bin = need(
            "tauri-driver",
            "run `bash scripts/test.sh` or `cargo install tauri-driver --locked --version '^2'`",
        )?;

        let root = tempfile::Builder::new()
            .prefix("switchboard-e2e-")
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?;
        let home = root.path().join("home");
        let switchboard_home = root.path().join("switchboard");
        let runtime = root.path().join("run");
        for d in [&home, &switchboard_home, &runtime] {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700));
        }

        // X server on a free display.
        let mut x = Command::new(xvfb_bin)
            .args(crate::real_window::XVFB_ARGS)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("Xvfb: {e}"))?;
        let display = format!(":{}", first_line(&mut x, "Xvfb", Duration::from_secs(20))?);
        let xvfb = Proc::new("Xvfb", x, true);

        // Private session bus.
        let mut b = Command::new(dbus_bin)
            .args(["--session", "--nofork", "--nopidfile", "--print-address=1"])
            .env("HOME", &home)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("dbus-daemon: {e}"))?;
        let bus_address = first_line(&mut b, "dbus-daemon", Duration::from_secs(20))?;
        let bus = Proc::new("dbus-daemon", b, true);

        // gnome-keyring, unlocked with a password on stdin, serving the Secret Service.
        let mut k = Command::new(keyring_bin)
            .args(["--foreground", "--unlock", "--components=secrets"])
            .env("HOME", &home)
            .env("XDG_RUNTIME_DIR", &runtime)
            .env("DBUS_SESSION_BUS_ADDRESS", &bus_address)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("gnome-keyring-daemon: {e}"))?;
        if let Some(mut stdin) = k.stdin.take() {
            use std::io::Write;
            let _ = stdin.write_all(b"switchboard-e2e");
        }
        let keyring = Proc::new("gnome-keyring-daemon", k, true);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let out = Command::new("dbus-send")
                .args([
                    "--session",
                    "--print-reply",
                    "--dest=org.freedesktop.DBus",
                    "/org/freedesktop/DBus",
                    "org.freedesktop.DBus.NameHasOwner",
                    "string:org.freedesktop.secrets",
                ])
                .env("DBUS_SESSION_BUS_ADDRESS", &bus_address)
                .output()
                .map_err(|e| format!("dbus-send: {e}"))?;
            if String::from_utf8_lossy(&out.stdout).contains("boolean true") {
                break;
            }
            if Instant::now() > deadline {
                return Err(
                    "gnome-keyring did not take org.freedesktop.secrets within 20 s".into(),
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }

        // tauri-driver and WebKitWebDriver on free ports. The app inherits this environment.
        let driver_port = free_port()?;
        let native_port = free_port()?;
        let driver_log = root.path().join("tauri-driver.log");
        let log = std::fs::File::create(&driver_log).map_err(|e| format!("log: {e}"))?;
        let log2 = log.try_clone().map_err(|e| format!("log: {e}"))?;
        let d = Command::new(driver_bin)
            .arg("--port")
            .arg(driver_port.to_string())
            .arg("--native-port")
            .arg(native_port.to_string())
            .arg("--native-driver")
            .arg(native)
            .env("DISPLAY", &display)
            .env("DBUS_SESSION_BUS_ADDRESS", &bus_address)
            .env("HOME", &home)
            .env("XDG_RUNTIME_DIR", &runtime)
            .env("SWITCHBOARD_HOME", &switchboard_home)
            // No at-spi bus and no dconf service started on the private bus.
            .env("NO_AT_BRIDGE", "1")
            .env("GSETTINGS_BACKEND", "memory")
            // Under WebDriver the window draws with accelerated compositing: without it a
            // WebKitWebDriver command can wait for ever for a page that does not repaint (seen
            // in journey 1 on a still Phones view; the app's default since Settings'
            // `window_gpu` is off). The default itself runs in the smoke, hidden-start and
            // package tests. Set the variable before `cargo test` to choose otherwise (the
            // window measurement of journey 8: `WEBKIT_DISABLE_COMPOSITING_MODE=1`).
            .env(
                "WEBKIT_DISABLE_COMPOSITING_MODE",
                std::env::var("WEBKIT_DISABLE_COMPOSITING_MODE").unwrap_or_else(|_| "0".into()),
            )
            .env_remove("WAYLAND_DISPLAY")
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .spawn()
            .map_err(|e| format!("tauri-driver: {e}"))?;
        let driver = Proc::new("tauri-driver", d, false);
        wait_port(driver_port, true, Duration::from_secs(20), "tauri-driver")?;
        wait_port(
            native_port,
            true,
            Duration::from_secs(20),
            "WebKitWebDriver",
        )?;

        Ok(Env {
            display,
            home,
            switchboard_home,
            driver_port,
            driver_log,
            bus_address,
            runtime,
            driver,
            _keyring: keyring,
            _bus: bus,
            _xvfb: xvfb,
            root,
        })
    }

    /// Starts the app as a person would, without WebDriver (no automation session in its web
    /// process), in this world's X display, session bus and folders, with `args`, its stderr
    /// (the log, `RUST_LOG` as given) written to `log`. `WEBKIT_DISABLE_COMPOSITING_MODE` is
    /// passed on only when the test's environment sets it (otherwise the app's own default).
    pub fn start_app_plain(&self, args: &[&str], rust_log: &str, log: &Path) -> R<Proc> {
        let out = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
        let mut c = Command::new(env!("CARGO_BIN_EXE_switchboard-desktop"));
        c.args(args)
            .env("DISPLAY", &self.display)
            .env("DBUS_SESSION_BUS_ADDRESS", &self.bus_address)
            .env("HOME", &self.home)
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .env("SWITCHBOARD_HOME", &self.switchboard_home)
            .env("NO_AT_BRIDGE", "1")
            .env("GSETTINGS_BACKEND", "memory")
            .env("RUST_LOG", rust_log)
            .env_remove("WAYLAND_DISPLAY")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(out);
        match std::env::var("WEBKIT_DISABLE_COMPOSITING_MODE") {
            Ok(v) => c.env("WEBKIT_DISABLE_COMPOSITING_MODE", v),
            Err(_) => c.env_remove("WEBKIT_DISABLE_COMPOSITING_MODE"),
        };
        let child = c.spawn().map_err(|e| format!("switchboard-desktop: {e}"))?;
        Ok(Proc::new("switchboard-desktop", child, true))
    }

    /// Opens the app (a new WebDriver session) and waits for its page.
    pub async fn open_app(&self) -> R<Client> {
        self.open_app_with(&[]).await
    }

    /// Opens the app with command-line `args` (e.g. `--demo`).
    pub async fn open_app_with(&self, args: &[&str]) -> R<Client> {
        let app = env!("CARGO_BIN_EXE_switchboard-desktop");
        let caps = json!({
            "browserName": "wry",
            "tauri:options": { "application": app, "args": args },
        });
        let caps = caps.as_object().cloned().unwrap_or_default();
        let url = format!("http://127.0.0.1:{}", self.driver_port);
        let connect = async {
            ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
                .capabilities(caps)
                .connect(&url)
                .await
        };
        let client = tokio::time::timeout(APP_START, connect)
            .await
            .map_err(|_| format!("the app did not open within {APP_START:?}"))?
            .map_err(|e| format!("WebDriver session: {e}\n{}", self.driver_output()))?;
        Ok(client)
    }

    /// The file tauri-driver's, WebKitWebDriver's and the app's output goes to.
    pub fn driver_log_path(&self) -> &std::path::Path {
        &self.driver_log
    }

    /// What tauri-driver, WebKitWebDriver and the app printed, the last 40 lines (for failure
    /// reports).
    pub fn driver_output(&self) -> String {
        let text = std::fs::read_to_string(&self.driver_log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(40).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        format!(
            "--- tauri-driver / app output (last 40 lines) ---\n{}",
            tail.join("\n")
        )
    }

    /// The app's own log (`SWITCHBOARD_HOME/logs`), last lines.
    pub fn app_log(&self) -> String {
        let dir = self.switchboard_home.join("logs");
        let mut out = String::new();
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                let text = std::fs::read_to_string(e.path()).unwrap_or_default();
                let lines: Vec<&str> = text.lines().collect();
                let from = lines.len().saturating_sub(30);
                out.push_str(&format!(
                    "--- {} ---\n{}\n",
                    e.path().display(),
                    lines[from..].join("\n")
                ));
            }
        }
        out
    }

    /// Starts `switchboard-phone` with this identity file and `args`; output goes to a log file.
    pub fn phone(&self, name: &str, args: &[String]) -> R<Phone> {
        self.phone_as(name, &self.identity_file(), args)
    }

    /// As [`Env::phone`], a phone of its own: its identity (device key, pairing) in `identity`.
    pub fn phone_as(&self, name: &str, identity: &Path, args: &[String]) -> R<Phone> {
        let bin = phone_binary()?;
        let log = self.root.path().join(format!("phone-{name}.log"));
        let f = std::fs::File::create(&log).map_err(|e| format!("log: {e}"))?;
        let f2 = f.try_clone().map_err(|e| format!("log: {e}"))?;
        let child = Command::new(bin)
            .arg("--identity")
            .arg(identity)
            .args(args)
            .env("HOME", &self.home)
            .stdin(Stdio::null())
            .stdout(f)
            .stderr(f2)
            .spawn()
            .map_err(|e| format!("switchboard-phone: {e}"))?;
        Ok(Phone {
            proc: Proc::new(&format!("switchboard-phone ({name})"), child, true),
            log,
        })
    }

    /// The simulated phone's identity file (kept across its runs within the journey).
    pub fn identity_file(&self) -> PathBuf {
        self.root.path().join("phone-identity.json")
    }

    /// tauri-driver's process id (the app and its web processes run below it).
    pub fn driver_pid(&self) -> Option<u32> {
        self.driver.pid()
    }

    /// Stops tauri-driver (SIGTERM) before the rest goes.
    pub fn stop_driver(&mut self) {
        self.driver.stop();
    }
}

/// A running `switchboard-phone`.
pub struct Phone {
    pub proc: Proc,
    pub log: PathBuf,
}

impl Phone {
    /// What it printed so far.
    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits (bounded) for it to end and checks it ended well.
    pub fn finish(&mut self, limit: Duration) -> R<String> {
        let status = self
            .proc
            .wait_exit(limit)
            .map_err(|e| format!("{e}\n{}", self.output()))?;
        if !status.success() {
            return Err(format!(
                "switchboard-phone failed ({status}):\n{}",
                self.output()
            ));
        }
        Ok(self.output())
    }

    /// Whether it is still running.
    pub fn running(&mut self) -> bool {
        self.proc.try_status().is_none()
    }
}
