//! Support bundles: one `.tar.gz` a person saves with a click (Settings, or `switchboard
//! bundle [FILE]`) and sends to support, and the same app opens it read only on the other side.
//!
//! ## What a bundle holds
//! Every bundle has a `manifest.json` ([`BundleManifest`]: the format and its version, the
//! sender's app and OS versions, when it was saved, from where, each file with its purpose,
//! size and SHA-256, and what was left out and why), then:
//!
//! | file | what |
//! | --- | --- |
//! | `app.json` | app and OS versions, the settings |
//! | `phones.json` | the Phones view: paired phones (labels, device ids, key fingerprints, last seen, protocol) with the link diagnostics; never the pairing window or a pending pairing |
//! | `link.json` | the link diagnostics alone (interfaces, port, mDNS, recent failures and their causes) |
//! | `banners.json` | the Bridge view: current banners, their history, failures without a banner |
//! | `phone-lines.json` | the Phone lines view as shown, and each phone's phone-line settings (registry, pairing records, manifests) |
//! | `confirmations.json` | the Confirmations view (states, timelines, tools, risks) with each phone's autonomy table; parameter values redacted unless the person ticked them in |
//! | `dials.jsonl` | the last [`MAX_DIALS`] dials, request and response values redacted ([`redact::redact_values`]), error texts scrubbed |
//! | `logs/switchboard.log.YYYY-MM-DD` | the log files of the last [`LOG_DAYS`] days, every line scrubbed ([`redact::scrub_text`]) |
//!
//! ## Nothing secret leaves
//! A bundle is built from what the views show, never from the key store: no private key, no
//! key-store entry, no pairing code or link, no session proof. Log lines and error texts are
//! scrubbed of anything that looks like one ([`redact::scrub_text`]). The person sees every file
//! before saving ([`SupportBundle::preview`]).
//!
//! ## Reading one
//! [`open::open_bundle`] reads a bundle with every size bounded ([`open::Limits`]) and refuses,
//! naming what is wrong, anything that is not a gzip-compressed tar, a path that is absolute or
//! leaves the bundle (`..`), a link or device entry, a missing or foreign manifest, a newer
//! format version, or a file whose size or SHA-256 differs from the manifest's.

pub mod collect;
pub mod open;
pub mod redact;

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use ts_rs::TS;

/// The manifest's `format`: what says a file is a Switchboard support bundle.
pub const FORMAT: &str = "switchboard-support-bundle";
/// The bundle format version this build writes and reads (readers refuse a higher one).
pub const FORMAT_VERSION: u32 = 1;
/// The manifest's name inside the archive.
pub const MANIFEST: &str = "manifest.json";
/// How many dials a bundle holds at most (the newest).
pub const MAX_DIALS: usize = 1000;
/// How many days of log files a bundle holds (today and the days before, UTC).
pub const LOG_DAYS: u64 = 3;
/// The log files' name before the date (`switchboard.log.2026-07-21`), as the shell writes
/// them.
pub const LOG_FILE_PREFIX: &str = "switchboard.log.";
/// How much of one file [`SupportBundle::preview`] shows, in bytes (the whole file is saved).
pub const PREVIEW_BYTES: usize = 256 * 1024;
/// The name a bundle is saved under when none is given: `switchboard-support-<UTC time>.tar.gz`.
pub fn default_file_name(now_ms: u64) -> String {
    let t = switchboard_wire::timefmt::rfc3339_ms(now_ms);
    // 2026-12-01T14:26:54.123Z -> 20261201-142654
    let digits: String = t.chars().take(19).filter(char::is_ascii_digit).collect();
    let (date, time) = digits.split_at(digits.len().min(8));
    format!("switchboard-support-{date}-{time}.tar.gz")
}

/// Where the bundle's contents came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum BundleSource {
    /// The running app's state (what its views showed).
    RunningApp,
    /// The app's files, read while it was not running (no live link, banners or
    /// confirmations: they live in the running app's memory).
    AppFiles,
}

/// The sender's operating system.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct OsInfo {
    /// `linux`, `macos`, `windows`, ... (`std::env::consts::OS`).
    pub os: String,
    /// `unix` or `windows`.
    pub family: String,
    /// `x86_64`, `aarch64`, ...
    pub arch: String,
    /// The kernel release (`/proc/sys/kernel/osrelease` on Linux), when known.
    pub kernel: Option<String>,
    /// The distribution's name (`PRETTY_NAME` of `/etc/os-release`), when known.
    pub description: Option<String>,
}

impl OsInfo {
    /// This machine's.
    pub fn current() -> Self {
        let read = |p: &str| std::fs::read_to_string(p).ok();
        let description = read("/etc/os-release").and_then(|t| {
            t.lines().find_map(|l| {
                l.strip_prefix("PRETTY_NAME=")
                    .map(|v| v.trim().trim_matches('"').to_string())
            })
        });
        Self {
            os: std::env::consts::OS.to_string(),
            family: std::env::consts::FAMILY.to_string(),
            arch: std::env::consts::ARCH.to_string(),
            kernel: read("/proc/sys/kernel/osrelease").map(|k| k.trim().to_string()),
            description,
        }
    }
}

