//! # switchboard-app: the application layer
//!
//! Everything the desktop app does that has nothing to do with Tauri. It may use the crates
//! below it (`switchboard-wire`, `-domain`, `-dials`, `-link`) and must not know Tauri, the
//! control channel (which attaches itself: [`App::attach`]) or any user interface.
//!
//! The shell (`src-tauri/`) builds one [`App`] at start, hands it a [`Host`] (the few things
//! only the shell can do: emit an event to the window, show a desktop notification, set the
//! tray), and turns each IPC command into one call of an `App` method. Tests build the same
//! `App` with a [`RecordingHost`] and plain `cargo test`: no Tauri, no window.
//!
//! ## Layout
//! - [`paths`], [`settings`]: where files live; the settings as the running app holds them.
//! - [`event`]: [`AppEvent`], every event the window listens to, with its name.
//! - [`host`]: the [`Host`] trait and the recording host for tests.
//! - [`phones`]: the Phones view (link status, pairing window, unpair).
//! - [`phone_lines`]: the Phone lines view (sources, registry from settings, revoke).
//! - [`bridge`]: the Bridge view (banners, the explainer for pasted texts).
//! - [`dials`]: the Live dials view (rows, batches, the forwarder, queries, export, import).
//! - [`confirmations`]: the Confirmations view (mirror, autonomy table).
//! - [`run`]: the loops: the link's start (identity, bind, demo phone), the hub applying the
//!   link's events, and [`App::shutdown`].
//! - [`support`]: the app's support-bundle and tray calls (save, preview, open read only,
//!   the tray's summary).
//! - [`bundle`]: what a support bundle holds: collecting, redacting, opening one read only.
//! - [`tray`]: the tray model: counts and entries from plain snapshots, no app state.
//! - [`hub`]: applies what phones mirror (settings, dials, banners, proposals) in one task.
//! - [`sample`]: sample dials and confirmations for looking at the views without a phone.
//!
//! ## Data flow
//! The link's events go straight to the hub's task ([`crate::hub::Hub::run_until`]). Before
//! the hub applies each one, the app's observer updates the Phones view's state; after the
//! hub applied it, the observer receives each notice, in order, synchronously: it shows the
//! phone's phone-line settings, decides desktop notifications and emits the window's events.
//! The hub itself sets each phone's autonomy in the Confirmations mirror. No broadcast channel
//! sits on that path, so nothing is dropped under a burst of dials.
//!
//! Nothing here can approve, reject or cancel anything on a phone.

pub mod allocator;
pub mod autostart;
pub mod bridge;
pub mod bundle;
pub mod change;
pub mod confirmations;
pub mod dials;
pub mod dials_shown;
pub mod event;
pub mod host;
pub mod hub;
pub mod ipc_ts;
pub mod paths;
pub mod phone_lines;
pub mod phones;
pub mod run;
pub mod sample;
pub mod settings;
pub mod support;
pub mod tray;

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use ts_rs::TS;

pub use change::Change;
pub use event::{AppEvent, MenuAction};
pub use host::{Host, HostCall, RecordingHost};
pub use paths::AppPaths;
pub use run::{AppStopping, Attached};

use crate::hub::Hub;
use switchboard_domain::bridge::ExtensionDirectory;
use switchboard_domain::confirmations::ConfirmationMirror;
use switchboard_domain::settings::Settings;
use switchboard_wire::clock::{Clock, SystemClock};
use switchboard_wire::sync::lock;

/// Where the desktop's identity (its key pair and certificate) is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdentityStore {
    /// The OS key store (`keyring`); without one, the link does not start and the Phones view
    /// says what to install or unlock (never a plaintext fallback).
    KeyStore,
    /// A throwaway identity in memory (the demo phone, tests).
    Memory,
}

