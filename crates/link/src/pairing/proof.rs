//! The exact bytes each side signs or hashes while pairing and saying hello: the `pair.complete`
//! and hello signatures, the desktop's commitment to its nonce and the verification code both
//! screens show.
//!
//! `docs/protocol.md`, "Link: pairing and sessions" and "Verification code". Kept in one place so
//! the two ends (the desktop and the reference phone) cannot drift apart byte by byte.

use sha2::{Digest, Sha256};

use super::{CODE_DOMAIN, COMMIT_DOMAIN};

/// The bytes a phone signs in `pair.complete`:
/// `"ifp1-pair|" + challenge + "|" + cert_fp + "|" + device_id + "|" + phone_nonce` (UTF-8),
/// where `challenge` is the base64url string from `pair.grant`, `cert_fp` the pinned
/// certificate fingerprint (64 lowercase hex), `device_id` the **phone's** device id (the
/// `device_id` of `pair.grant`) and `phone_nonce` the base64url nonce the phone sends in the
/// same `pair.complete`.
pub fn pair_signed_bytes(
    challenge: &str,
    cert_fp: &str,
    device_id: &str,
    phone_nonce: &str,
) -> Vec<u8> {
    format!("ifp1-pair|{challenge}|{cert_fp}|{device_id}|{phone_nonce}").into_bytes()
}

/// The bytes a phone signs as its `control.hello` proof:
/// `"ifp1-hello|" + nonce + "|" + device_id + "|" + cert_fp + "|" + exporter` (UTF-8),
/// `nonce` being the connection's `x-ifp-nonce` string and `exporter` the unpadded base64url of
/// the [`EXPORTER_LEN`] bytes the TLS session exports under [`HELLO_EXPORTER_LABEL`]. The
/// exporter ties the proof to this TLS session: a host in the middle that forwards the
/// desktop's nonce to a phone over its own TLS session gets a proof for that session, which
/// the desktop refuses on its own.
pub fn hello_signed_bytes(nonce: &str, device_id: &str, cert_fp: &str, exporter: &str) -> Vec<u8> {
    format!("ifp1-hello|{nonce}|{device_id}|{cert_fp}|{exporter}").into_bytes()
}

/// The bytes the desktop signs as the proof of its first `control.hello` on a connection:
/// `"ifp1-hello-desktop|" + nonce + "|" + cert_fp + "|" + exporter` (UTF-8; `exporter` as in
/// [`hello_signed_bytes`]).
pub fn desktop_intro_signed_bytes(nonce: &str, cert_fp: &str, exporter: &str) -> Vec<u8> {
    format!("ifp1-hello-desktop|{nonce}|{cert_fp}|{exporter}").into_bytes()
}

/// The bytes the desktop signs as the proof of its answering `control.hello`:
/// `"ifp1-hello-desktop|" + nonce + "|" + phone_device_id + "|" + cert_fp + "|" + exporter`
/// (UTF-8; `exporter` as in [`hello_signed_bytes`]).
pub fn desktop_hello_signed_bytes(
    nonce: &str,
    phone_device_id: &str,
    cert_fp: &str,
    exporter: &str,
) -> Vec<u8> {
    format!("ifp1-hello-desktop|{nonce}|{phone_device_id}|{cert_fp}|{exporter}").into_bytes()
}

/// An input of the commitment or the verification code that does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodeInputError {
    /// A nonce is not 32 bytes as unpadded base64url (43 characters).
    #[error("{0}: expected 32 random bytes as unpadded base64url (43 characters)")]
    Nonce(&'static str),
    /// The certificate fingerprint is not 64 hex digits.
    #[error("cert_fp: expected the SHA-256 of the certificate as 64 hex digits")]
    Fingerprint,
    /// The phone's key is not 32 bytes as unpadded base64url.
    #[error("public_key: expected an Ed25519 key, 32 bytes as unpadded base64url")]
    Key,
}

/// 32 bytes from unpadded base64url, or `None`.
pub fn decode32_b64(b64: &str) -> Option<[u8; 32]> {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(b64)
        .ok()?
        .try_into()
        .ok()
}

/// 32 bytes from 64 hex digits (either case), or `None`.
pub fn decode32_hex(text: &str) -> Option<[u8; 32]> {
    hex::decode(text).ok()?.try_into().ok()
}

/// A fresh pairing nonce: 32 bytes from the OS generator, unpadded base64url (43 characters).
pub fn random_nonce() -> String {
    use base64::Engine as _;
    let mut b = [0u8; 32];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut b);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

/// The desktop's commitment sent in `pair.grant`, over raw bytes:
/// `SHA-256("ifp1-pair-commit" || desktop_nonce || cert_fp || phone_key)`, where
/// `desktop_nonce` is the 32 random bytes the desktop reveals later in `pair.reveal`, `cert_fp`
/// the 32 bytes of the certificate's SHA-256 (the hex `fp` decoded) and `phone_key` the 32 raw
/// bytes of the phone's Ed25519 key from `pair.request`. Every field has a fixed length, so the
/// concatenation is unambiguous.
///
/// Why: it fixes the desktop's nonce before the phone picks its own (commit, then reveal, as in
/// Bluetooth's numeric comparison). Neither end can then steer the [`verification_code`], and a
/// host in the middle has to fix its nonce towards one side before it sees the other side's:
/// the two codes the people compare match only by chance, one in a million.
pub fn pairing_commitment(
    desktop_nonce: &[u8; 32],
    cert_fp: &[u8; 32],
    phone_key: &[u8; 32],
) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(COMMIT_DOMAIN);
    h.update(desktop_nonce);
    h.update(cert_fp);
    h.update(phone_key);
    h.finalize().into()
}