/// One file of a bundle as its manifest lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct ManifestFile {
    /// Its path inside the archive (`phones.json`, `logs/switchboard.log.2026-12-01`).
    pub name: String,
    /// What it is and why it is there, in words.
    pub purpose: String,
    /// Its size in bytes.
    #[ts(type = "number")]
    pub bytes: u64,
    /// Lowercase hex SHA-256 of its bytes.
    pub sha256: String,
}

/// `manifest.json`: what is inside a bundle and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct BundleManifest {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`FORMAT_VERSION`] of the app that wrote it.
    pub version: u32,
    /// The sender's app name (`Switchboard`).
    pub app_name: String,
    /// The sender's app version.
    pub app_version: String,
    /// The sender's OS.
    pub os: OsInfo,
    /// When it was saved, ms since the Unix epoch.
    #[ts(type = "number")]
    pub saved_at_ms: u64,
    /// The same, RFC 3339 UTC.
    pub saved_at: String,
    /// Where its contents came from.
    pub source: BundleSource,
    /// Whether the sender's app ran with the built-in demo phone (or the demo's files were read).
    pub demo: bool,
    /// Whether confirmation parameter values were ticked in (else they are redacted).
    pub parameters_included: bool,
    /// Every other file, in archive order.
    pub files: Vec<ManifestFile>,
    /// What a reader might look for and will not find, each with why.
    pub left_out: Vec<String>,
}

/// One file of a bundle being built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleFile {
    /// Its path inside the archive.
    pub name: String,
    /// Its purpose (the manifest's words).
    pub purpose: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

impl BundleFile {
    /// A JSON file, pretty-printed.
    ///
    /// # Errors
    /// When `value` does not serialise (never for the app's own types).
    pub fn json<T: Serialize + ?Sized>(
        name: &str,
        purpose: &str,
        value: &T,
    ) -> Result<Self, serde_json::Error> {
        let mut bytes = serde_json::to_vec_pretty(value)?;
        bytes.push(b'\n');
        Ok(Self {
            name: name.to_string(),
            purpose: purpose.to_string(),
            bytes,
        })
    }
}

/// What the person chooses when saving a bundle.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct BundleOptions {
    /// Put confirmation parameter values in as they are (default: redacted to type markers).
    #[serde(default)]
    pub include_params: bool,
}

/// A bundle built in memory: the manifest and its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SupportBundle {
    /// The manifest (its `files` list the files below).
    pub manifest: BundleManifest,
    /// The files, in archive order (the manifest first in the archive, not in this list).
    pub files: Vec<BundleFile>,
}

/// One file as the preview dialog shows it.
#[derive(Debug, Clone, Serialize, TS)]
#[ts(export)]
pub struct PreviewFile {
    /// Its path inside the archive.
    pub name: String,
    /// What it is and why.
    pub purpose: String,
    /// Its whole size in bytes.
    #[ts(type = "number")]
    pub bytes: u64,
    /// Its text (the first [`PREVIEW_BYTES`]; invalid UTF-8 shown with replacement marks).
    pub text: String,
    /// Whether `text` is cut short (the file saved is whole).
    pub cut: bool,
}

/// Every file of a bundle before it is saved, the manifest first.
#[derive(Debug, Clone, Serialize, TS)]
#[ts(export)]
pub struct BundlePreview {
    /// The manifest as it will be saved.
    pub manifest: BundleManifest,
    /// Every file, `manifest.json` first.
    pub files: Vec<PreviewFile>,
    /// The file name suggested for saving (`switchboard-support-<time>.tar.gz`).
    pub suggested_name: String,
}

/// Where a bundle was saved.
#[derive(Debug, Clone, Serialize, TS)]
#[ts(export)]
pub struct SavedBundle {
    /// The archive's path.
    pub path: String,
    /// Its size in bytes.
    #[ts(type = "number")]
    pub bytes: u64,
    /// How many files it holds, the manifest included.
    pub files: u32,
}

/// Why a bundle could not be built, saved or opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BundleError {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What failed.
        source: std::io::Error,
    },
    /// The archive is not a support bundle this app can read; the text says what is wrong.
    #[error("{path} is not a support bundle Switchboard can open: {reason}")]
    Refused {
        /// The archive.
        path: String,
        /// What is wrong, in words.
        reason: String,
    },
    /// A bundle could not be put together (a serialisation bug).
    #[error("building the support bundle: {0}")]
    Build(String),
}

