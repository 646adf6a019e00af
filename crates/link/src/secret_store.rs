//! Where the desktop's private keys live: the OS key store, behind a small trait.
//!
//! `ifp1-notes.md`, "Pairing and identity": private keys belong in the OS key store and no
//! default or development credential may exist. [`KeyringStore`] keeps secrets in the OS key
//! store through the `keyring` crate (Secret Service on Linux, Keychain on macOS, Credential
//! Manager on Windows); [`MemoryStore`] is an in-process store for tests. There is no plaintext
//! fallback: when no key store is reachable, [`SecretStoreError::Unavailable`] says what to
//! install or unlock.

use std::collections::HashMap;
use std::sync::Mutex;

/// The `keyring` service name under which Switchboard keeps its secrets.
pub const KEYRING_SERVICE: &str = "switchboard";

/// Why [`KeyringStore`] refuses to work (in [`SecretStoreError::Unavailable`]) when `keyring`
/// has no OS backend: it would keep the keys in memory only.
pub const NO_BACKEND: &str = "this build of Switchboard has no OS key store backend for this \
     system, and keys kept in memory would be lost at every restart";

/// Errors from a [`SecretStore`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SecretStoreError {
    /// No OS key store can be reached (not installed, not running or locked).
    #[error(
        "No OS key store is available ({reason}): install and unlock gnome-keyring or KeePassXC \
         (any Secret Service provider, on the session bus as org.freedesktop.secrets) on Linux, \
         or unlock the login Keychain on macOS / the \
         Credential Manager on Windows. Switchboard never keeps its private keys in a plain \
         file."
    )]
    Unavailable {
        /// What the platform said.
        reason: String,
    },
    /// The key store answered but refused or failed the operation on `name`.
    #[error("the OS key store failed on secret `{name}`: {reason}")]
    Failed {
        /// The secret's name.
        name: String,
        /// What the platform said.
        reason: String,
    },
}

/// A small named-secret store: get, set and delete byte strings by name.
///
/// Implementations must be safe to share between threads. `get` returns `Ok(None)` when no
/// secret of that name exists (first start), and an error only when the store itself fails.
pub trait SecretStore: Send + Sync {
    /// Reads the secret called `name`; `Ok(None)` when there is none.
    fn get(&self, name: &str) -> Result<Option<Vec<u8>>, SecretStoreError>;
    /// Creates or replaces the secret called `name`.
    fn set(&self, name: &str, secret: &[u8]) -> Result<(), SecretStoreError>;
    /// Deletes the secret called `name`; deleting a missing secret is not an error.
    fn delete(&self, name: &str) -> Result<(), SecretStoreError>;
}

/// The OS key store via `keyring` 3 (service [`KEYRING_SERVICE`], user = secret name).
#[derive(Debug, Clone)]
pub struct KeyringStore {
    service: String,
}

impl KeyringStore {
    /// A store under the default service name [`KEYRING_SERVICE`].
    pub fn new() -> Self {
        Self::with_service(KEYRING_SERVICE)
    }

    /// A store under another service name (e.g. to keep a second profile apart).
    pub fn with_service(service: impl Into<String>) -> Self {
        Self {
            service: service.into(),
        }
    }

    /// The entry for `name`, refused when `keyring` would keep it in memory only: its mock is
    /// what it uses when no OS backend is compiled in for this system (or after
    /// `keyring::set_default_credential_builder` chose it), and a key kept there is lost at
    /// every restart, so every phone would have to pair again without a word.
    fn entry(&self, name: &str) -> Result<keyring::Entry, SecretStoreError> {
        let entry = keyring::Entry::new(&self.service, name).map_err(|e| map_keyring(name, e))?;
        if entry
            .get_credential()
            .downcast_ref::<keyring::mock::MockCredential>()
            .is_some()
        {
            return Err(SecretStoreError::Unavailable {
                reason: NO_BACKEND.to_string(),
            });
        }
        Ok(entry)
    }
}

impl Default for KeyringStore {
    fn default() -> Self {
        Self::new()
    }
}

fn map_keyring(name: &str, e: keyring::Error) -> SecretStoreError {
    match e {
        keyring::Error::PlatformFailure(inner) | keyring::Error::NoStorageAccess(inner) => {
            SecretStoreError::Unavailable {
                reason: inner.to_string(),
            }
        }
        other => SecretStoreError::Failed {
            name: name.to_string(),
            reason: other.to_string(),
        },
    }
}

impl SecretStore for KeyringStore {
    fn get(&self, name: &str) -> Result<Option<Vec<u8>>, SecretStoreError> {
        match self.entry(name)?.get_secret() {
            Ok(v) => Ok(Some(v)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(map_keyring(name, e)),
        }
    }

    fn set(&self, name: &str, secret: &[u8]) -> Result<(), SecretStoreError> {
        self.entry(name)?
            .set_secret(secret)
            .map_err(|e| map_keyring(name, e))
    }

    fn delete(&self, name: &str) -> Result<(), SecretStoreError> {
        match self.entry(name)?.delete_credential() {
            Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(e) => Err(map_keyring(name, e)),
        }
    }
}

/// An in-memory [`SecretStore`] for tests: secrets live as long as the value.
///
/// (The `keyring` crate's own mock gives every `Entry` its own credential, so a secret written
/// through one entry cannot be read through another; this store behaves like a real key store.)
#[derive(Debug, Default)]
pub struct MemoryStore {
    secrets: Mutex<HashMap<String, Vec<u8>>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

fn poisoned(name: &str) -> SecretStoreError {
    SecretStoreError::Failed {
        name: name.to_string(),
        reason: "in-memory store lock poisoned".to_string(),
    }
}

impl SecretStore for MemoryStore {
    fn get(&self, name: &str) -> Result<Option<Vec<u8>>, SecretStoreError> {
        let map = self.secrets.lock().map_err(|_| poisoned(name))?;
        Ok(map.get(name).cloned())
    }

    fn set(&self, name: &str, secret: &[u8]) -> Result<(), SecretStoreError> {
        let mut map = self.secrets.lock().map_err(|_| poisoned(name))?;
        map.insert(name.to_string(), secret.to_vec());
        Ok(())
    }

    fn delete(&self, name: &str) -> Result<(), SecretStoreError> {
        let mut map = self.secrets.lock().map_err(|_| poisoned(name))?;
        map.remove(name);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn memory_store_round_trips_and_deletes() {
        let s = MemoryStore::new();
        assert_eq!(s.get("a").unwrap(), None);
        s.set("a", b"one").unwrap();
        s.set("a", b"two").unwrap();
        assert_eq!(s.get("a").unwrap().as_deref(), Some(&b"two"[..]));
        s.delete("a").unwrap();
        s.delete("a").unwrap();
        assert_eq!(s.get("a").unwrap(), None);
    }

    #[test]
    fn unavailable_error_says_what_to_install_or_unlock() {
        let e = map_keyring(
            "x",
            keyring::Error::PlatformFailure("no dbus session bus".into()),
        );
        let words = e.to_string();
        assert!(words.starts_with("No OS key store is available"), "{words}");
        assert!(words.contains("gnome-keyring") && words.contains("unlock"));
        assert!(words.contains("no dbus session bus"));
    }
}