/// The 6-digit verification code both screens show, over raw bytes: the first 4 bytes of
/// `SHA-256("ifp1-pair-code" || desktop_nonce || phone_nonce || cert_fp || phone_key)` as a
/// big-endian integer, modulo 1 000 000, written as six digits **with leading zeros**, a space
/// after the third (`012 345`). Inputs as in [`pairing_commitment`]; `phone_nonce` is the 32
/// bytes the phone sent in `pair.complete`. The code commits to both keys (the phone's key and
/// the desktop's certificate) and both nonces. It is never sent.
pub fn verification_code_bytes(
    desktop_nonce: &[u8; 32],
    phone_nonce: &[u8; 32],
    cert_fp: &[u8; 32],
    phone_key: &[u8; 32],
) -> String {
    let mut h = Sha256::new();
    h.update(CODE_DOMAIN);
    h.update(desktop_nonce);
    h.update(phone_nonce);
    h.update(cert_fp);
    h.update(phone_key);
    let d = h.finalize();
    let n = u32::from_be_bytes([d[0], d[1], d[2], d[3]]) % 1_000_000;
    let s = format!("{n:06}");
    let (a, b) = s.split_at(3);
    format!("{a} {b}")
}

/// [`pairing_commitment`] from the wire forms: nonce and key unpadded base64url, `cert_fp` hex;
/// the commitment as unpadded base64url (43 characters).
///
/// Errors: [`CodeInputError`] naming the input that does not decode.
pub fn commitment_b64(
    desktop_nonce: &str,
    cert_fp: &str,
    phone_key: &str,
) -> Result<String, CodeInputError> {
    use base64::Engine as _;
    let n = decode32_b64(desktop_nonce).ok_or(CodeInputError::Nonce("desktop nonce"))?;
    let f = decode32_hex(cert_fp).ok_or(CodeInputError::Fingerprint)?;
    let k = decode32_b64(phone_key).ok_or(CodeInputError::Key)?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(pairing_commitment(&n, &f, &k)))
}

/// [`verification_code_bytes`] from the wire forms (nonces and key unpadded base64url,
/// `cert_fp` hex): `"012 345"`.
///
/// Errors: [`CodeInputError`] naming the input that does not decode.
pub fn verification_code(
    desktop_nonce: &str,
    phone_nonce: &str,
    cert_fp: &str,
    phone_key: &str,
) -> Result<String, CodeInputError> {
    let d = decode32_b64(desktop_nonce).ok_or(CodeInputError::Nonce("desktop nonce"))?;
    let p = decode32_b64(phone_nonce).ok_or(CodeInputError::Nonce("phone nonce"))?;
    let f = decode32_hex(cert_fp).ok_or(CodeInputError::Fingerprint)?;
    let k = decode32_b64(phone_key).ok_or(CodeInputError::Key)?;
    Ok(verification_code_bytes(&d, &p, &f, &k))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// The worked example of `docs/protocol.md` ("Verification code"), computed independently
    /// (Python's hashlib): desktop nonce = bytes 0..31, phone key = bytes 64..95 (raw bytes: the
    /// code does not care whether they are a curve point), certificate fingerprint =
    /// SHA-256("worked example certificate").
    const DN: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";
    const FP: &str = "3957933bf273ca69ee2601cdb7f87b731b126b0a241b2bbc2baba71a98680885";
    const PK: &str = "QEFCQ0RFRkdISUpLTE1OT1BRUlNUVVZXWFlaW1xdXl8";

    #[test]
    fn commitment_and_code_vectors_keep_leading_zeros() {
        assert_eq!(
            commitment_b64(DN, FP, PK).unwrap(),
            "L-tTDmi8NQErcMEnUUYJWpu-kbWlL9EMugmTa-AdjCo"
        );
        // Phone nonce = bytes 32..63.
        assert_eq!(
            verification_code(DN, "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8", FP, PK).unwrap(),
            "296 980"
        );
        // Phone nonce = 0x25 then bytes 33..63: a code whose first digit is 0, kept.
        assert_eq!(
            verification_code(DN, "JSEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8", FP, PK).unwrap(),
            "046 002"
        );
    }

    #[test]
    fn code_depends_on_every_input_and_bad_inputs_are_named() {
        let pn = "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8";
        let v = verification_code(DN, pn, FP, PK).unwrap();
        let fp2 = format!("{}0", &FP[..63]);
        let others = [
            verification_code(pn, pn, FP, PK).unwrap(),
            verification_code(DN, DN, FP, PK).unwrap(),
            verification_code(DN, pn, &fp2, PK).unwrap(),
            verification_code(DN, pn, FP, DN).unwrap(),
        ];
        assert!(others.iter().all(|o| o != &v), "{v} {others:?}");
        assert_eq!(
            verification_code("short", pn, FP, PK),
            Err(CodeInputError::Nonce("desktop nonce"))
        );
        assert_eq!(
            verification_code(DN, pn, "zz", PK),
            Err(CodeInputError::Fingerprint)
        );
        assert_eq!(commitment_b64(DN, FP, "AAAA"), Err(CodeInputError::Key));
        // Uppercase hex is the same fingerprint.
        assert_eq!(
            verification_code(DN, pn, &FP.to_ascii_uppercase(), PK).unwrap(),
            v
        );
    }
}
