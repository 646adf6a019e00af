//! Scenarios: JSON Lines files of ifp/1 messages with relative times and placeholders, and the
//! resolver that turns them into frames to send.
//!
//! Why: a reference phone must be able to replay what a real phone would send — settings, dials,
//! proposals — at the recorded pace or as fast as allowed, repeatedly for load, with fresh ids on
//! every run and times relative to the moment it plays. Format and placeholders:
//! `docs/protocol.md`, "Scenarios" (this module is the reference).
//!
//! A line is `{"at_ms": <ms from the start, >= 0, non-decreasing>, "msg": {<ifp/1 message>}}`;
//! blank lines and lines starting with `#` are skipped. Placeholders are replaced in every string
//! of `msg`:
//! - `{{id:PREFIX:NAME}}` → `PREFIX_` + 16 hex characters, the same for the same `NAME` within one
//!   repetition of one run, different across runs and repetitions (`{{id:act:sms}}`);
//! - `{{ts}}`, `{{ts+N}}`, `{{ts-N}}` → the line's time ± `N` ms as RFC 3339 UTC with milliseconds;
//! - `{{ms}}`, `{{ms+N}}`, `{{ms-N}}` → the same as epoch milliseconds (a string that is only this
//!   placeholder becomes a JSON number);
//! - `{{device}}`, `{{entity}}` → the phone's device and entity ids;
//! - `{{params_hash}}` → in `action.propose`, the ifp/1 `params_hash` of its (resolved)
//!   `payload.params`; in other `action.*` messages, the hash of the proposal of the same
//!   `payload.action_id` in this repetition.
//!
//! Fields filled when absent: `ifp` (`"1"`), `id` (`msg_` + 20 hex), `ts` (the line's time),
//! `device`, `entity` (except on `pair.*`, `control.hello`, `error`); on `event.*` also
//! `generation` (1), `provenance` (`{sensor: "<device>:phoneline", captured_at: <ts>}`), `labels`
//! (`{consent: "product_operation", retention: "standard"}`), `payload.seq` (the next per
//! session) and `payload.dedup` (`<device>:<session>:<seq>`).

use std::collections::HashMap;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use switchboard_wire::ifp::{params_hash, Rejection};
use switchboard_wire::timefmt::rfc3339_ms;

mod placeholder;

pub use placeholder::PlaceholderError;
use placeholder::{check_placeholders, offset, parse_placeholder, Placeholder};

/// Errors reading a scenario.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScenarioError {
    /// A line is not a scenario line; `line` is 1-based.
    #[error("scenario line {line}: {problem}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        problem: String,
    },
    /// A line's message does not resolve (a placeholder, a field, or the ifp/1 message it
    /// makes); `line` is 1-based, 0 for an extra message ([`Resolver::extra_frame`]).
    #[error("scenario line {line}: {problem}")]
    Message {
        /// 1-based line number; 0 for an extra message.
        line: usize,
        /// What is wrong.
        #[source]
        problem: ResolveError,
    },
    /// The file has no message at all.
    #[error("the scenario has no messages")]
    Empty,
    /// The file could not be read.
    #[error("cannot read scenario {path}: {problem}")]
    Read {
        /// The path given.
        path: String,
        /// What the file system said.
        problem: String,
    },
}

/// Why a message of a scenario does not resolve into a frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResolveError {
    /// A placeholder that is not one of the documented forms.
    #[error(transparent)]
    Placeholder(#[from] PlaceholderError),
    /// `{{params_hash}}` in an `action.*` message whose `action_id` was not proposed before in
    /// this repetition.
    #[error(
        "payload.params_hash: {{{{params_hash}}}} names no earlier proposal of this action_id"
    )]
    NoProposal,
    /// `msg` did not stay an object (cannot happen with a parsed scenario; named anyway).
    #[error("msg: not an object")]
    NotAnObject,
    /// `msg.payload` is present and not an object.
    #[error("msg.payload: expected an object")]
    PayloadNotAnObject,
    /// The resolved message is not a valid ifp/1 message (the validator's refusal).
    #[error("resolves to an invalid ifp/1 message: {0}")]
    Invalid(Rejection),
}

/// One scenario line.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioLine {
    /// 1-based line number in the file (for errors).
    pub line: usize,
    /// Milliseconds from the start.
    pub at_ms: u64,
    /// The message template (placeholders unresolved).
    pub msg: Map<String, Value>,
}

/// A parsed scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    lines: Vec<ScenarioLine>,
}

