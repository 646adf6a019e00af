//! Reading one field of a message and saying what was wrong with it: "missing and null are the
//! same" (`ifp1-notes.md`, "Envelope"), integers as JavaScript reads them, and the reason words
//! (`payload.params_hash: expected ..., got "abc"`) every refusal uses.
//!
//! Apart from the table of type rules ([`super`]) so the table reads as rules, not plumbing.

use serde_json::{Map, Value};

use super::Rejection;
use crate::ifp::envelope::Timestamp;

pub(super) fn optional<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

pub(super) fn required_str<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
) -> Result<&'a str, Rejection> {
    match optional(obj, key) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(expected(key, "a string", other)),
        None => Err(Rejection::invalid(format!("{key}: required"))),
    }
}

pub(super) fn optional_str<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
) -> Result<Option<&'a str>, Rejection> {
    match optional(obj, key) {
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(expected(key, "a string or null", other)),
        None => Ok(None),
    }
}

pub(super) fn required_in<'a>(
    obj: &'a Map<String, Value>,
    at: &str,
    key: &str,
    what: &str,
) -> Result<&'a Value, Rejection> {
    optional(obj, key).ok_or_else(|| Rejection::invalid(format!("{at}.{key}: required ({what})")))
}

pub(super) fn payload_field<'a>(
    p: &'a Map<String, Value>,
    key: &str,
    what: &str,
) -> Result<&'a Value, Rejection> {
    required_in(p, "payload", key, what)
}

pub(super) fn payload_str<'a>(p: &'a Map<String, Value>, key: &str) -> Result<&'a str, Rejection> {
    let v = payload_field(p, key, "a string")?;
    v.as_str()
        .ok_or_else(|| expected(&format!("payload.{key}"), "a string", v))
}

pub(super) fn payload_non_empty_str<'a>(
    p: &'a Map<String, Value>,
    key: &str,
    max_chars: usize,
) -> Result<&'a str, Rejection> {
    let s = payload_str(p, key)?;
    if s.is_empty() {
        return Err(Rejection::invalid(format!(
            "payload.{key}: expected a non-empty string"
        )));
    }
    if max_chars != usize::MAX && s.chars().count() > max_chars {
        return Err(Rejection::invalid(format!(
            "payload.{key}: longer than {max_chars} characters"
        )));
    }
    Ok(s)
}

pub(super) fn timestamp_field(field: &str, text: &str) -> Result<Timestamp, Rejection> {
    Timestamp::parse(text).map_err(|e| Rejection::invalid(format!("{field}: {e}")))
}

/// An integer as JavaScript sees it: `3`, `-1`, and `3.0` are integers, `3.5` is not.
pub(super) fn js_integer(v: &Value) -> Option<i128> {
    let n = v.as_number()?;
    if let Some(u) = n.as_u64() {
        return Some(i128::from(u));
    }
    if let Some(i) = n.as_i64() {
        return Some(i128::from(i));
    }
    let f = n.as_f64()?;
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e30 {
        Some(f as i128)
    } else {
        None
    }
}

pub(super) fn positive_integer(field: &str, v: &Value) -> Result<u64, Rejection> {
    match js_integer(v) {
        Some(i) if i >= 1 => {
            u64::try_from(i).map_err(|_| Rejection::invalid(format!("{field}: {i} is too large")))
        }
        _ => Err(expected(field, "an integer >= 1", v)),
    }
}

pub(super) fn non_negative_integer(field: &str, v: &Value) -> Result<u64, Rejection> {
    match js_integer(v) {
        Some(i) if i >= 0 => {
            u64::try_from(i).map_err(|_| Rejection::invalid(format!("{field}: {i} is too large")))
        }
        _ => Err(expected(field, "an integer >= 0", v)),
    }
}

/// A JSON value as a non-negative JavaScript integer (`3` and `3.0` are 3), else `None`.
pub fn js_u64(v: &Value) -> Option<u64> {
    js_integer(v).and_then(|i| u64::try_from(i).ok())
}

pub(super) fn check_pattern(
    field: &str,
    s: &str,
    ok: fn(&str) -> bool,
    pattern: &str,
) -> Result<(), Rejection> {
    if ok(s) {
        Ok(())
    } else {
        Err(Rejection::invalid(format!(
            "{field}: expected {pattern}, got {}",
            show_str(s)
        )))
    }
}

pub(super) fn expected(field: &str, what: &str, got: &Value) -> Rejection {
    Rejection::invalid(format!("{field}: expected {what}, got {}", show(got)))
}

pub(super) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A short one-line rendering of a value for reasons (at most ~40 characters).
pub(super) fn show(v: &Value) -> String {
    match v {
        Value::String(s) => show_str(s),
        Value::Array(_) | Value::Object(_) => kind_of(v).to_string(),
        other => truncate(&other.to_string()),
    }
}

pub(super) fn show_str(s: &str) -> String {
    truncate(&format!("{s:?}"))
}

pub(super) fn show_key(k: &str) -> String {
    let quoted = format!("{k:?}");
    truncate(&quoted)
}

pub(super) fn truncate(s: &str) -> String {
    const MAX: usize = 40;
    if s.chars().count() <= MAX {
        s.to_string()
    } else {
        let head: String = s.chars().take(MAX).collect();
        format!("{head}...")
    }
}
