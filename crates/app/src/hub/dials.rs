//! Dials: accepted `event.phoneline.dial` events (and dials the link read in one pass) into the
//! dial log, in batches, and the bridge result each held dial implies.
//!
//! Why its own file: dials are the bulk of the traffic, so they take a batched path
//! ([`MAX_DIAL_BATCH`] per round trip to the dial log) that must keep the effects in the order the
//! events came. Spec: `phone-line.md` ("Failure modes and the bridge banner"), `docs/protocol.md`
//! ("Phone-line events").

use std::sync::Arc;

use super::bridge::Via;
use super::{lock, After, Hub, HubNotice, ACK_EVERY};
use switchboard_dials::{DialLogError, DialOutcome, IngestVerdict, Retention};
use switchboard_domain::bridge::CallPath;
use switchboard_domain::phone_events::DialEvent;
use switchboard_link::LinkEvent;
use switchboard_wire::ifp::Verdict;

/// Most accepted dials [`Hub::run`] hands to the dial log in one message (one round trip to the
/// log per batch instead of per dial).
pub const MAX_DIAL_BATCH: usize = 256;

/// An accepted dial waiting for its batch to the dial log ([`Hub::run`]).
pub(super) struct PendingDial {
    note: DialNote,
    record: switchboard_dials::Dial,
}

/// What the hub still needs of a dial once the dial log has it: the bridge result it implies.
pub(super) struct DialNote {
    id: Arc<str>,
    caller: Arc<str>,
    endpoint: Arc<str>,
    outcome: DialOutcome,
    error: Option<Arc<str>>,
    /// When the dial ended (epoch ms): its start plus its duration.
    end_ms: u64,
}

impl DialNote {
    pub(super) fn of(d: &switchboard_dials::Dial) -> Self {
        DialNote {
            id: Arc::clone(&d.id),
            caller: Arc::clone(&d.caller),
            endpoint: Arc::clone(&d.endpoint),
            outcome: d.outcome,
            error: d.error.clone(),
            end_ms: u64::try_from(d.start_ms)
                .unwrap_or(0)
                .saturating_add(d.duration_ms),
        }
    }
}

impl Hub {
    /// A dial read in one pass ([`LinkEvent::Dials`]): the receiver rules now, the ingest with the
    /// next batch of `pending`.
    pub(super) async fn apply_dial_frame(
        &self,
        device_id: &str,
        frame: switchboard_domain::phone_events::DialFrame,
        pending: &mut Vec<PendingDial>,
    ) {
        let (accepted, ack_due) = self.apply_dial_frame_state(device_id, frame);
        if let Some(record) = accepted {
            pending.push(PendingDial {
                note: DialNote::of(&record),
                record,
            });
        }
        if pending.len() >= MAX_DIAL_BATCH {
            self.flush_dials(pending).await;
        }
        if ack_due {
            // The ack point's mark must cover every dial before it.
            self.flush_dials(pending).await;
            self.take_ack_point(device_id);
        }
    }

