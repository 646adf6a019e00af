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
//! - the invitation link is `switchboard://pair?addr=..&port=..&code=..&fp=..&alt=..`
//!   (every address a phone may reach, most likely first; [`invite_offering`]), also as a QR
//!   code (SVG);
//! - signed bytes: [`pair_signed_bytes`], [`hello_signed_bytes`],
//!   [`desktop_hello_signed_bytes`], each hello proof bound to its TLS session by an exporter
//!   value ([`HELLO_EXPORTER_LABEL`], RFC 9266 style);
//! - a code that passes the window is not a pairing yet: the desktop commits to a nonce in
//!   `pair.grant` ([`pairing_commitment`]), the phone sends its own nonce, the desktop reveals
//!   its one, and both screens show the [`verification_code`] of both keys and both nonces; the
//!   pairing stays *pending* (nothing written) until the person confirms on the desktop that
//!   the codes match and the phone confirms on its side ([`PENDING_TTL_MS`]).

use std::collections::HashMap;
use std::net::IpAddr;

use rand::Rng as _;
use serde::Serialize;
use sha2::{Digest, Sha256};
use ts_rs::TS;

use super::addresses::{OfferedAddress, MAX_LINK_ADDRESSES, MAX_QR_VERSION};

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

/// How long a pending pairing (signature verified, codes not yet confirmed on both sides) may
/// wait for the two confirmations: 2 minutes, in milliseconds. Past it the pairing is discarded.
pub const PENDING_TTL_MS: u64 = 120_000;

/// The TLS exporter label both ends use for the hello proof (RFC 8446 section 7.5, as RFC 9266
/// does for `tls-exporter`): [`EXPORTER_LEN`] bytes, no context.
pub const HELLO_EXPORTER_LABEL: &[u8] = b"EXPORTER-ifp1-hello";

/// Bytes taken from the TLS exporter for the hello proof.
pub const EXPORTER_LEN: usize = 32;

/// Domain prefix of the desktop's commitment ([`pairing_commitment`]), ASCII.
pub const COMMIT_DOMAIN: &[u8] = b"ifp1-pair-commit";

/// Domain prefix of the verification code ([`verification_code_bytes`]), ASCII.
pub const CODE_DOMAIN: &[u8] = b"ifp1-pair-code";

/// The clock moved to [`switchboard_wire::clock`]; re-exported so `link::pairing::{Clock, SystemClock}`
/// keeps working for callers not yet switched to `switchboard_wire::clock`.
pub use switchboard_wire::clock::{Clock, ManualClock, SystemClock};

/// An open pairing window: one code, its fixed expiry and the wrong codes so far.
#[derive(Debug, Clone)]
pub struct PairingWindow {
    digits: String,
    expires_at_ms: u64,
    wrong_tries: u32,
    /// The right code came and its pairing waits for the two confirmations: no other code is
    /// checked until it ends ([`PairingWindow::release_failed`], or the caller closes it).
    held: bool,
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
    /// A pairing made with the right code is waiting for its confirmations: nothing is checked
    /// until it ends (answered like "no window", so a peer learns nothing).
    Held,
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
            held: false,
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

    /// Whether a pairing made with this window's code is waiting for its confirmations.
    pub fn held(&self) -> bool {
        self.held
    }

