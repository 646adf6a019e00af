//! The player: connects to the desktop, pairs or says hello, plays a scenario, and keeps every
//! frame until the desktop acknowledges it, replaying the rest after a reconnect.
//!
//! `docs/protocol.md`, "Acknowledgement" and "Desktop requests". The phone keeps an outbox of
//! the frames it sent in order; a `control.ack {last_id}` from the desktop drops every frame up
//! to and including `last_id`. When the connection drops, the phone reconnects (bounded tries),
//! says hello again and sends the whole outbox again, in order, before anything new: the desktop
//! recognises what it had already applied (ifp/1 `dedup`, message ids), so nothing is lost or
//! counted twice. At `--rate max` frames are queued and flushed in batches of [`BATCH`].
//!
//! The desktop's `desktop.request` is answered as a phone would: `request_settings_snapshot`
//! sends the latest `event.phoneline.settings` again (new id, `seq`, `dedup`);
//! `revoke_phone_line` marks the line's pairing record `allowed: false` and sends the new
//! settings; `unpair` makes the phone forget the desktop and stop. None of them confirms anything.
//!
//! The knobs of a play ([`PlayOptions`] and its parts) live in `options`, what the player does
//! with each frame from the desktop in `incoming`; the play loop, connecting and reconnecting
//! stay here.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

use futures_util::{FutureExt as _, SinkExt as _, StreamExt as _};
use serde_json::{Map, Value};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;

use super::scenario::{Frame, Resolver, Scenario, ScenarioError, Sender};
use crate::phone_client::{Paired, PhoneClient, PhoneError, PhoneIdentity};
use switchboard_wire::timefmt::rfc3339_ms;

/// Frames queued before a flush at [`Rate::Max`].
pub const BATCH: usize = 64;

mod incoming;
mod options;

pub use options::{
    random_run, Confirmer, Join, OnPaired, PlayOptions, Rate, CUT_LOSES, DEAD_AFTER,
};

/// The `session` of a resolved frame, if it has one.
fn session_of(f: &Frame) -> Option<String> {
    serde_json::from_str::<Value>(&f.text)
        .ok()
        .and_then(|v| v.get("session").and_then(Value::as_str).map(str::to_string))
}

/// Whether the frames in `extra` (answers to desktop requests) may overtake `held`, a frame
/// waiting for its time: only when none of them shares its session.
fn answer_first(held: &Frame, extra: &VecDeque<Frame>) -> bool {
    if extra.is_empty() {
        return false;
    }
    let session = session_of(held);
    session.is_none() || extra.iter().all(|f| session_of(f) != session)
}

/// What happened in a play.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlayReport {
    /// Distinct frames sent (scenario and extra).
    pub sent: u64,
    /// Frames sent again after a reconnect.
    pub resent: u64,
    /// Connections made after the first.
    pub reconnects: u32,
    /// Acknowledgements received.
    pub acks: u64,
    /// Frames still unacknowledged at the end (0 when the desktop confirmed everything).
    pub unacked: usize,
    /// `error` frames the desktop answered with: `class: detail`.
    pub desktop_errors: Vec<String>,
    /// The `desktop.request` kinds received, in order.
    pub requests: Vec<String>,
    /// Whether the desktop unpaired this phone (the phone stopped).
    pub unpaired: bool,
    /// What pairing gave, when this play paired.
    pub paired: Option<PairedInfo>,
    /// Wall time of the play, ms.
    pub elapsed_ms: u64,
    /// The desktop address the last connection reached (the one to remember).
    pub connected_to: Option<SocketAddr>,
}

/// What pairing gave, to keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairedInfo {
    /// The desktop's public key (base64url).
    pub desktop_public_key: String,
    /// The verification code to show.
    pub verification_code: String,
}

impl From<Paired> for PairedInfo {
    fn from(p: Paired) -> Self {
        PairedInfo {
            desktop_public_key: p.desktop_public_key,
            verification_code: p.verification_code,
        }
    }
}

/// Errors of a play.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlayError {
    /// Connecting, pairing or hello failed (after the reconnect budget, for a dropped link).
    #[error(transparent)]
    Phone(#[from] PhoneError),
    /// The scenario made an invalid message.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// The desktop did not acknowledge everything in time.
    #[error("the desktop did not acknowledge {0} frames within the wait")]
    Unacknowledged(usize),
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>;

/// A phone playing a scenario against one desktop.
pub struct Player<'a> {
    addr: SocketAddr,
    cert_fp: String,
    me: PhoneIdentity,
    join: Join,
    resolver: Resolver<'a>,
    opts: PlayOptions,
    outbox: VecDeque<Frame>,
    report: PlayReport,
    last_settings: Option<Map<String, Value>>,
    started: Instant,
    handed: u64,
    extra_pending: VecDeque<Frame>,
    /// When the desktop last sent a frame on this connection (pings included).
    last_rx: Instant,
}

