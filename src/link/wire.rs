//! The link's view of ifp/1 messages: validating what arrives, building what the link sends.
//!
//! `ifp1-notes.md`, "Envelope" and "Error classes"; `docs/protocol.md`, "Link: pairing and
//! sessions". Every frame a phone sends passes [`ifp::validate_frame`] before anything else
//! reads it. The link's own control messages (`control.challenge`, `control.hello`,
//! `control.ping`/`pong`, `pair.grant`, `pair.paired`, `pair.revoke`, `error`) are the closed
//! set [`ControlFrame`]; the app's messages come in as the ifp module's outgoing type. Both go
//! out through [`encode`], which refuses — as a last guard behind the types — any frame whose
//! type is `action.approve`, `action.reject` or `action.cancel` (the central promise).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use rand::Rng as _;
use serde_json::{json, Map, Value};

/// The ifp validator the link uses (the one seam to the `ifp` module).
pub(crate) mod ifp {
    pub use super::stub::{validate_frame, Envelope, Outgoing, MAX_FRAME_BYTES};
}

/// Message types the desktop must never send (`ifp1-notes.md`, "Action lifecycle").
pub const FORBIDDEN_OUTGOING: [&str; 3] = ["action.approve", "action.reject", "action.cancel"];

/// A message the link itself sends (the closed set; none can approve, reject or cancel).
#[derive(Debug, Clone)]
pub(crate) enum ControlFrame {
    /// First frame of every connection: the nonce for `control.hello`.
    Challenge {
        nonce: String,
        desktop_device: String,
        cert_fp: String,
        protocol: (u32, u32),
    },
    /// The desktop's answer to a valid hello.
    Hello {
        device_id: String,
        proof: String,
        version: u32,
        parent: String,
    },
    /// Keepalive ask.
    Ping { nonce: String },
    /// Keepalive answer.
    Pong { parent: String, nonce: Value },
    /// Answer to a right pairing code.
    Grant {
        parent: String,
        device_id: String,
        desktop_public_key: String,
        desktop_device: String,
        challenge: String,
        cert_fp: String,
    },
    /// The phone's key is pinned.
    Paired { parent: String, device_id: String },
    /// The desktop forgot this phone.
    Revoke { device_id: String, reason: String },
    /// An ifp `error` message.
    Error {
        class: &'static str,
        detail: String,
        parent: Option<String>,
    },
}

/// A random message id: `msg_` + 20 alphanumerics.
pub(crate) fn message_id() -> String {
    format!("msg_{}", random_alnum(20))
}

pub(crate) fn random_alnum(n: usize) -> String {
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rngs::OsRng;
    (0..n)
        .map(|_| {
            let i = rng.gen_range(0..CHARS.len());
            char::from(CHARS.get(i).copied().unwrap_or(b'A'))
        })
        .collect()
}

/// 32 random bytes as unpadded base64url (43 characters): nonces and challenges.
pub(crate) fn random_token() -> String {
    let mut b = [0u8; 32];
    rand::rngs::OsRng.fill(&mut b);
    URL_SAFE_NO_PAD.encode(b)
}

/// `ms` since the Unix epoch as RFC 3339 UTC with milliseconds and a literal `Z`.
pub fn rfc3339_ms(ms: u64) -> String {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60,
        ms % 1000
    )
}

fn base(kind: &str, entity: Option<&str>, now_ms: u64) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("ifp".into(), json!("1"));
    m.insert("id".into(), json!(message_id()));
    m.insert("ts".into(), json!(rfc3339_ms(now_ms)));
    m.insert("type".into(), json!(kind));
    if let Some(e) = entity {
        m.insert("entity".into(), json!(e));
    }
    m
}

impl ControlFrame {
    /// The frame as an ifp/1 JSON object; `entity` is the desktop's entity id.
    pub(crate) fn to_value(&self, entity: &str, now_ms: u64) -> Value {
        let (kind, payload, parent, ext): (&str, Value, Option<&str>, Option<Value>) = match self
        {
            ControlFrame::Challenge {
                nonce,
                desktop_device,
                cert_fp,
                protocol,
            } => (
                "control.challenge",
                json!({"device_id": desktop_device, "cert_fp": cert_fp,
                       "protocol": {"min": protocol.0, "max": protocol.1}}),
                None,
                Some(json!({"x-ifp-nonce": nonce})),
            ),
            ControlFrame::Hello {
                device_id,
                proof,
                version,
                parent,
            } => (
                "control.hello",
                json!({"device_id": device_id, "proof": proof, "capabilities": [],
                       "protocol": {"min": version, "max": version}}),
                Some(parent),
                None,
            ),
            ControlFrame::Ping { nonce } => ("control.ping", json!({"nonce": nonce}), None, None),
            ControlFrame::Pong { parent, nonce } => {
                let mut p = Map::new();
                if !nonce.is_null() {
                    p.insert("nonce".into(), nonce.clone());
                }
                ("control.pong", Value::Object(p), Some(parent), None)
            }
            ControlFrame::Grant {
                parent,
                device_id,
                desktop_public_key,
                desktop_device,
                challenge,
                cert_fp,
            } => (
                "pair.grant",
                json!({"device_id": device_id, "desktop_device_id": desktop_device,
                       "public_key": desktop_public_key, "challenge": challenge,
                       "cert_fp": cert_fp, "capabilities": []}),
                Some(parent),
                None,
            ),
            ControlFrame::Paired { parent, device_id } => (
                "pair.paired",
                json!({"device_id": device_id}),
                Some(parent),
                None,
            ),
            ControlFrame::Revoke { device_id, reason } => (
                "pair.revoke",
                json!({"device_id": device_id, "reason": reason}),
                None,
                None,
            ),
            ControlFrame::Error {
                class,
                detail,
                parent,
            } => (
                "error",
                json!({"class": class, "detail": detail}),
                parent.as_deref(),
                None,
            ),
        };
        let mut m = base(kind, Some(entity), now_ms);
        if let Some(p) = parent {
            m.insert("parent".into(), json!(p));
        }
        m.insert("payload".into(), payload);
        if let Some(x) = ext {
            m.insert("ext".into(), x);
        }
        Value::Object(m)
    }
}

