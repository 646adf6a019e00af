//! The desktop's end of the ifp/1 link, wired into the app: identity from the OS key store, the
//! listener, and the link's events turned into app events, the tray tooltip and (through the
//! hub) the views.
//!
//! Without `--demo` the identity lives in the OS key store; when there is none the Phones view
//! says what to install or unlock and nothing listens (never a plaintext fallback). With
//! `--demo` the app uses a throwaway in-memory identity and a separate data folder
//! (`<data>/demo`), listens on loopback only, and its demo phone pairs by itself.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Mutex, MutexGuard};

use serde::Serialize;
use switchboard::link::{
    DesktopIdentity, KeyringStore, Link, LinkConfig, LinkDiagnostics, LinkEvent, MemoryStore,
    PairedPhone, PairingInvite,
};
use tauri::{AppHandle, Emitter, Manager, Runtime};
use ts_rs::TS;

use switchboard::link::DEFAULT_PORT;

/// How the app was launched.
#[derive(Debug, Clone, Default)]
pub struct LaunchOptions {
    /// `--demo`: an embedded demo phone on loopback pairs by itself and plays the demo scenario.
    pub demo: bool,
}

impl LaunchOptions {
    /// Reads the options from the command line (`--demo`).
    pub fn from_args() -> Self {
        Self {
            demo: std::env::args().any(|a| a == "--demo"),
        }
    }
}

/// One paired phone as the Phones view shows it.
#[derive(Debug, Clone, Serialize, TS)]
#[ts(export)]
pub struct PhoneStatus {
    /// The pairing record (device id, key, label, capabilities, paired at, last seen).
    pub record: PairedPhone,
    /// Connected now.
    pub connected: bool,
    /// The `ip:port` of the live connection, when connected.
    pub address: Option<String>,
    /// The ifp version chosen for the live connection, when connected.
    pub protocol_version: Option<u32>,
    /// Short fingerprint of the pinned key, for comparing with the phone's screen.
    pub key_fingerprint: String,
}

/// The last completed pairing, so both screens can compare the verification code.
#[derive(Debug, Clone, Serialize, TS)]
#[ts(export)]
pub struct PairingResult {
    /// The phone's device id.
    pub device_id: String,
    /// The phone's label.
    pub label: String,
    /// The code both screens show (`123 456`).
    pub verification_code: String,
}

/// Everything the Phones view shows.
#[derive(Debug, Clone, Serialize, TS)]
#[ts(export)]
pub struct PhonesSnapshot {
    /// Running with the built-in demo phone.
    pub demo: bool,
    /// Why the link is not running (no key store, no free port), in words with what to do.
    pub link_error: Option<String>,
    /// The paired phones.
    pub phones: Vec<PhoneStatus>,
    /// The open pairing window, if any.
    pub pairing: Option<PairingInvite>,
    /// The last completed pairing.
    pub last_paired: Option<PairingResult>,
    /// Addresses, port, mDNS, recent failures; `None` while the link is not running.
    pub diagnostics: Option<LinkDiagnostics>,
}

#[derive(Default)]
struct Live {
    /// device id -> (address, version)
    connections: std::collections::HashMap<String, (String, u32)>,
    last_paired: Option<PairingResult>,
    error: Option<String>,
}

