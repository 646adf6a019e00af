//! Pairing windows, codes, invitation links and the exact bytes each side signs.
//!
//! `ifp1-notes.md`, "Pairing and identity" (`pair.request`, then `pair.grant` and
//! `pair.complete` with a challenge signature; shapes not pinned) and `docs/protocol.md`,
//! "Link: pairing and sessions", which pins this project's choices:
//! - a pairing code is 6 random digits shown as `123-456`, lives [`PAIRING_TTL_MS`] (2 min),
//!   is single-use, and after [`MAX_WRONG_TRIES`] wrong tries is replaced (`rate_limited`);
//! - the invitation link is `switchboard://pair?addr=..&port=..&code=..&fp=..`, also as a QR
//!   code (SVG);
//! - signed bytes: [`pair_signed_bytes`], [`hello_signed_bytes`],
//!   [`desktop_hello_signed_bytes`]; the verification code both screens show:
//!   [`verification_code`].

use rand::Rng as _;
use serde::Serialize;
use sha2::{Digest, Sha256};
use ts_rs::TS;

/// How long a pairing code lives: 2 minutes, in milliseconds.
pub const PAIRING_TTL_MS: u64 = 120_000;

/// Wrong codes accepted before the code is replaced and the caller gets `rate_limited`.
pub const MAX_WRONG_TRIES: u32 = 5;

/// The clock moved to [`crate::clock`]; re-exported so `link::pairing::{Clock, SystemClock}`
/// keeps working for callers not yet switched to `crate::clock`.
pub use crate::clock::{Clock, ManualClock, SystemClock};

/// An open pairing window: one code, its expiry and the wrong tries so far.
#[derive(Debug, Clone)]
pub struct PairingWindow {
    digits: String,
    expires_at_ms: u64,
    wrong_tries: u32,
    ttl_ms: u64,
}

/// What checking a code against the window gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeCheck {
    /// The code is right; the window is used up.
    Accepted,
    /// Wrong code; `tries_left` more wrong tries before the code is replaced.
    Wrong {
        /// Wrong tries left.
        tries_left: u32,
    },
    /// The window's code expired.
    Expired,
    /// That was the last allowed wrong try: the code has been replaced by a new one.
    RateLimited,
}

impl PairingWindow {
    /// Opens a window with a fresh random code, valid for `ttl_ms` from `now_ms`.
    pub fn open(now_ms: u64, ttl_ms: u64) -> Self {
        let n: u32 = rand::rngs::OsRng.gen_range(0..1_000_000);
        Self {
            digits: format!("{n:06}"),
            expires_at_ms: now_ms.saturating_add(ttl_ms),
            wrong_tries: 0,
            ttl_ms,
        }
    }

    /// The code as shown to people: `123-456`.
    pub fn code(&self) -> String {
        let (a, b) = self.digits.split_at(3);
        format!("{a}-{b}")
    }

    /// When the code stops working, milliseconds since the Unix epoch.
    pub fn expires_at_ms(&self) -> u64 {
        self.expires_at_ms
    }

    /// Checks `given` (digits, with or without `-` or spaces) at time `now_ms`.
    ///
    /// A wrong code counts a try; the [`MAX_WRONG_TRIES`]th wrong try replaces the code with a
    /// new one (fresh expiry) and answers [`CodeCheck::RateLimited`]. An expired window answers
    /// [`CodeCheck::Expired`] whatever the code. The caller closes the window on `Accepted`.
    pub fn check(&mut self, given: &str, now_ms: u64) -> CodeCheck {
        if now_ms >= self.expires_at_ms {
            return CodeCheck::Expired;
        }
        let cleaned: String = given.chars().filter(|c| *c != '-' && *c != ' ').collect();
        let same = cleaned.len() == self.digits.len()
            && cleaned
                .bytes()
                .zip(self.digits.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0;
        if same {
            return CodeCheck::Accepted;
        }
        self.wrong_tries += 1;
        if self.wrong_tries >= MAX_WRONG_TRIES {
            *self = Self::open(now_ms, self.ttl_ms);
            return CodeCheck::RateLimited;
        }
        CodeCheck::Wrong {
            tries_left: MAX_WRONG_TRIES - self.wrong_tries,
        }
    }
}

/// What the desktop shows while a pairing window is open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct PairingInvite {
    /// The code, `123-456`.
    pub code: String,
    /// `switchboard://pair?addr=<ip>&port=<port>&code=<6 digits>&fp=<cert fingerprint hex>`.
    pub link: String,
    /// The link as a QR code, an SVG document.
    pub qr_svg: String,
    /// When the code stops working, milliseconds since the Unix epoch.
    #[ts(type = "number")]
    pub expires_at_ms: u64,
    /// The desktop certificate fingerprint the phone must pin (lowercase hex SHA-256).
    pub cert_fingerprint: String,
}

/// Builds the invitation link for `window` (addresses in brackets are not needed: the address
/// is a query value; IPv6 colons are percent-encoded).
pub fn invite_link(addr: &std::net::IpAddr, port: u16, window: &PairingWindow, fp: &str) -> String {
    let addr = addr.to_string().replace(':', "%3A");
    format!(
        "switchboard://pair?addr={addr}&port={port}&code={}&fp={fp}",
        window.digits
    )
}

/// Renders `text` as a QR code SVG document (empty string if it cannot be encoded).
pub fn qr_svg(text: &str) -> String {
    match qrcode::QrCode::new(text.as_bytes()) {
        Ok(code) => code
            .render::<qrcode::render::svg::Color<'_>>()
            .min_dimensions(200, 200)
            .build(),
        Err(_) => String::new(),
    }
}

