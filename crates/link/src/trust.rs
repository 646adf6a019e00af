//! The trust file: the phones this desktop has paired with (their pairing records).
//!
//! `docs/protocol.md`, "Link: pairing and sessions". One small JSON file,
//! `<data dir>/paired-phones.json`:
//! `{"version":1,"phones":[{device_id, public_key, label, capabilities, paired_at_ms,
//! last_seen_ms, last_address, binding}]}`. It is rewritten whole and atomically with
//! [`switchboard_wire::fsutil::write_atomic`] (exclusive temp file in the same folder, fsync, rename), so a
//! crash never leaves it half-written; on Unix it is `0600`. A missing file is an empty
//! list; an unreadable one is an error naming the file (never silently reset).

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// File name of the trust file inside the data folder.
pub const TRUST_FILE: &str = "paired-phones.json";

/// Errors reading or writing the trust file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrustError {
    /// Reading or writing the file failed.
    #[error("trust file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is not a valid trust file.
    #[error(
        "trust file {path} is not valid: {reason}; move it away to start with no paired phones"
    )]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
}

/// A paired phone: the pairing record the desktop keeps for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct PairedPhone {
    /// The phone's ifp device id (`dev_...`).
    pub device_id: String,
    /// The phone's pinned Ed25519 public key, unpadded base64url (43 characters).
    pub public_key: String,
    /// The name the phone gave itself in `pair.request` (may be empty).
    pub label: String,
    /// The capabilities it declared (`[{type, properties?}]`), as received.
    #[ts(type = "Array<unknown>")]
    pub capabilities: Vec<serde_json::Value>,
    /// When it was paired, milliseconds since the Unix epoch.
    #[ts(type = "number")]
    pub paired_at_ms: u64,
    /// When it last said a valid hello, milliseconds since the Unix epoch.
    #[ts(type = "number | null")]
    pub last_seen_ms: Option<u64>,
    /// The `ip:port` it last connected from.
    pub last_address: Option<String>,
    /// What its hello proofs are bound to, chosen when it paired (`docs/protocol.md`, "Hello
    /// bindings"); a record written before bindings were recorded reads as the exporter. A
    /// hello in another binding is refused, so a phone paired with the exporter can never be
    /// downgraded.
    #[serde(default)]
    pub binding: crate::binding::HelloBinding,
}

#[derive(Debug, Serialize, Deserialize)]
struct TrustDoc {
    version: u32,
    phones: Vec<PairedPhone>,
}

/// The trust file of one data folder.
#[derive(Debug, Clone)]
pub struct TrustFile {
    path: PathBuf,
}

impl TrustFile {
    /// The trust file in `data_dir` (created on first write; the folder must be creatable).
    pub fn in_dir(data_dir: &Path) -> Self {
        Self {
            path: data_dir.join(TRUST_FILE),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads all paired phones; a missing file is an empty list.
    pub fn load(&self) -> Result<Vec<PairedPhone>, TrustError> {
        let bytes = match fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(TrustError::Io {
                    path: self.path.clone(),
                    source,
                })
            }
        };
        let doc: TrustDoc = serde_json::from_slice(&bytes).map_err(|e| TrustError::Invalid {
            path: self.path.clone(),
            reason: e.to_string(),
        })?;
        if doc.version != 1 {
            return Err(TrustError::Invalid {
                path: self.path.clone(),
                reason: format!("unknown version {}", doc.version),
            });
        }
        Ok(doc.phones)
    }

    /// Replaces the file's contents with `phones`, atomically and privately
    /// ([`switchboard_wire::fsutil::write_atomic`]: an exclusive temporary file with a random name, fsync,
    /// rename; the file `0600` and a new folder `0700` on Unix).
    ///
    /// # Errors
    /// [`TrustError::Io`] naming the file when it cannot be written (it is then unchanged).
    pub fn save(&self, phones: &[PairedPhone]) -> Result<(), TrustError> {
        let doc = TrustDoc {
            version: 1,
            phones: phones.to_vec(),
        };
        let mut text = serde_json::to_vec_pretty(&doc).map_err(|e| TrustError::Invalid {
            path: self.path.clone(),
            reason: e.to_string(),
        })?;
        text.push(b'\n');
        switchboard_wire::fsutil::write_atomic(&self.path, &text).map_err(|source| TrustError::Io {
            path: self.path.clone(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn phone(id: &str) -> PairedPhone {
        PairedPhone {
            device_id: id.to_string(),
            public_key: "A".repeat(43),
            label: "Pixel".into(),
            capabilities: vec![serde_json::json!({"type": "tool:messages.send"})],
            paired_at_ms: 1,
            last_seen_ms: None,
            last_address: Some("127.0.0.1:5000".into()),
            binding: Default::default(),
        }
    }

    #[test]
    fn missing_is_empty_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let t = TrustFile::in_dir(&dir.path().join("sub"));
        assert!(t.load().unwrap().is_empty());
        t.save(&[phone("dev_aaaa"), phone("dev_bbbb")]).unwrap();
        let back = t.load().unwrap();
        assert_eq!(back, vec![phone("dev_aaaa"), phone("dev_bbbb")]);
        let leftovers: Vec<_> = fs::read_dir(dir.path().join("sub"))
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(t.path()), 0o600);
            assert_eq!(mode(&dir.path().join("sub")), 0o700);
        }
    }

    #[test]
    fn unreadable_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let t = TrustFile::in_dir(dir.path());
        fs::write(t.path(), b"{\"version\":1,\"phones\":[{}]}").unwrap();
        let e = t.load().unwrap_err();
        assert!(e.to_string().contains(TRUST_FILE), "{e}");
    }
}
