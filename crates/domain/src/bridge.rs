//! Bridge-status banners: from a failed call between two extensions, the registry's display
//! names and each extension's declared permissions, derive the banner the user sees.
//!
//! Why it exists: a failed phone-line call only tells *that* it failed; the banner tells the
//! user which extension lacks which permission and how to fix it, and only asks for
//! permissions the extension can actually be granted (those its manifest declares).
//!
//! Spec: `phone-line.md`, "Failure modes and the bridge banner" (banner words "LumiAgent is
//! missing push_notification, required for LumiRealm communication."; report only permissions
//! declared in the missing extension's manifest so Agent-only grants such as MCP never become
//! an impossible request; filtering a warning does not turn a failed call into a success),
//! "Permissions (read this first)" (which side is checked on which endpoint) and "Discovery and
//! pairing" (the `KNOWN_PHONELINES` registry of display names). The store that keeps banners
//! current lives in [`store`].
//!
//! Permissions of an extension with no known manifest are *unchecked*: they are all treated as
//! grantable and the banner says so ([`Banner::manifest_checked`] is `false`). Every place that
//! judges a banner uses one directory ([`explain::with_builtin`]: a phone's reported manifests
//! over the built-in LumiAgent and LumiRealm ones), so only extensions outside both are
//! unchecked.

pub mod advice;
pub mod explain;
pub mod store;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use ts_rs::TS;

use crate::host_error::{HostError, PermissionFailure, PermissionForm};

/// Errors of this module.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BridgeError {
    /// The manifest folder could not be listed.
    #[error("could not read the manifest folder {}: {source}", path.display())]
    ReadDir {
        /// The folder given.
        path: PathBuf,
        /// What the file system said.
        source: std::io::Error,
    },
}

/// The phone lines LumiAgent knows, as `{ identifier, name }` pairs (spec: "Discovery and
/// pairing", `src/phoneline/registry.ts`). Their names win over a manifest's `name`.
pub const KNOWN_PHONELINES: &[(&str, &str)] =
    &[("lumiagent", "LumiAgent"), ("lumirealm", "LumiRealm")];

/// Largest manifest file read, in bytes (1 MiB); larger files are skipped.
pub const MAX_MANIFEST_BYTES: u64 = 1024 * 1024;

/// Why an extension's `spindle.json` manifest was not used; the words name what was wrong and
/// go into [`SkippedFile::reason`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExtensionManifestError {
    /// The text is not JSON (serde_json's words, with line and column).
    #[error("not valid JSON: {0}")]
    NotJson(serde_json::Error),
    /// The JSON is not an object.
    #[error("not a JSON object")]
    NotAnObject,
    /// No string `identifier`: not an extension manifest (e.g. a `describe` response).
    #[error("not an extension manifest (no string \"identifier\")")]
    NoIdentifier,
    /// `permissions` is present but not a list (nor `null`).
    #[error("\"permissions\" is not a list")]
    PermissionsNotAList,
    /// `permissions[i]` is not a string (0-based index).
    #[error("\"permissions\"[{0}] is not a string")]
    PermissionNotAString(usize),
    /// The file is larger than [`MAX_MANIFEST_BYTES`] (its size in bytes).
    #[error("larger than {MAX_MANIFEST_BYTES} bytes ({0} bytes)")]
    TooLarge(u64),
    /// The file could not be read (what the file system said).
    #[error("could not read: {0}")]
    Read(std::io::Error),
}

/// The parts of an extension's `spindle.json` manifest the banner needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ExtensionManifest {
    /// The extension id (`identifier`), e.g. `lumirealm`.
    pub identifier: String,
    /// The self-declared display name (`name`), if any.
    pub name: Option<String>,
    /// The declared permissions (`permissions`), in manifest order; an absent list declares
    /// none.
    pub permissions: Vec<String>,
}