impl Scenario {
    /// Parses JSON Lines text. Errors name the line: not JSON, not an object, `at_ms` missing,
    /// negative or going backwards, `msg` missing or not an object with a string `type`, or a
    /// placeholder that is not one of the documented forms.
    pub fn parse(text: &str) -> Result<Self, ScenarioError> {
        let mut lines = Vec::new();
        let mut last_at = 0u64;
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            let t = raw.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            let err = |problem: String| ScenarioError::Line { line: n, problem };
            let v: Value = serde_json::from_str(t).map_err(|e| err(format!("not JSON: {e}")))?;
            let Value::Object(mut obj) = v else {
                return Err(err("expected an object {\"at_ms\", \"msg\"}".into()));
            };
            let at_ms = obj
                .get("at_ms")
                .and_then(Value::as_u64)
                .ok_or_else(|| err("at_ms: expected a whole number of milliseconds >= 0".into()))?;
            if at_ms < last_at {
                return Err(err(format!(
                    "at_ms: {at_ms} is before the previous line's {last_at}; times never go back"
                )));
            }
            last_at = at_ms;
            let msg = match obj.remove("msg") {
                Some(Value::Object(m)) => m,
                _ => return Err(err("msg: expected an ifp/1 message object".into())),
            };
            if !msg.get("type").is_some_and(Value::is_string) {
                return Err(err("msg.type: expected the message type as a string".into()));
            }
            check_placeholders(&Value::Object(msg.clone())).map_err(|e| {
                ScenarioError::Message {
                    line: n,
                    problem: e.into(),
                }
            })?;
            lines.push(ScenarioLine {
                line: n,
                at_ms,
                msg,
            });
        }
        if lines.is_empty() {
            return Err(ScenarioError::Empty);
        }
        Ok(Scenario { lines })
    }

    /// Reads and parses a scenario file.
    pub fn load(path: &std::path::Path) -> Result<Self, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError::Read {
            path: path.display().to_string(),
            problem: e.to_string(),
        })?;
        Self::parse(&text)
    }

    /// The lines, in order.
    pub fn lines(&self) -> &[ScenarioLine] {
        &self.lines
    }

    /// Number of messages per repetition.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// Always false (a scenario has at least one message).
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The time of the last line, ms from the start.
    pub fn span_ms(&self) -> u64 {
        self.lines.last().map_or(0, |l| l.at_ms)
    }
}

/// Who the phone is on the wire (for `{{device}}`, `{{entity}}` and the filled fields).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sender {
    /// The phone's device id (`dev_...`).
    pub device: String,
    /// The phone's entity id (`ent_...`).
    pub entity: String,
}

/// One resolved frame, ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// Its message id.
    pub id: String,
    /// Its type.
    pub kind: String,
    /// Its time on the scenario's timeline, ms from the start of the run (repetitions follow
    /// each other).
    pub at_ms: u64,
    /// The JSON text.
    pub text: String,
}

/// Resolves a scenario into frames, `count` repetitions in a row (see the module docs).
#[derive(Debug)]
pub struct Resolver<'a> {
    scenario: &'a Scenario,
    sender: Sender,
    run: String,
    base_ms: u64,
    count: u64,
    rep: u64,
    index: usize,
    ids: HashMap<String, String>,
    hashes: HashMap<String, String>,
    seqs: HashMap<String, u64>,
    extra: u64,
}

/// Repetitions follow each other on the timeline with this gap after the last line.
pub const REPETITION_GAP_MS: u64 = 1000;

impl<'a> Resolver<'a> {
    /// A resolver for `count` (>= 1) repetitions; `run` seeds the ids (use a fresh random string
    /// per run, a fixed one to reproduce a run), `base_ms` is the epoch time of `at_ms` 0.
    pub fn new(
        scenario: &'a Scenario,
        sender: Sender,
        run: &str,
        base_ms: u64,
        count: u64,
    ) -> Self {
        Resolver {
            scenario,
            sender,
            run: run.to_string(),
            base_ms,
            count: count.max(1),
            rep: 0,
            index: 0,
            ids: HashMap::new(),
            hashes: HashMap::new(),
            seqs: HashMap::new(),
            extra: 0,
        }
    }

    /// Total frames this resolver gives.
    pub fn total(&self) -> u64 {
        self.count.saturating_mul(self.scenario.len() as u64)
    }

    fn rep_offset(&self) -> u64 {
        self.rep
            .saturating_mul(self.scenario.span_ms().saturating_add(REPETITION_GAP_MS))
    }

