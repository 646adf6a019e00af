//! # `phone_action`: the card a phone shows, the checks a call passes, the answer's text
//!
//! Why this exists: a chat's model can ask the person's phone to do something (set an alarm,
//! start a route, draft a message). The phone shows the person a card and does nothing until
//! they confirm it there. Switchboard mirrors that card and its outcome; it cannot confirm,
//! decline or cancel anything itself.
//!
//! Spec: `phone-actions.md` (Spec 3.6.0): §2 "A call" — the checks in order ([`check_call`]:
//! unknown action, missing required fields, each field's value check in `phone.check` order) and
//! the action the phone receives ([`PhoneActionCard`]); §3 "The answer" ([`outcome`],
//! [`result_text`]); §1 "Unavailable" ([`unavailable_text`]).
//!
//! ## Our reading of `loop.json` `phone`
//! The spec takes its texts and numbers from `loop.json` `phone` (`capability`, `actions`,
//! `fields`, `required`, `check`, `what`, `texts`, `wait_seconds`, `message_max_chars`) and the
//! enumerations from `tools/phone_action.json`. Neither file is in our corpus, and a search of
//! public code did not find them. [`PHONE`] is therefore our reading of the spec, in one table:
//! every rule the spec states is kept word for word where it gives words (`add_stop needs stop
//! and destination.`, the value rules of §2.3, `{{actions}}` joined with `, `, groups joined
//! with ` or `, entries with ` and `); where the spec gives no words or values (the wording of
//! the texts, the optional fields of each action, the enumerations, `wait_seconds`,
//! `message_max_chars`), the table chooses them and says so beside each.
//!
//! Further readings, where the spec is silent:
//! - `action` is compared after trimming (`" alarm "` is `alarm`); the comparison is exact
//!   otherwise (`Alarm` is unknown).
//! - Strings are trimmed before they are checked, at every depth (a list's strings, a place's
//!   `query`), and the card carries them trimmed ("strings trimmed").
//! - `seconds` accepts a JSON number with no fraction (`60.0` is `60`, as JavaScript has it).
//! - A place is good when any one of its three forms holds (lat and lon together in range, a
//!   non-empty `query`, a non-empty `name`).
//! - `start` / `end` are checked for their shape only (digits where the form has digits).
//! - A `summary` that is not a string counts as empty (the action's name is shown).
//! - The phone's `message` is trimmed, then cut at [`MESSAGE_MAX_CHARS`] characters (Unicode
//!   scalar values); a message empty after trimming is no message.

use serde::Serialize;
use serde_json::{Map, Value};
use ts_rs::TS;

/// One action of `phone.actions`: its name, the fields it reads (`phone.fields`, in card
/// order) and its required entries (`phone.required`: each entry a group of field names, present
/// when any one of them is).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActionSpec {
    /// The action's name (`add_stop`).
    pub name: &'static str,
    /// Fields the action reads; anything else in a call is dropped.
    pub fields: &'static [&'static str],
    /// Required entries, in order; a one-name entry is a plain field, a longer one a group.
    pub required: &'static [&'static [&'static str]],
}

/// The texts of `loop.json` `phone.texts` (our wording; placeholders `{{...}}` as the spec
/// names them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Texts {
    /// `texts.unknown_action`, with `{{actions}}` the action names joined with `, `.
    pub unknown_action: &'static str,
    /// `texts.missing`, with `{{action}}` and `{{fields}}` (entries joined with ` and `, a
    /// group's names with ` or `).
    pub missing: &'static str,
    /// `texts.bad`, with `{{field}}` and `{{what}}` (from `phone.what`).
    pub bad: &'static str,
    /// `texts.unavailable`: no phone to confirm on.
    pub unavailable: &'static str,
    /// `texts.done`.
    pub done: &'static str,
    /// `texts.declined`: tells the model not to try again unless asked.
    pub declined: &'static str,
    /// `texts.failed`.
    pub failed: &'static str,
    /// `texts.says`, with `{{message}}`: follows a status text after a blank line.
    pub says: &'static str,
    /// `texts.no_answer`: no answer in time.
    pub no_answer: &'static str,
}

/// Our reading of `loop.json` `phone` (see the module doc): every number, list and text the
/// `phone_action` tool uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhoneTable {
    /// `phone.capability`: what the app declares with each message (spec §1).
    pub capability: &'static str,
    /// `phone.wait_seconds`: how long the server waits for the phone's answer (our choice: 120).
    pub wait_seconds: u32,
    /// `phone.message_max_chars`: the phone's message is cut there (our choice: 500).
    pub message_max_chars: usize,
    /// `phone.actions` with their `fields` and `required`.
    pub actions: &'static [ActionSpec],
    /// `phone.check`: the order the value checks run in (the order of spec §2.3).
    pub check: &'static [&'static str],
    /// `phone.what`: what each checked field should be, for `texts.bad`. `{{values}}` is the
    /// field's enumeration joined with `, `.
    pub what: &'static [(&'static str, &'static str)],
    /// The enumerations of `tools/phone_action.json` (our choice of values).
    pub enums: &'static [(&'static str, &'static [&'static str])],
    /// `phone.texts`.
    pub texts: Texts,
}