/// The link as the shell holds it (managed state).
pub struct LinkState {
    /// The running link, once started.
    link: Mutex<Option<Link>>,
    live: Mutex<Live>,
    /// Launch options.
    pub options: LaunchOptions,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl LinkState {
    /// A link state with nothing running yet.
    pub fn new(options: LaunchOptions) -> Self {
        Self {
            link: Mutex::new(None),
            live: Mutex::new(Live::default()),
            options,
        }
    }

    /// The running link, if any.
    pub fn link(&self) -> Option<Link> {
        lock(&self.link).clone()
    }

    /// What the Phones view shows now.
    pub fn snapshot(&self) -> PhonesSnapshot {
        let link = self.link();
        let live = lock(&self.live);
        let phones = link
            .as_ref()
            .map(|l| {
                l.paired_phones()
                    .into_iter()
                    .map(|record| {
                        let conn = live.connections.get(&record.device_id).cloned();
                        let key_fingerprint = key_fp(&record.public_key);
                        PhoneStatus {
                            connected: conn.is_some(),
                            address: conn.as_ref().map(|c| c.0.clone()),
                            protocol_version: conn.map(|c| c.1),
                            key_fingerprint,
                            record,
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        PhonesSnapshot {
            demo: self.options.demo,
            link_error: live.error.clone(),
            phones,
            pairing: link.as_ref().and_then(|l| l.pairing_invite()),
            last_paired: live.last_paired.clone(),
            diagnostics: link.as_ref().map(|l| l.diagnostics()),
        }
    }

    /// How many phones are connected now.
    pub fn connected_count(&self) -> usize {
        lock(&self.live).connections.len()
    }
}

fn key_fp(public_key_b64: &str) -> String {
    use base64::Engine;
    match base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(public_key_b64) {
        Ok(bytes) => switchboard::link::identity::key_fingerprint(&bytes),
        Err(_) => "unreadable key".to_string(),
    }
}

/// The app event the front end listens to (`switchboard://phones`): the Phones view reloads.
pub const PHONES_EVENT: &str = "switchboard://phones";

/// Starts the link in the background: loads or creates the identity, binds, runs, and pumps
/// its events. Failures are kept for the Phones view, never a crash.
pub fn start<R: Runtime>(app: &AppHandle<R>, data_dir: std::path::PathBuf) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let state = app.state::<LinkState>();
        let demo = state.options.demo;
        let identity = if demo {
            DesktopIdentity::load_or_create(&MemoryStore::new())
        } else {
            DesktopIdentity::load_or_create(&KeyringStore::new())
        };
        let identity = match identity {
            Ok(i) => i,
            Err(e) => {
                tracing::error!("link not started: {e}");
                lock(&state.live).error = Some(e.to_string());
                let _ = app.emit(PHONES_EVENT, ());
                return;
            }
        };
        let dir = if demo {
            data_dir.join("demo")
        } else {
            data_dir
        };
        let (ip, port) = if demo {
            (IpAddr::V4(Ipv4Addr::LOCALHOST), 0)
        } else {
            (IpAddr::V4(Ipv4Addr::UNSPECIFIED), DEFAULT_PORT)
        };
        let dir_for_demo = dir.clone();
        let mut config = LinkConfig::new(dir);
        config.mdns = !demo;
        let (link, mut events) = match Link::new(identity, config) {
            Ok(x) => x,
            Err(e) => {
                tracing::error!("link not started: {e}");
                lock(&state.live).error = Some(e.to_string());
                let _ = app.emit(PHONES_EVENT, ());
                return;
            }
        };
        let listener = match switchboard::link::bind(ip, port).await {
            Ok(l) => l,
            Err(e) => {
                tracing::error!("link not started: {e}");
                lock(&state.live).error = Some(format!(
                    "{e}. Close the other program using these ports, or restart Switchboard."
                ));
                let _ = app.emit(PHONES_EVENT, ());
                return;
            }
        };
        let run = link.run(listener, std::future::pending::<()>());
        *lock(&state.link) = Some(link.clone());
        tauri::async_runtime::spawn(async move {
            if let Err(e) = run.await {
                tracing::error!("link stopped: {e}");
            }
        });
        tracing::info!(addr = ?link.local_addr(), demo, "link listening");
        let hub = crate::hub::start(&app, link.clone());
        let _ = app.emit(PHONES_EVENT, ());
        if demo {
            let options = switchboard::phone::demo::DemoOptions::new(dir_for_demo);
            let demo_link = link.clone();
            tauri::async_runtime::spawn(async move {
                match switchboard::phone::demo::run_demo_phone(&demo_link, options).await {
                    Ok(report) => tracing::info!(?report, "demo scenario played"),
                    Err(e) => tracing::error!("demo phone stopped: {e}"),
                }
            });
        }
        // Apply events as they come; when the queue runs dry, acknowledge what was applied
        // (`control.ack`, docs/protocol.md), as `Hub::run` does.
        while let Some(event) = events.recv().await {
            on_event(&app, &state, &event);
            hub.apply(event).await;
            let mut burst = 0u32;
            while burst < 1024 {
                match events.try_recv() {
                    Ok(e) => {
                        on_event(&app, &state, &e);
                        hub.apply(e).await;
                        burst += 1;
                    }
                    Err(_) => break,
                }
            }
            hub.flush_acks();
        }
    });
}

fn on_event<R: Runtime>(app: &AppHandle<R>, state: &LinkState, event: &LinkEvent) {
    let mut changed = true;
    match event {
        LinkEvent::PhoneConnected {
            device_id,
            address,
            version,
            ..
        } => {
            lock(&state.live)
                .connections
                .insert(device_id.clone(), (address.clone(), *version));
        }
        LinkEvent::PhoneDisconnected { device_id, .. } | LinkEvent::Unpaired { device_id } => {
            lock(&state.live).connections.remove(device_id);
        }
        LinkEvent::Paired {
            device_id,
            label,
            verification_code,
        } => {
            lock(&state.live).last_paired = Some(PairingResult {
                device_id: device_id.clone(),
                label: label.clone(),
                verification_code: verification_code.clone(),
            });
        }
        LinkEvent::PairingCodeReplaced(_) | LinkEvent::Failure(_) => {}
        _ => changed = false,
    }
    if changed {
        crate::tray::set_connected(app, state.connected_count());
        let _ = app.emit(PHONES_EVENT, ());
    }
}
