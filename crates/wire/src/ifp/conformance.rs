//! Runs ifp/1 sequence files (the format of `corpus/ifp1/fixtures/sequences.json`) against a
//! fresh [`Receiver`] per scenario and compares each step with its expectation.
//!
//! Why: `switchboard ifp replay` and the conformance tests share one runner, so what the CLI
//! reports is what the tests prove. Format: either the whole file `{initial_state:
//! {home_generation}, scenarios: [{name, steps}]}` or one scenario `{name?, steps}`; each step is
//! `{give: <message>, expect: {verdict, error_class?, action_state?, stored?,
//! error_payload_includes?}}`. Only the fields an expectation names are compared (plus
//! `verdict`, always). "Now" for each step is the given message's `ts` ([`Receiver::receive_at_ts`]).

use std::fmt;

use serde_json::Value;

use super::error_class::ErrorClass;
use super::receiver::{ActionState, Outcome, Receiver, Verdict};

/// Home generation used when a file gives none (the corpus's `initial_state.home_generation`).
pub const DEFAULT_HOME_GENERATION: u64 = 3;

/// Why a sequence file could not be run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SequenceError {
    /// The document is neither `{scenarios: [...]}` nor `{steps: [...]}`.
    #[error("not an ifp/1 sequence file: expected an object with \"scenarios\" or \"steps\"")]
    NotASequence,
    /// A scenario or step is malformed.
    #[error("{at}: {what}")]
    Malformed {
        /// Where, e.g. `scenario "action_expiry" step 2`.
        at: String,
        /// What is wrong.
        what: String,
    },
}

/// One step's expectation, as the file states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expectation {
    /// Expected verdict.
    pub verdict: Verdict,
    /// Expected error class, if stated.
    pub error_class: Option<ErrorClass>,
    /// Expected action state, if stated.
    pub action_state: Option<ActionState>,
    /// Expected `stored`, if stated.
    pub stored: Option<bool>,
    /// Fields the answering `error` payload must include (e.g. `{current_generation: 3}`).
    pub error_payload_includes: serde_json::Map<String, Value>,
}

/// The result of one step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepReport {
    /// Scenario name (`scenario` when unnamed).
    pub scenario: String,
    /// 1-based step number.
    pub step: usize,
    /// What the file expects.
    pub expected: Expectation,
    /// What the receiver did.
    pub got: Outcome,
    /// One line per differing field (`error_class: expected stale_generation, got none`);
    /// empty when the step matches.
    pub mismatches: Vec<String>,
}

impl StepReport {
    /// True when the step matched its expectation.
    pub fn ok(&self) -> bool {
        self.mismatches.is_empty()
    }
}

impl fmt::Display for StepReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let got = describe(&self.got);
        if self.ok() {
            write!(f, "ok       {} step {}: {got}", self.scenario, self.step)
        } else {
            write!(
                f,
                "MISMATCH {} step {}: {}; got {got}",
                self.scenario,
                self.step,
                self.mismatches.join("; ")
            )
        }
    }
}

fn describe(o: &Outcome) -> String {
    let mut s = to_wire(&o.verdict);
    if let Some(c) = o.error_class {
        s.push(' ');
        s.push_str(c.as_str());
    }
    if let Some(st) = o.action_state {
        s.push_str(" state=");
        s.push_str(&to_wire(&st));
    }
    if let Some(r) = &o.reason {
        s.push_str(" (");
        s.push_str(r);
        s.push(')');
    }
    s
}

fn to_wire<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(e) => format!("<{e}>"),
    }
}

/// Runs a sequence document (whole file or one scenario) and reports every step.
///
/// Errors: [`SequenceError`] naming the scenario/step when the document is not in the corpus
/// format (a missing `give` or `expect`, an unknown verdict or class).
pub fn run_document(doc: &Value) -> Result<Vec<StepReport>, SequenceError> {
    let obj = doc.as_object().ok_or(SequenceError::NotASequence)?;
    let home = match obj
        .get("initial_state")
        .and_then(|s| s.get("home_generation"))
    {
        None => DEFAULT_HOME_GENERATION,
        Some(v) => super::validate::js_u64(v).ok_or_else(|| SequenceError::Malformed {
            at: "initial_state.home_generation".into(),
            what: format!("expected an integer >= 1, got {v}"),
        })?,
    };
    if let Some(scenarios) = obj.get("scenarios") {
        let list = scenarios
            .as_array()
            .ok_or_else(|| SequenceError::Malformed {
                at: "scenarios".into(),
                what: "expected an array".into(),
            })?;
        let mut out = Vec::new();
        for (i, sc) in list.iter().enumerate() {
            out.extend(run_scenario(sc, home, i + 1)?);
        }
        Ok(out)
    } else if obj.contains_key("steps") {
        run_scenario(doc, home, 1)
    } else {
        Err(SequenceError::NotASequence)
    }
}

