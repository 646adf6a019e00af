//! Reaching the desktop: TCP, TLS 1.3 pinned to the desktop certificate (or trusted on first
//! use), the WebSocket upgrade and the desktop's first `control.hello`; with several addresses,
//! concurrent tries Happy Eyeballs style (RFC 8305).
//!
//! `docs/protocol.md`, "Link: pairing and sessions" and "Typed pairing line".

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use tokio::net::{TcpSocket, TcpStream};
use tokio_rustls::TlsConnector;

use super::{PhoneClient, PhoneError};
use crate::binding::{HelloBinding, CERT_EXT, PINNED_PROOF_EXT};
use crate::diagnostics::{AttemptOutcome, LinkAttempt, MAX_ATTEMPT_ERROR_CHARS};
use crate::identity::CERT_NAME;
use crate::pairing::{EXPORTER_LEN, HELLO_EXPORTER_LABEL, PENDING_TTL_MS};
use crate::tls::{pinned_client_config, PinnedCertVerifier};
use switchboard_wire::clock::{Clock, SystemClock};

impl PhoneClient {
    /// Connects to `addr`, trusting only the certificate with fingerprint `pinned_fp`, and
    /// reads the desktop's first `control.hello` (the connection nonce in `x-ifp-nonce`).
    ///
    /// Errors: [`PhoneError::CertificateMismatch`] when the desktop presents another
    /// certificate; [`PhoneError::Protocol`] when the first frame is not a challenge.
    pub async fn connect(addr: SocketAddr, pinned_fp: &str) -> Result<Self, PhoneError> {
        Self::connect_from(addr, pinned_fp, None).await
    }

    /// [`PhoneClient::connect`] from the local address `from` (e.g. `127.0.0.2`, so tests on
    /// loopback can play several hosts); `None` lets the system choose.
    ///
    /// Errors as [`PhoneClient::connect`]; [`PhoneError::Connect`] when `from` cannot be bound.
    pub async fn connect_from(
        addr: SocketAddr,
        pinned_fp: &str,
        from: Option<IpAddr>,
    ) -> Result<Self, PhoneError> {
        Self::connect_inner(addr, Some(pinned_fp), from, system_clock()).await
    }

    /// Connects to `addr` trusting whatever certificate it presents, and records its
    /// fingerprint as the one to pin ([`PhoneClient::cert_fp`]): trust on first use, only for
    /// pairing from a typed line (`address:port` and the code, no fingerprint;
    /// `docs/protocol.md`, "Typed pairing line"). The pairing's signature and verification code
    /// bind that fingerprint, so a host in the middle shows the person codes that differ.
    ///
    /// Errors as [`PhoneClient::connect`] (never a certificate mismatch).
    pub async fn connect_first_use(addr: SocketAddr) -> Result<Self, PhoneError> {
        Self::connect_inner(addr, None, None, system_clock()).await
    }

    /// The certificate fingerprint this connection pins (given, or seen on first use).
    pub fn cert_fp(&self) -> &str {
        &self.cert_fp
    }

