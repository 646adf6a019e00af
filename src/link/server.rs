//! The desktop end of the link: the TLS WebSocket listener, pairing and sessions.
//!
//! `ifp1-notes.md`, "Pairing and identity", and `docs/protocol.md`, "Link: pairing and
//! sessions". Shape (as in mini-redis): the caller binds a [`TcpListener`] (see [`bind`]) and
//! passes it to [`Link::run`] with a shutdown future; a semaphore caps live connections. Each
//! connection: TLS 1.3 handshake, WebSocket upgrade (1 MiB message limit), the desktop's
//! first `control.hello` carrying a fresh nonce (`x-ifp-nonce`), then pairing and/or the
//! phone's `control.hello`; after hello
//! every validated message goes to the app as a [`LinkEvent::Message`].

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ed25519_dalek::{Signature, VerifyingKey};
use futures_util::{FutureExt as _, SinkExt as _, StreamExt as _};
use serde_json::{Map, Value};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, Semaphore};
use tokio::time::{sleep_until, timeout, Instant};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::WebSocketStream;

use super::diagnostics::{
    listen_addresses, FailureKind, LinkDiagnostics, LinkFailure, MdnsStatus, MAX_FAILURES_KEPT,
};
use super::identity::{key_fingerprint, DesktopIdentity};
use super::mdns::Advertisement;
use super::pairing::{
    desktop_hello_signed_bytes, desktop_intro_signed_bytes, hello_signed_bytes, invite,
    pair_signed_bytes, verification_code, Clock, CodeCheck, PairingInvite, PairingWindow,
    SystemClock, PAIRING_TTL_MS,
};
use super::trust::{PairedPhone, TrustError, TrustFile};
use super::wire::{self, ifp, Sender};
use crate::phone_events::{DialFrame, SharedStrings};

/// The link's default TCP port.
pub const DEFAULT_PORT: u16 = 47470;

/// Most frames already buffered on a connection handled in one go, before the connection
/// looks at its timers, commands and shutdown again.
pub const DRAIN_MAX: usize = 64;

/// Most messages of one connection delivered as [`LinkEvent::Message`] and not yet dropped by
/// the app; past it the connection stops reading until the app catches up (backpressure to the
/// phone through TCP, so memory stays bounded when a phone sends at full speed).
pub const MAX_UNAPPLIED: usize = 1024;

/// A slot of a connection's [`MAX_UNAPPLIED`] budget, carried by [`LinkEvent::Message`]; the slot
/// is free again once every clone is dropped.
#[derive(Debug, Clone)]
pub struct MessageCredit(#[allow(dead_code)] Arc<tokio::sync::OwnedSemaphorePermit>);

/// How many ports [`bind`] tries, starting at the preferred one.
pub const PORT_TRIES: u16 = 10;

/// A shared log of every frame the desktop writes (text as sent), for tests and support.
pub type FrameLog = Arc<Mutex<Vec<String>>>;

/// Errors of the link.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LinkError {
    /// Binding or accepting failed.
    #[error("link socket: {0}")]
    Io(#[from] std::io::Error),
    /// No port in the range was free.
    #[error("no free port in {first}..={last} on {ip}: close the program using them or pick another port")]
    NoFreePort {
        /// The address tried.
        ip: IpAddr,
        /// First port tried.
        first: u16,
        /// Last port tried.
        last: u16,
    },
    /// The trust file could not be read or written.
    #[error(transparent)]
    Trust(#[from] TrustError),
    /// The TLS configuration could not be built from the identity.
    #[error("TLS configuration: {0}")]
    Tls(String),
    /// No phone with that device id is connected.
    #[error("phone {0} is not connected")]
    NotConnected(String),
    /// The message was refused before sending.
    #[error("message refused: {0}")]
    Refused(String),
}

/// Settings of a [`Link`].
#[derive(Debug, Clone)]
pub struct LinkConfig {
    /// Folder holding the trust file.
    pub data_dir: PathBuf,
    /// ifp versions this desktop speaks, inclusive (default [`crate::app_info::IFP_RANGE`]).
    pub protocol: (u32, u32),
    /// How often the desktop sends `control.ping` to a connected phone (default 15 s).
    pub ping_interval: Duration,
    /// Silence after which a phone counts as gone (default 45 s).
    pub dead_after: Duration,
    /// How long a connection may stay without a valid hello (default 60 s).
    pub hello_timeout: Duration,
    /// Most connections at once (default 32).
    pub max_connections: usize,
    /// How long a pairing code lives, ms (default [`PAIRING_TTL_MS`]).
    pub pairing_ttl_ms: u64,
    /// Advertise over mDNS (default true; tests turn it off).
    pub mdns: bool,
    /// Wall clock (default [`SystemClock`]).
    pub clock: Arc<dyn Clock>,
    /// If set, every frame the desktop writes is appended here.
    pub frame_log: Option<FrameLog>,
}

impl LinkConfig {
    /// Defaults, with the trust file in `data_dir`.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            data_dir: data_dir.into(),
            protocol: crate::app_info::IFP_RANGE,
            ping_interval: Duration::from_secs(15),
            dead_after: Duration::from_secs(45),
            hello_timeout: Duration::from_secs(60),
            max_connections: 32,
            pairing_ttl_ms: PAIRING_TTL_MS,
            mdns: true,
            clock: Arc::new(SystemClock),
            frame_log: None,
        }
    }
}

