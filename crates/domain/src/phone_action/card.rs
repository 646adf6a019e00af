//! The card the phone shows the person for a `phone_action` call that passed the checks, which is
//! also the action the phone receives (`phone-actions.md` §2, last paragraph), and each field's
//! value in words.
//!
//! Why a module of its own: the card is what the person sees and confirms on the phone;
//! Switchboard mirrors it in the Confirmations view.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use ts_rs::TS;

/// One field on the card: its name, its value as the model gave it (strings trimmed), and the
/// value in words for display.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
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
pub(super) fn display(field: &str, v: &Value) -> String {
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
