//! What the app hears from the hub, synchronously and in order: each link event just before
//! the hub applies it, and each notice just after the event that caused it was applied.
//!
//! Notices are handed over outside the hub's state lock, so an observer may read the hub
//! (e.g. [`Hub::phone`]) but must return quickly: the hub's task waits for it.

use super::{Hub, HubNotice};
use switchboard_link::LinkEvent;

/// The hub's observer (the app layer's, or a test's). Both methods default to doing nothing.
pub trait HubObserver: Send + Sync {
    /// A link event, before the hub applies it.
    fn link_event(&self, event: &LinkEvent) {
        let _ = event;
    }

    /// A notice, after the hub applied what caused it.
    fn notice(&self, hub: &Hub, notice: &HubNotice) {
        let _ = (hub, notice);
    }
}
