//! Commands of the Bridge view (phone-line.md, "Failure modes and the bridge banner"): the
//! current banners, their history and the failed calls that raised none, and an explainer for
//! any pasted error text (for support staff working from a user's report).
//!
//! State: [`BridgeState`], managed once by [`crate::init`]. Its `store` is shared (`Arc`) so the
//! hub that receives call results from a phone can feed the very store this view reads; its
//! `extensions` are the extension manifests the app knows (embedded: LumiAgent's and LumiRealm's
//! `spindle.json`), used to tell grantable permissions from ones that must never be asked for.
//!
//! Nothing here can approve, reject or cancel anything on a phone: these commands only read.

use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;
use switchboard::bridge::store::{BridgeSnapshot, BridgeStatusStore};
use switchboard::bridge::{
    derive_banner, Banner, CallPath, Derived, ExtensionDirectory, ExtensionManifest,
};
use switchboard::error::IpcError;
use switchboard::host_error::{self, HostError, PermissionForm};
use tauri::State;
use ts_rs::TS;

/// The extension manifests built into the app, as `(file name, JSON text)`: the two ends of
/// the reference phone line (copies of `shared/corpus/lumiverse/*.spindle.json`).
pub const EMBEDDED_MANIFESTS: [(&str, &str); 2] = [
    (
        "lumiagent.spindle.json",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../data/extensions/lumiagent.spindle.json"
        )),
    ),
    (
        "lumirealm.spindle.json",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../data/extensions/lumirealm.spindle.json"
        )),
    ),
];

/// Longest error text [`explain_error`] accepts, in bytes (64 KiB): host errors are one line.
pub const MAX_EXPLAIN_BYTES: usize = 64 * 1024;

/// The extension directory of the embedded manifests. A manifest that does not read (it is
/// checked by a test, so only a broken build could do this) is logged and left out: its
/// extension's permissions are then unchecked, never wrongly refused.
pub fn builtin_extensions() -> ExtensionDirectory {
    let mut dir = ExtensionDirectory::new();
    for (file, text) in EMBEDDED_MANIFESTS {
        match ExtensionManifest::from_json(text) {
            Ok(m) => {
                dir.add_manifest(m);
            }
            Err(e) => tracing::error!("embedded manifest {file} not used: {e}"),
        }
    }
    dir
}

/// The Bridge view's managed state.
pub struct BridgeState {
    /// The bridge-status store. Shared: the hub records call results into the same store.
    pub store: Arc<Mutex<BridgeStatusStore>>,
    /// The extension manifests the app knows (see [`builtin_extensions`]).
    pub extensions: Arc<ExtensionDirectory>,
}

impl Default for BridgeState {
    fn default() -> Self {
        Self::new()
    }
}

impl BridgeState {
    /// An empty store and the embedded manifests.
    pub fn new() -> Self {
        Self {
            store: Arc::new(Mutex::new(BridgeStatusStore::new())),
            extensions: Arc::new(builtin_extensions()),
        }
    }

    /// Like [`BridgeState::new`]; in debug builds, when `SWITCHBOARD_DEMO_BRIDGE` names a JSON
    /// file of call results `[{"caller","endpoint","error"?,"at_ms"}]` (no `error`: the call
    /// succeeded), they are recorded first, so the view can be looked at with data before a
    /// phone reports any. Release builds ignore the variable.
    pub fn from_env() -> Self {
        let state = Self::new();
        if cfg!(debug_assertions) {
            if let Some(file) = std::env::var_os("SWITCHBOARD_DEMO_BRIDGE") {
                if let Err(e) = state.record_demo(std::path::Path::new(&file)) {
                    tracing::warn!("SWITCHBOARD_DEMO_BRIDGE not used: {e}");
                }
            }
        }
        state
    }

    fn record_demo(&self, file: &std::path::Path) -> Result<(), String> {
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let calls: Vec<serde_json::Value> =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        let mut store = self.lock_store();
        for (i, call) in calls.iter().enumerate() {
            let field = |k: &str| call.get(k).and_then(|v| v.as_str()).unwrap_or("");
            let path = CallPath::new(field("caller"), field("endpoint"));
            let at_ms = call
                .get("at_ms")
                .and_then(serde_json::Value::as_u64)
                .ok_or_else(|| format!("call {i}: at_ms is missing or not a whole number"))?;
            match call.get("error").and_then(|v| v.as_str()) {
                Some(error) => {
                    store.record_failure(&path, error, at_ms, &self.extensions);
                }
                None => {
                    store.record_success(&path, at_ms);
                }
            }
        }
        Ok(())
    }

