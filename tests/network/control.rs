//! The control socket with a real [`App`] on loopback and the real `switchboard` CLI binary:
//! `switchboard pair` pairing the reference phone (`switchboard-phone`) with the verification
//! code answered on the CLI's terminal, and with `--json` answered in the app; `phones`;
//! `unpair`; the app not running; a stale socket replaced and a second app detected; a peer of
//! another uid refused; no request can answer for the person on a phone.
//!
//! Every wait is bounded; the link binds 127.0.0.1:0.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use switchboard::app::{App, AppConfig, AppPaths, IdentityStore, RecordingHost};
use switchboard::confirmations::ConfirmationMirror;
use switchboard::control::client::ControlClient;
use switchboard::control::server::ControlServer;
use switchboard::control::{socket_path, ControlError, Request, REQUEST_NAMES};

const WAIT: Duration = Duration::from_secs(60);

fn app_in(home: &Path) -> Arc<App> {
    let mut config = AppConfig::new(AppPaths::under(home), false);
    config.identity = IdentityStore::Memory;
    config.listen = (IpAddr::V4(Ipv4Addr::LOCALHOST), 0);
    config.mdns = false;
    App::new(
        config,
        Arc::new(RecordingHost::new()),
        tokio::runtime::Handle::current(),
        ConfirmationMirror::with_bundled_catalogue(),
    )
}

async fn running(home: &Path) -> Arc<App> {
    let app = app_in(home);
    app.start_link();
    let deadline = Instant::now() + WAIT;
    while app.phones.link().and_then(|l| l.local_addr()).is_none() || app.hub().is_none() {
        assert!(Instant::now() < deadline, "the link did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    switchboard::control::start_control(&app).expect("the control socket starts");
    app
}

fn cli(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_switchboard"));
    c.env("SWITCHBOARD_HOME", home);
    c
}

/// Runs the CLI to its end off the runtime's threads.
async fn run_cli(home: &Path, args: &[&str]) -> std::process::Output {
    let mut c = cli(home);
    c.args(args);
    tokio::task::spawn_blocking(move || c.output().unwrap())
        .await
        .unwrap()
}

/// Lines of a child's stdout, read on a thread.
fn lines_of(child: &mut Child) -> mpsc::Receiver<String> {
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// Waits (bounded, off the runtime) for a line matching `want`; returns it and everything read.
async fn line_with(
    rx: &mut mpsc::Receiver<String>,
    seen: &mut Vec<String>,
    want: impl Fn(&str) -> bool,
) -> String {
    let deadline = Instant::now() + WAIT;
    loop {
        assert!(
            Instant::now() < deadline,
            "no such line in:\n{}",
            seen.join("\n")
        );
        match rx.try_recv() {
            Ok(l) => {
                seen.push(l.clone());
                if want(&l) {
                    return l;
                }
            }
            Err(mpsc::TryRecvError::Empty) => tokio::time::sleep(Duration::from_millis(20)).await,
            Err(mpsc::TryRecvError::Disconnected) => {
                panic!("the CLI ended before the line:\n{}", seen.join("\n"))
            }
        }
    }
}

async fn wait_child(mut child: Child) -> (std::process::ExitStatus, String) {
    tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    use std::io::Read as _;
                    let _ = e.read_to_string(&mut err);
                }
                return (status, err);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("the child did not end in time");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    })
    .await
    .unwrap()
}

