//! Checking a describe manifest for problems, each named by where it is (`surfaces[0].scope`)
//! and, when the text is at hand, its line and column (phone-line.md, "Manifest").
//!
//! This is for phone-line developers and support staff (`switchboard manifest check`): unlike
//! [`super::manifest::SurfaceManifest::from_value`], which stops at the first problem, it lists
//! every problem it finds.

use std::collections::HashMap;
use std::fmt;

use serde::Serialize;
use serde_json::Value;
use ts_rs::TS;

use super::json_path::{type_words, JsonPath, Position};
use super::manifest::SurfaceScope;

/// One problem in a describe manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ManifestProblem {
    /// Where: a path such as `surfaces[0].scope` or `excludeFromSearch[3]`.
    pub at: String,
    /// What is wrong, in words.
    pub message: String,
    /// 1-based line of the value in the text (of the enclosing object for a missing member),
    /// when checked from text.
    pub line: Option<u32>,
    /// 1-based column (in characters) of the value, with `line`.
    pub column: Option<u32>,
}

impl fmt::Display for ManifestProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.at, self.message)?;
        if let (Some(l), Some(c)) = (self.line, self.column) {
            write!(f, " (line {l}, column {c})")?;
        }
        Ok(())
    }
}

struct Checker<'t> {
    text: Option<&'t str>,
    problems: Vec<ManifestProblem>,
}

impl Checker<'_> {
    fn problem(&mut self, at: &JsonPath, message: impl Into<String>) {
        // A missing member is placed at the nearest enclosing value that exists.
        let pos: Option<Position> = self.text.and_then(|t| at.locate_nearest(t));
        self.problems.push(ManifestProblem {
            at: at.to_string(),
            message: message.into(),
            line: pos.map(|p| u32::try_from(p.line).unwrap_or(u32::MAX)),
            column: pos.map(|p| u32::try_from(p.column).unwrap_or(u32::MAX)),
        });
    }

    /// Checks that `obj[key]` is a non-empty string when `required`, or absent / a string when
    /// not; returns the string.
    fn string_field<'v>(
        &mut self,
        obj: &'v serde_json::Map<String, Value>,
        at: &JsonPath,
        key: &str,
        required: bool,
    ) -> Option<&'v str> {
        let here = at.key(key);
        match obj.get(key) {
            None if required => {
                self.problem(&here, "missing (a non-empty string is required)");
                None
            }
            None => None,
            Some(Value::String(s)) if s.trim().is_empty() && required => {
                self.problem(&here, "empty (a non-empty string is required)");
                None
            }
            Some(Value::String(s)) => Some(s),
            Some(other) => {
                self.problem(
                    &here,
                    format!("expected a string, found {}", type_words(other)),
                );
                None
            }
        }
    }
}

/// Lists the problems of the describe manifest `manifest` (no line numbers). Empty when there
/// are none. What counts as a problem:
/// - the manifest or `extension` is not an object; `extension.id` / `extension.name` missing,
///   empty or not strings; `extension.version` present but not a string;
/// - `surfaces` missing or not an array; a surface not an object; its `id` / `label` missing,
///   empty or not strings; `description` not a string; `scope` missing or not `"global"` /
///   `"per_character"` (or `{kind: ...}`); two surfaces with the same `id`;
/// - `excludeFromSearch` not an array; an entry not a string, empty, with surrounding spaces,
///   ending in `.` or `[`, given twice, or not under the extension's id (the id itself,
///   `<id>.` or `<id>[`).
///
/// `attested_id` is the host-attested namespace when known; exclusions are checked against it,
/// and otherwise against the declared `extension.id`.
pub fn check_manifest(manifest: &Value, attested_id: Option<&str>) -> Vec<ManifestProblem> {
    run(manifest, None, attested_id)
}

/// Like [`check_manifest`] for the JSON text `text`, with each problem's line and column.
/// Errors when the text is not JSON (serde_json's error gives line and column).
pub fn check_manifest_text(
    text: &str,
    attested_id: Option<&str>,
) -> Result<Vec<ManifestProblem>, serde_json::Error> {
    let value: Value = serde_json::from_str(text)?;
    Ok(run(&value, Some(text), attested_id))
}

