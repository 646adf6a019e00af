//! The checks a `phone_action` call passes before its card is put to the person
//! (`phone-actions.md` §2: unknown action, missing required entries, each field's value check in
//! `phone.check` order), and the refusal the server gives when one fails.
//!
//! Why a module of its own: the checks are the server's gate; keeping them apart from the card's
//! display and the answer's texts keeps the order of §2 readable in one place.

use serde::Serialize;
use serde_json::{Map, Value};
use ts_rs::TS;

use super::card::{display, CardField, PhoneActionCard};
use super::spec::{action_names, action_spec, checked_fields, enum_values, fill, what, PHONE};

/// A refused call: the call's result text, and what was wrong. This module's error type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
#[ts(export)]
pub enum Refusal {
    /// `action` is not one of the 16 (spec §2.1).
    #[error("{text}")]
    UnknownAction {
        /// What the call gave as `action`, when it was a string.
        given: Option<String>,
        /// `texts.unknown_action` filled in.
        text: String,
    },
    /// Required entries are missing (spec §2.2).
    #[error("{text}")]
    Missing {
        /// The action.
        action: String,
        /// Each missing entry as the text names it (`subject or body`).
        missing: Vec<String>,
        /// `texts.missing` filled in.
        text: String,
    },
    /// A field's value is not what it should be (spec §2.3); the first such field only.
    #[error("{text}")]
    Bad {
        /// The action.
        action: String,
        /// The field.
        field: String,
        /// `texts.bad` filled in.
        text: String,
    },
}

impl Refusal {
    /// The refusal text the server gives as the call's result.
    pub fn text(&self) -> &str {
        match self {
            Self::UnknownAction { text, .. }
            | Self::Missing { text, .. }
            | Self::Bad { text, .. } => text,
        }
    }
}

/// Trims every string in `v`, at every depth.
fn trimmed(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(s.trim().to_string()),
        Value::Array(items) => Value::Array(items.iter().map(trimmed).collect()),
        Value::Object(obj) => {
            Value::Object(obj.iter().map(|(k, v)| (k.clone(), trimmed(v))).collect())
        }
        other => other.clone(),
    }
}

/// Present: not null, not an empty string (after trimming), not an empty list or object
/// (spec §2.2).
fn is_present(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) => !s.trim().is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
        Some(_) => true,
    }
}

/// Checks a `phone_action` call (its arguments object) in the spec's order and returns the card
/// the phone would show, or the refusal the server gives (spec §2):
/// 1. `action` not one of the 16: [`Refusal::UnknownAction`];
/// 2. required entries missing (all of them, in order): [`Refusal::Missing`];
/// 3. the first present field, in `phone.check` order, whose value is wrong: [`Refusal::Bad`].
///
/// Fields the action does not read are dropped; strings are trimmed; an empty summary becomes
/// the action's name. Never panics on any input.
pub fn check_call(call: &Value) -> Result<PhoneActionCard, Refusal> {
    let empty = Map::new();
    let obj = call.as_object().unwrap_or(&empty);
    let given = obj.get("action").and_then(Value::as_str).map(str::trim);
    let Some(spec) = given.and_then(action_spec) else {
        return Err(Refusal::UnknownAction {
            given: given.map(str::to_string),
            text: fill(
                PHONE.texts.unknown_action,
                &[("actions", &action_names().join(", "))],
            ),
        });
    };
    let missing: Vec<String> = spec
        .required
        .iter()
        .filter(|group| !group.iter().any(|f| is_present(obj.get(*f))))
        .map(|group| group.join(" or "))
        .collect();
    if !missing.is_empty() {
        return Err(Refusal::Missing {
            action: spec.name.to_string(),
            text: fill(
                PHONE.texts.missing,
                &[("action", spec.name), ("fields", &missing.join(" and "))],
            ),
            missing,
        });
    }
    for field in checked_fields(spec) {
        let Some(value) = obj.get(field).filter(|v| is_present(Some(v))) else {
            continue;
        };
        if !value_ok(field, &trimmed(value)) {
            return Err(Refusal::Bad {
                action: spec.name.to_string(),
                field: field.to_string(),
                text: fill(PHONE.texts.bad, &[("field", field), ("what", &what(field))]),
            });
        }
    }
    let summary = obj
        .get("summary")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or(spec.name)
        .to_string();
    let fields = spec
        .fields
        .iter()
        .filter_map(|f| {
            let v = obj.get(*f).filter(|v| is_present(Some(v)))?;
            let value = trimmed(v);
            Some(CardField {
                name: (*f).to_string(),
                display: display(f, &value),
                value,
            })
        })
        .collect();
    Ok(PhoneActionCard {
        action: spec.name.to_string(),
        summary,
        fields,
    })
}

