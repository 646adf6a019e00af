//! JSON text exactly as JavaScript writes it.
//!
//! Two outputs are pinned to JavaScript byte for byte:
//! - [`stringify`]: `JSON.stringify(value)`: key order as received (array-index keys such as
//!   `"2"` first, as JavaScript enumerates them; see [`js_key_order`]), no whitespace. Used for a
//!   phone line's `manifestHash` (`phone-line.md`, "Discovery and pairing";
//!   `phoneline-pairings.json`).
//! - [`canonical`]: ifp/1 canonical JSON: the same, but object keys sorted by UTF-16 code unit at
//!   every depth (`ifp1-notes.md`, "params_hash").
//!
//! Strings are written raw (UTF-8, not `\u`-escaped) except `"`, `\`, and control characters
//! below U+0020 (`\b \f \n \r \t` by name, the rest as `\u00xx` in lowercase hex), as
//! `JSON.stringify` does. Numbers follow JavaScript's `Number.prototype.toString`: integers
//! beyond 2^53 and all fractions go through `f64` (so `1.0` is `1`, `1e21` is `1e+21`,
//! `0.000001` is `0.000001` and `1e-7` is `1e-7`).
//!
//! Objects must keep the order they were read in: this crate enables serde_json's
//! `preserve_order` feature, so a [`serde_json::Value`] parsed from text keeps its key order.
//!
//! The inverse question, whether a text already is what [`stringify`] writes
//! ([`is_stringify_form`]), is answered in `form`.

use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha256};

/// `JSON.stringify(value)` with no indentation: keys in the order the map holds them.
pub fn stringify(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, false);
    out
}

/// ifp/1 canonical JSON: like [`stringify`] but with object keys sorted by UTF-16 code unit at
/// every depth.
pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, true);
    out
}

/// Lowercase hex SHA-256 of `text`'s UTF-8 bytes (64 characters).
pub fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

fn write_value(out: &mut String, value: &Value, sorted: bool) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item, sorted);
            }
            out.push(']');
        }
        Value::Object(map) => write_object(out, map, sorted),
    }
}

fn write_object(out: &mut String, map: &Map<String, Value>, sorted: bool) {
    let entries: Vec<(&String, &Value)> = if sorted {
        let mut entries: Vec<(&String, &Value)> = map.iter().collect();
        entries.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
        entries
    } else {
        js_key_order(map)
    };
    out.push('{');
    for (i, (key, item)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(out, key);
        out.push(':');
        write_value(out, item, sorted);
    }
    out.push('}');
}

/// The entries of `map` in the order JavaScript enumerates an object's own keys
/// (ECMA-262 OrdinaryOwnPropertyKeys): first the keys that are array indices (`"0"`, `"7"`,
/// `"4294967294"`: canonical decimal integers below 2^32 - 1) in ascending numeric order, then
/// every other key in the order it was inserted (read). `JSON.parse` followed by
/// `JSON.stringify` therefore moves `{"b":1,"2":1}` to `{"2":1,"b":1}`.
pub fn js_key_order(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut indices: Vec<(u32, &String, &Value)> = Vec::new();
    let mut names: Vec<(&String, &Value)> = Vec::new();
    for (key, value) in map {
        match array_index(key) {
            Some(i) => indices.push((i, key, value)),
            None => names.push((key, value)),
        }
    }
    indices.sort_by_key(|(i, _, _)| *i);
    indices
        .into_iter()
        .map(|(_, k, v)| (k, v))
        .chain(names)
        .collect()
}

/// `Some(n)` when `key` is an ECMAScript array index: `ToString(ToUint32(key)) == key` and the
/// value is below 2^32 - 1.
fn array_index(key: &str) -> Option<u32> {
    if key.is_empty() || key.len() > 10 || !key.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if key.len() > 1 && key.starts_with('0') {
        return None;
    }
    let n: u64 = key.parse().ok()?;
    if n < u64::from(u32::MAX) {
        u32::try_from(n).ok()
    } else {
        None
    }
}

/// Writes `s` as a JSON string literal the way `JSON.stringify` does.
pub fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

const MAX_SAFE: u64 = 1 << 53;

fn write_number(out: &mut String, n: &Number) {
    if let Some(u) = n.as_u64() {
        if u <= MAX_SAFE {
            out.push_str(&u.to_string());
            return;
        }
    } else if let Some(i) = n.as_i64() {
        if i.unsigned_abs() <= MAX_SAFE {
            out.push_str(&i.to_string());
            return;
        }
    }
    match n.as_f64() {
        Some(f) => out.push_str(js_number_in(&mut ryu_js::Buffer::new(), f)),
        None => out.push_str("null"),
    }
}

/// Formats `f` as JavaScript's `Number.prototype.toString()` does (ECMA-262 Number::toString,
/// via the `ryu-js` crate): shortest round-trip digits; plain notation for decimal exponents from
/// -6 to 20, exponent notation (`1e+21`, `1.5e-7`) outside; `-0` is `0`. NaN and infinities are
/// `null`, as in `JSON.stringify`.
pub fn js_number(f: f64) -> String {
    let mut buf = ryu_js::Buffer::new();
    js_number_in(&mut buf, f).to_string()
}

/// [`js_number`] written into `buf` (no allocation).
fn js_number_in(buf: &mut ryu_js::Buffer, f: f64) -> &str {
    if f.is_finite() {
        buf.format_finite(f)
    } else {
        "null"
    }
}

mod form;