impl std::fmt::Debug for Player<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Player")
            .field("addr", &self.addr)
            .field("device", &self.me.device_id())
            .finish_non_exhaustive()
    }
}

enum Conn {
    Open(Box<Ws>),
    Gone,
}

impl<'a> Player<'a> {
    /// A player for `scenario`, as `me`, to the desktop at `addr` whose certificate fingerprint is
    /// `cert_fp`.
    pub fn new(
        addr: SocketAddr,
        cert_fp: &str,
        me: PhoneIdentity,
        join: Join,
        scenario: &'a Scenario,
        opts: PlayOptions,
    ) -> Self {
        let sender = Sender {
            device: me.device_id().to_string(),
            entity: me.entity_id(),
        };
        let resolver = Resolver::new(scenario, sender, &opts.run, opts.base_ms, opts.count);
        Player {
            addr,
            cert_fp: cert_fp.to_string(),
            me,
            join,
            resolver,
            opts,
            outbox: VecDeque::new(),
            report: PlayReport::default(),
            last_settings: None,
            started: Instant::now(),
            handed: 0,
            extra_pending: VecDeque::new(),
            last_rx: Instant::now(),
        }
    }

    /// When the link counts as dead unless the desktop sends something first.
    fn silent_by(&self) -> Instant {
        self.last_rx + self.opts.dead_after
    }

    async fn connect(&mut self) -> Result<Ws, PhoneError> {
        let mut candidates = vec![self.addr];
        for a in &self.opts.also_try {
            if !candidates.contains(a) {
                candidates.push(*a);
            }
        }
        let mut c = PhoneClient::connect_any_with_clock(
            &candidates,
            Some(&self.cert_fp),
            self.opts.clock.clone(),
        )
        .await?;
        // Remember which one worked: it goes first on the next reconnect.
        if c.connected_to != self.addr {
            let old = std::mem::replace(&mut self.addr, c.connected_to);
            self.opts.also_try.retain(|a| *a != c.connected_to);
            self.opts.also_try.insert(0, old);
        }
        self.report.connected_to = Some(c.connected_to);
        match self.join.clone() {
            Join::Paired { desktop_public_key } => {
                c.set_desktop_public_key(&desktop_public_key)?;
                c.hello(&self.me, switchboard_wire::app_info::IFP_RANGE)
                    .await?;
            }
            Join::Pair { code } => {
                let pending = c.pair_start(&self.me, &code, vec![]).await?;
                let matches = self.opts.confirm.confirm(&pending);
                let paired = c
                    .pair_confirm(
                        &self.me,
                        &pending,
                        matches,
                        switchboard_wire::app_info::IFP_RANGE,
                    )
                    .await?;
                self.join = Join::Paired {
                    desktop_public_key: paired.desktop_public_key.clone(),
                };
                let info = PairedInfo::from(paired);
                self.opts.on_paired.paired(&info);
                self.report.paired = Some(info);
            }
        }
        Ok(c.into_ws())
    }

    async fn reconnect(&mut self) -> Result<Ws, PlayError> {
        let mut tries = 0u32;
        loop {
            match self.connect().await {
                Ok(ws) => {
                    self.last_rx = Instant::now();
                    return Ok(ws);
                }
                Err(e @ (PhoneError::Refused { .. } | PhoneError::NotConfirmed(_))) => {
                    return Err(e.into())
                }
                Err(e) => {
                    tries += 1;
                    if tries > self.opts.max_reconnects {
                        return Err(e.into());
                    }
                    let backoff =
                        Duration::from_millis(100u64.saturating_mul(1u64 << tries.min(5)));
                    tracing::info!("reconnecting to {} in {backoff:?}: {e}", self.addr);
                    tokio::time::sleep(backoff).await;
                }
            }
        }
    }