    /// Checks `given` (digits, with or without `-` or spaces) at time `now_ms`.
    ///
    /// An expired window answers [`CodeCheck::Expired`] whatever the code; a held one
    /// [`CodeCheck::Held`]. A wrong code counts against the window's budget; the
    /// [`MAX_WRONG_TRIES`]th answers [`CodeCheck::Closed`]. The right code answers
    /// [`CodeCheck::Accepted`] and holds the window for that pairing: the caller closes it when
    /// the pairing is confirmed, or calls [`PairingWindow::release_failed`] when it is not.
    /// Nothing here changes the code or the expiry. The caller closes the window on `Expired`
    /// and `Closed`.
    pub fn check(&mut self, given: &str, now_ms: u64) -> CodeCheck {
        if self.expired(now_ms) {
            return CodeCheck::Expired;
        }
        if self.held {
            return CodeCheck::Held;
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
            self.held = true;
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

    /// The pairing that held the window ended without being confirmed (bad signature, the
    /// phone left, the phone said the codes differ, nobody confirmed in time): it counts as one
    /// wrong try. Returns whether the window is still usable at `now_ms` (time and budget left);
    /// when not, the caller closes it.
    pub fn release_failed(&mut self, now_ms: u64) -> bool {
        self.held = false;
        self.wrong_tries = self.wrong_tries.saturating_add(1);
        self.wrong_tries < MAX_WRONG_TRIES && !self.expired(now_ms)
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
    /// The pairing link (`docs/protocol.md`, "Pairing link"):
    /// `switchboard://pair?addr=<ip>&port=<port>&code=<6 digits>&fp=<cert fingerprint hex>`
    /// then `&alt=<ip>,<ip>,...` with the other addresses, most likely first.
    pub link: String,
    /// The link as a QR code, an SVG document.
    pub qr_svg: String,
    /// When the code stops working, milliseconds since the Unix epoch.
    #[ts(type = "number")]
    pub expires_at_ms: u64,
    /// The desktop certificate fingerprint the phone must pin (lowercase hex SHA-256).
    pub cert_fingerprint: String,
    /// The TCP port the link listens on (the one actually bound).
    pub port: u16,
    /// The one line a person types on a phone that cannot scan: `address:port code` for the
    /// first address (`192.0.2.1:47470 123-456`, IPv6 in brackets); no fingerprint, so the
    /// phone trusts the certificate on first use and the verification code checks it
    /// (`docs/protocol.md`, "Typed pairing line").
    pub typed_line: String,
    /// One typed line per offered address, in the order a phone tries them: the link's
    /// addresses, then the ones left out of it ([`PairingInvite::left_out`]: typing has no QR
    /// size to keep), each `address:port code`. The first is [`PairingInvite::typed_line`]; the
    /// card lists the others as alternatives for a phone on another of this computer's networks
    /// (`docs/protocol.md`, "Typed pairing line").
    pub typed_lines: Vec<String>,
    /// The addresses the link carries, in the order a phone tries them.
    pub addresses: Vec<OfferedAddress>,
    /// Addresses this machine has that the link leaves out to stay short enough for a QR code
    /// (the least likely ones: past [`MAX_LINK_ADDRESSES`], or when its QR code would need a
    /// version past [`MAX_QR_VERSION`]).
    pub left_out: Vec<OfferedAddress>,
}

/// Builds the invitation link for `window` offering `addrs` (the first as `addr`, the rest as
/// `alt`, comma-separated). Addresses need no brackets (they are query values); IPv6 colons are
/// written as they are (RFC 3986 allows `:` in a query; phones also accept `%3A`).
pub fn invite_link_multi(addrs: &[IpAddr], port: u16, window: &PairingWindow, fp: &str) -> String {
    let first = addrs
        .first()
        .map(ToString::to_string)
        .unwrap_or_else(|| "127.0.0.1".to_string());
    let mut link = format!(
        "switchboard://pair?addr={first}&port={port}&code={}&fp={fp}",
        window.digits
    );
    if addrs.len() > 1 {
        let alt: Vec<String> = addrs[1..].iter().map(ToString::to_string).collect();
        link.push_str("&alt=");
        link.push_str(&alt.join(","));
    }
    link
}

/// The typed pairing line for `addr` and the shown `code`: `192.0.2.1:47470 123-456`
/// (`[2001:db8::1]:47470 123-456`).
pub fn typed_line(addr: std::net::SocketAddr, code: &str) -> String {
    format!("{addr} {code}")
}

/// Most addresses read from one typed line (as many as a link's `addr` and `alt` together).
pub const MAX_TYPED_ADDRESSES: usize = 17;

/// Reads a typed pairing line: one or more `address:port` (the card's line names one; a line
/// may name several, each tried as "Trying the addresses" says), then the 6-digit code,
/// separated by spaces (the code with or without its dash or a space inside: `123-456`,
/// `123456`, `123 456`). Returns the addresses in the order typed and the code as `123-456`.
///
/// Errors: words naming what is missing or wrong.
pub fn parse_typed_line(line: &str) -> Result<(Vec<std::net::SocketAddr>, String), String> {
    let mut parts = line.split_whitespace().peekable();
    let first = parts.next().ok_or_else(|| {
        "empty line: type the address:port and the code the desktop shows".to_string()
    })?;
    let addr: std::net::SocketAddr = first.parse().map_err(|_| {
        format!(
            "{first:?} is not address:port (like 192.0.2.1:47470, or [2001:db8::1]:47470 for IPv6)"
        )
    })?;
    let mut addrs = vec![addr];
    while let Some(next) = parts.peek() {
        let Ok(a) = next.parse::<std::net::SocketAddr>() else {
            break;
        };
        if addrs.len() >= MAX_TYPED_ADDRESSES {
            return Err(format!(
                "more than {MAX_TYPED_ADDRESSES} addresses on one line"
            ));
        }
        if !addrs.contains(&a) {
            addrs.push(a);
        }
        parts.next();
    }
    let digits: String = parts.collect::<Vec<_>>().join("").replace('-', "");
    if digits.len() != 6 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "after the address, type the 6-digit code the desktop shows (like 123-456), not {digits:?}"
        ));
    }
    Ok((addrs, format!("{}-{}", &digits[..3], &digits[3..])))
}