pub use form::{is_stringify_form, is_stringify_form_within, string_special, stringify_form_end};

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The hand-written formatter `ryu-js` replaced, kept as the reference it must match.
    #[allow(clippy::cast_possible_truncation)]
    fn legacy_js_number(f: f64) -> String {
        if !f.is_finite() {
            return "null".to_string();
        }
        if f == 0.0 {
            return "0".to_string();
        }
        let sign = if f < 0.0 { "-" } else { "" };
        // Rust's `{:e}` gives the shortest round-trip digits: "d.ddde-7" or "de21".
        let sci = format!("{:e}", f.abs());
        let (mantissa, exp) = match sci.split_once('e') {
            Some(parts) => parts,
            None => return format!("{f}"),
        };
        let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
        let exp: i32 = exp.parse().unwrap_or(0);
        let k = digits.len() as i32; // number of significant digits
        let n = exp + 1; // value = 0.digits * 10^n
        let body = if k <= n && n <= 21 {
            format!("{digits}{}", "0".repeat((n - k) as usize))
        } else if 0 < n && n <= 21 {
            format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
        } else if -6 < n && n <= 0 {
            format!("0.{}{digits}", "0".repeat((-n) as usize))
        } else {
            let e = n - 1;
            let e_sign = if e < 0 { '-' } else { '+' };
            if k == 1 {
                format!("{digits}e{e_sign}{}", e.abs())
            } else {
                format!("{}.{}e{e_sign}{}", &digits[..1], &digits[1..], e.abs())
            }
        };
        format!("{sign}{body}")
    }

    fn parse(text: &str) -> Value {
        serde_json::from_str(text).unwrap_or(Value::Null)
    }

    #[test]
    fn numbers_follow_javascript() {
        let cases = [
            (1.0, "1"),
            (-0.0, "0"),
            (0.5, "0.5"),
            (123.456, "123.456"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (1.5e-7, "1.5e-7"),
            (0.000001, "0.000001"),
            (1e-7, "1e-7"),
            (-2.5e300, "-2.5e+300"),
            (0.1 + 0.2, "0.30000000000000004"),
        ];
        for (f, want) in cases {
            assert_eq!(js_number(f), want, "for {f:?}");
        }
    }

    #[test]
    fn big_integers_lose_precision_as_in_javascript() {
        let v = parse("[12345678901234567890, 9007199254740993, -9007199254740992]");
        assert_eq!(
            stringify(&v),
            "[12345678901234567000,9007199254740992,-9007199254740992]"
        );
    }

    #[test]
    fn stringify_keeps_order_and_canonical_sorts_by_utf16() {
        // By UTF-16 code unit the emoji (high surrogate 0xD83D) sorts before U+FF21; by code
        // point U+FF21 would come first.
        let v = parse(r#"{"b":1,"a":{"z":[1.0,"é"],"y":null},"\uff21":1,"😀":2}"#);
        assert_eq!(
            stringify(&v),
            r#"{"b":1,"a":{"z":[1,"é"],"y":null},"Ａ":1,"😀":2}"#
        );
        assert_eq!(
            canonical(&v),
            r#"{"a":{"y":null,"z":[1,"é"]},"b":1,"😀":2,"Ａ":1}"#
        );
    }

    #[test]
    fn stringify_puts_array_index_keys_first_as_javascript_does() {
        // node: JSON.stringify(JSON.parse(text)) gives exactly this.
        let v = parse(
            r#"{"b":1,"2":1,"1":1,"4294967295":1,"4294967294":1,"01":1,"a":{"x":1,"x":2,"y":3}}"#,
        );
        assert_eq!(
            stringify(&v),
            r#"{"1":1,"2":1,"4294967294":1,"b":1,"4294967295":1,"01":1,"a":{"x":2,"y":3}}"#
        );
    }

    #[test]
    fn strings_escape_like_json_stringify() {
        let v = Value::String("q\"b\\\u{08}\u{0c}\n\r\t\u{01}\u{1f}\u{7f}/é".to_string());
        assert_eq!(
            stringify(&v),
            "\"q\\\"b\\\\\\b\\f\\n\\r\\t\\u0001\\u001f\u{7f}/é\""
        );
    }

    #[test]
    fn a_tie_takes_what_javascript_writes() {
        // 236281719448541.625 exactly: .62 and .63 are equally near; `String(x)` in Node 20
        // writes .62.
        assert_eq!(js_number(236_281_719_448_541.63), "236281719448541.62");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn numbers_match_the_hand_written_formatter(
            f in prop_oneof![
                any::<f64>(),
                (-1e6f64..1e6),
                (-1e-3f64..1e-3),
                any::<u64>().prop_map(f64::from_bits),
                (-400i32..400, 1u32..100_000).prop_map(|(e, m)| f64::from(m) * 10f64.powi(e)),
            ],
        ) {
            // They agree except where two shortest digit strings are equally near the value
            // (an exact tie): ECMAScript then takes the even last digit (ryu-js does; the old
            // formatter did not, see `a_tie_takes_what_javascript_writes`).
            let (new, old) = (js_number(f), legacy_js_number(f));
            if new != old {
                prop_assert!(f.is_finite(), "for {:?}: {} vs {}", f, new, old);
                prop_assert_eq!(new.parse::<f64>().ok(), Some(f), "for {:?}", f);
                prop_assert_eq!(old.parse::<f64>().ok(), Some(f), "for {:?}", f);
                prop_assert_eq!(new.len(), old.len(), "for {:?}", f);
            }
        }

    }
}
