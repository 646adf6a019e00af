//! The hub: where the desktop applies what its paired phones mirror.
//!
//! Why: the link delivers validated ifp/1 messages ([`LinkEvent::Message`]); something must turn
//! them into the desktop's state — phone-line settings and summaries, the dial log, the bridge
//! banners, autonomy per runtime session, and the record of every proposal — exactly once each,
//! even when a phone reconnects and replays what it was not sure had arrived. The hub is that
//! place. The desktop shell owns one and forwards its [`HubNotice`]s to the windows.
//!
//! Spec: `ifp1-notes.md` ("Events: dedup, generation fence, ordering", "Action lifecycle"),
//! `phone-line.md` ("Discovery and pairing", "Failure modes and the bridge banner"),
//! `openphone-runtime-protocol.md` ("Autonomy"), and `docs/protocol.md`, "Phone-line events",
//! "Action messages" and "Acknowledgement".
//!
//! ## Per phone, per message
//! - `event.*`: through the phone's ifp/1 [`Receiver`] first (dedup key, generation fence,
//!   `seq` order). A duplicate is acknowledged and changes nothing; a refused event is answered
//!   with an ifp/1 `error` (its class, `parent` = the event's id) and changes nothing. An accepted
//!   event is typed ([`PhoneEvent`]) and applied:
//!   - settings: kept as the phone's latest; phone-line summaries recomputed with
//!     [`summarize`]; the extensions' declared permissions feed the banner judgement;
//!   - dial: converted with [`DialEvent::to_dial`] and ingested into the [`DialLogHandle`] (which
//!     dedups by dial id again, so a dial is never counted twice even across desktop restarts).
//!     Dials read by the link in one pass arrive as [`LinkEvent::Dials`] with the record already
//!     built ([`crate::phone_events::DialFrame`]); the receiver's event rules are applied to
//!     their fields ([`Receiver::receive_event_fields`]) with the same outcomes;
//!     a failed dial goes to [`BridgeStatusStore::record_failure`] (a permission error raises a
//!     banner), an `ok` dial to [`BridgeStatusStore::record_success`] (clears the path's banner);
//!   - bridge status: the same, for a probe read or a permission change;
//!   - autonomy: kept per runtime session.
//! - `action.*`: forwarded by the phone as it saw them. A message id already applied is a replay
//!   and is skipped; otherwise the [`Receiver`] judges it (lifecycle, expiry by the message's
//!   own `ts`, binding) and the (message, outcome) pair is kept in the phone's proposal record
//!   and in [`Hub::action_messages`], and fed to the Confirmations mirror when one is given
//!   ([`HubParts::confirmations`]). A refused action message is
//!   answered with an ifp/1 `error`. **The hub never approves, rejects or cancels anything**: it
//!   has no way to send an `action.*` message ([`crate::ifp::OutgoingMessage`] cannot express
//!   one).
//! - Every applied message moves the phone's acknowledgement point; the hub sends
//!   `control.ack {last_id, applied}` every [`ACK_EVERY`] messages, when the link's event queue
//!   runs dry ([`Hub::run`]) and when the phone connects.
//!
//! ## Locking
//! The hub's own state is behind one `std` mutex, never held across an `.await`; the bridge store
//! is the shared `Arc<Mutex<BridgeStatusStore>>` the shell also reads.

mod observer;
mod view;

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{broadcast, mpsc};

pub use observer::HubObserver;
pub use view::{HubNotice, PhoneView, ProposalStep, ProposalView, SessionAutonomy};

use crate::bridge::store::BridgeStatusStore;
use crate::bridge::{CallPath, ExtensionDirectory, ExtensionManifest};
use crate::confirmations::ConfirmationMirror;
use crate::dials::{DialLogError, DialLogHandle, DialOutcome, IngestVerdict, Retention};
use crate::ifp::outgoing::{ControlAck, DesktopRequest, DesktopRequestKind};
use crate::ifp::payload::{IncomingAction, IncomingMessage};
use crate::ifp::{ActionState, Envelope, Outcome, OutgoingMessage, Receiver, Verdict};
use crate::link::{Link, LinkError, LinkEvent};
use crate::phone_events::{
    timestamp_ms, BridgeEvent, BridgeOutcome, DialEvent, PhoneEvent, PhoneEventError, PhoneSettings,
};
use crate::phone_line::summary::{summarize, DialResult, PhoneLineSummary};
use crate::runtime::autonomy::Autonomy;

