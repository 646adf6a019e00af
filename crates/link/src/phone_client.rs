//! A phone end of the link, in Rust: for tests and the `switchboard-phone` tool.
//!
//! `docs/protocol.md`, "Link: pairing and sessions". It connects over TLS 1.3 trusting exactly
//! the desktop certificate whose fingerprint it was given (from the pairing link), reads the
//! desktop's first `control.hello` (its nonce), pairs with a code (`pair.request` →
//! `pair.grant` (with the desktop's commitment) → `pair.complete` (with the phone's nonce) →
//! `pair.reveal`, checks the commitment and shows the verification code: [`PhoneClient::pair_start`];
//! then `pair.confirm` → `pair.done` once both people confirmed: [`PhoneClient::pair_confirm`]),
//! says `control.hello` (its proof bound to this TLS session), sends messages and answers
//! `control.ping` while it waits for frames.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ed25519_dalek::{Signature, Signer as _, SigningKey, Verifier as _, VerifyingKey};
use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{json, Map, Value};
use tokio::net::{TcpSocket, TcpStream};
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use super::binding::{
    desktop_hello_pinned_signed_bytes, desktop_intro_pinned_signed_bytes,
    pinned_hello_signed_bytes, HelloBinding, BINDING_EXT, CERT_EXT, PINNED_PROOF_EXT,
};
use super::diagnostics::{
    AttemptOutcome, LinkAttempt, MAX_ATTEMPT_ERROR_CHARS, MAX_REPORTED_ATTEMPTS,
};
use super::identity::{key_fingerprint, CERT_NAME};
use super::pairing::{
    commitment_b64, desktop_hello_signed_bytes, desktop_intro_signed_bytes, hello_signed_bytes,
    pair_signed_bytes, random_nonce, verification_code, EXPORTER_LEN, HELLO_EXPORTER_LABEL,
    PENDING_TTL_MS,
};
use super::tls::{pinned_client_config, PinnedCertVerifier};
use super::wire::message_id;
use switchboard_wire::clock::{Clock as _, SystemClock};
use switchboard_wire::timefmt::rfc3339_ms;

/// Errors of the phone client.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PhoneError {
    /// TCP connect failed.
    #[error("connect: {0}")]
    Connect(#[from] std::io::Error),
    /// The desktop presented another certificate than the pinned one.
    #[error("certificate mismatch: pinned {expected}, the desktop presented {}", got.as_deref().unwrap_or("nothing"))]
    CertificateMismatch {
        /// The pinned fingerprint.
        expected: String,
        /// The fingerprint presented, if one was.
        got: Option<String>,
    },
    /// TLS failed for another reason.
    #[error("TLS: {0}")]
    Tls(String),
    /// WebSocket failed.
    #[error("WebSocket: {0}")]
    WebSocket(String),
    /// The desktop answered with an ifp `error`.
    #[error("refused: {class}: {detail}")]
    Refused {
        /// The error class (`pairing_failed`, `unauthorized_device`, ...).
        class: String,
        /// The desktop's words.
        detail: String,
    },
    /// The desktop said something unexpected.
    #[error("protocol: {0}")]
    Protocol(String),
    /// Nothing arrived in time.
    #[error("timed out waiting for {0}")]
    Timeout(String),
    /// The desktop closed the connection.
    #[error("the desktop closed the connection")]
    Closed,
    /// No address of the desktop could be reached ([`PhoneClient::connect_any`]): every try.
    #[error("no address of the desktop answered: {}", attempts_words(.0))]
    Unreachable(Vec<LinkAttempt>),
    /// The pairing was not confirmed: the codes differ (said on this phone), or the desktop's
    /// revealed nonce does not match its commitment.
    #[error("not paired: {0}")]
    NotConfirmed(String),
}

/// A phone's identity: its Ed25519 key, device id and label.
#[derive(Clone)]
pub struct PhoneIdentity {
    signing: SigningKey,
    device_id: String,
    label: String,
}

impl std::fmt::Debug for PhoneIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PhoneIdentity")
            .field("device_id", &self.device_id)
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

