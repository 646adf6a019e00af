//! What the player does with a frame from the desktop: `control.ack` drops the acknowledged
//! frames from the outbox, `control.ping` gets its pong, `error` is reported, and
//! `desktop.request` is answered as a phone would (a fresh settings snapshot, a revoked line's
//! pairing record, or forgetting the desktop on `unpair`). None of them confirms anything.
//!
//! `docs/protocol.md`, "Acknowledgement" and "Desktop requests".

use futures_util::SinkExt as _;
use serde_json::{json, Map, Value};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;

use super::{Player, Ws};
use crate::phone::scenario::Frame;
use crate::phone_client::envelope_at;

impl Player<'_> {
    pub(super) fn remember_settings(&mut self, f: &Frame) {
        if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(&f.text) {
            self.last_settings = Some(m);
        }
    }

    /// Handles one incoming frame; returns false when the connection is gone.
    pub(super) async fn on_incoming(
        &mut self,
        ws: &mut Ws,
        msg: Option<Result<Message, tokio_tungstenite::tungstenite::Error>>,
    ) -> bool {
        if matches!(msg, Some(Ok(_))) {
            self.last_rx = Instant::now();
        }
        let text = match msg {
            None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return false,
            Some(Ok(Message::Text(t))) => t.to_string(),
            Some(Ok(_)) => return true,
        };
        let Ok(v) = serde_json::from_str::<Value>(&text) else {
            return true;
        };
        match v["type"].as_str().unwrap_or("") {
            "control.ack" => {
                self.report.acks += 1;
                if let Some(last) = v["payload"]["last_id"].as_str() {
                    if let Some(pos) = self.outbox.iter().position(|f| f.id == last) {
                        self.outbox.drain(..=pos);
                    }
                }
            }
            "control.ping" => {
                let mut pong = envelope_at(
                    "control.pong",
                    Some(&self.me.entity_id()),
                    json!({}),
                    self.opts.clock.now_ms(),
                );
                pong["parent"] = v["id"].clone();
                if ws.send(Message::text(pong.to_string())).await.is_err() {
                    return false;
                }
            }
            "error" => {
                self.report.desktop_errors.push(format!(
                    "{}: {}",
                    v["payload"]["class"].as_str().unwrap_or("?"),
                    v["payload"]["detail"].as_str().unwrap_or("")
                ));
            }
            "desktop.request" => {
                let kind = v["payload"]["kind"].as_str().unwrap_or("").to_string();
                self.report.requests.push(kind.clone());
                match kind.as_str() {
                    "unpair" => {
                        self.report.unpaired = true;
                    }
                    "request_settings_snapshot" => self.queue_settings(None),
                    "revoke_phone_line" => {
                        let target = v["payload"]["target"].as_str().map(str::to_string);
                        self.queue_settings(target.as_deref());
                    }
                    _ => {}
                }
            }
            _ => {}
        }
        true
    }

    /// Queues a fresh settings snapshot (after marking `revoke` revoked).
    pub(super) fn queue_settings(&mut self, revoke: Option<&str>) {
        let Some(last) = &self.last_settings else {
            return;
        };
        let now_rel = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(0);
        let mut msg = Map::new();
        msg.insert(
            "type".into(),
            Value::from(switchboard_domain::phone_events::SETTINGS_EVENT),
        );
        if let Some(s) = last.get("session") {
            msg.insert("session".into(), s.clone());
        }
        let mut payload = last
            .get("payload")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        payload.remove("seq");
        payload.remove("dedup");
        if let Some(id) = revoke {
            let decided = self.opts.base_ms.saturating_add(now_rel);
            let pairings = payload
                .entry("pairings")
                .or_insert_with(|| json!({"version": 1, "pairings": {}}));
            if pairings.is_null() {
                *pairings = json!({"version": 1, "pairings": {}});
            }
            if let Some(recs) = pairings.get_mut("pairings").and_then(Value::as_object_mut) {
                let rec = recs.entry(id.to_string()).or_insert_with(|| {
                    json!({"identifier": id, "displayName": id, "allowed": false, "manifestHash": "", "decidedAt": decided})
                });
                rec["allowed"] = Value::Bool(false);
                rec["decidedAt"] = Value::from(decided);
            }
        }
        msg.insert("payload".into(), Value::Object(payload));
        let at = self.outbox.back().map_or(now_rel, |f| f.at_ms.max(now_rel));
        match self.resolver.extra_frame(msg, at) {
            Ok(f) => self.extra_pending.push_back(f),
            Err(e) => tracing::warn!("could not build a settings snapshot: {e}"),
        }
    }
}
