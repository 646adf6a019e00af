//! Pairing windows, codes, the backoff on wrong codes, invitation links and the exact bytes each
//! side signs.
//!
//! `ifp1-notes.md`, "Pairing and identity" (`pair.request`, then `pair.grant` and
//! `pair.complete` with a challenge signature; shapes not pinned) and `docs/protocol.md`,
//! "Link: pairing and sessions", which pins this project's choices:
//! - a pairing code is 6 random digits shown as `123-456`, lives [`PAIRING_TTL_MS`] (2 min) from
//!   the moment the person opens the window (nothing extends it), is single-use, and the window
//!   closes for good after [`MAX_WRONG_TRIES`] wrong codes in total (the person opens a new one);
//! - wrong codes are slowed down per source address and globally ([`PairingBackoff`]);
//! - the invitation link is `switchboard://pair?addr=..&port=..&code=..&fp=..`, also as a QR
//!   code (SVG);
//! - signed bytes: [`pair_signed_bytes`], [`hello_signed_bytes`],
//!   [`desktop_hello_signed_bytes`]; the verification code both screens show:
//!   [`verification_code`].

use std::collections::HashMap;
use std::net::IpAddr;

use rand::Rng as _;
use serde::Serialize;
use sha2::{Digest, Sha256};
use ts_rs::TS;

/// How long a pairing window (and its code) lives: 2 minutes, in milliseconds.
pub const PAIRING_TTL_MS: u64 = 120_000;

/// Wrong codes a pairing window takes in total, from every source together; the last one closes
/// the window ([`CodeCheck::Closed`]).
pub const MAX_WRONG_TRIES: u32 = 5;

/// The one answer (`error` detail, class `pairing_failed`) to every refused `pair.request`: no
/// window open, wrong code, expired code, the window's last wrong code, inside the backoff. The
/// same words whatever happened, so a peer polling with guesses learns nothing (not even when a
/// window opens).
pub const PAIRING_REFUSED: &str =
    "pairing refused: open a pairing window on the desktop and enter the code it shows";

/// The one answer (`error` detail, class `unauthorized_device`) to every refused
/// `control.hello` before a verified one: unknown device id, another key than the pinned one,
/// a proof that does not verify. The same words whatever happened, so a peer cannot tell a
/// paired device id from an unknown one.
pub const HELLO_REFUSED: &str = "hello refused: this device is not paired with this desktop under this key, or its proof does not verify for this connection (forged or replayed)";

/// The clock moved to [`crate::clock`]; re-exported so `link::pairing::{Clock, SystemClock}`
/// keeps working for callers not yet switched to `crate::clock`.
pub use crate::clock::{Clock, ManualClock, SystemClock};

/// An open pairing window: one code, its fixed expiry and the wrong codes so far.
#[derive(Debug, Clone)]
pub struct PairingWindow {
    digits: String,
    expires_at_ms: u64,
    wrong_tries: u32,
}

/// What checking a code against the window gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeCheck {
    /// The code is right; the window is used up (the caller closes it).
    Accepted,
    /// Wrong code; `tries_left` more wrong codes before the window closes.
    Wrong {
        /// Wrong codes left in this window.
        tries_left: u32,
    },
    /// The window expired (whatever the code); the caller closes it.
    Expired,
    /// That was the window's last allowed wrong code: the caller closes the window, and the
    /// person has to open a new one.
    Closed,
}

impl PairingWindow {
    /// Opens a window with a fresh random code, valid for `ttl_ms` from `now_ms`.
    pub fn open(now_ms: u64, ttl_ms: u64) -> Self {
        let n: u32 = rand::rngs::OsRng.gen_range(0..1_000_000);
        Self {
            digits: format!("{n:06}"),
            expires_at_ms: now_ms.saturating_add(ttl_ms),
            wrong_tries: 0,
        }
    }

    /// The code as shown to people: `123-456`.
    pub fn code(&self) -> String {
        let (a, b) = self.digits.split_at(3);
        format!("{a}-{b}")
    }

