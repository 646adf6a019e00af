//! The answer to a `phone_action` call: how it ended (done, declined, failed, no answer) and the
//! result text the model reads (`phone-actions.md` §3).
//!
//! Why a module of its own: the answer is what comes back from the phone; the Confirmations
//! mirror reads an ended `phone_action` proposal through [`outcome`].

use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

#[cfg(doc)]
use super::spec::WAIT_SECONDS;
use super::spec::{fill, MESSAGE_MAX_CHARS, PHONE};

/// How a `phone_action` call ended (spec §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
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
