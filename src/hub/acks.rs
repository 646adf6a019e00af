//! Acknowledgements: what the hub tells each phone it has applied, and when.
//!
//! Why its own file: the acknowledgement point (`control.ack {last_id, applied}`) is the promise
//! that lets a phone stop resending, so when it goes out is a rule of its own: every
//! [`ACK_EVERY`] applied messages, when the link's event queue runs dry ([`Hub::run`],
//! [`Hub::flush_acks`]) and when the phone connects. Spec: `docs/protocol.md`,
//! "Acknowledgement and replay"; `ifp1-notes.md` ("Events: dedup, generation fence, ordering").

use super::{lock, Hub};
use crate::ifp::outgoing::ControlAck;
use crate::ifp::OutgoingMessage;

/// Send a `control.ack` after this many applied messages from one phone (also sent when the
/// link's queue runs dry and when the phone connects).
pub const ACK_EVERY: u64 = 64;

impl Hub {
    /// `(last_id, applied)` when the phone has [`ACK_EVERY`] messages unacknowledged.
    pub(super) fn ack_due(&self, device_id: &str) -> Option<(String, u64)> {
        let st = lock(&self.inner.state);
        st.phones
            .get(device_id)
            .filter(|p| p.unacked >= ACK_EVERY)
            .and_then(|p| p.last_id.clone().map(|id| (id, p.applied)))
    }

    /// Sends `control.ack`; the phone's unacknowledged count is reset only when the link took it.
    pub(super) fn send_ack(&self, device_id: &str, last_id: String, applied: u64) {
        let Some(link) = &self.inner.link else {
            return;
        };
        let ack = OutgoingMessage::Ack(ControlAck { last_id, applied });
        match link.send(device_id, ack) {
            Ok(()) => {
                let mut st = lock(&self.inner.state);
                if let Some(p) = st.phones.get_mut(device_id) {
                    p.unacked = 0;
                }
            }
            Err(e) => tracing::debug!("hub could not acknowledge {device_id}: {e}"),
        }
    }

    /// Sends `control.ack` to every phone with messages applied since its last ack (phones not
    /// connected are skipped by the link and acknowledged when they come back).
    pub fn flush_acks(&self) {
        let due: Vec<(String, String, u64)> = {
            let st = lock(&self.inner.state);
            st.phones
                .iter()
                .filter(|(_, p)| p.unacked > 0)
                .filter_map(|(d, p)| p.last_id.clone().map(|id| (d.clone(), id, p.applied)))
                .collect()
        };
        for (device_id, last_id, applied) in due {
            self.send_ack(&device_id, last_id, applied);
        }
    }
}
