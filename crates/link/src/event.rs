//! What the link tells the app ([`LinkEvent`]), and the credit a delivered message carries.
//!
//! Why a file of its own: the [`Link`](super::Link) handle, the shared state and every
//! connection emit these events, so they sit below all three. [`MessageCredit`] is the token of a
//! connection's [`MAX_UNAPPLIED`] budget (the accounting lives in [`super::connection`]).

use std::sync::Arc;

use serde::Serialize;
use ts_rs::TS;

use super::diagnostics::LinkFailure;
use super::wire::ifp;
use switchboard_domain::phone_events::DialFrame;

/// Most messages of one connection delivered as [`LinkEvent::Message`] and not yet dropped by
/// the app; past it the connection stops reading until the app catches up (backpressure to the
/// phone through TCP, so memory stays bounded when a phone sends at full speed).
pub const MAX_UNAPPLIED: usize = 1024;

/// Most bytes of frame text of one connection held by the app at once (16 MiB), besides
/// [`MAX_UNAPPLIED`]: a phone sending frames near the 1 MiB limit holds at most 16 of them (plus
/// the one being read), not 1 024. Each message counts its length, and at least
/// `MAX_UNAPPLIED_BYTES / MAX_UNAPPLIED` (16 KiB), so one budget bounds both.
pub const MAX_UNAPPLIED_BYTES: usize = 16 * 1024 * 1024;

/// The budget's unit, bytes: a connection's budget is `MAX_UNAPPLIED_BYTES / UNIT` permits.
pub(super) const UNAPPLIED_UNIT: usize = 1024;

/// Most dials (`event.phoneline.dial` frames taken by the one-pass reader,
/// [`LinkEvent::Dials`]) of one connection held by the app at once, within the same
/// [`MAX_UNAPPLIED_BYTES`]. More than [`MAX_UNAPPLIED`] because a dial costs less to hold than
/// a general message: it is kept as its text, copied once, and a record of fixed size (about
/// 300 bytes), where a general message is a `serde_json::Value` tree several times its text.
/// At full speed the hub then takes a phone's dials in larger bursts, and the connection stops
/// reading for it less often: on a 2-core machine 4 096 took about 5 % more dials a second than
/// 1 024 (`docs/performance.md`, "2026-12-07, later").
pub const MAX_UNAPPLIED_DIALS: usize = 4096;

/// The permits one message of `len` bytes takes from its connection's budget.
pub(super) fn unapplied_cost(len: usize) -> u32 {
    cost(len, MAX_UNAPPLIED)
}

/// The permits one dial frame of `len` bytes takes from its connection's budget.
pub(super) fn unapplied_dial_cost(len: usize) -> u32 {
    cost(len, MAX_UNAPPLIED_DIALS)
}

/// `len` in budget units, at least the share that lets `most` such messages fill the budget,
/// at most the whole budget (so one message can always be taken).
fn cost(len: usize, most: usize) -> u32 {
    let floor = MAX_UNAPPLIED_BYTES / most / UNAPPLIED_UNIT;
    let own = len.div_ceil(UNAPPLIED_UNIT);
    u32::try_from(own.max(floor).min(MAX_UNAPPLIED_BYTES / UNAPPLIED_UNIT)).unwrap_or(u32::MAX)
}

/// A slot of a connection's [`MAX_UNAPPLIED`] budget, carried by [`LinkEvent::Message`]; the slot
/// is free again once every clone is dropped.
#[derive(Debug, Clone)]
pub struct MessageCredit(#[allow(dead_code)] pub(super) Arc<tokio::sync::OwnedSemaphorePermit>);

/// A pairing whose signature verified and that waits for both confirmations: the person on the
/// desktop that the codes match, and the phone's `pair.confirm`. Nothing is in the trust file
/// yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, TS)]
#[ts(export)]
pub struct PendingPairing {
    /// Names this pending pairing for [`Link::confirm_pairing`](super::Link::confirm_pairing).
    pub id: String,
    /// The phone's device id (as it asked to be paired; not yet trusted).
    pub device_id: String,
    /// The phone's label (as it sent it; not yet trusted).
    pub label: String,
    /// The code the person compares with the phone's screen, `012 345`.
    pub verification_code: String,
    /// When the pending pairing is discarded unless confirmed, ms since the Unix epoch.
    #[ts(type = "number")]
    pub expires_at_ms: u64,
    /// The phone said its person saw the same code.
    pub phone_confirmed: bool,
    /// The person on the desktop said the codes match.
    pub desktop_confirmed: bool,
}

/// Why a pending pairing ended without being paired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum PairingEnd {
    /// The person on the desktop said the codes differ.
    CodesDifferDesktop,
    /// The phone said the codes differ.
    CodesDifferPhone,
    /// Not confirmed on both sides in time.
    Expired,
    /// The phone went away (or broke the protocol) before it was confirmed.
    PhoneLeft,
}

impl MessageCredit {
    /// A credit of a one-slot budget of its own, for feeding a hub the frames of a peer with no
    /// connection in between ([`switchboard::fuzz::link_after_hello`]). `None` only if the fresh
    /// semaphore had no slot, which does not happen.
    pub fn detached() -> Option<Self> {
        let budget = Arc::new(tokio::sync::Semaphore::new(1));
        budget
            .try_acquire_owned()
            .ok()
            .map(|p| MessageCredit(Arc::new(p)))
    }
}

