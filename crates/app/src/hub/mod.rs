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
//! This file keeps the [`Hub`], its [`HubParts`], the per-phone state and what the hub answers
//! about phones. One concept a file: `run.rs` (the loop: events in order, dials batched,
//! acknowledgements taken), `link_events.rs` (what the link says about a phone: connections,
//! pairing, refusals; the timeline's connection rows), `messages.rs` (ifp/1 messages taken in
//! once, and the events that are neither dials nor bridge results: settings, autonomy),
//! `dials.rs` (dials into the dial log, in batches), `bridge.rs` (results into the bridge-status
//! store, banner notices), `actions.rs` (`action.*` messages into the Confirmations mirror),
//! `acks.rs` (what is acknowledged to the phone, and when), `expiry.rs` (waiting proposals
//! ended at their `expires_at`), `generations.rs` (the generation fence kept across restarts),
//! `requests.rs` (what the desktop asks of a phone), `view.rs` (the notices and the per-phone
//! view).
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
mod link_events;
mod messages;
mod observer;
mod requests;
mod run;
mod view;

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;

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
use switchboard_domain::bridge::ExtensionDirectory;
use switchboard_domain::confirmations::ConfirmationMirror;
use switchboard_domain::phone_events::{BridgeEvent, DialEvent, PhoneSettings};
use switchboard_domain::phone_line::summary::PhoneLineSummary;
use switchboard_domain::runtime::autonomy::Autonomy;
#[cfg(doc)]
use switchboard_domain::{phone_events::PhoneEvent, phone_line::summary::summarize};
use switchboard_link::Link;
#[cfg(doc)]
use switchboard_link::LinkEvent;
use switchboard_wire::clock::Clock;
use switchboard_wire::ifp::{Outcome, Receiver};

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
    /// against it, and waiting proposals ended at their `expires_at`: `expiry.rs`) and
    /// connection rows are stamped with: the app's one clock, handed in to [`HubParts::new`]
    /// (a `ManualClock` in tests), so every part of the app agrees on the time.
    pub clock: Arc<dyn Clock>,
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
    /// Parts with the defaults (no Confirmations mirror, `home_generation` 1, 1024 notices),
    /// judging time by `clock` (the app's one clock; [`HubParts::clock`]).
    pub fn new(
        dials: DialLogHandle,
        bridge: Arc<Mutex<BridgeStatusStore>>,
        link: Option<Link>,
        clock: Arc<dyn Clock>,
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
            clock,
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
    clock: Arc<dyn Clock>,
    /// Notices waiting for the observer (raised under the state lock, delivered outside it).
    undelivered: Mutex<Vec<HubNotice>>,
    /// Wakes [`Hub::run`] for notices raised outside it (a phone unpaired ends its waiting
    /// proposals from the person's call), so it needs no timer of its own to deliver them.
    wake: tokio::sync::Notify,
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
                wake: tokio::sync::Notify::new(),
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

    fn notify(&self, notice: HubNotice) {
        if self.inner.observer.is_some() {
            lock(&self.inner.undelivered).push(notice.clone());
            self.inner.wake.notify_one();
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
