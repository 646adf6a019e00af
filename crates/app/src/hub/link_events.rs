//! Link events into the hub ([`Hub::apply`]): a phone connected or disconnected, paired or
//! unpaired, a message the link refused, and the messages and dials it passes on; and the
//! connection rows those events put in the dial log's timeline.
//!
//! Why apart: these are what the link says about a phone rather than what the phone says; they
//! change the phone's connection state and timeline, never its settings or dials.

use switchboard_link::LinkEvent;

use super::{lock, Hub, HubNotice, ACK_EVERY};

impl Hub {
    /// Puts a connection event (connected, disconnected, pairing, unpaired) in the dial log's
    /// timeline; other link events are not connection events.
    fn record_connection(&self, event: &LinkEvent) {
        use switchboard_dials::{ConnectionEvent, ConnectionKind};
        let (phone, label, kind, detail) = match event {
            LinkEvent::PhoneConnected {
                device_id,
                label,
                address,
                version,
            } => (
                device_id.clone(),
                label.clone(),
                ConnectionKind::Connected,
                format!("hello from {address}, ifp/{version}"),
            ),
            LinkEvent::PhoneDisconnected { device_id, reason } => (
                device_id.clone(),
                self.label_of(device_id),
                ConnectionKind::Disconnected,
                reason.clone(),
            ),
            LinkEvent::Paired {
                device_id,
                label,
                verification_code,
            } => (
                device_id.clone(),
                label.clone(),
                ConnectionKind::Paired,
                format!("paired, verification code {verification_code}"),
            ),
            LinkEvent::PairingPending(p) => (
                p.device_id.clone(),
                p.label.clone(),
                ConnectionKind::PairingPending,
                // Who has confirmed first: it is what tells two such rows apart, and a
                // narrow table cuts the end of the text.
                format!(
                    "{}; verification code {}",
                    match (p.phone_confirmed, p.desktop_confirmed) {
                        (false, false) => "neither side has confirmed yet",
                        (true, false) => "the phone confirmed, the desktop not yet",
                        (false, true) => "the desktop confirmed, the phone not yet",
                        (true, true) => "both sides confirmed",
                    },
                    p.verification_code
                ),
            ),
            LinkEvent::PairingEnded {
                device_id,
                label,
                end,
                ..
            } => (
                device_id.clone(),
                label.clone(),
                ConnectionKind::PairingEnded,
                format!("{end:?}"),
            ),
            LinkEvent::Unpaired { device_id } => (
                device_id.clone(),
                self.label_of(device_id),
                ConnectionKind::Unpaired,
                "unpaired on the desktop".to_owned(),
            ),
            _ => return,
        };
        self.inner.dials.record_connection(ConnectionEvent {
            seq: 0,
            phone,
            label,
            at_ms: self.inner.clock.now_ms_i64(),
            event: kind,
            detail,
        });
    }

    fn label_of(&self, device_id: &str) -> String {
        lock(&self.inner.state)
            .phones
            .get(device_id)
            .map(|p| p.label.clone())
            .unwrap_or_default()
    }

    /// Applies one link event (module docs). Never fails: problems are answered to the phone
    /// with an ifp/1 `error` when it can be, and kept in the phone's `problems`.
    pub async fn apply(&self, event: LinkEvent) {
        self.record_connection(&event);
        match event {
            LinkEvent::PhoneConnected {
                device_id,
                label,
                address,
                ..
            } => {
                let last = {
                    let mut st = lock(&self.inner.state);
                    let p = self.phone_mut(&mut st, &device_id);
                    p.connected = true;
                    p.label.clone_from(&label);
                    p.address = Some(address);
                    // Only what is durable; the rest follows when its dials are.
                    p.durable_ack.clone()
                };
                self.notify(HubNotice::PhoneConnected {
                    device_id: device_id.clone(),
                    label,
                });
                if let Some((last_id, applied)) = last {
                    self.send_ack(&device_id, last_id, applied);
                }
            }
            LinkEvent::PhoneDisconnected { device_id, reason } => {
                // A newer connection of the same phone may already have replaced this one.
                let still = self
                    .inner
                    .link
                    .as_ref()
                    .is_some_and(|l| l.connected().contains(&device_id));
                {
                    let mut st = lock(&self.inner.state);
                    if let Some(p) = st.phones.get_mut(&device_id) {
                        p.connected = still;
                    }
                }
                self.notify(HubNotice::PhoneDisconnected { device_id, reason });
            }
            LinkEvent::Paired {
                device_id, label, ..
            } => {
                let mut st = lock(&self.inner.state);
                let p = self.phone_mut(&mut st, &device_id);
                p.label = label;
            }
            LinkEvent::Unpaired { device_id } => self.unpaired(&device_id),
            LinkEvent::Refused {
                device_id,
                id,
                class,
                detail,
                ..
            } => {
                let due = {
                    let mut st = lock(&self.inner.state);
                    let p = self.phone_mut(&mut st, &device_id);
                    if p.seen_ids.contains(&id) {
                        p.reack = true;
                        false
                    } else {
                        p.remember_id(&id);
                        p.problem(format!("{id} refused ({class}): {detail}"));
                        p.took(&id);
                        p.unacked >= ACK_EVERY
                    }
                };
                if due {
                    self.take_ack_point(&device_id);
                }
            }
            LinkEvent::Message {
                device_id,
                envelope,
                ..
            } => self.apply_message(&device_id, *envelope).await,
            LinkEvent::Dials {
                device_id, frames, ..
            } => {
                let mut pending = Vec::new();
                for frame in frames {
                    self.apply_dial_frame(&device_id, frame, &mut pending).await;
                }
                self.flush_dials(&mut pending).await;
            }
            _ => {}
        }
    }

    /// The phone was unpaired: its generation is forgotten and its waiting proposals end
    /// (`expiry.rs`).
    fn unpaired(&self, device_id: &str) {
        lock(&self.inner.generations).forget(device_id);
        {
            let mut st = lock(&self.inner.state);
            if let Some(p) = st.phones.get_mut(device_id) {
                p.receiver.set_home_generation(self.inner.home_generation);
            }
        }
        self.end_proposals_of(device_id);
    }
}