/// What the link tells the app.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum LinkEvent {
    /// A paired phone said a valid hello.
    PhoneConnected {
        /// Its device id.
        device_id: String,
        /// Its label from pairing.
        label: String,
        /// Its `ip:port`.
        address: String,
        /// The protocol version chosen (highest common).
        version: u32,
    },
    /// A connected phone went away.
    PhoneDisconnected {
        /// Its device id.
        device_id: String,
        /// Why, in words.
        reason: String,
    },
    /// A phone was paired and its key pinned.
    Paired {
        /// Its device id.
        device_id: String,
        /// Its label.
        label: String,
        /// The 6-digit code both screens show (`123 456`).
        verification_code: String,
    },
    /// A phone was unpaired on the desktop.
    Unpaired {
        /// Its device id.
        device_id: String,
    },
    /// The pairing code was replaced after too many wrong tries.
    PairingCodeReplaced(PairingInvite),
    /// A validated message from a connected phone.
    Message {
        /// The sending phone.
        device_id: String,
        /// The message (boxed: it is large next to the other events).
        envelope: Box<ifp::Envelope>,
        /// One of the connection's [`MAX_UNAPPLIED`] slots, freed when the event (and every
        /// clone of it) is dropped: a phone sending faster than the app applies its messages
        /// waits (its connection stops reading) instead of queueing without bound.
        credit: MessageCredit,
    },
    /// Validated `event.phoneline.dial` frames from a connected phone, consecutive on its
    /// connection and in the order received, each read in one pass ([`DialFrame::parse`]). A
    /// dial frame the shortcut declines arrives as [`LinkEvent::Message`] instead; both mean the
    /// same to the app. At most [`DRAIN_MAX`] frames.
    Dials {
        /// The sending phone.
        device_id: String,
        /// The frames' envelope fields and dials.
        frames: Vec<DialFrame>,
        /// As for [`LinkEvent::Message`], one slot per frame.
        credit: MessageCredit,
    },
    /// Something failed (also kept in diagnostics).
    Failure(LinkFailure),
}

/// Binds `ip:port`, or the next free port up to [`PORT_TRIES`] ports on; port 0 binds an
/// ephemeral port.
pub async fn bind(ip: IpAddr, port: u16) -> Result<TcpListener, LinkError> {
    if port == 0 {
        return Ok(TcpListener::bind(SocketAddr::new(ip, 0)).await?);
    }
    let last = port.saturating_add(PORT_TRIES - 1);
    for p in port..=last {
        match TcpListener::bind(SocketAddr::new(ip, p)).await {
            Ok(l) => return Ok(l),
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(LinkError::NoFreePort {
        ip,
        first: port,
        last,
    })
}

enum Command {
    Send(ifp::OutgoingFrame),
    Revoke(String),
    Close(String),
}

struct Session {
    conn: u64,
    tx: mpsc::UnboundedSender<Command>,
}

struct OpenPairing {
    window: PairingWindow,
    addr: IpAddr,
}

struct Diag {
    bound: Option<SocketAddr>,
    mdns: MdnsStatus,
    failures: VecDeque<LinkFailure>,
}

struct Shared {
    identity: DesktopIdentity,
    acceptor: TlsAcceptor,
    config: LinkConfig,
    trust_file: TrustFile,
    trust: Mutex<Vec<PairedPhone>>,
    pairing: Mutex<Option<OpenPairing>>,
    sessions: Mutex<HashMap<String, Session>>,
    events: mpsc::UnboundedSender<LinkEvent>,
    diag: Mutex<Diag>,
    next_conn: AtomicU64,
}

/// The desktop end of the link (cheap to clone; all clones share one state).
#[derive(Clone)]
pub struct Link {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("identity", &self.shared.identity)
            .finish_non_exhaustive()
    }
}

fn ws_config() -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(ifp::MAX_FRAME_BYTES))
        .max_frame_size(Some(ifp::MAX_FRAME_BYTES))
}

impl Link {
    /// Makes a link for `identity`, reading the trust file in `config.data_dir`.
    ///
    /// Returns the handle and the receiver of [`LinkEvent`]s (unbounded: nothing is dropped;
    /// the app must drain it). Errors: an unreadable trust file, a bad TLS key.
    pub fn new(
        identity: DesktopIdentity,
        config: LinkConfig,
    ) -> Result<(Self, mpsc::UnboundedReceiver<LinkEvent>), LinkError> {
        let trust_file = TrustFile::in_dir(&config.data_dir);
        let phones = trust_file.load()?;
        let tls =
            super::tls::server_config(&identity).map_err(|e| LinkError::Tls(e.to_string()))?;
        let (tx, rx) = mpsc::unbounded_channel();
        let mdns = if config.mdns {
            MdnsStatus::NotStarted
        } else {
            MdnsStatus::Disabled
        };
        let shared = Shared {
            identity,
            acceptor: TlsAcceptor::from(tls),
            config,
            trust_file,
            trust: Mutex::new(phones),
            pairing: Mutex::new(None),
            sessions: Mutex::new(HashMap::new()),
            events: tx,
            diag: Mutex::new(Diag {
                bound: None,
                mdns,
                failures: VecDeque::new(),
            }),
            next_conn: AtomicU64::new(1),
        };
        Ok((
            Self {
                shared: Arc::new(shared),
            },
            rx,
        ))
    }

