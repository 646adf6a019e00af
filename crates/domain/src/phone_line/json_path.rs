//! Paths into JSON documents (`pairings.lumirealm.allowed`, `surfaces[0].scope`) and where they
//! sit in the text (line and column), so that every complaint about a pairings file, a settings
//! file or a describe manifest names the exact place (phone-line.md, "Manifest" and "Discovery
//! and pairing"; the project's rule that bad input gives an error naming what and where).

use std::fmt;

/// One step of a [`JsonPath`]: an object key or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSeg {
    /// An object member, by key.
    Key(String),
    /// An array element, by zero-based index.
    Index(usize),
}

/// A path from the top of a JSON document to one value, e.g. `surfaces[0].scope`.
///
/// Displayed JavaScript-style: identifier-like keys joined by `.`, other keys as `["a.b"]`,
/// indices as `[0]`; the empty path displays as `(top level)`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JsonPath(pub Vec<PathSeg>);

impl JsonPath {
    /// The empty path: the document's top-level value.
    pub fn root() -> Self {
        Self(Vec::new())
    }

    /// This path extended by object key `key`.
    pub fn key(&self, key: &str) -> Self {
        let mut segs = self.0.clone();
        segs.push(PathSeg::Key(key.to_string()));
        Self(segs)
    }

    /// This path extended by array index `index`.
    pub fn index(&self, index: usize) -> Self {
        let mut segs = self.0.clone();
        segs.push(PathSeg::Index(index));
        Self(segs)
    }

    /// Where this path's value starts in `text` (which must be the JSON the value was parsed
    /// from), or `None` when the path is not in the text. For a key given twice the last one is
    /// taken, as serde_json and `JSON.parse` keep the last value.
    pub fn locate(&self, text: &str) -> Option<Position> {
        let bytes = text.as_bytes();
        let mut pos = skip_ws(bytes, 0);
        for seg in &self.0 {
            pos = match seg {
                PathSeg::Key(k) => find_member(text, pos, k)?,
                PathSeg::Index(i) => find_element(text, pos, *i)?,
            };
        }
        Some(Position::at(text, pos))
    }
}

impl JsonPath {
    /// Where this path's value starts in `text`, or, when it is not there (a missing member),
    /// where the nearest enclosing value that is there starts. `None` only when `text` is not
    /// JSON at all.
    pub fn locate_nearest(&self, text: &str) -> Option<Position> {
        let mut path = self.clone();
        loop {
            if let Some(p) = path.locate(text) {
                return Some(p);
            }
            path.0.pop()?;
        }
    }
}

fn is_plain_key(key: &str) -> bool {
    let mut chars = key.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '-')
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("(top level)");
        }
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                PathSeg::Key(k) if is_plain_key(k) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(k)?;
                }
                PathSeg::Key(k) => {
                    let mut quoted = String::new();
                    switchboard_wire::js_json::write_string(&mut quoted, k);
                    write!(f, "[{quoted}]")?;
                }
                PathSeg::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

/// A place in a text: 1-based line and 1-based column (counted in characters, not bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// 1-based line number.
    pub line: usize,
    /// 1-based column, in Unicode scalar values from the start of the line.
    pub column: usize,
}

