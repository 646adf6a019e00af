//! The hub: where the desktop applies what its paired phones mirror.
//!
//! Why: the link delivers validated ifp/1 messages ([`LinkEvent::Message`]); something must turn
//! them into the desktop's state — phone-line settings and summaries, the dial log, the bridge
//! banners, autonomy per runtime session, and the Confirmations mirror — exactly once each,
//! even when a phone reconnects and replays what it was not sure had arrived. The hub is that
//! place. The desktop shell owns one and forwards its [`HubNotice`]s to the windows.
//!
//! Spec: `ifp1-notes.md` ("Events: dedup, generation fence, ordering", "Action lifecycle"),
//! `phone-line.md` ("Discovery and pairing", "Failure modes and the bridge banner"),
//! `openphone-runtime-protocol.md` ("Autonomy"), and `docs/protocol.md`, "Phone-line events",
//! "Action messages" and "Acknowledgement and replay".
//!
//! ## Per phone, per message
//! - `event.*`: through the phone's ifp/1 [`Receiver`] first (dedup key, generation fence,
//!   `seq` order). A duplicate is acknowledged and changes nothing; a refused event is answered
//!   with an ifp/1 `error` (its class, `parent` = the event's id) and changes nothing. An accepted
//!   event is typed ([`PhoneEvent`]) and applied:
//!   - settings: kept as the phone's latest; phone-line summaries recomputed with
//!     [`summarize`]; the extensions' declared permissions feed the banner judgement; each
//!     line's last `describe` raises or clears the phone's banner on the describe path
//!     (`lumiagent` → `<line>.phoneline`) as a dial of that path does, once (a repeated
//!     snapshot, or a describe older than the path's latest result, changes nothing);
//!   - dial: converted with [`DialEvent::to_dial`] and ingested into the [`DialLogHandle`] (which
//!     dedups by dial id again, so a dial is never counted twice even across desktop restarts).
//!     Dials read by the link in one pass arrive as [`LinkEvent::Dials`] with the record already
//!     built ([`switchboard_domain::phone_events::DialFrame`]); the receiver's event rules are applied to
//!     their fields ([`Receiver::receive_event_fields`]) with the same outcomes;
//!     a failed dial goes to [`BridgeStatusStore::record_failure`] (a permission error raises a
//!     banner), an `ok` dial to [`BridgeStatusStore::record_success`] (clears the path's banner);
//!     banners are the phone's own (keyed by its device id and the path);
//!   - bridge status: the same, for a probe read or a permission change;
//!   - autonomy: kept per runtime session.
//! - `action.*`: forwarded by the phone as it saw them. A message id already applied is a replay
//!   and is skipped; otherwise the [`Receiver`] judges it (lifecycle, expiry by the message's
//!   own `ts`, binding) and the (message, outcome) pair is fed to the Confirmations mirror when
//!   one is given ([`HubParts::confirmations`]); the hub follows each proposal's state only for
//!   its notices (waiting, ended). A refused action message is answered with an ifp/1 `error`.
//!   **The hub never approves, rejects or cancels anything**: it has no way to send an
//!   `action.*` message ([`switchboard_wire::ifp::OutgoingMessage`] cannot express one).
//! - Every applied message moves the phone's acknowledgement point; the hub takes a point every
//!   [`ACK_EVERY`] messages and when the link's event queue runs dry ([`Hub::run`]), and sends
//!   `control.ack {last_id, applied}` for it once every dial before it is durable (committed to
//!   SQLite; `transient` ones and a log in memory only: held), and the newest such point when
//!   the phone connects: acknowledged means durable (`acks.rs`).
//!
//! ## Files
//! This file keeps the [`Hub`], its [`HubParts`], the per-phone state, [`Hub::run`] and the
//! events that are neither dials nor bridge results (settings, autonomy). One concept a file:
//! `dials.rs` (dials into the dial log, in batches), `bridge.rs` (results into the bridge-status
//! store, banner notices), `actions.rs` (`action.*` messages into the Confirmations mirror),
//! `acks.rs` (what is acknowledged to the phone, and when), `requests.rs` (what the desktop asks
//! of a phone), `view.rs` (the notices and the per-phone view).
//!
//! ## Locking
//! The hub's own state is behind one `std` mutex, never held across an `.await`; the bridge store
//! is the shared `Arc<Mutex<BridgeStatusStore>>` the shell also reads.