    /// Accepts connections on `listener` until `shutdown` completes, then closes every
    /// connection and withdraws the mDNS advertisement.
    ///
    /// The listener's address is recorded when `run` is called (before the returned future is
    /// first polled), so [`Link::open_pairing`] right after it names the right port.
    pub fn run<F>(
        &self,
        listener: TcpListener,
        shutdown: F,
    ) -> impl Future<Output = Result<(), LinkError>> + Send + 'static
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let local = listener.local_addr();
        if let Ok(a) = &local {
            lock(&self.shared.diag).bound = Some(*a);
        }
        let this = self.clone();
        async move { this.serve(listener, local?, shutdown).await }
    }

    async fn serve(
        &self,
        listener: TcpListener,
        local: SocketAddr,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), LinkError> {
        let ad = if self.shared.config.mdns {
            match Advertisement::start(
                &self.shared.identity.device_id(),
                local.port(),
                self.shared.config.protocol,
                self.shared.identity.cert_fingerprint(),
            ) {
                Ok((ad, fullname)) => {
                    lock(&self.shared.diag).mdns = MdnsStatus::Advertising { fullname };
                    Some(ad)
                }
                Err(reason) => {
                    lock(&self.shared.diag).mdns = MdnsStatus::Unavailable {
                        reason: reason.clone(),
                    };
                    self.shared.fail(FailureKind::Mdns, reason, None, None);
                    None
                }
            }
        } else {
            None
        };
        let limit = Arc::new(Semaphore::new(self.shared.config.max_connections.max(1)));
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut tasks = tokio::task::JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            let permit = tokio::select! {
                _ = &mut shutdown => break,
                p = limit.clone().acquire_owned() => match p {
                    Ok(p) => p,
                    Err(_) => break,
                },
            };
            let accepted = tokio::select! {
                _ = &mut shutdown => break,
                a = listener.accept() => a,
            };
            let (tcp, peer) = match accepted {
                Ok(x) => x,
                Err(e) => {
                    tracing::warn!("link accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let shared = self.shared.clone();
            let stop = stop_rx.clone();
            tasks.spawn(async move {
                let _permit = permit;
                connection(shared, tcp, peer, stop).await;
            });
            while tasks.try_join_next().is_some() {}
        }
        let _ = stop_tx.send(true);
        let _ = timeout(Duration::from_secs(5), async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
        tasks.abort_all();
        if let Some(ad) = ad {
            ad.stop();
        }
        Ok(())
    }

    /// Opens (or reopens) the pairing window; the link advertises `addr` (the address the
    /// phone should dial, e.g. [`super::diagnostics::lan_address`]) and the bound port.
    pub fn open_pairing(&self, addr: IpAddr) -> PairingInvite {
        let now = self.shared.config.clock.now_ms();
        let window = PairingWindow::open(now, self.shared.config.pairing_ttl_ms);
        let inv = self.shared.invite_for(&window, addr);
        *lock(&self.shared.pairing) = Some(OpenPairing { window, addr });
        inv
    }

    /// Closes the pairing window, if open.
    pub fn close_pairing(&self) {
        *lock(&self.shared.pairing) = None;
    }

    /// The open pairing window's invite, if any (after a replacement, the new code).
    pub fn pairing_invite(&self) -> Option<PairingInvite> {
        let p = lock(&self.shared.pairing);
        p.as_ref()
            .map(|o| self.shared.invite_for(&o.window, o.addr))
    }

    /// Sends an app message to the connected phone `device_id`.
    ///
    /// Takes only [`crate::ifp::OutgoingMessage`], which cannot express `action.approve`,
    /// `action.reject` or `action.cancel`. Errors: [`LinkError::NotConnected`], or
    /// [`LinkError::Refused`] when the ifp module will not frame the message.
    pub fn send(&self, device_id: &str, message: ifp::OutgoingMessage) -> Result<(), LinkError> {
        self.send_reply(device_id, message, None)
    }

    /// [`Link::send`] with `parent` = the id of the phone's message this one answers (e.g. an
    /// `error` refusing it, so the phone knows which message was refused).
    ///
    /// Errors as [`Link::send`].
    pub fn send_reply(
        &self,
        device_id: &str,
        message: ifp::OutgoingMessage,
        parent: Option<String>,
    ) -> Result<(), LinkError> {
        let frame = wire::frame(
            &self.shared.sender(),
            &message,
            self.shared.config.clock.now_ms(),
            parent,
            Map::new(),
        )
        .map_err(LinkError::Refused)?;
        let sessions = lock(&self.shared.sessions);
        let s = sessions
            .get(device_id)
            .ok_or_else(|| LinkError::NotConnected(device_id.to_string()))?;
        s.tx.send(Command::Send(frame))
            .map_err(|_| LinkError::NotConnected(device_id.to_string()))
    }

    /// Forgets `device_id`'s pinned key (trust file) and, if it is connected, tells it with
    /// `pair.revoke` and closes its connection. Returns whether it was paired.
    pub fn unpair(&self, device_id: &str) -> Result<bool, LinkError> {
        let removed = {
            let mut trust = lock(&self.shared.trust);
            let before = trust.len();
            let mut next = trust.clone();
            next.retain(|p| p.device_id != device_id);
            if next.len() == before {
                false
            } else {
                self.shared.trust_file.save(&next)?;
                *trust = next;
                true
            }
        };
        if let Some(s) = lock(&self.shared.sessions).get(device_id) {
            let _ = s.tx.send(Command::Revoke("unpaired on the desktop".into()));
        }
        if removed {
            let _ = self.shared.events.send(LinkEvent::Unpaired {
                device_id: device_id.to_string(),
            });
        }
        Ok(removed)
    }

    /// The paired phones (pairing records), as in the trust file.
    pub fn paired_phones(&self) -> Vec<PairedPhone> {
        lock(&self.shared.trust).clone()
    }

    /// Device ids of the phones connected now (sorted).
    pub fn connected(&self) -> Vec<String> {
        let mut v: Vec<String> = lock(&self.shared.sessions).keys().cloned().collect();
        v.sort();
        v
    }

    /// The local address the listener is bound to, once [`Link::run`] started.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        lock(&self.shared.diag).bound
    }

    /// The desktop identity.
    pub fn identity(&self) -> &DesktopIdentity {
        &self.shared.identity
    }

    /// Addresses, port, mDNS state, connected phones and recent failures.
    pub fn diagnostics(&self) -> LinkDiagnostics {
        let (bound, mdns, failures) = {
            let d = lock(&self.shared.diag);
            (
                d.bound,
                d.mdns.clone(),
                d.failures.iter().cloned().collect(),
            )
        };
        LinkDiagnostics {
            port: bound.map(|b| b.port()),
            addresses: bound.map(|b| listen_addresses(b.ip())).unwrap_or_default(),
            mdns,
            cert_fingerprint: self.shared.identity.cert_fingerprint().to_string(),
            desktop_device_id: self.shared.identity.device_id(),
            paired: lock(&self.shared.trust).len(),
            connected: self.connected(),
            recent_failures: failures,
        }
    }
}

/// Locks a std mutex, recovering the data if a holder panicked (state stays usable).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    fn sender(&self) -> Sender {
        Sender {
            entity: self.identity.entity_id(),
            device: self.identity.device_id(),
        }
    }

    fn invite_for(&self, window: &PairingWindow, addr: IpAddr) -> PairingInvite {
        let port = lock(&self.diag)
            .bound
            .map(|b| b.port())
            .unwrap_or(DEFAULT_PORT);
        invite(&addr, port, window, self.identity.cert_fingerprint())
    }

    fn fail(
        &self,
        kind: FailureKind,
        words: impl Into<String>,
        device_id: Option<&str>,
        address: Option<SocketAddr>,
    ) {
        let f = LinkFailure {
            kind,
            words: words.into(),
            what_to_do: kind.what_to_do().to_string(),
            device_id: device_id.map(str::to_string),
            address: address.map(|a| a.to_string()),
            at_ms: self.config.clock.now_ms(),
        };
        tracing::info!(kind = ?f.kind, "link failure: {}", f.words);
        {
            let mut d = lock(&self.diag);
            if d.failures.len() >= MAX_FAILURES_KEPT {
                d.failures.pop_front();
            }
            d.failures.push_back(f.clone());
        }
        let _ = self.events.send(LinkEvent::Failure(f));
    }

    fn emit(&self, e: LinkEvent) {
        let _ = self.events.send(e);
    }
}