    /// Plays the whole scenario: connects (pairing first with [`Join::Pair`]), sends every frame
    /// at the chosen rate, reconnects and replays when cut off, and returns once the desktop has
    /// acknowledged everything (or the phone was unpaired). With
    /// [`PlayOptions::stay_connected`] it then stays connected, idle, and returns only once the
    /// phone was unpaired (or with an error).
    ///
    /// Errors: [`PlayError::Phone`] when connecting fails past the reconnect budget or the
    /// desktop refuses pairing or hello; [`PlayError::Unacknowledged`] when the final
    /// acknowledgement does not come within [`PlayOptions::ack_wait`].
    pub async fn play(mut self) -> Result<PlayReport, PlayError> {
        self.started = Instant::now();
        let first = self.connect().await?;
        self.last_rx = Instant::now();
        let mut conn = Conn::Open(Box::new(first));
        let mut pending: Option<Frame> = None;
        let mut ack_deadline: Option<Instant> = None;
        loop {
            let mut ws = match conn {
                Conn::Open(ws) => ws,
                Conn::Gone => {
                    self.report.reconnects += 1;
                    let mut ws = Box::new(self.reconnect().await?);
                    // Replay everything not acknowledged, in order.
                    let replay: Vec<String> = self.outbox.iter().map(|f| f.text.clone()).collect();
                    let mut ok = true;
                    for chunk in replay.chunks(BATCH) {
                        for t in chunk {
                            if ws.feed(Message::text(t.clone())).await.is_err() {
                                ok = false;
                                break;
                            }
                            self.report.resent += 1;
                        }
                        if !ok || ws.flush().await.is_err() {
                            ok = false;
                            break;
                        }
                    }
                    if !ok {
                        conn = Conn::Gone;
                        continue;
                    }
                    // The final acknowledgement gets its full wait on the new connection.
                    ack_deadline = None;
                    ws
                }
            };
            if Instant::now() >= self.silent_by() {
                // Nothing from the desktop for `dead_after`: the link is dead (no close came).
                tracing::info!(
                    "no frame from the desktop in {:?}: reconnecting",
                    self.opts.dead_after
                );
                conn = Conn::Gone;
                continue;
            }
            // Read whatever arrived without waiting.
            let mut alive = true;
            while let Some(msg) = ws.next().now_or_never() {
                if !self.on_incoming(&mut ws, msg).await {
                    alive = false;
                    break;
                }
            }
            if self.report.unpaired {
                conn = Conn::Open(ws);
                break;
            }
            if !alive {
                conn = Conn::Gone;
                continue;
            }
            // Next frame to send, if any.
            if pending.is_none() {
                pending = match self.extra_pending.pop_front() {
                    Some(f) => Some(f),
                    None => match self.resolver.next_frame() {
                        Some(f) => Some(f?),
                        None => None,
                    },
                };
            }
            let Some(frame) = pending.take() else {
                // Everything handed over: wait for the acknowledgement of the rest.
                if self.outbox.is_empty() && !self.opts.stay_connected {
                    conn = Conn::Open(ws);
                    break;
                }
                if self.outbox.is_empty() {
                    // Idle, as a real phone with nothing to say: answer pings and the desktop's
                    // requests (a settings snapshot asked for is queued and sent above).
                    ack_deadline = None;
                    let silent = self.silent_by();
                    tokio::select! {
                        msg = ws.next() => {
                            if !self.on_incoming(&mut ws, msg).await { conn = Conn::Gone; continue; }
                        }
                        _ = tokio::time::sleep_until(silent) => {}
                    }
                    conn = Conn::Open(ws);
                    if self.report.unpaired {
                        break;
                    }
                    continue;
                }
                let deadline =
                    *ack_deadline.get_or_insert_with(|| Instant::now() + self.opts.ack_wait);
                let silent = self.silent_by();
                tokio::select! {
                    msg = ws.next() => {
                        if !self.on_incoming(&mut ws, msg).await { conn = Conn::Gone; continue; }
                    }
                    _ = tokio::time::sleep_until(silent) => {
                        conn = Conn::Open(ws);
                        continue;
                    }
                    _ = tokio::time::sleep_until(deadline) => {
                        self.report.unacked = self.outbox.len();
                        self.close(*ws).await;
                        return Err(PlayError::Unacknowledged(self.outbox.len()));
                    }
                }
                conn = Conn::Open(ws);
                if self.report.unpaired {
                    break;
                }
                continue;
            };
            // Wait for its time (reading meanwhile).
            let due = self.due(&frame);
            if let Some(due) = due {
                if due > Instant::now() {
                    let silent = self.silent_by();
                    tokio::select! {
                        _ = tokio::time::sleep_until(silent) => {
                            pending = Some(frame);
                            conn = Conn::Open(ws);
                            continue;
                        }
                        msg = ws.next() => {
                            if !self.on_incoming(&mut ws, msg).await {
                                pending = Some(frame);
                                conn = Conn::Gone;
                                continue;
                            }
                            // The answer to a desktop request goes out now, not after a frame
                            // that is not due yet, unless that frame is of the same session
                            // (its `seq` is lower, so it must go first).
                            if answer_first(&frame, &self.extra_pending) {
                                self.extra_pending.push_back(frame);
                            } else {
                                pending = Some(frame);
                            }
                            conn = Conn::Open(ws);
                            continue;
                        }
                        _ = tokio::time::sleep_until(due) => {}
                    }
                }
            }
            // Send it (a batch at max rate).
            let mut batch = vec![frame];
            if self.opts.rate == Rate::Max {
                while batch.len() < BATCH {
                    match self.extra_pending.pop_front() {
                        Some(f) => batch.push(f),
                        None => match self.resolver.next_frame() {
                            Some(f) => batch.push(f?),
                            None => break,
                        },
                    }
                }
            }
            let mut cut = false;
            let mut lost = 0usize;
            let mut write_ok = true;
            let mut rest = batch.into_iter();
            while let Some(f) = rest.next() {
                if cut && lost >= CUT_LOSES {
                    // Sent after the reconnect, in order, before anything new.
                    let mut back: Vec<Frame> = vec![f];
                    back.extend(rest.by_ref());
                    for b in back.into_iter().rev() {
                        self.extra_pending.push_front(b);
                    }
                    break;
                }
                self.handed += 1;
                self.report.sent += 1;
                if f.kind == switchboard_domain::phone_events::SETTINGS_EVENT {
                    self.remember_settings(&f);
                }
                self.outbox.push_back(f.clone());
                if cut && lost < CUT_LOSES {
                    lost += 1;
                    continue;
                }
                if cut || !write_ok {
                    continue;
                }
                if ws.feed(Message::text(f.text)).await.is_err() {
                    write_ok = false;
                }
                if self.opts.cut_after.contains(&self.handed) {
                    cut = true;
                }
            }
            if cut {
                let _ = ws.flush().await;
                // Dropped without a close frame: the desktop sees the connection vanish.
                drop(ws);
                conn = Conn::Gone;
                continue;
            }
            if !write_ok || ws.flush().await.is_err() {
                conn = Conn::Gone;
                continue;
            }
            conn = Conn::Open(ws);
        }
        if let Conn::Open(ws) = conn {
            self.close(*ws).await;
        }
        self.report.unacked = self.outbox.len();
        self.report.elapsed_ms =
            u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        Ok(self.report)
    }

