//! One phone's connection: TLS and WebSocket handshakes, the desktop's first `control.hello`,
//! then the per-socket read/write loop (keepalive, commands from the [`Link`](super::Link),
//! message credits, bounded drains of buffered frames, the dial shortcut).
//!
//! Why a file of its own: the listener ([`super::server`]) only accepts sockets and hands each
//! to [`serve`]; everything that happens on one socket is here. The two protocols a connection
//! speaks before it is live are its children: [`pair`] (`pair.request` / `pair.complete`) and
//! [`hello`] (the phone's `control.hello`); what each read from the socket becomes (dials,
//! validated frames, refusals) is judged in [`incoming`]. `ifp1-notes.md`, "Pairing and
//! identity"; `docs/protocol.md`, "Link: pairing and sessions".

mod hello;
mod incoming;
mod pair;

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use futures_util::{FutureExt as _, SinkExt as _, StreamExt as _};
use serde_json::{Map, Value};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch, Semaphore};
use tokio::time::{sleep_until, timeout, timeout_at, Instant};
use tokio_rustls::server::TlsStream;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use self::pair::{Grant, Pending};
use super::binding::{desktop_intro_pinned_signed_bytes, CERT_EXT, PINNED_PROOF_EXT};
use super::budget::PendingTicket;
use super::diagnostics::FailureKind;
use super::event::{LinkEvent, MAX_UNAPPLIED_BYTES, UNAPPLIED_UNIT};
use super::pairing::{desktop_intro_signed_bytes, EXPORTER_LEN, HELLO_EXPORTER_LABEL};
use super::shared::{lock, Command, Shared};
use super::trust::PairedPhone;
use super::wire::{self, ifp};
use switchboard_domain::phone_events::{DialFrame, SharedStrings};

/// Most frames already buffered on a connection handled in one go, before the connection
/// looks at its timers, commands and shutdown again; also the most dials handed to the app in
/// one [`LinkEvent::Dials`]. Each hand-off wakes the hub, so larger batches cost a flood fewer
/// wake-ups: on a 2-core machine 256 took about 5 % more dials a second than 64
/// (`docs/performance.md`, "2026-12-07, later"). A phone sending at a human pace fills no
/// batch, so it changes nothing for latency.
pub const DRAIN_MAX: usize = 256;

/// Longest time a closing connection goes on reading (and discarding) what the peer still
/// sends after the desktop's last frame, so its close does not become a reset
/// ([`Conn::linger`]; `docs/protocol.md`, "Close codes").
pub(super) const LINGER_MAX: Duration = Duration::from_secs(5);

/// A closing connection stops reading once the peer sent nothing for this long (nothing is
/// left unread, so closing sends a FIN, not a reset).
pub(super) const LINGER_IDLE: Duration = Duration::from_secs(1);

fn ws_config() -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(ifp::MAX_FRAME_BYTES))
        .max_frame_size(Some(ifp::MAX_FRAME_BYTES))
}

