//! A phone line's describe manifest, the `SurfaceManifest` (phone-line.md, "Manifest"), and its
//! `manifestHash` ("Discovery and pairing"; `phoneline-pairings.json`).
//!
//! LumiAgent does not use a describe answer as received: it first normalises it
//! ([`normalise`], upstream-behaviour.md "LumiAgent's registry and pairing records"), keeping
//! only the fields the protocol defines, turning the older `scope: {kind}` form into the plain
//! string and dropping surfaces it cannot use. The typed view is read from that normalised
//! manifest, with notes in words of what normalising dropped or changed; the answer as received
//! is kept too (`raw`, for [`super::check::check_manifest`]). The pairing record's
//! `manifestHash` is the SHA-256 of `JSON.stringify` of the normalised manifest with
//! `extension.id` and `extension.name` overwritten by the registry's values
//! ([`SurfaceManifest::hash`]).

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
    /// LumiAgent drops the whole answer ([`normalise`]'s reason).
    #[error("not a phone-line describe manifest: {0}")]
    Dropped(#[from] NormaliseError),
}

/// Why a surface's `scope` is not one LumiAgent reads ([`SurfaceScope::from_json`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScopeError {
    /// `{ "kind": ... }` whose `kind` is not a string (the JSON type found).
    #[error("kind: expected a string, found {0}")]
    KindNotAString(&'static str),
    /// An object without `kind`.
    #[error("an object scope needs a \"kind\"")]
    NoKind,
    /// Neither a string nor an object (the JSON type found).
    #[error("expected \"global\" or \"per_character\" (or {{\"kind\": ...}}), found {0}")]
    NotAScope(&'static str),
    /// A string naming no scope (the name found).
    #[error("expected \"global\" or \"per_character\", found {0:?}")]
    UnknownName(String),
}

/// Why LumiAgent drops a whole describe answer ([`normalise`]); each names the member and the
/// JSON type found there (`nothing` when absent).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NormaliseError {
    /// The answer is not a JavaScript object.
    #[error("the answer is {0}, not an object")]
    NotAnObject(&'static str),
    /// `extension` is not an object.
    #[error("extension: expected an object, found {0}")]
    ExtensionNotAnObject(&'static str),
    /// `extension.id` is not a string.
    #[error("extension.id: expected a string, found {0}")]
    IdNotAString(&'static str),
    /// `extension.name` is not a string.
    #[error("extension.name: expected a string, found {0}")]
    NameNotAString(&'static str),
    /// `surfaces` is not an array.
    #[error("surfaces: expected an array, found {0}")]
    SurfacesNotAnArray(&'static str),
}

impl From<ManifestError> for switchboard_wire::error::IpcError {
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
    /// The declared version, when given as a string (LumiAgent drops any other).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
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

    /// Reads either form: `"per_character"` or `{ "kind": "per_character" }`.
    ///
    /// # Errors
    /// A [`ScopeError`] whose words say what was found
    /// (`expected "global" or "per_character", found "weekly"`).
    pub fn from_json(value: &Value) -> Result<Self, ScopeError> {
        let name = match value {
            Value::String(s) => s,
            Value::Object(map) => match map.get("kind") {
                Some(Value::String(s)) => s,
                Some(other) => {
                    return Err(ScopeError::KindNotAString(super::json_path::type_words(
                        other,
                    )))
                }
                None => return Err(ScopeError::NoKind),
            },
            other => return Err(ScopeError::NotAScope(super::json_path::type_words(other))),
        };
        Self::from_name(name).ok_or_else(|| ScopeError::UnknownName(name.clone()))
    }
}

impl<'de> Deserialize<'de> for SurfaceScope {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::from_json(&value).map_err(de::Error::custom)
    }
}

/// One surface, as LumiAgent normalises it: `{ id, label, description, scope }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Surface {
    /// The surface id that `list_items` etc. take as `surfaceId`.
    pub id: String,
    /// Display label.
    pub label: String,
    /// What the surface holds (LumiAgent's `""` when the answer had none, or not a string).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Global or per-character.
    pub scope: SurfaceScope,
}

#[derive(Deserialize)]
struct ManifestFields {
    extension: ManifestExtension,
    #[serde(default)]
    surfaces: Vec<Surface>,
    #[serde(default, rename = "excludeFromSearch")]
    exclude_from_search: Vec<String>,
}

/// A phone line's `describe` answer as LumiAgent uses it: `{ extension, surfaces,
/// excludeFromSearch }` after [`normalise`], with the notes of what normalising dropped or
/// changed, and the raw JSON value as received.
#[derive(Debug, Clone, PartialEq)]
pub struct SurfaceManifest {
    /// The self-declared extension block.
    pub extension: ManifestExtension,
    /// The surfaces LumiAgent keeps, in order.
    pub surfaces: Vec<Surface>,
    /// Path prefixes under `character.extensions.*` the find tools skip (empty when absent).
    pub exclude_from_search: Vec<String>,
    /// The normalised manifest as [`normalise`] gives it (`extension` as declared).
    pub normalised: Value,
    /// What normalising dropped or changed, in words naming the place; empty when nothing.
    pub notes: Vec<String>,
    /// The manifest exactly as received (key order kept), for checking it.
    pub raw: Value,
}

impl SurfaceManifest {
    /// Reads a describe answer as LumiAgent does: every answer [`normalise`] accepts is
    /// accepted, its dropped and changed parts listed in `notes`. Errors
    /// ([`ManifestError::Dropped`], in [`normalise`]'s words) only when LumiAgent drops the whole
    /// answer. Use [`super::check::check_manifest`] for a full list of problems with the answer
    /// as received.
    pub fn from_value(raw: Value) -> Result<Self, ManifestError> {
        let n = normalise(&raw)?;
        let fields: ManifestFields = serde_json::from_value(n.value.clone())
            .map_err(|e| ManifestError::Shape(e.to_string()))?;
        Ok(Self {
            extension: fields.extension,
            surfaces: fields.surfaces,
            exclude_from_search: fields.exclude_from_search,
            normalised: n.value,
            notes: n.notes,
            raw,
        })
    }

    /// Reads a manifest from JSON text. Errors as [`SurfaceManifest::from_value`], or
    /// [`ManifestError::Syntax`] (with line and column) for text that is not JSON.
    pub fn from_text(text: &str) -> Result<Self, ManifestError> {
        Self::from_value(serde_json::from_str(text)?)
    }

    /// The manifest LumiAgent hashes and uses: the normalised manifest with `extension.id` and
    /// `extension.name` set to this manifest's (the pairing rule sets them to the registry's
    /// identifier and name before hashing), key order `extension`, `surfaces`,
    /// `excludeFromSearch`.
    pub fn trusted_value(&self) -> Value {
        let mut value = self.normalised.clone();
        if let Some(Value::Object(ext)) = value.get_mut("extension") {
            ext.insert("id".into(), Value::from(self.extension.id.as_str()));
            ext.insert("name".into(), Value::from(self.extension.name.as_str()));
        }
        value
    }

    /// The manifest's `manifestHash` as LumiAgent computes it: lowercase hex SHA-256 (64
    /// characters) of `JSON.stringify` of [`SurfaceManifest::trusted_value`].
    pub fn hash(&self) -> String {
        switchboard_wire::js_json::sha256_hex(&switchboard_wire::js_json::stringify(
            &self.trusted_value(),
        ))
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

/// A describe answer's `manifestHash`: lowercase hex SHA-256 (64 characters) of
/// `JSON.stringify` of the answer after [`normalise`], `extension.id` and `extension.name` as
/// declared (what LumiAgent stores in `phoneline-pairings.json` when they equal the registry's,
/// as they must for a paired line).
///
/// # Errors
/// [`ManifestError::Shape`] when LumiAgent drops the whole answer (see [`normalise`]).
pub fn manifest_hash(raw: &Value) -> Result<String, ManifestError> {
    Ok(SurfaceManifest::from_value(raw.clone())?.hash())
}

/// What LumiAgent's normalisation (upstream-behaviour.md, "LumiAgent's registry and pairing
/// records") made of a describe answer: the normalised manifest and, in words, what it dropped
/// or changed on the way.
#[derive(Debug, Clone, PartialEq)]
pub struct Normalised {
    /// The normalised manifest: `{extension: {id, name, version?}, surfaces: [{id, label,
    /// description, scope}], excludeFromSearch?}`, in that key order.
    pub value: Value,
    /// What normalising dropped or changed, each naming the place (`surfaces[0].scope: the
    /// older form {"kind": "per_character"} became "per_character"`); empty when nothing.
    pub notes: Vec<String>,
}

fn is_js_object(v: &Value) -> bool {
    // `typeof x === "object"` is true for arrays too; an array has none of the keys looked up,
    // so treating it as an object without those keys gives LumiAgent's result.
    matches!(v, Value::Object(_) | Value::Array(_))
}

fn member<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    match v {
        Value::Object(map) => map.get(key),
        _ => None,
    }
}

/// The JSON type of a member, or `nothing` when it is absent.
fn found(v: Option<&Value>) -> &'static str {
    v.map_or("nothing", super::json_path::type_words)
}

fn dropped_members(v: &Value, keep: &[&str], at: &str, notes: &mut Vec<String>) {
    if let Value::Object(map) = v {
        for k in map.keys().filter(|k| !keep.contains(&k.as_str())) {
            let place = if at.is_empty() {
                crate::phone_line::json_path::JsonPath::root()
                    .key(k)
                    .to_string()
            } else {
                format!("{at}.{k}")
            };
            notes.push(format!(
                "{place}: dropped (LumiAgent keeps only {})",
                keep.join(", ")
            ));
        }
    }
}

/// Normalises surface `s` (at `surfaces[i]`) as LumiAgent's `normaliseSurface` does; `None`
/// when LumiAgent drops it (the reason is in `notes`).
fn normalise_surface(s: &Value, i: usize, notes: &mut Vec<String>) -> Option<Value> {
    let at = format!("surfaces[{i}]");
    if !is_js_object(s) {
        notes.push(format!(
            "{at}: dropped (expected an object, found {})",
            found(Some(s))
        ));
        return None;
    }
    let (id, label) = match (member(s, "id"), member(s, "label")) {
        (Some(Value::String(id)), Some(Value::String(label))) => (id, label),
        (id, label) => {
            let which = if matches!(id, Some(Value::String(_))) {
                format!("label is {}", found(label))
            } else {
                format!("id is {}", found(id))
            };
            notes.push(format!(
                "{at}: dropped (needs a string id and label; {which})"
            ));
            return None;
        }
    };
    let scope = match member(s, "scope") {
        Some(Value::String(name)) if SurfaceScope::from_name(name).is_some() => name.clone(),
        Some(scope @ Value::Object(_)) | Some(scope @ Value::Array(_)) => {
            match member(scope, "kind") {
                Some(Value::String(k)) if SurfaceScope::from_name(k).is_some() => {
                    notes.push(format!(
                        "{at}.scope: the older form {{\"kind\": {k:?}}} became {k:?}"
                    ));
                    k.clone()
                }
                kind => {
                    notes.push(format!(
                        "{at}: dropped (scope.kind must be \"global\" or \"per_character\", found {})",
                        kind.map_or_else(|| "nothing".to_string(), switchboard_wire::js_json::stringify)
                    ));
                    return None;
                }
            }
        }
        other => {
            notes.push(format!(
                "{at}: dropped (scope must be \"global\" or \"per_character\", found {})",
                other.map_or_else(
                    || "nothing".to_string(),
                    switchboard_wire::js_json::stringify
                )
            ));
            return None;
        }
    };
    let description = match member(s, "description") {
        Some(Value::String(d)) => d.clone(),
        None => {
            notes.push(format!("{at}.description: absent; LumiAgent uses \"\""));
            String::new()
        }
        Some(other) => {
            notes.push(format!(
                "{at}.description: {} replaced by \"\" (not a string)",
                found(Some(other))
            ));
            String::new()
        }
    };
    dropped_members(s, &["id", "label", "description", "scope"], &at, notes);
    let mut out = Map::new();
    out.insert("id".into(), Value::from(id.as_str()));
    out.insert("label".into(), Value::from(label.as_str()));
    out.insert("description".into(), Value::from(description));
    out.insert("scope".into(), Value::from(scope));
    Some(Value::Object(out))
}

/// Normalises a describe answer exactly as LumiAgent's `normaliseManifest` does before it
/// compares or hashes anything (upstream-behaviour.md): `extension` keeps string `id`, `name`
/// and a string `version`; each surface keeps `id`, `label`, `description` (`""` when absent or
/// not a string) and `scope` (the older `{kind}` form becomes the string), surfaces without
/// string `id`/`label` or a known scope are dropped; `excludeFromSearch` keeps its string
/// entries and is left out when not an array; nothing else survives.
///
/// # Errors
/// A [`NormaliseError`], when LumiAgent drops the whole answer: it is not an object,
/// `extension` is not an object or lacks a string `id` or `name`, or `surfaces` is not an array.
pub fn normalise(raw: &Value) -> Result<Normalised, NormaliseError> {
    if !is_js_object(raw) {
        return Err(NormaliseError::NotAnObject(found(Some(raw))));
    }
    let ext = member(raw, "extension");
    let Some(ext) = ext.filter(|e| is_js_object(e)) else {
        return Err(NormaliseError::ExtensionNotAnObject(found(ext)));
    };
    let (id, name) = match (member(ext, "id"), member(ext, "name")) {
        (Some(Value::String(id)), Some(Value::String(name))) => (id, name),
        (Some(Value::String(_)), name) => return Err(NormaliseError::NameNotAString(found(name))),
        (id, _) => return Err(NormaliseError::IdNotAString(found(id))),
    };
    let surfaces = member(raw, "surfaces");
    let Some(Value::Array(surfaces)) = surfaces else {
        return Err(NormaliseError::SurfacesNotAnArray(found(surfaces)));
    };
    let mut notes = Vec::new();
    let mut extension = Map::new();
    extension.insert("id".into(), Value::from(id.as_str()));
    extension.insert("name".into(), Value::from(name.as_str()));
    match member(ext, "version") {
        Some(Value::String(v)) => {
            extension.insert("version".into(), Value::from(v.as_str()));
        }
        None => {}
        Some(other) => notes.push(format!(
            "extension.version: dropped (not a string, found {})",
            found(Some(other))
        )),
    }
    dropped_members(ext, &["id", "name", "version"], "extension", &mut notes);
    let surfaces: Vec<Value> = surfaces
        .iter()
        .enumerate()
        .filter_map(|(i, s)| normalise_surface(s, i, &mut notes))
        .collect();
    let mut out = Map::new();
    out.insert("extension".into(), Value::Object(extension));
    out.insert("surfaces".into(), Value::Array(surfaces));
    match member(raw, "excludeFromSearch") {
        Some(Value::Array(items)) => {
            let mut kept = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(s) => kept.push(Value::from(s.as_str())),
                    other => notes.push(format!(
                        "excludeFromSearch[{i}]: dropped (not a string, found {})",
                        found(Some(other))
                    )),
                }
            }
            out.insert("excludeFromSearch".into(), Value::Array(kept));
        }
        None => {}
        Some(other) => notes.push(format!(
            "excludeFromSearch: dropped (not an array, found {})",
            found(Some(other))
        )),
    }
    dropped_members(
        raw,
        &["extension", "surfaces", "excludeFromSearch"],
        "",
        &mut notes,
    );
    Ok(Normalised {
        value: Value::Object(out),
        notes,
    })
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
        let weekly = SurfaceScope::from_json(&json!("weekly")).unwrap_err();
        assert_eq!(weekly, ScopeError::UnknownName("weekly".into()));
        assert!(weekly.to_string().contains("found \"weekly\""));
        assert_eq!(
            SurfaceScope::from_json(&json!({"type": "global"})),
            Err(ScopeError::NoKind)
        );
        assert_eq!(
            SurfaceScope::from_json(&json!({"kind": 1})),
            Err(ScopeError::KindNotAString("a number"))
        );
        assert!(matches!(
            SurfaceScope::from_json(&json!(3)),
            Err(ScopeError::NotAScope(_))
        ));
    }

    #[test]
    fn unknown_fields_are_dropped_with_notes() {
        let text = r#"{"extension":{"id":"x","name":"X","zz":1,"version":2},"surfaces":[{"id":"s","label":"S","scope":{"kind":"global"},"icon":"☎"},{"id":"t","scope":"global"},7],"later":true,"excludeFromSearch":["a",3]}"#;
        let m = SurfaceManifest::from_text(text).unwrap();
        assert_eq!(m.surfaces.len(), 1);
        assert_eq!(m.surfaces[0].scope, SurfaceScope::Global);
        assert_eq!(m.extension.version, None);
        assert_eq!(m.exclude_from_search, ["a"]);
        assert_eq!(
            switchboard_wire::js_json::stringify(&m.normalised),
            r#"{"extension":{"id":"x","name":"X"},"surfaces":[{"id":"s","label":"S","description":"","scope":"global"}],"excludeFromSearch":["a"]}"#
        );
        let notes = m.notes.join("\n");
        for want in [
            "extension.version: dropped (not a string, found a number)",
            "extension.zz: dropped",
            "surfaces[0].description: absent",
            "surfaces[0].scope: the older form {\"kind\": \"global\"} became \"global\"",
            "surfaces[0].icon: dropped",
            "surfaces[1]: dropped (needs a string id and label; label is nothing)",
            "surfaces[2]: dropped (expected an object, found a number)",
            "excludeFromSearch[1]: dropped (not a string, found a number)",
            "later: dropped",
        ] {
            assert!(notes.contains(want), "{want:?} not in:\n{notes}");
        }
        assert_eq!(m.notes.len(), 9, "{notes}");
        // The answer as received is kept for checking.
        assert_eq!(switchboard_wire::js_json::stringify(&m.raw), text);
    }

    #[test]
    fn whole_answers_dropped_by_lumiagent_are_errors_in_words() {
        for (text, want) in [
            ("[]", "extension: expected an object, found nothing"),
            ("null", "the answer is null, not an object"),
            (
                r#"{"extension":{"id":"x","name":"X"}}"#,
                "surfaces: expected an array, found nothing",
            ),
            (
                r#"{"extension":{"id":"x","name":"X"},"surfaces":{}}"#,
                "surfaces: expected an array, found an object",
            ),
            (
                r#"{"extension":{"id":1,"name":"X"},"surfaces":[]}"#,
                "extension.id: expected a string, found a number",
            ),
            (
                r#"{"extension":{"id":"x"},"surfaces":[]}"#,
                "extension.name: expected a string, found nothing",
            ),
        ] {
            let e = SurfaceManifest::from_text(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn clean_answers_have_no_notes_and_excludes_stay_absent() {
        let m = SurfaceManifest::from_text(
            r#"{"surfaces":[{"scope":"per_character","description":"d","label":"L","id":"i"}],"extension":{"version":"1","name":"N","id":"n"}}"#,
        )
        .unwrap();
        assert!(m.notes.is_empty(), "{:?}", m.notes);
        assert_eq!(
            switchboard_wire::js_json::stringify(&m.trusted_value()),
            r#"{"extension":{"id":"n","name":"N","version":"1"},"surfaces":[{"id":"i","label":"L","description":"d","scope":"per_character"}]}"#
        );
    }

    #[test]
    fn shape_errors_name_the_field() {
        let e = SurfaceManifest::from_text(r#"{"extension":{"id":"x"}}"#).unwrap_err();
        assert!(e.to_string().contains("name"), "{e}");
        // A surface with an unknown scope is dropped (as LumiAgent does), with a note.
        let m = SurfaceManifest::from_text(
            r#"{"extension":{"id":"x","name":"X"},"surfaces":[{"id":"s","label":"S","scope":"daily"}]}"#,
        )
        .unwrap();
        assert!(m.surfaces.is_empty());
        assert!(m.notes[0].contains("\"daily\""), "{:?}", m.notes);
    }
}
