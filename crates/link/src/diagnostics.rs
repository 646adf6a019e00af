//! What the link tells people about itself: where it listens, mDNS, and what went wrong lately.
//!
//! `docs/protocol.md`, "Link: pairing and sessions" ("Diagnostics"). Every failure the link
//! sees (wrong or expired code, version mismatch, identity changed, certificate mismatch,
//! unknown device, ...) is kept here in plain words with what to do about it: the real ones
//! (after hello, key store, mDNS, pairing verdicts) in a list of their own, the ones before hello
//! that anyone can repeat coalesced per source in a separate bounded slot.

use std::net::IpAddr;

use serde::Serialize;
use ts_rs::TS;

/// What kind of failure the link saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
#[non_exhaustive]
pub enum FailureKind {
    /// A `pair.request` came with no pairing window open.
    NoPairingWindow,
    /// A `pair.request` gave the wrong code.
    WrongCode,
    /// A `pair.request` came after the code expired.
    ExpiredCode,
    /// Too many wrong codes: the window closed, or a `pair.request` came inside the backoff
    /// after a wrong code (refused unchecked), or a second `pair.request` on one connection.
    RateLimited,
    /// The phone's `pair.complete` signature did not verify.
    PairingSignature,
    /// A pending pairing ended unpaired: someone said the verification codes differ, nobody
    /// confirmed in time, or the phone went away first.
    PairingNotConfirmed,
    /// Phone and desktop share no protocol version.
    VersionMismatch,
    /// A paired device id came back with another key.
    IdentityChanged,
    /// A phone refused the desktop's TLS certificate (it pinned another one).
    CertificateMismatch,
    /// A hello from a device id that is not paired.
    UnknownDevice,
    /// A hello whose proof does not verify for this connection (forged or replayed).
    BadProof,
    /// A paired phone said hello in another binding than the one it paired with
    /// (`docs/protocol.md`, "Hello bindings"): refused, never downgraded.
    BindingChanged,
    /// A frame that is not a valid ifp/1 message (or not JSON).
    InvalidFrame,
    /// A frame over the 1 MiB limit.
    OversizeFrame,
    /// A connection's TLS or WebSocket handshake failed for another reason.
    Handshake,
    /// A phone went silent past the keepalive limit, or a connection said no valid hello in
    /// time.
    Timeout,
    /// A connection without hello was dropped to make room for a newer one (the budget of
    /// connections without hello was full), or for having no hello past its deadline.
    Evicted,
    /// The trust file could not be written.
    TrustFile,
    /// mDNS advertising is unavailable.
    Mdns,
}

impl FailureKind {
    /// What a person should do about this kind of failure.
    pub fn what_to_do(self) -> &'static str {
        match self {
            FailureKind::NoPairingWindow => "Open a pairing window on the desktop, then scan the code again.",
            FailureKind::WrongCode => "Check the 6-digit code on the desktop and type it again (5 wrong codes close the window).",
            FailureKind::ExpiredCode => "The code lives 2 minutes: open a new pairing window and use the new code.",
            FailureKind::RateLimited => "Too many wrong codes: open a new pairing window; if you did not type them, someone on the network may be guessing.",
            FailureKind::PairingSignature => "Start pairing again from the phone; if it repeats, reinstall the phone app.",
            FailureKind::PairingNotConfirmed => "Nothing was saved. Open a new pairing window with the phone next to you and compare the verification codes; if they differ, someone on the network may be relaying the pairing: pair with the QR code.",
            FailureKind::VersionMismatch => "Update the app on the phone or on the desktop so both speak a common protocol version.",
            FailureKind::IdentityChanged => "If the phone was reset or reinstalled, unpair it on the desktop and pair it again; otherwise someone may be impersonating it.",
            FailureKind::CertificateMismatch => "The phone pinned another desktop certificate: pair the phone again from the desktop's pairing window.",
            FailureKind::UnknownDevice => "Pair this phone first: open a pairing window on the desktop.",
            FailureKind::BadProof => "Reconnect from the phone; if it repeats, unpair and pair again.",
            FailureKind::BindingChanged => "The phone's app changed how it proves its connection (for example an update, or another app using its identity): if you expect that, unpair it and pair it again; otherwise someone may be trying to weaken its link.",
            FailureKind::InvalidFrame => "The phone app sent a malformed message: update the phone app.",
            FailureKind::OversizeFrame => "The phone app sent a message over 1 MiB: update the phone app.",
            FailureKind::Handshake => "Check that the phone connects to this desktop's address and port over TLS 1.3.",
            FailureKind::Timeout => "Check the phone is awake and on the same network.",
            FailureKind::Evicted => "If no phone was connecting, a host on the network keeps opening connections without pairing; paired phones still get in. Find the address above if it repeats.",
            FailureKind::TrustFile => "Check the data folder is writable and has free space.",
            FailureKind::Mdns => "Phones cannot find the desktop by name: pair with the QR code or type the address.",
        }
    }
}