/// The one table: our reading of `loop.json` `phone` and the enumerations of
/// `tools/phone_action.json` (spec `phone-actions.md`; see the module doc).
pub const PHONE: PhoneTable = PhoneTable {
    capability: "phone_actions",
    wait_seconds: 120,
    message_max_chars: 500,
    actions: &[
        ActionSpec { name: "alarm", fields: &["time", "days", "label"], required: &[&["time"]] },
        ActionSpec { name: "timer", fields: &["seconds", "label"], required: &[&["seconds"]] },
        ActionSpec {
            name: "calendar_event",
            fields: &["title", "start", "end", "location", "notes"],
            required: &[&["title"], &["start"]],
        },
        ActionSpec { name: "sms_draft", fields: &["to", "body"], required: &[&["to"], &["body"]] },
        ActionSpec {
            name: "email_draft",
            fields: &["to", "cc", "subject", "body"],
            required: &[&["to"], &["subject", "body"]],
        },
        ActionSpec { name: "dial", fields: &["number"], required: &[&["number"]] },
        ActionSpec {
            name: "navigate",
            fields: &["destination", "stops", "mode", "replace_route"],
            required: &[&["destination"]],
        },
        ActionSpec {
            name: "add_stop",
            fields: &["stop", "destination"],
            required: &[&["stop"], &["destination"]],
        },
        ActionSpec { name: "search_nearby", fields: &["query", "near"], required: &[&["query"]] },
        ActionSpec { name: "stop_navigation", fields: &[], required: &[] },
        ActionSpec { name: "open_app", fields: &["app"], required: &[&["app"]] },
        ActionSpec { name: "open_url", fields: &["url"], required: &[&["url"]] },
        ActionSpec { name: "media", fields: &["command"], required: &[&["command"]] },
        ActionSpec { name: "torch", fields: &["on"], required: &[&["on"]] },
        ActionSpec { name: "settings_panel", fields: &["panel"], required: &[&["panel"]] },
        ActionSpec {
            name: "automation_intent",
            fields: &["app", "name", "values"],
            required: &[&["name"]],
        },
    ],
    check: &[
        "time", "days", "seconds", "start", "end", "to", "cc", "number", "destination", "stop",
        "stops", "mode", "near", "command", "panel", "url", "on", "values",
    ],
    what: &[
        ("time", "a time as HH:MM, hours 00 to 23 and minutes 00 to 59"),
        ("days", "a list of days, each one of mon, tue, wed, thu, fri, sat, sun"),
        ("seconds", "a whole number of seconds from 1 to 86400"),
        ("start", "a date as YYYY-MM-DD, or a date and time as YYYY-MM-DDTHH:MM"),
        ("end", "a date as YYYY-MM-DD, or a date and time as YYYY-MM-DDTHH:MM"),
        ("to", "a list of recipients, each a non-empty string"),
        ("cc", "a list of recipients, each a non-empty string"),
        ("number", "a phone number: at least three digits, and nothing but digits, spaces and + ( ) - . / # *"),
        ("destination", "a place: numeric lat and lon together (lat -90 to 90, lon -180 to 180), a non-empty query, or a non-empty name"),
        ("stop", "a place: numeric lat and lon together (lat -90 to 90, lon -180 to 180), a non-empty query, or a non-empty name"),
        ("stops", "a list of places, each with numeric lat and lon together, a non-empty query, or a non-empty name"),
        ("mode", "one of {{values}}"),
        ("near", "one of {{values}}"),
        ("command", "one of {{values}}"),
        ("panel", "one of {{values}}"),
        ("url", "an address beginning http:// or https://"),
        ("on", "true or false"),
        ("values", "an object whose values are all strings"),
    ],
    enums: &[
        ("mode", &["drive", "walk", "bicycle", "transit"]),
        ("near", &["me", "route"]),
        ("command", &["play", "pause", "toggle", "next", "previous", "stop"]),
        (
            "panel",
            &[
                "internet", "wifi", "bluetooth", "nfc", "volume", "location", "airplane_mode",
                "do_not_disturb", "battery", "display",
            ],
        ),
    ],
    texts: Texts {
        unknown_action: "Unknown phone action. The actions are: {{actions}}.",
        missing: "{{action}} needs {{fields}}.",
        bad: "{{field}} must be {{what}}.",
        unavailable: "There is no phone to confirm on: this message was not sent from the LLeMbas app on a phone, so nothing was sent to any phone.",
        done: "Done: the person confirmed it on their phone, and the phone did it.",
        declined: "Declined: the person said no on their phone. Do not try again unless they ask.",
        failed: "Failed: the phone could not do it.",
        says: "The phone says: {{message}}",
        no_answer: "No answer from the phone in time; the card went away.",
    },
};