    /// Locks the store (a poisoned lock is recovered: the store is plain data).
    pub fn lock_store(&self) -> MutexGuard<'_, BridgeStatusStore> {
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Why an explained error raises no banner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum NoBannerReason {
    /// The text is not one of the host's permission errors.
    NotPermission,
    /// A permission error, but the missing extension's manifest declares none of the missing
    /// permissions, so there is nothing it could be granted (the call still failed).
    NothingGrantable,
}

/// What [`explain_error`] finds in a pasted error text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ErrorExplanation {
    /// The classification: kind, its values (form, endpoint, missing extension, owner,
    /// permissions, ...), the wrapping messages outermost first, and the text.
    pub classification: HostError,
    /// The call the text is taken to come from: the given caller and endpoint, else the
    /// requester and endpoint the text names.
    pub path: CallPath,
    /// The banner the failure would raise, if it is an actionable permission failure.
    pub banner: Option<Banner>,
    /// Why there is no banner, when there is none.
    pub no_banner: Option<NoBannerReason>,
    /// Display name of the extension missing permissions (permission errors only).
    pub missing_name: Option<String>,
    /// Missing permissions the extension's manifest does not declare: never asked for.
    pub not_grantable: Vec<String>,
    /// Whether the missing extension's manifest is known (else every permission counts as
    /// grantable, unchecked).
    pub manifest_known: bool,
    /// The extension ids whose manifests the app knows.
    pub known_manifests: Vec<String>,
}

/// The call a pasted text is taken to come from: `caller` and `endpoint` when given
/// (non-empty), else the requester the text names (not for the owner form, which names none)
/// and the endpoint it names.
pub fn assumed_path(error: &HostError, caller: Option<&str>, endpoint: Option<&str>) -> CallPath {
    let p = error.permission();
    let given = |s: Option<&str>| s.map(str::trim).filter(|s| !s.is_empty()).map(String::from);
    let caller = given(caller).unwrap_or_else(|| match p {
        Some(p) if p.form != PermissionForm::Owner => p.missing_extension.clone(),
        _ => String::new(),
    });
    let endpoint =
        given(endpoint).unwrap_or_else(|| p.map(|p| p.endpoint.clone()).unwrap_or_default());
    CallPath::new(caller, endpoint)
}

/// Classifies `text` and derives the banner it would raise with `dir`'s manifests, at `at_ms`
/// (epoch milliseconds; only the banner's first and last seen).
pub fn explain(
    text: &str,
    caller: Option<&str>,
    endpoint: Option<&str>,
    dir: &ExtensionDirectory,
    at_ms: u64,
) -> ErrorExplanation {
    let classification = host_error::parse(text);
    let path = assumed_path(&classification, caller, endpoint);
    let missing = classification
        .permission()
        .map(|p| p.missing_extension.clone());
    let manifest_known = missing
        .as_deref()
        .is_some_and(|m| dir.declared(m).is_some());
    let missing_name = missing.as_deref().map(|m| dir.display_name(m));
    let (banner, no_banner, not_grantable) = match derive_banner(&path, &classification, dir, at_ms)
    {
        Derived::Banner(b) => {
            let ng = b.not_grantable.clone();
            (Some(*b), None, ng)
        }
        Derived::NothingGrantable { not_grantable, .. } => {
            (None, Some(NoBannerReason::NothingGrantable), not_grantable)
        }
        Derived::NotPermission => (None, Some(NoBannerReason::NotPermission), Vec::new()),
    };
    ErrorExplanation {
        classification,
        path,
        banner,
        no_banner,
        missing_name,
        not_grantable,
        manifest_known,
        known_manifests: dir.manifests().map(|m| m.identifier.clone()).collect(),
    }
}

/// The current banners, the retired ones and the failed calls that raised no banner.
#[tauri::command]
pub fn bridge_snapshot(state: State<'_, BridgeState>) -> BridgeSnapshot {
    state.lock_store().snapshot()
}

/// Explains a pasted error text: its kind, form, endpoint, missing extension, permissions and
/// wrappers, and the banner it would raise (with the app's known manifests) or why none.
/// `caller` and `endpoint` optionally name the call it came from.
///
/// # Errors
/// `invalid_input` when the text is empty or longer than [`MAX_EXPLAIN_BYTES`].
#[tauri::command]
pub fn explain_error(
    state: State<'_, BridgeState>,
    text: String,
    caller: Option<String>,
    endpoint: Option<String>,
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
        caller.as_deref(),
        endpoint.as_deref(),
        &state.extensions,
        switchboard::phone_line::pairings::now_ms(),
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn embedded_manifests_are_the_corpus_files_and_both_load() {
        for (file, text) in EMBEDDED_MANIFESTS {
            let corpus = std::fs::read_to_string(format!(
                "{}/../../shared/corpus/lumiverse/{file}",
                env!("CARGO_MANIFEST_DIR")
            ))
            .unwrap();
            assert_eq!(text, corpus, "{file} differs from the corpus copy");
        }
        let dir = builtin_extensions();
        let ids: Vec<_> = dir.manifests().map(|m| m.identifier.as_str()).collect();
        assert_eq!(ids, ["lumiagent", "lumirealm"]);
    }

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
        assert!(e.contains("call 0: at_ms"), "{e}");
    }
}