/// Builds the [`PairingInvite`] for a window.
pub fn invite(
    addr: &std::net::IpAddr,
    port: u16,
    window: &PairingWindow,
    fp: &str,
) -> PairingInvite {
    let link = invite_link(addr, port, window, fp);
    PairingInvite {
        code: window.code(),
        qr_svg: qr_svg(&link),
        link,
        expires_at_ms: window.expires_at_ms,
        cert_fingerprint: fp.to_string(),
    }
}

/// The bytes a phone signs in `pair.complete`:
/// `"ifp1-pair|" + challenge + "|" + cert_fp + "|" + device_id` (UTF-8), where `challenge` is
/// the base64url string from `pair.grant` and `cert_fp` the pinned certificate fingerprint.
pub fn pair_signed_bytes(challenge: &str, cert_fp: &str, device_id: &str) -> Vec<u8> {
    format!("ifp1-pair|{challenge}|{cert_fp}|{device_id}").into_bytes()
}

/// The bytes a phone signs as its `control.hello` proof:
/// `"ifp1-hello|" + nonce + "|" + device_id + "|" + cert_fp` (UTF-8), `nonce` being the
/// connection's `x-ifp-nonce` string.
pub fn hello_signed_bytes(nonce: &str, device_id: &str, cert_fp: &str) -> Vec<u8> {
    format!("ifp1-hello|{nonce}|{device_id}|{cert_fp}").into_bytes()
}

/// The bytes the desktop signs as the proof of its first `control.hello` on a connection:
/// `"ifp1-hello-desktop|" + nonce + "|" + cert_fp` (UTF-8).
pub fn desktop_intro_signed_bytes(nonce: &str, cert_fp: &str) -> Vec<u8> {
    format!("ifp1-hello-desktop|{nonce}|{cert_fp}").into_bytes()
}

/// The bytes the desktop signs as the proof of its answering `control.hello`:
/// `"ifp1-hello-desktop|" + nonce + "|" + phone_device_id + "|" + cert_fp` (UTF-8).
pub fn desktop_hello_signed_bytes(nonce: &str, phone_device_id: &str, cert_fp: &str) -> Vec<u8> {
    format!("ifp1-hello-desktop|{nonce}|{phone_device_id}|{cert_fp}").into_bytes()
}

/// The 6-digit verification code both screens show after pairing, `123 456`: the first four
/// bytes of SHA-256(`"ifp1-verify|" + desktop_pk + "|" + phone_pk + "|" + cert_fp`) as a
/// big-endian integer modulo 1 000 000 (keys as unpadded base64url). It is never sent.
pub fn verification_code(desktop_pk: &str, phone_pk: &str, cert_fp: &str) -> String {
    let d = Sha256::digest(format!("ifp1-verify|{desktop_pk}|{phone_pk}|{cert_fp}").as_bytes());
    let n = u32::from_be_bytes([d[0], d[1], d[2], d[3]]) % 1_000_000;
    let s = format!("{n:06}");
    let (a, b) = s.split_at(3);
    format!("{a} {b}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn code_shape_and_acceptance() {
        let mut w = PairingWindow::open(1000, PAIRING_TTL_MS);
        let code = w.code();
        assert_eq!(code.len(), 7);
        assert_eq!(code.as_bytes()[3], b'-');
        assert!(code
            .chars()
            .filter(|c| *c != '-')
            .all(|c| c.is_ascii_digit()));
        assert_eq!(w.check(&code, 2000), CodeCheck::Accepted);
        assert_eq!(w.check(&code.replace('-', ""), 2000), CodeCheck::Accepted);
    }

    #[test]
    fn expiry_is_at_two_minutes() {
        let mut w = PairingWindow::open(0, PAIRING_TTL_MS);
        let code = w.code();
        assert_eq!(w.check(&code, PAIRING_TTL_MS), CodeCheck::Expired);
        let mut w = PairingWindow::open(0, PAIRING_TTL_MS);
        let code = w.code();
        assert_eq!(w.check(&code, PAIRING_TTL_MS - 1), CodeCheck::Accepted);
    }

    #[test]
    fn fifth_wrong_try_replaces_code() {
        let mut w = PairingWindow::open(0, PAIRING_TTL_MS);
        let old = w.digits.clone();
        let wrong = if old == "000000" { "111111" } else { "000000" };
        for left in (1..MAX_WRONG_TRIES).rev() {
            assert_eq!(w.check(wrong, 10), CodeCheck::Wrong { tries_left: left });
        }
        assert_eq!(w.check(wrong, 10), CodeCheck::RateLimited);
        assert_eq!(w.wrong_tries, 0);
        assert_eq!(w.expires_at_ms(), 10 + PAIRING_TTL_MS);
        // The replaced code still counts tries from zero; the old code is usually gone.
        assert_eq!(w.check(&w.digits.clone(), 20), CodeCheck::Accepted);
    }

    #[test]
    fn link_and_qr() {
        let w = PairingWindow::open(0, PAIRING_TTL_MS);
        let inv = invite(&"192.168.1.5".parse().unwrap(), 47470, &w, "ab12");
        assert_eq!(
            inv.link,
            format!(
                "switchboard://pair?addr=192.168.1.5&port=47470&code={}&fp=ab12",
                w.digits
            )
        );
        assert!(inv.qr_svg.starts_with("<?xml") && inv.qr_svg.contains("<svg"));
    }

    #[test]
    fn verification_code_depends_on_every_input() {
        let v = verification_code("d", "p", "f");
        assert_eq!(v.len(), 7);
        assert_eq!(v, verification_code("d", "p", "f"));
        let others = [
            verification_code("D", "p", "f"),
            verification_code("d", "P", "f"),
            verification_code("d", "p", "F"),
        ];
        assert!(others.iter().all(|o| o != &v));
    }
}