/// `phone.message_max_chars`: the phone's message is cut at this many characters (Unicode scalar
/// values) before it goes into the result (spec §3; the value is our reading, see [`PHONE`]).
pub const MESSAGE_MAX_CHARS: usize = PHONE.message_max_chars;

/// `phone.wait_seconds`: how long the server waits for the phone's answer (spec §3; our reading).
pub const WAIT_SECONDS: u32 = PHONE.wait_seconds;

/// The names of the 16 actions, in `phone.actions` order.
pub fn action_names() -> Vec<&'static str> {
    PHONE.actions.iter().map(|a| a.name).collect()
}

/// The spec of the action named `name`, if it is one.
pub fn action_spec(name: &str) -> Option<&'static ActionSpec> {
    PHONE.actions.iter().find(|a| a.name == name)
}

/// The fields `action` checks, in `phone.check` order (those it reads only).
pub fn checked_fields(action: &ActionSpec) -> Vec<&'static str> {
    PHONE
        .check
        .iter()
        .copied()
        .filter(|f| action.fields.contains(f))
        .collect()
}

/// The enumeration of a field (`mode`, `near`, `command`, `panel`), if it has one.
pub fn enum_values(field: &str) -> Option<&'static [&'static str]> {
    PHONE
        .enums
        .iter()
        .find(|(f, _)| *f == field)
        .map(|(_, v)| *v)
}

/// `phone.what` for a field, with its enumeration filled in; `a valid value` for a field the
/// table does not describe (none of the checked fields).
pub fn what(field: &str) -> String {
    let text = PHONE
        .what
        .iter()
        .find(|(f, _)| *f == field)
        .map(|(_, w)| *w)
        .unwrap_or("a valid value");
    match enum_values(field) {
        Some(values) => text.replace("{{values}}", &values.join(", ")),
        None => text.to_string(),
    }
}

/// `texts.unavailable`, word for word: the answer to a call when the message being answered was
/// not sent with the `phone_actions` capability, or nobody attends the chat (spec §1).
pub fn unavailable_text() -> &'static str {
    PHONE.texts.unavailable
}

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

/// One field on the card: its name, its value as the model gave it (strings trimmed), and the
/// value in words for display.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct CardField {
    /// The field's name (`destination`).
    pub name: String,
    /// The value sent to the phone (strings trimmed at every depth).
    pub value: Value,
    /// The value in words (`mon, fri`; a place by its name, query or `lat, lon`; `on`/`off`).
    pub display: String,
}

/// The card the phone shows for a `phone_action` call that passed the checks; also the action
/// the phone receives (spec §2, last paragraph): `action`, `summary` (trimmed; the action's name
/// when empty) and the action's fields that are present, in `phone.fields` order.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct PhoneActionCard {
    /// One of the 16 actions.
    pub action: String,
    /// The line the phone shows.
    pub summary: String,
    /// The fields the action reads that the call gave, in the action's field order.
    pub fields: Vec<CardField>,
}

impl PhoneActionCard {
    /// The action as the phone receives it: `{ "action", "summary", <fields...> }`.
    pub fn to_wire(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("action".into(), Value::String(self.action.clone()));
        obj.insert("summary".into(), Value::String(self.summary.clone()));
        for f in &self.fields {
            obj.insert(f.name.clone(), f.value.clone());
        }
        Value::Object(obj)
    }

