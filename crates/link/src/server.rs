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
//! connection's limits ([`DRAIN_MAX`], [`MAX_UNAPPLIED`], [`MAX_UNAPPLIED_DIALS`]) live in their own files and are
//! re-exported here, so `link::server::*` names what it always did; so do binding the listener
//! (`listen`: the port, the families, the socket options) and the handle's pairing side
//! (`pairing`: windows, invitations, confirmations), each in a file of its own.

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
use super::pairing::PairingBackoff;
use super::shared::{lock, Command, Diag, Shared};
use super::trust::{PairedPhone, TrustError, TrustFile};
use super::wire::{self, ifp};

pub use super::config::{FrameLog, LinkConfig, DEFAULT_PORT};
pub use super::connection::DRAIN_MAX;
pub use super::event::{
    LinkEvent, MessageCredit, PairingEnd, PendingPairing, MAX_UNAPPLIED, MAX_UNAPPLIED_BYTES,
    MAX_UNAPPLIED_DIALS,
};
pub use super::wire::FrameError;

mod listen;
mod pairing;

pub use listen::{bind, bind_dual_stack, bind_port, port_taken, Bound, PortChoice, PORT_TRIES};

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
    Refused(FrameError),
    /// No pending pairing has that id (it was confirmed, refused or expired meanwhile).
    #[error("no pairing waits for confirmation under {0}: it ended meanwhile (confirmed, refused, expired, or the phone went away); open a new pairing window to try again")]
    NoPendingPairing(String),
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
                Err(e) => {
                    let reason = e.to_string();
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
        let mut watch = super::addresses::AddressWatch::new(self.shared.config.address_check);
        tokio::pin!(shutdown);
        loop {
            let due = lock(&budget).next_due(overdue_after);
            let accepted = tokio::select! {
                _ = &mut shutdown => break,
                () = watch.changed() => {
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
                Err(e) => {
                    let reason = format!("advertising the new addresses: {e}");
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