impl Position {
    /// The position of byte offset `offset` in `text` (clamped to the text's end and to a
    /// character boundary at or before it).
    pub fn at(text: &str, offset: usize) -> Self {
        let mut end = offset.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let before = text.get(..end).unwrap_or("");
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
        let column = before.get(line_start..).unwrap_or("").chars().count() + 1;
        Self { line, column }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

fn skip_ws(bytes: &[u8], mut pos: usize) -> usize {
    while matches!(bytes.get(pos), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        pos += 1;
    }
    pos
}

/// Byte offset just past the string literal starting at `pos` (which holds `"`).
fn skip_string(bytes: &[u8], pos: usize) -> Option<usize> {
    if bytes.get(pos) != Some(&b'"') {
        return None;
    }
    let mut i = pos + 1;
    loop {
        match bytes.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// Byte offset just past the JSON value starting at `pos`.
fn skip_value(bytes: &[u8], pos: usize) -> Option<usize> {
    match bytes.get(pos)? {
        b'"' => skip_string(bytes, pos),
        open @ (b'{' | b'[') => {
            let close = if *open == b'{' { b'}' } else { b']' };
            let mut i = skip_ws(bytes, pos + 1);
            if bytes.get(i) == Some(&close) {
                return Some(i + 1);
            }
            loop {
                if *open == b'{' {
                    i = skip_ws(bytes, skip_string(bytes, i)?);
                    if bytes.get(i) != Some(&b':') {
                        return None;
                    }
                    i = skip_ws(bytes, i + 1);
                }
                i = skip_ws(bytes, skip_value(bytes, i)?);
                match bytes.get(i)? {
                    b',' => i = skip_ws(bytes, i + 1),
                    c if *c == close => return Some(i + 1),
                    _ => return None,
                }
            }
        }
        _ => {
            let mut i = pos;
            while let Some(c) = bytes.get(i) {
                if matches!(c, b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r') {
                    break;
                }
                i += 1;
            }
            (i > pos).then_some(i)
        }
    }
}

/// Offset of the value of member `key` in the object starting at `pos` (last one wins).
fn find_member(text: &str, pos: usize, key: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    if bytes.get(pos) != Some(&b'{') {
        return None;
    }
    let mut found = None;
    let mut i = skip_ws(bytes, pos + 1);
    if bytes.get(i) == Some(&b'}') {
        return None;
    }
    loop {
        let key_end = skip_string(bytes, i)?;
        let this_key: String = serde_json::from_str(text.get(i..key_end)?).ok()?;
        i = skip_ws(bytes, key_end);
        if bytes.get(i) != Some(&b':') {
            return found;
        }
        i = skip_ws(bytes, i + 1);
        if this_key == key {
            found = Some(i);
        }
        i = skip_ws(bytes, skip_value(bytes, i)?);
        match bytes.get(i) {
            Some(b',') => i = skip_ws(bytes, i + 1),
            _ => return found,
        }
    }
}

/// Offset of element `index` of the array starting at `pos`.
fn find_element(text: &str, pos: usize, index: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    if bytes.get(pos) != Some(&b'[') {
        return None;
    }
    let mut i = skip_ws(bytes, pos + 1);
    if bytes.get(i) == Some(&b']') {
        return None;
    }
    let mut n = 0;
    loop {
        if n == index {
            return Some(i);
        }
        i = skip_ws(bytes, skip_value(bytes, i)?);
        match bytes.get(i) {
            Some(b',') => i = skip_ws(bytes, i + 1),
            _ => return None,
        }
        n += 1;
    }
}

/// Words for a JSON value's type, for messages: `a string`, `a number`, `a boolean`, `null`,
/// `an array`, `an object`.
pub fn type_words(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    const TEXT: &str = "{\n  \"a\": {\"b\": [10, {\"c\": \"x\\\"}\"}, 30]},\n  \"k.y\": 1,\n  \"é\": [ ],\n  \"d\": 1, \"d\": 2\n}";

    #[test]
    fn displays_paths_javascript_style() {
        let p = JsonPath::root()
            .key("pairings")
            .key("lumi-realm")
            .key("allowed");
        assert_eq!(p.to_string(), "pairings.lumi-realm.allowed");
        let p = JsonPath::root().key("surfaces").index(0).key("scope");
        assert_eq!(p.to_string(), "surfaces[0].scope");
        let p = JsonPath::root().key("pairings").key("a.b");
        assert_eq!(p.to_string(), "pairings[\"a.b\"]");
        assert_eq!(JsonPath::root().to_string(), "(top level)");
    }

    #[test]
    fn locates_values_by_path() {
        let at = |p: JsonPath| p.locate(TEXT).map(|p| (p.line, p.column));
        assert_eq!(at(JsonPath::root()), Some((1, 1)));
        assert_eq!(at(JsonPath::root().key("a")), Some((2, 8)));
        assert_eq!(
            at(JsonPath::root().key("a").key("b").index(0)),
            Some((2, 15))
        );
        assert_eq!(
            at(JsonPath::root().key("a").key("b").index(1).key("c")),
            Some((2, 25))
        );
        assert_eq!(
            at(JsonPath::root().key("a").key("b").index(2)),
            Some((2, 34))
        );
        assert_eq!(at(JsonPath::root().key("a").key("b").index(3)), None);
        assert_eq!(at(JsonPath::root().key("k.y")), Some((3, 10)));
        assert_eq!(at(JsonPath::root().key("é")), Some((4, 8)));
        assert_eq!(at(JsonPath::root().key("é").index(0)), None);
        // Duplicate key: the last one, whose value serde_json keeps.
        assert_eq!(at(JsonPath::root().key("d")), Some((5, 16)));
        assert_eq!(at(JsonPath::root().key("missing")), None);
    }
}