mod acks;
mod actions;
mod bridge;
mod dials;
mod expiry;
mod generations;
mod observer;
mod requests;
mod view;

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use tokio::sync::{broadcast, mpsc};

pub use acks::{ACK_EVERY, MAX_WAITING_ACKS};
pub use actions::{MAX_PROPOSALS, MAX_SEEN_IDS};
pub use bridge::{describe_path, DESCRIBE_CALLER};
pub use dials::MAX_DIAL_BATCH;
pub use expiry::EXPIRY_TICK;
pub use generations::GENERATIONS_FILE;
pub use observer::HubObserver;
pub use requests::HubError;
pub use view::{HubNotice, PhoneView, SessionAutonomy};

use actions::ProposalRecord;
use switchboard_dials::{DialLogHandle, Retention};
use switchboard_domain::bridge::store::BridgeStatusStore;
use switchboard_domain::bridge::{ExtensionDirectory, ExtensionManifest};
use switchboard_domain::confirmations::ConfirmationMirror;
use switchboard_domain::phone_events::{
    timestamp_ms, BridgeEvent, DialEvent, PhoneEvent, PhoneEventError, PhoneSettings,
};
use switchboard_domain::phone_line::summary::{summarize, DialResult, PhoneLineSummary};
use switchboard_domain::runtime::autonomy::Autonomy;
use switchboard_link::{Link, LinkEvent};
use switchboard_wire::ifp::{Envelope, Outcome, Receiver, Verdict};

/// Most problems (refused or unreadable messages) kept per phone, in words.
pub const MAX_PROBLEMS: usize = 64;

/// The components a [`Hub`] feeds, shared with the shell's views.
#[derive(Clone)]
pub struct HubParts {
    /// The dial log every dial goes to.
    pub dials: DialLogHandle,
    /// The bridge-status store banners are raised in and cleared from.
    pub bridge: Arc<Mutex<BridgeStatusStore>>,
    /// The link acknowledgements, refusals and desktop requests are sent through (`None`: the
    /// hub only applies, e.g. in tests that feed events by hand).
    pub link: Option<Link>,
    /// The Confirmations mirror every applied `action.*` message (with its receiver outcome) is
    /// fed to, shared with the Confirmations view; `None`: action messages are still judged,
    /// answered and acknowledged, and the proposal notices sent, but nothing keeps them.
    pub confirmations: Option<Arc<Mutex<ConfirmationMirror>>>,
    /// The mirror's revision last written to the file it is kept in across restarts
    /// ([`ConfirmationMirror::kept_revision`];
    /// `crate::confirmations::ConfirmationsState::saved_watch`).
    /// With it, an acknowledgement point also waits until the mirror as it was when the point
    /// was taken is written (acknowledged means durable: `acks.rs`). `None` (the default): the
    /// mirror is kept in memory only and its messages are acknowledged once applied.
    pub confirmations_saved: Option<tokio::sync::watch::Receiver<u64>>,
    /// The receivers' home generation (ifp/1 generation fence), >= 1. Default 1.
    pub home_generation: u64,
    /// Capacity of the notice channel; a subscriber that falls further behind misses notices
    /// (it gets `Lagged`) and should re-read the state. Default 1024.
    pub notice_capacity: usize,
    /// Hears every link event before it is applied and every notice after, in order and
    /// without loss ([`HubObserver`]); the app layer's way to follow the hub.
    pub observer: Option<Arc<dyn HubObserver>>,
    /// The wall clock proposals are judged at in the Confirmations mirror (expiry shown
    /// against it, and waiting proposals ended at their `expires_at`: `expiry.rs`). Default
    /// [`SystemClock`](switchboard_wire::clock::SystemClock).
    pub clock: Arc<dyn switchboard_wire::clock::Clock>,
    /// Where the highest generation accepted from each phone is kept across restarts (the
    /// generation fence, `generations.rs`; normally [`GENERATIONS_FILE`] in the link's data
    /// folder). `None`: in memory only. Default `None`.
    pub generations_file: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for HubParts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubParts")
            .field("home_generation", &self.home_generation)
            .field("notice_capacity", &self.notice_capacity)
            .field("observer", &self.observer.is_some())
            .finish_non_exhaustive()
    }
}