/// Send a `control.ack` after this many applied messages from one phone (also sent when the
/// link's queue runs dry and when the phone connects).
pub const ACK_EVERY: u64 = 64;
/// Most message ids remembered per phone for recognising replayed `action.*` messages.
pub const MAX_SEEN_IDS: usize = 16_384;
/// Most proposals kept per phone (oldest finished dropped first).
pub const MAX_PROPOSALS: usize = 1024;
/// Most (message, outcome) pairs kept per phone for the Confirmations mirror.
pub const MAX_ACTION_MESSAGES: usize = 4096;
/// Most problems (refused or unreadable messages) kept per phone, in words.
pub const MAX_PROBLEMS: usize = 64;
/// Most accepted dials [`Hub::run`] hands to the dial log in one message (one round trip to the
/// log per batch instead of per dial).
pub const MAX_DIAL_BATCH: usize = 256;

/// Errors of the hub's desktop-to-phone requests.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HubError {
    /// The hub was built without a link, so it cannot send anything.
    #[error("the hub has no link to send through")]
    NoLink,
    /// The link refused or could not deliver (e.g. the phone is not connected).
    #[error(transparent)]
    Link(#[from] LinkError),
}

impl From<HubError> for crate::error::IpcError {
    fn from(e: HubError) -> Self {
        crate::error::IpcError::new(crate::error::IpcErrorKind::Link, e.to_string())
    }
}

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
    /// fed to, shared with the Confirmations view; `None` keeps only [`Hub::action_messages`].
    pub confirmations: Option<Arc<Mutex<ConfirmationMirror>>>,
    /// The receivers' home generation (ifp/1 generation fence), >= 1. Default 1.
    pub home_generation: u64,
    /// Capacity of the notice channel; a subscriber that falls further behind misses notices
    /// (it gets `Lagged`) and should re-read the state. Default 1024.
    pub notice_capacity: usize,
    /// Hears every link event before it is applied and every notice after, in order and
    /// without loss ([`HubObserver`]); the app layer's way to follow the hub.
    pub observer: Option<Arc<dyn HubObserver>>,
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
            home_generation: 1,
            notice_capacity: 1024,
            observer: None,
        }
    }
}