    /// When the code stops working, milliseconds since the Unix epoch (fixed at opening).
    pub fn expires_at_ms(&self) -> u64 {
        self.expires_at_ms
    }

    /// Whether the window has expired at `now_ms`.
    pub fn expired(&self, now_ms: u64) -> bool {
        now_ms >= self.expires_at_ms
    }

    /// Wrong codes this window has taken so far.
    pub fn wrong_tries(&self) -> u32 {
        self.wrong_tries
    }

    /// Checks `given` (digits, with or without `-` or spaces) at time `now_ms`.
    ///
    /// An expired window answers [`CodeCheck::Expired`] whatever the code. A wrong code counts
    /// against the window's budget; the [`MAX_WRONG_TRIES`]th answers [`CodeCheck::Closed`].
    /// Nothing here changes the code or the expiry. The caller closes the window on
    /// `Accepted`, `Expired` and `Closed`.
    pub fn check(&mut self, given: &str, now_ms: u64) -> CodeCheck {
        if self.expired(now_ms) {
            return CodeCheck::Expired;
        }
        if self.wrong_tries >= MAX_WRONG_TRIES {
            return CodeCheck::Closed;
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
            return CodeCheck::Closed;
        }
        CodeCheck::Wrong {
            tries_left: MAX_WRONG_TRIES - self.wrong_tries,
        }
    }
}

/// First delay a source waits after a failed `pair.request`, ms; it doubles with each further
/// failure from that source, up to [`SOURCE_BACKOFF_MAX_MS`].
pub const SOURCE_BACKOFF_BASE_MS: u64 = 1_000;

/// Longest delay a source waits between two checked `pair.request`s, ms (1 minute).
pub const SOURCE_BACKOFF_MAX_MS: u64 = 60_000;

/// A source's failures are forgotten after this long without one, ms (10 minutes).
pub const SOURCE_FORGET_MS: u64 = 600_000;

/// After any wrong code, no code from any source is checked for this long, ms.
pub const GLOBAL_BACKOFF_MS: u64 = 1_000;

/// Sources whose failures are remembered at once; past it, only the global backoff applies to
/// new sources (so a flood of addresses cannot grow memory without bound).
pub const MAX_TRACKED_SOURCES: usize = 1024;

#[derive(Debug, Clone, Copy)]
struct SourceFailures {
    failures: u32,
    last_ms: u64,
    next_ok_ms: u64,
}

/// The backoff on failed `pair.request`s, per source address and global, in link-clock ms.
///
/// - Per source: after its `n`th failed `pair.request` (no window, expired, wrong code), a
///   source's next request is checked no earlier than `min(1 s * 2^(n-1), 60 s)` later.
/// - Global: after any wrong code, no request from any source is checked for 1 s.
///
/// A request inside a backoff is refused unchecked: it uses none of the window's budget and
/// does not lengthen the backoff. Lives across windows (the person opening a new window does not
/// reset it).
#[derive(Debug, Default)]
pub struct PairingBackoff {
    sources: HashMap<IpAddr, SourceFailures>,
    global_next_ok_ms: u64,
}

impl PairingBackoff {
    /// Whether a `pair.request` from `ip` may be checked at `now_ms`.
    pub fn allows(&self, ip: IpAddr, now_ms: u64) -> bool {
        if now_ms < self.global_next_ok_ms {
            return false;
        }
        self.sources
            .get(&ip)
            .map(|s| now_ms >= s.next_ok_ms || now_ms >= s.last_ms.saturating_add(SOURCE_FORGET_MS))
            .unwrap_or(true)
    }