impl ExtensionManifest {
    /// Reads a `spindle.json` manifest from JSON text.
    ///
    /// Errors: a text that is not JSON, not an object, has no string `identifier` (not an
    /// extension manifest, e.g. a `describe` response), or whose `permissions` is not a list of
    /// strings; the [`ExtensionManifestError`] says which.
    pub fn from_json(text: &str) -> Result<Self, ExtensionManifestError> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(ExtensionManifestError::NotJson)?;
        let obj = value
            .as_object()
            .ok_or(ExtensionManifestError::NotAnObject)?;
        let identifier = obj
            .get("identifier")
            .and_then(|v| v.as_str())
            .ok_or(ExtensionManifestError::NoIdentifier)?
            .to_string();
        let name = obj.get("name").and_then(|v| v.as_str()).map(str::to_string);
        let permissions = match obj.get("permissions") {
            None | Some(serde_json::Value::Null) => Vec::new(),
            Some(serde_json::Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    v.as_str()
                        .map(str::to_string)
                        .ok_or(ExtensionManifestError::PermissionNotAString(i))
                })
                .collect::<Result<Vec<_>, _>>()?,
            Some(_) => return Err(ExtensionManifestError::PermissionsNotAList),
        };
        Ok(Self {
            identifier,
            name,
            permissions,
        })
    }
}

/// A file in a manifest folder that was not used, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct SkippedFile {
    /// The file's path as found.
    pub file: String,
    /// Why it was skipped, in words.
    pub reason: String,
}

/// What Switchboard knows about the extensions on either end of a call: display names and
/// declared permissions.
#[derive(Debug, Clone, Default)]
pub struct ExtensionDirectory {
    manifests: BTreeMap<String, ExtensionManifest>,
    skipped: Vec<SkippedFile>,
    /// See [`ExtensionDirectory::stamp`].
    stamp: u64,
}

/// The next [`ExtensionDirectory::stamp`] (0 is the empty directory's).
static NEXT_STAMP: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl ExtensionDirectory {
    /// A directory with no manifests: names come from [`KNOWN_PHONELINES`] or the id, and every
    /// extension's permissions are unchecked (all treated as grantable).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a manifest. Returns `false` (and keeps the first) if one with the same identifier
    /// is already known.
    pub fn add_manifest(&mut self, manifest: ExtensionManifest) -> bool {
        if self.manifests.contains_key(&manifest.identifier) {
            return false;
        }
        self.manifests.insert(manifest.identifier.clone(), manifest);
        self.stamp = NEXT_STAMP.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        true
    }

    /// A number naming these manifests: two directories with the same stamp hold the same
    /// manifests (a copy keeps its stamp; every manifest added gives a new one, never used
    /// before in this process), so a judgement made with one holds for the other
    /// ([`store::BridgeStatusStore`] keeps its last judgement by it). 0: no manifests.
    pub fn stamp(&self) -> u64 {
        self.stamp
    }

    /// Loads every `*.json` file of a folder (not recursive, in file-name order) that is an
    /// extension manifest. Other JSON (a `describe` response, broken JSON, a second manifest
    /// for the same id, files over [`MAX_MANIFEST_BYTES`]) is skipped and listed in
    /// [`Self::skipped`].
    ///
    /// Errors: [`BridgeError::ReadDir`] if the folder cannot be listed.
    pub fn load_dir(dir: &Path) -> Result<Self, BridgeError> {
        let read_err = |source| BridgeError::ReadDir {
            path: dir.to_path_buf(),
            source,
        };
        let mut files: Vec<PathBuf> = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(read_err)? {
            let path = entry.map_err(read_err)?.path();
            let is_json = path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().ends_with(".json"));
            if is_json && path.is_file() {
                files.push(path);
            }
        }
        files.sort();
        let mut out = Self::new();
        for path in files {
            let file = path.display().to_string();
            match read_manifest(&path) {
                Ok(m) => {
                    let id = m.identifier.clone();
                    if !out.add_manifest(m) {
                        out.skipped.push(SkippedFile {
                            file,
                            reason: format!("a manifest for \"{id}\" was already loaded"),
                        });
                    }
                }
                Err(e) => out.skipped.push(SkippedFile {
                    file,
                    reason: e.to_string(),
                }),
            }
        }
        Ok(out)
    }

    /// The loaded manifests, by identifier.
    pub fn manifests(&self) -> impl Iterator<Item = &ExtensionManifest> {
        self.manifests.values()
    }

    /// The files [`Self::load_dir`] skipped.
    pub fn skipped(&self) -> &[SkippedFile] {
        &self.skipped
    }

    /// The display name for an extension id: the registry's ([`KNOWN_PHONELINES`]), else the
    /// manifest's `name`, else the id itself.
    pub fn display_name(&self, id: &str) -> String {
        if let Some((_, name)) = KNOWN_PHONELINES.iter().find(|(k, _)| *k == id) {
            return (*name).to_string();
        }
        self.manifests
            .get(id)
            .and_then(|m| m.name.clone())
            .filter(|n| !n.trim().is_empty())
            .unwrap_or_else(|| id.to_string())
    }

    /// The permissions an extension's manifest declares, or `None` if no manifest is known.
    pub fn declared(&self, id: &str) -> Option<&[String]> {
        self.manifests.get(id).map(|m| m.permissions.as_slice())
    }
}

