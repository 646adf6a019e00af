//! The app's loops: starting the link (identity, bind, demo phone), the hub applying the link's
//! events with the app's observer beside it, and the one [`App::shutdown`] every way out calls.
//!
//! Start: the identity comes from the OS key store (or memory for the demo and tests); when
//! there is none, or the port is taken, the reason is kept for the Phones view, never a crash.
//!
//! Shutdown (tray Quit, window close, SIGTERM/SIGINT, session end), within
//! [`SHUTDOWN_BUDGET`]: stop accepting and close every link with a close frame (the link's
//! shutdown), wait for the link's connections to end so no event is still on its way, let the
//! hub apply what is queued and flush its dials and acknowledgements, keep the ended
//! confirmations for the next start, then flush and stop the dial log. Calling it again does
//! nothing.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::event::AppEvent;
use super::phones::PhonesChange;
use super::App;
use crate::hub::{Hub, HubNotice, HubObserver, HubParts};
use switchboard_domain::confirmations::notify::{
    banner_notification, notification_for, BannerNotices,
};
use switchboard_link::{DesktopIdentity, KeyringStore, Link, LinkConfig, LinkEvent, MemoryStore};
use switchboard_wire::sync::lock;

/// How long [`App::shutdown`] may take in all by default (2 s; [`crate::AppConfig::shutdown_budget`]).
pub const SHUTDOWN_BUDGET: Duration = Duration::from_secs(2);

/// The running loops' handles and stop signals.
#[derive(Debug)]
pub(super) struct Running {
    link_stop: watch::Sender<bool>,
    hub_stop: watch::Sender<bool>,
    tasks: Mutex<Tasks>,
    shut: AtomicBool,
    /// The services adapters attached ([`App::attach`]), by name.
    attached: Mutex<Vec<(&'static str, Arc<dyn Attached>)>>,
}

#[derive(Debug, Default)]
struct Tasks {
    link: Option<JoinHandle<()>>,
    hub: Option<JoinHandle<()>>,
    demo: Option<JoinHandle<()>>,
}

impl Default for Running {
    fn default() -> Self {
        Self {
            link_stop: watch::channel(false).0,
            hub_stop: watch::channel(false).0,
            tasks: Mutex::new(Tasks::default()),
            shut: AtomicBool::new(false),
            attached: Mutex::new(Vec::new()),
        }
    }
}

/// Resolves once `stop` is set (or its sender is gone).
async fn stopped(mut stop: watch::Receiver<bool>) {
    while !*stop.borrow_and_update() {
        if stop.changed().await.is_err() {
            return;
        }
    }
}

/// A service an adapter runs beside the app and attaches to it ([`App::attach`]): the app
/// knows only how to stop it, never what it serves, so the layers above (the control channel)
/// depend on the app and never the other way round.
pub trait Attached: Send + Sync + std::fmt::Debug {
    /// Stops serving within `within` and releases what it holds (a socket file, a pipe).
    fn stop(&self, within: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
}

/// [`App::attach`] after [`App::shutdown`] began.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the app is stopping")]
pub struct AppStopping;

/// What [`App::shutdown`] did, for the log and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShutdownReport {
    /// It had already run (nothing was done this time).
    pub already: bool,
    /// Every step finished within [`SHUTDOWN_BUDGET`].
    pub in_time: bool,
    /// How long it took, in milliseconds.
    pub took_ms: u64,
}

/// The app's side of the hub: keeps the Phones view current and turns notices into window
/// events and desktop notifications, synchronously and in order (see the module docs).
struct Observer {
    app: Weak<App>,
    /// Which raised banners notify (a flapping banner notifies once per quiet period).
    banner_notices: std::sync::Mutex<BannerNotices>,
    /// The bridge store's [`changes`](switchboard_domain::bridge::store::BridgeStatusStore::changes)
    /// the window was last told of.
    bridge_seen: std::sync::atomic::AtomicU64,
}

impl HubObserver for Observer {
    fn link_event(&self, event: &LinkEvent) {
        let Some(app) = self.app.upgrade() else {
            return;
        };
        if let PhonesChange::Changed { .. } = app.phones.on_link_event(event) {
            app.refresh_tray();
            app.host.emit(&AppEvent::Phones);
        }
        // An unpaired phone's settings are not shown any more (the trust file is already
        // written when the event comes): the Phone lines view moves to a phone still paired.
        if matches!(event, LinkEvent::Unpaired { .. }) && app.phone_lines_follow_phones() {
            app.host.emit(&AppEvent::PhoneLines);
        }
    }