    /// The one constructor: every way of connecting ends here, with the clock the phone keeps.
    async fn connect_inner(
        addr: SocketAddr,
        pin: Option<&str>,
        from: Option<IpAddr>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, PhoneError> {
        let wait = Duration::from_secs(10);
        let verifier = Arc::new(match pin {
            Some(fp) => PinnedCertVerifier::new(fp),
            None => PinnedCertVerifier::first_use(),
        });
        let pinned_fp = pin.unwrap_or_default();
        let cfg =
            pinned_client_config(verifier.clone()).map_err(|e| PhoneError::Tls(e.to_string()))?;
        let tcp = tokio::time::timeout(wait, async {
            match from {
                None => TcpStream::connect(addr).await,
                Some(ip) => {
                    let sock = if ip.is_ipv4() {
                        TcpSocket::new_v4()?
                    } else {
                        TcpSocket::new_v6()?
                    };
                    sock.bind(SocketAddr::new(ip, 0))?;
                    sock.connect(addr).await
                }
            }
        })
        .await
        .map_err(|_| PhoneError::Timeout("TCP connect".into()))??;
        // Small frames, latency matters: no Nagle delay (as the desktop's side).
        tcp.set_nodelay(true)?;
        let name = rustls::pki_types::ServerName::try_from(CERT_NAME)
            .map_err(|e| PhoneError::Tls(e.to_string()))?;
        let tls = match tokio::time::timeout(wait, TlsConnector::from(cfg).connect(name, tcp)).await
        {
            Err(_) => return Err(PhoneError::Timeout("TLS handshake".into())),
            Ok(Err(e)) => {
                let seen = verifier.seen();
                if pin.is_some() && seen.as_deref() != Some(&pinned_fp.to_ascii_lowercase()) {
                    return Err(PhoneError::CertificateMismatch {
                        expected: pinned_fp.to_string(),
                        got: seen,
                    });
                }
                return Err(PhoneError::Tls(e.to_string()));
            }
            Ok(Ok(s)) => s,
        };
        let exporter = tls
            .get_ref()
            .1
            .export_keying_material([0u8; EXPORTER_LEN], HELLO_EXPORTER_LABEL, None)
            .map(|b| URL_SAFE_NO_PAD.encode(b))
            .map_err(|e| PhoneError::Tls(format!("no exporter value: {e}")))?;
        let url = format!("wss://{addr}/ifp");
        let (ws, _) = tokio::time::timeout(wait, tokio_tungstenite::client_async(url, tls))
            .await
            .map_err(|_| PhoneError::Timeout("WebSocket upgrade".into()))?
            .map_err(|e| PhoneError::WebSocket(e.to_string()))?;
        let mut c = Self {
            ws,
            nonce: String::new(),
            exporter,
            cert_fp: match pin {
                Some(fp) => fp.to_ascii_lowercase(),
                None => verifier.seen().unwrap_or_default(),
            },
            desktop_range: (0, 0),
            wait,
            confirm_wait: Duration::from_millis(PENDING_TTL_MS) + Duration::from_secs(10),
            answer_pings: true,
            received: Vec::new(),
            desktop_public_key: None,
            intro_proof: String::new(),
            intro_pinned_proof: String::new(),
            desktop_cert: None,
            binding: HelloBinding::Exporter,
            link_attempts: Vec::new(),
            connected_to: addr,
            clock_offset_ms: 0,
            clock,
        };
        let ch = c.expect("control.hello").await?;
        c.nonce = ch["ext"]["x-ifp-nonce"]
            .as_str()
            .ok_or_else(|| PhoneError::Protocol("desktop hello without x-ifp-nonce".into()))?
            .to_string();
        c.intro_proof = ch["payload"]["proof"].as_str().unwrap_or("").to_string();
        c.intro_pinned_proof = ch["ext"][PINNED_PROOF_EXT]
            .as_str()
            .unwrap_or("")
            .to_string();
        c.desktop_cert = ch["ext"][CERT_EXT]
            .as_str()
            .and_then(|b| URL_SAFE_NO_PAD.decode(b).ok());
        c.desktop_range = (
            ch["payload"]["protocol"]["min"].as_u64().unwrap_or(0),
            ch["payload"]["protocol"]["max"].as_u64().unwrap_or(0),
        );
        Ok(c)
    }

    /// Connects to the first of `addrs` that completes TLS with the pinned certificate (and
    /// sends the desktop's first hello), trying them concurrently, Happy Eyeballs style (RFC
    /// 8305): the next address starts [`ATTEMPT_STAGGER`] after the previous one, or at once
    /// when the previous one failed. The winner keeps the tries that did not become the
    /// connection in [`PhoneClient::link_attempts`] (failed ones with their error, and the ones
    /// still running when it won, as abandoned), which its hello reports.
    ///
    /// Errors: with one address, that address's error as [`PhoneClient::connect`] gives it;
    /// with several, [`PhoneError::Unreachable`] listing every try; with none,
    /// [`PhoneError::Unreachable`] with no tries.
    pub async fn connect_any(addrs: &[SocketAddr], pinned_fp: &str) -> Result<Self, PhoneError> {
        Self::connect_any_inner(addrs, Some(pinned_fp), system_clock()).await
    }

    /// [`PhoneClient::connect_any`] trusting whatever certificate the first address to answer
    /// presents (trust on first use, as [`PhoneClient::connect_first_use`]): for pairing from a
    /// typed line naming several addresses, or from addresses mDNS gave, where no fingerprint
    /// is known. The fingerprint seen is [`PhoneClient::cert_fp`]; the pairing's verification
    /// code, which the person compares, binds it (`docs/protocol.md`, "Typed pairing line").
    ///
    /// Errors as [`PhoneClient::connect_any`] (never a certificate mismatch).
    pub async fn connect_any_first_use(addrs: &[SocketAddr]) -> Result<Self, PhoneError> {
        Self::connect_any_inner(addrs, None, system_clock()).await
    }

    /// [`PhoneClient::connect_any`] (with `pinned_fp`) or [`PhoneClient::connect_any_first_use`]
    /// (without), the phone reading `clock` ([`PhoneClient::clock`]) for the `ts` of its
    /// messages and the times of its link attempts: the reference phone hands in the one clock
    /// of its run, tests a `ManualClock`.
    ///
    /// Errors as [`PhoneClient::connect_any`].
    pub async fn connect_any_with_clock(
        addrs: &[SocketAddr],
        pinned_fp: Option<&str>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, PhoneError> {
        Self::connect_any_inner(addrs, pinned_fp, clock).await
    }

    async fn connect_any_inner(
        addrs: &[SocketAddr],
        pinned_fp: Option<&str>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, PhoneError> {
        if let [one] = addrs {
            return Self::connect_inner(*one, pinned_fp, None, clock).await;
        }
        let mut set = tokio::task::JoinSet::new();
        let mut started: Vec<(SocketAddr, u64, tokio::time::Instant)> = Vec::new();
        let mut attempts: Vec<LinkAttempt> = Vec::new();
        let mut next = 0usize;
        let mut next_at = tokio::time::Instant::now();
        loop {
            if next < addrs.len() && (set.is_empty() || tokio::time::Instant::now() >= next_at) {
                let addr = addrs[next];
                let fp = pinned_fp.map(str::to_string);
                let each = clock.clone();
                started.push((addr, clock.now_ms(), tokio::time::Instant::now()));
                set.spawn(async move {
                    (
                        addr,
                        Self::connect_inner(addr, fp.as_deref(), None, each).await,
                    )
                });
                next += 1;
                next_at = tokio::time::Instant::now() + ATTEMPT_STAGGER;
                continue;
            }
            if set.is_empty() {
                return Err(PhoneError::Unreachable(attempts));
            }
            let more = next < addrs.len();
            tokio::select! {
                joined = set.join_next() => {
                    let Some(joined) = joined else { continue };
                    let (addr, result) = match joined {
                        Ok(x) => x,
                        Err(e) => return Err(PhoneError::Protocol(format!("connect task: {e}"))),
                    };
                    let (at_ms, t0) = started
                        .iter()
                        .find(|s| s.0 == addr)
                        .map(|s| (s.1, s.2))
                        .unwrap_or((clock.now_ms(), tokio::time::Instant::now()));
                    match result {
                        Ok(mut c) => {
                            set.abort_all();
                            for (a, at, t) in &started {
                                let done = *a == addr || attempts.iter().any(|x| x.addr == a.to_string());
                                if !done {
                                    attempts.push(LinkAttempt {
                                        addr: a.to_string(),
                                        outcome: AttemptOutcome::Abandoned,
                                        error: format!("still connecting when {addr} answered"),
                                        at_ms: *at,
                                        after_ms: ms_since(*t),
                                    });
                                }
                            }
                            attempts.sort_by_key(|a| a.at_ms);
                            c.link_attempts = attempts;
                            return Ok(c);
                        }
                        Err(e) => {
                            let mut error = e.to_string();
                            if error.chars().count() > MAX_ATTEMPT_ERROR_CHARS {
                                error = error.chars().take(MAX_ATTEMPT_ERROR_CHARS).collect();
                            }
                            attempts.push(LinkAttempt {
                                addr: addr.to_string(),
                                outcome: AttemptOutcome::Failed,
                                error,
                                at_ms,
                                after_ms: ms_since(t0),
                            });
                            // The next address starts at once (RFC 8305 section 5).
                            next_at = tokio::time::Instant::now();
                        }
                    }
                }
                _ = tokio::time::sleep_until(next_at), if more => {}
            }
        }
    }
}

/// How long after one try the next address starts (Happy Eyeballs, RFC 8305 suggests 250 ms).
pub const ATTEMPT_STAGGER: Duration = Duration::from_millis(250);

fn ms_since(t: tokio::time::Instant) -> u64 {
    u64::try_from(t.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// The clock a phone reads when none is handed in: the system clock, made here only.
fn system_clock() -> Arc<dyn Clock> {
    Arc::new(SystemClock)
}