fn run(manifest: &Value, text: Option<&str>, attested_id: Option<&str>) -> Vec<ManifestProblem> {
    let mut c = Checker {
        text,
        problems: Vec::new(),
    };
    let root = JsonPath::root();
    let Value::Object(top) = manifest else {
        c.problem(
            &root,
            format!(
                "a describe manifest must be an object, found {}",
                type_words(manifest)
            ),
        );
        return c.problems;
    };

    let ext_path = root.key("extension");
    let mut declared_id = None;
    match top.get("extension") {
        None => c.problem(&ext_path, "missing (needs {id, name, version})"),
        Some(Value::Object(ext)) => {
            declared_id = c.string_field(ext, &ext_path, "id", true);
            c.string_field(ext, &ext_path, "name", true);
            c.string_field(ext, &ext_path, "version", false);
        }
        Some(other) => c.problem(
            &ext_path,
            format!("expected an object, found {}", type_words(other)),
        ),
    }

    let surfaces_path = root.key("surfaces");
    match top.get("surfaces") {
        None => c.problem(
            &surfaces_path,
            "missing (use [] for a phone line with no surfaces)",
        ),
        Some(Value::Array(surfaces)) => {
            let mut seen: HashMap<&str, usize> = HashMap::new();
            for (i, surface) in surfaces.iter().enumerate() {
                let at = surfaces_path.index(i);
                let Value::Object(s) = surface else {
                    c.problem(
                        &at,
                        format!("expected an object, found {}", type_words(surface)),
                    );
                    continue;
                };
                if let Some(id) = c.string_field(s, &at, "id", true) {
                    if let Some(first) = seen.get(id) {
                        c.problem(
                            &at.key("id"),
                            format!("duplicate surface id {id:?} (also surfaces[{first}].id)"),
                        );
                    } else {
                        seen.insert(id, i);
                    }
                }
                c.string_field(s, &at, "label", true);
                c.string_field(s, &at, "description", false);
                match s.get("scope") {
                    None => c.problem(
                        &at.key("scope"),
                        "missing (\"global\" or \"per_character\")",
                    ),
                    Some(scope) => {
                        if let Err(e) = SurfaceScope::from_json(scope) {
                            c.problem(&at.key("scope"), e.to_string());
                        }
                    }
                }
            }
        }
        Some(other) => c.problem(
            &surfaces_path,
            format!("expected an array, found {}", type_words(other)),
        ),
    }

    let owner = attested_id.or(declared_id);
    let excl_path = root.key("excludeFromSearch");
    match top.get("excludeFromSearch") {
        None => {}
        Some(Value::Array(entries)) => {
            let mut seen: HashMap<&str, usize> = HashMap::new();
            for (i, entry) in entries.iter().enumerate() {
                let at = excl_path.index(i);
                let Value::String(prefix) = entry else {
                    c.problem(
                        &at,
                        format!("expected a string path prefix, found {}", type_words(entry)),
                    );
                    continue;
                };
                if prefix.is_empty() {
                    c.problem(&at, "empty prefix");
                    continue;
                }
                if prefix.trim() != prefix {
                    c.problem(&at, format!("{prefix:?} has leading or trailing spaces"));
                }
                if prefix.ends_with('.') || prefix.ends_with('[') {
                    c.problem(
                        &at,
                        format!(
                            "{prefix:?} ends with a separator; matching adds \".\" and \"[\" itself, so it matches nothing useful"
                        ),
                    );
                }
                if let Some(id) = owner {
                    if !super::exclusions::prefix_matches(id, prefix) {
                        c.problem(
                            &at,
                            format!(
                                "{prefix:?} is not under the extension's own id {id:?} (expected {id:?}, \"{id}.…\" or \"{id}[…\")"
                            ),
                        );
                    }
                }
                if let Some(first) = seen.get(prefix.as_str()) {
                    c.problem(
                        &at,
                        format!("{prefix:?} is listed twice (also excludeFromSearch[{first}])"),
                    );
                } else {
                    seen.insert(prefix, i);
                }
            }
        }
        Some(other) => c.problem(
            &excl_path,
            format!(
                "expected an array of path prefixes, found {}",
                type_words(other)
            ),
        ),
    }
    c.problems
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use serde_json::json;

    fn ats(problems: &[ManifestProblem]) -> Vec<&str> {
        problems.iter().map(|p| p.at.as_str()).collect()
    }

    #[test]
    fn a_good_manifest_has_no_problems() {
        let m = json!({"extension": {"id": "x", "name": "X", "version": "1"}, "surfaces": [{"id": "s", "label": "S", "scope": {"kind": "global"}}], "excludeFromSearch": ["x", "x.a", "x[0]"]});
        assert_eq!(check_manifest(&m, None), vec![]);
    }

    #[test]
    fn names_every_problem_and_where() {
        let text = r#"{
  "extension": {"id": "", "version": 3},
  "surfaces": [
    {"id": "a", "label": "A", "scope": "weekly"},
    {"id": "a", "scope": {"type": "global"}},
    "s",
    {"id": 4, "label": "", "description": 1}
  ],
  "excludeFromSearch": ["x.a", 5, "", "other.b", "x.a", "x.b.", " x.c"]
}"#;
        let problems = check_manifest_text(text, Some("x")).unwrap();
        assert_eq!(
            ats(&problems),
            [
                "extension.id",
                "extension.name",
                "extension.version",
                "surfaces[0].scope",
                "surfaces[1].id",
                "surfaces[1].label",
                "surfaces[1].scope",
                "surfaces[2]",
                "surfaces[3].id",
                "surfaces[3].label",
                "surfaces[3].description",
                "surfaces[3].scope",
                "excludeFromSearch[1]",
                "excludeFromSearch[2]",
                "excludeFromSearch[3]",
                "excludeFromSearch[4]",
                "excludeFromSearch[5]",
                "excludeFromSearch[6]",
                "excludeFromSearch[6]",
            ]
        );
        let dup = &problems[4];
        assert!(dup.message.contains("surfaces[0].id"), "{dup}");
        assert_eq!((dup.line, dup.column), (Some(5), Some(12)));
        assert!(problems[3].message.contains("weekly"));
        assert!(problems[14]
            .message
            .contains("not under the extension's own id \"x\""));
        // A missing field is placed at the object that lacks it.
        assert_eq!((problems[1].line, problems[1].column), (Some(2), Some(16)));
        assert_eq!(
            problems[3].to_string(),
            "surfaces[0].scope: expected \"global\" or \"per_character\", found \"weekly\" (line 4, column 40)"
        );
    }

    #[test]
    fn wrong_top_level_shapes() {
        assert_eq!(ats(&check_manifest(&json!([]), None)), ["(top level)"]);
        let p = check_manifest(
            &json!({"extension": "x", "surfaces": {}, "excludeFromSearch": "x"}),
            None,
        );
        assert_eq!(ats(&p), ["extension", "surfaces", "excludeFromSearch"]);
        let p = check_manifest(&json!({"extension": {"id": "x", "name": "X"}}), None);
        assert_eq!(ats(&p), ["surfaces"]);
    }
}