/// The refusal text the server gives for `call` (spec §2), or `None` when the call passes and
/// its card is put to the person.
pub fn refusal_text(call: &Value) -> Option<String> {
    check_call(call).err().map(|r| r.text().to_string())
}

fn digits(s: &str, n: usize) -> bool {
    s.len() == n && s.bytes().all(|b| b.is_ascii_digit())
}

fn is_time(s: &str) -> bool {
    let Some((h, m)) = s.split_once(':') else {
        return false;
    };
    digits(h, 2)
        && digits(m, 2)
        && h.parse::<u8>().is_ok_and(|h| h <= 23)
        && m.parse::<u8>().is_ok_and(|m| m <= 59)
}

fn is_date(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    matches!(parts.as_slice(), [y, m, d] if digits(y, 4) && digits(m, 2) && digits(d, 2))
}

fn is_date_or_datetime(s: &str) -> bool {
    match s.split_once('T') {
        None => is_date(s),
        Some((d, t)) => {
            is_date(d) && matches!(t.split_once(':'), Some((h, m)) if digits(h, 2) && digits(m, 2))
        }
    }
}

fn is_number(s: &str) -> bool {
    s.chars().filter(char::is_ascii_digit).count() >= 3
        && s.chars()
            .all(|c| c.is_ascii_digit() || " +()-./#*".contains(c))
}

fn non_empty_str(v: Option<&Value>) -> bool {
    v.and_then(Value::as_str)
        .is_some_and(|s| !s.trim().is_empty())
}

fn is_place(v: &Value) -> bool {
    let Some(o) = v.as_object() else {
        return false;
    };
    let coord = |k: &str, max: f64| {
        o.get(k)
            .and_then(Value::as_f64)
            .is_some_and(|x| (-max..=max).contains(&x))
    };
    (coord("lat", 90.0) && coord("lon", 180.0))
        || non_empty_str(o.get("query"))
        || non_empty_str(o.get("name"))
}

fn is_seconds(v: &Value) -> bool {
    let Value::Number(n) = v else {
        return false; // a boolean, a string "60": never seconds
    };
    let whole = n.as_i64().or_else(|| {
        n.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 1e12)
            .map(|f| f as i64)
    });
    whole.is_some_and(|s| (1..=86_400).contains(&s))
}

/// The value check of spec §2.3 for `field` (value already trimmed).
fn value_ok(field: &str, v: &Value) -> bool {
    match field {
        "time" => v.as_str().is_some_and(is_time),
        "days" => v.as_array().is_some_and(|days| {
            days.iter().all(|d| {
                d.as_str()
                    .is_some_and(|d| ["mon", "tue", "wed", "thu", "fri", "sat", "sun"].contains(&d))
            })
        }),
        "seconds" => is_seconds(v),
        "start" | "end" => v.as_str().is_some_and(is_date_or_datetime),
        "to" | "cc" => v
            .as_array()
            .is_some_and(|xs| xs.iter().all(|x| non_empty_str(Some(x)))),
        "number" => v.as_str().is_some_and(is_number),
        "destination" | "stop" => is_place(v),
        "stops" => v.as_array().is_some_and(|xs| xs.iter().all(is_place)),
        "mode" | "near" | "command" | "panel" => {
            let values = enum_values(field).unwrap_or(&[]);
            v.as_str().is_some_and(|s| values.contains(&s))
        }
        "url" => v.as_str().is_some_and(|s| {
            let lower = s.to_ascii_lowercase();
            ["http://", "https://"]
                .iter()
                .any(|p| lower.starts_with(p) && s.len() > p.len())
        }),
        "on" => v.is_boolean(),
        "values" => v
            .as_object()
            .is_some_and(|o| o.values().all(Value::is_string)),
        _ => true,
    }
}