/// How the app is started.
#[derive(Debug, Clone)]
pub struct AppConfig {
    /// Where files live.
    pub paths: AppPaths,
    /// `--demo`: an embedded demo phone on loopback pairs by itself and plays the demo
    /// scenario; its data lives in `<data>/demo`.
    pub demo: bool,
    /// Where the identity is kept (default: memory for the demo, the OS key store otherwise).
    pub identity: IdentityStore,
    /// The address and port the link listens on (default: loopback and any free port for the
    /// demo, every interface and [`switchboard_link::DEFAULT_PORT`] otherwise).
    pub listen: (IpAddr, u16),
    /// Advertise over mDNS (default: not for the demo).
    pub mdns: bool,
    /// Start the embedded demo phone (default: with `demo`).
    pub demo_phone: bool,
    /// How fast the demo phone plays its script. `None` (the default): as
    /// `SWITCHBOARD_DEMO_RATE` says, else at its recorded times (about two and a half
    /// minutes). Tests that replay the whole demo set it rather than the process's environment.
    pub demo_rate: Option<switchboard_link::phone::player::Rate>,
    /// The folder of the rotating log files, when file logging is on (shown in Settings).
    pub log_dir: Option<PathBuf>,
    /// The wall clock every part of the app reads (the hub, the dial log, revoke's
    /// `decidedAt`, banners' times). Default [`SystemClock`].
    pub clock: Arc<dyn Clock>,
    /// The key store [`IdentityStore::KeyStore`] uses instead of the OS one (`keyring`), for
    /// tests of a store that is locked, or goes away, while the app runs. Default `None`.
    pub key_store: Option<KeyStoreOverride>,
    /// How often, while the link runs, the app checks that the key store still answers
    /// ([`IdentityStore::KeyStore`] only; also checked whenever the pairing window opens).
    /// Default [`run::KEY_STORE_CHECK_EVERY`] (30 s).
    pub key_store_check_every: std::time::Duration,
    /// Start on login ([`autostart::Autostart`]): where the entry goes and what it starts.
    /// `None` (the default, and always with the demo phone) leaves any entry alone and the
    /// Settings view shows the setting as unavailable.
    pub autostart: Option<autostart::Autostart>,
    /// How long [`App::shutdown`] may take in all before what is left is abandoned. Default
    /// [`run::SHUTDOWN_BUDGET`] (2 s: what a person quitting, or a session ending, waits for).
    /// Tests give a bound only a hang can break: a slow or loaded machine (a test run under
    /// wine beside two compilers) is not a failure of the order the shutdown keeps.
    pub shutdown_budget: std::time::Duration,
}

/// A [`SecretStore`](switchboard_link::secret_store::SecretStore) standing in for the OS key store
/// ([`AppConfig::key_store`]).
#[derive(Clone)]
pub struct KeyStoreOverride(pub Arc<dyn switchboard_link::secret_store::SecretStore>);

impl std::fmt::Debug for KeyStoreOverride {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeyStoreOverride(..)")
    }
}

impl AppConfig {
    /// The defaults for `paths`, with or without the demo phone.
    pub fn new(paths: AppPaths, demo: bool) -> Self {
        use std::net::Ipv4Addr;
        Self {
            paths,
            demo,
            identity: if demo {
                IdentityStore::Memory
            } else {
                IdentityStore::KeyStore
            },
            listen: if demo {
                (IpAddr::V4(Ipv4Addr::LOCALHOST), 0)
            } else {
                (
                    IpAddr::V4(Ipv4Addr::UNSPECIFIED),
                    switchboard_link::DEFAULT_PORT,
                )
            },
            mdns: !demo,
            demo_phone: demo,
            demo_rate: None,
            log_dir: None,
            clock: Arc::new(SystemClock),
            key_store: None,
            key_store_check_every: run::KEY_STORE_CHECK_EVERY,
            autostart: None,
            shutdown_budget: run::SHUTDOWN_BUDGET,
        }
    }
}

/// Where the app keeps its files and what went wrong loading them, for the Settings view.
#[derive(Debug, Clone, Serialize, TS)]
#[ts(export)]
pub struct Diagnostics {
    /// The settings file's path.
    pub settings_file: String,
    /// The data folder (trust file, dial history).
    pub data_dir: String,
    /// The folder of rotating log files, when file logging is on.
    pub log_dir: Option<String>,
    /// Why the settings file could not be read at start, if it could not.
    pub settings_load_error: Option<String>,
    /// The start-on-login entry (an XDG autostart file, a LaunchAgent's plist, or the Windows
    /// Run key's value), when the setting is available here; `None` with the demo phone and on
    /// other systems.
    pub autostart_entry: Option<String>,
}