/// Reads one manifest file, capped at [`MAX_MANIFEST_BYTES`].
fn read_manifest(path: &Path) -> Result<ExtensionManifest, ExtensionManifestError> {
    let len = std::fs::metadata(path)
        .map_err(ExtensionManifestError::Read)?
        .len();
    if len > MAX_MANIFEST_BYTES {
        return Err(ExtensionManifestError::TooLarge(len));
    }
    let text = std::fs::read_to_string(path).map_err(ExtensionManifestError::Read)?;
    ExtensionManifest::from_json(&text)
}

/// A call between two extensions: who made it and which endpoint it went to. Banners are kept
/// per phone and path: only a later result of the same phone on the same path changes them (spec: "A successful probe
/// doesn't prove that LumiAgent can call your own handler").
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, TS)]
#[ts(export)]
pub struct CallPath {
    /// The calling (requesting) extension id, e.g. `lumiagent` dialling a handler; empty if
    /// unknown.
    // Shared strings: the hub builds a path for every dial a phone reports, from the dial's
    // own, without copying them.
    #[ts(type = "string")]
    pub caller: Arc<str>,
    /// The endpoint called, e.g. `lumirealm.phoneline` or `lumiagent.phoneline_probe`.
    #[ts(type = "string")]
    pub endpoint: Arc<str>,
}

impl CallPath {
    /// Builds a path from a caller id and an endpoint (`&str`, `String` or a shared
    /// `Arc<str>`, which is not copied).
    pub fn new(caller: impl Into<Arc<str>>, endpoint: impl Into<Arc<str>>) -> Self {
        Self {
            caller: caller.into(),
            endpoint: endpoint.into(),
        }
    }

    /// A stable string key for the path, `caller>endpoint`, for the UI's lists.
    pub fn key(&self) -> String {
        format!("{}>{}", self.caller, self.endpoint)
    }
}

/// The bridge banner for an actionable permission failure (spec: "Failure modes and the bridge
/// banner").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct Banner {
    /// Stable id for the UI: `<phone>|<caller>><endpoint>` ([`Banner::key_of`]; one current
    /// banner per phone and path). A banner derived outside the store (a pasted text) has no
    /// phone: its id is the path's key alone.
    pub id: String,
    /// The device id of the phone whose call result raised it; empty for a banner derived from
    /// a pasted text or an imported capture (never in the store under a phone).
    pub phone: String,
    /// Which banner of the store this is: a number the store gives each banner it raises
    /// (unique within the store, increasing); 0 for a banner derived outside the store.
    #[ts(type = "number")]
    pub serial: u64,
    /// The call whose failure raised the banner.
    pub path: CallPath,
    /// Which host permission form the failure used.
    pub form: PermissionForm,
    /// The endpoint whose permission check failed (may differ from `path.endpoint` when a
    /// handler's own read failed and it wrapped the error).
    pub endpoint: String,
    /// The extension id missing permissions.
    pub missing_extension: String,
    /// Its display name.
    pub missing_name: String,
    /// The extension id on the other end of the call, if one can be told apart.
    pub other_extension: Option<String>,
    /// Its display name (the endpoint itself when there is no other extension).
    pub other_name: String,
    /// Missing permissions that can be granted (declared in the missing extension's manifest,
    /// or all of them when unchecked), host order. Never empty.
    pub grantable: Vec<String>,
    /// Missing permissions the manifest does not declare: shown apart as not grantable, never
    /// as an ask.
    pub not_grantable: Vec<String>,
    /// Whether the permissions were checked against the missing extension's manifest.
    pub manifest_checked: bool,
    /// The banner text: `<Name> is missing <p1>, <p2>, required for <Other> communication.`
    pub message: String,
    /// The fix in words: `In Lumiverse, open Extensions, then <Name>, and grant <p1>, <p2>`.
    pub fix: String,
    /// The error text as the call returned it (latest occurrence).
    pub raw_text: String,
    /// When this failure was first seen, epoch milliseconds (caller's clock).
    #[ts(type = "number")]
    pub first_seen_ms: u64,
    /// When it was last seen, epoch milliseconds.
    #[ts(type = "number")]
    pub last_seen_ms: u64,
    /// How many times it was seen (>= 1).
    #[ts(type = "number")]
    pub count: u64,
}

