//! A phone line's describe manifest, the `SurfaceManifest` (phone-line.md, "Manifest"), and its
//! `manifestHash` ("Discovery and pairing"; `phoneline-pairings.json`).
//!
//! The typed view keeps every field it does not know in `extra` (serde flatten into an ordered
//! map), and [`SurfaceManifest`] also keeps the raw JSON value as received, because the pairing
//! record's `manifestHash` is the SHA-256 of exactly that value as `JSON.stringify` writes it.

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use ts_rs::TS;

use super::exclusions;

/// Errors reading a describe manifest into its typed form.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestError {
    /// The text is not JSON.
    #[error("not JSON: {0}")]
    Syntax(#[from] serde_json::Error),
    /// The JSON is not a SurfaceManifest (serde's words name the field).
    #[error("not a phone-line describe manifest: {0}")]
    Shape(String),
}

impl From<ManifestError> for crate::error::IpcError {
    /// Always `invalid_input`: the manifest came from a phone line or a file.
    fn from(e: ManifestError) -> Self {
        Self::invalid_input(e.to_string())
    }
}

/// The `extension` block: `{ id, name, version }`. All three are self-declared: LumiAgent
/// replaces `id` with the host-attested channel namespace, and `name` / `version` are shown but
/// never trusted for identity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestExtension {
    /// The declared extension id (replaced by the host-attested namespace before use).
    pub id: String,
    /// The declared display name; must equal the registry's name or the line is skipped.
    pub name: String,
    /// The declared version, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Fields the protocol does not define, in the order read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A surface's scope: `"global"` or `"per_character"`; the older form `{ "kind": "global" }` /
/// `{ "kind": "per_character" }` is read too. Serialised as the plain string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum SurfaceScope {
    /// One set of items for every character.
    Global,
    /// Items attached to characters: `list_items` / `grep_items` carry `characterId`.
    PerCharacter,
}

impl SurfaceScope {
    /// The scope named `s` (`"global"` or `"per_character"`).
    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "global" => Some(SurfaceScope::Global),
            "per_character" => Some(SurfaceScope::PerCharacter),
            _ => None,
        }
    }

    /// Reads either form: `"per_character"` or `{ "kind": "per_character" }`. Errors in words
    /// (`expected "global" or "per_character", found "weekly"`).
    pub fn from_json(value: &Value) -> Result<Self, String> {
        let name = match value {
            Value::String(s) => s,
            Value::Object(map) => match map.get("kind") {
                Some(Value::String(s)) => s,
                Some(other) => {
                    return Err(format!(
                        "kind: expected a string, found {}",
                        super::json_path::type_words(other)
                    ))
                }
                None => return Err("an object scope needs a \"kind\"".to_string()),
            },
            other => {
                return Err(format!(
                    "expected \"global\" or \"per_character\" (or {{\"kind\": ...}}), found {}",
                    super::json_path::type_words(other)
                ))
            }
        };
        Self::from_name(name)
            .ok_or_else(|| format!("expected \"global\" or \"per_character\", found {name:?}"))
    }
}

impl<'de> Deserialize<'de> for SurfaceScope {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::from_json(&value).map_err(de::Error::custom)
    }
}

/// One surface: `{ id, label, description?, scope }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Surface {
    /// The surface id that `list_items` etc. take as `surfaceId`.
    pub id: String,
    /// Display label.
    pub label: String,
    /// What the surface holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Global or per-character.
    pub scope: SurfaceScope,
    /// Fields the protocol does not define, in the order read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Deserialize)]
struct ManifestFields {
    extension: ManifestExtension,
    #[serde(default)]
    surfaces: Vec<Surface>,
    #[serde(default, rename = "excludeFromSearch")]
    exclude_from_search: Vec<String>,
    #[serde(flatten)]
    extra: Map<String, Value>,
}

/// A phone line's `describe` answer: `{ extension, surfaces, excludeFromSearch }` plus anything
/// else it declares (in `extra`), and the raw JSON value it was read from (for the hash).
#[derive(Debug, Clone, PartialEq)]
pub struct SurfaceManifest {
    /// The self-declared extension block.
    pub extension: ManifestExtension,
    /// The surfaces the line exposes (empty when absent).
    pub surfaces: Vec<Surface>,
    /// Path prefixes under `character.extensions.*` the find tools skip (empty when absent).
    pub exclude_from_search: Vec<String>,
    /// Top-level fields the protocol does not define, in the order read.
    pub extra: Map<String, Value>,
    /// The manifest exactly as received (key order kept), for [`SurfaceManifest::hash`].
    pub raw: Value,
}