fn phone(identity: &Path, link: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_switchboard-phone"))
        .args(["--identity"])
        .arg(identity)
        .args([
            "--label",
            "Test phone",
            "--link",
            link,
            "--confirm-code",
            "--pair-only",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pair_phones_and_unpair_through_the_cli() {
    let home = tempfile::tempdir().unwrap();
    let app = running(home.path()).await;

    // Nothing paired yet.
    let out = run_cli(home.path(), &["phones"]).await;
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("No phone is paired"));

    let mut pair = cli(home.path())
        .arg("pair")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = pair.stdin.take().unwrap();
    let mut rx = lines_of(&mut pair);
    let mut seen = Vec::new();
    let link = line_with(&mut rx, &mut seen, |l| l.starts_with("switchboard://pair?")).await;
    let code = app
        .phones
        .snapshot()
        .pairing
        .expect("the window is open")
        .code;
    assert!(seen[0].contains(&code), "the code is said: {}", seen[0]);
    assert!(
        link.contains(&format!("code={}", code.replace('-', ""))),
        "{link}"
    );
    // The QR code drawn in the terminal comes after the link.
    let qr = line_with(&mut rx, &mut seen, |l| l.contains('▀') || l.contains('▄')).await;
    assert!(qr.chars().count() > 25, "{qr}");

    let typed = line_with(&mut rx, &mut seen, |l| l.contains("type this one line")).await;
    assert!(
        typed.contains(&format!(
            "127.0.0.1:{} {code}",
            app.phones.link().unwrap().local_addr().unwrap().port()
        )),
        "{typed}"
    );
    let identity = home.path().join("phone.json");
    let phone_child = phone(&identity, &link);
    let asked = line_with(&mut rx, &mut seen, |l| l.contains("Verification code")).await;
    let pending = app
        .phones
        .snapshot()
        .pending
        .expect("the pairing is pending");
    assert!(asked.contains(&pending.verification_code), "{asked}");
    assert!(
        !pending.desktop_confirmed,
        "nothing confirmed before the person answers"
    );
    // The person compares the codes and answers on the terminal.
    stdin.write_all(b"y\n").unwrap();
    stdin.flush().unwrap();
    line_with(&mut rx, &mut seen, |l| {
        l.contains("Paired with \"Test phone\"")
    })
    .await;
    let (status, err) = wait_child(pair).await;
    assert!(
        status.success(),
        "pair: {status:?} {err}\n{}",
        seen.join("\n")
    );
    let (status, err) = wait_child(phone_child).await;
    assert!(status.success(), "phone: {err}");

    // Listed (the phone said hello while pairing, then left).
    let out = run_cli(home.path(), &["phones", "--json"]).await;
    assert!(out.status.success(), "{out:?}");
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let phones = list["phones"].as_array().unwrap();
    assert_eq!(phones.len(), 1, "{list}");
    assert_eq!(phones[0]["label"], "Test phone");
    let device = phones[0]["device_id"].as_str().unwrap().to_string();
    assert!(
        phones[0]["address"]
            .as_str()
            .unwrap()
            .starts_with("127.0.0.1:"),
        "{list}"
    );
    assert!(phones[0]["last_seen_ms"].as_u64().is_some(), "{list}");
    let out = run_cli(home.path(), &["phones"]).await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&device)
            && (text.contains("connected since 20") || text.contains("last connected 20"))
            && text.contains(" UTC, key "),
        "{text}"
    );

    // Unpair by label; then it is gone and unpairing again says so.
    let out = run_cli(home.path(), &["unpair", "Test phone"]).await;
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains(&device));
    assert!(app.phones.link().unwrap().paired_phones().is_empty());
    let out = run_cli(home.path(), &["unpair", &device]).await;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no paired phone"),
        "{out:?}"
    );

    app.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pair_json_is_answered_in_the_app_window() {
    let home = tempfile::tempdir().unwrap();
    let app = running(home.path()).await;
    let mut pair = cli(home.path())
        .args(["pair", "--json"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut rx = lines_of(&mut pair);
    let mut seen = Vec::new();
    let window: Value =
        serde_json::from_str(&line_with(&mut rx, &mut seen, |l| l.contains("\"window\"")).await)
            .unwrap();
    assert_eq!(
        window["port"],
        app.phones.link().unwrap().local_addr().unwrap().port()
    );
    let link = window["link"].as_str().unwrap().to_string();
    let phone_child = phone(&home.path().join("phone.json"), &link);
    let pending: Value =
        serde_json::from_str(&line_with(&mut rx, &mut seen, |l| l.contains("\"pending\"")).await)
            .unwrap();
    // The person says "Codes match" in the window.
    app.change()
        .unwrap()
        .confirm_pairing(pending["id"].as_str().unwrap(), true)
        .unwrap();
    let done: Value =
        serde_json::from_str(&line_with(&mut rx, &mut seen, |l| l.contains("\"paired\"")).await)
            .unwrap();
    assert_eq!(done["label"], "Test phone");
    let (status, _) = wait_child(pair).await;
    assert!(status.success());
    assert!(wait_child(phone_child).await.0.success());
    app.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_running_app_the_cli_says_so_in_one_sentence() {
    let home = tempfile::tempdir().unwrap();
    for args in [
        &["status"][..],
        &["pair"],
        &["phones"],
        &["unpair", "dev_x"],
    ] {
        let out = run_cli(home.path(), args).await;
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("Switchboard is not running"), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "one sentence: {err}");
        assert!(out.stdout.is_empty());
    }
    // An app that stopped removed its socket: the same words.
    let app = running(home.path()).await;
    let path = socket_path(&app.config.paths).unwrap();
    assert!(path.exists());
    app.shutdown().await;
    assert!(!path.exists(), "shutdown removes the socket file");
    let out = run_cli(home.path(), &["phones"]).await;
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

/// `switchboard status` of an app whose dial history could be opened, one found damaged at
/// this start (repaired: said, exit 0) and one that could not be opened (memory only: said,
/// exit 1). The full disk is `tests/disk_full.rs` (it needs a tmpfs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_says_whether_dials_are_being_stored_and_why_not() {
    // A healthy start.
    let home = tempfile::tempdir().unwrap();
    let app = running(home.path()).await;
    let out = run_cli(home.path(), &["status"]).await;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        text.contains(&format!("process {}", std::process::id())),
        "{text}"
    );
    assert!(text.contains("Link: running"), "{text}");
    assert!(
        text.contains("Dial history: dials are being saved"),
        "{text}"
    );
    assert!(!text.contains("repaired"), "{text}");
    let out = run_cli(home.path(), &["status", "--json"]).await;
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["storage_problem"], Value::Null, "{v}");
    assert_eq!(v["storage_error"], Value::Null, "{v}");
    assert_eq!(v["link_running"], true, "{v}");
    app.shutdown().await;

    // A history that is not SQLite (a dial export saved over it): repaired at start.
    let home = tempfile::tempdir().unwrap();
    let dir = AppPaths::under(home.path()).link_dir(false);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join(switchboard::dials::store::DB_FILE);
    std::fs::write(&db, "{\"id\":\"d1\",\"op\":\"describe\"}\n".repeat(2000)).unwrap();
    let app = running(home.path()).await;
    let out = run_cli(home.path(), &["status"]).await;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "stored again: {out:?}");
    assert!(
        text.contains("Dial history: dials are being saved"),
        "{text}"
    );
    let repaired = text
        .lines()
        .find(|l| l.starts_with("Dial history repaired at this start: "))
        .unwrap_or_else(|| panic!("no repair line: {text}"));
    assert!(repaired.contains(" 0 dials were recovered"), "{repaired}");
    assert!(
        repaired.contains(&*dir.join("dials.sqlite3.broken-").to_string_lossy()),
        "names where the damaged file is: {repaired}"
    );
    app.shutdown().await;

    // A history that cannot be opened at all (a folder where the file should be): the log
    // keeps dials in memory only, and status says so and exits 1.
    let home = tempfile::tempdir().unwrap();
    let dir = AppPaths::under(home.path()).link_dir(false);
    std::fs::create_dir_all(dir.join(switchboard::dials::store::DB_FILE)).unwrap();
    let app = running(home.path()).await;
    let out = run_cli(home.path(), &["status"]).await;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let line = text
        .lines()
        .find(|l| l.starts_with("Dial history: kept in memory only, nothing is saved: "))
        .unwrap_or_else(|| panic!("no memory-only line: {text}"));
    assert!(line.contains("dials.sqlite3"), "names the file: {line}");
    assert!(!text.contains("dials are being saved"), "{text}");
    let out = run_cli(home.path(), &["status", "--json"]).await;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["storage_error"].is_string(), "{v}");
    app.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_socket_is_replaced_and_a_second_app_is_detected() {
    use std::os::unix::fs::PermissionsExt as _;
    let home = tempfile::tempdir().unwrap();
    let paths = AppPaths::under(home.path());
    std::fs::create_dir_all(&paths.data_dir).unwrap();
    let path = socket_path(&paths).unwrap();
    // An app killed while serving: the socket file stays, nobody listens.
    switchboard::fsutil::make_private_dir(path.parent().unwrap()).unwrap();
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(path.exists());
    let out = run_cli(home.path(), &["phones"]).await;
    assert_eq!(
        out.status.code(),
        Some(2),
        "a stale socket is not an app: {out:?}"
    );

    let first = running(home.path()).await;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "socket mode {mode:o}");
    let dir_mode = std::fs::metadata(path.parent().unwrap())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(dir_mode, 0o700, "folder mode {dir_mode:o}");
    let out = run_cli(home.path(), &["phones"]).await;
    assert!(out.status.success(), "{out:?}");

    // A second app on the same home does not take the first one's socket.
    let second = app_in(home.path());
    match switchboard::control::start_control(&second) {
        Err(ControlError::AlreadyRunning { path: p }) => assert_eq!(p, path),
        other => panic!("a second app took the socket: {other:?}"),
    }
    let status: Value = ControlClient::connect(&paths)
        .unwrap()
        .request(&Request::Status)
        .unwrap();
    assert_eq!(status["pid"], std::process::id());
    assert_eq!(
        status["link_running"], true,
        "still the first app: {status}"
    );
    second.shutdown().await;
    assert!(
        path.exists(),
        "the second app's shutdown leaves the first's socket"
    );
    first.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_of_another_uid_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let app = app_in(home.path());
    let path = home.path().join("ctl").join("control.sock");
    let me = switchboard::control::server::own_uid();
    // The server serves another uid than this test's: this test is "another user".
    let server = ControlServer::start_for_uid(
        Arc::downgrade(&app),
        path.clone(),
        &tokio::runtime::Handle::current(),
        me + 1,
    )
    .unwrap();
    let p = path.clone();
    let e = tokio::task::spawn_blocking(move || {
        ControlClient::connect_to(&p)
            .unwrap()
            .request(&Request::Status)
            .unwrap_err()
    })
    .await
    .unwrap();
    match e {
        ControlError::App(e) => assert!(e.message.contains(&format!("not uid {me}")), "{e:?}"),
        other => panic!("not refused: {other:?}"),
    }
    server.stop(Duration::from_secs(1)).await;
    assert!(!path.exists());
    app.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_request_can_answer_for_the_person_on_a_phone() {
    for name in REQUEST_NAMES {
        for word in [
            "approve", "reject", "cancel", "decline", "deny", "allow", "answer",
        ] {
            assert!(
                !name.contains(word),
                "request {name} looks like it answers an action"
            );
        }
    }
    let home = tempfile::tempdir().unwrap();
    let app = running(home.path()).await;
    let before = app.confirmations.lock().snapshot();
    let paths = app.config.paths.clone();
    let answers = tokio::task::spawn_blocking(move || {
        let mut out = Vec::new();
        for name in REQUEST_NAMES {
            let mut c = ControlClient::connect(&paths).unwrap();
            let mut req = json!({"request": name});
            match *name {
                "confirm_pairing" => {
                    req["id"] = json!("pairing_9");
                    req["codes_match"] = json!(true);
                }
                "unpair" => req["device"] = json!("dev_nobody"),
                "bundle" => {
                    req["path"] = json!(paths.data_dir.join("support.tar.gz").display().to_string())
                }
                _ => {}
            }
            let req: Request = serde_json::from_value(req).unwrap();
            out.push((name, c.request(&req).map(|_| ()).map_err(|e| e.to_string())));
        }
        // Nothing else is a request: an approve-like one is refused and the connection closed.
        let mut raw =
            std::os::unix::net::UnixStream::connect(socket_path(&paths).unwrap()).unwrap();
        raw.write_all(b"{\"request\":\"approve_action\",\"action_id\":\"act_1\"}\n")
            .unwrap();
        let mut line = String::new();
        BufReader::new(&raw).read_line(&mut line).unwrap();
        (out, line)
    })
    .await
    .unwrap();
    for (name, r) in &answers.0 {
        if let Err(e) = r {
            assert!(
                e.contains("no pairing waits") || e.contains("no paired phone"),
                "{name}: {e}"
            );
        }
    }
    let refused: Value = serde_json::from_str(&answers.1).unwrap();
    assert_eq!(refused["ok"], false);
    assert!(refused["error"]["message"]
        .as_str()
        .unwrap()
        .contains("approve_action"));
    assert_eq!(before, app.confirmations.lock().snapshot());
    app.shutdown().await;
}
