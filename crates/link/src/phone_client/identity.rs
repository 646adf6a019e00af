//! The phone's own identity: its Ed25519 signing key, device id and label.
//!
//! Apart from the connection because one identity outlives many connections (a phone pairs once
//! and says hello on every reconnect).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ed25519_dalek::{Signer as _, SigningKey};

use crate::identity::key_fingerprint;

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

    /// `msg` signed with this phone's key, the 64-byte Ed25519 signature as unpadded base64url.
    pub(super) fn sign_b64(&self, msg: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(self.signing.sign(msg).to_bytes())
    }
}
