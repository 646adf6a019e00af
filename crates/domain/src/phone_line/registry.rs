//! The registry of known phone lines (phone-line.md, "Discovery and pairing"): LumiAgent only
//! dials extension ids in its `KNOWN_PHONELINES` whitelist of `{ identifier, name }` entries,
//! and a line whose describe declares another `extension.name` than its entry is skipped.
//!
//! Switchboard starts from the spec's list (LumiRealm) and lets the desktop add and remove
//! entries; the shell keeps them in a settings file read and written here:
//! `{"version":1,"phoneLines":[{"identifier":"lumirealm","name":"LumiRealm"}]}` (written
//! atomically).

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Errors changing, reading or writing the registry.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// An entry's identifier is empty or has characters an extension id cannot have.
    #[error(
        "bad phone-line identifier {0:?}: use letters, digits, '_' or '-', with no spaces or dots"
    )]
    BadIdentifier(String),
    /// An entry's name is empty.
    #[error("phone line {0:?} needs a non-empty name")]
    EmptyName(String),
    /// The identifier is already in the registry.
    #[error("phone line {0:?} is already in the registry")]
    Duplicate(String),
    /// The settings file is not a registry (serde_json's words give field, line and column).
    #[error("not a phone-line registry file: {0}")]
    Parse(#[from] serde_json::Error),
    /// The settings file has a `version` this reader does not know.
    #[error("unsupported phone-line registry version {0} (this reader knows version 1)")]
    Version(u64),
    /// Reading or writing the settings file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
}

impl From<RegistryError> for switchboard_wire::error::IpcError {
    /// `io` for read and write failures, `invalid_input` for everything else.
    fn from(e: RegistryError) -> Self {
        let kind = match &e {
            RegistryError::Io { .. } => switchboard_wire::error::IpcErrorKind::Io,
            _ => switchboard_wire::error::IpcErrorKind::InvalidInput,
        };
        Self::new(kind, e.to_string())
    }
}

/// One known phone line: `{ identifier, name }` as in LumiAgent's registry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct KnownPhoneLine {
    /// The extension id (its endpoint is `<identifier>.phoneline`).
    pub identifier: String,
    /// The name its describe must declare as `extension.name`.
    pub name: String,
}

impl KnownPhoneLine {
    /// An entry, checked: `identifier` non-empty with only ASCII letters, digits, `_` and `-`;
    /// `name` non-empty.
    pub fn new(identifier: &str, name: &str) -> Result<Self, RegistryError> {
        let id_ok = !identifier.is_empty()
            && identifier
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !id_ok {
            return Err(RegistryError::BadIdentifier(identifier.to_string()));
        }
        if name.trim().is_empty() {
            return Err(RegistryError::EmptyName(identifier.to_string()));
        }
        Ok(Self {
            identifier: identifier.to_string(),
            name: name.to_string(),
        })
    }
}

/// The spec's registry: LumiRealm, the reference implementation.
pub const BUILTIN_PHONE_LINES: [(&str, &str); 1] = [("lumirealm", "LumiRealm")];

#[derive(Serialize, Deserialize)]
struct RegistryFile {
    version: u64,
    #[serde(rename = "phoneLines")]
    phone_lines: Vec<KnownPhoneLine>,
}

/// The known phone lines, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhoneLineRegistry {
    lines: Vec<KnownPhoneLine>,
}

impl Default for PhoneLineRegistry {
    fn default() -> Self {
        Self::builtin()
    }
}

impl PhoneLineRegistry {
    /// The spec's registry ([`BUILTIN_PHONE_LINES`]).
    pub fn builtin() -> Self {
        Self {
            lines: BUILTIN_PHONE_LINES
                .iter()
                .map(|(identifier, name)| KnownPhoneLine {
                    identifier: (*identifier).to_string(),
                    name: (*name).to_string(),
                })
                .collect(),
        }
    }

    /// An empty registry.
    pub fn empty() -> Self {
        Self { lines: Vec::new() }
    }

    /// The entries in order.
    pub fn lines(&self) -> &[KnownPhoneLine] {
        &self.lines
    }

    /// The entry for extension id `identifier`.
    pub fn get(&self, identifier: &str) -> Option<&KnownPhoneLine> {
        self.lines.iter().find(|l| l.identifier == identifier)
    }

    /// Adds `line` at the end. Errors with [`RegistryError::Duplicate`] when its identifier is
    /// already there.
    pub fn add(&mut self, line: KnownPhoneLine) -> Result<(), RegistryError> {
        if self.get(&line.identifier).is_some() {
            return Err(RegistryError::Duplicate(line.identifier));
        }
        self.lines.push(line);
        Ok(())
    }

