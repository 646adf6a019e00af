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
    /// The last failures, oldest first: at most [`MAX_FAILURES_KEPT`] real ones and at most
    /// [`MAX_PRE_HELLO_KEPT`] coalesced ones from before hello (one per source, with a count).
    pub recent_failures: Vec<LinkFailure>,
}

/// How many real failures diagnostics keep (after hello, key store, mDNS, pairing verdicts).
pub const MAX_FAILURES_KEPT: usize = 32;

/// How many coalesced failures before hello diagnostics keep, one per source address.
pub const MAX_PRE_HELLO_KEPT: usize = 8;

/// The addresses a listener bound to `bound` is reachable at: for an unspecified address
/// (`0.0.0.0` / `::`) every interface address of that family, else the one address.
pub fn listen_addresses(bound: IpAddr) -> Vec<ListenAddress> {
    let ifaces = if_addrs::get_if_addrs().unwrap_or_default();
    if bound.is_unspecified() {
        ifaces
            .iter()
            .filter(|i| i.ip().is_ipv4() == bound.is_ipv4())
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

/// The first non-loopback IPv4 address of this machine (for the pairing link), if any.
pub fn lan_address() -> Option<IpAddr> {
    if_addrs::get_if_addrs()
        .ok()?
        .into_iter()
        .map(|i| i.ip())
        .find(|ip| ip.is_ipv4() && !ip.is_loopback())
}