async fn connection(
    shared: Arc<Shared>,
    tcp: TcpStream,
    peer: SocketAddr,
    stop: watch::Receiver<bool>,
) {
    let handshake = Duration::from_secs(10);
    // Frames and acknowledgements are small and latency matters: no Nagle delay.
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!("link: TCP_NODELAY on {peer}: {e}");
    }
    let tls = match timeout(handshake, shared.acceptor.accept(tcp)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            let alert = e
                .get_ref()
                .and_then(|i| i.downcast_ref::<rustls::Error>())
                .map(|r| matches!(r, rustls::Error::AlertReceived(_)))
                .unwrap_or(false);
            if alert {
                shared.fail(
                    FailureKind::CertificateMismatch,
                    format!("the peer at {peer} refused this desktop's TLS certificate ({e}): it expects another certificate fingerprint; this desktop's is {}", shared.identity.cert_fingerprint()),
                    None,
                    Some(peer),
                );
            } else {
                shared.fail(
                    FailureKind::Handshake,
                    format!("TLS handshake with {peer} failed: {e}"),
                    None,
                    Some(peer),
                );
            }
            return;
        }
        Err(_) => {
            shared.fail(
                FailureKind::Handshake,
                format!("TLS handshake with {peer} took over 10 s"),
                None,
                Some(peer),
            );
            return;
        }
    };
    let ws = match timeout(
        handshake,
        tokio_tungstenite::accept_async_with_config(tls, Some(ws_config())),
    )
    .await
    {
        Ok(Ok(ws)) => ws,
        Ok(Err(e)) => {
            shared.fail(
                FailureKind::Handshake,
                format!("WebSocket upgrade from {peer} failed: {e}"),
                None,
                Some(peer),
            );
            return;
        }
        Err(_) => return,
    };
    let conn = shared.next_conn.fetch_add(1, Ordering::SeqCst);
    let mut c = Conn {
        nonce: wire::random_token(),
        shared,
        ws,
        peer,
        conn,
        stage: Stage::Fresh,
        unapplied: Arc::new(Semaphore::new(MAX_UNAPPLIED)),
        dials: Vec::new(),
        dials_permit: None,
        shared_strings: SharedStrings::default(),
    };
    c.run(stop).await;
}

enum Stage {
    Fresh,
    Granted(Box<Grant>),
    /// `phone` is `device_id` again, shared by the dials read on this connection.
    Live {
        device_id: String,
        phone: Arc<str>,
    },
}

struct Grant {
    challenge: String,
    device_id: String,
    public_key: String,
    label: String,
    capabilities: Vec<Value>,
}

enum Flow {
    Continue,
    Close,
}

struct Conn {
    shared: Arc<Shared>,
    ws: WebSocketStream<TlsStream<TcpStream>>,
    peer: SocketAddr,
    nonce: String,
    conn: u64,
    stage: Stage,
    /// [`MAX_UNAPPLIED`] slots for this connection's messages held by the app.
    unapplied: Arc<Semaphore>,
    /// Dials read but not yet handed to the app ([`Conn::emit_dials`]), and their slots.
    dials: Vec<DialFrame>,
    dials_permit: Option<tokio::sync::OwnedSemaphorePermit>,
    /// The strings this connection's dials repeat ([`SharedStrings`]).
    shared_strings: SharedStrings,
}

