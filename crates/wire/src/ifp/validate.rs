//! The ifp/1 validator: one frame or JSON value in, an [`Envelope`] or a [`Rejection`] out.
//!
//! Why: everything a phone sends crosses this gate first; the receiver and the UI only ever see
//! messages that passed it. It implements `ifp1-notes.md`, "Envelope", "Error classes",
//! "Pairing and identity" and "Action lifecycle", and accepts or rejects exactly as the 26 cases
//! of `corpus/ifp1/fixtures/messages.json` say.
//!
//! Check order (the first failing rule decides the class and reason):
//! 1. the frame is at most [`MAX_FRAME_BYTES`] and is JSON (else `invalid_envelope`);
//! 2. the value is an object (else `invalid_envelope`);
//! 3. `ifp` is the string `"1"` (else `unsupported_version`; a missing `ifp` too);
//! 4. no top-level field outside [`ENVELOPE_FIELDS`];
//! 5. `id`, `ts`, `type`, `payload`, `ext`, `entity`, `session`, `device`, `generation`, `parent`,
//!    `correlation`, `provenance`, `labels`, each by its own rule;
//! 6. the type's envelope requirements (`event.*`: `session`, `generation`, `provenance`,
//!    `labels`; `action.propose`: `session`; `action.approve`/`action.result`: `generation`);
//! 7. the type's payload rules.
//!
//! Every failure after step 3 is `invalid_envelope`; the reason names the field
//! (`payload.params_hash: expected "sha256:" + 64 lowercase hex, got "abc"`). Unknown types pass
//! (steps 1-5 only). The validator never panics on any input (a proptest checks this).
//!
//! Choices where the notes do not pin a rule (documented here, tested in `tests/protocol/ifp_messages.rs` and the unit tests below):
//! - `parent` must look like a message `id`; `correlation` is any non-empty string.
//! - `provenance` and `labels` are checked whenever present, not only on events.
//! - `action_id`, `tool`, `idempotency_key` are non-empty strings of at most 128 characters.
//! - `generation` on `action.propose` is tolerated (the notes: "no generation" = not required).
//! - Integers follow JavaScript: `1.0` is the integer 1.
//!
//! This file is the table: the envelope fields and the per-type rules. Reading one field and
//! the words of a refusal live in `fields`, the identifier shapes in `patterns` (re-exported:
//! [`is_message_id`], ...), an event's `provenance` and `labels` in `provenance`.

use serde::Serialize;
use serde_json::{Map, Value};
use ts_rs::TS;

use super::envelope::{
    Envelope, ENTITY_OPTIONAL_TYPES, ENVELOPE_FIELDS, IFP_VERSION, MAX_FRAME_BYTES,
};
use super::error_class::ErrorClass;

/// Why a message was refused: its ifp/1 error class and a readable reason naming the field.
///
/// Serialises as `{ "class": "invalid_envelope", "reason": "payload.dedup: required ..." }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS, thiserror::Error)]
#[ts(export)]
#[error("{class}: {reason}")]
pub struct Rejection {
    /// The ifp/1 error class (`invalid_envelope`, `unsupported_version`, ...).
    pub class: ErrorClass,
    /// What was wrong and where, for people (one line).
    pub reason: String,
}

impl Rejection {
    /// A rejection of the given class and reason.
    pub fn new(class: ErrorClass, reason: impl Into<String>) -> Self {
        Rejection {
            class,
            reason: reason.into(),
        }
    }

    /// An `invalid_envelope` rejection.
    pub fn invalid(reason: impl Into<String>) -> Self {
        Rejection::new(ErrorClass::InvalidEnvelope, reason)
    }
}

mod fields;
mod patterns;
mod provenance;

