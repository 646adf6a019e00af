//! The OS key store misbehaving under a real [`App`], against a REAL Secret Service: a private
//! D-Bus session bus of this test's own (`dbus-daemon` with a configuration that activates no
//! service, so nothing answers for `org.freedesktop.secrets` unless this test starts it) and
//! `gnome-keyring-daemon` started on it, unlocked with a known password, in a throwaway `HOME`.
//!
//! One test, in steps (`docs/faults.md`, "No key store, or a locked one"):
//!
//! 1. No Secret Service on the bus: the app's link does not start, the Phones view's
//!    `link_error` and the real `switchboard status` say the key store is missing (D-Bus's own
//!    words, naming `org.freedesktop.secrets`) and what to install or unlock; a second try fails
//!    the same way; no file under the app's folders holds anything like a private key.
//! 2. gnome-keyring started on the same bus: without a restart the start is tried again and the
//!    link starts; the words go away; the identity the link runs on is the one now in the real
//!    store.
//! 3. A phone paired and connected, then gnome-keyring killed: the periodic check notices, the
//!    Phones view and `switchboard status` say so, the phone stays connected and answered;
//!    gnome-keyring started again (same keyring file and password): the words go away by
//!    themselves.
//! 4. The login collection locked while the app runs: said (no prompter on this bus, so the
//!    unlock prompt is dismissed), the phone answered; unlocked with its password: the words go.
//! 5. A second start of the app (same folders) while the collection is locked: the link waits,
//!    saying so; unlocked, it starts on the same identity and still knows the phone. No file
//!    under the app's folders holds a private part of the identity.
//!
//! This program sets `DBUS_SESSION_BUS_ADDRESS` for its whole process (libdbus reads it once),
//! so it is its own test binary with a single test. Every process it starts is stopped by its
//! id when dropped; every wait is bounded; a missing tool fails the test (never skips).
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use switchboard::app::RecordingHost;
use switchboard::app::{App, AppConfig, AppEvent, AppPaths, HostCall, IdentityStore};
use switchboard::confirmations::ConfirmationMirror;
use switchboard::link::identity::{DesktopIdentity, IDENTITY_SECRET};
use switchboard::link::phone_client::{envelope, PhoneClient, PhoneIdentity};
use switchboard::link::secret_store::SecretStore as _;
use switchboard::link::KeyringStore;

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
/// The longest any one step may take (the start is retried after 1, 2, 4, 8, 16 s).
const WAIT: Duration = Duration::from_secs(60);
/// The well-known name of the Secret Service.
const SECRETS: &str = "org.freedesktop.secrets";
/// The login keyring's password gnome-keyring is unlocked with.
const PASSWORD: &[u8] = b"switchboard-key-store-faults";

/// Fails loudly when `tool` is not on the PATH (never skips).
fn need(tool: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(
        found,
        "{tool} is missing: run `bash scripts/install-deps.sh` (Debian packages dbus, gnome-keyring)"
    );
}

/// A child process stopped by its id when dropped: SIGTERM, then SIGKILL after 5 s.
struct Proc {
    name: &'static str,
    child: Option<Child>,
}

impl Proc {
    fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        // SAFETY: kill(2) on the id of a child this test started and has not reaped yet.
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("{} ignored SIGTERM for 5 s: killing it", self.name);
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The first line `child` prints on stdout, waiting at most 20 s; the rest is drained.
fn first_line(child: &mut Child, what: &str) -> String {
    let out = child.stdout.take().expect("stdout is piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut r = BufReader::new(out);
        let mut line = String::new();
        let _ = r.read_line(&mut line);
        let _ = tx.send(line);
        let mut sink = String::new();
        while r.read_line(&mut sink).map(|n| n > 0).unwrap_or(false) {
            sink.clear();
        }
    });
    let line = rx
        .recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("{what} printed nothing within 20 s"));
    line.trim().to_string()
}

