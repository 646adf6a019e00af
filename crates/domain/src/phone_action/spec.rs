//! The spec table of `phone_action`: the 16 actions, their fields and required entries, the value
//! descriptions, the enumerations and the texts (`phone-actions.md` §1–§3, our reading of
//! `loop.json` `phone`; see the parent module doc for what the table chooses where the spec is
//! silent).
//!
//! Why a module of its own: every rule and text the tool uses lives in one table ([`PHONE`]);
//! the checks, the card and the answer only read it.

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

/// Our reading of `loop.json` `phone` (see the [`crate::phone_action`] doc): every number, list
/// and text the `phone_action` tool uses.
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
/// `tools/phone_action.json` (spec `phone-actions.md`; see the [`crate::phone_action`] doc).
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

/// Fills `{{key}}` placeholders of a table text with their values, in order.
pub(super) fn fill(template: &str, pairs: &[(&str, &str)]) -> String {
    pairs.iter().fold(template.to_string(), |acc, (k, v)| {
        acc.replace(&format!("{{{{{k}}}}}"), v)
    })
}
