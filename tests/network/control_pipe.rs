//! The control channel on Windows (run under wine by scripts/cross-check.sh): a real [`App`] on
//! loopback serves its named pipe; the requests the CLI sends (status, phones, pair) go through
//! it, from the client in this process and from the real `switchboard` CLI binary; the pipe's
//! security descriptor, read back, grants the current user alone; a second app does not take
//! the name; after shutdown the CLI says the app is not running.
//!
//! Every wait is bounded; the link binds 127.0.0.1:0.
// Named pipes and their security descriptors are Windows' (Unix: tests/network/control.rs).
#![cfg(windows)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::{IpAddr, Ipv4Addr};
use std::os::windows::io::AsRawHandle as _;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use switchboard::app::{App, AppConfig, AppPaths, IdentityStore, RecordingHost};
use switchboard::confirmations::ConfirmationMirror;
use switchboard::control::client::ControlClient;
use switchboard::control::pipe::{pipe_security_sddl, process_user_sid};
use switchboard::control::{socket_path, ControlError, PairAnswer, Request, StatusAnswer};

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

async fn cli(home: &Path, args: &[&str]) -> std::process::Output {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"));
    c.env("SWITCHBOARD_HOME", home).args(args);
    tokio::task::spawn_blocking(move || c.output().unwrap())
        .await
        .unwrap()
}

/// The ACEs of the DACL in `sddl` (`…D:P(A;;FA;;;S-1-…)(…)`), each as its fields.
fn dacl_aces(sddl: &str) -> Vec<Vec<String>> {
    let dacl = &sddl[sddl.find("D:").expect("a DACL") + 2..];
    dacl.split('(')
        .skip(1)
        .map(|ace| {
            ace.split(')')
                .next()
                .unwrap()
                .split(';')
                .map(str::to_string)
                .collect()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_reaches_the_app_over_a_pipe_only_this_user_can_open() {
    let home = tempfile::tempdir().unwrap();
    let paths = AppPaths::under(home.path());
    let path = socket_path(&paths).unwrap();
    assert!(
        path.to_str().unwrap().starts_with(r"\\.\pipe\switchboard-"),
        "{}",
        path.display()
    );

    // Not running yet: the CLI says so.
    let p = path.clone();
    let e = tokio::task::spawn_blocking(move || ControlClient::connect_to(&p).unwrap_err())
        .await
        .unwrap();
    assert!(matches!(e, ControlError::NotRunning { .. }), "{e:?}");
    let out = cli(home.path(), &["phones"]).await;
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not running"),
        "{out:?}"
    );

    let app = app_in(home.path());
    // The name comes from the data folder as both ends find it (canonical once the app made
    // it), so it is asked again now that it exists.
    let path = socket_path(&paths).unwrap();
    app.start_link();
    let deadline = Instant::now() + WAIT;
    while app.phones.link().and_then(|l| l.local_addr()).is_none() || app.hub().is_none() {
        assert!(Instant::now() < deadline, "the link did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(switchboard::control::start_control(&app).unwrap(), path);

    // The pipe's owner and DACL, read back through a client handle: this user's SID alone.
    let me = process_user_sid(None).unwrap();
    assert!(me.starts_with("S-1-"), "{me}");
    let p = path.clone();
    let sddl = tokio::task::spawn_blocking(move || {
        let pipe = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&p)
            .unwrap();
        pipe_security_sddl(pipe.as_raw_handle()).unwrap()
    })
    .await
    .unwrap();
    assert!(sddl.starts_with(&format!("O:{me}")), "owner: {sddl}");
    assert!(sddl.contains("D:P"), "the DACL is protected: {sddl}");
    let aces = dacl_aces(&sddl);
    assert!(!aces.is_empty(), "no ACE at all: {sddl}");
    for ace in &aces {
        assert_eq!(ace.len(), 6, "{ace:?} in {sddl}");
        assert_eq!(ace[0], "A", "only allow entries: {sddl}");
        assert_eq!(ace[5], me, "an entry for someone else: {sddl}");
    }

    // status, phones and pair through the pipe from this process's client.
    let p = path.clone();
    let (status, phones, pair) = tokio::task::spawn_blocking(move || {
        let mut c = ControlClient::connect_to(&p).unwrap();
        let status: StatusAnswer = c.call(&Request::Status).unwrap();
        let phones: Value = c.request(&Request::Phones).unwrap();
        let pair: PairAnswer = c.call(&Request::Pair).unwrap();
        (status, phones, pair)
    })
    .await
    .unwrap();
    assert_eq!(status.pid, std::process::id());
    assert!(status.link_running && !status.demo, "{status:?}");
    assert_eq!(phones["phones"], serde_json::json!([]), "{phones}");
    let port = app.phones.link().unwrap().local_addr().unwrap().port();
    assert_eq!(pair.port, port);
    assert!(
        pair.code.len() == 7 && pair.code.as_bytes()[3] == b'-',
        "{}",
        pair.code
    );
    assert!(
        pair.link.starts_with("switchboard://pair?"),
        "{}",
        pair.link
    );

    // The same from the real CLI binary.
    let out = cli(home.path(), &["phones", "--json"]).await;
    assert!(out.status.success(), "{out:?}");
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(listed.to_string().contains("phones"), "{listed}");

    // A second app on the same home does not take the name.
    let second = app_in(home.path());
    match switchboard::control::start_control(&second) {
        Err(ControlError::AlreadyRunning { path: p }) => assert_eq!(p, path),
        other => panic!("a second app took the pipe: {other:?}"),
    }
    second.shutdown().await;
    let p = path.clone();
    let again: StatusAnswer = tokio::task::spawn_blocking(move || {
        ControlClient::connect_to(&p)
            .unwrap()
            .call(&Request::Status)
            .unwrap()
    })
    .await
    .unwrap();
    assert!(again.link_running, "still the first app: {again:?}");

    app.shutdown().await;
    let out = cli(home.path(), &["phones"]).await;
    assert_eq!(out.status.code(), Some(2), "after shutdown: {out:?}");
}