/// A private session bus that activates nothing: the system's own session configuration would
/// start gnome-keyring by itself at the first call for `org.freedesktop.secrets` (its
/// `.service` file), and this test needs a bus where no Secret Service exists until it says so.
fn start_bus(dir: &Path) -> (Proc, String) {
    need("dbus-daemon");
    let services = dir.join("services");
    std::fs::create_dir_all(&services).unwrap();
    let config = dir.join("bus.conf");
    std::fs::write(
        &config,
        format!(
            r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir={dir}</listen>
  <auth>EXTERNAL</auth>
  <servicedir>{services}</servicedir>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#,
            dir = dir.display(),
            services = services.display()
        ),
    )
    .unwrap();
    let mut child = Command::new("dbus-daemon")
        .arg(format!("--config-file={}", config.display()))
        .args(["--nofork", "--nopidfile", "--print-address=1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("dbus-daemon starts");
    let address = first_line(&mut child, "dbus-daemon");
    let proc = Proc {
        name: "dbus-daemon",
        child: Some(child),
    };
    assert!(address.starts_with("unix:"), "dbus-daemon gave {address:?}");
    (proc, address)
}

/// Whether `name` has an owner on the bus at `address`.
fn has_owner(address: &str, name: &str) -> bool {
    let out = Command::new("dbus-send")
        .args([
            "--session",
            "--print-reply",
            "--dest=org.freedesktop.DBus",
            "/org/freedesktop/DBus",
            "org.freedesktop.DBus.NameHasOwner",
        ])
        .arg(format!("string:{name}"))
        .env("DBUS_SESSION_BUS_ADDRESS", address)
        .output()
        .expect("dbus-send runs");
    assert!(
        out.status.success(),
        "dbus-send failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).contains("boolean true")
}

/// Waits (bounded) until `org.freedesktop.secrets` is owned (`up`) or not.
fn wait_secrets(address: &str, up: bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while has_owner(address, SECRETS) != up {
        assert!(
            Instant::now() < deadline,
            "{SECRETS} still {} after 20 s",
            if up { "unowned" } else { "owned" }
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// gnome-keyring serving the Secret Service on the bus at `address`, its keyrings under
/// `home`, unlocked with [`PASSWORD`] on stdin (the login keyring is made with it the first
/// time); returns once it owns `org.freedesktop.secrets`. `run` is its own runtime folder
/// (its control socket), fresh at each start.
fn start_keyring(address: &str, home: &Path, run: &Path) -> Proc {
    need("gnome-keyring-daemon");
    std::fs::create_dir_all(run).unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(run, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let mut child = Command::new("gnome-keyring-daemon")
        .args(["--foreground", "--unlock", "--components=secrets"])
        .env("HOME", home)
        .env("XDG_RUNTIME_DIR", run)
        .env("DBUS_SESSION_BUS_ADDRESS", address)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("gnome-keyring-daemon starts");
    {
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(PASSWORD).unwrap();
        // Dropped: end of the password.
    }
    let proc = Proc {
        name: "gnome-keyring-daemon",
        child: Some(child),
    };
    wait_secrets(address, true);
    proc
}

/// Locks the login collection (`org.freedesktop.Secret.Service.Lock`), as the screen locker
/// or the person does.
fn lock_login(address: &str) {
    let out = Command::new("dbus-send")
        .args([
            "--session",
            "--print-reply",
            "--dest=org.freedesktop.secrets",
            "/org/freedesktop/secrets",
            "org.freedesktop.Secret.Service.Lock",
            "array:objpath:/org/freedesktop/secrets/collection/login",
        ])
        .env("DBUS_SESSION_BUS_ADDRESS", address)
        .output()
        .expect("dbus-send runs");
    assert!(
        out.status.success(),
        "locking the login collection failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Unlocks the login collection with its password, as the person does in the desktop's
/// unlock prompt (none can be shown here: gnome-keyring finds no prompter on this bus and
/// dismisses every prompt): gnome-keyring's own `UnlockWithMasterPassword`, the secret sent in
/// a plain session opened on the same connection.
fn unlock_login() {
    use dbus::arg::{RefArg, Variant};
    let c = dbus::blocking::Connection::new_session().expect("the test's session bus");
    let service = c.with_proxy(SECRETS, "/org/freedesktop/secrets", Duration::from_secs(10));
    let (_, session): (Variant<Box<dyn RefArg>>, dbus::Path<'static>) = service
        .method_call(
            "org.freedesktop.Secret.Service",
            "OpenSession",
            ("plain", Variant("")),
        )
        .expect("a plain Secret Service session");
    let secret = (session, Vec::<u8>::new(), PASSWORD.to_vec(), "text/plain");
    let () = service
        .method_call(
            "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface",
            "UnlockWithMasterPassword",
            (
                dbus::Path::from("/org/freedesktop/secrets/collection/login"),
                secret,
            ),
        )
        .expect("gnome-keyring unlocks the login collection with its password");
}

/// Polls `ok` every 20 ms until it holds, failing after [`WAIT`].
async fn until(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !ok() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out ({WAIT:?}) waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// An app over `home` using the REAL OS key store (no override): the Secret Service on this
/// process's session bus. It checks the store every 200 ms while its link runs.
fn app_in(home: &Path) -> (Arc<App>, Arc<RecordingHost>) {
    let mut config = AppConfig::new(AppPaths::under(home), false);
    assert_eq!(config.identity, IdentityStore::KeyStore);
    assert!(config.key_store.is_none());
    config.key_store_check_every = Duration::from_millis(200);
    config.listen = (LOOPBACK, 0);
    config.mdns = false;
    let host = Arc::new(RecordingHost::new());
    let app = App::new(
        config,
        host.clone(),
        tokio::runtime::Handle::current(),
        ConfirmationMirror::with_bundled_catalogue(),
    );
    (app, host)
}

/// `switchboard status` (the real CLI) of the app in `home`: (exit code, what it printed).
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

/// Every file under `dir`, with its bytes.
fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut stack = vec![dir.to_path_buf()];
    let mut files = Vec::new();
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.is_file() {
                let bytes = std::fs::read(&path).unwrap();
                files.push((path, bytes));
            }
        }
    }
    files
}

/// A phone paired through the link's pairing window, still connected.
async fn pair(app: &App, label: &str) -> (PhoneIdentity, PhoneClient) {
    let link = app.phones.link().unwrap();
    let invite = link.open_pairing(LOOPBACK);
    let me = PhoneIdentity::generate(label);
    let mut phone = PhoneClient::connect(
        link.local_addr().unwrap(),
        link.identity().cert_fingerprint(),
    )
    .await
    .unwrap();
    let shown = phone.pair_start(&me, &invite.code, vec![]).await.unwrap();
    let pending = app
        .phones
        .snapshot()
        .pending
        .expect("the Phones view shows the pending pairing");
    app.change()
        .unwrap()
        .confirm_pairing(&pending.id, true)
        .unwrap();
    phone
        .pair_confirm(&me, &shown, true, (1, 1))
        .await
        .expect("pairing succeeds");
    (me, phone)
}

/// The phone is answered on its connection (`control.ping` -> `control.pong`).
async fn answered(me: &PhoneIdentity, phone: &mut PhoneClient) {
    let ping = envelope("control.ping", Some(&me.entity_id()), json!({}));
    phone.send_value(&ping).await.unwrap();
    let pong = tokio::time::timeout(WAIT, phone.expect("control.pong"))
        .await
        .expect("a pong within the wait")
        .unwrap();
    assert_eq!(pong["type"], "control.pong");
}

#[test]
fn the_real_secret_service_missing_then_started_then_gone_then_back() {
    need("dbus-send");
    need("dbus-daemon");
    need("gnome-keyring-daemon");
    let root = tempfile::Builder::new()
        .prefix("sb-keystore-")
        .tempdir()
        .unwrap();
    let bus_dir = root.path().join("bus");
    let keyring_home = root.path().join("keyring-home");
    let app_home = root.path().join("app");
    for d in [&bus_dir, &keyring_home, &app_home] {
        std::fs::create_dir_all(d).unwrap();
    }
    let (bus, address) = start_bus(&bus_dir);
    // libdbus reads the session bus's address once, at the first connection: set before any.
    std::env::set_var("DBUS_SESSION_BUS_ADDRESS", &address);
    assert!(!has_owner(&address, SECRETS), "no Secret Service yet");

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let keyring = rt.block_on(steps(&address, &keyring_home, &app_home, root.path()));
    drop(keyring);
    // A key store call still blocked (a prompt nobody answers) must not hold the test for ever.
    rt.shutdown_timeout(Duration::from_secs(10));
    drop(bus);
}

/// The five steps; returns the keyring last started (stopped by the caller after the
/// runtime, then the bus).
async fn steps(address: &str, keyring_home: &Path, app_home: &Path, root: &Path) -> Proc {
    // 1. No Secret Service: the link does not start, and the words say why and what to do.
    let (app, host) = app_in(app_home);
    switchboard::control::start_control(&app).expect("the control socket starts");
    app.start_link();
    until("the Phones view to say the key store is missing", || {
        app.phones
            .snapshot()
            .link_error
            .is_some_and(|e| e.contains("No OS key store is available"))
    })
    .await;
    let words = app.phones.snapshot().link_error.unwrap();
    eprintln!("no Secret Service, the Phones view says: {words}");
    for needle in [
        SECRETS,
        "install and unlock gnome-keyring",
        "Secret Service",
        "never keeps its private keys in a plain",
        "tries again by itself",
    ] {
        assert!(words.contains(needle), "{needle:?} not in {words}");
    }
    // A second try fails the same way (each try tells the Phones view to reload).
    let reloads = || {
        host.calls()
            .iter()
            .filter(|c| matches!(c, HostCall::Emit(AppEvent::Phones)))
            .count()
    };
    until("the start to be tried again", || reloads() >= 2).await;
    assert!(app.phones.link().is_none(), "no link without a key store");
    assert!(app.hub().is_none());
    assert!(app.phones.snapshot().link_error.is_some());
    let (code, said) = status_cli(app_home).await;
    assert!(
        said.contains("Link: not running: No OS key store is available") && said.contains(SECRETS),
        "switchboard status said: {said}"
    );
    assert_eq!(code, Some(0), "dials are still saved: {said}");
    // Nothing that looks like a private key was written in the store's place.
    for (path, bytes) in files_under(app_home) {
        let text = String::from_utf8_lossy(&bytes);
        for needle in ["ed25519_seed", "key_der", "PRIVATE KEY", IDENTITY_SECRET] {
            assert!(
                !text.contains(needle),
                "{} holds {needle:?} while there is no key store",
                path.display()
            );
        }
    }

    // 2. gnome-keyring comes up on the same bus: the link starts without a restart.
    let keyring = start_keyring(address, keyring_home, &root.join("run-1"));
    let started = Instant::now();
    until("the link to start once the Secret Service answers", || {
        app.phones.link().is_some() && app.hub().is_some()
    })
    .await;
    eprintln!(
        "link started {:?} after the Secret Service came up",
        started.elapsed()
    );
    until("the words to go away", || {
        app.phones.snapshot().link_error.is_none()
    })
    .await;
    let link = app.phones.link().unwrap();
    let fingerprint = link.identity().cert_fingerprint().to_string();
    let stored = tokio::task::spawn_blocking(|| KeyringStore::new().get(IDENTITY_SECRET))
        .await
        .unwrap()
        .expect("the real store answers")
        .expect("the identity is in the real store");
    let in_store = tokio::task::spawn_blocking(|| {
        DesktopIdentity::load_or_create(&KeyringStore::new()).unwrap()
    })
    .await
    .unwrap();
    assert_eq!(
        in_store.cert_fingerprint(),
        fingerprint,
        "the link runs on the identity in the real store"
    );
    let stored: Value = serde_json::from_slice(&stored).unwrap();
    let private: Vec<String> = ["ed25519_seed", "key_der"]
        .iter()
        .map(|k| stored[k].as_str().expect("a private part").to_string())
        .collect();
    let (code, said) = status_cli(app_home).await;
    assert!(said.contains("Link: running"), "{said}");
    assert!(!said.contains("Key store:"), "{said}");
    assert_eq!(code, Some(0), "{said}");

    // 3. A phone connected; the Secret Service goes away while the app runs.
    let (me, mut phone) = pair(&app, "Phone").await;
    answered(&me, &mut phone).await;
    // Several checks pass while the store answers: nothing is said.
    let calm = Instant::now();
    until("several checks to pass", || {
        calm.elapsed() > Duration::from_millis(700)
    })
    .await;
    assert!(app.phones.snapshot().key_store_problem.is_none());
    let mut keyring = keyring;
    keyring.stop();
    wait_secrets(address, false);
    until("the periodic check to notice the store went away", || {
        app.phones.snapshot().key_store_problem.is_some()
    })
    .await;
    let words = app.phones.snapshot().key_store_problem.unwrap();
    eprintln!("the Secret Service gone, the Phones view says: {words}");
    for needle in [
        "stopped answering while Switchboard runs",
        SECRETS,
        "Phones already connected keep working",
        "never in a file",
        "goes away by itself",
    ] {
        assert!(words.contains(needle), "{needle:?} not in {words}");
    }
    let snap = app.phones.snapshot();
    assert!(snap.link_error.is_none());
    assert!(
        snap.phones
            .iter()
            .any(|p| p.connected && p.record.label == "Phone"),
        "the phone is shown connected"
    );
    answered(&me, &mut phone).await;
    let (_, said) = status_cli(app_home).await;
    assert!(
        said.contains("Key store: The OS key store stopped answering"),
        "{said}"
    );

    // The Secret Service back (the same keyring file and password): the words go away.
    let keyring = start_keyring(address, keyring_home, &root.join("run-2"));
    until("the words to go away once the store answers again", || {
        app.phones.snapshot().key_store_problem.is_none()
    })
    .await;
    answered(&me, &mut phone).await;
    let (_, said) = status_cli(app_home).await;
    assert!(!said.contains("Key store:"), "{said}");

    // 4. The login collection locked while the app runs (the screen locker, the person): the
    // store answers but refuses until unlocked. Noticed and said; the phone keeps working.
    lock_login(address);
    until("the periodic check to notice the locked collection", || {
        app.phones.snapshot().key_store_problem.is_some()
    })
    .await;
    let words = app.phones.snapshot().key_store_problem.unwrap();
    eprintln!("the collection locked, the Phones view says: {words}");
    for needle in [
        "stopped answering while Switchboard runs",
        "unlock prompt was dismissed",
        "Phones already connected keep working",
        "Unlock or start the key store",
    ] {
        assert!(words.contains(needle), "{needle:?} not in {words}");
    }
    answered(&me, &mut phone).await;
    unlock_login();
    until(
        "the words to go away once the collection is unlocked",
        || app.phones.snapshot().key_store_problem.is_none(),
    )
    .await;
    phone.close().await;
    app.shutdown().await;
    drop(app);

    // 5. A second start while the collection is locked: the link waits, saying so; unlocked,
    // it starts without a restart, on the identity kept in the real store, and still knows
    // the phone.
    lock_login(address);
    let (again, _host) = app_in(app_home);
    again.start_link();
    until("the second start to say the collection is locked", || {
        again
            .phones
            .snapshot()
            .link_error
            .is_some_and(|e| e.contains("unlock prompt was dismissed"))
    })
    .await;
    let words = again.phones.snapshot().link_error.unwrap();
    eprintln!("started while locked, the Phones view says: {words}");
    assert!(words.contains("tries again by itself"), "{words}");
    assert!(again.phones.link().is_none());
    unlock_login();
    until("the second start's link once unlocked", || {
        again.phones.link().is_some() && again.hub().is_some()
    })
    .await;
    until("the words to go away", || {
        again.phones.snapshot().link_error.is_none()
    })
    .await;
    let link = again.phones.link().unwrap();
    assert_eq!(link.identity().cert_fingerprint(), fingerprint);
    assert!(link
        .paired_phones()
        .iter()
        .any(|p| p.device_id == me.device_id()));
    again.shutdown().await;

    // No file under the app's folders holds a private part of the identity.
    let files = files_under(app_home);
    assert!(!files.is_empty(), "the app wrote its files");
    for (path, bytes) in files {
        let text = String::from_utf8_lossy(&bytes);
        for p in &private {
            assert!(
                !text.contains(p.as_str()),
                "{} holds a private key",
                path.display()
            );
        }
    }
    keyring
}