    /// Removes and returns the entry for `identifier`, if any.
    pub fn remove(&mut self, identifier: &str) -> Option<KnownPhoneLine> {
        let i = self.lines.iter().position(|l| l.identifier == identifier)?;
        Some(self.lines.remove(i))
    }

    /// Reads a settings file's text. Errors: not JSON or wrong shape ([`RegistryError::Parse`],
    /// naming field, line and column), `version` not 1, a bad or duplicate entry.
    pub fn parse(text: &str) -> Result<Self, RegistryError> {
        let file: RegistryFile = serde_json::from_str(text)?;
        if file.version != 1 {
            return Err(RegistryError::Version(file.version));
        }
        let mut registry = Self::empty();
        for line in file.phone_lines {
            registry.add(KnownPhoneLine::new(&line.identifier, &line.name)?)?;
        }
        Ok(registry)
    }

    /// The settings file's text (two-space indented JSON).
    pub fn to_text(&self) -> String {
        let file = RegistryFile {
            version: 1,
            phone_lines: self.lines.clone(),
        };
        serde_json::to_string_pretty(&file).unwrap_or_default()
    }

    /// Reads the settings file at `path`; when there is none, the [`builtin`](Self::builtin)
    /// registry. Errors as [`parse`](Self::parse), or [`RegistryError::Io`].
    pub fn load(path: &Path) -> Result<Self, RegistryError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::parse(&text),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Self::builtin()),
            Err(source) => Err(RegistryError::Io {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    /// Writes the settings file at `path` atomically (temporary file, fsync, rename).
    pub fn save(&self, path: &Path) -> Result<(), RegistryError> {
        switchboard_wire::fsutil::write_atomic(path, self.to_text().as_bytes()).map_err(|source| {
            RegistryError::Io {
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
    fn builtin_matches_the_lumirealm_spindle_manifest() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/corpus/lumiverse/lumirealm.spindle.json"
        ))
        .unwrap();
        let spindle: serde_json::Value = serde_json::from_str(&text).unwrap();
        let r = PhoneLineRegistry::builtin();
        let line = r.get("lumirealm").unwrap();
        assert_eq!(spindle["identifier"], line.identifier.as_str());
        assert_eq!(spindle["name"], line.name.as_str());
        assert_eq!(r.lines().len(), 1);
    }

    #[test]
    fn add_remove_and_reject_bad_entries() {
        let mut r = PhoneLineRegistry::builtin();
        r.add(KnownPhoneLine::new("risu-notes", "Risu Notes").unwrap())
            .unwrap();
        assert!(matches!(
            r.add(KnownPhoneLine::new("lumirealm", "Other").unwrap()),
            Err(RegistryError::Duplicate(_))
        ));
        assert!(matches!(
            KnownPhoneLine::new("a.b", "X"),
            Err(RegistryError::BadIdentifier(_))
        ));
        assert!(matches!(
            KnownPhoneLine::new("", "X"),
            Err(RegistryError::BadIdentifier(_))
        ));
        assert!(matches!(
            KnownPhoneLine::new("x", " "),
            Err(RegistryError::EmptyName(_))
        ));
        assert_eq!(r.remove("lumirealm").unwrap().name, "LumiRealm");
        assert!(r.remove("lumirealm").is_none());
        assert_eq!(r.lines().len(), 1);
    }

    #[test]
    fn save_and_load() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("phone-lines.json");
        assert_eq!(
            PhoneLineRegistry::load(&path).unwrap(),
            PhoneLineRegistry::builtin()
        );
        let mut r = PhoneLineRegistry::builtin();
        r.add(KnownPhoneLine::new("notes", "Notes").unwrap())
            .unwrap();
        r.save(&path).unwrap();
        assert_eq!(PhoneLineRegistry::load(&path).unwrap(), r);
        std::fs::write(&path, r#"{"version":1,"phoneLines":[{"identifier":"x"}]}"#).unwrap();
        let e = PhoneLineRegistry::load(&path).unwrap_err().to_string();
        assert!(e.contains("name") && e.contains("line 1"), "{e}");
        std::fs::write(&path, r#"{"version":2,"phoneLines":[]}"#).unwrap();
        assert!(matches!(
            PhoneLineRegistry::load(&path),
            Err(RegistryError::Version(2))
        ));
    }
}