/// Builds the invitation link for `window` with the one address `addr` (a link of the first
/// format: no `alt`).
pub fn invite_link(addr: &std::net::IpAddr, port: u16, window: &PairingWindow, fp: &str) -> String {
    invite_link_multi(std::slice::from_ref(addr), port, window, fp)
}

/// The QR code version `text` needs at the error correction [`qr_svg`] uses (M), `None` when it
/// cannot be encoded at all.
pub fn qr_version(text: &str) -> Option<i16> {
    match qrcode::QrCode::new(text.as_bytes()).ok()?.version() {
        qrcode::Version::Normal(v) | qrcode::Version::Micro(v) => Some(v),
    }
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

/// Splits `offered` into what the link carries and what it leaves out: at most
/// [`MAX_LINK_ADDRESSES`], then the last ones dropped while the link's QR code needs a version
/// past [`MAX_QR_VERSION`] (at least one is always kept). `offered` is in the order of
/// [`super::addresses::order_addresses`], so the least likely go first.
pub fn fit_addresses(
    offered: &[OfferedAddress],
    port: u16,
    window: &PairingWindow,
    fp: &str,
) -> (Vec<OfferedAddress>, Vec<OfferedAddress>) {
    let usable: Vec<&OfferedAddress> = offered.iter().filter(|a| a.ip().is_some()).collect();
    let mut keep = usable.len().clamp(1, MAX_LINK_ADDRESSES);
    while keep > 1 {
        let ips: Vec<IpAddr> = usable[..keep].iter().filter_map(|a| a.ip()).collect();
        if qr_version(&invite_link_multi(&ips, port, window, fp))
            .is_some_and(|v| v <= MAX_QR_VERSION)
        {
            break;
        }
        keep -= 1;
    }
    let kept = usable.iter().take(keep).map(|a| (*a).clone()).collect();
    let left = usable.iter().skip(keep).map(|a| (*a).clone()).collect();
    (kept, left)
}

/// Builds the [`PairingInvite`] for a window offering the one address `addr`.
pub fn invite(
    addr: &std::net::IpAddr,
    port: u16,
    window: &PairingWindow,
    fp: &str,
) -> PairingInvite {
    invite_offering(&[super::addresses::describe(*addr)], port, window, fp)
}

/// Builds the [`PairingInvite`] for a window offering `offered` (most likely first; see
/// [`fit_addresses`] for what is left out). With nothing offered the link names loopback.
pub fn invite_offering(
    offered: &[OfferedAddress],
    port: u16,
    window: &PairingWindow,
    fp: &str,
) -> PairingInvite {
    let (addresses, left_out) = fit_addresses(offered, port, window, fp);
    let ips: Vec<IpAddr> = addresses.iter().filter_map(OfferedAddress::ip).collect();
    let link = invite_link_multi(&ips, port, window, fp);
    let first = ips
        .first()
        .copied()
        .unwrap_or(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST));
    let typed_lines = addresses
        .iter()
        .chain(&left_out)
        .filter_map(OfferedAddress::ip)
        .map(|ip| typed_line(std::net::SocketAddr::new(ip, port), &window.code()))
        .collect();
    PairingInvite {
        typed_line: typed_line(std::net::SocketAddr::new(first, port), &window.code()),
        typed_lines,
        code: window.code(),
        qr_svg: qr_svg(&link),
        link,
        expires_at_ms: window.expires_at_ms,
        cert_fingerprint: fp.to_string(),
        port,
        addresses,
        left_out,
    }
}

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

    #[test]
    fn a_typed_line_reads_back_and_bad_ones_are_named() {
        let v4: std::net::SocketAddr = "192.0.2.1:47470".parse().unwrap();
        let v6: std::net::SocketAddr = "[2001:db8::1]:47471".parse().unwrap();
        assert_eq!(typed_line(v4, "123-456"), "192.0.2.1:47470 123-456");
        assert_eq!(typed_line(v6, "012-345"), "[2001:db8::1]:47471 012-345");
        assert_eq!(
            parse_typed_line("192.0.2.1:47470 123-456").unwrap(),
            (vec![v4], "123-456".into())
        );
        assert_eq!(
            parse_typed_line("  [2001:db8::1]:47471   012 345 ").unwrap(),
            (vec![v6], "012-345".into())
        );
        // Several addresses on one line, then the code: every one is tried, in that order.
        assert_eq!(
            parse_typed_line("192.0.2.1:47470 [2001:db8::1]:47471 192.0.2.1:47470 012-345")
                .unwrap(),
            (vec![v4, v6], "012-345".into())
        );
        let many = vec!["192.0.2.1:1"; MAX_TYPED_ADDRESSES + 1].join(" ");
        assert!(
            parse_typed_line(&format!("{many} 123-456")).is_ok(),
            "duplicates count once"
        );
        let many: Vec<String> = (1..=MAX_TYPED_ADDRESSES + 1)
            .map(|p| format!("192.0.2.1:{p}"))
            .collect();
        assert!(parse_typed_line(&format!("{} 123-456", many.join(" ")))
            .unwrap_err()
            .contains("more than"));
        assert_eq!(
            parse_typed_line("192.0.2.1:47470 123456").unwrap().1,
            "123-456"
        );
        assert!(parse_typed_line("").unwrap_err().contains("empty"));
        assert!(parse_typed_line("192.0.2.1 123-456")
            .unwrap_err()
            .contains("address:port"));
        assert!(parse_typed_line("192.0.2.1:47470 12-456")
            .unwrap_err()
            .contains("6-digit"));
        assert!(parse_typed_line("192.0.2.1:47470")
            .unwrap_err()
            .contains("6-digit"));
    }

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
        assert_eq!(w.check(&code.replace('-', ""), 2000), CodeCheck::Accepted);
        let mut w = PairingWindow::open(1000, PAIRING_TTL_MS);
        let code = w.code();
        assert_eq!(w.check(&code, 2000), CodeCheck::Accepted);
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
        assert_eq!(inv.port, 47470);
        assert_eq!(inv.addresses.len(), 1);
        assert!(inv.left_out.is_empty());
    }

    fn offered(n: usize) -> Vec<OfferedAddress> {
        use super::super::addresses::InterfaceKind;
        (0..n)
            .map(|i| OfferedAddress {
                interface: format!("eth{i}"),
                kind: InterfaceKind::Local,
                // Every other one a long global IPv6 address (the worst case of a real LAN).
                address: if i % 2 == 0 {
                    format!("198.51.100.{}", 200 + i)
                } else {
                    format!("2001:db8:4a2f:91c0:7d3e:12ff:fe4b:{:x}", 0xa000 + i)
                },
            })
            .collect()
    }

    /// The QR code sizes of links with 1, 4 and 8 addresses (printed with `--nocapture`), and
    /// the rule that keeps a link within [`MAX_LINK_CHARS`] by leaving out the last ones.
    #[test]
    fn link_qr_sizes() {
        let w = PairingWindow::open(0, PAIRING_TTL_MS);
        let fp = "ab".repeat(32);
        for n in [1usize, 4, 8] {
            let inv = invite_offering(&offered(n), 47470, &w, &fp);
            let qr = qrcode::QrCode::new(inv.link.as_bytes()).unwrap();
            let qrcode::Version::Normal(v) = qr.version() else {
                panic!("micro QR for a link")
            };
            println!(
                "{n} address(es): link {} chars, QR version {v} ({} modules a side, EC {:?})",
                inv.link.len(),
                qr.width(),
                qr.error_correction_level()
            );
            assert_eq!(inv.addresses.len(), n, "{n} addresses fit");
            assert!(inv.left_out.is_empty());
            assert!(v <= MAX_QR_VERSION, "{n} addresses: QR version {v}");
            // The phone reads back the same addresses, in order.
            let back = crate::phone::discover::parse_pair_link(&inv.link).unwrap();
            let got: Vec<String> = back
                .candidates()
                .iter()
                .map(|a| a.ip().to_string())
                .collect();
            let want: Vec<String> = inv.addresses.iter().map(|a| a.address.clone()).collect();
            assert_eq!(got, want);
        }
        // Twelve addresses: the last four are left out, and said so.
        let inv = invite_offering(&offered(12), 47470, &w, &fp);
        assert_eq!(inv.addresses.len(), MAX_LINK_ADDRESSES);
        assert_eq!(inv.left_out.len(), 4);
        assert_eq!(inv.left_out[0].interface, "eth8");
        // The typed lines name every offered address, the left-out ones too, in order; each
        // reads back as the one address it names and the window's code.
        assert_eq!(inv.typed_lines.len(), 12);
        assert_eq!(inv.typed_lines[0], inv.typed_line);
        for (line, a) in inv
            .typed_lines
            .iter()
            .zip(inv.addresses.iter().chain(&inv.left_out))
        {
            let (addrs, code) = parse_typed_line(line).unwrap();
            assert_eq!(
                addrs,
                [std::net::SocketAddr::new(a.ip().unwrap(), 47470)],
                "{line}"
            );
            assert_eq!(code, w.code());
        }
        assert_eq!(
            inv.typed_lines[1],
            format!(
                "[2001:db8:4a2f:91c0:7d3e:12ff:fe4b:a001]:47470 {}",
                w.code()
            )
        );
        // Eight addresses all long IPv6 ones do not fit version 14: the last are left out.
        let long: Vec<OfferedAddress> = offered(16)
            .into_iter()
            .filter(|a| a.address.contains(':'))
            .collect();
        let inv = invite_offering(&long, 47470, &w, &fp);
        assert!(
            inv.addresses.len() < 8 && !inv.left_out.is_empty(),
            "{}",
            inv.addresses.len()
        );
        assert_eq!(inv.addresses.len() + inv.left_out.len(), 8);
        assert_eq!(
            inv.addresses[0].address, long[0].address,
            "the most likely stays"
        );
        assert!(qr_version(&inv.link).unwrap() <= MAX_QR_VERSION);
    }

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

    #[test]
    fn a_held_window_checks_nothing_and_a_failed_pairing_costs_one_try() {
        let mut w = PairingWindow::open(0, PAIRING_TTL_MS);
        let code = w.code();
        assert_eq!(w.check(&code, 10), CodeCheck::Accepted);
        assert!(w.held());
        // While held, even the right code is not checked (and costs nothing).
        assert_eq!(w.check(&code, 20), CodeCheck::Held);
        assert_eq!(w.wrong_tries(), 0);
        assert!(w.release_failed(30));
        assert_eq!(w.wrong_tries(), 1);
        assert_eq!(w.check(&code, 40), CodeCheck::Accepted);
        // Failed pairings spend the budget like wrong codes.
        let mut left = true;
        for _ in 1..MAX_WRONG_TRIES {
            left = w.release_failed(50);
            if left {
                assert_eq!(w.check(&code, 60), CodeCheck::Accepted);
            }
        }
        assert!(!left);
        assert_eq!(w.check(&code, 70), CodeCheck::Closed);
        // Released after the window's time: not usable either.
        let mut w = PairingWindow::open(0, PAIRING_TTL_MS);
        let code = w.code();
        assert_eq!(w.check(&code, 10), CodeCheck::Accepted);
        assert!(!w.release_failed(PAIRING_TTL_MS));
    }
}
