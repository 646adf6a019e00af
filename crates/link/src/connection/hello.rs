//! The hello protocol, desktop side: the phone's `control.hello` (pinned key, proof over this
//! connection's nonce, common protocol version), after which the connection is a live session.
//!
//! Why a file of its own: hello is where a paired phone is authenticated on each connection;
//! keeping it apart from the read loop ([`super`]) keeps its checks in one short file. The
//! desktop's own first hello (the nonce) is sent by the read loop. `ifp1-notes.md`, "Pairing
//! and identity"; `docs/protocol.md`, "Link: pairing and sessions".

use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::pair::{identity_changed_words, shown_id, verify};
use super::{Conn, Flow, Stage};
use crate::binding::{desktop_hello_pinned_signed_bytes, pinned_hello_signed_bytes, HelloBinding};
use crate::diagnostics::{parse_link_attempts, FailureKind, PhoneAttempts};
use crate::event::LinkEvent;
use crate::pairing::{desktop_hello_signed_bytes, hello_signed_bytes, HELLO_REFUSED};
use crate::shared::{lock, Command, Session};
use crate::wire::ifp;

impl Conn {
    /// Keeps what the phone reports about the addresses it could not reach
    /// (`ext.x-ifp-link-attempts`, `docs/protocol.md`, "Link attempts"). A report that does not
    /// read is recorded as a failure naming the field (the hello itself stands: the report is
    /// diagnostics, not authentication).
    fn take_attempts(&self, env: &ifp::Envelope, device_id: &str) {
        let Some(v) = env.ext.get("x-ifp-link-attempts") else {
            return;
        };
        match parse_link_attempts(v) {
            Ok(attempts) => self.shared.record_attempts(PhoneAttempts {
                device_id: device_id.to_string(),
                connected_from: self.peer.to_string(),
                connected_to: self.local.map(|a| a.to_string()).unwrap_or_default(),
                attempts,
                received_at_ms: self.shared.config.clock.now_ms(),
            }),
            Err(words) => self.shared.fail(
                FailureKind::InvalidFrame,
                format!("control.hello from {device_id}: ext.x-ifp-link-attempts: {words}; the report of its failed attempts was not kept"),
                Some(device_id),
                Some(self.peer),
            ),
        }
    }

    /// `control.hello`: authenticates the phone and makes this connection its live session.
    ///
    /// Before a verified hello every refusal answers `unauthorized_device` with
    /// [`HELLO_REFUSED`] and closes the connection.
    pub(super) async fn on_hello(
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
        let presented = env.ext.get("x-ifp-public-key").and_then(Value::as_str);
        let binding = match HelloBinding::from_ext(&env.ext) {
            Ok(b) => b,
            Err(unknown) => {
                let detail = unknown.to_string();
                self.refuse(ifp::ErrorClass::InvalidEnvelope, detail, Some(env.id))
                    .await;
                return Flow::Close;
            }
        };
        let fp = self.shared.identity.cert_fingerprint().to_string();
        let signed = match binding {
            HelloBinding::Exporter => {
                hello_signed_bytes(&self.nonce, &device_id, &fp, &self.exporter)
            }
            HelloBinding::Pinned => pinned_hello_signed_bytes(&self.nonce, &device_id, &fp),
        };
        // The id as it may go into failure words (the peer is not authenticated yet).
        let shown = shown_id(&device_id);
        let known = self.pinned(&device_id);
        // Every refusal gets the same answer (HELLO_REFUSED); only the desktop's own record says
        // which check failed. "Identity changed" is recorded only when the proof verifies under
        // the key presented: without it, anyone could raise the impersonation alarm. A binding
        // other than the one the phone paired with is refused before any proof is looked at,
        // so a phone paired with the TLS exporter can never be talked down to the pinned one.
        let refusal = match (&known, presented) {
            (Some(k), _) if k.binding != binding => Some((
                FailureKind::BindingChanged,
                format!(
                    "{shown} was paired with the {} binding but said hello with the {} binding: refused; a phone never changes binding, pair it again to change",
                    k.binding.as_str(),
                    binding.as_str()
                ),
            )),
            (None, _) => {
                // The same signature work as for a paired id, so timing tells nothing either.
                let _ = presented.map(|k| verify(k, &signed, proof));
                Some((
                    FailureKind::UnknownDevice,
                    format!("{shown} is not paired with this desktop"),
                ))
            }
            (Some(k), Some(other)) if other != k.public_key => {
                if verify(other, &signed, proof) {
                    Some((
                        FailureKind::IdentityChanged,
                        identity_changed_words(&shown, &k.public_key, other),
                    ))
                } else {
                    Some((
                        FailureKind::BadProof,
                        format!("{shown} presents another key than the pinned one, with no valid proof for it (forged)"),
                    ))
                }
            }
            (Some(k), _) => (!verify(&k.public_key, &signed, proof)).then(|| {
                (
                    FailureKind::BadProof,
                    format!("the hello proof of {shown} does not verify for this connection's nonce and TLS session (forged, replayed or relayed)"),
                )
            }),
        };
        if let Some((kind, words)) = refusal {
            if kind == FailureKind::IdentityChanged {
                self.shared
                    .fail(kind, words, Some(&device_id), Some(self.peer));
            } else {
                self.shared.fail_before_hello(
                    kind,
                    format!("hello from {}: {words}", self.peer),
                    Some(&device_id),
                    Some(self.peer),
                );
            }
            self.refuse(
                ifp::ErrorClass::UnauthorizedDevice,
                HELLO_REFUSED.to_string(),
                Some(env.id),
            )
            .await;
            return Flow::Close;
        }
        let Some(known) = known else {
            // Not reached: an unknown device id is refused above.
            return Flow::Close;
        };
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
        // Out of the budget of connections without hello before anything changes: an eviction
        // racing this hello wins, and the connection closes with nothing done.
        if !self.promote() {
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
        self.take_attempts(&env, &device_id);
        // The phone's clock against this one's: kept for the Phones view and Troubleshoot,
        // never a reason to refuse (the protocol has no time window; `docs/protocol.md`,
        // "Timestamps are the phone's").
        let arrived = self.shared.config.clock.now_ms();
        let sent = switchboard_domain::phone_events::timestamp_ms(&env.ts);
        self.shared
            .record_clock_skew(crate::diagnostics::PhoneClockSkew {
                device_id: device_id.clone(),
                label: known.label.clone(),
                skew_ms: sent.saturating_sub(i64::try_from(arrived).unwrap_or(i64::MAX)),
                measured_at_ms: arrived,
            });
        let answer = match binding {
            HelloBinding::Exporter => {
                desktop_hello_signed_bytes(&self.nonce, &device_id, &fp, &self.exporter)
            }
            HelloBinding::Pinned => desktop_hello_pinned_signed_bytes(&self.nonce, &device_id, &fp),
        };
        let proof = self.shared.identity.sign_b64(&answer);
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
