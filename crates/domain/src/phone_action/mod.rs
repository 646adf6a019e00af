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
//!
//! ## Layout
//! - `spec`: the table ([`PHONE`], [`ActionSpec`], [`Texts`], [`PhoneTable`]) and its lookups;
//! - `checks`: [`check_call`], [`refusal_text`] and [`Refusal`];
//! - `card`: [`PhoneActionCard`] and [`CardField`];
//! - `answer`: [`outcome`], [`result_text`], [`PhoneActionOutcome`] and [`AnswerStatus`].

mod answer;
mod card;
mod checks;
mod spec;

pub use answer::{outcome, result_text, AnswerStatus, PhoneActionOutcome};
pub use card::{CardField, PhoneActionCard};
pub use checks::{check_call, refusal_text, Refusal};
pub use spec::{
    action_names, action_spec, checked_fields, enum_values, unavailable_text, what, ActionSpec,
    PhoneTable, Texts, MESSAGE_MAX_CHARS, PHONE, WAIT_SECONDS,
};
