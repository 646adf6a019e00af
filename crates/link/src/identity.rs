//! The desktop's long-lived identity: its Ed25519 key and its self-signed TLS certificate.
//!
//! `ifp1-notes.md`, "Pairing and identity" (private keys in the OS key store, no default
//! credential) and `docs/protocol.md`, "Link: pairing and sessions". Both keys are made once, at
//! first start, and kept together as one secret ([`IDENTITY_SECRET`]) in a [`SecretStore`], so
//! the certificate fingerprint a phone pinned stays valid across restarts. The certificate
//! fingerprint is the lowercase hex SHA-256 of the certificate's DER bytes.

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::secret_store::{SecretStore, SecretStoreError};

/// Name of the secret that holds the desktop identity in the [`SecretStore`].
pub const IDENTITY_SECRET: &str = "desktop-identity";

/// The DNS name written into the self-signed certificate (phones pin the fingerprint, not it).
pub const CERT_NAME: &str = "switchboard.local";

/// Errors loading or creating the desktop identity.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IdentityError {
    /// The key store could not be used (see [`SecretStoreError`] for what to do).
    #[error(transparent)]
    KeyStore(#[from] SecretStoreError),
    /// The stored identity could not be read back.
    #[error("the desktop identity in the OS key store (secret `{IDENTITY_SECRET}`) is unreadable: {0}; delete it to make a new one (phones will have to pair again)")]
    Corrupt(String),
    /// Generating the certificate failed.
    #[error("could not generate the TLS certificate: {0}")]
    Certificate(String),
}

#[derive(Serialize, Deserialize)]
struct Stored {
    v: u32,
    /// Ed25519 secret key seed, 32 bytes, standard base64.
    ed25519_seed: String,
    /// TLS certificate, DER, standard base64.
    cert_der: String,
    /// TLS private key, PKCS#8 DER, standard base64.
    key_der: String,
}

/// The desktop's Ed25519 signing key and TLS certificate + key.
#[derive(Clone)]
pub struct DesktopIdentity {
    signing: SigningKey,
    cert_der: Vec<u8>,
    key_der: Vec<u8>,
    fingerprint: String,
}

impl std::fmt::Debug for DesktopIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DesktopIdentity")
            .field("public_key", &self.public_key_b64())
            .field("cert_fingerprint", &self.fingerprint)
            .finish_non_exhaustive()
    }
}

impl DesktopIdentity {
    /// Loads the identity from `store`, or creates and stores a new one at first start.
    ///
    /// Errors: [`IdentityError::KeyStore`] when no key store is reachable (never falls back
    /// to a plain file), [`IdentityError::Corrupt`] when the stored secret is unreadable.
    pub fn load_or_create(store: &dyn SecretStore) -> Result<Self, IdentityError> {
        if let Some(bytes) = store.get(IDENTITY_SECRET)? {
            return Self::decode(&bytes);
        }
        let id = Self::generate()?;
        store.set(IDENTITY_SECRET, &id.encode()?)?;
        Ok(id)
    }

    /// Makes a fresh identity without storing it (tests, and the first start).
    pub fn generate() -> Result<Self, IdentityError> {
        let signing = SigningKey::generate(&mut rand::rngs::OsRng);
        let ck = rcgen::generate_simple_self_signed(vec![CERT_NAME.to_string()])
            .map_err(|e| IdentityError::Certificate(e.to_string()))?;
        let cert_der = ck.cert.der().to_vec();
        let key_der = ck.key_pair.serialize_der();
        Ok(Self::from_parts(signing, cert_der, key_der))
    }

    fn from_parts(signing: SigningKey, cert_der: Vec<u8>, key_der: Vec<u8>) -> Self {
        let fingerprint = cert_fingerprint(&cert_der);
        Self {
            signing,
            cert_der,
            key_der,
            fingerprint,
        }
    }

    fn encode(&self) -> Result<Vec<u8>, IdentityError> {
        let stored = Stored {
            v: 1,
            ed25519_seed: STANDARD.encode(self.signing.to_bytes()),
            cert_der: STANDARD.encode(&self.cert_der),
            key_der: STANDARD.encode(&self.key_der),
        };
        serde_json::to_vec(&stored).map_err(|e| IdentityError::Corrupt(e.to_string()))
    }

