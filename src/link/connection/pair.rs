//! The pairing protocol, desktop side: `pair.request` (check the code, answer `pair.grant`
//! with a challenge) and `pair.complete` (verify the signature, pin the phone's key).
//!
//! Why a file of its own: pairing is the one place a new key is trusted; keeping it apart from
//! the read loop ([`super`]) keeps its checks in one short file. The pairing window, codes and
//! signed bytes themselves are [`crate::link::pairing`]. `ifp1-notes.md`, "Pairing and
//! identity"; `docs/protocol.md`, "Link: pairing and sessions".

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ed25519_dalek::{Signature, VerifyingKey};
use serde_json::{Map, Value};

use super::{Conn, Flow, Stage};
use crate::link::diagnostics::FailureKind;
use crate::link::event::LinkEvent;
use crate::link::identity::key_fingerprint;
use crate::link::pairing::{
    pair_signed_bytes, verification_code, CodeCheck, MAX_WRONG_TRIES, PAIRING_REFUSED,
};
use crate::link::shared::lock;
use crate::link::trust::PairedPhone;
use crate::link::wire::{self, ifp};

/// What this desktop's `pair.grant` promised, kept until the phone's `pair.complete`.
pub(super) struct Grant {
    challenge: String,
    /// The phone's device id (from its envelope, or derived from its key).
    pub(super) device_id: String,
    public_key: String,
    label: String,
    capabilities: Vec<Value>,
}

impl Conn {
    /// `pair.request`: checks the code against the open window and answers `pair.grant`.
    ///
    /// One `pair.request` per connection: a second one is refused and the connection closed.
    /// Before the code is checked, the [`PairingBackoff`](crate::link::pairing::PairingBackoff)
    /// must allow this source; every refusal answers `pairing_failed` with [`PAIRING_REFUSED`].
    /// A device id already paired with another key is dealt with in `pair.complete`, once the
    /// phone has proved it holds the key it presents.
    pub(super) async fn on_pair_request(&mut self, env: ifp::Envelope) -> Flow {
        if self.pair_requested {
            self.shared.fail_before_hello(
                FailureKind::RateLimited,
                format!(
                    "{} sent a second pair.request on one connection: refused, connection closed",
                    self.peer
                ),
                env.device.as_deref(),
                Some(self.peer),
            );
            self.refuse(
                ifp::ErrorClass::PairingFailed,
                "one pair.request per connection: connect again to retry".into(),
                Some(env.id),
            )
            .await;
            return Flow::Close;
        }
        self.pair_requested = true;
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
        let ip = self.peer.ip();
        // Lock order: backoff, then the window (nothing else takes both).
        let check = {
            let mut backoff = lock(&self.shared.pair_backoff);
            if backoff.allows(ip, now) {
                let mut guard = lock(&self.shared.pairing);
                let c = guard.as_mut().map(|open| open.window.check(code, now));
                if matches!(
                    c,
                    Some(CodeCheck::Accepted | CodeCheck::Expired | CodeCheck::Closed)
                ) {
                    *guard = None;
                }
                drop(guard);
                match c {
                    None | Some(CodeCheck::Expired) => backoff.failed(ip, now, false),
                    Some(CodeCheck::Wrong { .. } | CodeCheck::Closed) => {
                        backoff.failed(ip, now, true)
                    }
                    Some(CodeCheck::Accepted) => {}
                }
                Some(c)
            } else {
                None
            }
        };
        let from = format!("pairing from {} ({device_id})", self.peer);
        let dev = Some(device_id.as_str());
        // Every refusal gets the same answer, so a peer learns nothing about the window; the
        // desktop's own record says what happened. Verdicts on a code (wrong, last wrong,
        // expired) are bounded by the window's budget and are real failures; the rest
        // (no window, inside the backoff) anyone can repeat and are coalesced.
        match check {
            Some(Some(CodeCheck::Accepted)) => {}
            refused => {
                match refused {
                    None => self.shared.fail_before_hello(
                        FailureKind::RateLimited,
                        format!("{from}: refused unchecked, inside the backoff after failed pairing attempts"),
                        dev,
                        Some(self.peer),
                    ),
                    Some(None) => self.shared.fail_before_hello(
                        FailureKind::NoPairingWindow,
                        format!("{from}: no pairing window is open on the desktop"),
                        dev,
                        Some(self.peer),
                    ),
                    Some(Some(CodeCheck::Expired)) => self.shared.fail(
                        FailureKind::ExpiredCode,
                        format!("{from}: the pairing code expired (windows live 2 minutes); the window is closed"),
                        dev,
                        Some(self.peer),
                    ),
                    Some(Some(CodeCheck::Wrong { tries_left })) => self.shared.fail(
                        FailureKind::WrongCode,
                        format!("{from}: wrong pairing code ({tries_left} more wrong codes close the window)"),
                        dev,
                        Some(self.peer),
                    ),
                    Some(Some(_)) => {
                        let reason = format!(
                            "{from}: wrong pairing code, the {MAX_WRONG_TRIES}th in this window: the window is closed; open a new one"
                        );
                        self.shared.fail(FailureKind::RateLimited, reason.clone(), dev, Some(self.peer));
                        self.shared.emit(LinkEvent::PairingClosed { reason });
                    }
                }
                self.refuse(
                    ifp::ErrorClass::PairingFailed,
                    PAIRING_REFUSED.to_string(),
                    Some(env.id),
                )
                .await;
                return Flow::Continue;
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

    /// `pair.complete`: verifies the signature over the challenge and pins the phone's key.
    pub(super) async fn on_pair_complete(&mut self, env: ifp::Envelope) -> Flow {
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
        if let Some(known) = self.pinned(&grant.device_id) {
            if known.public_key != grant.public_key {
                // The phone proved it holds the key it presents: a real identity change.
                let words =
                    identity_changed_words(&grant.device_id, &known.public_key, &grant.public_key);
                self.shared.fail(
                    FailureKind::IdentityChanged,
                    words.clone(),
                    Some(&grant.device_id),
                    Some(self.peer),
                );
                self.refuse(ifp::ErrorClass::PairingFailed, words, Some(env.id))
                    .await;
                return Flow::Close;
            }
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
}

/// The failure words when a pinned phone presents another key.
pub(super) fn identity_changed_words(
    device_id: &str,
    pinned_b64: &str,
    presented_b64: &str,
) -> String {
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

/// Whether `sig_b64` is a valid Ed25519 signature of `msg` by the key `pk_b64` (both unpadded
/// base64url).
pub(super) fn verify(pk_b64: &str, msg: &[u8], sig_b64: &str) -> bool {
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
