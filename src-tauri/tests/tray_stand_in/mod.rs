//! A stand-in desktop tray for the tests that need one (tests/window/hidden_start.rs, tests/notify.rs,
//! tests/window/tray_window.rs, benches/tray.rs): a D-Bus connection owning the StatusNotifier
//! watcher's name, which is what the app asks the session bus for before it hides its window
//! ([`switchboard_desktop::tray::tray_is_shown`]), and serving the watcher's interface as a desktop's
//! tray does, so the tray library registers its icon there.
//!
//! Owning the name alone is not enough: libayatana-appindicator then fails to register, and falls
//! back to an XEmbed icon (`GtkStatusIcon`) drawn in the app's own process, which no desktop with
//! a StatusNotifier tray does (its icon's images sat in the window's shared memory and kept it).

use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The StatusNotifier watcher as KDE's and GNOME's trays serve it at `/StatusNotifierWatcher`
/// (freedesktop StatusNotifierItem spec, "StatusNotifierWatcher"): it keeps the items it was
/// told of and says a host (a tray that shows them) is there.
struct Watcher {
    items: Arc<Mutex<Vec<String>>>,
}

#[zbus::interface(name = "org.kde.StatusNotifierWatcher")]
impl Watcher {
    /// `service` is a bus name or, as libayatana-appindicator sends it, an object path on the
    /// caller's connection; the item is recorded as `sender` + path, as the spec's hosts do.
    async fn register_status_notifier_item(
        &mut self,
        service: &str,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(signal_emitter)] emitter: zbus::object_server::SignalEmitter<'_>,
    ) {
        let sender = header.sender().map(|s| s.to_string()).unwrap_or_default();
        let item = if service.starts_with('/') {
            format!("{sender}{service}")
        } else {
            service.to_string()
        };
        self.items.lock().unwrap().push(item.clone());
        let _ = Self::status_notifier_item_registered(&emitter, &item).await;
    }

    fn register_status_notifier_host(&mut self, _service: &str) {}

    #[zbus(signal)]
    async fn status_notifier_item_registered(
        emitter: &zbus::object_server::SignalEmitter<'_>,
        item: &str,
    ) -> zbus::Result<()>;

    #[zbus(property)]
    fn registered_status_notifier_items(&self) -> Vec<String> {
        self.items.lock().unwrap().clone()
    }

    #[zbus(property)]
    fn is_status_notifier_host_registered(&self) -> bool {
        true
    }

    #[zbus(property)]
    fn protocol_version(&self) -> i32 {
        0
    }
}

/// A stand-in desktop tray on the bus at `address`: it owns `org.kde.StatusNotifierWatcher` and
/// serves the watcher until dropped.
pub struct StandInTray {
    _stop: std::sync::mpsc::Sender<()>,
    items: Arc<Mutex<Vec<String>>>,
}

impl StandInTray {
    /// The items registered so far (`:1.42/org/ayatana/NotificationItem/...`), in order.
    #[allow(dead_code)] // not every test binary that shares this module asks
    pub fn registered_items(&self) -> Vec<String> {
        self.items.lock().unwrap().clone()
    }
}

/// Starts a [`StandInTray`] on the bus at `address`; ready when it returns.
pub fn stand_in_tray(address: &str) -> StandInTray {
    let (ready_tx, ready) = std::sync::mpsc::channel();
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    let address = address.to_string();
    let items = Arc::new(Mutex::new(Vec::new()));
    let watcher = Watcher {
        items: Arc::clone(&items),
    };
    std::thread::spawn(move || {
        let conn = zbus::block_on(async {
            zbus::connection::Builder::address(address.as_str())
                .name(switchboard_desktop::tray::STATUS_NOTIFIER_WATCHER)
                .serve_at("/StatusNotifierWatcher", watcher)
                .build()
                .await
                .expect("the stand-in tray owns the watcher's name")
        });
        ready_tx.send(()).unwrap();
        let _ = stopped.recv();
        drop(conn);
    });
    ready
        .recv_timeout(Duration::from_secs(10))
        .expect("the stand-in tray is ready");
    StandInTray { _stop: stop, items }
}