    fn decode(bytes: &[u8]) -> Result<Self, IdentityError> {
        let s: Stored =
            serde_json::from_slice(bytes).map_err(|e| IdentityError::Corrupt(e.to_string()))?;
        if s.v != 1 {
            return Err(IdentityError::Corrupt(format!("unknown version {}", s.v)));
        }
        let b64 = |field: &str, v: &str| {
            STANDARD
                .decode(v)
                .map_err(|e| IdentityError::Corrupt(format!("{field}: {e}")))
        };
        let seed: [u8; 32] = b64("ed25519_seed", &s.ed25519_seed)?
            .try_into()
            .map_err(|_| IdentityError::Corrupt("ed25519_seed is not 32 bytes".into()))?;
        Ok(Self::from_parts(
            SigningKey::from_bytes(&seed),
            b64("cert_der", &s.cert_der)?,
            b64("key_der", &s.key_der)?,
        ))
    }

    /// The Ed25519 public key.
    pub fn verifying_key(&self) -> VerifyingKey {
        self.signing.verifying_key()
    }

    /// The Ed25519 public key as unpadded base64url (43 characters).
    pub fn public_key_b64(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.signing.verifying_key().as_bytes())
    }

    /// The certificate fingerprint: lowercase hex SHA-256 of the certificate DER (64 chars).
    pub fn cert_fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// The certificate, DER.
    pub fn cert_der(&self) -> &[u8] {
        &self.cert_der
    }

    /// The certificate's private key, PKCS#8 DER.
    pub fn key_der(&self) -> &[u8] {
        &self.key_der
    }

    /// The desktop's ifp device id: `dev_` + first 16 hex of SHA-256 of the public key.
    pub fn device_id(&self) -> String {
        format!(
            "dev_{}",
            &key_fingerprint(self.signing.verifying_key().as_bytes())
        )
    }

    /// The desktop's ifp entity id, used on every message it sends that needs one:
    /// `ent_` + first 16 hex of SHA-256 of the public key.
    pub fn entity_id(&self) -> String {
        format!(
            "ent_{}",
            &key_fingerprint(self.signing.verifying_key().as_bytes())
        )
    }

    /// Signs `bytes` with the desktop's Ed25519 key; unpadded base64url of the 64-byte signature.
    pub fn sign_b64(&self, bytes: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(self.signing.sign(bytes).to_bytes())
    }
}

/// Lowercase hex SHA-256 of a certificate's DER bytes (64 characters).
pub fn cert_fingerprint(der: &[u8]) -> String {
    hex::encode(Sha256::digest(der))
}

/// A short, human-comparable fingerprint of an Ed25519 public key: the first 16 lowercase hex
/// characters of SHA-256 of the 32 raw key bytes.
pub fn key_fingerprint(public_key: &[u8]) -> String {
    let full = hex::encode(Sha256::digest(public_key));
    full.get(..16).unwrap_or(&full).to_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::super::secret_store::MemoryStore;
    use super::*;

    #[test]
    fn made_once_and_kept() {
        let store = MemoryStore::new();
        let a = DesktopIdentity::load_or_create(&store).unwrap();
        let b = DesktopIdentity::load_or_create(&store).unwrap();
        assert_eq!(a.public_key_b64(), b.public_key_b64());
        assert_eq!(a.cert_fingerprint(), b.cert_fingerprint());
        assert_eq!(a.cert_der(), b.cert_der());
        assert_eq!(a.public_key_b64().len(), 43);
        assert_eq!(a.cert_fingerprint(), cert_fingerprint(a.cert_der()));
        assert_eq!(a.cert_fingerprint().len(), 64);
        let other = DesktopIdentity::load_or_create(&MemoryStore::new()).unwrap();
        assert_ne!(a.public_key_b64(), other.public_key_b64());
        assert_ne!(a.cert_fingerprint(), other.cert_fingerprint());
    }

    #[test]
    fn corrupt_secret_is_a_clear_error() {
        let store = MemoryStore::new();
        store.set(IDENTITY_SECRET, b"{not json").unwrap();
        let e = DesktopIdentity::load_or_create(&store).unwrap_err();
        assert!(matches!(e, IdentityError::Corrupt(_)));
        assert!(e.to_string().contains(IDENTITY_SECRET));
    }
}