    fn notice(&self, hub: &Hub, notice: &HubNotice) {
        let Some(app) = self.app.upgrade() else {
            return;
        };
        match notice {
            HubNotice::BannerRaised { banner_id, message } => {
                let settings = app.settings.get().notifications;
                if let Some(n) = banner_notification(message, &settings) {
                    let due = switchboard_wire::sync::lock(&self.banner_notices).due(
                        banner_id,
                        message,
                        std::time::Instant::now(),
                    );
                    if due {
                        app.host.notify(n);
                    }
                }
            }
            HubNotice::ConfirmationChanged { change, .. } => {
                let settings = app.settings.get().notifications;
                // The mirror keys proposals by device id; the person knows the phone by the
                // name it was paired under, as the Confirmations view shows it.
                let mut named = change.clone();
                if let Some(c) = named.confirmation.as_mut() {
                    if let Some(label) = app.phones.label_of(&c.phone) {
                        c.phone = label;
                    }
                }
                if let Some(n) = notification_for(&named, &settings) {
                    app.host.notify(n);
                }
                app.keep_confirmation_history();
                app.host.emit(&AppEvent::Confirmations);
            }
            // The hub has set the level in the mirror; the view reloads.
            HubNotice::AutonomyChanged { .. } => app.host.emit(&AppEvent::Confirmations),
            // Lapsed proposals: the view reloads once, no desktop notification (`expiry.rs`).
            HubNotice::ProposalsLapsed { .. } => {
                app.keep_confirmation_history();
                app.host.emit(&AppEvent::Confirmations)
            }
            HubNotice::SettingsUpdated { device_id, .. } => {
                if let Some(view) = hub.phone(device_id) {
                    app.phone_lines_on_settings(device_id, view.lines);
                    app.host.emit(&AppEvent::PhoneLines);
                }
            }
            _ => {}
        }
        // The tray counts banners and waiting confirmations: a notice that may move either
        // refreshes it (dial counts and refusals do not).
        if matches!(
            notice,
            HubNotice::BannerRaised { .. }
                | HubNotice::BannerCleared { .. }
                | HubNotice::ConfirmationChanged { .. }
                | HubNotice::ProposalWaiting { .. }
                | HubNotice::ProposalEnded { .. }
                | HubNotice::ProposalsLapsed { .. }
        ) {
            app.refresh_tray();
        }
        // The Bridge status view reads again when what it shows changed: the notices that come
        // from call results (a banner seen again, a failure that raises none, change nothing
        // else the window hears of).
        if matches!(
            notice,
            HubNotice::DialCount { .. }
                | HubNotice::BannerRaised { .. }
                | HubNotice::BannerCleared { .. }
                | HubNotice::SettingsUpdated { .. }
        ) {
            let now = app.bridge.lock_store().changes();
            if self.bridge_seen.swap(now, Ordering::Relaxed) != now {
                app.host.emit(&AppEvent::Bridge);
            }
        }
        app.host.emit(&AppEvent::Notice(notice.clone()));
    }
}

/// The first wait before the link's start is tried again after the key store failed.
pub const KEY_STORE_RETRY_FIRST: Duration = Duration::from_secs(1);
/// The longest wait between two tries.
pub const KEY_STORE_RETRY_MAX: Duration = Duration::from_secs(30);
/// How many times the start is tried (about an hour and a half at the longest wait).
pub const KEY_STORE_RETRIES: u32 = 180;

/// How often the running app checks that the OS key store still answers (30 s).
pub const KEY_STORE_CHECK_EVERY: Duration = Duration::from_secs(30);

/// The Phones view's words when the key store stopped answering while the link runs (`why`:
/// the store's own words).
fn key_store_gone_words(why: &str) -> String {
    format!(
        "The OS key store stopped answering while Switchboard runs: {why} Phones already \
         connected keep working, and Switchboard keeps its keys in memory only, never in a \
         file; but if Switchboard is restarted before the key store is back, the link cannot \
         start. Unlock or start the key store; this message goes away by itself once it \
         answers (checked every {} s and when you pair a phone).",
        KEY_STORE_CHECK_EVERY.as_secs()
    )
}

/// Why the link did not start: the key store (tried again) or anything else (said once).
enum StartError {
    KeyStore(String),
    Other(String),
}

impl App {
    /// Starts the link in the background: loads or creates the identity, binds, runs, starts
    /// the hub over the app's stores and, with the demo, the demo phone. A failure is kept
    /// for the Phones view (which is told to reload), never a crash.
    ///
    /// When the identity cannot be read because the key store is locked or not running, the
    /// Phones view says so and the start is tried again by itself ([`KEY_STORE_RETRY_FIRST`],
    /// doubling to [`KEY_STORE_RETRY_MAX`], at most [`KEY_STORE_RETRIES`] times, until quit):
    /// unlocking the key store brings the link up without a restart. Nothing is ever written
    /// in its place (no plaintext fallback).
    pub fn start_link(self: &Arc<Self>) {
        let app = Arc::clone(self);
        self.rt.spawn(async move {
            let mut stop = app.running.link_stop.subscribe();
            let mut wait = KEY_STORE_RETRY_FIRST;
            for attempt in 1..=KEY_STORE_RETRIES {
                match app.start_link_now().await {
                    Ok(()) => {
                        if attempt > 1 {
                            tracing::info!(attempt, "link started: the key store answered");
                            app.phones.clear_error();
                            app.host.emit(&AppEvent::Phones);
                        }
                        app.watch_key_store().await;
                        return;
                    }
                    Err(StartError::KeyStore(words)) => {
                        if attempt == 1 {
                            tracing::error!("link not started: {words}");
                        }
                        app.phones.set_error(format!(
                            "{words} Switchboard tries again by itself (every {} s at most).",
                            KEY_STORE_RETRY_MAX.as_secs()
                        ));
                        app.host.emit(&AppEvent::Phones);
                    }
                    Err(StartError::Other(words)) => {
                        tracing::error!("link not started: {words}");
                        app.phones.set_error(words);
                        app.host.emit(&AppEvent::Phones);
                        return;
                    }
                }
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = stop.changed() => return,
                }
                wait = (wait * 2).min(KEY_STORE_RETRY_MAX);
            }
        });
    }