use fields::{
    check_pattern, expected, kind_of, non_negative_integer, optional, optional_str, payload_field,
    payload_non_empty_str, payload_str, positive_integer, required_in, required_str, show,
    show_key, show_str, timestamp_field,
};
use patterns::{DEVICE_PATTERN, ENTITY_PATTERN, ID_PATTERN, SESSION_PATTERN, TYPE_PATTERN};
use provenance::{parse_labels, parse_provenance};

pub use fields::js_u64;
pub use patterns::{
    is_b64url, is_device, is_ed25519_key_b64url, is_entity, is_message_id, is_params_hash,
    is_session, is_type_name,
};

/// Longest `action_id`, `tool` or `idempotency_key` accepted, in characters (not pinned by the
/// notes; bounds what the receiver keeps per action).
pub const MAX_TOKEN_CHARS: usize = 128;

/// Validates one raw frame (a WebSocket text message or one line of a file).
///
/// Errors: frames over [`MAX_FRAME_BYTES`] and frames that are not UTF-8 JSON give
/// `invalid_envelope` with a reason saying so; everything else as [`validate`].
pub fn validate_frame(frame: &[u8]) -> Result<Envelope, Rejection> {
    if frame.len() > MAX_FRAME_BYTES {
        return Err(Rejection::invalid(format!(
            "frame: {} bytes is over the {MAX_FRAME_BYTES}-byte (1 MiB) limit",
            frame.len()
        )));
    }
    let mut value: Value = serde_json::from_slice(frame)
        .map_err(|e| Rejection::invalid(format!("frame: invalid JSON: {e}")))?;
    // Move the payload out instead of copying it (it is most of the frame): an empty object is
    // left in its place, so the envelope checks judge the same shape, then the payload rules run
    // on the real one.
    let payload = match value.get_mut("payload") {
        Some(Value::Object(p)) => std::mem::take(p),
        _ => Map::new(),
    };
    let mut envelope = envelope_fields(&value)?;
    envelope.payload = payload;
    check_type_rules(&envelope)?;
    Ok(envelope)
}

