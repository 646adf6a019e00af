//! Sample data to look at a view without a paired phone: synthetic dials
//! ([`sample_dial`], [`ingest_samples`]) and corpus-like confirmations
//! ([`fill_confirmations`]). The shell uses them in debug builds only, from
//! `SWITCHBOARD_SAMPLE_DIALS`, `SWITCHBOARD_SAMPLE_DIALS_RATE` and
//! `SWITCHBOARD_SAMPLE_CONFIRMATIONS`.
//!
//! `fill_confirmations` fills the confirmations mirror with proposals shaped like the corpus's
//! (`corpus/ifp1/fixtures/sequences.json`), plus `phone_action` cards, every one passed through
//! a real [`Receiver`] first, so what the view shows is what the mirror would show for those
//! messages. Two proposals are still waiting, expiring a few minutes after start.

use std::sync::Arc;

use serde_json::{json, Value};

use switchboard_wire::clock::Clock;

use switchboard_dials::DialLogHandle;
use switchboard_domain::confirmations::ConfirmationMirror;
use switchboard_wire::ifp::{params_hash, validate, Receiver, Timestamp};

pub use switchboard_domain::dial::sample::sample_dial;

/// Ingests `n` sample dials now (in chunks of 1 000), then keeps adding `rate` dials a second
/// (at most 10 000) until the log closes. Returns when the log refuses a batch.
pub async fn ingest_samples(log: DialLogHandle, clock: Arc<dyn Clock>, n: u64, rate: u64) {
    let rate = rate.min(10_000);
    let now = clock.now_ms_i64();
    tracing::info!("ingesting {n} sample dials (SWITCHBOARD_SAMPLE_DIALS)");
    let mut i = 0;
    while i < n {
        let end = (i + 1000).min(n);
        let chunk = (i..end).map(|k| sample_dial(k, n, now)).collect();
        if log.ingest_batch(chunk).await.is_err() {
            return;
        }
        i = end;
    }
    if rate == 0 {
        return;
    }
    let tick_ms = 100;
    let per_tick = rate.div_ceil(10);
    let mut k = n;
    loop {
        tokio::time::sleep(std::time::Duration::from_millis(tick_ms)).await;
        let now = clock.now_ms_i64();
        // Spread the tick's dials over its 100 ms.
        let step = i64::try_from(tick_ms / per_tick.max(1)).unwrap_or(1);
        let chunk = (k..k + per_tick)
            .map(|j| {
                let mut d = sample_dial(j, j, now);
                d.start_ms = now - i64::try_from(k + per_tick - j).unwrap_or(0) * step;
                d
            })
            .collect();
        k += per_tick;
        if log.ingest_batch(chunk).await.is_err() {
            return;
        }
    }
}

/// The sample phone's name.
pub const SAMPLE_PHONE: &str = "Ada's Pixel";

struct Feed<'a> {
    rx: Receiver,
    mirror: &'a mut ConfirmationMirror,
    base_s: i64,
    n: u32,
}

