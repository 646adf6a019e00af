//! Pairing from the phone's side: `pair.request` → `pair.grant` → `pair.complete` →
//! `pair.reveal`, the check of the desktop's commitment, the verification code, then
//! `pair.confirm` → `pair.done`.
//!
//! `docs/protocol.md`, "Link: pairing and sessions" and "Verification code".

use serde_json::{json, Value};

use super::{PhoneClient, PhoneError, PhoneIdentity};
use crate::binding::{HelloBinding, BINDING_EXT};
use crate::pairing::{commitment_b64, pair_signed_bytes, random_nonce, verification_code};

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

impl PhoneClient {
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
        let mut req = self.envelope(
            "pair.request",
            None,
            json!({"pairing_code": code, "public_key": me.public_key_b64(),
                   "capabilities": capabilities, "label": me.label()}),
        );
        req["device"] = json!(me.device_id());
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
        let device_id = p["device_id"]
            .as_str()
            .unwrap_or(me.device_id())
            .to_string();
        self.set_desktop_public_key(&desktop_pk)?;
        let phone_nonce = random_nonce();
        let sig = me.sign_b64(&pair_signed_bytes(
            &challenge,
            &self.cert_fp,
            &device_id,
            &phone_nonce,
        ));
        let done = self.envelope(
            "pair.complete",
            None,
            json!({"device_id": device_id, "signature": sig, "nonce": phone_nonce}),
        );
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
        let confirm = self.envelope(
            "pair.confirm",
            Some(&me.entity_id()),
            json!({"codes_match": codes_match}),
        );
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
}