    fn hex16(&self, what: &str) -> String {
        let h = Sha256::digest(format!("{}|{}|{what}", self.run, self.rep).as_bytes());
        hex::encode(h).chars().take(16).collect()
    }

    /// The next frame, or `None` when every repetition is done.
    ///
    /// Errors: a placeholder or filled field that makes an invalid message (named with the
    /// scenario line).
    pub fn next_frame(&mut self) -> Option<Result<Frame, ScenarioError>> {
        if self.rep >= self.count {
            return None;
        }
        let line = self.scenario.lines.get(self.index)?;
        let at = self.rep_offset().saturating_add(line.at_ms);
        let msg = line.msg.clone();
        let n = line.line;
        let key = format!("line{n}");
        let out = self
            .resolve(msg, at, &key)
            .map_err(|problem| ScenarioError::Message { line: n, problem });
        self.index += 1;
        if self.index >= self.scenario.lines.len() {
            self.index = 0;
            self.rep += 1;
            self.ids.clear();
            self.hashes.clear();
        }
        Some(out)
    }

    /// Resolves an extra message (not from the scenario, e.g. a settings snapshot the desktop
    /// asked for) at `at_ms` on the timeline, with the same rules.
    pub fn extra_frame(
        &mut self,
        msg: Map<String, Value>,
        at_ms: u64,
    ) -> Result<Frame, ScenarioError> {
        self.extra += 1;
        let key = format!("extra{}", self.extra);
        self.resolve(msg, at_ms, &key)
            .map_err(|problem| ScenarioError::Message { line: 0, problem })
    }

    fn resolve(
        &mut self,
        msg: Map<String, Value>,
        at_ms: u64,
        key: &str,
    ) -> Result<Frame, ResolveError> {
        let now = self.base_ms.saturating_add(at_ms);
        let kind = msg
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let mut v = Value::Object(msg);
        self.substitute(&mut v, now, None)?;
        let Value::Object(mut m) = v else {
            return Err(ResolveError::NotAnObject);
        };
        // params_hash of a proposal, remembered by action id.
        if kind.starts_with("action.") {
            let action_id = m
                .get("payload")
                .and_then(|p| p.get("action_id"))
                .and_then(Value::as_str)
                .map(str::to_string);
            let wants = m
                .get("payload")
                .and_then(|p| p.get("params_hash"))
                .and_then(Value::as_str)
                == Some("{{params_hash}}");
            let hash = if kind == "action.propose" {
                let params = m
                    .get("payload")
                    .and_then(|p| p.get("params"))
                    .cloned()
                    .unwrap_or_else(|| Value::Object(Map::new()));
                let h = params_hash(&params);
                if let Some(a) = &action_id {
                    self.hashes.insert(a.clone(), h.clone());
                }
                Some(h)
            } else {
                action_id.as_ref().and_then(|a| self.hashes.get(a).cloned())
            };
            if wants {
                let h = hash.ok_or(ResolveError::NoProposal)?;
                if let Some(Value::Object(p)) = m.get_mut("payload") {
                    p.insert("params_hash".into(), Value::from(h));
                }
            }
        }
        let ts = rfc3339_ms(now);
        let id = match m.get("id").and_then(Value::as_str) {
            Some(id) => id.to_string(),
            None => format!("msg_{}", {
                let h = Sha256::digest(format!("{}|{}|{key}", self.run, self.rep).as_bytes());
                hex::encode(h).chars().take(20).collect::<String>()
            }),
        };
        let mut out = Map::new();
        out.insert(
            "ifp".into(),
            m.remove("ifp").unwrap_or_else(|| Value::from("1")),
        );
        out.insert("id".into(), Value::from(id.clone()));
        m.remove("id");
        out.insert(
            "ts".into(),
            m.remove("ts").unwrap_or_else(|| Value::from(ts.clone())),
        );
        out.insert("type".into(), Value::from(kind.clone()));
        m.remove("type");
        let entity_optional =
            kind.starts_with("pair.") || kind == "control.hello" || kind == "error";
        match m.remove("entity") {
            Some(e) => {
                out.insert("entity".into(), e);
            }
            None if !entity_optional => {
                out.insert("entity".into(), Value::from(self.sender.entity.clone()));
            }
            None => {}
        }
        let session = m.remove("session");
        let session_name = session.as_ref().and_then(Value::as_str).map(str::to_string);
        if let Some(s) = session {
            out.insert("session".into(), s);
        }
        out.insert(
            "device".into(),
            m.remove("device")
                .unwrap_or_else(|| Value::from(self.sender.device.clone())),
        );
        let is_event = kind.starts_with("event.");
        match m.remove("generation") {
            Some(g) => {
                out.insert("generation".into(), g);
            }
            None if is_event => {
                out.insert("generation".into(), Value::from(1));
            }
            None => {}
        }
        for k in ["parent", "correlation"] {
            if let Some(v) = m.remove(k) {
                out.insert(k.into(), v);
            }
        }
        match m.remove("provenance") {
            Some(p) => {
                out.insert("provenance".into(), p);
            }
            None if is_event => {
                out.insert(
                    "provenance".into(),
                    serde_json::json!({"sensor": format!("{}:phoneline", self.sender.device), "captured_at": ts}),
                );
            }
            None => {}
        }
        match m.remove("labels") {
            Some(l) => {
                out.insert("labels".into(), l);
            }
            None if is_event => {
                out.insert(
                    "labels".into(),
                    serde_json::json!({"consent": "product_operation", "retention": "standard"}),
                );
            }
            None => {}
        }
        let mut payload = match m.remove("payload") {
            Some(Value::Object(p)) => p,
            None => Map::new(),
            Some(_) => return Err(ResolveError::PayloadNotAnObject),
        };
        if is_event {
            let sess = session_name.unwrap_or_default();
            let counter = self.seqs.entry(sess.clone()).or_insert(0);
            let seq = match payload.get("seq").and_then(Value::as_u64) {
                Some(s) => s,
                None => {
                    let s = *counter;
                    payload.insert("seq".into(), Value::from(s));
                    s
                }
            };
            *counter = (*counter).max(seq.saturating_add(1));
            if !payload.contains_key("dedup") {
                payload.insert(
                    "dedup".into(),
                    Value::from(format!("{}:{sess}:{seq}", self.sender.device)),
                );
            }
        }
        out.insert("payload".into(), Value::Object(payload));
        if let Some(e) = m.remove("ext") {
            out.insert("ext".into(), e);
        }
        // Anything else is kept (the validator will refuse it, as it should).
        for (k, v) in m {
            out.insert(k, v);
        }
        let value = Value::Object(out);
        switchboard_wire::ifp::validate(&value).map_err(ResolveError::Invalid)?;
        Ok(Frame {
            id,
            kind,
            at_ms,
            text: switchboard_wire::js_json::stringify(&value),
        })
    }

