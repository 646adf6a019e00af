//! The simulated phone's identity file (`--identity FILE`).
//!
//! A real phone keeps its private key in the OS key store (`ifp1-notes.md`, "Pairing and
//! identity": "Private keys belong in the OS key store"). `switchboard-phone` is a **simulator**:
//! it keeps its Ed25519 seed in a plain JSON file so tests and demos can restart it, and says so
//! in `--help` and when it starts. Shape (`docs/protocol.md`, "The reference phone"):
//! `{"version": 1, "device_id": "dev_...", "label": "...", "seed": "<32 bytes, base64url>",
//! "desktop": {"address": "ip:port", "cert_fp": "<64 hex>", "public_key": "<base64url>"} | null}`.
//! Written atomically (temporary file, fsync, rename).

use std::path::{Path, PathBuf};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::phone_client::PhoneIdentity;

/// Errors of the identity file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IdentityFileError {
    /// Reading or writing failed.
    #[error("identity file {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the file system said.
        source: std::io::Error,
    },
    /// The file is not an identity file.
    #[error("identity file {}: {problem}", path.display())]
    Shape {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the field.
        problem: String,
    },
}

/// The desktop this phone paired with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnownDesktop {
    /// Where it was reached last (`ip:port`): tried first.
    pub address: String,
    /// Its other addresses (`ip:port`, from the pairing link's `alt`), tried after `address`,
    /// concurrently (absent in identity files written before).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_addresses: Vec<String>,
    /// Its certificate fingerprint (pinned).
    pub cert_fp: String,
    /// Its Ed25519 public key, base64url (checks its hello proofs).
    pub public_key: String,
}

/// The identity file's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdentityFile {
    /// Always 1.
    pub version: u32,
    /// The phone's device id.
    pub device_id: String,
    /// Its label.
    pub label: String,
    /// The Ed25519 seed, 32 bytes as unpadded base64url (secret).
    pub seed: String,
    /// The paired desktop, once paired.
    #[serde(default)]
    pub desktop: Option<KnownDesktop>,
}

impl IdentityFile {
    /// A new identity labelled `label` (fresh key; device id from the key).
    pub fn generate(label: &str) -> Self {
        let id = PhoneIdentity::generate(label);
        IdentityFile {
            version: 1,
            device_id: id.device_id().to_string(),
            label: label.to_string(),
            seed: URL_SAFE_NO_PAD.encode(id.seed()),
            desktop: None,
        }
    }

    /// Reads `path`. Errors: unreadable, not JSON of this shape (the field named), a seed that
    /// is not 32 bytes of base64url.
    pub fn load(path: &Path) -> Result<Self, IdentityFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| IdentityFileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let shape = |problem: String| IdentityFileError::Shape {
            path: path.to_path_buf(),
            problem,
        };
        let mut de = serde_json::Deserializer::from_str(&text);
        let f: IdentityFile = serde_path_to_error::deserialize(&mut de)
            .map_err(|e| shape(format!("{}: {}", e.path(), e.inner())))?;
        if f.version != 1 {
            return Err(shape(format!("version: {} is not 1", f.version)));
        }
        if f.seed_bytes().is_none() {
            return Err(shape(
                "seed: expected 32 bytes as unpadded base64url (43 characters)".into(),
            ));
        }
        Ok(f)
    }

    /// Reads `path`, or creates a new identity there when the file does not exist.
    pub fn load_or_create(path: &Path, label: &str) -> Result<Self, IdentityFileError> {
        if path.exists() {
            return Self::load(path);
        }
        let f = Self::generate(label);
        f.save(path)?;
        Ok(f)
    }

    /// The seed's 32 bytes, or `None` when [`IdentityFile::seed`] is not 32 bytes of unpadded
    /// base64url ([`IdentityFile::load`] refuses such a file, naming the field).
    fn seed_bytes(&self) -> Option<[u8; 32]> {
        URL_SAFE_NO_PAD
            .decode(&self.seed)
            .ok()
            .and_then(|b| <[u8; 32]>::try_from(b).ok())
    }

    /// The phone identity (key, device id, label).
    pub fn identity(&self) -> PhoneIdentity {
        let seed = self.seed_bytes().unwrap_or([0u8; 32]);
        PhoneIdentity::from_seed(seed, &self.device_id, &self.label)
    }

    /// Writes the file atomically.
    pub fn save(&self, path: &Path) -> Result<(), IdentityFileError> {
        let text = serde_json::to_string_pretty(self).map_err(|e| IdentityFileError::Shape {
            path: path.to_path_buf(),
            problem: e.to_string(),
        })?;
        switchboard_wire::fsutil::write_atomic(path, text.as_bytes()).map_err(|source| {
            IdentityFileError::Io {
                path: path.to_path_buf(),
                source,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn round_trips_and_names_bad_fields() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("phone.json");
        let a = IdentityFile::load_or_create(&p, "Test phone").unwrap();
        let b = IdentityFile::load_or_create(&p, "ignored").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.identity().public_key_b64(), b.identity().public_key_b64());
        std::fs::write(
            &p,
            r#"{"version":1,"device_id":"dev_x1234","label":"x","seed":"short"}"#,
        )
        .unwrap();
        let e = IdentityFile::load(&p).unwrap_err().to_string();
        assert!(e.contains("seed"), "{e}");
        std::fs::write(&p, r#"{"version":1,"device_id":5}"#).unwrap();
        let e = IdentityFile::load(&p).unwrap_err().to_string();
        assert!(e.contains("device_id"), "{e}");
    }
}