/// Serialises `frame` for the wire, refusing the forbidden action types.
pub(crate) fn encode(frame: &Value) -> Result<String, String> {
    let kind = frame.get("type").and_then(Value::as_str).unwrap_or("");
    if FORBIDDEN_OUTGOING.contains(&kind) {
        return Err(format!(
            "refused to send `{kind}`: the desktop never approves, rejects or cancels an action"
        ));
    }
    serde_json::to_string(frame).map_err(|e| e.to_string())
}

/// Stand-in for the `ifp` module's validator until it lands (same names and shapes).
pub(crate) mod stub {
    use serde_json::{Map, Value};

    /// Largest frame accepted: 1 MiB.
    pub const MAX_FRAME_BYTES: usize = 1024 * 1024;

    /// ifp/1 error classes the link uses.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum ErrorClass {
        UnsupportedVersion,
        InvalidEnvelope,
    }

    impl ErrorClass {
        pub const fn as_str(self) -> &'static str {
            match self {
                ErrorClass::UnsupportedVersion => "unsupported_version",
                ErrorClass::InvalidEnvelope => "invalid_envelope",
            }
        }
    }

    /// Why a frame was refused.
    #[derive(Debug, Clone)]
    pub struct Rejection {
        pub class: ErrorClass,
        pub reason: String,
    }

    /// A validated message.
    #[derive(Debug, Clone, PartialEq)]
    pub struct Envelope {
        /// Message id.
        pub id: String,
        /// Message type.
        pub r#type: String,
        /// Entity id.
        pub entity: Option<String>,
        /// Sending device.
        pub device: Option<String>,
        /// Payload object.
        pub payload: Map<String, Value>,
        /// Extension object.
        pub ext: Map<String, Value>,
    }

    /// An app message to a phone (stand-in: the real type cannot name `action.*`).
    #[derive(Debug, Clone)]
    pub struct Outgoing {
        kind: String,
        payload: Map<String, Value>,
    }

    impl Outgoing {
        /// A message of type `kind`; `action.*` types are refused.
        pub fn new(kind: &str, payload: Map<String, Value>) -> Result<Self, String> {
            if kind.starts_with("action.") {
                return Err(format!("`{kind}` cannot be sent by the desktop"));
            }
            Ok(Self {
                kind: kind.to_string(),
                payload,
            })
        }

        /// The full envelope with the desktop's `entity` and send time `ts`.
        pub fn into_value(self, entity: &str, ts: &str) -> Value {
            serde_json::json!({"ifp": "1", "id": super::message_id(), "ts": ts,
                "type": self.kind, "entity": entity, "payload": self.payload})
        }
    }

    fn invalid(reason: String) -> Rejection {
        Rejection {
            class: ErrorClass::InvalidEnvelope,
            reason,
        }
    }

    pub fn validate_frame(frame: &[u8]) -> Result<Envelope, Rejection> {
        if frame.len() > MAX_FRAME_BYTES {
            return Err(invalid(format!(
                "frame: {} bytes is over the 1 MiB limit",
                frame.len()
            )));
        }
        let v: Value = serde_json::from_slice(frame)
            .map_err(|e| invalid(format!("frame: invalid JSON: {e}")))?;
        let o = v
            .as_object()
            .ok_or_else(|| invalid("message: expected a JSON object".into()))?;
        if o.get("ifp") != Some(&Value::String("1".into())) {
            return Err(Rejection {
                class: ErrorClass::UnsupportedVersion,
                reason: "ifp: expected \"1\"".into(),
            });
        }
        let s = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_string);
        Ok(Envelope {
            id: s("id").ok_or_else(|| invalid("id: required".into()))?,
            r#type: s("type").ok_or_else(|| invalid("type: required".into()))?,
            entity: s("entity"),
            device: s("device"),
            payload: o
                .get("payload")
                .and_then(Value::as_object)
                .cloned()
                .ok_or_else(|| invalid("payload: required object".into()))?,
            ext: o
                .get("ext")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_ms(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(rfc3339_ms(1_700_000_000_000), "2023-11-14T22:13:20.000Z");
    }

    #[test]
    fn control_frames_pass_the_validator() {
        let frames = [
            ControlFrame::Challenge {
                nonce: random_token(),
                desktop_device: "dev_abcdef".into(),
                cert_fp: "00".repeat(32),
                protocol: (1, 1),
            },
            ControlFrame::Ping { nonce: "n".into() },
            ControlFrame::Error {
                class: "pairing_failed",
                detail: "wrong code".into(),
                parent: None,
            },
            ControlFrame::Revoke {
                device_id: "dev_abcdef".into(),
                reason: "unpaired".into(),
            },
        ];
        for f in frames {
            let v = f.to_value("ent_abcdef123456", 1_700_000_000_000);
            let text = encode(&v).unwrap();
            let env = ifp::validate_frame(text.as_bytes()).unwrap();
            assert_eq!(Some(env.r#type.as_str()), v["type"].as_str());
        }
    }

    #[test]
    fn encode_refuses_forbidden_types() {
        for t in FORBIDDEN_OUTGOING {
            let v = json!({"ifp": "1", "type": t, "payload": {}});
            assert!(encode(&v).unwrap_err().contains("never approves"));
        }
    }
}