    async fn close(&self, mut ws: Ws) {
        let _ = tokio::time::timeout(Duration::from_secs(2), ws.close(None)).await;
    }

    fn due(&self, frame: &Frame) -> Option<Instant> {
        match self.opts.rate {
            Rate::Max => None,
            Rate::Recorded => Some(self.started + Duration::from_millis(frame.at_ms)),
            Rate::PerSecond(r) => {
                let secs = self.handed as f64 / r;
                Some(self.started + Duration::from_secs_f64(secs))
            }
        }
    }
}

/// `ms` as the RFC 3339 text the scenarios use (re-exported for callers building messages).
pub fn timestamp_text(ms: u64) -> String {
    rfc3339_ms(ms)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use serde_json::json;

    fn frame(id: &str, session: Option<&str>) -> Frame {
        let mut v = json!({"id": id, "type": "event.phoneline.settings"});
        if let Some(s) = session {
            v["session"] = Value::from(s);
        }
        Frame {
            id: id.to_string(),
            kind: "event.phoneline.settings".to_string(),
            at_ms: 0,
            text: v.to_string(),
        }
    }

    #[test]
    fn answers_overtake_only_frames_of_other_sessions() {
        let held = frame("msg_held00", Some("ses_hold000000000001"));
        let mut extra = VecDeque::new();
        assert!(!answer_first(&held, &extra), "nothing to send first");
        extra.push_back(frame("msg_answer", Some("ses_mirror0000000001")));
        assert!(
            answer_first(&held, &extra),
            "another session's answer goes first"
        );
        let same = frame("msg_held01", Some("ses_mirror0000000001"));
        assert!(
            !answer_first(&same, &extra),
            "a held frame of the same session keeps its place (its seq is lower)"
        );
        let no_session = frame("msg_held02", None);
        assert!(answer_first(&no_session, &extra));
    }
}