impl PhoneIdentity {
    /// A fresh key; device id `dev_` + the key's 16-hex fingerprint.
    pub fn generate(label: &str) -> Self {
        let signing = SigningKey::generate(&mut rand::rngs::OsRng);
        let device_id = format!(
            "dev_{}",
            key_fingerprint(signing.verifying_key().as_bytes())
        );
        Self::from_key(signing, device_id, label)
    }

    /// A fresh key under a chosen device id (e.g. a reinstalled phone keeping its id).
    pub fn with_device_id(device_id: &str, label: &str) -> Self {
        Self::from_key(
            SigningKey::generate(&mut rand::rngs::OsRng),
            device_id.to_string(),
            label,
        )
    }

    /// An identity from a 32-byte Ed25519 seed.
    pub fn from_seed(seed: [u8; 32], device_id: &str, label: &str) -> Self {
        Self::from_key(SigningKey::from_bytes(&seed), device_id.to_string(), label)
    }

    fn from_key(signing: SigningKey, device_id: String, label: &str) -> Self {
        Self {
            signing,
            device_id,
            label: label.to_string(),
        }
    }

    /// The device id (`dev_...`).
    pub fn device_id(&self) -> &str {
        &self.device_id
    }

    /// The public key, unpadded base64url.
    pub fn public_key_b64(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.signing.verifying_key().as_bytes())
    }

    /// The phone's entity id: `ent_` + the key's 16-hex fingerprint.
    pub fn entity_id(&self) -> String {
        format!(
            "ent_{}",
            key_fingerprint(self.signing.verifying_key().as_bytes())
        )
    }

    /// The 32-byte Ed25519 seed (secret: keep it where the phone keeps keys).
    pub fn seed(&self) -> [u8; 32] {
        self.signing.to_bytes()
    }

    /// The human label sent at pairing.
    pub fn label(&self) -> &str {
        &self.label
    }

    fn sign_b64(&self, msg: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(self.signing.sign(msg).to_bytes())
    }
}

/// A pairing that waits for the two confirmations: the phone's person compares
/// `verification_code` with the desktop's screen, then [`PhoneClient::pair_confirm`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingPair {
    /// The device id the desktop is pairing (the phone's).
    pub device_id: String,
    /// The desktop's Ed25519 public key (base64url), kept once paired.
    pub desktop_public_key: String,
    /// The 6-digit verification code to show and compare (`012 345`).
    pub verification_code: String,
}

/// What pairing gave the phone.
#[derive(Debug, Clone)]
pub struct Paired {
    /// The device id the desktop pinned.
    pub device_id: String,
    /// The desktop's Ed25519 public key (base64url), to keep.
    pub desktop_public_key: String,
    /// The 6-digit verification code to show (`123 456`).
    pub verification_code: String,
    /// The protocol version the desktop chose in its answering hello.
    pub version: u32,
}

/// One connection from a phone to the desktop.
pub struct PhoneClient {
    ws: WebSocketStream<TlsStream<TcpStream>>,
    nonce: String,
    /// This TLS session's exporter value ([`HELLO_EXPORTER_LABEL`]), unpadded base64url.
    exporter: String,
    cert_fp: String,
    desktop_range: (u64, u64),
    /// Longest wait for any one frame (default 10 s).
    pub wait: Duration,
    /// Longest wait for `pair.done` after this phone's `pair.confirm`, while the person on the
    /// desktop compares the codes (default the desktop's pending time, 2 minutes, and 10 s).
    pub confirm_wait: Duration,
    /// Whether [`PhoneClient::recv`] answers `control.ping` by itself (default true).
    pub answer_pings: bool,
    /// Every frame received, in order (parsed), including pings.
    pub received: Vec<Value>,
    desktop_public_key: Option<String>,
    intro_proof: String,
    /// The desktop's first-hello proof in the pinned binding (`ext.x-ifp-pinned-proof`).
    intro_pinned_proof: String,
    /// The certificate DER the desktop's first hello carried (`ext.x-ifp-cert`), when it did.
    desktop_cert: Option<Vec<u8>>,
    /// What this phone's hello proofs are bound to (default the TLS exporter): set
    /// [`HelloBinding::Pinned`] to speak as a phone without an exporter does (switchboard-tap).
    pub binding: HelloBinding,
    /// The tries that did not become this connection ([`PhoneClient::connect_any`]); the
    /// hello reports them (`ext.x-ifp-link-attempts`) when not empty.
    pub link_attempts: Vec<LinkAttempt>,
    /// The address this connection reached.
    pub connected_to: SocketAddr,
    /// How far this phone's clock is from the true time, in milliseconds (negative: behind;
    /// default 0): the `ts` of every message this client builds (pairing, hello, pong) is the
    /// system clock plus this, as a phone with a wrong clock writes it.
    pub clock_offset_ms: i64,
}