impl Banner {
    /// The id of the banner of `phone` (device id; empty: none) on `path`:
    /// `<phone>|<caller>><endpoint>`, or the path's key alone without a phone.
    pub fn key_of(phone: &str, path: &CallPath) -> String {
        if phone.is_empty() {
            path.key()
        } else {
            format!("{phone}|{}", path.key())
        }
    }

    /// Whether `other` reports the same failure (same phone, path, form, endpoint, extensions
    /// and permission split); wrappers and raw text may differ.
    pub fn same_failure(&self, other: &Banner) -> bool {
        self.phone == other.phone && self.path == other.path && self.same_failure_on_path(other)
    }

    /// [`Banner::same_failure`] but for the phone and the path (compared by the caller).
    pub(crate) fn same_failure_on_path(&self, other: &Banner) -> bool {
        self.form == other.form
            && self.endpoint == other.endpoint
            && self.missing_extension == other.missing_extension
            && self.other_extension == other.other_extension
            && self.grantable == other.grantable
            && self.not_grantable == other.not_grantable
    }
}

/// What a failed call amounts to for the bridge status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Derived {
    /// An actionable permission failure: show this banner (boxed: it is much larger than the
    /// other variants).
    Banner(Box<Banner>),
    /// A permission failure none of whose permissions the missing extension can be granted:
    /// no banner, only a diagnostic (the call still failed).
    NothingGrantable {
        /// The extension id missing the permissions.
        missing_extension: String,
        /// The permissions it lacks, none declared in its manifest.
        not_grantable: Vec<String>,
    },
    /// Not a permission failure: a diagnostic only.
    NotPermission,
}

/// The extension on the other end of a permission failure: the first of the named owner, the
/// failing endpoint's extension, the path's caller and the called endpoint's extension that is
/// not the missing extension itself.
fn other_end<'a>(p: &'a PermissionFailure, path: &'a CallPath) -> Option<&'a str> {
    let ext = |e: &'a str| e.split('.').next().unwrap_or(e);
    [
        p.owner.as_str(),
        ext(&p.endpoint),
        &*path.caller,
        ext(&path.endpoint),
    ]
    .into_iter()
    .find(|c| !c.is_empty() && *c != p.missing_extension)
}

