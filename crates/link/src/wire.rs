//! The link's view of ifp/1 messages: validating what arrives, framing what the link sends.
//!
//! `ifp1-notes.md`, "Envelope" and "Error classes"; `docs/protocol.md`, "Link: pairing and
//! sessions". Every frame a phone sends passes [`ifp::validate_frame`] before anything else
//! reads it. Everything the desktop sends is an [`ifp::OutgoingMessage`] framed by
//! [`frame`] into an [`ifp::OutgoingFrame`] — the only thing the link's writer accepts — so no
//! code path can send `action.approve`, `action.reject` or `action.cancel` (the central promise).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use rand::Rng as _;
use serde_json::{Map, Value};

/// The ifp module as the link uses it (the one seam to the validator and outgoing types).
pub(crate) mod ifp {
    pub(crate) use switchboard_wire::ifp::outgoing::{
        DesktopRequest, DesktopRequestKind, PairDone, PairGrant, PairReveal,
    };
    pub(crate) use switchboard_wire::ifp::payload::{ControlHello, ErrorPayload, ProtocolVersions};
    pub(crate) use switchboard_wire::ifp::{
        readable_id, validate_frame, Envelope, ErrorClass, OutgoingFrame, OutgoingHeader,
        OutgoingMessage, Timestamp, MAX_FRAME_BYTES,
    };
}

/// Message types the desktop must never send (`ifp1-notes.md`, "Action lifecycle").
pub const FORBIDDEN_OUTGOING: [&str; 3] = ["action.approve", "action.reject", "action.cancel"];

/// Why a validated message on a live connection of `device_id` (after its hello) is refused,
/// with the ifp/1 error class the link answers with; `None` when it goes to the app. Refused:
/// a second `control.hello` or any `pair.*` (`invalid_envelope`), and a `device` other than
/// the connection's (`unauthorized_device`; `docs/protocol.md`, "Link: pairing and sessions").
/// `control.ping` and `control.pong` are answered before this is asked.
pub fn refusal_after_hello(
    env: &ifp::Envelope,
    device_id: &str,
) -> Option<(ifp::ErrorClass, String)> {
    let kind = env.r#type.as_str();
    if kind == "control.hello" || kind.starts_with("pair.") {
        return Some((
            ifp::ErrorClass::InvalidEnvelope,
            format!("`{kind}` after a successful hello on this connection"),
        ));
    }
    match &env.device {
        Some(d) if d != device_id => Some((
            ifp::ErrorClass::UnauthorizedDevice,
            format!("device: this connection belongs to {device_id}, not {d}"),
        )),
        _ => None,
    }
}

/// A random message id: `msg_` + 20 alphanumerics.
pub(crate) fn message_id() -> String {
    format!("msg_{}", random_alnum(20))
}

fn random_alnum(n: usize) -> String {
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
/// `bytes` as unpadded base64url.
pub(crate) fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

pub(crate) fn random_token() -> String {
    let mut b = [0u8; 32];
    rand::rngs::OsRng.fill(&mut b);
    URL_SAFE_NO_PAD.encode(b)
}

pub use switchboard_wire::timefmt::rfc3339_ms;

/// Who the desktop is on the wire: its entity and device ids.
#[derive(Debug, Clone)]
pub(crate) struct Sender {
    pub entity: String,
    pub device: String,
}

/// Frames `msg` from the desktop at `now_ms`, answering `parent`, with extensions `ext`.
///
/// Errors: [`FrameError`], the ifp module's refusal (a bug in Switchboard, never peer input).
pub(crate) fn frame(
    from: &Sender,
    msg: &ifp::OutgoingMessage,
    now_ms: u64,
    parent: Option<String>,
    ext: Map<String, Value>,
) -> Result<ifp::OutgoingFrame, FrameError> {
    let ts = ifp::Timestamp::parse(&rfc3339_ms(now_ms))?;
    let mut h = ifp::OutgoingHeader::new(message_id(), ts);
    h.entity = Some(from.entity.clone());
    h.device = Some(from.device.clone());
    h.parent = parent;
    h.ext = ext;
    Ok(msg.to_frame(&h)?)
}

/// Why the link could not frame a message of its own ([`frame`]): always a bug in Switchboard,
/// never the phone's input.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The link clock's time did not make an ifp/1 timestamp.
    #[error("ts: {0}")]
    Timestamp(#[from] switchboard_wire::ifp::envelope::TimestampError),
    /// The ifp module refused the message (an `action.*` type, a payload that does not encode).
    #[error(transparent)]
    Outgoing(#[from] switchboard_wire::ifp::outgoing::OutgoingError),
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
    fn desktop_frames_pass_the_validator() {
        let from = Sender {
            entity: "ent_abcdef123456".into(),
            device: "dev_abcdef123456".into(),
        };
        let mut ext = Map::new();
        ext.insert("x-ifp-nonce".into(), Value::from(random_token()));
        let hello = ifp::OutgoingMessage::Hello(ifp::ControlHello {
            device_id: from.device.clone(),
            proof: random_token(),
            capabilities: vec![],
            protocol: ifp::ProtocolVersions { min: 1, max: 1 },
        });
        let f = frame(&from, &hello, 1_700_000_000_000, None, ext).unwrap();
        let env = ifp::validate_frame(f.as_bytes()).unwrap();
        assert_eq!(env.r#type, "control.hello");
        assert!(env.ext.contains_key("x-ifp-nonce"));
        let m = message_id();
        assert!(m.starts_with("msg_") && m.len() == 24);
    }
}
