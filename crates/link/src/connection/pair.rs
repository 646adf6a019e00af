//! The pairing protocol, desktop side: `pair.request` (check the code, answer `pair.grant`
//! with a challenge and a commitment), `pair.complete` (verify the signature, reveal the
//! desktop's nonce: the pairing is now *pending*), then the two confirmations (the person on the
//! desktop, [`Command::PairDecision`], and the phone's `pair.confirm`) before the phone's key is
//! pinned and `pair.done` sent.
//!
//! Why a file of its own: pairing is the one place a new key is trusted; keeping it apart from
//! the read loop ([`super`]) keeps its checks in one short file. The pairing window, codes and
//! signed bytes themselves are [`crate::pairing`]. `ifp1-notes.md`, "Pairing and
//! identity"; `docs/protocol.md`, "Link: pairing and sessions".

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ed25519_dalek::{Signature, VerifyingKey};
use serde_json::{Map, Value};

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::{Conn, Flow, Stage};
use crate::binding::HelloBinding;
use crate::diagnostics::FailureKind;
use crate::event::{LinkEvent, PairingEnd, PendingPairing};
use crate::identity::key_fingerprint;
use crate::pairing::{
    commitment_b64, decode32_b64, pair_signed_bytes, random_nonce, verification_code, CodeCheck,
    MAX_WRONG_TRIES, PAIRING_REFUSED,
};
use crate::shared::{lock, peer_text, Command, PendingSlot};
use crate::trust::PairedPhone;
use crate::wire::{self, ifp};

/// Longest device id written into a failure's words, in characters: the id is the
/// unauthenticated peer's (`dev_` + 16 hex for ours).
const WORDS_DEVICE_ID: usize = 64;

/// A device id from a peer as it may go into failure words: control characters escaped, at most
/// [`WORDS_DEVICE_ID`] characters.
pub(super) fn shown_id(device_id: &str) -> String {
    peer_text(device_id, WORDS_DEVICE_ID)
}

/// What this desktop's `pair.grant` promised, kept until the phone's `pair.complete`.
pub(super) struct Grant {
    challenge: String,
    /// The nonce committed to in `pair.grant`, revealed in `pair.reveal`.
    desktop_nonce: String,
    /// The phone's device id (from its envelope, or derived from its key).
    pub(super) device_id: String,
    public_key: String,
    label: String,
    capabilities: Vec<Value>,
    /// The hello binding the phone asked for in `pair.request` (kept in its pairing record).
    binding: HelloBinding,
}

/// A pairing whose signature verified, waiting for both confirmations.
pub(super) struct Pending {
    pub(super) grant: Grant,
    /// Names it for [`crate::Link::confirm_pairing`].
    id: String,
    /// The verification code both screens show.
    code: String,
    /// When it is discarded unless confirmed.
    pub(super) deadline: Instant,
    expires_at_ms: u64,
    phone_ok: bool,
    desktop_ok: bool,
}

impl Pending {
    fn info(&self) -> PendingPairing {
        PendingPairing {
            id: self.id.clone(),
            device_id: self.grant.device_id.clone(),
            label: self.grant.label.clone(),
            verification_code: self.code.clone(),
            expires_at_ms: self.expires_at_ms,
            phone_confirmed: self.phone_ok,
            desktop_confirmed: self.desktop_ok,
        }
    }
}