/// Runs one scenario `{name?, steps}` against a fresh receiver with home generation `home`.
/// `index` (1-based) names an unnamed scenario.
pub fn run_scenario(
    scenario: &Value,
    home: u64,
    index: usize,
) -> Result<Vec<StepReport>, SequenceError> {
    let name = scenario
        .get("name")
        .and_then(Value::as_str)
        .map_or_else(|| format!("scenario#{index}"), str::to_string);
    let steps = scenario
        .get("steps")
        .and_then(Value::as_array)
        .ok_or_else(|| SequenceError::Malformed {
            at: format!("scenario {name:?}"),
            what: "expected \"steps\": [...]".into(),
        })?;
    let mut receiver = Receiver::new(home);
    let mut out = Vec::with_capacity(steps.len());
    for (i, step) in steps.iter().enumerate() {
        let at = format!("scenario {name:?} step {}", i + 1);
        let give = step.get("give").ok_or_else(|| SequenceError::Malformed {
            at: at.clone(),
            what: "missing \"give\"".into(),
        })?;
        let expect = step.get("expect").ok_or_else(|| SequenceError::Malformed {
            at: at.clone(),
            what: "missing \"expect\"".into(),
        })?;
        let expected = parse_expectation(expect, &at)?;
        let got = receiver.receive_value_at_ts(give);
        let mismatches = compare(&expected, &got);
        out.push(StepReport {
            scenario: name.clone(),
            step: i + 1,
            expected,
            got,
            mismatches,
        });
    }
    Ok(out)
}

fn parse_expectation(v: &Value, at: &str) -> Result<Expectation, SequenceError> {
    fn field<T: serde::de::DeserializeOwned>(
        v: &Value,
        key: &str,
        at: &str,
    ) -> Result<Option<T>, SequenceError> {
        match v.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(x) => {
                serde_json::from_value(x.clone())
                    .map(Some)
                    .map_err(|e| SequenceError::Malformed {
                        at: format!("{at} expect.{key}"),
                        what: e.to_string(),
                    })
            }
        }
    }
    let verdict: Option<String> = field(v, "verdict", at)?;
    let verdict = match verdict.as_deref() {
        Some("accepted") => Verdict::Accepted,
        Some("rejected") => Verdict::Rejected,
        Some("acknowledged_duplicate") => Verdict::AcknowledgedDuplicate,
        other => {
            return Err(SequenceError::Malformed {
                at: format!("{at} expect.verdict"),
                what: format!(
                    "expected accepted, rejected or acknowledged_duplicate, got {other:?}"
                ),
            })
        }
    };
    let action_state: Option<String> = field(v, "action_state", at)?;
    let action_state = match action_state.as_deref() {
        None => None,
        Some(s) => Some(parse_state(s).ok_or_else(|| SequenceError::Malformed {
            at: format!("{at} expect.action_state"),
            what: format!("unknown action state {s:?}"),
        })?),
    };
    Ok(Expectation {
        verdict,
        error_class: field(v, "error_class", at)?,
        action_state,
        stored: field(v, "stored", at)?,
        error_payload_includes: field(v, "error_payload_includes", at)?.unwrap_or_default(),
    })
}

fn parse_state(s: &str) -> Option<ActionState> {
    [
        ActionState::Requested,
        ActionState::Approved,
        ActionState::Executed,
        ActionState::Failed,
        ActionState::Rejected,
        ActionState::Cancelled,
        ActionState::Expired,
    ]
    .into_iter()
    .find(|st| to_wire(st) == s)
}

fn compare(e: &Expectation, got: &Outcome) -> Vec<String> {
    let mut out = Vec::new();
    let opt = |v: Option<String>| v.unwrap_or_else(|| "none".into());
    if e.verdict != got.verdict {
        out.push(format!(
            "verdict: expected {}, got {}",
            to_wire(&e.verdict),
            to_wire(&got.verdict)
        ));
    }
    if let Some(class) = e.error_class {
        if got.error_class != Some(class) {
            out.push(format!(
                "error_class: expected {class}, got {}",
                opt(got.error_class.map(|c| c.to_string()))
            ));
        }
    }
    if let Some(state) = e.action_state {
        if got.action_state != Some(state) {
            out.push(format!(
                "action_state: expected {}, got {}",
                to_wire(&state),
                opt(got.action_state.map(|s| to_wire(&s)))
            ));
        }
    }
    if let Some(stored) = e.stored {
        if got.stored != stored {
            out.push(format!("stored: expected {stored}, got {}", got.stored));
        }
    }
    if !e.error_payload_includes.is_empty() {
        let payload = got
            .error_message()
            .and_then(|m| match m {
                super::outgoing::OutgoingMessage::Error(p) => serde_json::to_value(p).ok(),
                _ => None,
            })
            .unwrap_or(Value::Null);
        for (k, want) in &e.error_payload_includes {
            let have = payload.get(k).cloned().unwrap_or(Value::Null);
            if &have != want {
                out.push(format!("error payload {k}: expected {want}, got {have}"));
            }
        }
    }
    out
}