impl HubParts {
    /// Parts with the defaults (no Confirmations mirror, `home_generation` 1, 1024 notices).
    pub fn new(
        dials: DialLogHandle,
        bridge: Arc<Mutex<BridgeStatusStore>>,
        link: Option<Link>,
    ) -> Self {
        HubParts {
            dials,
            bridge,
            link,
            confirmations: None,
            confirmations_saved: None,
            home_generation: 1,
            notice_capacity: 1024,
            observer: None,
            clock: Arc::new(switchboard_wire::clock::SystemClock),
            generations_file: None,
        }
    }
}

#[derive(Debug)]
struct PhoneState {
    label: String,
    connected: bool,
    address: Option<String>,
    receiver: Receiver,
    seen_ids: HashSet<String>,
    seen_order: VecDeque<String>,
    applied: u64,
    last_id: Option<String>,
    /// Messages applied since the last ack point was taken.
    unacked: u64,
    /// Ack points waiting for their dials to be durable, oldest first (`acks.rs`).
    waiting_acks: VecDeque<acks::AckPoint>,
    /// The newest ack point released (durable): sent again when the phone connects, and when
    /// the phone resends something already taken in (`reack`).
    durable_ack: Option<(String, u64)>,
    /// A message this run had already taken in came again since the last acknowledgement: the
    /// newest acknowledgement is repeated (it covers it), so a phone resending applied
    /// messages gets them acknowledged without the point going back (`acks.rs`).
    reack: bool,
    settings: Option<PhoneSettings>,
    settings_at: Option<String>,
    summaries: Vec<PhoneLineSummary>,
    /// Shared: every failed dial is judged with it (a clone a dial was a map's worth of copies).
    directory: Arc<ExtensionDirectory>,
    autonomy: BTreeMap<String, Autonomy>,
    proposals: Vec<ProposalRecord>,
    dials_held: u64,
    problems: VecDeque<String>,
}

impl PhoneState {
    fn new(home_generation: u64) -> Self {
        PhoneState {
            label: String::new(),
            connected: false,
            address: None,
            receiver: Receiver::new(home_generation.max(1)),
            seen_ids: HashSet::new(),
            seen_order: VecDeque::new(),
            applied: 0,
            last_id: None,
            unacked: 0,
            waiting_acks: VecDeque::new(),
            durable_ack: None,
            reack: false,
            settings: None,
            settings_at: None,
            summaries: Vec::new(),
            directory: Arc::new(switchboard_domain::bridge::explain::builtin_directory().clone()),
            autonomy: BTreeMap::new(),
            proposals: Vec::new(),
            dials_held: 0,
            problems: VecDeque::new(),
        }
    }

    /// Counts message `id` as taken in (applied, or refused with an `error`): the first time
    /// this run sees it. `applied` and the acknowledgement point move only here, so a resent
    /// message changes neither and acknowledgements never go back (`acks.rs`).
    fn took(&mut self, id: &str) {
        self.applied = self.applied.saturating_add(1);
        // The same buffer each time: every message of a phone passes here.
        match &mut self.last_id {
            Some(last) => {
                last.clear();
                last.push_str(id);
            }
            None => self.last_id = Some(id.to_string()),
        }
        self.unacked = self.unacked.saturating_add(1);
    }

    fn problem(&mut self, words: String) {
        if self.problems.len() >= MAX_PROBLEMS {
            self.problems.pop_front();
        }
        self.problems.push_back(words);
    }

    fn view(&self, device_id: &str) -> PhoneView {
        PhoneView {
            device_id: device_id.to_string(),
            label: self.label.clone(),
            connected: self.connected,
            address: self.address.clone(),
            applied: self.applied,
            last_applied_id: self.last_id.clone(),
            dials: self.dials_held,
            settings_at: self.settings_at.clone(),
            lines: self.summaries.clone(),
            autonomy: self
                .autonomy
                .iter()
                .map(|(session, autonomy)| SessionAutonomy {
                    session: session.clone(),
                    autonomy: *autonomy,
                })
                .collect(),
            problems: self.problems.iter().cloned().collect(),
        }
    }
}

#[derive(Debug, Default)]
struct HubState {
    phones: BTreeMap<String, PhoneState>,
}