/// One failure, in plain words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct LinkFailure {
    /// The kind.
    pub kind: FailureKind,
    /// What happened, in words (names the device, address and values involved).
    pub words: String,
    /// What to do about it.
    pub what_to_do: String,
    /// The device involved, when known.
    pub device_id: Option<String>,
    /// The peer address (`ip:port`), when known.
    pub address: Option<String>,
    /// When, milliseconds since the Unix epoch.
    #[ts(type = "number")]
    pub at_ms: u64,
}

/// State of the mDNS advertisement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[serde(tag = "state", rename_all = "snake_case")]
#[ts(export)]
pub enum MdnsStatus {
    /// Turned off in the configuration.
    Disabled,
    /// The listener has not started yet.
    NotStarted,
    /// Advertising under `fullname`.
    Advertising {
        /// The full service instance name.
        fullname: String,
    },
    /// Could not advertise; the link still works by address.
    Unavailable {
        /// Why, in words.
        reason: String,
    },
}

/// One address the link can be reached at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ListenAddress {
    /// The network interface's name (`eth0`, `wlan0`, `lo`).
    pub interface: String,
    /// The IP address.
    pub address: String,
}

/// How one try of a phone to reach the desktop at one address ended without being used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum AttemptOutcome {
    /// The try failed (TCP refused or unreachable, timed out, TLS or certificate failed).
    Failed,
    /// Another address completed first; this try was still connecting and was given up.
    Abandoned,
}

/// One try of a phone to reach the desktop that did not become the connection, as the phone
/// reports it after it connected (`ext.x-ifp-link-attempts` of its `control.hello`,
/// `docs/protocol.md`, "Link attempts").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, TS)]
#[ts(export)]
pub struct LinkAttempt {
    /// The address tried, `ip:port` (IPv6 in brackets).
    pub addr: String,
    /// Failed or abandoned.
    pub outcome: AttemptOutcome,
    /// What happened, the phone's words (at most [`MAX_ATTEMPT_ERROR_CHARS`] characters).
    pub error: String,
    /// When the try started, milliseconds since the Unix epoch (the phone's clock).
    #[ts(type = "number")]
    pub at_ms: u64,
    /// How long it ran before it failed or was given up, ms.
    #[ts(type = "number")]
    pub after_ms: u64,
}

/// Most attempts one hello may report.
pub const MAX_REPORTED_ATTEMPTS: usize = 16;

/// Longest `error` of one reported attempt, characters.
pub const MAX_ATTEMPT_ERROR_CHARS: usize = 300;

/// What a phone reported about reaching the desktop on its last connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct PhoneAttempts {
    /// The phone's device id.
    pub device_id: String,
    /// Where the connection that carried the report came from (`ip:port`, as the desktop sees it).
    pub connected_from: String,
    /// The address of the desktop the phone reached (`ip:port`, the listener's side).
    pub connected_to: String,
    /// The phone's tries that did not become the connection, in the order they started.
    pub attempts: Vec<LinkAttempt>,
    /// When the desktop received the report, milliseconds since the Unix epoch.
    #[ts(type = "number")]
    pub received_at_ms: u64,
}

/// How many phones' attempt reports diagnostics keep (the latest per phone).
pub const MAX_ATTEMPT_REPORTS: usize = 8;

/// Reads `ext.x-ifp-link-attempts` of a phone's `control.hello`: an array of at most
/// [`MAX_REPORTED_ATTEMPTS`] objects `{addr, outcome, error, at_ms, after_ms}`.
///
/// Errors: [`AttemptsError`], naming the entry and field that is wrong
/// (`[2].addr: expected ip:port ...`).
pub fn parse_link_attempts(v: &serde_json::Value) -> Result<Vec<LinkAttempt>, AttemptsError> {
    let arr = v.as_array().ok_or(AttemptsError::NotAnArray)?;
    if arr.len() > MAX_REPORTED_ATTEMPTS {
        return Err(AttemptsError::TooMany(arr.len()));
    }
    let mut out = Vec::with_capacity(arr.len());
    for (i, item) in arr.iter().enumerate() {
        let a: LinkAttempt =
            serde_json::from_value(item.clone()).map_err(|e| AttemptsError::Entry {
                index: i,
                reason: e.to_string(),
            })?;
        if a.addr.parse::<std::net::SocketAddr>().is_err() {
            return Err(AttemptsError::Addr {
                index: i,
                got: a.addr,
            });
        }
        if a.error.chars().count() > MAX_ATTEMPT_ERROR_CHARS {
            return Err(AttemptsError::ErrorTooLong { index: i });
        }
        out.push(a);
    }
    Ok(out)
}