/// The `id` of a frame the validator refused, when it is readable: the frame is at most
/// [`MAX_FRAME_BYTES`], is a JSON object, and its `id` is a string of the message-id form
/// `^[a-z]+_[A-Za-z0-9]{6,64}$` ([`is_message_id`]). The link answers a refusal with
/// `parent` = this id and acknowledges it; with `None` the refusal carries no `parent` and
/// cannot be acknowledged (`docs/protocol.md`, "Errors from the desktop").
pub fn readable_id(frame: &[u8]) -> Option<String> {
    if frame.len() > MAX_FRAME_BYTES {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct IdOnly {
        id: Option<Value>,
    }
    let v: IdOnly = serde_json::from_slice(frame).ok()?;
    match v.id {
        Some(Value::String(id)) if is_message_id(&id) => Some(id),
        _ => None,
    }
}

/// Validates one parsed message against the ifp/1 envelope and payload rules (check order in the
/// module doc).
///
/// Returns the typed [`Envelope`], or the [`Rejection`] of the first rule broken:
/// `unsupported_version` when `ifp` is not `"1"`, `invalid_envelope` for everything else.
pub fn validate(value: &Value) -> Result<Envelope, Rejection> {
    let envelope = envelope_fields(value)?;
    check_type_rules(&envelope)?;
    Ok(envelope)
}

/// The envelope checks of [`validate`] (everything before the per-type payload rules).
fn envelope_fields(value: &Value) -> Result<Envelope, Rejection> {
    let obj = value.as_object().ok_or_else(|| {
        Rejection::invalid(format!(
            "message: expected a JSON object, got {}",
            kind_of(value)
        ))
    })?;
    match obj.get("ifp") {
        Some(Value::String(v)) if v == IFP_VERSION => {}
        Some(other) => {
            return Err(Rejection::new(
                ErrorClass::UnsupportedVersion,
                format!("ifp: expected \"1\", got {}", show(other)),
            ))
        }
        None => {
            return Err(Rejection::new(
                ErrorClass::UnsupportedVersion,
                "ifp: missing (expected \"1\")",
            ))
        }
    }
    if let Some(key) = obj.keys().find(|k| !ENVELOPE_FIELDS.contains(&k.as_str())) {
        return Err(Rejection::invalid(format!(
            "{}: not an ifp/1 envelope field (allowed: {})",
            show_key(key),
            ENVELOPE_FIELDS.join(", ")
        )));
    }

    let id = required_str(obj, "id")?;
    check_pattern("id", id, is_message_id, ID_PATTERN)?;
    let ts = timestamp_field("ts", required_str(obj, "ts")?)?;
    let msg_type = required_str(obj, "type")?;
    check_pattern("type", msg_type, is_type_name, TYPE_PATTERN)?;
    let payload = match obj.get("payload") {
        Some(Value::Object(p)) => p.clone(),
        None | Some(Value::Null) => {
            return Err(Rejection::invalid(
                "payload: required (an object, possibly empty)",
            ))
        }
        Some(other) => return Err(expected("payload", "an object", other)),
    };
    let ext = match optional(obj, "ext") {
        None => Map::new(),
        Some(Value::Object(e)) => {
            if let Some(key) = e.keys().find(|k| !k.starts_with("x-")) {
                return Err(Rejection::invalid(format!(
                    "ext.{key}: extension keys must start with \"x-\""
                )));
            }
            e.clone()
        }
        Some(other) => return Err(expected("ext", "an object", other)),
    };
    let entity = optional_str(obj, "entity")?;
    match entity {
        Some(e) => check_pattern("entity", e, is_entity, ENTITY_PATTERN)?,
        None if ENTITY_OPTIONAL_TYPES.contains(&msg_type) => {}
        None => {
            return Err(Rejection::invalid(format!(
                "entity: required on {msg_type} (only {} may omit it)",
                ENTITY_OPTIONAL_TYPES.join(", ")
            )))
        }
    }
    let session = optional_str(obj, "session")?;
    if let Some(s) = session {
        check_pattern("session", s, is_session, SESSION_PATTERN)?;
    }
    let device = optional_str(obj, "device")?;
    if let Some(d) = device {
        check_pattern("device", d, is_device, DEVICE_PATTERN)?;
    }
    let generation = match optional(obj, "generation") {
        None => None,
        Some(v) => Some(positive_integer("generation", v)?),
    };
    let parent = optional_str(obj, "parent")?;
    if let Some(p) = parent {
        check_pattern("parent", p, is_message_id, ID_PATTERN)?;
    }
    let correlation = optional_str(obj, "correlation")?;
    if correlation == Some("") {
        return Err(Rejection::invalid(
            "correlation: expected a non-empty string",
        ));
    }
    let provenance = match optional(obj, "provenance") {
        None => None,
        Some(v) => Some(parse_provenance(v)?),
    };
    let labels = match optional(obj, "labels") {
        None => None,
        Some(v) => Some(parse_labels(v)?),
    };

    let envelope = Envelope {
        id: id.to_string(),
        ts,
        r#type: msg_type.to_string(),
        entity: entity.map(str::to_string),
        session: session.map(str::to_string),
        device: device.map(str::to_string),
        generation,
        parent: parent.map(str::to_string),
        correlation: correlation.map(str::to_string),
        provenance,
        labels,
        payload,
        ext,
    };
    Ok(envelope)
}

// ---------------------------------------------------------------------------------------------
// Per-type rules (ifp1-notes.md "Envelope", "Pairing and identity", "Action lifecycle",
// "Error classes").

fn check_type_rules(env: &Envelope) -> Result<(), Rejection> {
    let t = env.r#type.as_str();
    let p = &env.payload;
    if env.is_event() {
        require_envelope(env.session.is_some(), "session", t)?;
        require_envelope(env.generation.is_some(), "generation", t)?;
        require_envelope(env.provenance.is_some(), "provenance", t)?;
        require_envelope(env.labels.is_some(), "labels", t)?;
        let seq = payload_field(p, "seq", "an integer >= 0")?;
        non_negative_integer("payload.seq", seq)?;
        payload_non_empty_str(p, "dedup", usize::MAX)?;
        return Ok(());
    }
    match t {
        "pair.request" => {
            let code = payload_str(p, "pairing_code")?;
            if code.chars().count() < 6 {
                return Err(Rejection::invalid(format!(
                    "payload.pairing_code: expected at least 6 characters (e.g. \"483-921\"), got {}",
                    show_str(code)
                )));
            }
            let key = payload_str(p, "public_key")?;
            if !is_ed25519_key_b64url(key) {
                return Err(Rejection::invalid(format!(
                    "payload.public_key: expected an Ed25519 public key (32 bytes) as unpadded base64url (43 characters), got {}",
                    show_str(key)
                )));
            }
            check_capabilities(p)?;
            if let Some(label) = optional(p, "label") {
                if !label.is_string() {
                    return Err(expected("payload.label", "a string", label));
                }
            }
        }
        "control.hello" => {
            let device_id = payload_str(p, "device_id")?;
            check_pattern("payload.device_id", device_id, is_device, DEVICE_PATTERN)?;
            let proof = payload_str(p, "proof")?;
            if !is_b64url(proof) {
                return Err(Rejection::invalid(format!(
                    "payload.proof: expected a non-empty unpadded base64url signature, got {}",
                    show_str(proof)
                )));
            }
            check_capabilities(p)?;
            let protocol = payload_field(p, "protocol", "an object {min, max}")?;
            let protocol = protocol
                .as_object()
                .ok_or_else(|| expected("payload.protocol", "an object {min, max}", protocol))?;
            let min = positive_integer(
                "payload.protocol.min",
                required_in(protocol, "payload.protocol", "min", "an integer >= 1")?,
            )?;
            let max = positive_integer(
                "payload.protocol.max",
                required_in(protocol, "payload.protocol", "max", "an integer >= 1")?,
            )?;
            if min > max {
                return Err(Rejection::invalid(format!(
                    "payload.protocol: min {min} is above max {max}"
                )));
            }
        }
        "action.propose" => {
            require_envelope(env.session.is_some(), "session", t)?;
            payload_non_empty_str(p, "action_id", MAX_TOKEN_CHARS)?;
            payload_non_empty_str(p, "tool", MAX_TOKEN_CHARS)?;
            let params = payload_field(p, "params", "an object")?;
            if !params.is_object() {
                return Err(expected("payload.params", "an object", params));
            }
            check_params_hash(p)?;
            let risk = payload_str(p, "risk")?;
            if !matches!(risk, "low" | "medium" | "high") {
                return Err(Rejection::invalid(format!(
                    "payload.risk: expected one of low, medium, high, got {}",
                    show_str(risk)
                )));
            }
            payload_non_empty_str(p, "idempotency_key", MAX_TOKEN_CHARS)?;
            timestamp_field("payload.expires_at", payload_str(p, "expires_at")?)?;
            if let Some(reason) = optional(p, "reason") {
                if !reason.is_string() {
                    return Err(expected("payload.reason", "a string", reason));
                }
            }
        }
        "action.approve" => {
            require_envelope(env.generation.is_some(), "generation", t)?;
            payload_non_empty_str(p, "action_id", MAX_TOKEN_CHARS)?;
            check_params_hash(p)?;
            let conf = payload_field(p, "confirmation", "an object {mode, ref}")?;
            let conf = conf
                .as_object()
                .ok_or_else(|| expected("payload.confirmation", "an object {mode, ref}", conf))?;
            let mode = required_in(
                conf,
                "payload.confirmation",
                "mode",
                "user_confirmed or policy_auto",
            )?;
            if !matches!(mode.as_str(), Some("user_confirmed" | "policy_auto")) {
                return Err(expected(
                    "payload.confirmation.mode",
                    "one of user_confirmed, policy_auto",
                    mode,
                ));
            }
            if let Some(r) = optional(conf, "ref") {
                if !r.is_string() {
                    return Err(expected("payload.confirmation.ref", "a string or null", r));
                }
            }
        }
        "action.reject" => {
            payload_non_empty_str(p, "action_id", MAX_TOKEN_CHARS)?;
            let class = payload_str(p, "reason_class")?;
            if !REJECT_REASON_CLASSES.contains(&class) {
                return Err(Rejection::invalid(format!(
                    "payload.reason_class: expected one of {}, got {}",
                    REJECT_REASON_CLASSES.join(", "),
                    show_str(class)
                )));
            }
        }
        "action.result" => {
            require_envelope(env.generation.is_some(), "generation", t)?;
            payload_non_empty_str(p, "action_id", MAX_TOKEN_CHARS)?;
            let status = payload_str(p, "status")?;
            if !matches!(status, "executed" | "failed") {
                return Err(Rejection::invalid(format!(
                    "payload.status: expected one of executed, failed, got {}",
                    show_str(status)
                )));
            }
            if let Some(class) = optional(p, "error_class") {
                error_class_value("payload.error_class", class)?;
            }
        }
        "action.cancel" => {
            payload_non_empty_str(p, "action_id", MAX_TOKEN_CHARS)?;
        }
        "error" => {
            let class = payload_field(p, "class", "one of the 14 error classes")?;
            error_class_value("payload.class", class)?;
            if let Some(detail) = optional(p, "detail") {
                if !detail.is_string() {
                    return Err(expected("payload.detail", "a string or null", detail));
                }
            }
            if let Some(g) = optional(p, "current_generation") {
                positive_integer("payload.current_generation", g)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// `action.reject` `reason_class` values (`ifp1-notes.md`, "Action lifecycle").
pub const REJECT_REASON_CLASSES: [&str; 5] = [
    "capability_missing",
    "policy_denied",
    "user_denied",
    "expired",
    "other",
];

fn require_envelope(present: bool, field: &str, msg_type: &str) -> Result<(), Rejection> {
    if present {
        Ok(())
    } else {
        Err(Rejection::invalid(format!(
            "{field}: required on {msg_type} messages"
        )))
    }
}

fn check_params_hash(p: &Map<String, Value>) -> Result<(), Rejection> {
    let hash = payload_str(p, "params_hash")?;
    if is_params_hash(hash) {
        Ok(())
    } else {
        Err(Rejection::invalid(format!(
            "payload.params_hash: expected \"sha256:\" + 64 lowercase hex, got {}",
            show_str(hash)
        )))
    }
}

fn check_capabilities(p: &Map<String, Value>) -> Result<(), Rejection> {
    let caps = payload_field(p, "capabilities", "an array of {type, properties?}")?;
    let caps = caps.as_array().ok_or_else(|| {
        expected(
            "payload.capabilities",
            "an array of {type, properties?}",
            caps,
        )
    })?;
    for (i, cap) in caps.iter().enumerate() {
        let at = format!("payload.capabilities[{i}]");
        let cap = cap
            .as_object()
            .ok_or_else(|| expected(&at, "an object {type, properties?}", cap))?;
        match cap.get("type") {
            Some(Value::String(s)) if !s.is_empty() => {}
            Some(other) => {
                return Err(expected(&format!("{at}.type"), "a non-empty string", other))
            }
            None => {
                return Err(Rejection::invalid(format!(
                    "{at}.type: required (e.g. \"tool:messages.send\")"
                )))
            }
        }
        if let Some(props) = optional(cap, "properties") {
            if !props.is_object() {
                return Err(expected(&format!("{at}.properties"), "an object", props));
            }
        }
    }
    Ok(())
}

fn error_class_value(field: &str, v: &Value) -> Result<ErrorClass, Rejection> {
    v.as_str()
        .and_then(|s| s.parse::<ErrorClass>().ok())
        .ok_or_else(|| expected(field, "one of the 14 ifp/1 error classes", v))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use serde_json::json;

    fn ping() -> Value {
        json!({"ifp":"1","id":"msg_ping000001","ts":"2026-07-21T00:00:00Z","type":"control.ping","entity":"ent_abc123","payload":{}})
    }

    #[test]
    fn missing_ifp_is_unsupported_version_and_order_puts_version_first() {
        let mut v = ping();
        v.as_object_mut().unwrap().remove("ifp");
        assert_eq!(
            validate(&v).unwrap_err().class,
            ErrorClass::UnsupportedVersion
        );
        // A bad id AND a wrong version: the version wins.
        let mut v = ping();
        v["ifp"] = json!(1);
        v["id"] = json!("bad");
        assert_eq!(
            validate(&v).unwrap_err().class,
            ErrorClass::UnsupportedVersion
        );
    }

    #[test]
    fn unknown_top_level_field_is_named() {
        let mut v = ping();
        v["extra"] = json!(1);
        let r = validate(&v).unwrap_err();
        assert_eq!(r.class, ErrorClass::InvalidEnvelope);
        assert!(r.reason.contains("\"extra\""), "{}", r.reason);
    }

    #[test]
    fn non_objects_and_bad_json_are_invalid_envelope() {
        for v in [json!([]), json!("x"), json!(null), json!(1)] {
            let r = validate(&v).unwrap_err();
            assert_eq!(r.class, ErrorClass::InvalidEnvelope);
            assert!(r.reason.starts_with("message: expected a JSON object"));
        }
        let r = validate_frame(b"{\"ifp\":").unwrap_err();
        assert_eq!(r.class, ErrorClass::InvalidEnvelope);
        assert!(r.reason.contains("invalid JSON"), "{}", r.reason);
    }

    #[test]
    fn frame_size_limit_is_one_mebibyte() {
        let base = serde_json::to_vec(&ping()).unwrap();
        // Pad with trailing whitespace (valid JSON) to exactly the limit, then one more byte.
        let mut at_limit = base.clone();
        at_limit.resize(MAX_FRAME_BYTES, b' ');
        assert!(validate_frame(&at_limit).is_ok());
        at_limit.push(b' ');
        let r = validate_frame(&at_limit).unwrap_err();
        assert_eq!(r.class, ErrorClass::InvalidEnvelope);
        assert!(r.reason.contains("1 MiB"), "{}", r.reason);
    }

    #[test]
    fn params_hash_reason_names_the_field() {
        let v = json!({"ifp":"1","id":"msg_actprop001","ts":"2026-07-21T00:00:02Z","type":"action.propose","entity":"ent_abc123","session":"ses_s1a2b3",
            "payload":{"action_id":"act_1","tool":"t","params":{},"params_hash":"sha256:ABC","risk":"low","idempotency_key":"k","expires_at":"2026-07-21T00:05:00Z"}});
        let r = validate(&v).unwrap_err();
        assert!(
            r.reason
                .starts_with("payload.params_hash: expected \"sha256:\" + 64 lowercase hex"),
            "{}",
            r.reason
        );
    }

    #[test]
    fn generation_accepts_javascript_integers_only() {
        let mut v = ping();
        v["generation"] = json!(2.0);
        assert_eq!(validate(&v).unwrap().generation, Some(2));
        for bad in [json!(0), json!(-1), json!(1.5), json!("2")] {
            v["generation"] = bad;
            let r = validate(&v).unwrap_err();
            assert!(r.reason.starts_with("generation:"), "{}", r.reason);
        }
        v["generation"] = Value::Null;
        assert_eq!(validate(&v).unwrap().generation, None);
    }
}