struct Inner {
    dials: DialLogHandle,
    bridge: Arc<Mutex<BridgeStatusStore>>,
    link: Option<Link>,
    confirmations: Option<Arc<Mutex<ConfirmationMirror>>>,
    confirmations_saved: Option<tokio::sync::watch::Receiver<u64>>,
    home_generation: u64,
    generations: Mutex<generations::Generations>,
    state: Mutex<HubState>,
    notices: broadcast::Sender<HubNotice>,
    observer: Option<Arc<dyn HubObserver>>,
    clock: Arc<dyn switchboard_wire::clock::Clock>,
    /// Notices waiting for the observer (raised under the state lock, delivered outside it).
    undelivered: Mutex<Vec<HubNotice>>,
}

/// The desktop's hub (cheap to clone; clones share one state). See the module docs.
#[derive(Clone)]
pub struct Hub {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("home_generation", &self.inner.home_generation)
            .finish_non_exhaustive()
    }
}

use switchboard_wire::sync::lock;

/// What to do after the state lock is released.
enum After {
    Nothing,
    Dial {
        dial: Box<DialEvent>,
        session: String,
        retention: Retention,
    },
    Bridge(BridgeEvent, u64),
    /// The `describe` results of a settings snapshot, into the bridge-status store.
    Describes(Vec<switchboard_domain::phone_events::LineSettings>),
}

impl Hub {
    /// A hub over `parts`, with no phone known yet.
    pub fn new(parts: HubParts) -> Self {
        let (notices, _) = broadcast::channel(parts.notice_capacity.max(1));
        Hub {
            inner: Arc::new(Inner {
                dials: parts.dials,
                bridge: parts.bridge,
                link: parts.link,
                confirmations: parts.confirmations,
                confirmations_saved: parts.confirmations_saved,
                home_generation: parts.home_generation.max(1),
                generations: Mutex::new(generations::Generations::load(parts.generations_file)),
                state: Mutex::new(HubState::default()),
                notices,
                observer: parts.observer,
                clock: parts.clock,
                undelivered: Mutex::new(Vec::new()),
            }),
        }
    }

    /// A receiver of the hub's notices (phone connected, settings updated, banner raised, ...).
    pub fn subscribe(&self) -> broadcast::Receiver<HubNotice> {
        self.inner.notices.subscribe()
    }

    /// The shared bridge-status store.
    pub fn bridge(&self) -> &Arc<Mutex<BridgeStatusStore>> {
        &self.inner.bridge
    }

    /// The dial log.
    pub fn dials(&self) -> &DialLogHandle {
        &self.inner.dials
    }

    /// Applies link events until the channel closes. An acknowledgement point is taken every
    /// [`ACK_EVERY`] messages and whenever the queue runs dry, and sent once the dials before it
    /// are durable (the dial log's watermark is watched here; module `acks.rs`).
    ///
    /// Consecutive dials are handed to the dial log in batches (at most [`MAX_DIAL_BATCH`]): a
    /// batch goes before any other event is applied, before an acknowledgement point is taken
    /// (an acknowledged dial is always durable) and when the queue runs dry, so the effects
    /// happen in the order the events came, as with [`Hub::apply`] one by one.
    pub async fn run(self, link_events: mpsc::UnboundedReceiver<LinkEvent>) {
        self.run_until(link_events, std::future::pending::<()>())
            .await;
    }