impl Conn {
    /// `pair.request`: checks the code against the open window and answers `pair.grant`.
    ///
    /// One `pair.request` per connection: a second one is refused and the connection closed.
    /// Before the code is checked, the [`PairingBackoff`](crate::pairing::PairingBackoff)
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
        // Checked with the key, before the code: a malformed request costs the window nothing.
        let binding = match HelloBinding::from_ext(&env.ext) {
            Ok(b) => b,
            Err(unknown) => {
                let detail = unknown.to_string();
                self.refuse(ifp::ErrorClass::InvalidEnvelope, detail, Some(env.id))
                    .await;
                return Flow::Continue;
            }
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
                if matches!(c, Some(CodeCheck::Expired | CodeCheck::Closed)) {
                    *guard = None;
                }
                if let (Some(CodeCheck::Accepted), Some(open)) = (&c, guard.as_mut()) {
                    // Held for this connection until its pairing is confirmed or fails.
                    open.held_by = Some(self.conn);
                }
                drop(guard);
                match c {
                    None | Some(CodeCheck::Expired | CodeCheck::Held) => {
                        backoff.failed(ip, now, false)
                    }
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
        let from = format!("pairing from {} ({})", self.peer, shown_id(&device_id));
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
                    Some(Some(CodeCheck::Held)) => self.shared.fail_before_hello(
                        FailureKind::NoPairingWindow,
                        format!("{from}: refused unchecked, another pairing with this window's code waits for confirmation"),
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
                        format!(
                            "{from}: wrong pairing code ({tries_left} more wrong {} the window)",
                            if tries_left == 1 { "code closes" } else { "codes close" }
                        ),
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
        let desktop_nonce = random_nonce();
        let commitment = match commitment_b64(
            &desktop_nonce,
            self.shared.identity.cert_fingerprint(),
            pk_b64,
        ) {
            Ok(c) => c,
            Err(e) => {
                // Our own nonce and fingerprint always decode, and the key did above.
                tracing::error!("pairing: could not make the commitment: {e}");
                self.release_window();
                return Flow::Close;
            }
        };
        let grant = ifp::OutgoingMessage::PairGrant(ifp::PairGrant {
            device_id: device_id.clone(),
            public_key: self.shared.identity.public_key_b64(),
            challenge: challenge.clone(),
            commitment,
            capabilities: vec![],
            label: Some(switchboard_wire::app_info::APP_NAME.to_string()),
        });
        self.stage = Stage::Granted(Box::new(Grant {
            challenge,
            desktop_nonce,
            device_id,
            public_key: pk_b64.to_string(),
            label,
            capabilities,
            binding,
        }));
        if self.send(grant, Some(env.id), Map::new()).await.is_err() {
            return Flow::Close;
        }
        Flow::Continue
    }

    /// `pair.complete`: verifies the signature over the challenge and the phone's nonce,
    /// reveals the desktop's nonce (`pair.reveal`) and makes the pairing pending. Nothing is
    /// written: the key is pinned once the person and the phone both confirmed the verification
    /// code ([`Conn::on_pair_decision`], [`Conn::on_pair_confirm`]).
    pub(super) async fn on_pair_complete(
        &mut self,
        env: ifp::Envelope,
        tx: &mut Option<mpsc::UnboundedSender<Command>>,
    ) -> Flow {
        let Stage::Granted(grant) = std::mem::replace(&mut self.stage, Stage::Fresh) else {
            self.refuse(
                ifp::ErrorClass::PairingFailed,
                "pair.complete without a pair.grant on this connection".into(),
                Some(env.id),
            )
            .await;
            return Flow::Continue;
        };
        let grant = *grant;
        let p = &env.payload;
        let sig = p.get("signature").and_then(Value::as_str).unwrap_or("");
        let phone_nonce = p.get("nonce").and_then(Value::as_str).unwrap_or("");
        let shown = shown_id(&grant.device_id);
        if decode32_b64(phone_nonce).is_none() {
            self.shared.fail(
                FailureKind::PairingSignature,
                format!(
                    "pairing from {} ({shown}): pair.complete without a 32-byte nonce",
                    self.peer
                ),
                Some(&grant.device_id),
                Some(self.peer),
            );
            self.refuse(
                ifp::ErrorClass::PairingFailed,
                "payload.nonce: expected 32 random bytes as unpadded base64url (43 characters)"
                    .into(),
                Some(env.id),
            )
            .await;
            self.release_window();
            return Flow::Close;
        }
        let bytes = pair_signed_bytes(
            &grant.challenge,
            self.shared.identity.cert_fingerprint(),
            &grant.device_id,
            phone_nonce,
        );
        if !verify(&grant.public_key, &bytes, sig) {
            let words = format!(
                "pairing from {} ({shown}): the pair.complete signature over the challenge does not verify",
                self.peer
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
            self.release_window();
            return Flow::Close;
        }
        if let Some(known) = self.pinned(&grant.device_id) {
            if known.public_key != grant.public_key {
                // The phone proved it holds the key it presents: a real identity change. It
                // costs the window one try, like any failed pairing, and no more: a stranger
                // who knows a paired device id cannot close the person's window with it.
                let words = identity_changed_words(&shown, &known.public_key, &grant.public_key);
                self.shared.fail(
                    FailureKind::IdentityChanged,
                    words.clone(),
                    Some(&grant.device_id),
                    Some(self.peer),
                );
                self.refuse(ifp::ErrorClass::PairingFailed, words, Some(env.id))
                    .await;
                self.release_window();
                return Flow::Close;
            }
        }
        let code = match verification_code(
            &grant.desktop_nonce,
            phone_nonce,
            self.shared.identity.cert_fingerprint(),
            &grant.public_key,
        ) {
            Ok(c) => c,
            Err(e) => {
                // Every input was checked above.
                tracing::error!("pairing: no verification code: {e}");
                self.release_window();
                return Flow::Close;
            }
        };
        let Some(sender) = tx.as_ref().cloned() else {
            return Flow::Close;
        };
        // The phone proved the window's code and its key: it leaves the budget of connections
        // without hello (whose deadline is far shorter than the person's time to compare the
        // codes). At most one pairing is pending at a time, so this cannot be used to flood.
        if !self.promote() {
            self.release_window();
            return Flow::Close;
        }
        let ttl = self.shared.config.pending_ttl;
        let now = self.shared.config.clock.now_ms();
        let pending = Pending {
            id: format!("pairing_{}", self.conn),
            code,
            deadline: Instant::now() + ttl,
            expires_at_ms: now.saturating_add(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)),
            phone_ok: false,
            desktop_ok: false,
            grant,
        };
        let info = pending.info();
        let reveal = ifp::OutgoingMessage::PairReveal(ifp::PairReveal {
            nonce: pending.grant.desktop_nonce.clone(),
        });
        {
            let mut slot = lock(&self.shared.pending);
            if let Some(old) = slot.take() {
                // Only one pairing waits at a time (each holds its window); a newer one (from a
                // window the person opened since) replaces it.
                let _ = old
                    .tx
                    .send(Command::Close("replaced by a newer pending pairing".into()));
            }
            *slot = Some(PendingSlot {
                conn: self.conn,
                info: info.clone(),
                tx: sender,
            });
        }
        self.stage = Stage::Pending(Box::new(pending));
        if self.send(reveal, Some(env.id), Map::new()).await.is_err() {
            return Flow::Close;
        }
        self.shared.emit(LinkEvent::PairingPending(info));
        Flow::Continue
    }

    /// The phone's `pair.confirm {codes_match}`: its person compared the codes.
    pub(super) async fn on_pair_confirm(&mut self, env: ifp::Envelope) -> Flow {
        let Stage::Pending(p) = &mut self.stage else {
            self.refuse(
                ifp::ErrorClass::PairingFailed,
                "pair.confirm without a pending pairing on this connection".into(),
                Some(env.id),
            )
            .await;
            return Flow::Continue;
        };
        let Some(codes_match) = env.payload.get("codes_match").and_then(Value::as_bool) else {
            self.refuse(
                ifp::ErrorClass::InvalidEnvelope,
                "payload.codes_match: expected true or false".into(),
                Some(env.id),
            )
            .await;
            return Flow::Continue;
        };
        if !codes_match {
            self.end_pending(PairingEnd::CodesDifferPhone).await;
            return Flow::Close;
        }
        p.phone_ok = true;
        self.pending_moved(Some(env.id)).await
    }

    /// The person's answer on the desktop ([`Command::PairDecision`]).
    pub(super) async fn on_pair_decision(&mut self, codes_match: bool) -> Flow {
        let Stage::Pending(p) = &mut self.stage else {
            return Flow::Continue;
        };
        if !codes_match {
            self.end_pending(PairingEnd::CodesDifferDesktop).await;
            return Flow::Close;
        }
        p.desktop_ok = true;
        self.pending_moved(None).await
    }

    /// One side confirmed: pins the key and sends `pair.done` when both did, else tells the
    /// app what is still awaited.
    async fn pending_moved(&mut self, parent: Option<String>) -> Flow {
        let Stage::Pending(p) = &self.stage else {
            return Flow::Continue;
        };
        let info = p.info();
        if !(p.phone_ok && p.desktop_ok) {
            if let Some(slot) = lock(&self.shared.pending).as_mut() {
                if slot.conn == self.conn {
                    slot.info = info.clone();
                }
            }
            self.shared.emit(LinkEvent::PairingPending(info));
            return Flow::Continue;
        }
        let Stage::Pending(p) = std::mem::replace(&mut self.stage, Stage::Fresh) else {
            return Flow::Continue;
        };
        self.clear_pending_slot();
        let grant = p.grant;
        let now = self.shared.config.clock.now_ms();
        let record = PairedPhone {
            device_id: grant.device_id.clone(),
            public_key: grant.public_key.clone(),
            label: grant.label.clone(),
            capabilities: grant.capabilities.clone(),
            paired_at_ms: now,
            last_seen_ms: None,
            last_address: Some(self.peer.to_string()),
            binding: grant.binding,
        };
        if let Err(e) = self.shared.update_trust(|list| {
            list.retain(|p| p.device_id != record.device_id);
            list.push(record);
        }) {
            self.shared.fail(
                FailureKind::TrustFile,
                format!(
                    "could not save pairing of {}: {e}",
                    shown_id(&grant.device_id)
                ),
                Some(&grant.device_id),
                Some(self.peer),
            );
            self.refuse(
                ifp::ErrorClass::Internal,
                "the desktop could not save the pairing".into(),
                parent,
            )
            .await;
            self.release_window();
            return Flow::Close;
        }
        // The window's code did its work: closed (unless the person opened another since).
        {
            let mut w = lock(&self.shared.pairing);
            if w.as_ref().and_then(|o| o.held_by) == Some(self.conn) {
                *w = None;
            }
        }
        self.paired_now = true;
        self.shared.emit(LinkEvent::Paired {
            device_id: grant.device_id.clone(),
            label: grant.label.clone(),
            verification_code: p.code,
        });
        let done = ifp::OutgoingMessage::PairDone(ifp::PairDone {
            device_id: grant.device_id,
        });
        if self.send(done, parent, Map::new()).await.is_err() {
            return Flow::Close;
        }
        // The phone follows with control.hello on this connection.
        Flow::Continue
    }

    /// Discards the pending pairing on this connection: nothing written, the phone told why,
    /// the window released (one try spent; "they differ" on the desktop closes it), the app
    /// told ([`LinkEvent::PairingEnded`]). The caller closes the connection.
    pub(super) async fn end_pending(&mut self, end: PairingEnd) {
        if let Some(words) = self.discard_pending(end) {
            self.refuse(ifp::ErrorClass::PairingFailed, words, None)
                .await;
        }
    }

    /// [`Conn::end_pending`] without the answer to the phone; returns the words (`None` when
    /// nothing was pending).
    fn discard_pending(&mut self, end: PairingEnd) -> Option<String> {
        let Stage::Pending(p) = std::mem::replace(&mut self.stage, Stage::Fresh) else {
            return None;
        };
        self.clear_pending_slot();
        if end == PairingEnd::CodesDifferDesktop {
            let mut w = lock(&self.shared.pairing);
            if w.as_ref().and_then(|o| o.held_by) == Some(self.conn) {
                *w = None;
            }
        } else {
            self.release_window();
        }
        let shown = shown_id(&p.grant.device_id);
        let words = match end {
            PairingEnd::CodesDifferDesktop => format!("pairing of {shown} refused on the desktop: the person said the verification codes differ; nothing was saved and the pairing window is closed"),
            PairingEnd::CodesDifferPhone => format!("pairing of {shown} refused by the phone: its person said the verification codes differ; nothing was saved"),
            PairingEnd::Expired => format!("pairing of {shown} was not confirmed on both screens within {} s; nothing was saved", self.shared.config.pending_ttl.as_secs()),
            PairingEnd::PhoneLeft => format!("the phone {shown} went away before the pairing was confirmed; nothing was saved"),
        };
        self.shared.fail(
            FailureKind::PairingNotConfirmed,
            words.clone(),
            Some(&p.grant.device_id),
            Some(self.peer),
        );
        self.shared.emit(LinkEvent::PairingEnded {
            id: p.id,
            device_id: p.grant.device_id,
            label: p.grant.label,
            end,
        });
        Some(words)
    }

    /// At the connection's end: a pairing it held and did not finish is discarded.
    pub(super) fn abandon_pairing(&mut self) {
        match std::mem::replace(&mut self.stage, Stage::Fresh) {
            Stage::Granted(_) => self.release_window(),
            Stage::Pending(p) => {
                self.stage = Stage::Pending(p);
                // The socket is gone: nobody to answer.
                let _ = self.discard_pending(PairingEnd::PhoneLeft);
            }
            other => self.stage = other,
        }
    }

    fn clear_pending_slot(&self) {
        let mut slot = lock(&self.shared.pending);
        if slot.as_ref().map(|s| s.conn) == Some(self.conn) {
            *slot = None;
        }
    }

    /// The pairing this connection held its window for failed: one try spent; the window
    /// closes when it has no time or tries left.
    fn release_window(&self) {
        let now = self.shared.config.clock.now_ms();
        let mut w = lock(&self.shared.pairing);
        let Some(open) = w.as_mut().filter(|o| o.held_by == Some(self.conn)) else {
            return;
        };
        open.held_by = None;
        if !open.window.release_failed(now) {
            *w = None;
            drop(w);
            let reason = format!("the pairing window is closed: its {MAX_WRONG_TRIES} tries are spent or its time is up; open a new one");
            self.shared.emit(LinkEvent::PairingClosed { reason });
        }
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
