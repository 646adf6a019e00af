//! A stand-in desktop tray for the tests that need one (tests/window/hidden_start.rs, tests/notify.rs):
//! a D-Bus connection owning the StatusNotifier watcher's name, which is what the app asks the
//! session bus for before it hides its window ([`switchboard_desktop::tray::tray_is_shown`]).

use std::time::Duration;

/// A stand-in desktop tray on the bus at `address`: a connection owning
/// `org.kde.StatusNotifierWatcher` until the returned sender is dropped.
pub fn stand_in_tray(address: &str) -> std::sync::mpsc::Sender<()> {
    let (ready_tx, ready) = std::sync::mpsc::channel();
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    let address = address.to_string();
    std::thread::spawn(move || {
        let conn = zbus::block_on(async {
            zbus::connection::Builder::address(address.as_str())
                .name(switchboard_desktop::tray::STATUS_NOTIFIER_WATCHER)
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
    stop
}
