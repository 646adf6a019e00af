//! The desktop end of the link: the listener and the [`Link`] handle.
//!
//! `ifp1-notes.md`, "Pairing and identity", and `docs/protocol.md`, "Link: pairing and
//! sessions". Shape (as in mini-redis): the caller binds a [`TcpListener`] (see [`bind`]) and
//! passes it to [`Link::run`] with a shutdown future; every accepted socket is admitted to the
//! budget of connections without hello ([`super::budget`]: per source and in total; a newcomer
//! evicts the oldest rather than being refused, so a paired phone always gets in) and served by
//! its own task ([`super::connection`]: TLS 1.3 handshake,
//! WebSocket upgrade with a 1 MiB message limit, the desktop's first `control.hello` carrying
//! a fresh nonce (`x-ifp-nonce`), then pairing and/or the phone's `control.hello`; after hello
//! every validated message goes to the app as a [`LinkEvent::Message`]). The [`Link`] handle
//! also opens pairing windows, sends to and unpairs phones, and reports diagnostics.
//!
//! The settings ([`LinkConfig`]), the events ([`LinkEvent`], [`MessageCredit`]) and the
//! connection's limits ([`DRAIN_MAX`], [`MAX_UNAPPLIED`]) live in their own files and are
//! re-exported here, so `link::server::*` names what it always did.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Map;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio::time::{sleep_until, timeout, Instant};
use tokio_rustls::TlsAcceptor;

use super::addresses::OfferedAddress;
use super::budget::{Budget, Evicted, Eviction, PendingTicket};
use super::connection;
use super::diagnostics::{listen_addresses, FailureKind, LinkDiagnostics, MdnsStatus};
use super::flood::FloodGate;
use super::identity::DesktopIdentity;
use super::mdns::Advertisement;
use super::pairing::{PairingBackoff, PairingInvite, PairingWindow};
use super::shared::{lock, Command, Diag, Networks, OpenPairing, Shared};
use super::trust::{PairedPhone, TrustError, TrustFile};
use super::wire::{self, ifp};

pub use super::config::{FrameLog, LinkConfig, DEFAULT_PORT};
pub use super::connection::DRAIN_MAX;
pub use super::event::{
    LinkEvent, MessageCredit, PairingEnd, PendingPairing, MAX_UNAPPLIED, MAX_UNAPPLIED_BYTES,
};

/// How many ports [`bind`] tries, starting at the preferred one.
pub const PORT_TRIES: u16 = 10;

/// How long past [`LinkConfig::hello_timeout`] a connection without hello may linger before the
/// listener aborts its task wherever it is stuck (its own deadline closes it cleanly first).
const OVERDUE_GRACE: Duration = Duration::from_secs(3);

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
    /// The fixed port (Settings) is taken by another program.
    #[error("port {port} on {ip}, which Settings fixes for firewall rules, is taken by another program, so the phone link did not start (no other port was taken instead): close the program using it (`ss -ltnp 'sport = :{port}'` on Linux, `lsof -nP -iTCP:{port} -sTCP:LISTEN` on macOS, `netstat -ano | findstr :{port}` on Windows names it) or choose another port in Settings, then restart Switchboard")]
    PortTaken {
        /// The address tried.
        ip: IpAddr,
        /// The port.
        port: u16,
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
    /// No pending pairing has that id (it was confirmed, refused or expired meanwhile).
    #[error("no pairing waits for confirmation under {0}: it ended meanwhile (confirmed, refused, expired, or the phone went away); open a new pairing window to try again")]
    NoPendingPairing(String),
}

/// How the listener's port is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortChoice {
    /// This port, or the next free one up to [`PORT_TRIES`] ports on (0: an ephemeral port).
    Range(u16),
    /// Exactly this port (the Settings' fixed port, for firewall rules): taken is an error.
    Fixed(u16),
}

/// A bound listener and the ports of its range found taken by another program on the way.
#[derive(Debug)]
pub struct Bound {
    /// The listener.
    pub listener: TcpListener,
    /// Ports tried before the bound one and found in use, in order (empty when the first was
    /// free).
    pub taken: Vec<u16>,
}