    /// While the link runs (until quit): checks every [`AppConfig::key_store_check_every`]
    /// (and when the pairing window opens) that the OS key store still answers and still
    /// holds the identity, by reading it on a blocking thread. What it finds goes to the
    /// Phones view ([`super::phones::PhonesSnapshot::key_store_problem`]), which is told to
    /// reload when that changes. The link is left alone: it runs on the keys in memory.
    /// Nothing for an identity kept in memory.
    ///
    /// [`AppConfig::key_store_check_every`]: super::AppConfig::key_store_check_every
    async fn watch_key_store(self: &Arc<Self>) {
        let store: Arc<dyn switchboard_link::secret_store::SecretStore> =
            match (&self.config.identity, &self.config.key_store) {
                (super::IdentityStore::Memory, _) => return,
                (super::IdentityStore::KeyStore, Some(s)) => Arc::clone(&s.0),
                (super::IdentityStore::KeyStore, None) => Arc::new(KeyringStore::new()),
            };
        let every = self
            .config
            .key_store_check_every
            .max(Duration::from_millis(10));
        let mut stop = self.running.link_stop.subscribe();
        loop {
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = self.phones.check_key_store.notified() => {}
                _ = stopped(stop.clone()) => return,
            }
            let store = Arc::clone(&store);
            let read = tokio::task::spawn_blocking(move || {
                store.get(switchboard_link::identity::IDENTITY_SECRET)
            })
            .await;
            let problem = match read {
                Ok(Ok(Some(_))) => None,
                Ok(Ok(None)) => Some(
                    "The OS key store answers but no longer holds Switchboard's identity (was \
                     it removed?). Phones already connected keep working on the keys Switchboard \
                     holds in memory (never in a file), but a restart would make a new identity \
                     and every phone would have to pair again."
                        .to_string(),
                ),
                Ok(Err(e)) => Some(key_store_gone_words(&e.to_string())),
                Err(e) => Some(key_store_gone_words(&format!("reading it failed ({e})."))),
            };
            if self.phones.set_key_store_problem(problem.clone()) {
                match &problem {
                    Some(words) => tracing::warn!("{words}"),
                    None => tracing::info!("the OS key store answers again"),
                }
                self.host.emit(&AppEvent::Phones);
            }
            if *stop.borrow_and_update() {
                return;
            }
        }
    }

    async fn start_link_now(self: &Arc<Self>) -> Result<(), StartError> {
        let cfg = &self.config;
        let (kind, store) = (cfg.identity, cfg.key_store.clone());
        // On a blocking thread: a locked Secret Service shows its unlock prompt and the read
        // waits for the person's answer, which must not hold one of the runtime's workers.
        let loaded = tokio::task::spawn_blocking(move || match (kind, store) {
            (super::IdentityStore::Memory, _) => {
                DesktopIdentity::load_or_create(&MemoryStore::new())
            }
            (super::IdentityStore::KeyStore, Some(store)) => {
                DesktopIdentity::load_or_create(store.0.as_ref())
            }
            (super::IdentityStore::KeyStore, None) => {
                DesktopIdentity::load_or_create(&KeyringStore::new())
            }
        })
        .await
        .map_err(|e| StartError::Other(format!("reading the desktop's identity failed ({e})")))?;
        let identity = loaded.map_err(|e| match e {
            switchboard_link::identity::IdentityError::KeyStore(_) => {
                StartError::KeyStore(e.to_string())
            }
            other => StartError::Other(other.to_string()),
        })?;
        self.start_link_with(identity).await
    }

    async fn start_link_with(
        self: &Arc<Self>,
        identity: DesktopIdentity,
    ) -> Result<(), StartError> {
        let cfg = &self.config;
        let dir = cfg.paths.link_dir(cfg.demo);
        let mut link_config = LinkConfig::new(dir.clone());
        link_config.mdns = cfg.mdns;
        let (link, events) =
            Link::new(identity, link_config).map_err(|e| StartError::Other(e.to_string()))?;
        let (ip, port) = cfg.listen;
        // A port fixed in Settings (for firewall rules) replaces the range; taken, it is said.
        let choice = match self.settings.get().link_port {
            Some(fixed) => switchboard_link::PortChoice::Fixed(fixed),
            None => switchboard_link::PortChoice::Range(port),
        };
        // The unspecified IPv4 address means "every network": serve IPv6 too (dual stack).
        let any = ip == std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED);
        let bind_ip = if any {
            std::net::IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED)
        } else {
            ip
        };
        let bound = switchboard_link::bind_port(bind_ip, any, choice).map_err(|e| {
            StartError::Other(match e {
                switchboard_link::LinkError::PortTaken { .. } => e.to_string(),
                e => format!(
                    "{e}. Close the other program using these ports, or fix another port in \
                     Settings."
                ),
            })
        })?;
        if !bound.taken.is_empty() {
            tracing::warn!(taken = ?bound.taken, "ports taken by another program; the link uses the next free one");
        }
        link.note_ports_taken(bound.taken);
        let listener = bound.listener;
        let run = link.run(listener, stopped(self.running.link_stop.subscribe()));
        self.phones.set_link(link.clone());
        let link_task = self.rt.spawn(async move {
            if let Err(e) = run.await {
                tracing::error!("link stopped: {e}");
            }
        });
        tracing::info!(addr = ?link.local_addr(), demo = cfg.demo, "link listening");

        let Some(dials) = self.dials.as_ref() else {
            return Err(StartError::Other(
                "the dial log did not start, so phone messages cannot be applied".into(),
            ));
        };
        // The demo phone plays its script again at every start, with action ids of its own
        // each time: what it proposed in an earlier run is superseded by the replay, so it goes
        // before the hub can hear from the phone (other phones' proposals stay).
        let demo_before = cfg
            .demo_phone
            .then(|| switchboard_link::phone::demo::paired_before(&dir))
            .flatten();
        if let Some(id) = &demo_before {
            let forgotten = self.confirmations.lock().forget_phone(id);
            if forgotten > 0 {
                tracing::info!(
                    forgotten,
                    "the demo phone's proposals of its last run give way to its replay"
                );
                self.keep_confirmation_history();
                self.host.emit(&AppEvent::Confirmations);
            }
        }
        let mut parts = HubParts::new(
            dials.log.clone(),
            Arc::clone(&self.bridge.store),
            Some(link.clone()),
            Arc::clone(&cfg.clock),
        );
        parts.confirmations = Some(Arc::clone(&self.confirmations.mirror));
        parts.confirmations_saved = self.confirmations.saved_watch();
        parts.generations_file = Some(dir.join(crate::hub::GENERATIONS_FILE));
        parts.observer = Some(Arc::new(Observer {
            app: Arc::downgrade(self),
            banner_notices: std::sync::Mutex::default(),
            bridge_seen: std::sync::atomic::AtomicU64::new(0),
        }));
        let hub = Hub::new(parts);
        *lock(&self.hub) = Some(hub.clone());
        let hub_task = self.rt.spawn(
            hub.clone()
                .run_until(events, stopped(self.running.hub_stop.subscribe())),
        );
        let demo_task = (cfg.demo_phone).then(|| {
            // The demo identity is new at every start, so a demo phone that paired before pairs
            // again now: that is not news to the person (only its first pairing is shown).
            if let Some(id) = demo_before {
                self.phones.expect_repairing(id);
            }
            let options = demo_options(dir, cfg.demo_rate);
            let demo_link = link.clone();
            self.rt.spawn(async move {
                match switchboard_link::phone::demo::run_demo_phone(&demo_link, options).await {
                    Ok(report) => tracing::info!(?report, "demo scenario played"),
                    Err(e) => tracing::error!("demo phone stopped: {e}"),
                }
            })
        });
        {
            let mut tasks = lock(&self.running.tasks);
            tasks.link = Some(link_task);
            tasks.hub = Some(hub_task);
            tasks.demo = demo_task;
        }
        self.host.emit(&AppEvent::Phones);
        Ok(())
    }

    /// Attaches `service` to the running app under `name` (the control channel the CLI asks
    /// over is one: `switchboard-control`), so [`App::shutdown`] stops it first, within 300 ms,
    /// before anything else: a client is told at once that the app is gone. A service attached
    /// before under the same name is replaced and stopped.
    ///
    /// # Errors
    /// [`AppStopping`] once [`App::shutdown`] has begun (the service is not kept; the caller
    /// stops it).
    pub fn attach(
        &self,
        name: &'static str,
        service: Arc<dyn Attached>,
    ) -> Result<(), AppStopping> {
        if self.is_stopping() {
            return Err(AppStopping);
        }
        let old = {
            let mut attached = lock(&self.running.attached);
            match attached.iter_mut().find(|(n, _)| *n == name) {
                Some(slot) => Some(std::mem::replace(&mut slot.1, service)),
                None => {
                    attached.push((name, service));
                    None
                }
            }
        };
        if let Some(old) = old {
            // Attached twice: the first one stops (the second replaced what it served).
            self.rt
                .spawn(async move { old.stop(Duration::from_millis(500)).await });
        }
        Ok(())
    }

    /// Whether [`App::shutdown`] has begun.
    pub fn is_stopping(&self) -> bool {
        self.running.shut.load(Ordering::SeqCst)
    }

    /// The runtime the app's loops run on, for what an adapter serves beside them.
    pub fn runtime(&self) -> &tokio::runtime::Handle {
        &self.rt
    }

    /// Stops everything in order (module docs), within the budget
    /// ([`crate::AppConfig::shutdown_budget`], [`SHUTDOWN_BUDGET`] by default); what does not
    /// finish in time is logged and abandoned. Safe to call more than once and from any way
    /// out.
    pub async fn shutdown(&self) -> ShutdownReport {
        let started = std::time::Instant::now();
        if self.running.shut.swap(true, Ordering::SeqCst) {
            return ShutdownReport {
                already: true,
                in_time: true,
                took_ms: 0,
            };
        }
        let (link_task, hub_task, demo_task) = {
            let mut t = lock(&self.running.tasks);
            (t.link.take(), t.hub.take(), t.demo.take())
        };
        let deadline = tokio::time::Instant::now() + self.config.shutdown_budget;
        let mut in_time = true;
        // 0. The CLI is told at once that the app is gone (the control socket's file removed).
        let attached = std::mem::take(&mut *lock(&self.running.attached));
        for (_, service) in attached {
            service.stop(Duration::from_millis(300)).await;
        }
        if let Some(demo) = demo_task {
            demo.abort();
        }
        // 1. Stop accepting and close every connection; wait until none is left, so every
        //    event a phone sent is in the hub's queue.
        let _ = self.running.link_stop.send(true);
        if let Some(t) = link_task {
            in_time &= tokio::time::timeout_at(deadline, t).await.is_ok();
        }
        tracing::info!(
            ms = started.elapsed().as_millis() as u64,
            in_time,
            "shutdown: link closed"
        );
        // 2. The hub applies what is queued, flushes its dials and acknowledgements, and ends.
        let _ = self.running.hub_stop.send(true);
        if let Some(t) = hub_task {
            in_time &= tokio::time::timeout_at(deadline, t).await.is_ok();
        }
        tracing::info!(
            ms = started.elapsed().as_millis() as u64,
            in_time,
            "shutdown: hub drained"
        );
        // 3. The waiting and ended confirmations are kept for the next start (what the hub
        //    applied last included).
        //    One small file, written at once.
        self.save_confirmation_history();
        // 4. The dial log commits what it holds and stops.
        if let Some(d) = &self.dials {
            match tokio::time::timeout_at(deadline, d.log.shutdown()).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!("the dial log did not stop cleanly: {e}"),
                Err(_) => in_time = false,
            }
        }
        let took_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        if in_time {
            tracing::info!(took_ms, "Switchboard stopped cleanly");
        } else {
            tracing::warn!(took_ms, "Switchboard's shutdown ran out of time");
        }
        ShutdownReport {
            already: false,
            in_time,
            took_ms,
        }
    }

    /// [`App::shutdown`] from a thread outside the app's runtime (the shell's event loop):
    /// runs it on the runtime and waits for it, a little longer than its budget at most.
    pub fn shutdown_blocking(self: &Arc<Self>) -> Option<ShutdownReport> {
        let (tx, rx) = std::sync::mpsc::channel();
        let app = Arc::clone(self);
        self.rt.spawn(async move {
            let _ = tx.send(app.shutdown().await);
        });
        rx.recv_timeout(self.config.shutdown_budget + Duration::from_millis(500))
            .ok()
    }
}