    /// Records a checked `pair.request` from `ip` that failed at `now_ms`; `wrong_code` also
    /// starts the global backoff.
    pub fn failed(&mut self, ip: IpAddr, now_ms: u64, wrong_code: bool) {
        if wrong_code {
            self.global_next_ok_ms = now_ms.saturating_add(GLOBAL_BACKOFF_MS);
        }
        if !self.sources.contains_key(&ip) && self.sources.len() >= MAX_TRACKED_SOURCES {
            self.sources
                .retain(|_, s| now_ms < s.last_ms.saturating_add(SOURCE_FORGET_MS));
            if self.sources.len() >= MAX_TRACKED_SOURCES {
                return;
            }
        }
        let s = self.sources.entry(ip).or_insert(SourceFailures {
            failures: 0,
            last_ms: now_ms,
            next_ok_ms: now_ms,
        });
        if now_ms >= s.last_ms.saturating_add(SOURCE_FORGET_MS) {
            s.failures = 0;
        }
        s.failures = s.failures.saturating_add(1);
        s.last_ms = now_ms;
        let shift = s.failures.saturating_sub(1).min(16);
        let delay = SOURCE_BACKOFF_BASE_MS
            .saturating_mul(1u64 << shift)
            .min(SOURCE_BACKOFF_MAX_MS);
        s.next_ok_ms = now_ms.saturating_add(delay);
    }

    /// How many sources are remembered now.
    pub fn tracked_sources(&self) -> usize {
        self.sources.len()
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
    fn fifth_wrong_code_closes_the_window_and_nothing_extends_it() {
        let mut w = PairingWindow::open(0, PAIRING_TTL_MS);
        let right = w.digits.clone();
        let wrong = if right == "000000" {
            "111111"
        } else {
            "000000"
        };
        for left in (1..MAX_WRONG_TRIES).rev() {
            assert_eq!(w.check(wrong, 10), CodeCheck::Wrong { tries_left: left });
        }
        assert_eq!(w.check(wrong, 10), CodeCheck::Closed);
        // Same code, same expiry: the budget is spent, and even the right code is refused now.
        assert_eq!(w.digits, right);
        assert_eq!(w.expires_at_ms(), PAIRING_TTL_MS);
        assert_eq!(w.check(&right, 20), CodeCheck::Closed);
        assert_eq!(w.wrong_tries(), MAX_WRONG_TRIES);
    }

    #[test]
    fn backoff_grows_per_source_and_holds_everyone_for_a_second_after_a_wrong_code() {
        let a: IpAddr = "192.0.2.7".parse().unwrap();
        let b: IpAddr = "192.0.2.8".parse().unwrap();
        let mut g = PairingBackoff::default();
        assert!(g.allows(a, 0));
        g.failed(a, 0, true);
        // Global: nobody for 1 s after a wrong code.
        assert!(!g.allows(b, 999));
        assert!(g.allows(b, 1_000));
        // Per source: 1 s, 2 s, 4 s, ... up to 60 s.
        let mut now = 1_000;
        let mut expected = 2_000;
        for _ in 0..10 {
            assert!(g.allows(a, now));
            g.failed(a, now, false);
            assert!(!g.allows(a, now + expected - 1), "at {now} + {expected}");
            assert!(g.allows(a, now + expected));
            now += expected;
            expected = (expected * 2).min(SOURCE_BACKOFF_MAX_MS);
        }
        assert_eq!(expected, SOURCE_BACKOFF_MAX_MS);
        // Another source is not slowed by a's failures once the global second is over.
        assert!(g.allows(b, now));
        // Forgotten after 10 quiet minutes: back to 1 s.
        let later = now + SOURCE_FORGET_MS;
        g.failed(a, later, false);
        assert!(g.allows(a, later + SOURCE_BACKOFF_BASE_MS));
    }

    #[test]
    fn backoff_memory_is_bounded() {
        let mut g = PairingBackoff::default();
        for i in 0..(MAX_TRACKED_SOURCES as u32 + 100) {
            g.failed(
                IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + i)),
                5,
                false,
            );
        }
        assert_eq!(g.tracked_sources(), MAX_TRACKED_SOURCES);
        // Once the old ones are forgotten, new sources are tracked again.
        let fresh = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));
        g.failed(fresh, 5 + SOURCE_FORGET_MS, false);
        assert_eq!(g.tracked_sources(), 1);
        assert!(!g.allows(fresh, 5 + SOURCE_FORGET_MS));
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
