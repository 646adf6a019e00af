//! The bridge explainer (`phone-line.md`, "Failure modes and the bridge banner"): what a pasted
//! host error text means, the call it is taken to come from, and the banner it would raise with
//! a given extension directory, or why it raises none.
//!
//! One explainer for every place that explains a text: the Bridge view's paste box, the dial
//! inspector and `switchboard explain-error`. The extension manifests built into the app
//! ([`EMBEDDED_MANIFESTS`], LumiAgent's and LumiRealm's `spindle.json`) are the directory used
//! when no phone has sent its own.

use serde::Serialize;
use ts_rs::TS;

use super::{derive_banner, Banner, CallPath, Derived, ExtensionDirectory, ExtensionManifest};
use crate::host_error::{self, HostError, PermissionForm};

/// The extension manifests built into the app, as `(file name, JSON text)`: the two ends of
/// the reference phone line (copies of `shared/corpus/lumiverse/*.spindle.json`).
pub const EMBEDDED_MANIFESTS: [(&str, &str); 2] = [
    (
        "lumiagent.spindle.json",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../data/extensions/lumiagent.spindle.json"
        )),
    ),
    (
        "lumirealm.spindle.json",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../data/extensions/lumirealm.spindle.json"
        )),
    ),
];

/// Longest error text the explainer accepts, in bytes (64 KiB): host errors are one line.
pub const MAX_EXPLAIN_BYTES: usize = 64 * 1024;

/// The built-in directory, parsed once ([`builtin_extensions`]); the fallback of every banner:
/// a phone's reported manifests come first, these fill in the extensions it did not report.
pub fn builtin_directory() -> &'static ExtensionDirectory {
    static BUILTIN: std::sync::OnceLock<ExtensionDirectory> = std::sync::OnceLock::new();
    BUILTIN.get_or_init(builtin_extensions)
}

/// `reported` with the built-in manifests added for every extension it does not describe: the
/// one directory every banner is judged with (the hub, the dial inspector, the Bridge view, the
/// CLI without `--manifests`).
pub fn with_builtin(mut reported: ExtensionDirectory) -> ExtensionDirectory {
    for m in builtin_directory().manifests() {
        reported.add_manifest(m.clone());
    }
    reported
}

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

/// What the explainer finds in a pasted error text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ErrorExplanation {
    /// What to do about it, in plain words ([`super::advice::what_to_do`]); `None` where the
    /// meaning says it all.
    pub what_to_do: Option<String>,
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
        what_to_do: super::advice::what_to_do(&classification),
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

/// The bridge banner a failed dial raises, judged with `dir` (the directory of the phone that
/// reported the dial, the one the hub judged it with): `None` unless the dial failed (`error`,
/// `tool_error` or `timed_out`) with an error text that is an actionable host permission
/// failure.
pub fn banner_for_dial(dial: &crate::dial::Dial, dir: &ExtensionDirectory) -> Option<Banner> {
    if dial.outcome == crate::dial::DialOutcome::Ok {
        return None;
    }
    let text = dial.error.as_deref()?;
    let parsed = host_error::parse(text);
    let path = CallPath::new(&*dial.caller, &*dial.endpoint);
    let at = u64::try_from(dial.start_ms).unwrap_or(0);
    match derive_banner(&path, &parsed, dir, at) {
        Derived::Banner(b) => Some(*b),
        Derived::NothingGrantable { .. } | Derived::NotPermission => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn embedded_manifests_are_the_corpus_files_and_both_load() {
        for (file, text) in EMBEDDED_MANIFESTS {
            let corpus = std::fs::read_to_string(format!(
                "{}/../../../shared/corpus/lumiverse/{file}",
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
    fn the_spec_example_pasted_over_two_lines_explains_to_the_spec_banner() {
        // What the Bridge view's paste box gets when the example is copied out of the spec.
        let text = "Shared RPC endpoint \"lumirealm.phoneline\" requires requester \"lumiagent\"\r\nto inherit owner \"lumirealm\" permissions: push_notification";
        let x = explain(text, None, None, &builtin_extensions(), 5);
        let banner = x.banner.unwrap();
        assert_eq!(
            banner.message,
            "LumiAgent is missing push_notification, required for LumiRealm communication."
        );
        assert!(banner.manifest_checked);
        assert_eq!(x.path, CallPath::new("lumiagent", "lumirealm.phoneline"));
        assert_eq!(x.classification.text, text);
    }
}