impl From<BundleError> for switchboard_wire::error::IpcError {
    fn from(e: BundleError) -> Self {
        match e {
            BundleError::Io { .. } => Self::io(e.to_string()),
            BundleError::Refused { .. } => Self::invalid_input(e.to_string()),
            BundleError::Build(_) => Self::internal(e.to_string()),
        }
    }
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

impl SupportBundle {
    /// A bundle of `files` with its manifest: `source`, `demo`, `options`, saved at `now_ms`,
    /// with `left_out` listed.
    pub fn assemble(
        files: Vec<BundleFile>,
        source: BundleSource,
        demo: bool,
        options: BundleOptions,
        now_ms: u64,
        left_out: Vec<String>,
    ) -> Self {
        let info = switchboard_wire::app_info::app_info();
        let manifest = BundleManifest {
            format: FORMAT.to_string(),
            version: FORMAT_VERSION,
            app_name: info.name,
            app_version: info.version,
            os: OsInfo::current(),
            saved_at_ms: now_ms,
            saved_at: switchboard_wire::timefmt::rfc3339_ms(now_ms),
            source,
            demo,
            parameters_included: options.include_params,
            files: files
                .iter()
                .map(|f| ManifestFile {
                    name: f.name.clone(),
                    purpose: f.purpose.clone(),
                    bytes: f.bytes.len() as u64,
                    sha256: sha256_hex(&f.bytes),
                })
                .collect(),
            left_out,
        };
        Self { manifest, files }
    }

    /// The manifest's bytes as saved (pretty JSON).
    ///
    /// # Errors
    /// [`BundleError::Build`] when it does not serialise (never in practice).
    pub fn manifest_bytes(&self) -> Result<Vec<u8>, BundleError> {
        let mut b = serde_json::to_vec_pretty(&self.manifest)
            .map_err(|e| BundleError::Build(format!("manifest: {e}")))?;
        b.push(b'\n');
        Ok(b)
    }

    /// Every file, the manifest first, as the preview dialog shows them.
    ///
    /// # Errors
    /// As [`SupportBundle::manifest_bytes`].
    pub fn preview(&self) -> Result<BundlePreview, BundleError> {
        let manifest = self.manifest_bytes()?;
        let one = |name: &str, purpose: &str, bytes: &[u8]| {
            let cut = bytes.len() > PREVIEW_BYTES;
            let shown = &bytes[..bytes.len().min(PREVIEW_BYTES)];
            PreviewFile {
                name: name.to_string(),
                purpose: purpose.to_string(),
                bytes: bytes.len() as u64,
                text: String::from_utf8_lossy(shown).into_owned(),
                cut,
            }
        };
        let mut files = vec![one(
            MANIFEST,
            "What is inside and why: the sender's app and OS versions, when it was saved, each \
             file's purpose, size and SHA-256, and what was left out.",
            &manifest,
        )];
        files.extend(
            self.files
                .iter()
                .map(|f| one(&f.name, &f.purpose, &f.bytes)),
        );
        Ok(BundlePreview {
            manifest: self.manifest.clone(),
            files,
            suggested_name: default_file_name(self.manifest.saved_at_ms),
        })
    }

    /// The archive's bytes: a gzip-compressed tar of `manifest.json` then every file, each
    /// `0600`, owned by uid 0, dated at the save time.
    ///
    /// # Errors
    /// [`BundleError::Build`] when writing to memory fails (never in practice).
    pub fn to_tar_gz(&self) -> Result<Vec<u8>, BundleError> {
        let build = |e: std::io::Error| BundleError::Build(e.to_string());
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        let mut tar = tar::Builder::new(gz);
        let mtime = self.manifest.saved_at_ms / 1000;
        let manifest = self.manifest_bytes()?;
        let entries = std::iter::once((MANIFEST, manifest.as_slice())).chain(
            self.files
                .iter()
                .map(|f| (f.name.as_str(), f.bytes.as_slice())),
        );
        for (name, bytes) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(bytes.len() as u64);
            header.set_mode(0o600);
            header.set_mtime(mtime);
            header.set_entry_type(tar::EntryType::Regular);
            tar.append_data(&mut header, name, bytes).map_err(build)?;
        }
        let gz = tar.into_inner().map_err(build)?;
        gz.finish().map_err(build)
    }

    /// Saves the archive to `path` atomically ([`switchboard_wire::fsutil::write_atomic`]; `0600` on Unix).
    /// The folder must exist.
    ///
    /// # Errors
    /// [`BundleError::Io`] naming `path` when it cannot be written.
    pub fn save(&self, path: &Path) -> Result<SavedBundle, BundleError> {
        let bytes = self.to_tar_gz()?;
        let io = |source| BundleError::Io {
            path: path.display().to_string(),
            source,
        };
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !dir.is_dir() {
            return Err(io(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("the folder {} does not exist", dir.display()),
            )));
        }
        switchboard_wire::fsutil::write_atomic_with(path, |f| f.write_all(&bytes)).map_err(io)?;
        Ok(SavedBundle {
            path: path.display().to_string(),
            bytes: bytes.len() as u64,
            files: u32::try_from(self.files.len() + 1).unwrap_or(u32::MAX),
        })
    }
}
