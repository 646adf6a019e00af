//! `switchboard bundle [FILE]` with the app running (it asks the app over the control channel,
//! and the bundle holds the live views: a banner raised) and without it (it reads the app's
//! files: the bundle says so). It runs on Windows too (under wine in scripts/cross-check.sh),
//! where the channel is the named pipe.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use switchboard::app::{App, AppConfig, AppPaths, IdentityStore, RecordingHost};
use switchboard::confirmations::ConfirmationMirror;
use switchboard::support::open::open_bundle;
use switchboard::support::BundleSource;

async fn running(home: &Path) -> Arc<App> {
    let mut config = AppConfig::new(AppPaths::under(home), false);
    config.identity = IdentityStore::Memory;
    config.listen = (IpAddr::V4(Ipv4Addr::LOCALHOST), 0);
    config.mdns = false;
    config.log_dir = Some(home.join("logs"));
    let app = App::new(
        config,
        Arc::new(RecordingHost::new()),
        tokio::runtime::Handle::current(),
        ConfirmationMirror::with_bundled_catalogue(),
    );
    app.start_link();
    let deadline = Instant::now() + Duration::from_secs(60);
    while app.phones.link().and_then(|l| l.local_addr()).is_none() || app.hub().is_none() {
        assert!(Instant::now() < deadline, "the link did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    switchboard::control::start_control(&app).expect("the control socket starts");
    app
}

async fn bundle_cli(home: &Path, cwd: &Path, args: &[&str]) -> std::process::Output {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"));
    c.env("SWITCHBOARD_HOME", home)
        .current_dir(cwd)
        .arg("bundle")
        .args(args);
    tokio::task::spawn_blocking(move || c.output().unwrap())
        .await
        .unwrap()
}

fn today(now_ms: u64) -> String {
    switchboard::timefmt::rfc3339_ms(now_ms)[..10].to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_app_running_the_cli_reads_its_files() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let logs = home.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let day = today(switchboard::clock::Clock::now_ms(
        &switchboard::clock::SystemClock,
    ));
    std::fs::write(
        logs.join(format!("switchboard.log.{day}")),
        "INFO pairing window open, code 123-456\nINFO Switchboard starting\n",
    )
    .unwrap();
    let out = bundle_cli(home.path(), cwd.path(), &["offline.tar.gz"]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("Switchboard is not running: reading its files"),
        "{stdout}"
    );
    assert!(
        stdout.contains("left out: banners, the link diagnostics"),
        "{stdout}"
    );
    let b = open_bundle(&cwd.path().join("offline.tar.gz")).unwrap();
    assert_eq!(b.manifest.source, BundleSource::AppFiles);
    let log = String::from_utf8(b.files[&format!("logs/switchboard.log.{day}")].clone()).unwrap();
    assert!(
        log.contains("code [redacted: code]") && log.contains("Switchboard starting"),
        "{log}"
    );
    assert!(
        !home.path().join("data").exists(),
        "nothing written in the app's folders"
    );
    // The demo's files, asked for where the demo never ran: refused, not an empty bundle.
    let out = bundle_cli(home.path(), cwd.path(), &["--demo", "demo.tar.gz"]).await;
    assert!(!out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no demo files to read"), "{err}");
    assert!(!cwd.path().join("demo.tar.gz").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_app_running_the_cli_asks_it() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let app = running(home.path()).await;
    let calls = home.path().join("calls.json");
    std::fs::write(
        &calls,
        json!([{"phone": "dev_pixel_ada", "caller": "lumiagent", "endpoint": "lumirealm.phoneline",
            "error": "Shared RPC endpoint \"lumirealm.phoneline\" requires requester \"lumiagent\" to inherit owner \"lumirealm\" permissions: push_notification",
            "at_ms": 1}])
        .to_string(),
    )
    .unwrap();
    app.bridge.record_demo(&calls).unwrap();

    let out = bundle_cli(home.path(), cwd.path(), &["live.tar.gz"]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("from the running app"), "{stdout}");
    let b = open_bundle(&cwd.path().join("live.tar.gz")).unwrap();
    assert_eq!(b.manifest.source, BundleSource::RunningApp);
    assert_eq!(
        b.banners["banners"].as_array().unwrap().len(),
        1,
        "the live banner"
    );
    assert!(
        b.phones["diagnostics"]["port"].is_u64(),
        "the live link's diagnostics"
    );

    // `--files` reads the files even so.
    let out = bundle_cli(home.path(), cwd.path(), &["--files", "files.tar.gz"]).await;
    assert!(out.status.success());
    let b = open_bundle(&cwd.path().join("files.tar.gz")).unwrap();
    assert_eq!(b.manifest.source, BundleSource::AppFiles);

    // With a bundle open in the app (read only), the app refuses, saying why.
    app.open_bundle(cwd.path().join("live.tar.gz").to_str().unwrap())
        .await
        .unwrap();
    let out = bundle_cli(home.path(), cwd.path(), &["again.tar.gz"]).await;
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("read only"), "{stderr}");
    assert!(!cwd.path().join("again.tar.gz").exists());
    app.shutdown().await;
}