    /// [`Hub::apply`], except that an accepted dial's ingest (and what follows from it) waits in
    /// `pending` for the next [`Hub::flush_dials`]; anything else flushes `pending` first.
    pub(super) async fn apply_deferring(&self, event: LinkEvent, pending: &mut Vec<PendingDial>) {
        let event = match event {
            LinkEvent::Dials {
                device_id, frames, ..
            } => {
                for frame in frames {
                    self.apply_dial_frame(&device_id, frame, pending).await;
                }
                return;
            }
            other => other,
        };
        let LinkEvent::Message {
            device_id,
            envelope,
            ..
        } = event
        else {
            self.flush_dials(pending).await;
            self.apply(event).await;
            return;
        };
        if envelope.r#type != switchboard_domain::phone_events::DIAL_EVENT {
            // Its effects may depend on the dials before it (e.g. settings and banners).
            self.flush_dials(pending).await;
        }
        match self.apply_message_state(&device_id, &envelope) {
            After::Dial {
                dial,
                session,
                retention,
            } => {
                let record = dial.to_dial(&device_id, &session, retention);
                pending.push(PendingDial {
                    note: DialNote::of(&record),
                    record,
                });
                if pending.len() >= MAX_DIAL_BATCH {
                    self.flush_dials(pending).await;
                }
            }
            after => self.apply_after(&device_id, after).await,
        }
        if self.ack_due(&device_id) {
            self.flush_dials(pending).await;
            self.take_ack_point(&device_id);
        }
    }

    /// Hands the waiting dials to the dial log in one batch, then applies what follows from each
    /// verdict, in order.
    pub(super) async fn flush_dials(&self, pending: &mut Vec<PendingDial>) {
        if pending.is_empty() {
            return;
        }
        let batch = std::mem::take(pending);
        let (records, rest): (Vec<_>, Vec<_>) = batch
            .into_iter()
            .map(|p| {
                // The record's phone is the reporting phone's device id.
                let device_id = Arc::clone(&p.record.phone);
                (p.record, (device_id, p.note))
            })
            .unzip();
        let n = records.len();
        let result = self.inner.dials.ingest_batch(records).await;
        let closed = DialLogError::Closed;
        let verdicts: Vec<Result<&IngestVerdict, &DialLogError>> = match &result {
            Ok(v) if v.len() == n => v.iter().map(Ok).collect(),
            Ok(_) => (0..n).map(|_| Err(&closed)).collect(),
            Err(e) => (0..n).map(|_| Err(e)).collect(),
        };
        // One dial-count notice per phone per batch, with the total after it: the dials held
        // are counted here, then added under one lock.
        let mut counted: Vec<(Arc<str>, u64)> = Vec::new();
        for ((device_id, note), verdict) in rest.into_iter().zip(verdicts) {
            if self.after_ingest(&device_id, &note, verdict) {
                match counted.iter_mut().find(|(d, _)| *d == device_id) {
                    Some(slot) => slot.1 += 1,
                    None => counted.push((device_id, 1)),
                }
            }
        }
        self.count_held(counted);
    }

    /// The receiver rules for a dial read in one pass ([`LinkEvent::Dials`]), as
    /// [`Hub::apply_message_state`] applies them to an envelope; the dial when accepted, and
    /// whether an ack point is due ([`Hub::ack_due`]).
    pub(super) fn apply_dial_frame_state(
        &self,
        device_id: &str,
        frame: switchboard_domain::phone_events::DialFrame,
    ) -> (Option<switchboard_dials::Dial>, bool) {
        let mut st = lock(&self.inner.state);
        let p = self.phone_mut(&mut st, device_id);
        if !p.seen_ids.is_empty() && p.seen_ids.contains(&*frame.id) {
            // Sent again after this run refused it: nothing changes, nothing is counted.
            p.reack = true;
            return (None, false);
        }
        let outcome = p.receiver.receive_event_fields(
            switchboard_domain::phone_events::DIAL_EVENT,
            Some(&*frame.session),
            Some(frame.generation),
            frame.seq,
            &frame.dial.id,
            &frame.id,
        );
        let accepted = match outcome.verdict {
            Verdict::Accepted => {
                self.raise_generation(device_id, p, Some(frame.generation));
                Some(frame.dial)
            }
            // The same dial sent again: not counted, the acknowledgement does not move.
            Verdict::AcknowledgedDuplicate
                if p.receiver
                    .is_resend(Some(&frame.session), &frame.dial.id, &frame.id) =>
            {
                p.reack = true;
                return (None, false);
            }
            // Another message repeating a dial's dedup key: it changes nothing, and is
            // acknowledged by its own id like any new message (the dial it repeats was
            // accepted before it, so it is durable when the acknowledgement goes).
            Verdict::AcknowledgedDuplicate => {
                p.remember_id(&frame.id);
                None
            }
            Verdict::Rejected => {
                p.problem(format!(
                    "{} {} refused: {}",
                    switchboard_domain::phone_events::DIAL_EVENT,
                    frame.id,
                    outcome.reason.clone().unwrap_or_default()
                ));
                self.refuse(device_id, &frame.id, &outcome);
                p.remember_id(&frame.id);
                None
            }
        };
        p.took(&frame.id);
        (accepted, p.unacked >= ACK_EVERY)
    }

    pub(super) async fn apply_dial(
        &self,
        device_id: &str,
        dial: &DialEvent,
        session: &str,
        retention: Retention,
    ) {
        let record = dial.to_dial(device_id, session, retention);
        let note = DialNote::of(&record);
        let verdict = self.inner.dials.ingest(record).await;
        let phone: Arc<str> = Arc::from(device_id);
        if self.after_ingest(&phone, &note, verdict.as_ref()) {
            self.count_held(vec![(phone, 1)]);
        }
    }

    /// Adds each phone's newly held dials (`(device id, how many)`) to its count, under one
    /// lock, then sends one dial-count notice a phone with the total after it.
    fn count_held(&self, counted: Vec<(Arc<str>, u64)>) {
        if counted.is_empty() {
            return;
        }
        let totals: Vec<(Arc<str>, u64)> = {
            let mut st = lock(&self.inner.state);
            counted
                .into_iter()
                .map(|(device_id, n)| {
                    let p = self.phone_mut(&mut st, &device_id);
                    p.dials_held += n;
                    (device_id, p.dials_held)
                })
                .collect()
        };
        for (device_id, total) in totals {
            self.notify(HubNotice::DialCount {
                device_id: device_id.to_string(),
                total,
            });
        }
    }

    /// What follows from the dial log's verdict on one dial: problems and the bridge result.
    /// Returns whether the dial was held (the caller counts it and sends the dial-count
    /// notice).
    pub(super) fn after_ingest(
        &self,
        phone: &Arc<str>,
        dial: &DialNote,
        verdict: Result<&IngestVerdict, &DialLogError>,
    ) -> bool {
        let device_id: &str = phone;
        let held = match verdict {
            Ok(IngestVerdict::Held) => true,
            // A replay the dial log already holds: nothing follows from it.
            Ok(IngestVerdict::Duplicate) => false,
            Ok(IngestVerdict::Rejected(why)) => {
                let mut st = lock(&self.inner.state);
                self.phone_mut(&mut st, device_id)
                    .problem(format!("dial {} not kept: {why}", dial.id));
                false
            }
            Err(e) => {
                let mut st = lock(&self.inner.state);
                self.phone_mut(&mut st, device_id)
                    .problem(format!("dial {} not kept: {e}", dial.id));
                false
            }
        };
        if !held {
            return false;
        }
        match dial.outcome {
            DialOutcome::Ok => {
                // A success only retires the phone's banner on the path: nothing to do when it
                // has none (the path's latest result time still moves, for snapshot results).
                let path = CallPath::new(Arc::clone(&dial.caller), Arc::clone(&dial.endpoint));
                let has_banner = {
                    let mut store = lock(&self.inner.bridge);
                    let has = store.banner(device_id, &path).is_some();
                    if !has {
                        store.record_success(device_id, &path, dial.end_ms);
                    }
                    has
                };
                if has_banner {
                    self.bridge_result(
                        device_id,
                        &path,
                        None,
                        dial.end_ms,
                        Via::Call(Some((phone, &dial.id))),
                    );
                }
            }
            DialOutcome::Error | DialOutcome::TimedOut => {
                let path = CallPath::new(Arc::clone(&dial.caller), Arc::clone(&dial.endpoint));
                let text = dial.error.as_deref().unwrap_or_default();
                self.bridge_result(
                    device_id,
                    &path,
                    Some(text),
                    dial.end_ms,
                    Via::Call(Some((phone, &dial.id))),
                );
            }
            // The handler answered: the bridge worked, but a tool error says nothing new.
            DialOutcome::ToolError => {}
        }
        true
    }
}