#[derive(Debug)]
struct ProposalRecord {
    view: ProposalView,
    ended: bool,
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
    unacked: u64,
    settings: Option<PhoneSettings>,
    settings_at: Option<String>,
    summaries: Vec<PhoneLineSummary>,
    directory: ExtensionDirectory,
    autonomy: BTreeMap<String, Autonomy>,
    proposals: Vec<ProposalRecord>,
    action_messages: VecDeque<(Envelope, Outcome)>,
    dials_held: u64,
    dial_duplicates: u64,
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
            settings: None,
            settings_at: None,
            summaries: Vec::new(),
            directory: ExtensionDirectory::new(),
            autonomy: BTreeMap::new(),
            proposals: Vec::new(),
            action_messages: VecDeque::new(),
            dials_held: 0,
            dial_duplicates: 0,
            problems: VecDeque::new(),
        }
    }

    fn remember_id(&mut self, id: &str) {
        if self.seen_ids.insert(id.to_string()) {
            self.seen_order.push_back(id.to_string());
            if self.seen_order.len() > MAX_SEEN_IDS {
                if let Some(old) = self.seen_order.pop_front() {
                    self.seen_ids.remove(&old);
                }
            }
        }
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
            dial_duplicates: self.dial_duplicates,
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
            proposals: self.proposals.iter().map(|p| p.view.clone()).collect(),
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
    home_generation: u64,
    state: Mutex<HubState>,
    notices: broadcast::Sender<HubNotice>,
    observer: Option<Arc<dyn HubObserver>>,
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

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// An accepted dial waiting for its batch to the dial log ([`Hub::run`]).
struct PendingDial {
    note: DialNote,
    record: crate::dials::Dial,
}

/// What the hub still needs of a dial once the dial log has it: the bridge result it implies.
struct DialNote {
    id: Arc<str>,
    caller: Arc<str>,
    endpoint: Arc<str>,
    outcome: DialOutcome,
    error: Option<Arc<str>>,
    /// When the dial ended (epoch ms): its start plus its duration.
    end_ms: u64,
}

impl DialNote {
    fn of(d: &crate::dials::Dial) -> Self {
        DialNote {
            id: Arc::clone(&d.id),
            caller: Arc::clone(&d.caller),
            endpoint: Arc::clone(&d.endpoint),
            outcome: d.outcome,
            error: d.error.clone(),
            end_ms: u64::try_from(d.start_ms)
                .unwrap_or(0)
                .saturating_add(d.duration_ms),
        }
    }
}

/// What to do after the state lock is released.
enum After {
    Nothing,
    Dial {
        dial: Box<DialEvent>,
        retention: Retention,
    },
    Bridge(BridgeEvent, u64),
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
                home_generation: parts.home_generation.max(1),
                state: Mutex::new(HubState::default()),
                notices,
                observer: parts.observer,
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

    /// Applies link events until the channel closes. Acknowledgements go out every
    /// [`ACK_EVERY`] messages and whenever the queue runs dry.
    ///
    /// Consecutive dials are handed to the dial log in batches (at most [`MAX_DIAL_BATCH`]): a
    /// batch goes before any other event is applied, before an acknowledgement is sent (an
    /// acknowledged dial is always held) and when the queue runs dry, so the effects happen in
    /// the order the events came, as with [`Hub::apply`] one by one.
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
        loop {
            let event = if stopping {
                link_events.recv().await
            } else {
                tokio::select! {
                    e = link_events.recv() => e,
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

    async fn observe_and_apply(&self, event: LinkEvent, pending: &mut Vec<PendingDial>) {
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

    /// A dial read in one pass ([`LinkEvent::Dials`]): the receiver rules now, the ingest with the
    /// next batch of `pending`.
    async fn apply_dial_frame(
        &self,
        device_id: &str,
        frame: crate::phone_events::DialFrame,
        pending: &mut Vec<PendingDial>,
    ) {
        let (accepted, ack) = self.apply_dial_frame_state(device_id, frame);
        if let Some(record) = accepted {
            pending.push(PendingDial {
                note: DialNote::of(&record),
                record,
            });
        }
        if pending.len() >= MAX_DIAL_BATCH {
            self.flush_dials(pending).await;
        }
        if let Some((last_id, applied)) = ack {
            self.flush_dials(pending).await;
            self.send_ack(device_id, last_id, applied);
        }
    }

    /// [`Hub::apply`], except that an accepted dial's ingest (and what follows from it) waits in
    /// `pending` for the next [`Hub::flush_dials`]; anything else flushes `pending` first.
    async fn apply_deferring(&self, event: LinkEvent, pending: &mut Vec<PendingDial>) {
        let event = match event {
            LinkEvent::Dials {
                device_id, frames, ..
            } => {
                for frame in frames {
                    self.apply_dial_frame(&device_id, frame, pending).await;
                }
                return;
            }
            other => other,
        };
        let LinkEvent::Message {
            device_id,
            envelope,
            ..
        } = event
        else {
            self.flush_dials(pending).await;
            self.apply(event).await;
            return;
        };
        if envelope.r#type != crate::phone_events::DIAL_EVENT {
            // Its effects may depend on the dials before it (e.g. settings and banners).
            self.flush_dials(pending).await;
        }
        match self.apply_message_state(&device_id, &envelope) {
            After::Dial { dial, retention } => {
                let record = dial.to_dial(&device_id, retention);
                pending.push(PendingDial {
                    note: DialNote::of(&record),
                    record,
                });
                if pending.len() >= MAX_DIAL_BATCH {
                    self.flush_dials(pending).await;
                }
            }
            after => self.apply_after(&device_id, after).await,
        }
        if let Some((last_id, applied)) = self.ack_due(&device_id) {
            self.flush_dials(pending).await;
            self.send_ack(&device_id, last_id, applied);
        }
    }

    /// Hands the waiting dials to the dial log in one batch, then applies what follows from each
    /// verdict, in order.
    async fn flush_dials(&self, pending: &mut Vec<PendingDial>) {
        if pending.is_empty() {
            return;
        }
        let batch = std::mem::take(pending);
        let (records, rest): (Vec<_>, Vec<_>) = batch
            .into_iter()
            .map(|p| {
                // The record's phone is the reporting phone's device id.
                let device_id = Arc::clone(&p.record.phone);
                (p.record, (device_id, p.note))
            })
            .unzip();
        let n = records.len();
        let result = self.inner.dials.ingest_batch(records).await;
        let closed = DialLogError::Closed;
        let verdicts: Vec<Result<&IngestVerdict, &DialLogError>> = match &result {
            Ok(v) if v.len() == n => v.iter().map(Ok).collect(),
            Ok(_) => (0..n).map(|_| Err(&closed)).collect(),
            Err(e) => (0..n).map(|_| Err(e)).collect(),
        };
        // One dial-count notice per phone per batch, with the total after it.
        let mut counted: Vec<(Arc<str>, u64)> = Vec::new();
        for ((device_id, note), verdict) in rest.into_iter().zip(verdicts) {
            if let Some(total) = self.after_ingest(&device_id, &note, verdict) {
                match counted.iter_mut().find(|(d, _)| *d == device_id) {
                    Some(slot) => slot.1 = total,
                    None => counted.push((device_id, total)),
                }
            }
        }
        for (device_id, total) in counted {
            self.notify(HubNotice::DialCount {
                device_id: device_id.to_string(),
                total,
            });
        }
    }

    /// The receiver rules for a dial read in one pass ([`LinkEvent::Dials`]), as
    /// [`Hub::apply_message_state`] applies them to an envelope; the dial when accepted, and
    /// `(last_id, applied)` when an acknowledgement is due ([`Hub::ack_due`]).
    fn apply_dial_frame_state(
        &self,
        device_id: &str,
        frame: crate::phone_events::DialFrame,
    ) -> (Option<crate::dials::Dial>, Option<(String, u64)>) {
        let mut st = lock(&self.inner.state);
        let p = self.phone_mut(&mut st, device_id);
        let outcome = p.receiver.receive_event_fields(
            crate::phone_events::DIAL_EVENT,
            Some(&*frame.session),
            Some(frame.generation),
            frame.seq,
            &frame.dial.id,
        );
        let accepted = match outcome.verdict {
            Verdict::Accepted => Some(frame.dial),
            Verdict::AcknowledgedDuplicate => None,
            Verdict::Rejected => {
                p.problem(format!(
                    "{} {} refused: {}",
                    crate::phone_events::DIAL_EVENT,
                    frame.id,
                    outcome.reason.clone().unwrap_or_default()
                ));
                self.refuse(device_id, &frame.id, &outcome);
                None
            }
        };
        p.applied = p.applied.saturating_add(1);
        p.unacked = p.unacked.saturating_add(1);
        let ack = (p.unacked >= ACK_EVERY).then(|| (frame.id.clone(), p.applied));
        p.last_id = Some(frame.id);
        (accepted, ack)
    }

    /// Applies one link event (module docs). Never fails: problems are answered to the phone
    /// with an ifp/1 `error` when it can be, and kept in the phone's `problems`.
    pub async fn apply(&self, event: LinkEvent) {
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
                    p.unacked = 0;
                    p.last_id.clone().map(|id| (id, p.applied))
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
        st.phones
            .entry(device_id.to_string())
            .or_insert_with(|| PhoneState::new(self.inner.home_generation))
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
        if let Some((last_id, applied)) = self.ack_due(device_id) {
            self.send_ack(device_id, last_id, applied);
        }
    }

    /// The part of applying a message done under the state lock; returns what is left to do.
    fn apply_message_state(&self, device_id: &str, env: &Envelope) -> After {
        let mut st = lock(&self.inner.state);
        let p = self.phone_mut(&mut st, device_id);
        let after = if env.r#type.starts_with("action.") {
            self.apply_action(device_id, p, env);
            After::Nothing
        } else if env.is_event() {
            self.apply_event(device_id, p, env)
        } else {
            After::Nothing
        };
        p.applied = p.applied.saturating_add(1);
        p.last_id = Some(env.id.clone());
        p.unacked = p.unacked.saturating_add(1);
        after
    }

    async fn apply_after(&self, device_id: &str, after: After) {
        match after {
            After::Nothing => {}
            After::Dial { dial, retention } => self.apply_dial(device_id, &dial, retention).await,
            After::Bridge(b, at_ms) => self.apply_bridge(device_id, &b, at_ms),
        }
    }

    /// `(last_id, applied)` when the phone has [`ACK_EVERY`] messages unacknowledged.
    fn ack_due(&self, device_id: &str) -> Option<(String, u64)> {
        let st = lock(&self.inner.state);
        st.phones
            .get(device_id)
            .filter(|p| p.unacked >= ACK_EVERY)
            .and_then(|p| p.last_id.clone().map(|id| (id, p.applied)))
    }

    fn apply_event(&self, device_id: &str, p: &mut PhoneState, env: &Envelope) -> After {
        let outcome = p.receiver.receive_at_ts(env);
        match outcome.verdict {
            Verdict::AcknowledgedDuplicate => return After::Nothing,
            Verdict::Rejected => {
                p.problem(format!(
                    "{} {} refused: {}",
                    env.r#type,
                    env.id,
                    outcome.reason.clone().unwrap_or_default()
                ));
                self.refuse(device_id, &env.id, &outcome);
                return After::Nothing;
            }
            Verdict::Accepted => {}
        }
        let typed = match PhoneEvent::from_envelope(env) {
            Ok(t) => t,
            Err(PhoneEventError::NotPhoneEvent(_)) => return After::Nothing,
            Err(e) => {
                let words = e.to_string();
                p.problem(format!("{} unreadable: {words}", env.id));
                let refusal =
                    Outcome::from_rejection(crate::ifp::Rejection::invalid(words.clone()));
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
                self.apply_settings(p, *s, env.ts.as_str());
                self.notify(HubNotice::SettingsUpdated {
                    device_id: device_id.to_string(),
                    lines: p.summaries.len() as u64,
                });
                After::Nothing
            }
            PhoneEvent::Dial(d) => After::Dial {
                dial: d,
                retention: env
                    .labels
                    .map(|l| l.retention)
                    .unwrap_or(Retention::Standard),
            },
            PhoneEvent::Bridge(b) => After::Bridge(b, ts_ms(env)),
            PhoneEvent::Autonomy(a) => {
                p.autonomy.insert(a.session.clone(), a.autonomy);
                // The Confirmations table shows the phone's latest session level.
                if let Some(mirror) = &self.inner.confirmations {
                    lock(mirror).set_autonomy(device_id, a.autonomy);
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
        p.directory = dir;
        p.settings = Some(s);
        p.settings_at = Some(at.to_string());
    }

    fn apply_action(&self, device_id: &str, p: &mut PhoneState, env: &Envelope) {
        if p.seen_ids.contains(&env.id) {
            // A replay of a message already applied (the phone was not sure it arrived).
            return;
        }
        p.remember_id(&env.id);
        let typed = IncomingMessage::from_envelope(env);
        let outcome = p.receiver.receive_at_ts(env);
        if outcome.verdict == Verdict::Rejected {
            p.problem(format!(
                "{} {} refused: {}",
                env.r#type,
                env.id,
                outcome.reason.clone().unwrap_or_default()
            ));
            self.refuse(device_id, &env.id, &outcome);
        }
        if let Some(mirror) = &self.inner.confirmations {
            let now_ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
                .unwrap_or(0);
            let changes = lock(mirror).apply(device_id, env, &outcome, now_ms);
            for change in changes {
                self.notify(HubNotice::ConfirmationChanged {
                    device_id: device_id.to_string(),
                    change: Box::new(change),
                });
            }
        }
        if p.action_messages.len() >= MAX_ACTION_MESSAGES {
            p.action_messages.pop_front();
        }
        p.action_messages.push_back((env.clone(), outcome.clone()));
        let Ok(IncomingMessage::Action(action)) = typed else {
            return;
        };
        let action_id = action.action_id().to_string();
        let step = ProposalStep {
            message_id: env.id.clone(),
            message_type: env.r#type.clone(),
            ts: env.ts.as_str().to_string(),
            verdict: outcome.verdict,
            error_class: outcome.error_class,
            reason: outcome.reason.clone(),
            state_after: outcome.action_state,
            detail: step_detail(&action, env),
        };
        let idx = p
            .proposals
            .iter()
            .position(|r| r.view.action_id == action_id);
        let idx = match (idx, &action) {
            (Some(i), _) => i,
            (None, IncomingAction::Propose(prop)) => {
                if p.proposals.len() >= MAX_PROPOSALS {
                    let drop = p.proposals.iter().position(|r| r.ended).unwrap_or(0);
                    p.proposals.remove(drop);
                }
                p.proposals.push(ProposalRecord {
                    view: ProposalView {
                        action_id: action_id.clone(),
                        session: env.session.clone(),
                        tool: prop.tool.clone(),
                        risk: prop.risk,
                        reason: prop.reason.clone(),
                        params: serde_json::Value::Object(prop.params.clone()),
                        params_hash: prop.params_hash.clone(),
                        params_hash_matches: outcome.params_hash_matches,
                        expires_at: prop.expires_at.as_str().to_string(),
                        state: outcome.action_state.unwrap_or(ActionState::Requested),
                        steps: Vec::new(),
                    },
                    ended: false,
                });
                if outcome.verdict == Verdict::Accepted {
                    self.notify(HubNotice::ProposalWaiting {
                        device_id: device_id.to_string(),
                        action_id: action_id.clone(),
                        tool: prop.tool.clone(),
                        risk: prop.risk,
                    });
                }
                p.proposals.len() - 1
            }
            (None, _) => return,
        };
        let Some(rec) = p.proposals.get_mut(idx) else {
            return;
        };
        rec.view.steps.push(step);
        if let Some(state) = outcome.action_state {
            rec.view.state = state;
        }
        if rec.view.state.is_terminal() && !rec.ended {
            rec.ended = true;
            self.notify(HubNotice::ProposalEnded {
                device_id: device_id.to_string(),
                action_id,
                state: rec.view.state,
            });
        }
    }

    async fn apply_dial(&self, device_id: &str, dial: &DialEvent, retention: Retention) {
        let record = dial.to_dial(device_id, retention);
        let note = DialNote::of(&record);
        let verdict = self.inner.dials.ingest(record).await;
        if let Some(total) = self.after_ingest(device_id, &note, verdict.as_ref()) {
            self.notify(HubNotice::DialCount {
                device_id: device_id.to_string(),
                total,
            });
        }
    }

    /// What follows from the dial log's verdict on one dial: counts, problems and the bridge
    /// result. Returns the phone's count of held dials when this one was held (the caller sends
    /// the dial-count notice).
    fn after_ingest(
        &self,
        device_id: &str,
        dial: &DialNote,
        verdict: Result<&IngestVerdict, &DialLogError>,
    ) -> Option<u64> {
        let held = match verdict {
            Ok(IngestVerdict::Held) => true,
            Ok(IngestVerdict::Duplicate) => {
                let mut st = lock(&self.inner.state);
                self.phone_mut(&mut st, device_id).dial_duplicates += 1;
                false
            }
            Ok(IngestVerdict::Rejected(why)) => {
                let mut st = lock(&self.inner.state);
                self.phone_mut(&mut st, device_id)
                    .problem(format!("dial {} not kept: {why}", dial.id));
                false
            }
            Err(e) => {
                let mut st = lock(&self.inner.state);
                self.phone_mut(&mut st, device_id)
                    .problem(format!("dial {} not kept: {e}", dial.id));
                false
            }
        };
        if !held {
            return None;
        }
        let total = {
            let mut st = lock(&self.inner.state);
            let p = self.phone_mut(&mut st, device_id);
            p.dials_held += 1;
            p.dials_held
        };
        match dial.outcome {
            DialOutcome::Ok => {
                // A success only retires the path's banner: nothing to do when it has none.
                let has_banner = lock(&self.inner.bridge)
                    .banners()
                    .iter()
                    .any(|b| b.path.caller == *dial.caller && b.path.endpoint == *dial.endpoint);
                if has_banner {
                    let path = CallPath::new(&*dial.caller, &*dial.endpoint);
                    self.bridge_result(device_id, &path, None, dial.end_ms);
                }
            }
            DialOutcome::Error | DialOutcome::TimedOut => {
                let path = CallPath::new(&*dial.caller, &*dial.endpoint);
                let text = dial.error.as_deref().unwrap_or_default();
                self.bridge_result(device_id, &path, Some(text), dial.end_ms);
            }
            // The handler answered: the bridge worked, but a tool error says nothing new.
            DialOutcome::ToolError => {}
        }
        Some(total)
    }

    fn apply_bridge(&self, device_id: &str, b: &BridgeEvent, at_ms: u64) {
        let path = CallPath::new(b.caller.clone(), b.endpoint.clone());
        match b.outcome {
            BridgeOutcome::Ok => self.bridge_result(device_id, &path, None, at_ms),
            BridgeOutcome::Error => {
                let text = b.error.clone().unwrap_or_default();
                self.bridge_result(device_id, &path, Some(&text), at_ms);
            }
        }
    }

    /// Records a bridge result for `path` and tells about banners raised or cleared.
    fn bridge_result(&self, device_id: &str, path: &CallPath, error: Option<&str>, at_ms: u64) {
        // The phone's extension directory (declared permissions) only matters to a failure.
        let dir = match error {
            Some(_) => {
                let st = lock(&self.inner.state);
                st.phones
                    .get(device_id)
                    .map(|p| p.directory.clone())
                    .unwrap_or_default()
            }
            None => Default::default(),
        };
        let (before, after) = {
            let mut store = lock(&self.inner.bridge);
            let before = store.banners().iter().find(|b| b.path == *path).cloned();
            match error {
                Some(text) => {
                    store.record_failure(path, text, at_ms, &dir);
                }
                None => {
                    store.record_success(path, at_ms);
                }
            }
            let after = store.banners().iter().find(|b| b.path == *path).cloned();
            (before, after)
        };
        match (before, after) {
            (None, Some(b)) => self.notify(HubNotice::BannerRaised {
                banner_id: b.id,
                message: b.message,
            }),
            (Some(old), None) => self.notify(HubNotice::BannerCleared { banner_id: old.id }),
            (Some(old), Some(new)) if !old.same_failure(&new) => {
                self.notify(HubNotice::BannerRaised {
                    banner_id: new.id,
                    message: new.message,
                })
            }
            _ => {}
        }
    }

    /// Sends `control.ack`; the phone's unacknowledged count is reset only when the link took it.
    fn send_ack(&self, device_id: &str, last_id: String, applied: u64) {
        let Some(link) = &self.inner.link else {
            return;
        };
        let ack = OutgoingMessage::Ack(ControlAck { last_id, applied });
        match link.send(device_id, ack) {
            Ok(()) => {
                let mut st = lock(&self.inner.state);
                if let Some(p) = st.phones.get_mut(device_id) {
                    p.unacked = 0;
                }
            }
            Err(e) => tracing::debug!("hub could not acknowledge {device_id}: {e}"),
        }
    }

    /// Sends `control.ack` to every phone with messages applied since its last ack (phones not
    /// connected are skipped by the link and acknowledged when they come back).
    pub fn flush_acks(&self) {
        let due: Vec<(String, String, u64)> = {
            let st = lock(&self.inner.state);
            st.phones
                .iter()
                .filter(|(_, p)| p.unacked > 0)
                .filter_map(|(d, p)| p.last_id.clone().map(|id| (d.clone(), id, p.applied)))
                .collect()
        };
        for (device_id, last_id, applied) in due {
            self.send_ack(&device_id, last_id, applied);
        }
    }

    /// Every phone the hub has heard of, by device id.
    pub fn phones(&self) -> Vec<PhoneView> {
        let st = lock(&self.inner.state);
        st.phones.iter().map(|(d, p)| p.view(d)).collect()
    }

    /// The extension directory `device_id`'s call results are judged with (the declared
    /// permissions from its latest settings; empty before any); `None` for a phone the hub has
    /// not heard of.
    pub fn extensions(&self, device_id: &str) -> Option<ExtensionDirectory> {
        let st = lock(&self.inner.state);
        st.phones.get(device_id).map(|p| p.directory.clone())
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

    /// Every `action.*` message applied from the phone with the receiver's outcome, oldest
    /// first (at most [`MAX_ACTION_MESSAGES`]): the feed for the Confirmations mirror.
    pub fn action_messages(&self, device_id: &str) -> Vec<(Envelope, Outcome)> {
        let st = lock(&self.inner.state);
        st.phones
            .get(device_id)
            .map(|p| p.action_messages.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn request(
        &self,
        device_id: &str,
        kind: DesktopRequestKind,
        target: Option<String>,
    ) -> Result<(), HubError> {
        let link = self.inner.link.as_ref().ok_or(HubError::NoLink)?;
        link.send(
            device_id,
            OutgoingMessage::DesktopRequest(DesktopRequest { kind, target }),
        )?;
        Ok(())
    }

    /// Asks the phone to revoke the phone line `identifier` (`desktop.request
    /// revoke_phone_line`). The phone decides; its next settings snapshot shows the result.
    ///
    /// Errors: [`HubError::NoLink`], or the link's (phone not connected).
    pub fn revoke_phone_line(&self, device_id: &str, identifier: &str) -> Result<(), HubError> {
        self.request(
            device_id,
            DesktopRequestKind::RevokePhoneLine,
            Some(identifier.to_string()),
        )
    }

    /// Asks the phone for a fresh settings snapshot (`desktop.request
    /// request_settings_snapshot`).
    ///
    /// Errors: [`HubError::NoLink`], or the link's (phone not connected).
    pub fn request_settings_snapshot(&self, device_id: &str) -> Result<(), HubError> {
        self.request(device_id, DesktopRequestKind::RequestSettingsSnapshot, None)
    }

    /// Unpairs the phone: the link forgets its key and, if it is connected, sends `desktop.request
    /// unpair` and closes. Returns whether it was paired.
    ///
    /// Errors: [`HubError::NoLink`], or the link's (trust file not writable).
    pub fn unpair(&self, device_id: &str) -> Result<bool, HubError> {
        let link = self.inner.link.as_ref().ok_or(HubError::NoLink)?;
        Ok(link.unpair(device_id)?)
    }
}

/// Epoch ms of the envelope's `ts` (0 before 1970).
fn ts_ms(env: &Envelope) -> u64 {
    u64::try_from(timestamp_ms(&env.ts)).unwrap_or(0)
}

/// A readable detail of an action message for the proposal record: the reject's reason class,
/// the result's status and error class, and the phone's `message` (phone_action answers).
fn step_detail(action: &IncomingAction, env: &Envelope) -> Option<String> {
    let message = env
        .payload
        .get("message")
        .and_then(serde_json::Value::as_str)
        .map(str::to_string);
    let base = match action {
        IncomingAction::Reject(r) => Some(format!("{:?}", r.reason_class)),
        IncomingAction::Result(r) => Some(match r.error_class {
            Some(c) => format!("{:?} ({})", r.status, c.as_str()),
            None => format!("{:?}", r.status),
        }),
        IncomingAction::Approve(a) => Some(format!("{:?}", a.confirmation.mode)),
        _ => None,
    };
    match (base, message) {
        (Some(b), Some(m)) => Some(format!("{b}: {m}")),
        (b, m) => b.or(m),
    }
}