impl std::fmt::Debug for PhoneClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PhoneClient")
            .field("nonce", &self.nonce)
            .field("cert_fp", &self.cert_fp)
            .finish_non_exhaustive()
    }
}

/// Builds an ifp/1 envelope of `kind` with `payload` (and `entity` when given).
pub fn envelope(kind: &str, entity: Option<&str>, payload: Value) -> Value {
    let mut m = Map::new();
    m.insert("ifp".into(), json!("1"));
    m.insert("id".into(), json!(message_id()));
    m.insert("ts".into(), json!(rfc3339_ms(SystemClock.now_ms())));
    m.insert("type".into(), json!(kind));
    if let Some(e) = entity {
        m.insert("entity".into(), json!(e));
    }
    m.insert("payload".into(), payload);
    Value::Object(m)
}

impl PhoneClient {
    /// `v`'s `ts` as this phone's clock ([`PhoneClient::clock_offset_ms`]) says it.
    fn stamped(&self, mut v: Value) -> Value {
        if self.clock_offset_ms != 0 {
            let now = i64::try_from(SystemClock.now_ms()).unwrap_or(i64::MAX);
            let ms = u64::try_from(now.saturating_add(self.clock_offset_ms)).unwrap_or(0);
            v["ts"] = json!(rfc3339_ms(ms));
        }
        v
    }

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
        Self::connect_inner(addr, Some(pinned_fp), from).await
    }

    /// Connects to `addr` trusting whatever certificate it presents, and records its
    /// fingerprint as the one to pin ([`PhoneClient::cert_fp`]): trust on first use, only for
    /// pairing from a typed line (`address:port` and the code, no fingerprint;
    /// `docs/protocol.md`, "Typed pairing line"). The pairing's signature and verification code
    /// bind that fingerprint, so a host in the middle shows the person codes that differ.
    ///
    /// Errors as [`PhoneClient::connect`] (never a certificate mismatch).
    pub async fn connect_first_use(addr: SocketAddr) -> Result<Self, PhoneError> {
        Self::connect_inner(addr, None, None).await
    }

    /// The certificate fingerprint this connection pins (given, or seen on first use).
    pub fn cert_fp(&self) -> &str {
        &self.cert_fp
    }

    async fn connect_inner(
        addr: SocketAddr,
        pin: Option<&str>,
        from: Option<IpAddr>,
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
        Self::connect_any_inner(addrs, Some(pinned_fp)).await
    }

    /// [`PhoneClient::connect_any`] trusting whatever certificate the first address to answer
    /// presents (trust on first use, as [`PhoneClient::connect_first_use`]): for pairing from a
    /// typed line naming several addresses, or from addresses mDNS gave, where no fingerprint
    /// is known. The fingerprint seen is [`PhoneClient::cert_fp`]; the pairing's verification
    /// code, which the person compares, binds it (`docs/protocol.md`, "Typed pairing line").
    ///
    /// Errors as [`PhoneClient::connect_any`] (never a certificate mismatch).
    pub async fn connect_any_first_use(addrs: &[SocketAddr]) -> Result<Self, PhoneError> {
        Self::connect_any_inner(addrs, None).await
    }

    async fn connect_any_inner(
        addrs: &[SocketAddr],
        pinned_fp: Option<&str>,
    ) -> Result<Self, PhoneError> {
        if let [one] = addrs {
            return Self::connect_inner(*one, pinned_fp, None).await;
        }
        let clock = SystemClock;
        let mut set = tokio::task::JoinSet::new();
        let mut started: Vec<(SocketAddr, u64, tokio::time::Instant)> = Vec::new();
        let mut attempts: Vec<LinkAttempt> = Vec::new();
        let mut next = 0usize;
        let mut next_at = tokio::time::Instant::now();
        loop {
            if next < addrs.len() && (set.is_empty() || tokio::time::Instant::now() >= next_at) {
                let addr = addrs[next];
                let fp = pinned_fp.map(str::to_string);
                started.push((addr, clock.now_ms(), tokio::time::Instant::now()));
                set.spawn(
                    async move { (addr, Self::connect_inner(addr, fp.as_deref(), None).await) },
                );
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

    /// This connection's nonce (from the desktop's first `control.hello`, `x-ifp-nonce`).
    pub fn nonce(&self) -> &str {
        &self.nonce
    }

    /// This TLS session's exporter value (unpadded base64url of [`EXPORTER_LEN`] bytes under
    /// [`HELLO_EXPORTER_LABEL`]), which the hello proofs sign.
    pub fn exporter(&self) -> &str {
        &self.exporter
    }

    /// The certificate DER the desktop's first hello carried (`ext.x-ifp-cert`), only when its
    /// SHA-256 is the pinned fingerprint (what a phone that must hand its TLS stack the
    /// certificate would accept); `None` when absent or another certificate's.
    pub fn desktop_cert_der(&self) -> Option<&[u8]> {
        self.desktop_cert
            .as_deref()
            .filter(|der| super::identity::cert_fingerprint(der) == self.cert_fp)
    }

    /// The protocol range the desktop announced.
    pub fn desktop_range(&self) -> (u64, u64) {
        self.desktop_range
    }

    /// Sets the desktop's public key (from an earlier pairing) and checks the proof of the
    /// desktop's first hello on this connection with it.
    ///
    /// Errors: [`PhoneError::Protocol`] when the proof does not verify.
    pub fn set_desktop_public_key(&mut self, key: &str) -> Result<(), PhoneError> {
        let (msg, proof) = match self.binding {
            HelloBinding::Exporter => (
                desktop_intro_signed_bytes(&self.nonce, &self.cert_fp, &self.exporter),
                &self.intro_proof,
            ),
            HelloBinding::Pinned => (
                desktop_intro_pinned_signed_bytes(&self.nonce, &self.cert_fp),
                &self.intro_pinned_proof,
            ),
        };
        if !verify(key, &msg, proof) {
            return Err(PhoneError::Protocol(
                "the desktop's first hello proof does not verify with the paired key".into(),
            ));
        }
        self.desktop_public_key = Some(key.to_string());
        Ok(())
    }

    /// Pairs with `code`, has both confirmations and says hello: [`PhoneClient::pair_start`],
    /// then [`PhoneClient::pair_confirm`] with "the codes match". Completes only when the
    /// person on the desktop confirms too (within [`PhoneClient::confirm_wait`]).
    ///
    /// Errors: as the two steps.
    pub async fn pair(
        &mut self,
        me: &PhoneIdentity,
        code: &str,
        capabilities: Vec<Value>,
        range: (u32, u32),
    ) -> Result<Paired, PhoneError> {
        let pending = self.pair_start(me, code, capabilities).await?;
        self.pair_confirm(me, &pending, true, range).await
    }

    /// Starts pairing with `code`: `pair.request` → `pair.grant` (the desktop's commitment) →
    /// `pair.complete` (this phone's signature and fresh nonce) → `pair.reveal` (the desktop's
    /// nonce, checked against its commitment). Returns the verification code to compare; the
    /// desktop has a pending pairing and writes nothing until both sides confirm.
    ///
    /// Errors: [`PhoneError::Refused`] with the desktop's error class (`pairing_failed` with
    /// the one answer [`crate::pairing::PAIRING_REFUSED`] for every refused code, ...);
    /// [`PhoneError::NotConfirmed`] when the revealed nonce does not match the commitment.
    /// One `pair.request` per connection: to try again, connect again.
    pub async fn pair_start(
        &mut self,
        me: &PhoneIdentity,
        code: &str,
        capabilities: Vec<Value>,
    ) -> Result<PendingPair, PhoneError> {
        let mut req = self.stamped(envelope(
            "pair.request",
            None,
            json!({"pairing_code": code, "public_key": me.public_key_b64(),
                   "capabilities": capabilities, "label": me.label}),
        ));
        req["device"] = json!(me.device_id);
        if self.binding == HelloBinding::Pinned {
            req["ext"] = json!({ BINDING_EXT: "pinned" });
        }
        self.send_value(&req).await?;
        let grant = self.expect("pair.grant").await?;
        let p = &grant["payload"];
        let text = |k: &str| {
            p[k].as_str()
                .map(str::to_string)
                .ok_or_else(|| PhoneError::Protocol(format!("pair.grant without {k}")))
        };
        let challenge = text("challenge")?;
        let desktop_pk = text("public_key")?;
        let commitment = text("commitment")?;
        let device_id = p["device_id"].as_str().unwrap_or(&me.device_id).to_string();
        self.set_desktop_public_key(&desktop_pk)?;
        let phone_nonce = random_nonce();
        let sig = me.sign_b64(&pair_signed_bytes(
            &challenge,
            &self.cert_fp,
            &device_id,
            &phone_nonce,
        ));
        let done = self.stamped(envelope(
            "pair.complete",
            None,
            json!({"device_id": device_id, "signature": sig, "nonce": phone_nonce}),
        ));
        self.send_value(&done).await?;
        let reveal = self.expect("pair.reveal").await?;
        let desktop_nonce = reveal["payload"]["nonce"]
            .as_str()
            .ok_or_else(|| PhoneError::Protocol("pair.reveal without nonce".into()))?
            .to_string();
        let me_pk = me.public_key_b64();
        let expected = commitment_b64(&desktop_nonce, &self.cert_fp, &me_pk)
            .map_err(|e| PhoneError::Protocol(format!("pair.reveal: {e}")))?;
        if expected != commitment {
            return Err(PhoneError::NotConfirmed(
                "the desktop's revealed nonce does not match the commitment it sent: someone may be in the middle".into(),
            ));
        }
        let verification_code =
            verification_code(&desktop_nonce, &phone_nonce, &self.cert_fp, &me_pk)
                .map_err(|e| PhoneError::Protocol(format!("verification code: {e}")))?;
        Ok(PendingPair {
            device_id,
            desktop_public_key: desktop_pk,
            verification_code,
        })
    }

    /// This phone's answer after its person compared the codes: `pair.confirm {codes_match}`.
    /// With `true` it waits (at most [`PhoneClient::confirm_wait`]) for the desktop's
    /// `pair.done`, which comes once the person on the desktop confirmed too, then says hello
    /// with `range`.
    ///
    /// Errors: [`PhoneError::NotConfirmed`] when `codes_match` is false (nothing is paired);
    /// [`PhoneError::Refused`] when the desktop discarded the pairing (its person said the
    /// codes differ, or it expired); [`PhoneError::Timeout`].
    pub async fn pair_confirm(
        &mut self,
        me: &PhoneIdentity,
        pending: &PendingPair,
        codes_match: bool,
        range: (u32, u32),
    ) -> Result<Paired, PhoneError> {
        let confirm = self.stamped(envelope(
            "pair.confirm",
            Some(&me.entity_id()),
            json!({"codes_match": codes_match}),
        ));
        self.send_value(&confirm).await?;
        if !codes_match {
            return Err(PhoneError::NotConfirmed(
                "this phone's person said the verification codes differ".into(),
            ));
        }
        let saved = self.wait;
        self.wait = self.confirm_wait;
        let done = self.expect("pair.done").await;
        self.wait = saved;
        done?;
        let version = self.hello(me, range).await?;
        Ok(Paired {
            version,
            verification_code: pending.verification_code.clone(),
            device_id: pending.device_id.clone(),
            desktop_public_key: pending.desktop_public_key.clone(),
        })
    }

    /// The `control.hello` this phone would send on this connection (for replay tests).
    pub fn hello_frame(&self, me: &PhoneIdentity, range: (u32, u32)) -> Value {
        self.hello_frame_for(me, range, &self.nonce, &self.exporter)
    }

    /// The `control.hello` of `me` signed for `nonce` and the TLS exporter value `exporter`
    /// (for tests of proofs carried from one connection or TLS session to another).
    pub fn hello_frame_for(
        &self,
        me: &PhoneIdentity,
        range: (u32, u32),
        nonce: &str,
        exporter: &str,
    ) -> Value {
        let signed = match self.binding {
            HelloBinding::Exporter => {
                hello_signed_bytes(nonce, &me.device_id, &self.cert_fp, exporter)
            }
            HelloBinding::Pinned => pinned_hello_signed_bytes(nonce, &me.device_id, &self.cert_fp),
        };
        let proof = me.sign_b64(&signed);
        let mut v = self.stamped(envelope(
            "control.hello",
            None,
            json!({"device_id": me.device_id, "proof": proof, "capabilities": [],
                   "protocol": {"min": range.0, "max": range.1}}),
        ));
        v["ext"] = json!({"x-ifp-public-key": me.public_key_b64()});
        if self.binding == HelloBinding::Pinned {
            v["ext"][BINDING_EXT] = json!("pinned");
        }
        if !self.link_attempts.is_empty() {
            let list: Vec<&LinkAttempt> = self
                .link_attempts
                .iter()
                .take(MAX_REPORTED_ATTEMPTS)
                .collect();
            v["ext"]["x-ifp-link-attempts"] = json!(list);
        }
        v
    }

    /// Says hello with protocol `range`; returns the version the desktop chose.
    ///
    /// Errors: [`PhoneError::Refused`] (`unauthorized_device`, `unsupported_version`), or
    /// [`PhoneError::Protocol`] if the desktop's proof does not verify against its key.
    pub async fn hello(
        &mut self,
        me: &PhoneIdentity,
        range: (u32, u32),
    ) -> Result<u32, PhoneError> {
        let frame = self.hello_frame(me, range);
        self.send_value(&frame).await?;
        let h = self.expect("control.hello").await?;
        let p = &h["payload"];
        if let Some(pk) = &self.desktop_public_key {
            let msg = match self.binding {
                HelloBinding::Exporter => desktop_hello_signed_bytes(
                    &self.nonce,
                    &me.device_id,
                    &self.cert_fp,
                    &self.exporter,
                ),
                HelloBinding::Pinned => {
                    desktop_hello_pinned_signed_bytes(&self.nonce, &me.device_id, &self.cert_fp)
                }
            };
            if !verify(pk, &msg, p["proof"].as_str().unwrap_or("")) {
                return Err(PhoneError::Protocol(
                    "the desktop's hello proof does not verify".into(),
                ));
            }
        }
        p["protocol"]["max"]
            .as_u64()
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| PhoneError::Protocol("desktop hello without protocol".into()))
    }

    /// Sends a JSON value as one text frame.
    pub async fn send_value(&mut self, v: &Value) -> Result<(), PhoneError> {
        self.send_text(v.to_string()).await
    }

    /// Sends raw text as one frame (may be invalid, for tests).
    pub async fn send_text(&mut self, text: String) -> Result<(), PhoneError> {
        self.ws
            .send(Message::text(text))
            .await
            .map_err(|e| PhoneError::WebSocket(e.to_string()))
    }

    /// Sends one WebSocket message as it is: a binary message, or a hand-made frame (e.g. a
    /// text frame that is not UTF-8), for tests of what the desktop does with them.
    pub async fn send_message(&mut self, message: Message) -> Result<(), PhoneError> {
        self.ws
            .send(message)
            .await
            .map_err(|e| PhoneError::WebSocket(e.to_string()))
    }

    /// The next frame that is not a `control.ping` (pings are answered when
    /// [`PhoneClient::answer_pings`] is on), waiting at most [`PhoneClient::wait`] in all.
    /// `error` frames are returned as they are.
    pub async fn recv(&mut self) -> Result<Value, PhoneError> {
        let deadline = tokio::time::Instant::now() + self.wait;
        loop {
            let msg = tokio::time::timeout_at(deadline, self.ws.next())
                .await
                .map_err(|_| PhoneError::Timeout("a frame".into()))?;
            let text = match msg {
                None | Some(Ok(Message::Close(_))) => return Err(PhoneError::Closed),
                Some(Err(e)) => return Err(PhoneError::WebSocket(e.to_string())),
                Some(Ok(Message::Text(t))) => t.to_string(),
                Some(Ok(_)) => continue,
            };
            let v: Value = serde_json::from_str(&text)
                .map_err(|e| PhoneError::Protocol(format!("desktop sent invalid JSON: {e}")))?;
            self.received.push(v.clone());
            if v["type"] == "control.ping" {
                if self.answer_pings {
                    let pong = self.stamped(envelope(
                        "control.pong",
                        Some("ent_phone0000"),
                        json!({"nonce": v["payload"]["nonce"]}),
                    ));
                    self.send_value(&pong).await?;
                }
                continue;
            }
            return Ok(v);
        }
    }

    /// Reads frames for `span` (answering pings when [`PhoneClient::answer_pings`] is on);
    /// everything read lands in [`PhoneClient::received`].
    ///
    /// Errors: [`PhoneError::Closed`] or [`PhoneError::WebSocket`] if the link drops.
    pub async fn idle(&mut self, span: Duration) -> Result<(), PhoneError> {
        let end = tokio::time::Instant::now() + span;
        loop {
            let left = end.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            let saved = self.wait;
            self.wait = left;
            let r = self.recv().await;
            self.wait = saved;
            match r {
                Ok(_) => {}
                Err(PhoneError::Timeout(_)) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }

    /// The next frame, which must be of type `kind`; an `error` becomes
    /// [`PhoneError::Refused`].
    pub async fn expect(&mut self, kind: &str) -> Result<Value, PhoneError> {
        let v = self.recv().await?;
        if v["type"] == "error" {
            return Err(PhoneError::Refused {
                class: v["payload"]["class"].as_str().unwrap_or("").to_string(),
                detail: v["payload"]["detail"].as_str().unwrap_or("").to_string(),
            });
        }
        if v["type"] != kind {
            return Err(PhoneError::Protocol(format!(
                "expected {kind}, got {}",
                v["type"]
            )));
        }
        Ok(v)
    }

    /// Gives up the client for its WebSocket, to drive sending and receiving in one loop (the
    /// `switchboard-phone` player does, to read acknowledgements while it sends).
    pub fn into_ws(self) -> WebSocketStream<TlsStream<TcpStream>> {
        self.ws
    }

    /// Closes the connection.
    pub async fn close(mut self) {
        let _ = tokio::time::timeout(Duration::from_secs(2), self.ws.close(None)).await;
    }
}

/// How long after one try the next address starts (Happy Eyeballs, RFC 8305 suggests 250 ms).
pub const ATTEMPT_STAGGER: Duration = Duration::from_millis(250);

fn ms_since(t: tokio::time::Instant) -> u64 {
    u64::try_from(t.elapsed().as_millis()).unwrap_or(u64::MAX)
}

fn attempts_words(a: &[LinkAttempt]) -> String {
    if a.is_empty() {
        return "no address to try".to_string();
    }
    a.iter()
        .map(|x| format!("{}: {}", x.addr, x.error))
        .collect::<Vec<_>>()
        .join("; ")
}

fn verify(pk_b64: &str, msg: &[u8], sig_b64: &str) -> bool {
    let Some(pk) = URL_SAFE_NO_PAD
        .decode(pk_b64)
        .ok()
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .and_then(|b| VerifyingKey::from_bytes(&b).ok())
    else {
        return false;
    };
    let Some(sig) = URL_SAFE_NO_PAD
        .decode(sig_b64)
        .ok()
        .and_then(|s| Signature::from_slice(&s).ok())
    else {
        return false;
    };
    pk.verify(msg, &sig).is_ok()
}