/// Binds `ip:port`, or the next free port up to [`PORT_TRIES`] ports on; port 0 binds an
/// ephemeral port.
pub async fn bind(ip: IpAddr, port: u16) -> Result<TcpListener, LinkError> {
    Ok(bind_port(ip, false, PortChoice::Range(port))?.listener)
}

/// Binds a dual-stack listener on `[::]:port` (IPv6 with `IPV6_V6ONLY` off, so IPv4 phones
/// reach it too as `::ffff:a.b.c.d`), or the next free port up to [`PORT_TRIES`] ports on
/// (port 0: an ephemeral port). Where IPv6 is unavailable (disabled in the kernel), binds
/// `0.0.0.0` instead, as [`bind`] does.
///
/// Errors: [`LinkError::NoFreePort`] when every port in the range is taken; the socket's error
/// otherwise.
pub async fn bind_dual_stack(port: u16) -> Result<TcpListener, LinkError> {
    Ok(bind_port(
        IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
        true,
        PortChoice::Range(port),
    )?
    .listener)
}

/// Binds `ip` (with `dual_stack` and `ip` = `::`, IPv6 with `IPV6_V6ONLY` off, falling back to
/// `0.0.0.0` where IPv6 is unavailable) on the port `choice` says, and reports the ports found
/// taken on the way (Troubleshoot names them).
///
/// Errors: [`LinkError::PortTaken`] for a fixed port in use, [`LinkError::NoFreePort`] when the
/// whole range is; the socket's error otherwise.
pub fn bind_port(ip: IpAddr, dual_stack: bool, choice: PortChoice) -> Result<Bound, LinkError> {
    use socket2::{Domain, Protocol, Socket, Type};
    let open = |ip: IpAddr, p: u16, v6only_off: bool| -> std::io::Result<TcpListener> {
        let domain = if ip.is_ipv6() {
            Domain::IPV6
        } else {
            Domain::IPV4
        };
        let s = Socket::new(domain, Type::STREAM, Some(Protocol::TCP))?;
        if v6only_off {
            s.set_only_v6(false)?;
        }
        reuse_options(&s);
        s.set_nonblocking(true)?;
        s.bind(&SocketAddr::new(ip, p).into())?;
        s.listen(1024)?;
        TcpListener::from_std(s.into())
    };
    let (first, last) = match choice {
        PortChoice::Range(0) | PortChoice::Fixed(0) => (0, 0),
        PortChoice::Range(p) => (p, p.saturating_add(PORT_TRIES - 1)),
        PortChoice::Fixed(p) => (p, p),
    };
    let mut ip = ip;
    let mut v6only_off = dual_stack && ip.is_ipv6() && ip.is_unspecified();
    let mut taken = Vec::new();
    let mut p = first;
    loop {
        match open(ip, p, v6only_off) {
            Ok(listener) => return Ok(Bound { listener, taken }),
            Err(e) if v6only_off && ipv6_unavailable(&e) => {
                ip = IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED);
                v6only_off = false;
                continue;
            }
            Err(e) if port_taken(&e) && p != 0 => taken.push(p),
            Err(e) => return Err(e.into()),
        }
        if p >= last {
            break;
        }
        p += 1;
    }
    Err(match choice {
        PortChoice::Fixed(port) => LinkError::PortTaken { ip, port },
        PortChoice::Range(_) => LinkError::NoFreePort { ip, first, last },
    })
}