/// What the link tells the app.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum LinkEvent {
    /// A paired phone said a valid hello.
    PhoneConnected {
        /// Its device id.
        device_id: String,
        /// Its label from pairing.
        label: String,
        /// Its `ip:port`.
        address: String,
        /// The protocol version chosen (highest common).
        version: u32,
    },
    /// A connected phone went away.
    PhoneDisconnected {
        /// Its device id.
        device_id: String,
        /// Why, in words.
        reason: String,
    },
    /// A phone was paired and its key pinned: both sides confirmed the verification code.
    Paired {
        /// Its device id.
        device_id: String,
        /// Its label.
        label: String,
        /// The 6-digit code both screens show (`123 456`).
        verification_code: String,
    },
    /// A pairing waits for its confirmations (sent again when one side confirmed).
    PairingPending(PendingPairing),
    /// A pending pairing ended without being paired; nothing was written.
    PairingEnded {
        /// The pending pairing's id.
        id: String,
        /// The phone's device id (not trusted).
        device_id: String,
        /// The phone's label (not trusted).
        label: String,
        /// Why.
        end: PairingEnd,
    },
    /// A phone was unpaired on the desktop.
    Unpaired {
        /// Its device id.
        device_id: String,
    },
    /// The pairing window closed before use: it took its last allowed wrong code
    /// ([`MAX_WRONG_TRIES`](super::pairing::MAX_WRONG_TRIES)); the person must open a new one.
    PairingClosed {
        /// Why, in words.
        reason: String,
    },
    /// A validated message from a connected phone.
    Message {
        /// The sending phone.
        device_id: String,
        /// The message (boxed: it is large next to the other events).
        envelope: Box<ifp::Envelope>,
        /// One of the connection's [`MAX_UNAPPLIED`] slots, freed when the event (and every
        /// clone of it) is dropped: a phone sending faster than the app applies its messages
        /// waits (its connection stops reading) instead of queueing without bound.
        credit: MessageCredit,
    },
    /// Validated `event.phoneline.dial` frames from a connected phone, consecutive on its
    /// connection and in the order received, each read in one pass ([`DialFrame::parse`]). A
    /// dial frame the shortcut declines arrives as [`LinkEvent::Message`] instead; both mean the
    /// same to the app. At most [`DRAIN_MAX`](super::connection::DRAIN_MAX) frames.
    Dials {
        /// The sending phone.
        device_id: String,
        /// The frames' envelope fields and dials.
        frames: Vec<DialFrame>,
        /// As for [`LinkEvent::Message`], one slot per frame.
        credit: MessageCredit,
    },
    /// A frame of a connected phone the link refused itself (the envelope validator, a `device`
    /// naming another phone, `pair.*` or a second `control.hello` after hello) whose `id` was
    /// readable ([`switchboard_wire::ifp::readable_id`]). The link has already answered `error` with
    /// `parent` = `id`; the app counts the message as applied and acknowledges it in order,
    /// once the messages before it are durable (`docs/protocol.md`, "Errors from the desktop").
    Refused {
        /// The sending phone.
        device_id: String,
        /// The refused message's `id`.
        id: String,
        /// The class the refusal was answered with.
        class: ifp::ErrorClass,
        /// The refusal's detail, in words.
        detail: String,
        /// As for [`LinkEvent::Message`].
        credit: MessageCredit,
    },
    /// The addresses this desktop offers changed while the link runs (an address added or
    /// gone, an interface up or down; told by the kernel on Linux, else looked at every
    /// [`LinkConfig::address_check`]): mDNS
    /// advertises them now, and an open pairing window offers them.
    ///
    /// [`LinkConfig::address_check`]: super::LinkConfig::address_check
    AddressesChanged {
        /// Every address offered now, most likely first.
        addresses: Vec<super::addresses::OfferedAddress>,
    },
    /// Something failed (also kept in diagnostics).
    Failure(LinkFailure),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_budget_bounds_the_messages_and_their_bytes() {
        let budget = MAX_UNAPPLIED_BYTES / UNAPPLIED_UNIT;
        // Small messages: MAX_UNAPPLIED of them fill the budget.
        assert_eq!(budget / unapplied_cost(300) as usize, MAX_UNAPPLIED);
        // Frames at the 1 MiB limit: 16 of them.
        assert_eq!(
            budget / unapplied_cost(switchboard_wire::ifp::MAX_FRAME_BYTES) as usize,
            16
        );
        assert_eq!(unapplied_cost(16 * 1024 + 1), 17);
        // Never more than the whole budget, so one message can always be taken.
        assert_eq!(unapplied_cost(usize::MAX / 2) as usize, budget);
        // Dials: MAX_UNAPPLIED_DIALS small ones, the same 16 at the frame limit.
        assert_eq!(
            budget / unapplied_dial_cost(600) as usize,
            MAX_UNAPPLIED_DIALS
        );
        assert_eq!(
            budget / unapplied_dial_cost(switchboard_wire::ifp::MAX_FRAME_BYTES) as usize,
            16
        );
        assert_eq!(unapplied_dial_cost(usize::MAX / 2) as usize, budget);
    }
}