/// Derives the banner for a failed call on `path` with the classified `error`, seen at `at_ms`
/// (epoch milliseconds; first and last seen, count 1). The banner has no phone and serial 0:
/// the store ([`store::BridgeStatusStore`]) gives both when it raises it.
///
/// Grantable permissions are those the missing extension's manifest declares; with no known
/// manifest they are all grantable and [`Banner::manifest_checked`] is `false`.
pub fn derive_banner(
    path: &CallPath,
    error: &HostError,
    dir: &ExtensionDirectory,
    at_ms: u64,
) -> Derived {
    let Some(p) = error.permission() else {
        return Derived::NotPermission;
    };
    let declared = dir.declared(&p.missing_extension);
    let (grantable, not_grantable): (Vec<String>, Vec<String>) = match declared {
        Some(list) => {
            let set: HashSet<&str> = list.iter().map(String::as_str).collect();
            p.permissions
                .iter()
                .cloned()
                .partition(|perm| set.contains(perm.as_str()))
        }
        None => (p.permissions.clone(), Vec::new()),
    };
    if grantable.is_empty() {
        return Derived::NothingGrantable {
            missing_extension: p.missing_extension.clone(),
            not_grantable,
        };
    }
    let missing_name = dir.display_name(&p.missing_extension);
    let other_extension = other_end(p, path).map(str::to_string);
    let other_name = match &other_extension {
        Some(id) => dir.display_name(id),
        None => p.endpoint.clone(),
    };
    let list = grantable.join(", ");
    Derived::Banner(Box::new(Banner {
        id: path.key(),
        phone: String::new(),
        serial: 0,
        path: path.clone(),
        form: p.form,
        endpoint: p.endpoint.clone(),
        missing_extension: p.missing_extension.clone(),
        message: format!(
            "{missing_name} is missing {list}, required for {other_name} communication."
        ),
        fix: format!("In Lumiverse, open Extensions, then {missing_name}, and grant {list}"),
        missing_name,
        other_extension,
        other_name,
        grantable,
        not_grantable,
        manifest_checked: declared.is_some(),
        raw_text: error.text.clone(),
        first_seen_ms: at_ms,
        last_seen_ms: at_ms,
        count: 1,
    }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::host_error::parse;

    const CORPUS: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/corpus/lumiverse"
    );

    fn corpus_dir() -> ExtensionDirectory {
        ExtensionDirectory::load_dir(Path::new(CORPUS)).unwrap()
    }

    fn banner(d: Derived) -> Banner {
        match d {
            Derived::Banner(b) => *b,
            other => panic!("expected a banner, got {other:?}"),
        }
    }

    #[test]
    fn loads_both_spindle_manifests_and_skips_the_describe_response_and_host_errors() {
        let dir = corpus_dir();
        let ids: Vec<_> = dir.manifests().map(|m| m.identifier.as_str()).collect();
        assert_eq!(ids, vec!["lumiagent", "lumirealm"]);
        let skipped: Vec<_> = dir.skipped().iter().map(|s| s.file.as_str()).collect();
        assert_eq!(skipped.len(), 2, "{skipped:?}");
        assert!(skipped
            .iter()
            .any(|f| f.ends_with("lumirealm.describe.json")));
        assert!(skipped.iter().any(|f| f.ends_with("host-errors.json")));
        assert!(dir
            .declared("lumiagent")
            .unwrap()
            .contains(&"push_notification".to_string()));
    }

    #[test]
    fn spec_example_with_real_manifests_prints_the_spec_banner() {
        let err = parse("Shared RPC endpoint \"lumirealm.phoneline\" requires requester \"lumiagent\" to inherit owner \"lumirealm\" permissions: push_notification");
        let path = CallPath::new("lumiagent", "lumirealm.phoneline");
        let b = banner(derive_banner(&path, &err, &corpus_dir(), 1000));
        assert_eq!(
            b.message,
            "LumiAgent is missing push_notification, required for LumiRealm communication."
        );
        assert_eq!(
            b.fix,
            "In Lumiverse, open Extensions, then LumiAgent, and grant push_notification"
        );
        assert!(b.manifest_checked);
        assert!(b.not_grantable.is_empty());
        assert_eq!((b.first_seen_ms, b.last_seen_ms, b.count), (1000, 1000, 1));
        // `explain-error` and the explainer send a person to the same place as the banner.
        let advice = advice::what_to_do(&err).unwrap_or_default();
        assert!(
            advice.starts_with("In Lumiverse, open Extensions, then lumiagent, and grant"),
            "{advice}"
        );
        assert!(advice.contains("(push_notification)"), "{advice}");
        assert!(!advice.contains("Settings"), "{advice}");
    }

    #[test]
    fn agent_only_grants_are_shown_apart_not_asked_for() {
        let err = parse("Shared RPC endpoint \"lumiagent.phoneline_probe\" requires requester \"lumirealm\" to inherit owner \"lumiagent\" permissions: mcp_servers, characters, regex_scripts_unrestricted, chats, characters, mcp_servers.create");
        let path = CallPath::new("lumirealm", "lumiagent.phoneline_probe");
        let b = banner(derive_banner(&path, &err, &corpus_dir(), 5));
        assert_eq!(b.grantable, vec!["characters", "chats"]);
        assert_eq!(
            b.not_grantable,
            vec![
                "mcp_servers",
                "regex_scripts_unrestricted",
                "mcp_servers.create"
            ]
        );
        assert_eq!(
            b.message,
            "LumiRealm is missing characters, chats, required for LumiAgent communication."
        );
        assert!(!b.message.contains("mcp"));
        assert!(!b.fix.contains("mcp"));
    }

    #[test]
    fn nothing_grantable_gives_no_banner() {
        let err = parse("Shared RPC endpoint \"lumiagent.phoneline_probe\" requires requester \"lumirealm\" to inherit owner \"lumiagent\" permissions: mcp_servers, mcp_servers.create");
        let path = CallPath::new("lumirealm", "lumiagent.phoneline_probe");
        assert_eq!(
            derive_banner(&path, &err, &corpus_dir(), 5),
            Derived::NothingGrantable {
                missing_extension: "lumirealm".into(),
                not_grantable: vec!["mcp_servers".into(), "mcp_servers.create".into()],
            }
        );
    }

    #[test]
    fn without_a_manifest_everything_is_grantable_but_unchecked() {
        let err = parse("Shared RPC endpoint \"lumiagent.phoneline_probe\" requires requester \"lumirealm\" to inherit owner \"lumiagent\" permissions: mcp_servers");
        let path = CallPath::new("lumirealm", "lumiagent.phoneline_probe");
        let b = banner(derive_banner(&path, &err, &ExtensionDirectory::new(), 5));
        assert_eq!(b.grantable, vec!["mcp_servers"]);
        assert!(!b.manifest_checked);
    }

    #[test]
    fn wrapped_handler_read_names_the_handler_and_the_agent() {
        // LumiAgent dials LumiRealm's handler; the handler's read of the request channel fails
        // and it wraps the host's error, as the spec asks.
        let err = parse("Error: could not read pending request from lumiagent: Shared RPC endpoint \"lumiagent.phoneline_request\" requires requester \"lumirealm\" to inherit owner \"lumiagent\" permissions: characters");
        let path = CallPath::new("lumiagent", "lumirealm.phoneline");
        let b = banner(derive_banner(&path, &err, &corpus_dir(), 5));
        assert_eq!(
            b.message,
            "LumiRealm is missing characters, required for LumiAgent communication."
        );
        assert_eq!(b.endpoint, "lumiagent.phoneline_request");
        assert_eq!(&*b.path.endpoint, "lumirealm.phoneline");
    }

    #[test]
    fn owner_form_naming_the_endpoint_owner_uses_the_caller_as_other_end() {
        let err = parse(
            "Shared RPC endpoint \"lumiagent.phoneline_probe\" requires owner \"lumiagent\" permissions: characters",
        );
        let path = CallPath::new("lumirealm", "lumiagent.phoneline_probe");
        let b = banner(derive_banner(&path, &err, &corpus_dir(), 5));
        assert_eq!(
            b.message,
            "LumiAgent is missing characters, required for LumiRealm communication."
        );
    }

    #[test]
    fn display_names_fall_back_to_manifest_name_then_id() {
        let mut dir = ExtensionDirectory::new();
        dir.add_manifest(ExtensionManifest {
            identifier: "weather_ext".into(),
            name: Some("Weather".into()),
            permissions: vec![],
        });
        dir.add_manifest(ExtensionManifest {
            identifier: "lumiagent".into(),
            name: Some("Not The Registry Name".into()),
            permissions: vec![],
        });
        assert_eq!(dir.display_name("weather_ext"), "Weather");
        assert_eq!(dir.display_name("lumiagent"), "LumiAgent");
        assert_eq!(dir.display_name("reader_ext"), "reader_ext");
    }

    #[test]
    fn manifest_errors_name_what_is_wrong() {
        let not_object = ExtensionManifest::from_json("[1]").unwrap_err();
        assert!(matches!(not_object, ExtensionManifestError::NotAnObject));
        assert_eq!(not_object.to_string(), "not a JSON object");
        let bad_permission =
            ExtensionManifest::from_json("{\"identifier\":\"a\",\"permissions\":[1]}").unwrap_err();
        assert!(matches!(
            bad_permission,
            ExtensionManifestError::PermissionNotAString(0)
        ));
        assert!(bad_permission.to_string().contains("\"permissions\"[0]"));
        let not_json = ExtensionManifest::from_json("{").unwrap_err();
        assert!(matches!(not_json, ExtensionManifestError::NotJson(_)));
        assert!(not_json.to_string().contains("not valid JSON"));
        assert!(matches!(
            ExtensionManifest::from_json("{\"identifier\":\"a\",\"permissions\":\"x\"}"),
            Err(ExtensionManifestError::PermissionsNotAList)
        ));
        assert!(matches!(
            ExtensionManifest::from_json("{\"protocol\":\"phoneline/1\"}"),
            Err(ExtensionManifestError::NoIdentifier)
        ));
    }
}