/// Serves one accepted socket until it closes or `stop` turns true.
///
/// `accepted` is when the listener accepted it; `ticket` is its place in the budget of
/// connections without hello, given up when its phone's hello verifies. Deadlines before hello
/// (`docs/protocol.md`, "Connection budget"): the TLS handshake within
/// [`LinkConfig::tls_timeout`] of the accept, the upgrade within
/// [`LinkConfig::upgrade_timeout`] after it, the first `pair.request` or `control.hello`
/// within [`LinkConfig::first_message_timeout`] after that, a valid hello within
/// [`LinkConfig::hello_timeout`] of the accept.
///
/// [`LinkConfig::tls_timeout`]: super::config::LinkConfig::tls_timeout
/// [`LinkConfig::upgrade_timeout`]: super::config::LinkConfig::upgrade_timeout
/// [`LinkConfig::first_message_timeout`]: super::config::LinkConfig::first_message_timeout
/// [`LinkConfig::hello_timeout`]: super::config::LinkConfig::hello_timeout
pub(super) async fn serve(
    shared: Arc<Shared>,
    tcp: TcpStream,
    peer: SocketAddr,
    accepted: Instant,
    ticket: PendingTicket,
    stop: watch::Receiver<bool>,
) {
    let tls_timeout = shared.config.tls_timeout;
    let upgrade_timeout = shared.config.upgrade_timeout;
    // The listener's side of this connection (which of the desktop's addresses the phone
    // reached; an IPv4 phone on a dual-stack listener shows as a.b.c.d, not ::ffff:a.b.c.d).
    let local = tcp
        .local_addr()
        .ok()
        .map(|a| SocketAddr::new(a.ip().to_canonical(), a.port()));
    // Frames and acknowledgements are small and latency matters: no Nagle delay.
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!("link: TCP_NODELAY on {peer}: {e}");
    }
    let tls = match timeout_at(accepted + tls_timeout, shared.acceptor.accept(tcp)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            let alert = e
                .get_ref()
                .and_then(|i| i.downcast_ref::<rustls::Error>())
                .map(|r| matches!(r, rustls::Error::AlertReceived(_)))
                .unwrap_or(false);
            if alert {
                shared.fail_before_hello(
                    FailureKind::CertificateMismatch,
                    format!("the peer at {peer} refused this desktop's TLS certificate ({e}): it expects another certificate fingerprint; this desktop's is {}", shared.identity.cert_fingerprint()),
                    None,
                    Some(peer),
                );
            } else {
                shared.fail_before_hello(
                    FailureKind::Handshake,
                    format!("TLS handshake with {peer} failed: {e}"),
                    None,
                    Some(peer),
                );
            }
            return;
        }
        Err(_) => {
            shared.fail_before_hello(
                FailureKind::Handshake,
                format!(
                    "TLS handshake with {peer} not done within {} s of the TCP accept",
                    tls_timeout.as_secs_f32()
                ),
                None,
                Some(peer),
            );
            return;
        }
    };
    // RFC 9266 style: a value only the two ends of this TLS session know, signed into every
    // hello proof so a proof cannot be carried to another session.
    let exporter = match tls.get_ref().1.export_keying_material(
        [0u8; EXPORTER_LEN],
        HELLO_EXPORTER_LABEL,
        None,
    ) {
        Ok(b) => wire::b64(&b),
        Err(e) => {
            shared.fail_before_hello(
                FailureKind::Handshake,
                format!("TLS with {peer}: no exporter value for the hello proof ({e})"),
                None,
                Some(peer),
            );
            return;
        }
    };
    let ws = match timeout(
        upgrade_timeout,
        tokio_tungstenite::accept_async_with_config(tls, Some(ws_config())),
    )
    .await
    {
        Ok(Ok(ws)) => ws,
        Ok(Err(e)) => {
            shared.fail_before_hello(
                FailureKind::Handshake,
                format!("WebSocket upgrade from {peer} failed: {e}"),
                None,
                Some(peer),
            );
            return;
        }
        Err(_) => {
            shared.fail_before_hello(
                FailureKind::Handshake,
                format!(
                    "WebSocket upgrade from {peer} not done within {} s of the TLS handshake",
                    upgrade_timeout.as_secs_f32()
                ),
                None,
                Some(peer),
            );
            return;
        }
    };
    let conn = shared.next_conn.fetch_add(1, Ordering::SeqCst);
    let mut c = Conn {
        nonce: wire::random_token(),
        exporter,
        shared,
        ws,
        peer,
        local,
        conn,
        stage: Stage::Fresh,
        accepted,
        ticket,
        write_failed: false,
        pair_requested: false,
        paired_now: false,
        unapplied: Arc::new(Semaphore::new(MAX_UNAPPLIED_BYTES / UNAPPLIED_UNIT)),
        dials: Vec::new(),
        dials_permit: None,
        shared_strings: SharedStrings::default(),
    };
    c.run(stop).await;
}

enum Stage {
    Fresh,
    Granted(Box<Grant>),
    /// The signature verified; waiting for the person's and the phone's confirmation.
    Pending(Box<Pending>),
    /// `phone` is `device_id` again, shared by the dials read on this connection.
    Live {
        device_id: String,
        phone: Arc<str>,
    },
}

enum Flow {
    Continue,
    Close,
}

