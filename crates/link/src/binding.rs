//! How a `control.hello` proof is bound to its connection: the TLS exporter, or the pinned
//! certificate alone for phones that cannot read the exporter.
//!
//! `docs/protocol.md`, "Session (`control.hello`)" and "Hello bindings". The exporter binding
//! (the default, RFC 9266 style) signs the TLS session's exported value, so a proof made on one
//! TLS session is worthless on another. Some phones cannot read it: switchboard-tap runs inside
//! the Lumiverse host, whose extensions speak only through Bun's global `WebSocket` (no
//! `exportKeyingMaterial`). They use the pinned binding: the proofs sign the connection's nonce
//! and the pinned certificate's fingerprint. With the certificate really pinned that still stops
//! forged and replayed hellos and any relay without the desktop's certificate key; it does not
//! stop a relay that holds that key (the exporter would). A phone says which binding it uses when
//! it pairs; the desktop keeps it in the pairing record and refuses a hello in any other one, so
//! a phone paired with the exporter can never be downgraded.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use ts_rs::TS;

/// The `ext` key in which a phone names its binding (`pair.request`, `control.hello`).
pub const BINDING_EXT: &str = "x-ifp-binding";

/// The `ext` key of the desktop's first `control.hello` holding its proof in the pinned binding
/// ([`desktop_intro_pinned_signed_bytes`]).
pub const PINNED_PROOF_EXT: &str = "x-ifp-pinned-proof";

/// The `ext` key of the desktop's first `control.hello` holding its certificate: unpadded
/// base64url of the DER whose SHA-256 is `cert_fp`. A phone that must hand the certificate to
/// its TLS stack (Bun's `tls.ca`) learns it here and accepts it only by that hash.
pub const CERT_EXT: &str = "x-ifp-cert";

/// What a phone's hello proof is bound to (`docs/protocol.md`, "Hello bindings").
///
/// Serialised as `"exporter"` or `"pinned"`; a pairing record without the field is
/// [`HelloBinding::Exporter`] (every record written before the pinned binding existed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum HelloBinding {
    /// The proofs sign the TLS session's exporter value (`EXPORTER-ifp1-hello`, 32 bytes).
    #[default]
    Exporter,
    /// The proofs sign the connection's nonce and the pinned certificate fingerprint only, for
    /// phones whose TLS stack exposes no exporter.
    Pinned,
}

impl HelloBinding {
    /// The binding's wire name: `exporter` or `pinned`.
    pub fn as_str(self) -> &'static str {
        match self {
            HelloBinding::Exporter => "exporter",
            HelloBinding::Pinned => "pinned",
        }
    }

    /// The binding an envelope's `ext` names ([`BINDING_EXT`]); absent is
    /// [`HelloBinding::Exporter`].
    ///
    /// Errors: [`UnknownBinding`] when the value is not `"exporter"` or `"pinned"`; its text is
    /// the refusal detail (`invalid_envelope`):
    /// `ext.x-ifp-binding: expected "exporter" or "pinned", got <json>`.
    pub fn from_ext(ext: &Map<String, Value>) -> Result<Self, UnknownBinding> {
        match ext.get(BINDING_EXT) {
            None => Ok(HelloBinding::Exporter),
            Some(Value::String(s)) if s == "exporter" => Ok(HelloBinding::Exporter),
            Some(Value::String(s)) if s == "pinned" => Ok(HelloBinding::Pinned),
            Some(other) => Err(UnknownBinding {
                got: truncated_json(other),
            }),
        }
    }
}

/// An `ext.x-ifp-binding` ([`BINDING_EXT`]) naming neither binding; its text is the detail of
/// the `invalid_envelope` refusal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ext.{BINDING_EXT}: expected \"exporter\" or \"pinned\", got {got}")]
pub struct UnknownBinding {
    /// The value as JSON text, at most 80 characters (then `…`).
    pub got: String,
}

