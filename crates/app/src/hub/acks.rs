//! Acknowledgements: what the hub tells each phone it has applied, and when.
//!
//! Why its own file: the acknowledgement point (`control.ack {last_id, applied}`) is the promise
//! that lets a phone stop resending, so when it goes out is a rule of its own. **Acknowledged
//! means durable**: a message is acknowledged only once its effect, and that of every message
//! before it, is as durable as the desktop keeps it: a dial with a stored retention label once
//! its SQLite transaction committed, a `transient` dial (or any dial of a log in memory only)
//! once held, an `action.*` message once the Confirmations mirror it changed is written to the
//! file it is kept in across restarts (when it is: [`HubParts::confirmations_saved`]), every
//! other message (kept in memory) once applied.
//!
//! How: every [`ACK_EVERY`] applied messages of a phone, when the link's event queue runs dry
//! ([`Hub::run`], [`Hub::flush_acks`]), the hub takes an *ack point* (the phone's last applied
//! id and count) together with the dial log's [`DialLogHandle::durable_mark`] and the mirror's
//! revision at that moment, after handing the log every dial applied so far. A point goes out
//! once the log's durable watermark reaches its mark and the mirror's written revision reaches
//! its revision ([`Hub::release_acks`], run after each burst and whenever either moves).
//! Points are taken and released in order, so acknowledgements stay monotonic, and they come
//! per committed group, not per dial. On connect the phone is sent the
//! newest released point. Spec: `docs/protocol.md`, "Acknowledgement and replay";
//! `ifp1-notes.md` ("Events: dedup, generation fence, ordering").
//!
//! [`DialLogHandle::durable_mark`]: switchboard_dials::DialLogHandle::durable_mark
//! [`HubParts::confirmations_saved`]: super::HubParts::confirmations_saved

use super::{lock, Hub};
use switchboard_wire::ifp::outgoing::ControlAck;
use switchboard_wire::ifp::OutgoingMessage;

/// Take an acknowledgement point after this many applied messages from one phone (also when
/// the link's queue runs dry); it is sent once its dials are durable.
pub const ACK_EVERY: u64 = 64;

/// Most ack points waiting for the dial log per phone; past it the newest waiting point is
/// replaced by the newer one (it covers it), so a stalled writer cannot grow the queue.
pub const MAX_WAITING_ACKS: usize = 1024;

/// An acknowledgement waiting for the dials before it to be durable, and the Confirmations
/// mirror as it was then to be written.
#[derive(Debug, Clone)]
pub(super) struct AckPoint {
    /// The dial log's durability mark when the point was taken.
    pub(super) mark: u64,
    /// The mirror's [`kept_revision`](switchboard_domain::confirmations::ConfirmationMirror::kept_revision)
    /// when the point was taken (0 when the mirror is not kept in a file).
    pub(super) kept: u64,
    pub(super) last_id: String,
    pub(super) applied: u64,
}

impl Hub {
    /// Whether the phone has [`ACK_EVERY`] messages without an ack point.
    pub(super) fn ack_due(&self, device_id: &str) -> bool {
        let st = lock(&self.inner.state);
        st.phones
            .get(device_id)
            .is_some_and(|p| p.unacked >= ACK_EVERY)
    }

    /// Takes an ack point for `device_id` (when it has messages without one) and sends what is
    /// durable. The caller has handed the dial log every dial applied so far.
    pub(super) fn take_ack_point(&self, device_id: &str) {
        let mark = self.inner.dials.durable_mark();
        let kept = self.kept_mark();
        {
            let mut st = lock(&self.inner.state);
            if let Some(p) = st.phones.get_mut(device_id) {
                p.take_ack_point(mark, kept);
            }
        }
        self.release_acks();
    }

    /// The Confirmations mirror's revision now, when it is kept in a file (else 0): what an ack
    /// point taken now waits to be written.
    fn kept_mark(&self) -> u64 {
        match (&self.inner.confirmations, &self.inner.confirmations_saved) {
            (Some(m), Some(_)) => lock(m).kept_revision(),
            _ => 0,
        }
    }

    /// Whether the mirror's revision `kept` is written (always, when it is not kept in a file).
    fn kept_written(&self, kept: u64) -> bool {
        self.inner
            .confirmations_saved
            .as_ref()
            .map_or(true, |s| *s.borrow() >= kept)
    }

    /// Sends each phone the newest ack point whose dials are all durable (one `control.ack` per
    /// phone, monotonic). Phones not connected are skipped by the link and get it on connect.
    pub fn release_acks(&self) {
        let due: Vec<(String, String, u64)> = {
            let mut st = lock(&self.inner.state);
            st.phones
                .iter_mut()
                .filter_map(|(d, p)| {
                    let mut newest = None;
                    while p.waiting_acks.front().is_some_and(|a| {
                        self.inner.dials.is_durable(a.mark) && self.kept_written(a.kept)
                    }) {
                        newest = p.waiting_acks.pop_front();
                    }
                    let a = newest?;
                    p.durable_ack = Some((a.last_id.clone(), a.applied));
                    Some((d.clone(), a.last_id, a.applied))
                })
                .collect()
        };
        for (device_id, last_id, applied) in due {
            self.send_ack(&device_id, last_id, applied);
        }
    }

    /// Sends `control.ack` (a point already durable).
    pub(super) fn send_ack(&self, device_id: &str, last_id: String, applied: u64) {
        let Some(link) = &self.inner.link else {
            return;
        };
        let ack = OutgoingMessage::Ack(ControlAck { last_id, applied });
        if let Err(e) = link.send(device_id, ack) {
            tracing::debug!("hub could not acknowledge {device_id}: {e}");
        }
    }

    /// Takes an ack point for every phone with messages applied since its last one, and sends
    /// what is durable. The caller has handed the dial log every dial applied so far.
    ///
    /// A phone that resent messages already taken in (and nothing new since) is sent its
    /// newest durable point again: it covers them, and it is the same point as before, so
    /// acknowledgements never go back. When a newer point is waiting, that one covers them.
    pub fn flush_acks(&self) {
        let mark = self.inner.dials.durable_mark();
        let kept = self.kept_mark();
        let again: Vec<(String, String, u64)> = {
            let mut st = lock(&self.inner.state);
            st.phones
                .iter_mut()
                .filter_map(|(d, p)| {
                    p.take_ack_point(mark, kept);
                    let reack = std::mem::take(&mut p.reack);
                    if !reack || !p.waiting_acks.is_empty() {
                        return None;
                    }
                    let (id, n) = p.durable_ack.clone()?;
                    Some((d.clone(), id, n))
                })
                .collect()
        };
        self.release_acks();
        for (device_id, last_id, applied) in again {
            self.send_ack(&device_id, last_id, applied);
        }
    }
}

impl super::PhoneState {
    /// Queues an ack point at the phone's last applied message, if it has messages without one.
    fn take_ack_point(&mut self, mark: u64, kept: u64) {
        if self.unacked == 0 {
            return;
        }
        let Some(last_id) = self.last_id.clone() else {
            return;
        };
        if self.waiting_acks.len() >= MAX_WAITING_ACKS {
            // The newer point covers the newest waiting one (its mark is at least as high).
            self.waiting_acks.pop_back();
        }
        self.waiting_acks.push_back(AckPoint {
            mark,
            kept,
            last_id,
            applied: self.applied,
        });
        self.unacked = 0;
    }
}