    /// [`Hub::run`] until the channel closes or `stop` completes; then it stops taking new
    /// events, applies those already queued, flushes its dials and acknowledgements, and
    /// returns. The observer ([`HubParts::observer`]) hears each event before it is applied
    /// and each notice after.
    pub async fn run_until(
        self,
        mut link_events: mpsc::UnboundedReceiver<LinkEvent>,
        stop: impl std::future::Future<Output = ()>,
    ) {
        let mut pending = Vec::new();
        tokio::pin!(stop);
        let mut stopping = false;
        // Acknowledgements wait for the dial log's durable watermark (`acks.rs`).
        let mut durable = self.inner.dials.durable_watch();
        let mut watching = true;
        // ... and for the Confirmations mirror to be written, when it is kept in a file.
        let mut saved = self.inner.confirmations_saved.clone();
        let mut watching_saved = saved.is_some();
        let mut expiry = tokio::time::interval(EXPIRY_TICK);
        expiry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let event = if stopping {
                link_events.recv().await
            } else {
                tokio::select! {
                    e = link_events.recv() => e,
                    _ = expiry.tick() => {
                        self.expire_proposals();
                        self.deliver();
                        continue;
                    }
                    moved = durable.changed(), if watching => {
                        // An error: the log is gone, nothing more becomes durable.
                        watching = moved.is_ok();
                        self.release_acks();
                        continue;
                    }
                    moved = async {
                        match saved.as_mut() {
                            Some(s) => s.changed().await,
                            None => std::future::pending().await,
                        }
                    }, if watching_saved => {
                        watching_saved = moved.is_ok();
                        self.release_acks();
                        continue;
                    }
                    () = &mut stop => {
                        stopping = true;
                        // No new events; what is queued is still received below.
                        link_events.close();
                        continue;
                    }
                }
            };
            let Some(event) = event else { break };
            self.observe_and_apply(event, &mut pending).await;
            let mut burst = 0u32;
            while burst < 1024 {
                match link_events.try_recv() {
                    Ok(e) => {
                        self.observe_and_apply(e, &mut pending).await;
                        burst += 1;
                    }
                    Err(_) => break,
                }
            }
            self.flush_dials(&mut pending).await;
            self.deliver();
            self.flush_acks();
        }
        self.flush_dials(&mut pending).await;
        self.deliver();
        self.flush_acks();
    }

    async fn observe_and_apply(&self, event: LinkEvent, pending: &mut Vec<dials::PendingDial>) {
        if let Some(o) = &self.inner.observer {
            o.link_event(&event);
        }
        self.apply_deferring(event, pending).await;
        self.deliver();
    }

    /// Hands the notices raised so far to the observer, oldest first (outside every lock).
    fn deliver(&self) {
        let Some(o) = &self.inner.observer else {
            return;
        };
        loop {
            let batch = std::mem::take(&mut *lock(&self.inner.undelivered));
            if batch.is_empty() {
                return;
            }
            for n in &batch {
                o.notice(self, n);
            }
        }
    }

    /// Puts a connection event (connected, disconnected, pairing, unpaired) in the dial log's
    /// timeline; other link events are not connection events.
    fn record_connection(&self, event: &LinkEvent) {
        use switchboard_dials::{ConnectionEvent, ConnectionKind};
        let (phone, label, kind, detail) = match event {
            LinkEvent::PhoneConnected {
                device_id,
                label,
                address,
                version,
            } => (
                device_id.clone(),
                label.clone(),
                ConnectionKind::Connected,
                format!("hello from {address}, ifp/{version}"),
            ),
            LinkEvent::PhoneDisconnected { device_id, reason } => (
                device_id.clone(),
                self.label_of(device_id),
                ConnectionKind::Disconnected,
                reason.clone(),
            ),
            LinkEvent::Paired {
                device_id,
                label,
                verification_code,
            } => (
                device_id.clone(),
                label.clone(),
                ConnectionKind::Paired,
                format!("paired, verification code {verification_code}"),
            ),
            LinkEvent::PairingPending(p) => (
                p.device_id.clone(),
                p.label.clone(),
                ConnectionKind::PairingPending,
                // Who has confirmed first: it is what tells two such rows apart, and a
                // narrow table cuts the end of the text.
                format!(
                    "{}; verification code {}",
                    match (p.phone_confirmed, p.desktop_confirmed) {
                        (false, false) => "neither side has confirmed yet",
                        (true, false) => "the phone confirmed, the desktop not yet",
                        (false, true) => "the desktop confirmed, the phone not yet",
                        (true, true) => "both sides confirmed",
                    },
                    p.verification_code
                ),
            ),
            LinkEvent::PairingEnded {
                device_id,
                label,
                end,
                ..
            } => (
                device_id.clone(),
                label.clone(),
                ConnectionKind::PairingEnded,
                format!("{end:?}"),
            ),
            LinkEvent::Unpaired { device_id } => (
                device_id.clone(),
                self.label_of(device_id),
                ConnectionKind::Unpaired,
                "unpaired on the desktop".to_owned(),
            ),
            _ => return,
        };
        self.inner.dials.record_connection(ConnectionEvent {
            seq: 0,
            phone,
            label,
            at_ms: self.inner.clock.now_ms_i64(),
            event: kind,
            detail,
        });
    }

    fn label_of(&self, device_id: &str) -> String {
        lock(&self.inner.state)
            .phones
            .get(device_id)
            .map(|p| p.label.clone())
            .unwrap_or_default()
    }

    /// Applies one link event (module docs). Never fails: problems are answered to the phone
    /// with an ifp/1 `error` when it can be, and kept in the phone's `problems`.
    pub async fn apply(&self, event: LinkEvent) {
        self.record_connection(&event);
        match event {
            LinkEvent::PhoneConnected {
                device_id,
                label,
                address,
                ..
            } => {
                let last = {
                    let mut st = lock(&self.inner.state);
                    let p = self.phone_mut(&mut st, &device_id);
                    p.connected = true;
                    p.label.clone_from(&label);
                    p.address = Some(address);
                    // Only what is durable; the rest follows when its dials are.
                    p.durable_ack.clone()
                };
                self.notify(HubNotice::PhoneConnected {
                    device_id: device_id.clone(),
                    label,
                });
                if let Some((last_id, applied)) = last {
                    self.send_ack(&device_id, last_id, applied);
                }
            }
            LinkEvent::PhoneDisconnected { device_id, reason } => {
                // A newer connection of the same phone may already have replaced this one.
                let still = self
                    .inner
                    .link
                    .as_ref()
                    .is_some_and(|l| l.connected().contains(&device_id));
                {
                    let mut st = lock(&self.inner.state);
                    if let Some(p) = st.phones.get_mut(&device_id) {
                        p.connected = still;
                    }
                }
                self.notify(HubNotice::PhoneDisconnected { device_id, reason });
            }
            LinkEvent::Paired {
                device_id, label, ..
            } => {
                let mut st = lock(&self.inner.state);
                let p = self.phone_mut(&mut st, &device_id);
                p.label = label;
            }
            LinkEvent::Unpaired { device_id } => self.unpaired(&device_id),
            LinkEvent::Refused {
                device_id,
                id,
                class,
                detail,
                ..
            } => {
                let due = {
                    let mut st = lock(&self.inner.state);
                    let p = self.phone_mut(&mut st, &device_id);
                    if p.seen_ids.contains(&id) {
                        p.reack = true;
                        false
                    } else {
                        p.remember_id(&id);
                        p.problem(format!("{id} refused ({class}): {detail}"));
                        p.took(&id);
                        p.unacked >= ACK_EVERY
                    }
                };
                if due {
                    self.take_ack_point(&device_id);
                }
            }
            LinkEvent::Message {
                device_id,
                envelope,
                ..
            } => self.apply_message(&device_id, *envelope).await,
            LinkEvent::Dials {
                device_id, frames, ..
            } => {
                let mut pending = Vec::new();
                for frame in frames {
                    self.apply_dial_frame(&device_id, frame, &mut pending).await;
                }
                self.flush_dials(&mut pending).await;
            }
            _ => {}
        }
    }

    fn phone_mut<'a>(&self, st: &'a mut HubState, device_id: &str) -> &'a mut PhoneState {
        st.phones.entry(device_id.to_string()).or_insert_with(|| {
            let kept = lock(&self.inner.generations).get(device_id);
            let mut p = PhoneState::new(self.inner.home_generation.max(kept.unwrap_or(0)));
            self.restore_proposals(device_id, &mut p);
            p
        })
    }

    /// After a message with `generation` was accepted from `device_id`: a generation above the
    /// phone's current one becomes its current one (kept on disk), so older ones are fenced
    /// from now on (`generations.rs`).
    fn raise_generation(&self, device_id: &str, p: &mut PhoneState, generation: Option<u64>) {
        let Some(g) = generation else {
            return;
        };
        if g > p.receiver.home_generation() {
            p.receiver.set_home_generation(g);
            lock(&self.inner.generations).raise(device_id, g);
        }
    }

    /// The phone was unpaired: its generation is forgotten and its waiting proposals end
    /// (`expiry.rs`).
    fn unpaired(&self, device_id: &str) {
        lock(&self.inner.generations).forget(device_id);
        {
            let mut st = lock(&self.inner.state);
            if let Some(p) = st.phones.get_mut(device_id) {
                p.receiver.set_home_generation(self.inner.home_generation);
            }
        }
        self.end_proposals_of(device_id);
    }

    fn notify(&self, notice: HubNotice) {
        if self.inner.observer.is_some() {
            lock(&self.inner.undelivered).push(notice.clone());
        }
        let _ = self.inner.notices.send(notice);
    }

    /// Sends `error` for a refused message (parent = its id), when a link is at hand.
    fn refuse(&self, device_id: &str, env_id: &str, outcome: &Outcome) {
        if let (Some(link), Some(msg)) = (&self.inner.link, outcome.error_message()) {
            if let Err(e) = link.send_reply(device_id, msg, Some(env_id.to_string())) {
                tracing::debug!("hub could not answer {env_id} of {device_id}: {e}");
            }
        }
    }

    async fn apply_message(&self, device_id: &str, env: Envelope) {
        let after = self.apply_message_state(device_id, &env);
        self.apply_after(device_id, after).await;
        if self.ack_due(device_id) {
            self.take_ack_point(device_id);
        }
    }

    /// The part of applying a message done under the state lock; returns what is left to do.
    fn apply_message_state(&self, device_id: &str, env: &Envelope) -> After {
        let mut st = lock(&self.inner.state);
        let p = self.phone_mut(&mut st, device_id);
        if p.seen_ids.contains(&env.id) {
            // Sent again: this run already took it in (refused, an action message, another
            // type). Nothing changes, nothing is counted, the acknowledgement does not move
            // (it is repeated).
            p.reack = true;
            return After::Nothing;
        }
        let (after, new) = if env.r#type.starts_with("action.") {
            self.apply_action(device_id, p, env);
            (After::Nothing, true)
        } else if env.is_event() {
            self.apply_event(device_id, p, env)
        } else {
            p.remember_id(&env.id);
            (After::Nothing, true)
        };
        if new {
            p.took(&env.id);
        } else {
            p.reack = true;
        }
        after
    }

    async fn apply_after(&self, device_id: &str, after: After) {
        match after {
            After::Nothing => {}
            After::Dial {
                dial,
                session,
                retention,
            } => self.apply_dial(device_id, &dial, &session, retention).await,
            After::Bridge(b, at_ms) => self.apply_bridge(device_id, &b, at_ms),
            After::Describes(lines) => self.apply_describes(device_id, &lines),
        }
    }

    /// Applies an event; also says whether it was new (taken in for the first time this run:
    /// accepted or refused) rather than a duplicate by its `dedup` key.
    fn apply_event(&self, device_id: &str, p: &mut PhoneState, env: &Envelope) -> (After, bool) {
        let outcome = p.receiver.receive_at_ts(env);
        match outcome.verdict {
            Verdict::AcknowledgedDuplicate => {
                let dedup = env.payload.get("dedup").and_then(serde_json::Value::as_str);
                if dedup.is_some_and(|d| p.receiver.is_resend(env.session.as_deref(), d, &env.id)) {
                    // The same event sent again: the acknowledgement covering it is repeated.
                    return (After::Nothing, false);
                }
                // Another message repeating an event's dedup key: it changes nothing and is
                // acknowledged by its own id like any new message (the event it repeats was
                // taken in before it); its id is kept so that its own resends are recognised.
                p.remember_id(&env.id);
                return (After::Nothing, true);
            }
            Verdict::Rejected => {
                p.problem(format!(
                    "{} {} refused: {}",
                    env.r#type,
                    env.id,
                    outcome.reason.clone().unwrap_or_default()
                ));
                p.remember_id(&env.id);
                self.refuse(device_id, &env.id, &outcome);
                return (After::Nothing, true);
            }
            Verdict::Accepted => self.raise_generation(device_id, p, env.generation),
        }
        (self.apply_accepted_event(device_id, p, env), true)
    }

    fn apply_accepted_event(&self, device_id: &str, p: &mut PhoneState, env: &Envelope) -> After {
        let typed = match PhoneEvent::from_envelope(env) {
            Ok(t) => t,
            Err(PhoneEventError::NotPhoneEvent(_)) => return After::Nothing,
            Err(e) => {
                let words = e.to_string();
                p.problem(format!("{} unreadable: {words}", env.id));
                p.remember_id(&env.id);
                let refusal = Outcome::from_rejection(switchboard_wire::ifp::Rejection::invalid(
                    words.clone(),
                ));
                self.refuse(device_id, &env.id, &refusal);
                self.notify(HubNotice::EventRefused {
                    device_id: device_id.to_string(),
                    message_id: env.id.clone(),
                    detail: words,
                });
                return After::Nothing;
            }
        };
        match typed {
            PhoneEvent::Settings(s) => {
                let described: Vec<_> = s
                    .lines
                    .iter()
                    .filter(|l| l.last_describe.is_some())
                    .cloned()
                    .collect();
                self.apply_settings(p, *s, env.ts.as_str());
                self.notify(HubNotice::SettingsUpdated {
                    device_id: device_id.to_string(),
                    lines: p.summaries.len() as u64,
                });
                // Judged after the lock is released, with the directory these settings gave.
                After::Describes(described)
            }
            PhoneEvent::Dial(d) => After::Dial {
                dial: d,
                session: env.session.clone().unwrap_or_default(),
                retention: env
                    .labels
                    .map(|l| l.retention)
                    .unwrap_or(Retention::Standard),
            },
            PhoneEvent::Bridge(b) => After::Bridge(b, ts_ms(env)),
            PhoneEvent::Autonomy(a) => {
                p.autonomy.insert(a.session.clone(), a.autonomy);
                // The session's level goes beside its proposals; the Confirmations table
                // shows the phone's latest session level.
                if let Some(mirror) = &self.inner.confirmations {
                    let at = self.inner.clock.now_ms_i64();
                    let changed =
                        lock(mirror).set_session_autonomy(device_id, &a.session, a.autonomy, at);
                    for view in changed {
                        self.notify(HubNotice::ConfirmationChanged {
                            device_id: device_id.to_string(),
                            change: Box::new(switchboard_domain::confirmations::MirrorChange {
                                kind: switchboard_domain::confirmations::ChangeKind::Noted,
                                confirmation: Some(view),
                                anomaly: None,
                            }),
                        });
                    }
                }
                self.notify(HubNotice::AutonomyChanged {
                    device_id: device_id.to_string(),
                    session: a.session,
                    autonomy: a.autonomy,
                });
                After::Nothing
            }
        }
    }

    fn apply_settings(&self, p: &mut PhoneState, s: PhoneSettings, at: &str) {
        let describes: Vec<DialResult> = s
            .lines
            .iter()
            .filter_map(|l| {
                l.last_describe.as_ref().map(|d| DialResult {
                    namespace: l.identifier.clone(),
                    outcome: d.outcome.clone(),
                })
            })
            .collect();
        p.summaries = summarize(&s.registry, s.pairings.as_ref(), &describes);
        if let Some(reason) = &s.pairings_treated_as_empty {
            for line in &mut p.summaries {
                line.warnings.push(format!(
                    "LumiAgent treats the phone's pairings file as empty because {reason}: no pairing record is read from it"
                ));
            }
        }
        let mut dir = ExtensionDirectory::new();
        for l in &s.lines {
            if let Some(perms) = &l.permissions {
                dir.add_manifest(ExtensionManifest {
                    identifier: l.identifier.clone(),
                    name: l.name.clone(),
                    permissions: perms.clone(),
                });
            }
        }
        p.directory = Arc::new(switchboard_domain::bridge::explain::with_builtin(dir));
        p.settings = Some(s);
        p.settings_at = Some(at.to_string());
    }

    /// Every phone the hub has heard of, by device id.
    pub fn phones(&self) -> Vec<PhoneView> {
        let st = lock(&self.inner.state);
        st.phones.iter().map(|(d, p)| p.view(d)).collect()
    }

    /// The extension directory `device_id`'s call results are judged with (the declared
    /// permissions from its latest settings over the built-in LumiAgent and LumiRealm
    /// manifests, [`switchboard_domain::bridge::explain::with_builtin`]; the built-in ones before any
    /// settings); `None` for a phone the hub has not heard of.
    pub fn extensions(&self, device_id: &str) -> Option<ExtensionDirectory> {
        let st = lock(&self.inner.state);
        st.phones.get(device_id).map(|p| (*p.directory).clone())
    }

    /// One phone's state, if the hub has heard of it.
    pub fn phone(&self, device_id: &str) -> Option<PhoneView> {
        let st = lock(&self.inner.state);
        st.phones.get(device_id).map(|p| p.view(device_id))
    }

    /// The phone's latest phone-line settings snapshot, typed.
    pub fn settings(&self, device_id: &str) -> Option<PhoneSettings> {
        let st = lock(&self.inner.state);
        st.phones.get(device_id).and_then(|p| p.settings.clone())
    }
}

/// Epoch ms of the envelope's `ts` (0 before 1970).
fn ts_ms(env: &Envelope) -> u64 {
    u64::try_from(timestamp_ms(&env.ts)).unwrap_or(0)
}