/// Unix: `SO_REUSEADDR`, so a restart binds the port while the last run's connections are in
/// `TIME_WAIT` (it never lets two listeners share a port there). Windows: never `SO_REUSEADDR`,
/// which there lets a second listener (a second Switchboard, or any program) bind the same port
/// and take connections; `SO_EXCLUSIVEADDRUSE` instead, so nobody can bind it over this one. A
/// system that refuses the option gets the default (Windows already lets a restart bind past
/// `TIME_WAIT`), logged.
fn reuse_options(s: &socket2::Socket) {
    #[cfg(not(windows))]
    if let Err(e) = s.set_reuse_address(true) {
        tracing::debug!("SO_REUSEADDR not set: {e}");
    }
    #[cfg(windows)]
    {
        use std::os::windows::io::AsRawSocket as _;
        use windows_sys::Win32::Networking::WinSock::{
            setsockopt, SOCKET_ERROR, SOL_SOCKET, SO_EXCLUSIVEADDRUSE,
        };
        let on: i32 = 1;
        // SAFETY: an open socket, a 4-byte BOOL option value that outlives the call.
        let r = unsafe {
            setsockopt(
                s.as_raw_socket() as usize,
                SOL_SOCKET,
                SO_EXCLUSIVEADDRUSE,
                (&on as *const i32).cast::<u8>(),
                std::mem::size_of::<i32>() as i32,
            )
        };
        if r == SOCKET_ERROR {
            tracing::debug!(
                "SO_EXCLUSIVEADDRUSE not set: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}

/// Whether binding failed because another socket holds the port: `EADDRINUSE` everywhere, and
/// on Windows also `WSAEACCES` (10013), which a port held with `SO_EXCLUSIVEADDRUSE` (or
/// reserved by the system, e.g. Hyper-V's excluded ranges) gives instead.
pub fn port_taken(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::AddrInUse || (cfg!(windows) && e.raw_os_error() == Some(10013))
}

/// Whether opening an IPv6 socket failed because this machine has no IPv6 (Linux:
/// `EAFNOSUPPORT` 97, or `EADDRNOTAVAIL` 99 when IPv6 is disabled by sysctl; elsewhere the error
/// is returned as it is).
fn ipv6_unavailable(e: &std::io::Error) -> bool {
    cfg!(target_os = "linux") && matches!(e.raw_os_error(), Some(97) | Some(99))
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
        let budget = Budget::new(
            config.max_unauthenticated,
            config.max_unauthenticated_per_source,
        );
        let shared = Shared {
            budget: Arc::new(Mutex::new(budget)),
            identity,
            acceptor: TlsAcceptor::from(tls),
            config,
            trust_file,
            trust: Mutex::new(phones),
            pairing: Mutex::new(None),
            pending: Mutex::new(None),
            pair_backoff: Mutex::new(PairingBackoff::default()),
            sessions: Mutex::new(HashMap::new()),
            events: tx,
            diag: Mutex::new(Diag {
                bound: None,
                mdns,
                failures: VecDeque::new(),
                pre_hello: VecDeque::new(),
                flood: FloodGate::default(),
                attempts: VecDeque::new(),
                clock_skews: Default::default(),
                ports_taken: Vec::new(),
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
        let mut offered_now = super::addresses::offered_addresses(local.ip());
        let mut ad = if self.shared.config.mdns {
            let served: Vec<IpAddr> = offered_now.iter().filter_map(OfferedAddress::ip).collect();
            match Advertisement::start(
                &self.shared.identity.device_id(),
                local.port(),
                self.shared.config.protocol,
                self.shared.identity.cert_fingerprint(),
                &served,
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
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut tasks = tokio::task::JoinSet::new();
        let budget = self.shared.budget.clone();
        let overdue_after = self.shared.config.hello_timeout + OVERDUE_GRACE;
        let every = self
            .shared
            .config
            .address_check
            .max(Duration::from_millis(10));
        let mut check = tokio::time::interval_at(Instant::now() + every, every);
        check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tokio::pin!(shutdown);
        loop {
            let due = lock(&budget).next_due(overdue_after);
            let accepted = tokio::select! {
                _ = &mut shutdown => break,
                _ = check.tick() => {
                    self.check_addresses(local, &mut offered_now, ad.as_mut());
                    continue;
                }
                _ = async {
                    match due {
                        Some(at) => sleep_until(at).await,
                        None => std::future::pending().await,
                    }
                } => {
                    let late = lock(&budget).overdue(Instant::now(), overdue_after);
                    self.report_evicted(&late);
                    continue;
                }
                a = listener.accept() => a,
            };
            let (tcp, peer) = match accepted {
                // An IPv4 phone on the dual-stack listener is a.b.c.d, not ::ffff:a.b.c.d (in
                // diagnostics and in the per-source pairing backoff).
                Ok((tcp, p)) => (tcp, SocketAddr::new(p.ip().to_canonical(), p.port())),
                Err(e) => {
                    tracing::warn!("link accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let now = Instant::now();
            let known = self.shared.is_known_source(peer.ip());
            let (n, evicted) = lock(&budget).admit(peer, known, now);
            self.report_evicted(&evicted);
            let ticket = PendingTicket::new(budget.clone(), n);
            let shared = self.shared.clone();
            let stop = stop_rx.clone();
            let abort = tasks.spawn(async move {
                connection::serve(shared, tcp, peer, now, ticket, stop).await;
            });
            // False when the connection already ended (nothing left to abort).
            let _ = lock(&budget).set_abort(n, abort);
            while tasks.try_join_next().is_some() {}
        }
        // Connections without hello have nothing to flush: dropped at once. Live ones close
        // with a close frame.
        let held = lock(&budget).take_all();
        for task in held {
            task.abort();
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

    /// Looks at the machine's addresses again ([`LinkConfig::address_check`]); when they are not
    /// `known` any more, advertises the new ones over mDNS, lets an open pairing window that
    /// follows the machine's networks offer them, and sends [`LinkEvent::AddressesChanged`].
    fn check_addresses(
        &self,
        local: SocketAddr,
        known: &mut Vec<OfferedAddress>,
        ad: Option<&mut Advertisement>,
    ) {
        let now = super::addresses::offered_addresses(local.ip());
        if now == *known {
            return;
        }
        tracing::info!(
            before = ?known.iter().map(|a| a.address.as_str()).collect::<Vec<_>>(),
            now = ?now.iter().map(|a| a.address.as_str()).collect::<Vec<_>>(),
            "this computer's addresses changed; offering the new ones"
        );
        known.clone_from(&now);
        if let Some(ad) = ad {
            let served: Vec<IpAddr> = now.iter().filter_map(OfferedAddress::ip).collect();
            match ad.readvertise(&served) {
                Ok(fullname) => lock(&self.shared.diag).mdns = MdnsStatus::Advertising { fullname },
                Err(reason) => {
                    let reason = format!("advertising the new addresses: {reason}");
                    lock(&self.shared.diag).mdns = MdnsStatus::Unavailable {
                        reason: reason.clone(),
                    };
                    self.shared.fail(FailureKind::Mdns, reason, None, None);
                }
            }
        }
        if let Some(open) = lock(&self.shared.pairing).as_mut() {
            if let Some(follow) = &open.follow {
                let picked = follow.pick(&now);
                // A chosen network that lost every address keeps what the card showed.
                if !picked.is_empty() {
                    open.addrs = picked;
                }
            }
        }
        let _ = self
            .shared
            .events
            .send(LinkEvent::AddressesChanged { addresses: now });
    }

    /// Ends the tasks of connections the budget dropped and records them as failures before hello (coalesced per source
    /// by the flood gate, so a flood of them costs a few reports a minute).
    fn report_evicted(&self, evicted: &[Evicted]) {
        let cfg = &self.shared.config;
        for e in evicted {
            e.abort();
            let held = format!("{:.1} s", e.held.as_secs_f32());
            let words = match e.why {
                Eviction::SourceFull => format!(
                    "connection from {} dropped after {held} without hello to make room: its address opened another one while holding {} (the most one address may hold without hello)",
                    e.peer, cfg.max_unauthenticated_per_source
                ),
                Eviction::TotalFull => format!(
                    "connection from {} dropped after {held} without hello to make room: {} connections without hello were held (the most in all), its address held the most",
                    e.peer, cfg.max_unauthenticated
                ),
                Eviction::Overdue => format!(
                    "connection from {} dropped: no valid hello within {} s of its TCP accept",
                    e.peer,
                    cfg.hello_timeout.as_secs_f32()
                ),
            };
            self.shared
                .fail_before_hello(FailureKind::Evicted, words, None, Some(e.peer));
        }
    }

    /// Opens (or reopens) the pairing window; the link advertises `addr` (the address the
    /// phone should dial, e.g. [`super::diagnostics::lan_address`]) and the bound port.
    ///
    /// Only the person does this: the window's lifetime (`pairing_ttl_ms`) and its budget of
    /// [`MAX_WRONG_TRIES`](super::pairing::MAX_WRONG_TRIES) wrong codes are fixed here and
    /// nothing a phone sends extends them. Reopening replaces the code and starts a new budget;
    /// the backoff on wrong codes stays.
    pub fn open_pairing(&self, addr: IpAddr) -> PairingInvite {
        self.open_pairing_offering(vec![super::addresses::describe(addr)])
    }

    /// Opens (or reopens) the pairing window offering every address in `addrs` (most likely
    /// first, e.g. [`super::addresses::offered_addresses`] of the bound address): the link
    /// carries as many as fit ([`super::pairing::fit_addresses`]) and the invite names the ones
    /// left out. With `addrs` empty the link names loopback. Otherwise as
    /// [`Link::open_pairing`].
    pub fn open_pairing_offering(&self, addrs: Vec<OfferedAddress>) -> PairingInvite {
        self.open_window(addrs, None)
    }

    /// Opens (or reopens) the pairing window offering this machine's addresses
    /// ([`Link::offered_addresses`]) on the interfaces named in `networks` (`None`: every
    /// network), and keeps offering them as they change while the window is open (checked
    /// every [`LinkConfig::address_check`]): the code stays, the link, its QR code and the typed
    /// lines name the addresses of now. Otherwise as [`Link::open_pairing_offering`] (with no
    /// address on those networks, the link names loopback; callers check first, as
    /// `PhonesState::open_pairing_on` does).
    pub fn open_pairing_on(&self, networks: Option<Vec<String>>) -> PairingInvite {
        let follow = match networks {
            None => Networks::All,
            Some(names) => Networks::Only(names),
        };
        let addrs = follow.pick(&self.offered_addresses());
        self.open_window(addrs, Some(follow))
    }

    fn open_window(&self, addrs: Vec<OfferedAddress>, follow: Option<Networks>) -> PairingInvite {
        let now = self.shared.config.clock.now_ms();
        let window = PairingWindow::open(now, self.shared.config.pairing_ttl_ms);
        let addrs = if addrs.is_empty() {
            vec![super::addresses::describe(IpAddr::V4(
                std::net::Ipv4Addr::LOCALHOST,
            ))]
        } else {
            addrs
        };
        let inv = self.shared.invite_for(&window, &addrs);
        *lock(&self.shared.pairing) = Some(OpenPairing {
            window,
            addrs,
            held_by: None,
            follow,
        });
        inv
    }

    /// The addresses this desktop offers phones for the listener it runs: every address of
    /// every interface that is up, of the families the listener serves, most likely first
    /// ([`super::addresses::offered_addresses`]); empty before [`Link::run`].
    pub fn offered_addresses(&self) -> Vec<OfferedAddress> {
        self.local_addr()
            .map(|b| super::addresses::offered_addresses(b.ip()))
            .unwrap_or_default()
    }

    /// The pairing that waits for confirmation, if any: its signature verified, the person on
    /// the desktop is to compare its verification code with the phone's screen. Nothing is in
    /// the trust file until [`Link::confirm_pairing`] said the codes match and the phone sent its
    /// own `pair.confirm`.
    pub fn pending_pairing(&self) -> Option<PendingPairing> {
        lock(&self.shared.pending).as_ref().map(|p| p.info.clone())
    }

    /// The person's answer to the pending pairing `id`: `codes_match` when the phone shows the
    /// same verification code. With `true`, the phone's key is pinned once the phone confirmed
    /// too (maybe already); with `false` the pending pairing is discarded, nothing is written,
    /// and the pairing window closes (the person opens a new one, with the phone in view).
    ///
    /// Errors: [`LinkError::NoPendingPairing`] when no pending pairing has that id (it ended).
    pub fn confirm_pairing(&self, id: &str, codes_match: bool) -> Result<(), LinkError> {
        let pending = lock(&self.shared.pending);
        let slot = pending
            .as_ref()
            .filter(|p| p.info.id == id)
            .ok_or_else(|| LinkError::NoPendingPairing(id.to_string()))?;
        slot.tx
            .send(Command::PairDecision(codes_match))
            .map_err(|_| LinkError::NoPendingPairing(id.to_string()))
    }

    /// Closes the pairing window, if open.
    pub fn close_pairing(&self) {
        *lock(&self.shared.pairing) = None;
    }

    /// The open pairing window's invite, if any: `None` once the window was used, expired, or
    /// closed after its last allowed wrong code, and while a pairing made with its code waits
    /// for confirmation ([`Link::pending_pairing`]).
    pub fn pairing_invite(&self) -> Option<PairingInvite> {
        let now = self.shared.config.clock.now_ms();
        let mut p = lock(&self.shared.pairing);
        if p.as_ref().is_some_and(|o| o.window.expired(now)) {
            *p = None;
        }
        p.as_ref()
            .filter(|o| !o.window.held())
            .map(|o| self.shared.invite_for(&o.window, &o.addrs))
    }

    /// Sends an app message to the connected phone `device_id`.
    ///
    /// Takes only [`switchboard_wire::ifp::OutgoingMessage`], which cannot express `action.approve`,
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

    /// Records the ports another program held when the listener was bound ([`Bound::taken`]),
    /// for diagnostics and Troubleshoot.
    pub fn note_ports_taken(&self, taken: Vec<u16>) {
        lock(&self.shared.diag).ports_taken = taken;
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
        let (bound, mdns, failures, phone_attempts, ports_taken, skews) = {
            let d = lock(&self.shared.diag);
            let mut failures: Vec<_> = d
                .failures
                .iter()
                .cloned()
                .chain(d.pre_hello.iter().map(|(_, f)| f.clone()))
                .collect();
            failures.sort_by_key(|f| f.at_ms);
            let attempts: Vec<_> = d.attempts.iter().cloned().collect();
            (
                d.bound,
                d.mdns.clone(),
                failures,
                attempts,
                d.ports_taken.clone(),
                d.clock_skews.clone(),
            )
        };
        // Phones unpaired since are left out. Read before the struct below, whose `paired`
        // holds the trust lock to its end.
        let clock_skews: Vec<_> = {
            let trust = lock(&self.shared.trust);
            skews
                .into_values()
                .filter(|s| trust.iter().any(|p| p.device_id == s.device_id))
                .collect()
        };
        let (without_hello, evicted) = {
            let b = lock(&self.shared.budget);
            (b.held(), b.evicted_total())
        };
        LinkDiagnostics {
            port: bound.map(|b| b.port()),
            addresses: bound.map(|b| listen_addresses(b.ip())).unwrap_or_default(),
            mdns,
            cert_fingerprint: self.shared.identity.cert_fingerprint().to_string(),
            desktop_device_id: self.shared.identity.device_id(),
            paired: lock(&self.shared.trust).len(),
            connected: self.connected(),
            without_hello,
            evicted,
            phone_attempts,
            recent_failures: failures,
            ports_taken,
            clock_skews,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::net::Ipv4Addr;

    const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

    /// A second Switchboard on the port the first holds takes the next one (on Windows too,
    /// where `SO_REUSEADDR` would have let both bind it, and the refusal is `WSAEACCES`), and
    /// names the port as taken; fixed, it is said.
    #[tokio::test]
    async fn a_second_listener_never_shares_the_port() {
        let first = bind_port(LOOPBACK, false, PortChoice::Range(0)).unwrap();
        let port = first.listener.local_addr().unwrap().port();
        let second = bind_port(LOOPBACK, false, PortChoice::Range(port)).unwrap();
        let got = second.listener.local_addr().unwrap().port();
        assert_ne!(got, port, "two listeners on one port");
        assert_eq!(second.taken.first(), Some(&port), "{:?}", second.taken);
        assert!(matches!(
            bind_port(LOOPBACK, false, PortChoice::Fixed(port)),
            Err(LinkError::PortTaken { port: p, .. }) if p == port
        ));
    }

    /// Another program binding with `SO_REUSEADDR` (what Windows lets hijack a port) cannot
    /// take the port the link holds.
    #[tokio::test]
    async fn another_program_with_reuseaddr_cannot_take_the_port() {
        let ours = bind_port(LOOPBACK, false, PortChoice::Range(0)).unwrap();
        let port = ours.listener.local_addr().unwrap().port();
        let other = socket2::Socket::new(
            socket2::Domain::IPV4,
            socket2::Type::STREAM,
            Some(socket2::Protocol::TCP),
        )
        .unwrap();
        other.set_reuse_address(true).unwrap();
        let e = other
            .bind(&SocketAddr::new(LOOPBACK, port).into())
            .and_then(|()| other.listen(8))
            .expect_err("the other program bound the link's port");
        assert!(port_taken(&e), "{e:?}");
    }
}
