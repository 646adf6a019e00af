//! The placeholders of a scenario line (`{{id:PREFIX:NAME}}`, `{{ts±N}}`, `{{ms±N}}`,
//! `{{device}}`, `{{entity}}`, `{{params_hash}}`): reading one, and checking every string of a
//! message before anything is played.
//!
//! `docs/protocol.md`, "Scenarios". Apart from the resolver ([`super::Resolver`]) because a
//! scenario is checked for them when it is parsed, long before any frame is resolved.

use serde_json::Value;

/// A placeholder that is not one of the documented forms, named as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlaceholderError {
    /// `{{` without its `}}` in the string given.
    #[error("unclosed placeholder in {0:?}")]
    Unclosed(String),
    /// `{{id:...}}` without `PREFIX:NAME` (the placeholder's inside given).
    #[error("placeholder {{{{{0}}}}}: expected {{{{id:PREFIX:NAME}}}}")]
    IdShape(String),
    /// `{{id:PREFIX:NAME}}` with a prefix that is not lowercase letters or an empty name.
    #[error("placeholder {{{{{0}}}}}: PREFIX is lowercase letters (ses, act, dial...) and NAME is not empty")]
    IdParts(String),
    /// `{{ts...}}` or `{{ms...}}` followed by something other than `+N` or `-N`.
    #[error("placeholder {{{{{0}}}}}: expected +N or -N milliseconds")]
    OffsetShape(String),
    /// `{{ts±N}}` or `{{ms±N}}` whose `N` is not a number of milliseconds.
    #[error("placeholder {{{{{whole}}}}}: {digits:?} is not a number of milliseconds")]
    OffsetNumber {
        /// The placeholder's inside (`ts+abc`).
        whole: String,
        /// What stood where the number should be.
        digits: String,
    },
    /// None of the documented names.
    #[error("unknown placeholder {{{{{0}}}}} (known: id:PREFIX:NAME, ts, ts+N, ms, ms+N, device, entity, params_hash)")]
    Unknown(String),
}

/// One placeholder, read.
pub(super) enum Placeholder<'a> {
    /// `{{id:PREFIX:NAME}}`: prefix and name.
    Id(&'a str, &'a str),
    /// `{{ts±N}}`: the offset in ms.
    Ts(i64),
    /// `{{ms±N}}`: the offset in ms.
    Ms(i64),
    /// `{{device}}`.
    Device,
    /// `{{entity}}`.
    Entity,
    /// `{{params_hash}}`.
    ParamsHash,
}

/// `now` moved by `off` milliseconds, saturating at 0 and `u64::MAX`.
pub(super) fn offset(now: u64, off: i64) -> u64 {
    if off >= 0 {
        now.saturating_add(off.unsigned_abs())
    } else {
        now.saturating_sub(off.unsigned_abs())
    }
}

/// The `±N` after `ts` or `ms` (empty: 0), in ms; `whole` is the placeholder, for the error.
fn parse_offset(rest: &str, whole: &str) -> Result<i64, PlaceholderError> {
    if rest.is_empty() {
        return Ok(0);
    }
    let (sign, digits) = match rest.split_at(1) {
        ("+", d) => (1i64, d),
        ("-", d) => (-1i64, d),
        _ => return Err(PlaceholderError::OffsetShape(whole.to_string())),
    };
    let n: i64 = digits.parse().map_err(|_| PlaceholderError::OffsetNumber {
        whole: whole.to_string(),
        digits: digits.to_string(),
    })?;
    Ok(sign * n)
}

/// Reads the inside of one placeholder (`id:act:sms`, `ts+500`, `device`).
///
/// Errors: [`PlaceholderError`] naming it.
pub(super) fn parse_placeholder(name: &str) -> Result<Placeholder<'_>, PlaceholderError> {
    if let Some(rest) = name.strip_prefix("id:") {
        let (prefix, what) = rest
            .split_once(':')
            .ok_or_else(|| PlaceholderError::IdShape(name.to_string()))?;
        if prefix.is_empty() || !prefix.chars().all(|c| c.is_ascii_lowercase()) || what.is_empty() {
            return Err(PlaceholderError::IdParts(name.to_string()));
        }
        return Ok(Placeholder::Id(prefix, what));
    }
    if let Some(rest) = name.strip_prefix("ts") {
        return Ok(Placeholder::Ts(parse_offset(rest, name)?));
    }
    if let Some(rest) = name.strip_prefix("ms") {
        return Ok(Placeholder::Ms(parse_offset(rest, name)?));
    }
    match name {
        "device" => Ok(Placeholder::Device),
        "entity" => Ok(Placeholder::Entity),
        "params_hash" => Ok(Placeholder::ParamsHash),
        _ => Err(PlaceholderError::Unknown(name.to_string())),
    }
}

/// Checks every placeholder in every string of `v` (at any depth).
///
/// Errors: the first [`PlaceholderError`].
pub(super) fn check_placeholders(v: &Value) -> Result<(), PlaceholderError> {
    match v {
        Value::String(s) => {
            let mut rest = s.as_str();
            while let Some(start) = rest.find("{{") {
                let after = &rest[start + 2..];
                let end = after
                    .find("}}")
                    .ok_or_else(|| PlaceholderError::Unclosed(s.to_string()))?;
                parse_placeholder(&after[..end])?;
                rest = &after[end + 2..];
            }
            Ok(())
        }
        Value::Array(a) => a.iter().try_for_each(check_placeholders),
        Value::Object(m) => m.values().try_for_each(check_placeholders),
        _ => Ok(()),
    }
}