impl Conn {
    async fn run(&mut self, mut stop: watch::Receiver<bool>) {
        let cfg = self.shared.config.clone();
        let fp = self.shared.identity.cert_fingerprint().to_string();
        let intro = ifp::OutgoingMessage::Hello(ifp::ControlHello {
            device_id: self.shared.identity.device_id(),
            proof: self
                .shared
                .identity
                .sign_b64(&desktop_intro_signed_bytes(&self.nonce, &fp)),
            capabilities: vec![],
            protocol: ifp::ProtocolVersions {
                min: cfg.protocol.0.into(),
                max: cfg.protocol.1.into(),
            },
        });
        let mut ext = Map::new();
        ext.insert("x-ifp-nonce".into(), Value::from(self.nonce.clone()));
        let mut reason = String::from("connection closed");
        if self.send(intro, None, ext).await.is_err() {
            return;
        }
        let (tx, mut rx) = mpsc::unbounded_channel::<Command>();
        let mut tx = Some(tx);
        let started = Instant::now();
        let mut last_rx = Instant::now();
        let mut next_ping = Instant::now() + cfg.ping_interval;
        loop {
            let live = matches!(self.stage, Stage::Live { .. });
            let deadline = if live {
                last_rx + cfg.dead_after
            } else {
                started + cfg.hello_timeout
            };
            let ping_at = if live {
                next_ping
            } else {
                deadline + Duration::from_secs(3600)
            };
            tokio::select! {
                _ = stop.changed() => {
                    reason = "the desktop is shutting down".into();
                    self.close(CloseCode::Away, &reason).await;
                    break;
                }
                _ = sleep_until(deadline) => {
                    reason = if live {
                        format!("no frame within {} s (keepalive)", cfg.dead_after.as_secs_f32())
                    } else {
                        format!("no valid control.hello within {} s", cfg.hello_timeout.as_secs_f32())
                    };
                    if live {
                        let dev = self.device().map(str::to_string);
                        self.shared.fail(FailureKind::Timeout, format!("phone {} went silent: {reason}", dev.as_deref().unwrap_or("?")), dev.as_deref(), Some(self.peer));
                    }
                    self.close(CloseCode::Policy, &reason).await;
                    break;
                }
                _ = sleep_until(ping_at) => {
                    next_ping = Instant::now() + cfg.ping_interval;
                    if self.send(ifp::OutgoingMessage::Ping, None, Map::new()).await.is_err() {
                        reason = "write failed".into();
                        break;
                    }
                }
                cmd = rx.recv(), if live => {
                    match cmd {
                        Some(Command::Send(f)) => {
                            let written = self.write_frame(f).await;
                            if written.is_err() {
                                reason = "write failed".into();
                                break;
                            }
                        }
                        Some(Command::Revoke(why)) => {
                            let target = self.device().map(str::to_string);
                            let revoke = ifp::OutgoingMessage::DesktopRequest(ifp::DesktopRequest {
                                kind: ifp::DesktopRequestKind::Unpair,
                                target,
                            });
                            let _ = self.send(revoke, None, Map::new()).await;
                            reason = why;
                            self.close(CloseCode::Normal, "unpaired").await;
                            break;
                        }
                        Some(Command::Close(why)) => {
                            reason = why;
                            self.close(CloseCode::Normal, &reason).await;
                            break;
                        }
                        None => {}
                    }
                }
                msg = self.ws.next() => {
                    last_rx = Instant::now();
                    let mut flow = self.on_message(msg, &mut tx, &mut reason).await;
                    // Frames already buffered are handled here rather than one select (and its
                    // timers) per frame; bounded, so commands, pings and shutdown get their turn.
                    let mut drained = 0;
                    while matches!(flow, Flow::Continue) && drained < DRAIN_MAX {
                        let Some(msg) = self.ws.next().now_or_never() else {
                            break;
                        };
                        drained += 1;
                        flow = self.on_message(msg, &mut tx, &mut reason).await;
                    }
                    self.emit_dials();
                    if let Flow::Close = flow { break; }
                }
            }
        }
        self.emit_dials();
        if let Stage::Live { device_id, .. } = &self.stage {
            let mut sessions = lock(&self.shared.sessions);
            if sessions.get(device_id).map(|s| s.conn) == Some(self.conn) {
                sessions.remove(device_id);
            }
            drop(sessions);
            self.shared.emit(LinkEvent::PhoneDisconnected {
                device_id: device_id.clone(),
                reason,
            });
        }
    }

    /// Handles one read from the socket (a frame, a close, an error); `reason` is set when the
    /// connection ends.
    async fn on_message(
        &mut self,
        msg: Option<Result<Message, tungstenite::Error>>,
        tx: &mut Option<mpsc::UnboundedSender<Command>>,
        reason: &mut String,
    ) -> Flow {
        // Dials, the bulk of what a phone sends, are read in one pass and go to the app together
        // (`emit_dials`); anything else, including a dial the shortcut does not vouch for, is
        // handled after the dials before it.
        if let (Some(Ok(Message::Text(t))), Stage::Live { phone, .. }) = (&msg, &self.stage) {
            if let Some(frame) =
                DialFrame::parse_shared(t.as_str(), phone, &mut self.shared_strings)
            {
                let permit = match Arc::clone(&self.unapplied).try_acquire_owned() {
                    Ok(p) => p,
                    Err(_) => {
                        // The app holds the budget: hand it what is read, then wait.
                        self.emit_dials();
                        let Ok(p) = Arc::clone(&self.unapplied).acquire_owned().await else {
                            return Flow::Close;
                        };
                        p
                    }
                };
                match &mut self.dials_permit {
                    Some(p) => p.merge(permit),
                    None => self.dials_permit = Some(permit),
                }
                self.dials.push(frame);
                if self.dials.len() >= DRAIN_MAX {
                    self.emit_dials();
                }
                return Flow::Continue;
            }
        }
        self.emit_dials();
        match msg {
            None => {
                *reason = "the phone closed the connection".into();
                Flow::Close
            }
            Some(Ok(Message::Text(t))) => self.on_frame(t.as_bytes(), tx).await,
            Some(Ok(Message::Binary(_))) => {
                self.refuse_frame(
                    "binary WebSocket frames are not used by ifp/1; send JSON text".into(),
                )
                .await
            }
            Some(Ok(Message::Close(_))) => {
                *reason = "the phone closed the connection".into();
                Flow::Close
            }
            Some(Ok(_)) => Flow::Continue,
            Some(Err(tungstenite::Error::Capacity(e))) => {
                let words = format!("frame over the 1 MiB limit ({e}); connection closed");
                let dev = self.device().map(str::to_string);
                self.shared.fail(
                    FailureKind::OversizeFrame,
                    format!("{} sent a {words}", self.peer),
                    dev.as_deref(),
                    Some(self.peer),
                );
                self.refuse(ifp::ErrorClass::InvalidEnvelope, words, None)
                    .await;
                self.close(CloseCode::Size, "frame over 1 MiB").await;
                *reason = "oversize frame".into();
                Flow::Close
            }
            Some(Err(e)) => {
                *reason = format!("connection error: {e}");
                Flow::Close
            }
        }
    }