    /// The value of field `name` on the card, if present.
    pub fn field(&self, name: &str) -> Option<&Value> {
        self.fields
            .iter()
            .find(|f| f.name == name)
            .map(|f| &f.value)
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

fn fill(template: &str, pairs: &[(&str, &str)]) -> String {
    pairs.iter().fold(template.to_string(), |acc, (k, v)| {
        acc.replace(&format!("{{{{{k}}}}}"), v)
    })
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

fn display_place(v: &Value) -> String {
    let o = v.as_object();
    let get = |k: &str| {
        o.and_then(|o| o.get(k))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    if let Some(name) = get("name") {
        return name.to_string();
    }
    if let Some(q) = get("query") {
        return q.to_string();
    }
    match (o.and_then(|o| o.get("lat")), o.and_then(|o| o.get("lon"))) {
        (Some(lat), Some(lon)) => format!("{lat}, {lon}"),
        _ => v.to_string(),
    }
}

/// A field's value in words for the card.
fn display(field: &str, v: &Value) -> String {
    match (field, v) {
        ("destination" | "stop", _) => display_place(v),
        ("stops", Value::Array(xs)) => xs.iter().map(display_place).collect::<Vec<_>>().join(" → "),
        ("on", Value::Bool(b)) => if *b { "on" } else { "off" }.to_string(),
        ("seconds", Value::Number(n)) => format!("{n} s"),
        (_, Value::String(s)) => s.clone(),
        (_, Value::Array(xs)) => xs
            .iter()
            .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string))
            .collect::<Vec<_>>()
            .join(", "),
        (_, Value::Object(o)) => o
            .iter()
            .map(|(k, x)| {
                format!(
                    "{k}: {}",
                    x.as_str().map_or_else(|| x.to_string(), str::to_string)
                )
            })
            .collect::<Vec<_>>()
            .join(", "),
        (_, Value::Bool(b)) => if *b { "yes" } else { "no" }.to_string(),
        (_, other) => other.to_string(),
    }
}

/// How a `phone_action` call ended (spec §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum AnswerStatus {
    /// The person confirmed and the phone did it.
    Done,
    /// The person said no; the model is told not to try again unless asked.
    Declined,
    /// The phone could not do it (also: a status the phone sent that is not known).
    Failed,
    /// No answer within [`WAIT_SECONDS`]; the card went away.
    NoAnswer,
}

/// The outcome of a `phone_action` call, as the UI mirrors it and the model reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct PhoneActionOutcome {
    /// Done, declined, failed or no answer.
    pub status: AnswerStatus,
    /// The phone's message, trimmed and cut at [`MESSAGE_MAX_CHARS`] characters; never with
    /// `no_answer`.
    pub message: Option<String>,
    /// Whether the phone's message was cut.
    pub message_cut: bool,
    /// The status string the phone sent when it was not one of `done`, `declined`, `failed`.
    pub unknown_status: Option<String>,
    /// True for `declined`: the model is told not to try again unless the person asks.
    pub do_not_retry: bool,
    /// The call's result text (what the model is given).
    pub text: String,
}

/// The outcome of a call from the phone's answer `{status, message?}`, or `None` when no answer
/// came within [`WAIT_SECONDS`] (spec §3). Anything the phone sends that is not a known status
/// (including no status, or an answer that is not an object) is `failed`; a `message` that is
/// not a string is ignored.
pub fn outcome(answer: Option<&Value>) -> PhoneActionOutcome {
    let Some(answer) = answer else {
        return PhoneActionOutcome {
            status: AnswerStatus::NoAnswer,
            message: None,
            message_cut: false,
            unknown_status: None,
            do_not_retry: false,
            text: PHONE.texts.no_answer.to_string(),
        };
    };
    let raw_status = answer.get("status").and_then(Value::as_str).map(str::trim);
    let (status, unknown_status) = match raw_status {
        Some("done") => (AnswerStatus::Done, None),
        Some("declined") => (AnswerStatus::Declined, None),
        Some("failed") => (AnswerStatus::Failed, None),
        other => (
            AnswerStatus::Failed,
            Some(match answer.get("status") {
                Some(Value::String(_)) => other.unwrap_or_default().to_string(),
                Some(v) => v.to_string(),
                None => String::new(),
            }),
        ),
    };
    let trimmed_message = answer
        .get("message")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|m| !m.is_empty());
    let message_cut = trimmed_message.is_some_and(|m| m.chars().count() > MESSAGE_MAX_CHARS);
    let message = trimmed_message.map(|m| m.chars().take(MESSAGE_MAX_CHARS).collect::<String>());
    let status_text = match status {
        AnswerStatus::Done => PHONE.texts.done,
        AnswerStatus::Declined => PHONE.texts.declined,
        AnswerStatus::Failed | AnswerStatus::NoAnswer => PHONE.texts.failed,
    };
    let text = match &message {
        Some(m) => format!(
            "{status_text}\n\n{}",
            fill(PHONE.texts.says, &[("message", m)])
        ),
        None => status_text.to_string(),
    };
    PhoneActionOutcome {
        status,
        message,
        message_cut,
        unknown_status,
        do_not_retry: status == AnswerStatus::Declined,
        text,
    }
}

/// The call's result text from the phone's answer, or `None` for no answer in time (spec §3):
/// the status's text, then, when there is a message, a blank line and `texts.says` with it.
pub fn result_text(answer: Option<&Value>) -> String {
    outcome(answer).text
}
