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
//!
//! One concept a file, re-exported here: `window` (the code and its budget of wrong tries),
//! `backoff` (slowing guessers per source and globally), `invite` (the link, QR code and typed
//! line a phone reads) and `proof` (the bytes each side signs or hashes). The constants both
//! ends share stay here.

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

mod backoff;
mod invite;
mod proof;
mod window;

pub use backoff::{
    PairingBackoff, GLOBAL_BACKOFF_MS, MAX_TRACKED_SOURCES, SOURCE_BACKOFF_BASE_MS,
    SOURCE_BACKOFF_MAX_MS, SOURCE_FORGET_MS,
};
pub use invite::{
    fit_addresses, invite, invite_link, invite_link_multi, invite_offering, parse_typed_line,
    qr_svg, qr_version, typed_line, PairingInvite, TypedLineError, MAX_TYPED_ADDRESSES,
};
pub use proof::{
    commitment_b64, decode32_b64, decode32_hex, desktop_hello_signed_bytes,
    desktop_intro_signed_bytes, hello_signed_bytes, pair_signed_bytes, pairing_commitment,
    random_nonce, verification_code, verification_code_bytes, CodeInputError,
};
pub use window::{CodeCheck, PairingWindow};