    /// Hands the dials read so far to the app as one [`LinkEvent::Dials`].
    fn emit_dials(&mut self) {
        if self.dials.is_empty() {
            return;
        }
        let frames = std::mem::take(&mut self.dials);
        let Some(permit) = self.dials_permit.take() else {
            return;
        };
        if let Stage::Live { device_id, .. } = &self.stage {
            self.shared.emit(LinkEvent::Dials {
                device_id: device_id.clone(),
                frames,
                credit: MessageCredit(Arc::new(permit)),
            });
        }
    }

    fn device(&self) -> Option<&str> {
        match &self.stage {
            Stage::Live { device_id, .. } => Some(device_id),
            Stage::Granted(g) => Some(&g.device_id),
            Stage::Fresh => None,
        }
    }

    async fn close(&mut self, code: CloseCode, why: &str) {
        let frame = CloseFrame {
            code,
            reason: why.chars().take(100).collect::<String>().into(),
        };
        let _ = timeout(Duration::from_secs(2), self.ws.close(Some(frame))).await;
    }

    async fn send(
        &mut self,
        msg: ifp::OutgoingMessage,
        parent: Option<String>,
        ext: Map<String, Value>,
    ) -> Result<(), ()> {
        let now = self.shared.config.clock.now_ms();
        match wire::frame(&self.shared.sender(), &msg, now, parent, ext) {
            Ok(f) => self.write_frame(f).await,
            Err(e) => {
                // A bug in Switchboard, not peer input: say so and keep the connection.
                tracing::error!("link could not frame {:?}: {e}", msg.kind());
                Ok(())
            }
        }
    }

    /// The one writer: only [`ifp::OutgoingFrame`]s reach the socket.
    async fn write_frame(&mut self, frame: ifp::OutgoingFrame) -> Result<(), ()> {
        let text = frame.into_string();
        if let Some(log) = &self.shared.config.frame_log {
            lock(log).push(text.clone());
        }
        self.ws.send(Message::text(text)).await.map_err(|_| ())
    }

    async fn refuse(&mut self, class: ifp::ErrorClass, detail: String, parent: Option<String>) {
        let msg = ifp::OutgoingMessage::Error(ifp::ErrorPayload {
            class,
            detail: Some(detail),
            current_generation: None,
        });
        let _ = self.send(msg, parent, Map::new()).await;
    }

    async fn refuse_frame(&mut self, detail: String) -> Flow {
        let dev = self.device().map(str::to_string);
        self.shared.fail(
            FailureKind::InvalidFrame,
            format!("{} sent an invalid frame: {detail}", self.peer),
            dev.as_deref(),
            Some(self.peer),
        );
        self.refuse(ifp::ErrorClass::InvalidEnvelope, detail, None)
            .await;
        Flow::Continue
    }

    async fn on_frame(
        &mut self,
        bytes: &[u8],
        tx: &mut Option<mpsc::UnboundedSender<Command>>,
    ) -> Flow {
        let env = match ifp::validate_frame(bytes) {
            Ok(env) => env,
            Err(rej) => {
                let dev = self.device().map(str::to_string);
                self.shared.fail(
                    FailureKind::InvalidFrame,
                    format!("{} sent an invalid frame: {}", self.peer, rej.reason),
                    dev.as_deref(),
                    Some(self.peer),
                );
                self.refuse(rej.class, rej.reason, None).await;
                return Flow::Continue;
            }
        };
        let kind = env.r#type.clone();
        if kind == "control.ping" {
            let _ = self
                .send(ifp::OutgoingMessage::Pong, Some(env.id.clone()), Map::new())
                .await;
            return Flow::Continue;
        }
        if kind == "control.pong" {
            return Flow::Continue;
        }
        match &self.stage {
            Stage::Live { device_id, .. } => {
                let device_id = device_id.clone();
                if kind == "control.hello" || kind.starts_with("pair.") {
                    self.refuse(
                        ifp::ErrorClass::InvalidEnvelope,
                        format!("`{kind}` after a successful hello on this connection"),
                        Some(env.id),
                    )
                    .await;
                    return Flow::Continue;
                }
                if let Some(d) = &env.device {
                    if d != &device_id {
                        self.refuse(
                            ifp::ErrorClass::UnauthorizedDevice,
                            format!("device: this connection belongs to {device_id}, not {d}"),
                            Some(env.id),
                        )
                        .await;
                        return Flow::Continue;
                    }
                }
                let Ok(permit) = Arc::clone(&self.unapplied).acquire_owned().await else {
                    return Flow::Close;
                };
                self.shared.emit(LinkEvent::Message {
                    device_id,
                    envelope: Box::new(env),
                    credit: MessageCredit(Arc::new(permit)),
                });
                Flow::Continue
            }
            _ => match kind.as_str() {
                "pair.request" => self.on_pair_request(env).await,
                "pair.complete" => self.on_pair_complete(env).await,
                "control.hello" => self.on_hello(env, tx).await,
                other => {
                    self.refuse(
                        ifp::ErrorClass::UnauthorizedDevice,
                        format!("`{other}` before control.hello: say hello (or pair) first"),
                        Some(env.id),
                    )
                    .await;
                    Flow::Continue
                }
            },
        }
    }

