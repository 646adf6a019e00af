//! Desktop notifications against a private D-Bus: a stand-in `org.freedesktop.Notifications`
//! (a small zbus object) records what Switchboard sends; with no service on the bus the
//! notifier reports `no_service` and never panics.
// The freedesktop notification service and the StatusNotifier tray are D-Bus services of Linux
// desktops (dbus-daemon runs them here); Windows' toasts and macOS' notification centre have
// neither, so nothing in this file could mean anything there.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchboard::confirmations::notify::{
    banner_notification, notification_for, Notification, NotificationKind,
};
use switchboard::confirmations::ConfirmationMirror;
use switchboard::ifp::{validate, Receiver};
use switchboard::settings::NotificationSettings;
use switchboard_desktop::notify::{Notifier, NotifyError, NotifyStatus, APP_NAME};
use zbus::OwnedVariant;

mod tray_stand_in;
use tray_stand_in::stand_in_tray;

/// DBUS_SESSION_BUS_ADDRESS is process-wide: one test at a time.
static BUS: Mutex<()> = Mutex::new(());

/// A private session bus (`dbus-daemon --session --print-address=1 --nofork`), killed on drop.
struct PrivateBus {
    child: Child,
    address: String,
}

impl PrivateBus {
    fn start() -> Self {
        let mut child = Command::new("dbus-daemon")
            .args(["--session", "--print-address=1", "--nofork"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("dbus-daemon runs");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let address = line.trim().to_string();
        assert!(address.starts_with("unix:"), "bus address {address:?}");
        std::env::set_var("DBUS_SESSION_BUS_ADDRESS", &address);
        Self { child, address }
    }
}

impl Drop for PrivateBus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

type Sent = Arc<Mutex<Vec<(String, String, String)>>>;

struct StandIn {
    sent: Sent,
}

#[zbus::interface(name = "org.freedesktop.Notifications")]
impl StandIn {
    #[allow(clippy::too_many_arguments)]
    fn notify(
        &self,
        app_name: String,
        _replaces_id: u32,
        _app_icon: String,
        summary: String,
        body: String,
        _actions: Vec<String>,
        _hints: HashMap<String, OwnedVariant>,
        _expire_timeout: i32,
    ) -> u32 {
        let mut sent = self.sent.lock().unwrap();
        sent.push((app_name, summary, body));
        u32::try_from(sent.len()).unwrap()
    }

    fn get_capabilities(&self) -> Vec<String> {
        vec!["body".into()]
    }

    fn get_server_information(&self) -> (String, String, String, String) {
        (
            "stand-in".into(),
            "switchboard-tests".into(),
            "1".into(),
            "1.2".into(),
        )
    }
}

/// Serves the stand-in on `address` from its own thread; returns what it records.
fn serve(address: &str) -> Sent {
    let sent: Sent = Arc::default();
    let (tx, rx) = std::sync::mpsc::channel();
    let address = address.to_string();
    let recorder = StandIn {
        sent: Arc::clone(&sent),
    };
    std::thread::spawn(move || {
        zbus::block_on(async move {
            let conn = zbus::connection::Builder::address(address.as_str())
                .name("org.freedesktop.Notifications")
                .serve_at("/org/freedesktop/Notifications", recorder)
                .build()
                .await
                .expect("stand-in serves on the private bus");
            tx.send(()).unwrap();
            std::future::pending::<()>().await;
            drop(conn);
        });
    });
    rx.recv_timeout(Duration::from_secs(10))
        .expect("stand-in ready");
    sent
}

fn corpus_changes() -> Vec<switchboard::confirmations::MirrorChange> {
    let doc: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../shared/corpus/ifp1/fixtures/sequences.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let sc = doc["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "action_lifecycle_approve_execute")
        .unwrap();
    let mut rx = Receiver::new(3);
    let mut m = ConfirmationMirror::with_bundled_catalogue();
    let mut out = Vec::new();
    for step in sc["steps"].as_array().unwrap() {
        let env = validate(&step["give"]).unwrap();
        let o = rx.receive_at_ts(&env);
        out.extend(m.apply("Ada's Pixel", &env, &o, 0));
    }
    out
}

#[test]
fn notifications_reach_the_desktop_service_with_app_name_title_and_body() {
    let _g = BUS.lock().unwrap_or_else(|p| p.into_inner());
    let bus = PrivateBus::start();
    let sent = serve(&bus.address);
    let notifier = Notifier::new();
    let settings = NotificationSettings::default();
    let texts: Vec<Notification> = corpus_changes()
        .iter()
        .filter_map(|c| notification_for(c, &settings))
        .chain(banner_notification(
            "LumiRealm is not answering its phone line",
            &settings,
        ))
        .collect();
    assert_eq!(texts.len(), 3);
    for n in &texts {
        notifier.show(n).unwrap();
    }
    assert_eq!(notifier.status(), NotifyStatus::Working);
    let got = sent.lock().unwrap().clone();
    assert_eq!(
        got,
        vec![
            (
                APP_NAME.to_string(),
                "Confirm on your phone".to_string(),
                "Ada's Pixel asks you to confirm: Send an SMS message to a phone number. Confirm on the phone.".to_string()
            ),
            (
                APP_NAME.to_string(),
                "Confirmation ended".to_string(),
                "Send an SMS message to a phone number: done on the phone".to_string()
            ),
            (
                APP_NAME.to_string(),
                "Bridge status".to_string(),
                "LumiRealm is not answering its phone line".to_string()
            ),
        ]
    );
    assert_eq!(texts[2].kind, NotificationKind::Banner);
}

#[test]
fn no_notification_service_is_reported_not_a_crash_and_recovers() {
    let _g = BUS.lock().unwrap_or_else(|p| p.into_inner());
    let bus = PrivateBus::start();
    let notifier = Arc::new(Notifier::new());
    assert_eq!(notifier.status(), NotifyStatus::Untried);
    let n = banner_notification("x", &NotificationSettings::default()).unwrap();
    for _ in 0..2 {
        let err = notifier.show(&n).unwrap_err();
        assert!(matches!(err, NotifyError::ServiceUnknown(_)), "{err:?}");
        assert!(err.to_string().contains("no notification service"), "{err}");
    }
    assert!(matches!(notifier.status(), NotifyStatus::NoService { .. }));
    assert!(notifier
        .status_text()
        .contains("No notification service is running"));
    // Once a service appears, notifications work again.
    let sent = serve(&bus.address);
    notifier.show(&n).unwrap();
    assert_eq!(notifier.status(), NotifyStatus::Working);
    assert_eq!(sent.lock().unwrap().len(), 1);
}

#[test]
fn no_session_bus_at_all_is_a_failure_status_not_a_panic() {
    let _g = BUS.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    std::env::set_var(
        "DBUS_SESSION_BUS_ADDRESS",
        format!("unix:path={}", dir.path().join("no-bus").display()),
    );
    let notifier = Notifier::new();
    let n = banner_notification("x", &NotificationSettings::default()).unwrap();
    let err = notifier.show(&n).unwrap_err();
    assert!(matches!(err, NotifyError::Failed(_)), "{err:?}");
    assert!(matches!(notifier.status(), NotifyStatus::Failed { .. }));
}

/// Closing the window keeps the app running only where a tray shows its icon: with no
/// StatusNotifier watcher on the session bus (vanilla GNOME, a bare window manager: the icon is
/// created and nobody shows it) the close button quits instead of hiding the app out of reach;
/// once a tray owns the watcher's name, closing hides the window again.
#[test]
fn closing_hides_to_the_tray_only_where_a_tray_shows_the_icon() {
    use switchboard_desktop::tray;
    let _one = BUS.lock().unwrap_or_else(|e| e.into_inner());
    let bus = PrivateBus::start();
    assert_eq!(tray::watcher_on_bus(Some(&bus.address)), Ok(false));
    assert!(!tray::tray_is_shown(), "no watcher on the session bus");
    assert!(!tray::close_keeps_running(true, true, tray::tray_is_shown));

    let tray_owner = stand_in_tray(&bus.address);
    assert_eq!(tray::watcher_on_bus(Some(&bus.address)), Ok(true));
    assert!(tray::tray_is_shown());
    assert!(tray::close_keeps_running(true, true, tray::tray_is_shown));
    // The setting off, or no icon: closing quits, and the bus is not even asked.
    assert!(!tray::close_keeps_running(false, true, || unreachable!()));
    assert!(!tray::close_keeps_running(true, false, || unreachable!()));
    drop(tray_owner);
}
