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
//!
//! One concept a file, re-exported here: `connect` (TCP, pinned TLS, WebSocket, the desktop's
//! first hello; several addresses at once), `pair` (the pairing exchange), `identity` (the
//! phone's key) and `error` ([`PhoneError`]). Hello, sending and receiving stay here.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ed25519_dalek::{Signature, Verifier as _, VerifyingKey};
use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{json, Map, Value};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use super::binding::{
    desktop_hello_pinned_signed_bytes, desktop_intro_pinned_signed_bytes,
    pinned_hello_signed_bytes, HelloBinding, BINDING_EXT,
};
use super::diagnostics::{LinkAttempt, MAX_REPORTED_ATTEMPTS};
use super::pairing::{desktop_hello_signed_bytes, desktop_intro_signed_bytes, hello_signed_bytes};
use super::wire::message_id;
use switchboard_wire::clock::{Clock, SystemClock};
use switchboard_wire::timefmt::rfc3339_ms;

mod connect;
mod error;
mod identity;
mod pair;

pub use connect::ATTEMPT_STAGGER;
pub use error::PhoneError;
pub use identity::PhoneIdentity;
pub use pair::{Paired, PendingPair};

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
    /// default 0): the `ts` of every message this client builds (pairing, hello, pong) is
    /// [`PhoneClient::clock`] plus this, as a phone with a wrong clock writes it.
    pub clock_offset_ms: i64,
    /// The clock this phone reads (the one handed to [`PhoneClient::connect_any_with_clock`],
    /// else the system clock): the `ts` of its messages and the times of its link attempts.
    pub clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for PhoneClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PhoneClient")
            .field("nonce", &self.nonce)
            .field("cert_fp", &self.cert_fp)
            .finish_non_exhaustive()
    }
}

/// Builds an ifp/1 envelope of `kind` with `payload` (and `entity` when given), stamped now by
/// the system clock: for a caller that holds no clock of its own (tests building frames by hand).
/// A [`PhoneClient`] stamps its own frames with its [`PhoneClient::clock`].
pub fn envelope(kind: &str, entity: Option<&str>, payload: Value) -> Value {
    envelope_at(kind, entity, payload, SystemClock.now_ms())
}

/// [`envelope`] with its `ts` at `at_ms` (Unix epoch milliseconds, written as RFC 3339 UTC).
pub fn envelope_at(kind: &str, entity: Option<&str>, payload: Value, at_ms: u64) -> Value {
    let mut m = Map::new();
    m.insert("ifp".into(), json!("1"));
    m.insert("id".into(), json!(message_id()));
    m.insert("ts".into(), json!(rfc3339_ms(at_ms)));
    m.insert("type".into(), json!(kind));
    if let Some(e) = entity {
        m.insert("entity".into(), json!(e));
    }
    m.insert("payload".into(), payload);
    Value::Object(m)
}

impl PhoneClient {
    /// Now as this phone's clock says it: [`PhoneClient::clock`] moved by
    /// [`PhoneClient::clock_offset_ms`], Unix epoch milliseconds (0 at the earliest).
    pub fn now_ms(&self) -> u64 {
        let now = i64::try_from(self.clock.now_ms()).unwrap_or(i64::MAX);
        u64::try_from(now.saturating_add(self.clock_offset_ms)).unwrap_or(0)
    }

    /// An envelope of `kind` ([`envelope_at`]) stamped by this phone's clock
    /// ([`PhoneClient::now_ms`]).
    pub fn envelope(&self, kind: &str, entity: Option<&str>, payload: Value) -> Value {
        envelope_at(kind, entity, payload, self.now_ms())
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
                hello_signed_bytes(nonce, me.device_id(), &self.cert_fp, exporter)
            }
            HelloBinding::Pinned => pinned_hello_signed_bytes(nonce, me.device_id(), &self.cert_fp),
        };
        let proof = me.sign_b64(&signed);
        let mut v = self.envelope(
            "control.hello",
            None,
            json!({"device_id": me.device_id(), "proof": proof, "capabilities": [],
                   "protocol": {"min": range.0, "max": range.1}}),
        );
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
                    me.device_id(),
                    &self.cert_fp,
                    &self.exporter,
                ),
                HelloBinding::Pinned => {
                    desktop_hello_pinned_signed_bytes(&self.nonce, me.device_id(), &self.cert_fp)
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
                    let pong = self.envelope(
                        "control.pong",
                        Some("ent_phone0000"),
                        json!({"nonce": v["payload"]["nonce"]}),
                    );
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn an_envelope_is_stamped_at_the_time_given() {
        let v = envelope_at(
            "control.ping",
            Some("ent_phone0001"),
            json!({}),
            1_784_595_600_123,
        );
        assert_eq!(v["ts"], "2026-07-21T01:00:00.123Z");
        assert_eq!(v["type"], "control.ping");
        assert_eq!(v["entity"], "ent_phone0001");
        switchboard_wire::ifp::validate(&v).expect("a valid ifp/1 message");
    }
}