    async fn on_pair_request(&mut self, env: ifp::Envelope) -> Flow {
        let p = &env.payload;
        let code = p.get("pairing_code").and_then(Value::as_str).unwrap_or("");
        let pk_b64 = p.get("public_key").and_then(Value::as_str).unwrap_or("");
        let Some(pk) = decode_key(pk_b64) else {
            self.refuse(
                ifp::ErrorClass::InvalidEnvelope,
                "payload.public_key: expected an Ed25519 key, 32 bytes as unpadded base64url"
                    .into(),
                Some(env.id),
            )
            .await;
            return Flow::Continue;
        };
        let label = p
            .get("label")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let capabilities = p
            .get("capabilities")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let device_id = env
            .device
            .clone()
            .unwrap_or_else(|| format!("dev_{}", key_fingerprint(pk.as_bytes())));
        let now = self.shared.config.clock.now_ms();
        let (check, replaced) = {
            let mut guard = lock(&self.shared.pairing);
            match guard.as_mut() {
                None => (None, None),
                Some(open) => {
                    let c = open.window.check(code, now);
                    let replaced = (c == CodeCheck::RateLimited)
                        .then(|| self.shared.invite_for(&open.window, open.addr));
                    if matches!(c, CodeCheck::Accepted | CodeCheck::Expired) {
                        *guard = None;
                    }
                    (Some(c), replaced)
                }
            }
        };
        let dev = Some(device_id.as_str());
        let fail = |kind, class: ifp::ErrorClass, words: String| (kind, class, words);
        let failure = match check {
            None => Some(fail(
                FailureKind::NoPairingWindow,
                ifp::ErrorClass::PairingFailed,
                "no pairing window is open on the desktop".to_string(),
            )),
            Some(CodeCheck::Wrong { tries_left }) => Some(fail(
                FailureKind::WrongCode,
                ifp::ErrorClass::PairingFailed,
                format!("wrong pairing code ({tries_left} tries left)"),
            )),
            Some(CodeCheck::Expired) => Some(fail(
                FailureKind::ExpiredCode,
                ifp::ErrorClass::PairingFailed,
                "the pairing code expired (codes live 2 minutes)".to_string(),
            )),
            Some(CodeCheck::RateLimited) => Some(fail(
                FailureKind::RateLimited,
                ifp::ErrorClass::RateLimited,
                "too many wrong pairing codes: the code was replaced".to_string(),
            )),
            Some(CodeCheck::Accepted) => None,
        };
        if let Some(inv) = replaced {
            self.shared.emit(LinkEvent::PairingCodeReplaced(inv));
        }
        if let Some((kind, class, words)) = failure {
            self.shared.fail(
                kind,
                format!("pairing from {} ({device_id}): {words}", self.peer),
                dev,
                Some(self.peer),
            );
            self.refuse(class, words, Some(env.id)).await;
            return Flow::Continue;
        }
        if let Some(known) = self.pinned(&device_id) {
            if known.public_key != pk_b64 {
                let words = identity_changed_words(&device_id, &known.public_key, pk_b64);
                self.shared.fail(
                    FailureKind::IdentityChanged,
                    words.clone(),
                    dev,
                    Some(self.peer),
                );
                self.refuse(ifp::ErrorClass::PairingFailed, words, Some(env.id))
                    .await;
                return Flow::Close;
            }
        }
        let challenge = wire::random_token();
        let grant = ifp::OutgoingMessage::PairGrant(ifp::PairGrant {
            device_id: device_id.clone(),
            public_key: self.shared.identity.public_key_b64(),
            challenge: challenge.clone(),
            capabilities: vec![],
            label: Some(crate::app_info::APP_NAME.to_string()),
        });
        self.stage = Stage::Granted(Box::new(Grant {
            challenge,
            device_id,
            public_key: pk_b64.to_string(),
            label,
            capabilities,
        }));
        if self.send(grant, Some(env.id), Map::new()).await.is_err() {
            return Flow::Close;
        }
        Flow::Continue
    }

    async fn on_pair_complete(&mut self, env: ifp::Envelope) -> Flow {
        let Stage::Granted(grant) = std::mem::replace(&mut self.stage, Stage::Fresh) else {
            self.refuse(
                ifp::ErrorClass::PairingFailed,
                "pair.complete without a pair.grant on this connection".into(),
                Some(env.id),
            )
            .await;
            return Flow::Continue;
        };
        let sig = env
            .payload
            .get("signature")
            .and_then(Value::as_str)
            .unwrap_or("");
        let bytes = pair_signed_bytes(
            &grant.challenge,
            self.shared.identity.cert_fingerprint(),
            &grant.device_id,
        );
        if !verify(&grant.public_key, &bytes, sig) {
            let words = format!(
                "pairing from {} ({}): the pair.complete signature over the challenge does not verify",
                self.peer, grant.device_id
            );
            self.shared.fail(
                FailureKind::PairingSignature,
                words,
                Some(&grant.device_id),
                Some(self.peer),
            );
            self.refuse(
                ifp::ErrorClass::PairingFailed,
                "payload.signature: does not verify over the challenge".into(),
                Some(env.id),
            )
            .await;
            return Flow::Continue;
        }
        let now = self.shared.config.clock.now_ms();
        let record = PairedPhone {
            device_id: grant.device_id.clone(),
            public_key: grant.public_key.clone(),
            label: grant.label.clone(),
            capabilities: grant.capabilities.clone(),
            paired_at_ms: now,
            last_seen_ms: None,
            last_address: Some(self.peer.to_string()),
        };
        if let Err(e) = self.shared.update_trust(|list| {
            list.retain(|p| p.device_id != record.device_id);
            list.push(record);
        }) {
            self.shared.fail(
                FailureKind::TrustFile,
                format!("could not save pairing of {}: {e}", grant.device_id),
                Some(&grant.device_id),
                Some(self.peer),
            );
            self.refuse(
                ifp::ErrorClass::Internal,
                "the desktop could not save the pairing".into(),
                Some(env.id),
            )
            .await;
            return Flow::Close;
        }
        self.shared.emit(LinkEvent::Paired {
            device_id: grant.device_id.clone(),
            label: grant.label.clone(),
            verification_code: verification_code(
                &self.shared.identity.public_key_b64(),
                &grant.public_key,
                self.shared.identity.cert_fingerprint(),
            ),
        });
        // No answer of its own: the phone follows with control.hello on this connection.
        Flow::Continue
    }

    fn pinned(&self, device_id: &str) -> Option<PairedPhone> {
        lock(&self.shared.trust)
            .iter()
            .find(|p| p.device_id == device_id)
            .cloned()
    }