struct Conn {
    shared: Arc<Shared>,
    ws: WebSocketStream<TlsStream<TcpStream>>,
    peer: SocketAddr,
    /// The desktop's address the phone reached, when the socket says.
    local: Option<SocketAddr>,
    nonce: String,
    /// This TLS session's exporter value ([`HELLO_EXPORTER_LABEL`]), unpadded base64url.
    exporter: String,
    conn: u64,
    stage: Stage,
    /// When the listener accepted the socket (the hello deadline counts from here).
    accepted: Instant,
    /// This connection's place in the budget of connections without hello.
    ticket: PendingTicket,
    /// A write failed or timed out: the connection closes after the frame being handled.
    write_failed: bool,
    /// A `pair.request` was seen on this connection (only one is allowed).
    pair_requested: bool,
    /// The phone was just paired on this connection (its hello deadline starts again).
    paired_now: bool,
    /// This connection's budget of messages held by the app:
    /// [`MAX_UNAPPLIED`](super::event::MAX_UNAPPLIED) messages
    /// ([`MAX_UNAPPLIED_DIALS`](super::event::MAX_UNAPPLIED_DIALS) dials) and
    /// [`MAX_UNAPPLIED_BYTES`] of their text, in permits of [`UNAPPLIED_UNIT`] bytes
    /// ([`unapplied_cost`](super::event::unapplied_cost) a message,
    /// [`unapplied_dial_cost`](super::event::unapplied_dial_cost) a dial).
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
            proof: self.shared.identity.sign_b64(&desktop_intro_signed_bytes(
                &self.nonce,
                &fp,
                &self.exporter,
            )),
            capabilities: vec![],
            protocol: ifp::ProtocolVersions {
                min: cfg.protocol.0.into(),
                max: cfg.protocol.1.into(),
            },
        });
        let mut ext = Map::new();
        ext.insert("x-ifp-nonce".into(), Value::from(self.nonce.clone()));
        // For phones in the pinned binding (no TLS exporter): the proof they check, and the
        // certificate their TLS stack must be handed (accepted by its SHA-256 alone).
        ext.insert(
            PINNED_PROOF_EXT.into(),
            Value::from(
                self.shared
                    .identity
                    .sign_b64(&desktop_intro_pinned_signed_bytes(&self.nonce, &fp)),
            ),
        );
        ext.insert(
            CERT_EXT.into(),
            Value::from(URL_SAFE_NO_PAD.encode(self.shared.identity.cert_der())),
        );
        let mut reason = String::from("connection closed");
        if self.send(intro, None, ext).await.is_err() {
            return;
        }
        let (tx, mut rx) = mpsc::unbounded_channel::<Command>();
        let mut tx = Some(tx);
        let mut hello_by = self.accepted + cfg.hello_timeout;
        let first_by = (Instant::now() + cfg.first_message_timeout).min(hello_by);
        let mut last_rx = Instant::now();
        let mut next_ping = Instant::now() + cfg.ping_interval;
        loop {
            let live = matches!(self.stage, Stage::Live { .. });
            let pending = match &self.stage {
                Stage::Pending(p) => Some(p.deadline),
                _ => None,
            };
            if self.paired_now {
                // Paired on this connection: the phone gets the full time for its hello.
                self.paired_now = false;
                hello_by = Instant::now() + cfg.hello_timeout;
            }
            // Before hello: the first pair.request or hello is due first, then a valid hello;
            // a pending pairing waits for the person until its own deadline.
            let greeted = self.pair_requested;
            let deadline = if live {
                last_rx + cfg.dead_after
            } else if let Some(d) = pending {
                d
            } else if greeted {
                hello_by
            } else {
                first_by
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
                    if pending.is_some() {
                        self.end_pending(crate::event::PairingEnd::Expired).await;
                        reason = "the pairing was not confirmed in time".into();
                        self.close(CloseCode::Policy, &reason).await;
                        break;
                    }
                    reason = if live {
                        format!("no frame within {} s (keepalive)", cfg.dead_after.as_secs_f32())
                    } else if greeted || deadline == hello_by {
                        format!("no valid control.hello within {} s of the TCP accept", cfg.hello_timeout.as_secs_f32())
                    } else {
                        format!("no pair.request or control.hello within {} s of the WebSocket upgrade", cfg.first_message_timeout.as_secs_f32())
                    };
                    if live {
                        let dev = self.device().map(str::to_string);
                        self.shared.fail(FailureKind::Timeout, format!("phone {} went silent: {reason}", dev.as_deref().unwrap_or("?")), dev.as_deref(), Some(self.peer));
                    } else {
                        self.shared.fail_before_hello(FailureKind::Timeout, format!("connection from {}: {reason}", self.peer), self.device(), Some(self.peer));
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
                cmd = rx.recv(), if live || pending.is_some() => {
                    match cmd {
                        Some(Command::PairDecision(codes_match)) => {
                            if let Flow::Close = self.on_pair_decision(codes_match).await {
                                reason = "pairing refused on the desktop".into();
                                break;
                            }
                        }
                        // Only the person's answer and a close reach a pending connection.
                        Some(Command::Send(_) | Command::Revoke(_)) if !live => {}
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
                    let mut flow = self.on_read(msg, &mut tx, &mut reason).await;
                    // Frames already buffered are handled here rather than one select (and its
                    // timers) per frame; bounded, so commands, pings and shutdown get their turn.
                    let mut drained = 0;
                    while matches!(flow, Flow::Continue) && drained < DRAIN_MAX {
                        let Some(msg) = self.ws.next().now_or_never() else {
                            break;
                        };
                        drained += 1;
                        flow = self.on_read(msg, &mut tx, &mut reason).await;
                    }
                    self.emit_dials();
                    if let Flow::Close = flow { break; }
                }
            }
        }
        self.emit_dials();
        // A pairing this connection started and did not finish costs its window one try.
        self.abandon_pairing();
        let mut disconnected = None;
        if let Stage::Live { device_id, .. } = &self.stage {
            let mut sessions = lock(&self.shared.sessions);
            if sessions.get(device_id).map(|s| s.conn) == Some(self.conn) {
                sessions.remove(device_id);
            }
            drop(sessions);
            disconnected = Some(device_id.clone());
        }
        if let Some(device_id) = disconnected {
            self.shared
                .emit(LinkEvent::PhoneDisconnected { device_id, reason });
        }
        self.linger().await;
    }

    /// Ends the connection so the peer can read the last frames: flushes what is queued, sends
    /// TLS `close_notify` and the TCP FIN (half-close), then reads and discards what the peer
    /// still sends until it closes its side, stays silent for [`LINGER_IDLE`], or
    /// [`LINGER_MAX`] has passed. Closing a socket with unread bytes makes the kernel answer
    /// with a reset, and a reset makes the peer's stack throw away what it had not read yet:
    /// after a frame over 1 MiB, refused from its header while the rest of it is still
    /// arriving, the `error` and the 1009 close would be lost (RFC 6455 §7.1.1 asks the same:
    /// the server closes TCP first, after the closing handshake, without a reset).
    async fn linger(&mut self) {
        let _ = timeout(LINGER_IDLE, self.ws.flush()).await;
        let _ = timeout(LINGER_IDLE, self.ws.get_mut().shutdown()).await;
        let end = Instant::now() + LINGER_MAX;
        // Raw TCP below TLS: nothing read now is looked at, so nothing is decrypted.
        let tcp = self.ws.get_mut().get_mut().0;
        let mut sink = vec![0u8; 16 * 1024];
        loop {
            let by = (Instant::now() + LINGER_IDLE).min(end);
            match timeout_at(by, tcp.read(&mut sink)).await {
                Ok(Ok(n)) if n > 0 => continue,
                // EOF, an error, silence or the end of the bound: nothing more to wait for.
                _ => break,
            }
        }
    }

    fn device(&self) -> Option<&str> {
        match &self.stage {
            Stage::Live { device_id, .. } => Some(device_id),
            Stage::Granted(g) => Some(&g.device_id),
            Stage::Pending(p) => Some(&p.grant.device_id),
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

    /// The one writer: only [`ifp::OutgoingFrame`]s reach the socket. A write that takes
    /// longer than [`LinkConfig::write_timeout`](super::config::LinkConfig::write_timeout)
    /// (the peer does not read) fails, and the caller closes the connection.
    async fn write_frame(&mut self, frame: ifp::OutgoingFrame) -> Result<(), ()> {
        let text = frame.into_string();
        if let Some(log) = &self.shared.config.frame_log {
            lock(log).push(text.clone());
        }
        let written = match timeout(
            self.shared.config.write_timeout,
            self.ws.send(Message::text(text)),
        )
        .await
        {
            Ok(r) => r.map_err(|_| ()),
            Err(_) => Err(()),
        };
        if written.is_err() {
            self.write_failed = true;
        }
        written
    }

    /// Takes this connection out of the budget of connections without hello, once its phone's
    /// hello verified and before anything is changed for it. False when the budget evicted it
    /// meanwhile (its task is being aborted): it must not go live.
    fn promote(&mut self) -> bool {
        self.ticket.promote()
    }

    async fn refuse(&mut self, class: ifp::ErrorClass, detail: String, parent: Option<String>) {
        let msg = ifp::OutgoingMessage::Error(ifp::ErrorPayload {
            class,
            detail: Some(detail),
            current_generation: None,
        });
        let _ = self.send(msg, parent, Map::new()).await;
    }

    /// Records a failure of this connection: a real one once it is live, else one before
    /// hello (coalesced per source, [`Shared::fail_before_hello`]).
    fn fail(&self, kind: FailureKind, words: String) {
        let dev = self.device();
        if matches!(self.stage, Stage::Live { .. }) {
            self.shared.fail(kind, words, dev, Some(self.peer));
        } else {
            self.shared
                .fail_before_hello(kind, words, dev, Some(self.peer));
        }
    }

    fn pinned(&self, device_id: &str) -> Option<PairedPhone> {
        lock(&self.shared.trust)
            .iter()
            .find(|p| p.device_id == device_id)
            .cloned()
    }
}