impl Feed<'_> {
    fn ts(&self, offset_s: i64) -> String {
        Timestamp::from_unix(self.base_s + offset_s, 0)
            .map(|t| t.to_string())
            .unwrap_or_else(|| "2026-07-21T01:00:00Z".to_string())
    }

    fn give(&mut self, at_s: i64, ty: &str, payload: Value) {
        self.n += 1;
        let mut msg = json!({
            "ifp": "1", "id": format!("msg_sample{:04}", self.n), "ts": self.ts(at_s),
            "type": ty, "entity": "ent_sample01", "session": "ses_sample01",
            "device": "dev_pixel_ada", "payload": payload,
        });
        if ty != "action.propose" {
            msg["generation"] = json!(3);
        }
        let Ok(env) = validate(&msg) else {
            tracing::warn!("sample message {} did not validate", self.n);
            return;
        };
        let outcome = self.rx.receive_at_ts(&env);
        let now_ms = (self.base_s + at_s) * 1000;
        self.mirror.apply(SAMPLE_PHONE, &env, &outcome, now_ms);
    }

    fn propose(&mut self, at_s: i64, id: &str, tool: &str, params: Value, risk: &str, ttl_s: i64) {
        self.propose_hash(
            at_s,
            id,
            tool,
            params.clone(),
            risk,
            ttl_s,
            params_hash(&params),
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn propose_hash(
        &mut self,
        at_s: i64,
        id: &str,
        tool: &str,
        params: Value,
        risk: &str,
        ttl_s: i64,
        hash: String,
    ) {
        let expires = self.ts(at_s + ttl_s);
        self.give(
            at_s,
            "action.propose",
            json!({"action_id": id, "tool": tool, "params": params, "params_hash": hash,
                   "risk": risk, "idempotency_key": id, "expires_at": expires}),
        );
    }

    fn approve(&mut self, at_s: i64, id: &str, params: &Value, mode: &str) {
        self.give(
            at_s,
            "action.approve",
            json!({"action_id": id, "params_hash": params_hash(params),
                   "confirmation": {"mode": mode, "ref": "aud_sample"}}),
        );
    }
}

/// Fills `mirror` with the sample proposals (timestamps relative to `now_ms`, epoch ms).
pub fn fill_confirmations(mirror: &mut ConfirmationMirror, now_ms: i64) {
    let now_s = now_ms / 1000;
    let mut f = Feed {
        rx: Receiver::new(3),
        mirror,
        base_s: now_s - 3600,
        n: 0,
    };
    // Ended: an SMS confirmed and sent (risk as the tool list has it).
    let sms = json!({"to": "+15551234567", "body": "Running 10 min late"});
    f.propose(
        0,
        "act_sample0001",
        "messages.send",
        sms.clone(),
        "high",
        300,
    );
    f.approve(5, "act_sample0001", &sms, "user_confirmed");
    f.give(
        7,
        "action.result",
        json!({"action_id": "act_sample0001", "status": "executed"}),
    );
    // Ended: a call the person declined, then a late approval (an anomaly).
    let call = json!({"to": "+15550000000"});
    f.propose(
        60,
        "act_sample0002",
        "calls.place",
        call.clone(),
        "high",
        300,
    );
    f.give(
        62,
        "action.reject",
        json!({"action_id": "act_sample0002", "reason_class": "user_denied"}),
    );
    f.approve(70, "act_sample0002", &call, "user_confirmed");
    // Ended: approved too late (the corpus's expiry case, with its placeholder hash).
    f.propose_hash(
        120,
        "act_sample0003",
        "messages.send",
        json!({"to": "+15551234567", "body": "late"}),
        "low",
        30,
        format!("sha256:{}", "5".repeat(64)),
    );
    f.approve(
        180,
        "act_sample0003",
        &json!({"to": "+15551234567", "body": "late"}),
        "user_confirmed",
    );
    // Ended: clipboard set by the phone's own policy.
    let clip = json!({"text": "Gate B32"});
    f.propose(
        240,
        "act_sample0004",
        "clipboard.set",
        clip.clone(),
        "low",
        300,
    );
    f.approve(241, "act_sample0004", &clip, "policy_auto");
    f.give(
        242,
        "action.result",
        json!({"action_id": "act_sample0004", "status": "executed"}),
    );
    // Ended: phone_action alarm, done.
    let alarm = json!({"action": "alarm", "time": "07:00", "days": ["mon", "fri"],
                       "summary": "Wake up at 7 on Mondays and Fridays"});
    f.propose(
        300,
        "act_sample0005",
        "phone_action",
        alarm.clone(),
        "medium",
        120,
    );
    f.approve(310, "act_sample0005", &alarm, "user_confirmed");
    f.give(
        312,
        "action.result",
        json!({"action_id": "act_sample0005", "status": "executed"}),
    );
    // Ended: phone_action route that failed with the phone's message.
    let route = json!({"action": "add_stop", "summary": "Add a coffee stop on the way to the office",
                       "stop": {"query": "coffee"}, "destination": {"name": "Office"}});
    f.propose(
        400,
        "act_sample0006",
        "phone_action",
        route.clone(),
        "medium",
        120,
    );
    f.approve(405, "act_sample0006", &route, "user_confirmed");
    f.give(
        409,
        "action.result",
        json!({"action_id": "act_sample0006", "status": "failed",
               "message": "The map app cannot change a running route."}),
    );
    // Waiting: a calendar event with a binding-mismatched approval, and a phone_action timer.
    let cal = json!({"title": "Dentist", "start": "2026-07-22T09:00"});
    f.propose(3590, "act_sample0007", "calendar.add", cal, "medium", 240);
    f.give(
        3595,
        "action.approve",
        json!({"action_id": "act_sample0007", "params_hash": format!("sha256:{}", "4".repeat(64)),
               "confirmation": {"mode": "user_confirmed", "ref": null}}),
    );
    let timer = json!({"action": "timer", "seconds": 600, "summary": "Pasta timer, 10 minutes"});
    f.propose(3598, "act_sample0008", "phone_action", timer, "medium", 110);
}
