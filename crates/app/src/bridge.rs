//! The Bridge view (phone-line.md, "Failure modes and the bridge banner"): the current
//! banners, their history and the failed calls that raised none, and the explainer for any
//! pasted error text (for support staff working from a user's report).
//!
//! The store is shared (`Arc`) with the hub, which records every call result a phone reports
//! into it, under the phone's device id. A text pasted into the explainer is never recorded:
//! its banner is a preview with no phone (empty `phone`, serial 0) and touches no phone's
//! banners. Nothing here can approve, reject or cancel anything on a phone: it only reads.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use super::App;
use switchboard_domain::bridge::explain::{
    builtin_directory, explain, ErrorExplanation, MAX_EXPLAIN_BYTES,
};
use switchboard_domain::bridge::store::{BridgeSnapshot, BridgeStatusStore};
use switchboard_domain::bridge::{CallPath, ExtensionDirectory};
use switchboard_wire::error::IpcError;
use switchboard_wire::sync::lock;

/// The Bridge view's state.
#[derive(Debug)]
pub struct BridgeState {
    /// The bridge-status store. Shared: the hub records call results into the same store.
    pub store: Arc<Mutex<BridgeStatusStore>>,
    /// The extension manifests the app knows: the built-in directory every banner falls back
    /// to ([`builtin_directory`]; a pasted text names no phone whose reported manifests could
    /// come first).
    pub extensions: Arc<ExtensionDirectory>,
}

impl Default for BridgeState {
    fn default() -> Self {
        Self::new()
    }
}

/// What is wrong with a file of sample call results ([`BridgeState::record_demo`]).
#[derive(Debug, thiserror::Error)]
pub enum DemoBridgeError {
    /// The file cannot be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a JSON array of calls.
    #[error("{}: {source}", path.display())]
    NotJson {
        /// The file.
        path: std::path::PathBuf,
        /// Where and why.
        source: serde_json::Error,
    },
    /// Call `index` (from 0) has no whole-number `at_ms`.
    #[error("call {index}: at_ms is missing or not a whole number")]
    NoTime {
        /// The call's place in the array, from 0.
        index: usize,
    },
}

impl BridgeState {
    /// An empty store and the embedded manifests.
    pub fn new() -> Self {
        Self {
            store: Arc::new(Mutex::new(BridgeStatusStore::new())),
            extensions: Arc::new(builtin_directory().clone()),
        }
    }

    /// Records the call results of a JSON file `[{"phone"?,"caller","endpoint","error"?,"at_ms"}]`
    /// (no `error`: the call succeeded; `phone`: the device id the result is kept under, empty
    /// when absent), so the view can be looked at with data before a phone reports any (the
    /// shell's `SWITCHBOARD_DEMO_BRIDGE`, debug builds only).
    ///
    /// # Errors
    /// [`DemoBridgeError`]: the file and what is wrong in it (unreadable, not JSON, entry `i`
    /// without `at_ms`).
    pub fn record_demo(&self, file: &Path) -> Result<(), DemoBridgeError> {
        let text = std::fs::read_to_string(file).map_err(|source| DemoBridgeError::Read {
            path: file.to_path_buf(),
            source,
        })?;
        let calls: Vec<serde_json::Value> =
            serde_json::from_str(&text).map_err(|source| DemoBridgeError::NotJson {
                path: file.to_path_buf(),
                source,
            })?;
        let mut store = self.lock_store();
        for (i, call) in calls.iter().enumerate() {
            let field = |k: &str| call.get(k).and_then(|v| v.as_str()).unwrap_or("");
            let path = CallPath::new(field("caller"), field("endpoint"));
            let phone = field("phone");
            let at_ms = call
                .get("at_ms")
                .and_then(serde_json::Value::as_u64)
                .ok_or(DemoBridgeError::NoTime { index: i })?;
            match call.get("error").and_then(|v| v.as_str()) {
                Some(error) => {
                    store.record_failure(phone, &path, error, at_ms, &self.extensions);
                }
                None => {
                    store.record_success(phone, &path, at_ms);
                }
            }
        }
        Ok(())
    }

    /// Locks the store (a poisoned lock is recovered: the store is plain data).
    pub fn lock_store(&self) -> MutexGuard<'_, BridgeStatusStore> {
        lock(&self.store)
    }
}

impl App {
    /// The current banners, the retired ones and the failed calls that raised no banner.
    pub fn bridge_snapshot(&self) -> BridgeSnapshot {
        self.bridge.lock_store().snapshot()
    }

    /// Explains a pasted error text: its kind, form, endpoint, missing extension, permissions
    /// and wrappers, and the banner it would raise (with the app's known manifests) or why
    /// none. `caller` and `endpoint` optionally name the call it came from.
    ///
    /// # Errors
    /// `invalid_input` when the text is empty or longer than [`MAX_EXPLAIN_BYTES`].
    pub fn explain_error(
        &self,
        text: &str,
        caller: Option<&str>,
        endpoint: Option<&str>,
    ) -> Result<ErrorExplanation, IpcError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(IpcError::invalid_input(
                "paste an error text to explain (the box is empty)",
            ));
        }
        if text.len() > MAX_EXPLAIN_BYTES {
            return Err(IpcError::invalid_input(format!(
                "the pasted text is {} bytes; paste one error message (at most {MAX_EXPLAIN_BYTES} bytes)",
                text.len()
            )));
        }
        Ok(explain(
            text,
            caller,
            endpoint,
            &self.bridge.extensions,
            self.config.clock.now_ms(),
        ))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn demo_file_records_failures_and_successes_and_names_a_bad_entry() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("calls.json");
        let spec = "Shared RPC endpoint \"lumirealm.phoneline\" requires requester \"lumiagent\" to inherit owner \"lumirealm\" permissions: push_notification";
        std::fs::write(
            &file,
            serde_json::json!([
                {"caller": "lumiagent", "endpoint": "lumirealm.phoneline", "error": spec, "at_ms": 10},
                {"caller": "lumiagent", "endpoint": "x.phoneline", "error": spec, "at_ms": 11},
                {"caller": "lumiagent", "endpoint": "x.phoneline", "at_ms": 12},
            ])
            .to_string(),
        )
        .unwrap();
        let state = BridgeState::new();
        state.record_demo(&file).unwrap();
        let snap = state.lock_store().snapshot();
        assert_eq!(snap.banners.len(), 1);
        assert_eq!(
            snap.banners[0].message,
            "LumiAgent is missing push_notification, required for LumiRealm communication."
        );
        assert_eq!(snap.history.len(), 1);
        std::fs::write(&file, r#"[{"caller":"a","endpoint":"b"}]"#).unwrap();
        let e = BridgeState::new().record_demo(&file).unwrap_err();
        assert!(matches!(e, DemoBridgeError::NoTime { index: 0 }), "{e}");
        assert!(e.to_string().contains("call 0: at_ms"), "{e}");
    }
}
