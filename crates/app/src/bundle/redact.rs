//! What a support bundle hides: values of dial requests and responses and of confirmation
//! parameters ([`redact_values`]: keys and shapes kept, every number, string and bool replaced
//! by a type marker), and anything in free text that looks like a secret ([`scrub_text`]).
//!
//! [`redact_values`] is the one redaction of dial values in the core; a redacted dial export
//! can converge on it.

use serde_json::Value;

/// The marker a redacted string becomes.
pub const STRING_MARKER: &str = "<string>";
/// The marker a redacted number becomes.
pub const NUMBER_MARKER: &str = "<number>";
/// The marker a redacted bool becomes.
pub const BOOL_MARKER: &str = "<bool>";

/// `value` with its shape kept and its values hidden: objects keep their keys in order, arrays
/// their length, `null` stays `null`; every string becomes [`STRING_MARKER`], every number
/// [`NUMBER_MARKER`], every bool [`BOOL_MARKER`].
pub fn redact_values(value: &Value) -> Value {
    match value {
        Value::Null => Value::Null,
        Value::Bool(_) => Value::String(BOOL_MARKER.into()),
        Value::Number(_) => Value::String(NUMBER_MARKER.into()),
        Value::String(_) => Value::String(STRING_MARKER.into()),
        Value::Array(items) => Value::Array(items.iter().map(redact_values).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), redact_values(v)))
                .collect(),
        ),
    }
}

/// Whether `value` is what [`redact_values`] makes: at least one marker, and every string in it
/// one of the three markers (no number or bool, which redaction turns into markers too; `null`
/// and empty containers allowed). A request the phone sent is never so: its `op` at least is a
/// real name. Lets a reader of a bundle's `dials.jsonl` tell that the values it would check
/// are gone.
pub fn is_redacted(value: &Value) -> bool {
    fn walk(v: &Value, markers: &mut usize) -> bool {
        match v {
            Value::Null => true,
            Value::Bool(_) | Value::Number(_) => false,
            Value::String(s) => {
                let marker = matches!(s.as_str(), STRING_MARKER | NUMBER_MARKER | BOOL_MARKER);
                *markers += usize::from(marker);
                marker
            }
            Value::Array(items) => items.iter().all(|i| walk(i, markers)),
            Value::Object(map) => map.values().all(|i| walk(i, markers)),
        }
    }
    let mut markers = 0;
    walk(value, &mut markers) && markers > 0
}

/// What a scrubbed secret is replaced with (`[redacted: <what>]`).
fn marker(what: &str) -> String {
    format!("[redacted: {what}]")
}

/// The shortest run of base64 / base64url characters treated as key material: 40 characters
/// (an Ed25519 key is 43 in unpadded base64url, a signature 86, a TLS exporter value 43).
pub const MIN_BASE64_RUN: usize = 40;

/// The shortest run of hex digits treated as key material or a proof: 32 (16 bytes; a SHA-256
/// is 64).
pub const MIN_HEX_RUN: usize = 32;

/// How far after the word `code` a pairing code is looked for, in bytes.
const CODE_WINDOW: usize = 32;

/// `text` with everything that looks like a secret replaced by `[redacted: ...]`:
///
/// - a PEM block (`-----BEGIN ...-----` to its `-----END ...-----`), whole;
/// - a pairing link `switchboard://pair?...`, up to the next space or quote;
/// - a pairing code: `ddd-ddd` anywhere (the code's shape, `123-456`), and six digits in a row
///   (or `ddd ddd`) within 32 bytes after the word `code` (any case: `code=`, `pairing_code`,
///   `verification code`);
/// - a run of at least [`MIN_HEX_RUN`] hex digits (keys, proofs, fingerprints, nonces);
/// - a run of at least [`MIN_BASE64_RUN`] base64 or base64url characters holding a digit or
///   mixing cases (keys, signatures, session proofs; long plain words are left alone).
///
/// Runs are whole tokens: a run is only replaced when the characters on either side are not
/// base64 characters.
pub fn scrub_text(text: &str) -> String {
    let text = scrub_pem(text);
    let text = scrub_pair_links(&text);
    let text = scrub_runs(&text);
    scrub_codes(&text)
}