impl SurfaceManifest {
    /// Reads a manifest from a JSON value. Errors ([`ManifestError::Shape`]) when `extension`
    /// with string `id` and `name` is missing, when a surface lacks `id`, `label` or a valid
    /// `scope`, or when `excludeFromSearch` is not a list of strings. Use
    /// [`super::check::check_manifest`] for a full list of problems with their places.
    pub fn from_value(raw: Value) -> Result<Self, ManifestError> {
        let fields: ManifestFields =
            serde_json::from_value(raw.clone()).map_err(|e| ManifestError::Shape(e.to_string()))?;
        Ok(Self {
            extension: fields.extension,
            surfaces: fields.surfaces,
            exclude_from_search: fields.exclude_from_search,
            extra: fields.extra,
            raw,
        })
    }

    /// Reads a manifest from JSON text. Errors as [`SurfaceManifest::from_value`], or
    /// [`ManifestError::Syntax`] (with line and column) for text that is not JSON.
    pub fn from_text(text: &str) -> Result<Self, ManifestError> {
        Self::from_value(serde_json::from_str(text)?)
    }

    /// The manifest's `manifestHash`: see [`manifest_hash`].
    pub fn hash(&self) -> String {
        manifest_hash(&self.raw)
    }

    /// The `excludeFromSearch` entry covering `path` (relative to `character.extensions`),
    /// longest first; `None` when no entry covers it. See [`exclusions::prefix_matches`].
    pub fn excluded_by(&self, path: &str) -> Option<&str> {
        exclusions::matching_prefix(&self.exclude_from_search, path)
    }

    /// The surface with id `id`.
    pub fn surface(&self, id: &str) -> Option<&Surface> {
        self.surfaces.iter().find(|s| s.id == id)
    }
}

/// A describe manifest's `manifestHash`: lowercase hex SHA-256 (64 characters) of the UTF-8 text
/// `JSON.stringify(manifest)` gives, key order as received (`phoneline-pairings.json`).
pub fn manifest_hash(raw: &Value) -> String {
    crate::js_json::sha256_hex(&crate::js_json::stringify(raw))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn scope_reads_both_forms() {
        assert_eq!(
            SurfaceScope::from_json(&json!("global")),
            Ok(SurfaceScope::Global)
        );
        assert_eq!(
            SurfaceScope::from_json(&json!({"kind": "per_character"})),
            Ok(SurfaceScope::PerCharacter)
        );
        assert!(SurfaceScope::from_json(&json!("weekly"))
            .unwrap_err()
            .contains("found \"weekly\""));
        assert!(SurfaceScope::from_json(&json!({"type": "global"})).is_err());
        assert!(SurfaceScope::from_json(&json!(3)).is_err());
    }

    #[test]
    fn unknown_fields_are_kept_in_order() {
        let text = r#"{"extension":{"id":"x","name":"X","zz":1,"aa":2},"surfaces":[{"id":"s","label":"S","scope":{"kind":"global"},"icon":"☎"}],"later":true,"earlier":[1]}"#;
        let m = SurfaceManifest::from_text(text).unwrap();
        assert_eq!(m.extension.extra.keys().collect::<Vec<_>>(), ["zz", "aa"]);
        assert_eq!(m.surfaces[0].extra.get("icon"), Some(&json!("☎")));
        assert_eq!(m.surfaces[0].scope, SurfaceScope::Global);
        assert_eq!(m.extra.keys().collect::<Vec<_>>(), ["later", "earlier"]);
        assert!(m.exclude_from_search.is_empty());
        // The hash covers the text as received, unknown fields included.
        assert_eq!(crate::js_json::stringify(&m.raw), text);
    }

    #[test]
    fn shape_errors_name_the_field() {
        let e = SurfaceManifest::from_text(r#"{"extension":{"id":"x"}}"#).unwrap_err();
        assert!(e.to_string().contains("name"), "{e}");
        let e = SurfaceManifest::from_text(
            r#"{"extension":{"id":"x","name":"X"},"surfaces":[{"id":"s","label":"S","scope":"daily"}]}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("daily"), "{e}");
    }
}