/// Why a phone's `ext.x-ifp-link-attempts` report was not kept ([`parse_link_attempts`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AttemptsError {
    /// The report is not a JSON array.
    #[error("expected an array of attempts")]
    NotAnArray,
    /// More entries than [`MAX_REPORTED_ATTEMPTS`] (the count given).
    #[error("{0} attempts, at most {MAX_REPORTED_ATTEMPTS}")]
    TooMany(usize),
    /// Entry `index` is not an attempt object.
    #[error("[{index}]: {reason} (expected {{addr, outcome, error, at_ms, after_ms}})")]
    Entry {
        /// The entry's position, from 0.
        index: usize,
        /// What serde found wrong with it.
        reason: String,
    },
    /// Entry `index`'s `addr` is not `ip:port`.
    #[error("[{index}].addr: expected ip:port, got {got:?}")]
    Addr {
        /// The entry's position, from 0.
        index: usize,
        /// The `addr` it gave.
        got: String,
    },
    /// Entry `index`'s `error` is longer than [`MAX_ATTEMPT_ERROR_CHARS`] characters.
    #[error("[{index}].error: longer than {MAX_ATTEMPT_ERROR_CHARS} characters")]
    ErrorTooLong {
        /// The entry's position, from 0.
        index: usize,
    },
}

/// How far a phone's clock may be from this computer's before it is shown (the phone's
/// details in the Phones view, Troubleshoot): one minute, in milliseconds. Clocks set by the
/// network agree within a second; a minute off is a clock set wrong, not the time a message
/// took. Nothing is refused for it (`docs/protocol.md`, "Timestamps are the phone's").
pub const CLOCK_SKEW_SHOWN_MS: i64 = 60_000;

/// How far a paired phone's clock was from this computer's when it last said hello: its
/// `control.hello`'s `ts` (the phone's clock) minus when it arrived (this computer's clock).
/// Positive: the phone's clock is ahead. Measured once per connection, at hello, the one message
/// a phone always sends fresh (a replayed event carries the time it was first sent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct PhoneClockSkew {
    /// The phone's device id.
    pub device_id: String,
    /// Its label from pairing.
    pub label: String,
    /// Its clock minus this computer's, in milliseconds (negative: behind).
    #[ts(type = "number")]
    pub skew_ms: i64,
    /// When the hello arrived, milliseconds since the Unix epoch (this computer's clock).
    #[ts(type = "number")]
    pub measured_at_ms: u64,
}

impl PhoneClockSkew {
    /// Whether it is at least [`CLOCK_SKEW_SHOWN_MS`] off, either way.
    pub fn is_shown(&self) -> bool {
        self.skew_ms.unsigned_abs() >= CLOCK_SKEW_SHOWN_MS.unsigned_abs()
    }

    /// In words: `1 h 0 min behind`, `1 d 0 h ahead`, `2 min 5 s ahead`.
    pub fn words(&self) -> String {
        skew_words(self.skew_ms)
    }
}

/// `skew_ms` in words, the two largest units, the smaller one rounded: `1 h 0 min behind`,
/// `1 d 0 h ahead`, `2 min 5 s ahead`, `40 s behind` (a day less the few milliseconds a hello
/// takes is `1 d 0 h`, not `23 h 59 min`).
pub fn skew_words(skew_ms: i64) -> String {
    let way = if skew_ms < 0 { "behind" } else { "ahead" };
    let s = skew_ms.unsigned_abs().saturating_add(500) / 1000;
    let size = if s >= 86_400 - 1800 {
        let h = (s + 1800) / 3600;
        format!("{} d {} h", h / 24, h % 24)
    } else if s >= 3600 - 30 {
        let m = (s + 30) / 60;
        format!("{} h {} min", m / 60, m % 60)
    } else if s >= 60 {
        format!("{} min {} s", s / 60, s % 60)
    } else {
        format!("{s} s")
    };
    format!("{size} {way}")
}

#[cfg(test)]
mod skew_tests {
    use super::skew_words;

    #[test]
    fn skew_words_round_the_smaller_unit() {
        assert_eq!(skew_words(-3_600_000), "1 h 0 min behind");
        assert_eq!(skew_words(86_400_000 - 40), "1 d 0 h ahead");
        assert_eq!(skew_words(-3_600_000 + 25), "1 h 0 min behind");
        assert_eq!(skew_words(90 * 60_000 + 29_000), "1 h 30 min ahead");
        assert_eq!(skew_words(125_400), "2 min 5 s ahead");
        assert_eq!(skew_words(-40_000), "40 s behind");
        assert_eq!(skew_words(3 * 86_400_000 + 5 * 3_600_000), "3 d 5 h ahead");
        assert!(
            skew_words(i64::MIN).ends_with(" behind"),
            "no overflow at the extreme"
        );
    }
}