/// At most 80 characters of `v`'s JSON text, so a refusal never echoes a large value back.
fn truncated_json(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// The bytes a phone signs as its `control.hello` proof in the pinned binding:
/// `"ifp1-hello-pinned|" + nonce + "|" + device_id + "|" + cert_fp` (UTF-8), `nonce` being the
/// connection's `x-ifp-nonce` and `cert_fp` the pinned certificate fingerprint (64 lowercase
/// hex).
pub fn pinned_hello_signed_bytes(nonce: &str, device_id: &str, cert_fp: &str) -> Vec<u8> {
    format!("ifp1-hello-pinned|{nonce}|{device_id}|{cert_fp}").into_bytes()
}

/// The bytes of the desktop's first-hello proof in the pinned binding ([`PINNED_PROOF_EXT`]):
/// `"ifp1-hello-desktop-pinned|" + nonce + "|" + cert_fp` (UTF-8).
pub fn desktop_intro_pinned_signed_bytes(nonce: &str, cert_fp: &str) -> Vec<u8> {
    format!("ifp1-hello-desktop-pinned|{nonce}|{cert_fp}").into_bytes()
}

/// The bytes of the desktop's answering-hello proof in the pinned binding:
/// `"ifp1-hello-desktop-pinned|" + nonce + "|" + phone_device_id + "|" + cert_fp` (UTF-8).
pub fn desktop_hello_pinned_signed_bytes(
    nonce: &str,
    phone_device_id: &str,
    cert_fp: &str,
) -> Vec<u8> {
    format!("ifp1-hello-desktop-pinned|{nonce}|{phone_device_id}|{cert_fp}").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ext(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn absent_means_exporter_and_only_two_names_are_read() {
        assert_eq!(
            HelloBinding::from_ext(&ext(json!({}))),
            Ok(HelloBinding::Exporter)
        );
        assert_eq!(
            HelloBinding::from_ext(&ext(json!({"x-ifp-binding": "pinned"}))),
            Ok(HelloBinding::Pinned)
        );
        assert_eq!(
            HelloBinding::from_ext(&ext(json!({"x-ifp-binding": "exporter"}))),
            Ok(HelloBinding::Exporter)
        );
        assert_eq!(
            HelloBinding::from_ext(&ext(json!({"x-ifp-binding": "Pinned"}))),
            Err(UnknownBinding {
                got: "\"Pinned\"".into()
            })
        );
        assert_eq!(
            HelloBinding::from_ext(&ext(json!({"x-ifp-binding": "Pinned"})))
                .map_err(|e| e.to_string()),
            Err(
                "ext.x-ifp-binding: expected \"exporter\" or \"pinned\", got \"Pinned\""
                    .to_string()
            )
        );
        let long = "x".repeat(500);
        let err = HelloBinding::from_ext(&ext(json!({"x-ifp-binding": [long]})));
        assert!(
            err.as_ref()
                .is_err_and(|e| e.to_string().chars().count() < 200),
            "{err:?}"
        );
    }

    #[test]
    fn a_record_without_the_field_reads_as_exporter() {
        #[derive(Deserialize)]
        struct R {
            #[serde(default)]
            binding: HelloBinding,
        }
        let r: Result<R, _> = serde_json::from_str("{}");
        assert!(r.is_ok_and(|r| r.binding == HelloBinding::Exporter));
        let r: Result<R, _> = serde_json::from_str(r#"{"binding":"pinned"}"#);
        assert!(r.is_ok_and(|r| r.binding == HelloBinding::Pinned));
    }

    #[test]
    fn the_three_texts_are_distinct_per_role() {
        let phone = pinned_hello_signed_bytes("N", "dev_1", "fp");
        let intro = desktop_intro_pinned_signed_bytes("N", "fp");
        let answer = desktop_hello_pinned_signed_bytes("N", "dev_1", "fp");
        assert_eq!(phone, b"ifp1-hello-pinned|N|dev_1|fp");
        assert_eq!(intro, b"ifp1-hello-desktop-pinned|N|fp");
        assert_eq!(answer, b"ifp1-hello-desktop-pinned|N|dev_1|fp");
        assert_ne!(phone, answer);
    }
}
