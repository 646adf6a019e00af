//! The identifier shapes of ifp/1 (`ifp1-notes.md`, "Envelope"): message ids, type names,
//! entities, sessions, devices, `params_hash`, base64url and Ed25519 keys. Hand-written matchers
//! for the notes' regular expressions, so no regex engine runs on peer input.

pub(super) const ID_PATTERN: &str = "^[a-z]+_[A-Za-z0-9]{6,64}$ (e.g. msg_ab12cd)";
pub(super) const TYPE_PATTERN: &str = "^[a-z][a-z0-9_.]*$";
pub(super) const ENTITY_PATTERN: &str = "^ent_[A-Za-z0-9]{6,64}$";
pub(super) const SESSION_PATTERN: &str = "^ses_[A-Za-z0-9]{6,64}$";
pub(super) const DEVICE_PATTERN: &str = "^dev_[A-Za-z0-9_]{4,64}$";

pub(super) fn count_in(s: &str, ok: fn(u8) -> bool, min: usize, max: usize) -> bool {
    (min..=max).contains(&s.len()) && s.bytes().all(ok)
}

pub(super) fn alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

/// `^[a-z]+_[A-Za-z0-9]{6,64}$`.
pub fn is_message_id(s: &str) -> bool {
    match s.split_once('_') {
        Some((prefix, rest)) => {
            !prefix.is_empty()
                && prefix.bytes().all(|b| b.is_ascii_lowercase())
                && count_in(rest, alnum, 6, 64)
        }
        None => false,
    }
}

/// `^[a-z][a-z0-9_.]*$`.
pub fn is_type_name(s: &str) -> bool {
    let mut bytes = s.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'.')
}

/// `^ent_[A-Za-z0-9]{6,64}$`.
pub fn is_entity(s: &str) -> bool {
    s.strip_prefix("ent_")
        .is_some_and(|r| count_in(r, alnum, 6, 64))
}

/// `^ses_[A-Za-z0-9]{6,64}$`.
pub fn is_session(s: &str) -> bool {
    s.strip_prefix("ses_")
        .is_some_and(|r| count_in(r, alnum, 6, 64))
}

/// `^dev_[A-Za-z0-9_]{4,64}$`.
pub fn is_device(s: &str) -> bool {
    s.strip_prefix("dev_")
        .is_some_and(|r| count_in(r, |b| alnum(b) || b == b'_', 4, 64))
}

/// `sha256:` followed by exactly 64 lowercase hex digits.
pub fn is_params_hash(s: &str) -> bool {
    s.strip_prefix("sha256:").is_some_and(|h| {
        h.len() == 64
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

pub(super) fn b64url_value(b: u8) -> Option<u8> {
    match b {
        b'A'..=b'Z' => Some(b - b'A'),
        b'a'..=b'z' => Some(b - b'a' + 26),
        b'0'..=b'9' => Some(b - b'0' + 52),
        b'-' => Some(62),
        b'_' => Some(63),
        _ => None,
    }
}

/// Non-empty unpadded base64url whose length is a possible encoding (not 1 mod 4).
pub fn is_b64url(s: &str) -> bool {
    !s.is_empty() && s.len() % 4 != 1 && s.bytes().all(|b| b64url_value(b).is_some())
}

/// An Ed25519 public key as unpadded base64url: 43 characters encoding exactly 32 bytes (the
/// last character's two spare bits are zero).
pub fn is_ed25519_key_b64url(s: &str) -> bool {
    s.len() == 43
        && is_b64url(s)
        && s.bytes()
            .last()
            .and_then(b64url_value)
            .is_some_and(|v| v & 0b11 == 0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn patterns_match_the_notes() {
        assert!(is_message_id("msg_ping000001"));
        assert!(!is_message_id("msg_12345"));
        assert!(!is_message_id("Msg_123456"));
        assert!(!is_message_id("_123456"));
        assert!(is_device("dev_mac_a1b2"));
        assert!(!is_device("dev_abc"));
        assert!(is_type_name("event.text.message"));
        assert!(!is_type_name("Event"));
        assert!(!is_type_name(""));
        assert!(is_ed25519_key_b64url(
            "JDInBjWvZbYAt-lFQxZbV0jkyDrkejNzq5zA5PJ07UE"
        ));
        assert!(!is_ed25519_key_b64url(
            "JDInBjWvZbYAt-lFQxZbV0jkyDrkejNzq5zA5PJ07UF"
        ));
        assert!(!is_params_hash(&format!("sha256:{}", "A".repeat(64))));
    }
}