    async fn on_hello(
        &mut self,
        env: ifp::Envelope,
        tx: &mut Option<mpsc::UnboundedSender<Command>>,
    ) -> Flow {
        let p = &env.payload;
        let device_id = p
            .get("device_id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let proof = p.get("proof").and_then(Value::as_str).unwrap_or("");
        let Some(known) = self.pinned(&device_id) else {
            let words = format!("{device_id} is not paired with this desktop");
            self.shared.fail(
                FailureKind::UnknownDevice,
                format!("hello from {}: {words}", self.peer),
                Some(&device_id),
                Some(self.peer),
            );
            self.refuse(ifp::ErrorClass::UnauthorizedDevice, words, Some(env.id))
                .await;
            return Flow::Close;
        };
        if let Some(presented) = env.ext.get("x-ifp-public-key").and_then(Value::as_str) {
            if presented != known.public_key {
                let words = identity_changed_words(&device_id, &known.public_key, presented);
                self.shared.fail(
                    FailureKind::IdentityChanged,
                    words.clone(),
                    Some(&device_id),
                    Some(self.peer),
                );
                self.refuse(ifp::ErrorClass::UnauthorizedDevice, words, Some(env.id))
                    .await;
                return Flow::Close;
            }
        }
        let fp = self.shared.identity.cert_fingerprint().to_string();
        if !verify(
            &known.public_key,
            &hello_signed_bytes(&self.nonce, &device_id, &fp),
            proof,
        ) {
            let words = format!(
                "the hello proof of {device_id} does not verify for this connection's nonce (forged or replayed)"
            );
            self.shared.fail(
                FailureKind::BadProof,
                format!("hello from {}: {words}", self.peer),
                Some(&device_id),
                Some(self.peer),
            );
            self.refuse(ifp::ErrorClass::UnauthorizedDevice, words, Some(env.id))
                .await;
            return Flow::Close;
        }
        let (dmin, dmax) = self.shared.config.protocol;
        let range = p.get("protocol").and_then(Value::as_object);
        let num = |k: &str| {
            range
                .and_then(|r| r.get(k))
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
        };
        let (pmin, pmax) = match (num("min"), num("max")) {
            (Some(a), Some(b)) if a >= 1 && a <= b => (a, b),
            _ => {
                self.refuse(
                    ifp::ErrorClass::InvalidEnvelope,
                    "payload.protocol: expected {min, max} integers with 1 <= min <= max".into(),
                    Some(env.id),
                )
                .await;
                return Flow::Close;
            }
        };
        let lo = pmin.max(dmin);
        let hi = pmax.min(dmax);
        if lo > hi {
            let words = format!(
                "no common protocol version: the phone speaks {pmin}..{pmax}, this desktop speaks {dmin}..{dmax}"
            );
            self.shared.fail(
                FailureKind::VersionMismatch,
                format!("hello from {device_id}: {words}"),
                Some(&device_id),
                Some(self.peer),
            );
            self.refuse(ifp::ErrorClass::UnsupportedVersion, words, Some(env.id))
                .await;
            return Flow::Close;
        }
        let now = self.shared.config.clock.now_ms();
        let peer = self.peer.to_string();
        if let Err(e) = self.shared.update_trust(|list| {
            if let Some(r) = list.iter_mut().find(|r| r.device_id == device_id) {
                r.last_seen_ms = Some(now);
                r.last_address = Some(peer.clone());
            }
        }) {
            self.shared.fail(
                FailureKind::TrustFile,
                format!("could not record last-seen of {device_id}: {e}"),
                Some(&device_id),
                Some(self.peer),
            );
        }
        let Some(sender) = tx.take() else {
            return Flow::Close;
        };
        let old = lock(&self.shared.sessions).insert(
            device_id.clone(),
            Session {
                conn: self.conn,
                tx: sender,
            },
        );
        if let Some(old) = old {
            let _ = old
                .tx
                .send(Command::Close("replaced by a newer connection".into()));
        }
        self.stage = Stage::Live {
            device_id: device_id.clone(),
            phone: Arc::from(device_id.as_str()),
        };
        let proof = self.shared.identity.sign_b64(&desktop_hello_signed_bytes(
            &self.nonce,
            &device_id,
            &fp,
        ));
        let hello = ifp::OutgoingMessage::Hello(ifp::ControlHello {
            device_id: self.shared.identity.device_id(),
            proof,
            capabilities: vec![],
            protocol: ifp::ProtocolVersions {
                min: hi.into(),
                max: hi.into(),
            },
        });
        if self.send(hello, Some(env.id), Map::new()).await.is_err() {
            return Flow::Close;
        }
        self.shared.emit(LinkEvent::PhoneConnected {
            device_id,
            label: known.label,
            address: self.peer.to_string(),
            version: hi,
        });
        Flow::Continue
    }
}

impl Shared {
    fn update_trust(&self, f: impl FnOnce(&mut Vec<PairedPhone>)) -> Result<(), TrustError> {
        let mut trust = lock(&self.trust);
        let mut next = trust.clone();
        f(&mut next);
        self.trust_file.save(&next)?;
        *trust = next;
        Ok(())
    }
}

fn identity_changed_words(device_id: &str, pinned_b64: &str, presented_b64: &str) -> String {
    let fp = |b: &str| {
        URL_SAFE_NO_PAD
            .decode(b)
            .map(|k| key_fingerprint(&k))
            .unwrap_or_else(|_| "unreadable".into())
    };
    format!(
        "identity changed: {device_id} was paired with key {} but now presents key {}; refused (not re-paired)",
        fp(pinned_b64),
        fp(presented_b64)
    )
}

fn decode_key(b64: &str) -> Option<VerifyingKey> {
    let bytes: [u8; 32] = URL_SAFE_NO_PAD.decode(b64).ok()?.try_into().ok()?;
    VerifyingKey::from_bytes(&bytes).ok()
}

fn verify(pk_b64: &str, msg: &[u8], sig_b64: &str) -> bool {
    let Some(pk) = decode_key(pk_b64) else {
        return false;
    };
    let Ok(sig) = URL_SAFE_NO_PAD.decode(sig_b64) else {
        return false;
    };
    let Ok(sig) = Signature::from_slice(&sig) else {
        return false;
    };
    pk.verify_strict(msg, &sig).is_ok()
}