    fn substitute(
        &mut self,
        v: &mut Value,
        now: u64,
        _parent: Option<&str>,
    ) -> Result<(), PlaceholderError> {
        match v {
            Value::String(s) if s.contains("{{") => {
                *v = self.fill(s, now)?;
            }
            Value::Array(items) => {
                for it in items {
                    self.substitute(it, now, None)?;
                }
            }
            Value::Object(m) => {
                for (_, it) in m.iter_mut() {
                    self.substitute(it, now, None)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Replaces the placeholders of one string; a string that is only `{{ms...}}` becomes a number.
    fn fill(&mut self, s: &str, now: u64) -> Result<Value, PlaceholderError> {
        let mut out = String::new();
        let mut rest = s;
        let mut only_number: Option<u64> = None;
        let mut pieces = 0;
        while let Some(start) = rest.find("{{") {
            out.push_str(&rest[..start]);
            if start > 0 {
                pieces += 1;
            }
            let after = &rest[start + 2..];
            let end = after
                .find("}}")
                .ok_or_else(|| PlaceholderError::Unclosed(s.to_string()))?;
            let name = &after[..end];
            pieces += 1;
            match parse_placeholder(name)? {
                Placeholder::Id(prefix, what) => {
                    let key = format!("{prefix}:{what}");
                    let val = match self.ids.get(&key) {
                        Some(v) => v.clone(),
                        None => {
                            let v = format!("{prefix}_{}", self.hex16(&key));
                            self.ids.insert(key, v.clone());
                            v
                        }
                    };
                    out.push_str(&val);
                }
                Placeholder::Ts(off) => out.push_str(&rfc3339_ms(offset(now, off))),
                Placeholder::Ms(off) => {
                    let ms = offset(now, off);
                    only_number = Some(ms);
                    out.push_str(&ms.to_string());
                }
                Placeholder::Device => out.push_str(&self.sender.device),
                Placeholder::Entity => out.push_str(&self.sender.entity),
                // Resolved after the whole message is known.
                Placeholder::ParamsHash => out.push_str("{{params_hash}}"),
            }
            rest = &after[end + 2..];
        }
        if !rest.is_empty() {
            pieces += 1;
        }
        out.push_str(rest);
        if pieces == 1 {
            if let Some(ms) = only_number {
                return Ok(Value::from(ms));
            }
        }
        Ok(Value::from(out))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn sender() -> Sender {
        Sender {
            device: "dev_phone0001".into(),
            entity: "ent_phone0001".into(),
        }
    }

    #[test]
    fn placeholders_resolve_and_fill_fields() {
        let text = r#"
# a comment
{"at_ms": 0, "msg": {"type": "event.runtime.autonomy", "session": "{{id:ses:rt}}", "payload": {"autonomy": "observe_only"}}}
{"at_ms": 1500, "msg": {"type": "action.propose", "session": "{{id:ses:rt}}", "payload": {"action_id": "{{id:act:a}}", "tool": "calendar.add", "params": {"start_at": "{{ms+1000}}"}, "params_hash": "{{params_hash}}", "risk": "medium", "idempotency_key": "k_{{id:k:a}}", "expires_at": "{{ts+60000}}"}}}
{"at_ms": 2000, "msg": {"type": "action.approve", "session": "{{id:ses:rt}}", "generation": 1, "payload": {"action_id": "{{id:act:a}}", "params_hash": "{{params_hash}}", "confirmation": {"mode": "user_confirmed"}}}}
"#;
        let sc = Scenario::parse(text).unwrap();
        let mut r = Resolver::new(&sc, sender(), "run1", 1_784_595_600_000, 2);
        assert_eq!(r.total(), 6);
        let frames: Vec<Frame> = std::iter::from_fn(|| r.next_frame())
            .map(Result::unwrap)
            .collect();
        assert_eq!(frames.len(), 6);
        let v: Vec<Value> = frames
            .iter()
            .map(|f| serde_json::from_str(&f.text).unwrap())
            .collect();
        assert_eq!(v[0]["payload"]["seq"], 0);
        assert_eq!(v[0]["ts"], "2026-07-21T01:00:00.000Z");
        assert_eq!(v[0]["labels"]["retention"], "standard");
        assert_eq!(v[1]["payload"]["params"]["start_at"], 1_784_595_602_500u64);
        assert_eq!(v[1]["payload"]["expires_at"], "2026-07-21T01:01:01.500Z");
        let h = v[1]["payload"]["params_hash"].as_str().unwrap();
        assert!(h.starts_with("sha256:"));
        assert_eq!(
            v[2]["payload"]["params_hash"], h,
            "approve names the proposal's hash"
        );
        assert_eq!(v[1]["session"], v[0]["session"]);
        // The second repetition has fresh ids and follows on the timeline.
        assert_ne!(v[3]["session"], v[0]["session"]);
        assert_ne!(frames[3].id, frames[0].id);
        assert_eq!(frames[3].at_ms, 2000 + REPETITION_GAP_MS);
        // Same run seed, same frames.
        let mut again = Resolver::new(&sc, sender(), "run1", 1_784_595_600_000, 2);
        assert_eq!(again.next_frame().unwrap().unwrap(), frames[0]);
    }

    #[test]
    fn bad_lines_are_named() {
        let e = Scenario::parse("{\"at_ms\": 5, \"msg\": {\"type\": \"x.y\"}}\n{\"at_ms\": 1, \"msg\": {\"type\": \"x.y\"}}")
            .unwrap_err();
        assert!(e.to_string().starts_with("scenario line 2: at_ms"), "{e}");
        let e = Scenario::parse(
            "{\"at_ms\": 0, \"msg\": {\"type\": \"x.y\", \"payload\": {\"a\": \"{{when}}\"}}}",
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("unknown placeholder {{when}}"),
            "{e}"
        );
        assert_eq!(
            Scenario::parse("# nothing\n").unwrap_err(),
            ScenarioError::Empty
        );
        let e = Scenario::parse("[1]").unwrap_err();
        assert!(e.to_string().contains("line 1"), "{e}");
    }

    #[test]
    fn demo_scenario_resolves_to_valid_messages() {
        let sc = Scenario::parse(super::super::demo::DEMO_SCENARIO).unwrap();
        let mut r = Resolver::new(&sc, sender(), "demo", 1_784_595_600_000, 1);
        let mut n = 0;
        while let Some(f) = r.next_frame() {
            f.unwrap();
            n += 1;
        }
        assert_eq!(n, sc.len());
    }
}