/// The running application (see the module docs). Shared as `Arc<App>`.
pub struct App {
    /// How it was started.
    pub config: AppConfig,
    /// The person's settings.
    pub settings: settings::SettingsState,
    /// The Phones view's state.
    pub phones: phones::PhonesState,
    /// The Phone lines view's state.
    pub phone_lines: phone_lines::PhoneLinesState,
    /// The Bridge view's state (shared with the hub).
    pub bridge: bridge::BridgeState,
    /// The Confirmations view's state (shared with the hub).
    pub confirmations: confirmations::ConfirmationsState,
    /// The Live dials view's state; `None` when even the in-memory dial log could not start.
    dials: Option<dials::DialsState>,
    host: Arc<dyn Host>,
    /// The support bundle opened for reading, if any: while it is, the views show it and
    /// nothing can be changed ([`App::change`]).
    viewing: Mutex<Option<Arc<crate::bundle::open::OpenedBundle>>>,
    hub: Mutex<Option<Hub>>,
    rt: tokio::runtime::Handle,
    running: run::Running,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Refreshes the tray and tells the views (the phones event, which moves the glance line)
/// whenever the dial history's disk fills up or has room again: the writer finds out on its
/// own thread and says so through [`DialLogHandle::disk_full_changes`], so nothing wakes while
/// the disk is fine. Ends with the app (or at once for a history kept in memory only).
///
/// [`DialLogHandle::disk_full_changes`]: switchboard_dials::DialLogHandle::disk_full_changes
fn watch_storage(app: &Arc<App>) {
    let Some(mut changes) = app.dials.as_ref().and_then(|d| d.log.disk_full_changes()) else {
        return;
    };
    let weak = Arc::downgrade(app);
    app.rt.spawn(async move {
        while changes.changed().await.is_ok() {
            let Some(app) = weak.upgrade() else { return };
            app.refresh_tray();
            app.host.emit(&AppEvent::Phones);
        }
    });
}

impl App {
    /// Makes the app's folders private ([`AppPaths::make_private`]), loads the settings, starts
    /// the dial log on `rt` (its SQLite file in the link's folder;
    /// in memory only, with the reason kept, when the file cannot be opened) and builds the
    /// views' state over `mirror` (the bundled tool catalogue's, or sample data). The link is
    /// started with [`App::start_link`].
    pub fn new(
        config: AppConfig,
        host: Arc<dyn Host>,
        rt: tokio::runtime::Handle,
        mirror: ConfirmationMirror,
    ) -> Arc<Self> {
        for problem in config.paths.make_private(config.demo) {
            tracing::warn!("{problem}");
        }
        let settings = settings::SettingsState::load(&config.paths);
        let capacity = settings.get().dial_ring_capacity as usize;
        let dials_dir = config.paths.link_dir(config.demo);
        let dials = match dials::DialsState::start(&rt, &dials_dir, capacity, &config.clock) {
            Ok(d) => Some(d),
            Err(e) => {
                tracing::error!("the dial log did not start: {e}");
                None
            }
        };
        let app = Arc::new(Self {
            phones: phones::PhonesState::new(config.demo, Arc::clone(&config.clock)),
            phone_lines: phone_lines::PhoneLinesState::new(),
            bridge: bridge::BridgeState::new(),
            confirmations: confirmations::ConfirmationsState::with_history(
                mirror,
                dials_dir.join(switchboard_domain::confirmations::history::HISTORY_FILE),
                config.clock.as_ref(),
            ),
            settings,
            dials,
            host,
            viewing: Mutex::new(None),
            hub: Mutex::new(None),
            rt,
            running: run::Running::default(),
            config,
        });
        watch_storage(&app);
        app
    }

    /// The running hub, once the link is up.
    pub fn hub(&self) -> Option<Hub> {
        lock(&self.hub).clone()
    }

    /// The extension directory the hub judges `device_id`'s call results with (from the
    /// phone's settings); `None` when no hub runs or the phone is unknown to it.
    pub fn extensions_of(&self, device_id: &str) -> Option<ExtensionDirectory> {
        self.hub()?.extensions(device_id)
    }

    /// The host (the shell, or a test's recording host).
    pub fn host(&self) -> &Arc<dyn Host> {
        &self.host
    }

    /// The current settings.
    pub fn get_settings(&self) -> Settings {
        let mut settings = self.settings.get();
        // The entry's presence is the setting (the desktop's own tools may have removed it).
        settings.start_on_login = self
            .config
            .autostart
            .as_ref()
            .is_some_and(autostart::Autostart::is_enabled);
        settings
    }

    /// Validates, saves (atomically) and applies new settings; returns what was saved.
    /// `start_on_login` writes or removes the autostart entry ([`AppConfig::autostart`]); where
    /// start on login is not available, asking for it is an `invalid_input` error and nothing
    /// is saved.
    ///
    /// # Errors
    /// `invalid_input` for an out-of-range value or start on login where it is unavailable,
    /// `io` when the settings file or the autostart entry cannot be written.
    pub(crate) fn save_settings(
        &self,
        settings: Settings,
    ) -> Result<Settings, switchboard_wire::error::IpcError> {
        match &self.config.autostart {
            Some(entry) if entry.is_enabled() != settings.start_on_login => {
                entry
                    .set(settings.start_on_login)
                    .map_err(|e| switchboard_wire::error::IpcError::io(e.to_string()))?;
            }
            Some(_) => {}
            None if settings.start_on_login => {
                return Err(switchboard_wire::error::IpcError::invalid_input(
                    if self.config.demo {
                        "start on login is not available with the demo phone: start Switchboard \
                     without --demo to turn it on"
                    } else {
                        "start on login is not available on this system (Switchboard knows XDG \
                     autostart, macOS LaunchAgents and the Windows Run key)"
                    },
                ));
            }
            None => {}
        }
        self.settings.save(settings)
    }

    /// Where files live and what failed to load.
    pub fn diagnostics(&self) -> Diagnostics {
        Diagnostics {
            settings_file: self.config.paths.settings_file().display().to_string(),
            // With the demo phone, its files are in `<data>/demo`: show where they really are.
            data_dir: self
                .config
                .paths
                .link_dir(self.config.demo)
                .display()
                .to_string(),
            log_dir: self
                .config
                .log_dir
                .as_ref()
                .map(|d| d.display().to_string()),
            settings_load_error: self.settings.load_error.clone(),
            autostart_entry: self
                .config
                .autostart
                .as_ref()
                .map(|a| a.entry.display().to_string()),
        }
    }
}
