//! What the link tells the app ([`LinkEvent`]), and the credit a delivered message carries.
//!
//! Why a file of its own: the [`Link`](super::Link) handle, the shared state and every
//! connection emit these events, so they sit below all three. [`MessageCredit`] is the token of a
//! connection's [`MAX_UNAPPLIED`] budget (the accounting lives in [`super::connection`]).

use std::sync::Arc;

use super::diagnostics::LinkFailure;
use super::wire::ifp;
use crate::phone_events::DialFrame;

/// Most messages of one connection delivered as [`LinkEvent::Message`] and not yet dropped by
/// the app; past it the connection stops reading until the app catches up (backpressure to the
/// phone through TCP, so memory stays bounded when a phone sends at full speed).
pub const MAX_UNAPPLIED: usize = 1024;

/// A slot of a connection's [`MAX_UNAPPLIED`] budget, carried by [`LinkEvent::Message`]; the slot
/// is free again once every clone is dropped.
#[derive(Debug, Clone)]
pub struct MessageCredit(#[allow(dead_code)] pub(super) Arc<tokio::sync::OwnedSemaphorePermit>);

impl MessageCredit {
    /// A credit of a one-slot budget of its own, for feeding a hub the frames of a peer with no
    /// connection in between ([`crate::fuzz::link_after_hello`]). `None` only if the fresh
    /// semaphore had no slot, which does not happen.
    pub(crate) fn detached() -> Option<Self> {
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
    /// A phone was paired and its key pinned.
    Paired {
        /// Its device id.
        device_id: String,
        /// Its label.
        label: String,
        /// The 6-digit code both screens show (`123 456`).
        verification_code: String,
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
    /// Something failed (also kept in diagnostics).
    Failure(LinkFailure),
}