/// The demo phone's options: the defaults (the scenario once, as recorded), or as
/// `SWITCHBOARD_DEMO_RATE` (`recorded`, `max` or messages per second, `N` or `N/s`) and
/// `SWITCHBOARD_DEMO_REPEAT` (how many times, at least 1) ask, so a measurement can stream at a
/// steady rate for as long as it needs (`docs/performance.md`). A value that does not parse is
/// logged and the default kept. `rate` ([`crate::AppConfig::demo_rate`]) wins over the variable.
fn demo_options(
    dir: std::path::PathBuf,
    rate: Option<switchboard_link::phone::player::Rate>,
) -> switchboard_link::phone::demo::DemoOptions {
    let mut options = switchboard_link::phone::demo::DemoOptions::new(dir);
    if let Some(r) = rate {
        options.rate = r;
    } else if let Ok(rate) = std::env::var("SWITCHBOARD_DEMO_RATE") {
        match rate.trim().parse() {
            Ok(r) => options.rate = r,
            Err(e) => tracing::warn!("SWITCHBOARD_DEMO_RATE not used: {e}"),
        }
    }
    if let Ok(repeat) = std::env::var("SWITCHBOARD_DEMO_REPEAT") {
        match repeat.trim().parse::<u64>() {
            Ok(n) if n >= 1 => options.count = n,
            _ => tracing::warn!(
                "SWITCHBOARD_DEMO_REPEAT not used: {repeat:?} is not a whole number of at least 1"
            ),
        }
    }
    options
}