/// Everything the diagnostics panel shows about the link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct LinkDiagnostics {
    /// The TCP port the link listens on (`None` before it starts).
    pub port: Option<u16>,
    /// The addresses it is reachable at, per interface.
    pub addresses: Vec<ListenAddress>,
    /// mDNS state.
    pub mdns: MdnsStatus,
    /// The certificate fingerprint phones pin (lowercase hex SHA-256 of the DER).
    pub cert_fingerprint: String,
    /// The desktop's own device id.
    pub desktop_device_id: String,
    /// How many phones are paired.
    pub paired: usize,
    /// Device ids of the phones connected now.
    pub connected: Vec<String>,
    /// Connections open now that have not said a valid hello (pairing ones included).
    pub without_hello: usize,
    /// Connections without hello dropped to make room, or past their deadline, since start.
    #[ts(type = "number")]
    pub evicted: u64,
    /// What phones reported about the addresses they could not reach (latest per phone, at most
    /// [`MAX_ATTEMPT_REPORTS`]), newest first.
    pub phone_attempts: Vec<PhoneAttempts>,
    /// The last failures, oldest first: at most [`MAX_FAILURES_KEPT`] real ones and at most
    /// [`MAX_PRE_HELLO_KEPT`] coalesced ones from before hello (one per source, with a count).
    pub recent_failures: Vec<LinkFailure>,
    /// Ports of the range (from [`crate::DEFAULT_PORT`] on) another program held when the
    /// link started: the link listens on the next free one, and a firewall rule for the usual
    /// port does not cover it.
    pub ports_taken: Vec<u16>,
    /// Each paired phone's clock against this computer's, measured at its last hello (the
    /// phones that said hello since the link started), by device id.
    pub clock_skews: Vec<PhoneClockSkew>,
}

/// How many real failures diagnostics keep (after hello, key store, mDNS, pairing verdicts).
pub const MAX_FAILURES_KEPT: usize = 32;

/// How many coalesced failures before hello diagnostics keep, one per source address.
pub const MAX_PRE_HELLO_KEPT: usize = 8;

/// The addresses a listener bound to `bound` is reachable at: for `::` (dual stack) every
/// interface address, for `0.0.0.0` every IPv4 one, else the one address.
pub fn listen_addresses(bound: IpAddr) -> Vec<ListenAddress> {
    let ifaces = if_addrs::get_if_addrs().unwrap_or_default();
    if bound.is_unspecified() {
        ifaces
            .iter()
            .filter(|i| bound.is_ipv6() || i.ip().is_ipv4())
            .map(|i| ListenAddress {
                interface: i.name.clone(),
                address: i.ip().to_string(),
            })
            .collect()
    } else {
        let name = ifaces
            .iter()
            .find(|i| i.ip() == bound)
            .map(|i| i.name.clone())
            .unwrap_or_default();
        vec![ListenAddress {
            interface: name,
            address: bound.to_string(),
        }]
    }
}

/// The most likely address of this machine for a phone (the first of
/// [`super::addresses::offered_addresses`] for a dual-stack listener: the default route's
/// interface first, bridges, containers and VPNs last), if any.
pub fn lan_address() -> Option<IpAddr> {
    super::addresses::offered_addresses(IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED))
        .first()
        .and_then(super::addresses::OfferedAddress::ip)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn reads_and_checks_reported_attempts() {
        let good = serde_json::json!([
            {"addr": "203.0.113.1:47470", "outcome": "failed", "error": "connect: Network is unreachable", "at_ms": 1, "after_ms": 0},
            {"addr": "[2001:db8::1]:47470", "outcome": "abandoned", "error": "still connecting", "at_ms": 2, "after_ms": 250}
        ]);
        let a = parse_link_attempts(&good).unwrap();
        assert_eq!(a.len(), 2);
        assert_eq!(a[1].outcome, AttemptOutcome::Abandoned);
        let bad = serde_json::json!([{"addr": "nowhere", "outcome": "failed", "error": "", "at_ms": 1, "after_ms": 0}]);
        let e = parse_link_attempts(&bad).unwrap_err();
        assert!(matches!(e, AttemptsError::Addr { index: 0, .. }), "{e}");
        assert!(e.to_string().contains("[0].addr"), "{e}");
        let bad = serde_json::json!([{"addr": "192.0.2.1:1", "outcome": "maybe", "error": "", "at_ms": 1, "after_ms": 0}]);
        assert!(parse_link_attempts(&bad)
            .unwrap_err()
            .to_string()
            .contains("[0]"));
        let many: Vec<_> = (0..17).map(|_| good[0].clone()).collect();
        assert!(parse_link_attempts(&serde_json::Value::from(many))
            .unwrap_err()
            .to_string()
            .contains("at most 16"));
        assert!(parse_link_attempts(&serde_json::json!({})).is_err());
    }
}