fn scrub_pem(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("-----BEGIN ") {
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        // The end line: `-----END <label>-----`; without one, the rest of the text goes.
        let end = after.find("-----END ").and_then(|e| {
            let tail = &after[e + "-----END ".len()..];
            tail.find("-----")
                .map(|close| e + "-----END ".len() + close + "-----".len())
        });
        out.push_str(&marker("PEM block"));
        match end {
            Some(end) => rest = &after[end..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

fn scrub_pair_links(text: &str) -> String {
    const LINK: &str = "switchboard://pair";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = find_ascii_ci(rest, LINK) {
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        let end = after
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`'))
            .unwrap_or(after.len());
        out.push_str(&marker("pairing link"));
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Byte offset of `needle` (ASCII) in `hay`, ignoring ASCII case.
fn find_ascii_ci(hay: &str, needle: &str) -> Option<usize> {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    if n.is_empty() || h.len() < n.len() {
        return None;
    }
    (0..=h.len() - n.len()).find(|&i| h[i..i + n.len()].eq_ignore_ascii_case(n))
}

fn is_b64(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'-' | b'_')
}

/// Replaces each whole run of base64 characters (trailing `=` padding included) that
/// [`classify_run`] calls key material. `=` inside a token is a boundary, so `proof=<key>`
/// keeps `proof=`.
fn scrub_runs(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        if !is_b64(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && is_b64(b[i]) {
            i += 1;
        }
        let core_end = i;
        while i < b.len() && b[i] == b'=' && i - core_end < 2 {
            i += 1;
        }
        if let Some(what) = classify_run(&b[start..core_end]) {
            // Runs are ASCII, so `start` and `i` are char boundaries.
            out.push_str(&text[copied..start]);
            out.push_str(&marker(what));
            copied = i;
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// `hex` for at least [`MIN_HEX_RUN`] hex digits; `base64` for at least [`MIN_BASE64_RUN`]
/// characters mixing upper and lower case with a digit (or 43 and more without one: an
/// encoded 32-byte key); `None` otherwise (paths, long snake_case words).
fn classify_run(core: &[u8]) -> Option<&'static str> {
    if core.len() >= MIN_HEX_RUN && core.iter().all(u8::is_ascii_hexdigit) {
        return Some("hex");
    }
    if core.len() >= MIN_BASE64_RUN {
        let digit = core.iter().any(u8::is_ascii_digit);
        let upper = core.iter().any(u8::is_ascii_uppercase);
        let lower = core.iter().any(u8::is_ascii_lowercase);
        if upper && lower && (digit || core.len() >= 43) {
            return Some("base64");
        }
    }
    None
}

fn scrub_codes(text: &str) -> String {
    let b = text.as_bytes();
    let mut hide = vec![false; b.len()];
    let digit_at = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    let bounded = |start: usize, end: usize| (start == 0 || !digit_at(start - 1)) && !digit_at(end);
    // `ddd-ddd` anywhere (`ddd ddd` only after "code", below).
    for i in 0..b.len() {
        if i + 7 <= b.len()
            && (0..3).all(|k| digit_at(i + k))
            && b[i + 3] == b'-'
            && (4..7).all(|k| digit_at(i + k))
            && bounded(i, i + 7)
        {
            hide[i..i + 7].iter_mut().for_each(|h| *h = true);
        }
    }
    // Six digits (or `ddd ddd`) shortly after the word "code".
    let mut from = 0;
    while let Some(pos) = find_ascii_ci(&text[from..], "code") {
        let at = from + pos + 4;
        let window_end = (at + CODE_WINDOW).min(b.len());
        let mut j = at;
        while j < window_end {
            let six = j + 6 <= b.len() && (0..6).all(|k| digit_at(j + k)) && bounded(j, j + 6);
            let split = j + 7 <= b.len()
                && (0..3).all(|k| digit_at(j + k))
                && matches!(b[j + 3], b' ' | b'-')
                && (4..7).all(|k| digit_at(j + k))
                && bounded(j, j + 7);
            if six {
                hide[j..j + 6].iter_mut().for_each(|h| *h = true);
                j += 6;
            } else if split {
                hide[j..j + 7].iter_mut().for_each(|h| *h = true);
                j += 7;
            } else {
                j += 1;
            }
        }
        from = at;
    }
    if !hide.contains(&true) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if hide[i] {
            while i < b.len() && hide[i] {
                i += 1;
            }
            out.push_str(&marker("code"));
        } else {
            let start = i;
            while i < b.len() && !hide[i] {
                i += 1;
            }
            // Hidden spans are ASCII digits and `-`/` `, so these are char boundaries.
            out.push_str(&text[start..i]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn values_become_markers_and_shapes_stay() {
        let v = json!({"op": "read_item", "callId": "c-1", "args": {"path": "notes/x.md", "limit": 5,
            "deep": true, "tags": ["a", 2, null], "none": null}});
        let r = redact_values(&v);
        assert_eq!(
            r,
            json!({"op": "<string>", "callId": "<string>", "args": {"path": "<string>",
                "limit": "<number>", "deep": "<bool>", "tags": ["<string>", "<number>", null],
                "none": null}})
        );
        let keys: Vec<&String> = r["args"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["path", "limit", "deep", "tags", "none"]);
        assert!(is_redacted(&r));
        assert!(!is_redacted(&v), "the values the phone sent");
    }

    #[test]
    fn only_marker_values_count_as_redacted() {
        let manifest: Value = serde_json::from_str(
            &std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../../shared/corpus/lumiverse/lumirealm.describe.json"
            ))
            .unwrap(),
        )
        .unwrap();
        assert!(!is_redacted(&manifest));
        assert!(is_redacted(&redact_values(&manifest)));
        // A real value beside markers, a number, nothing to hide: not a redacted value.
        assert!(!is_redacted(&json!({"op": "<string>", "itemId": "m1"})));
        assert!(!is_redacted(&json!({"op": "<string>", "head": 5})));
        assert!(!is_redacted(&json!({})));
        assert!(!is_redacted(&json!(null)));
    }

    #[test]
    fn secrets_in_log_lines_are_scrubbed() {
        let key = "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG0";
        let hex = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
        let cases = [
            (
                "pairing window open, code 123-456, until 12:00".to_string(),
                "123-456",
            ),
            ("verification code: 482913".to_string(), "482913"),
            ("pairing_code=555 123 ok".to_string(), "555 123"),
            (
                "link switchboard://pair?addr=10.0.0.2&port=1&code=111222&fp=ab rest".to_string(),
                "addr=10.0.0.2",
            ),
            (format!("hello proof={key}"), key),
            (format!("\"proof\":\"{key}\""), key),
            (format!("fp {hex}."), hex),
            (
                "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----"
                    .to_string(),
                "MIGHAgEA",
            ),
        ];
        for (line, secret) in &cases {
            let s = scrub_text(line);
            assert!(!s.contains(secret), "{line:?} -> {s:?}");
            assert!(s.contains("[redacted: "), "{s:?}");
        }
        // What is not a secret stays.
        for plain in [
            "2026-12-01T14:26:54.123Z INFO switchboard_desktop: Switchboard starting",
            "dial d1 from dev_pixel_ada took 1234 ms",
            "error_code=42 at line 123",
            "phone_line_conformance_dial_checker_names_long_words",
        ] {
            assert_eq!(scrub_text(plain), plain);
        }
        // Text around a secret stays whole.
        assert_eq!(
            scrub_text(&format!("a proof={key} b")),
            "a proof=[redacted: base64] b"
        );
    }
}
