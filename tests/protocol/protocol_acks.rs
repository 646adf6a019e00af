//! What a phone app relies on from the desktop's acknowledgements and refusals, on the real link
//! over loopback: a refused message with a readable `id` is answered with `parent`
//! and acknowledged in order; one without is answered without `parent` and never acknowledged;
//! `applied` counts each message once and acknowledgements never go back during a replay; the
//! generation fence (`stale_generation` after a higher generation, kept across a restart);
//! waiting proposals end at `expires_at` and when their phone is unpaired, by the hub's
//! injected clock (no sleeping for the expiry); a proposal waiting when the desktop restarts is
//! still waiting after it, and what follows it is accepted and matched to it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::confirm;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use switchboard::bridge::store::BridgeStatusStore;
use switchboard::confirmations::{ChangeKind, ConfirmationMirror, EXPIRED_WORDS};
use switchboard::dials::{DialLog, DialLogConfig};
use switchboard::hub::{Hub, HubNotice, HubParts, GENERATIONS_FILE};
use switchboard::ifp::{params_hash, ActionState};
use switchboard::link::phone_client::{PhoneClient, PhoneIdentity};
use switchboard::link::{
    bind, rfc3339_ms, DesktopIdentity, Link, LinkConfig, ManualClock, MemoryStore,
};

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const T0: u64 = 1_784_595_600_000; // 2026-07-21T01:00:00Z
const SESSION: &str = "ses_acks00000001";

struct Desk {
    link: Link,
    hub: Hub,
    mirror: Arc<Mutex<ConfirmationMirror>>,
    clock: Arc<ManualClock>,
    notices: tokio::sync::broadcast::Receiver<HubNotice>,
    addr: SocketAddr,
    fp: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

/// A link + hub (Confirmations mirror, dial log in memory, generations kept in `dir`) on
/// 127.0.0.1:0, with the hub's clock at [`T0`].
async fn desk(dir: &Path, identity: DesktopIdentity) -> Desk {
    let mirror = Arc::new(Mutex::new(ConfirmationMirror::with_bundled_catalogue()));
    desk_with(dir, identity, mirror, None).await
}

/// [`desk`] whose hub feeds `mirror`, holding back acknowledgements until `saved` (the
/// mirror's revision written to its file) reaches them, when given.
async fn desk_with(
    dir: &Path,
    identity: DesktopIdentity,
    mirror: Arc<Mutex<ConfirmationMirror>>,
    saved: Option<tokio::sync::watch::Receiver<u64>>,
) -> Desk {
    let clock = Arc::new(ManualClock::new(T0));
    let mut cfg = LinkConfig::new(dir);
    cfg.mdns = false;
    cfg.clock = clock.clone();
    let (link, events) = Link::new(identity, cfg).unwrap();
    let listener = bind(LOOPBACK, 0).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(link.run(listener, async {
        let _ = stop_rx.await;
    }));
    let dials = DialLog::spawn(DialLogConfig::default()).unwrap();
    let bridge = Arc::new(Mutex::new(BridgeStatusStore::new()));
    let mut parts = HubParts::new(dials, bridge, Some(link.clone()), clock.clone());
    parts.confirmations = Some(mirror.clone());
    parts.confirmations_saved = saved;
    parts.generations_file = Some(dir.join(GENERATIONS_FILE));
    let hub = Hub::new(parts);
    let notices = hub.subscribe();
    tokio::spawn(hub.clone().run(events));
    let fp = link.identity().cert_fingerprint().to_string();
    Desk {
        link,
        hub,
        mirror,
        clock,
        notices,
        addr,
        fp,
        stop: Some(stop_tx),
    }
}

impl Desk {
    async fn pair(&self, me: &PhoneIdentity) -> PhoneClient {
        let invite = self.link.open_pairing(LOOPBACK);
        let mut phone = PhoneClient::connect(self.addr, &self.fp).await.unwrap();
        confirm::pair_confirmed(&self.link, &mut phone, me, &invite.code, vec![], (1, 1))
            .await
            .unwrap();
        phone
    }

    async fn hello(&self, me: &PhoneIdentity) -> PhoneClient {
        let mut phone = PhoneClient::connect(self.addr, &self.fp).await.unwrap();
        phone.hello(me, (1, 1)).await.unwrap();
        phone
    }

    fn stop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

fn ts(ms: u64) -> String {
    rfc3339_ms(ms)
}

/// An `event.runtime.autonomy` event (small, kept in memory) of `me`.
fn event(me: &PhoneIdentity, id: &str, seq: u64, generation: u64) -> Value {
    json!({"ifp":"1","id":id,"ts":ts(T0 + seq),"type":"event.runtime.autonomy",
        "entity":me.entity_id(),"session":SESSION,"device":me.device_id(),"generation":generation,
        "provenance":{"sensor":format!("{}:phoneline", me.device_id()),"captured_at":ts(T0 + seq)},
        "labels":{"consent":"product_operation","retention":"standard"},
        "payload":{"seq":seq,"dedup":format!("{}:{SESSION}:{seq}", me.device_id()),"autonomy":"ask_before_action"}})
}

/// An `event.phoneline.dial` (the link's one-pass path).
fn dial(me: &PhoneIdentity, id: &str, seq: u64, generation: u64) -> Value {
    json!({"ifp":"1","id":id,"ts":ts(T0 + seq),"type":"event.phoneline.dial",
        "entity":me.entity_id(),"session":SESSION,"device":me.device_id(),"generation":generation,
        "provenance":{"sensor":format!("{}:phoneline", me.device_id()),"captured_at":ts(T0 + seq)},
        "labels":{"consent":"product_operation","retention":"standard"},
        "payload":{"seq":seq,"dedup":format!("dial_{id}"),"caller":"lumiagent","callee":"lumirealm",
          "endpoint":"lumirealm.phoneline","op":"describe","request":{"op":"describe"},
          "started_at":ts(T0 + seq),"duration_ms":3,"outcome":"ok","response":{}}})
}

fn propose(me: &PhoneIdentity, id: &str, action_id: &str, expires_ms: u64) -> Value {
    let params = json!({"to": "+1 555 0100", "body": "late 🙂"});
    json!({"ifp":"1","id":id,"ts":ts(T0),"type":"action.propose","entity":me.entity_id(),
        "session":"ses_runtime0000001","device":me.device_id(),
        "payload":{"action_id":action_id,"tool":"messages.send","params":params,
          "params_hash":params_hash(&params),"risk":"high","idempotency_key":format!("idem_{action_id}"),
          "expires_at":ts(expires_ms)}})
}

/// Reads frames until `pick` returns something (bounded: the client's wait per frame, 200
/// frames); every `control.ack` read on the way is pushed to `acks`.
async fn until<T>(
    phone: &mut PhoneClient,
    acks: &mut Vec<(String, u64)>,
    mut pick: impl FnMut(&Value) -> Option<T>,
) -> T {
    for _ in 0..200 {
        let v = phone.recv().await.unwrap();
        if v["type"] == "control.ack" {
            acks.push((
                v["payload"]["last_id"].as_str().unwrap().to_string(),
                v["payload"]["applied"].as_u64().unwrap(),
            ));
        }
        if let Some(t) = pick(&v) {
            return t;
        }
    }
    panic!("not seen in 200 frames");
}

fn ack_of(id: &str) -> impl FnMut(&Value) -> Option<u64> + '_ {
    move |v| {
        (v["type"] == "control.ack" && v["payload"]["last_id"] == id)
            .then(|| v["payload"]["applied"].as_u64().unwrap())
    }
}

#[tokio::test]
async fn a_refused_message_with_an_id_is_answered_with_its_parent_and_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = desk(
        dir.path(),
        DesktopIdentity::load_or_create(&MemoryStore::new()).unwrap(),
    )
    .await;
    let me = PhoneIdentity::generate("Refusals");
    let mut phone = d.pair(&me).await;
    let mut acks = Vec::new();
    phone
        .send_value(&event(&me, "msg_ok0000000001", 0, 1))
        .await
        .unwrap();
    until(&mut phone, &mut acks, ack_of("msg_ok0000000001")).await;

    // Generation 0: the validator refuses it (a generation is an integer >= 1). Its id is
    // readable, so the error names it and the desktop acknowledges it: the phone can drop it.
    let mut bad = event(&me, "msg_gen0000000002", 1, 1);
    bad["generation"] = json!(0);
    phone.send_value(&bad).await.unwrap();
    let err = until(&mut phone, &mut acks, |v| {
        (v["type"] == "error").then(|| v.clone())
    })
    .await;
    assert_eq!(err["parent"], "msg_gen0000000002", "{err}");
    assert_eq!(err["payload"]["class"], "invalid_envelope", "{err}");
    assert!(
        err["payload"]["detail"]
            .as_str()
            .unwrap()
            .starts_with("generation:"),
        "{err}"
    );
    let applied = until(&mut phone, &mut acks, ack_of("msg_gen0000000002")).await;
    assert_eq!(applied, 2, "the refusal counts as applied once");

    // A missing entity, last in the outbox: refused with its parent and acknowledged too.
    let mut no_entity = event(&me, "msg_noent0000003", 2, 1);
    no_entity.as_object_mut().unwrap().remove("entity");
    phone.send_value(&no_entity).await.unwrap();
    let err = until(&mut phone, &mut acks, |v| {
        (v["type"] == "error").then(|| v.clone())
    })
    .await;
    assert_eq!(err["parent"], "msg_noent0000003", "{err}");
    until(&mut phone, &mut acks, ack_of("msg_noent0000003")).await;

    // Another phone's device on this connection: unauthorized_device, parent, acknowledged.
    let mut other = event(&me, "msg_other0000004", 3, 1);
    other["device"] = json!("dev_someoneelse01");
    phone.send_value(&other).await.unwrap();
    let err = until(&mut phone, &mut acks, |v| {
        (v["type"] == "error").then(|| v.clone())
    })
    .await;
    assert_eq!(
        (err["parent"].as_str(), err["payload"]["class"].as_str()),
        (Some("msg_other0000004"), Some("unauthorized_device"))
    );
    until(&mut phone, &mut acks, ack_of("msg_other0000004")).await;

    // No readable id (not JSON; an id that is not a message id): an error without parent,
    // nothing acknowledged; the connection stays open.
    phone.send_text("{not json".into()).await.unwrap();
    let err = until(&mut phone, &mut acks, |v| {
        (v["type"] == "error").then(|| v.clone())
    })
    .await;
    assert!(err.get("parent").is_none(), "{err}");
    let mut odd = event(&me, "msg_x", 4, 1);
    odd["id"] = json!("not an id");
    phone.send_value(&odd).await.unwrap();
    let err = until(&mut phone, &mut acks, |v| {
        (v["type"] == "error").then(|| v.clone())
    })
    .await;
    assert!(err.get("parent").is_none(), "{err}");
    // The connection still works, and the next acknowledgement counts 5: the two frames
    // without an id were not counted.
    phone
        .send_value(&event(&me, "msg_ok0000000005", 5, 1))
        .await
        .unwrap();
    let applied = until(&mut phone, &mut acks, ack_of("msg_ok0000000005")).await;
    assert_eq!(applied, 5);
    assert!(acks
        .iter()
        .all(|(id, _)| id.starts_with("msg_") && id != "not an id"));
    let view = d.hub.phone(me.device_id()).unwrap();
    assert_eq!(view.applied, 5);
    assert!(
        view.problems
            .iter()
            .any(|p| p.contains("msg_gen0000000002")),
        "{:?}",
        view.problems
    );
    d.stop();
}

#[tokio::test]
async fn resending_eight_applied_messages_raises_nothing_and_acks_never_go_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = desk(
        dir.path(),
        DesktopIdentity::load_or_create(&MemoryStore::new()).unwrap(),
    )
    .await;
    let me = PhoneIdentity::generate("Replay");
    let mut phone = d.pair(&me).await;
    // Eight messages of every path: events, dials (one-pass path), an action message, a
    // refused one, an unknown type.
    let mut outbox = vec![
        event(&me, "msg_replay000001", 0, 1),
        dial(&me, "msg_replay000002", 1, 1),
        dial(&me, "msg_replay000003", 2, 1),
        propose(&me, "msg_replay000004", "act_replay000004", T0 + 600_000),
        event(&me, "msg_replay000005", 3, 1),
        dial(&me, "msg_replay000006", 4, 1),
    ];
    let mut refused = event(&me, "msg_replay000007", 5, 1);
    refused.as_object_mut().unwrap().remove("labels");
    outbox.push(refused);
    outbox.push(
        json!({"ifp":"1","id":"msg_replay000008","ts":ts(T0),"type":"note.unknown",
        "entity":me.entity_id(),"device":me.device_id(),"payload":{}}),
    );
    let ids: Vec<String> = outbox
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect();
    let mut acks = Vec::new();
    for m in &outbox {
        phone.send_value(m).await.unwrap();
    }
    let applied = until(&mut phone, &mut acks, ack_of("msg_replay000008")).await;
    assert_eq!(applied, 8);
    let dials_before = d.hub.phone(me.device_id()).unwrap().dials;

    // Reconnect and send all eight again (a phone that did not see the ack), twice over.
    drop(phone);
    let mut phone = d.hello(&me).await;
    let first = until(&mut phone, &mut acks, |v| {
        (v["type"] == "control.ack").then(|| v["payload"].clone())
    })
    .await;
    assert_eq!(
        (first["last_id"].as_str(), first["applied"].as_u64()),
        (Some("msg_replay000008"), Some(8)),
        "right after hello: the newest durable point"
    );
    for _ in 0..2 {
        for m in &outbox {
            phone.send_value(m).await.unwrap();
        }
    }
    // Nothing new: the newest acknowledgement is repeated (it covers the resent messages).
    let again = until(&mut phone, &mut acks, ack_of("msg_replay000008")).await;
    assert_eq!(again, 8);
    // Something new after the replay: its ack is the next one and counts 9.
    phone
        .send_value(&event(&me, "msg_replay000009", 6, 1))
        .await
        .unwrap();
    let applied = until(&mut phone, &mut acks, ack_of("msg_replay000009")).await;
    assert_eq!(applied, 9, "the 16 resent messages were not counted");
    let view = d.hub.phone(me.device_id()).unwrap();
    assert_eq!(view.applied, 9);
    assert_eq!(view.dials, dials_before, "no dial held twice");

    // Monotonic: every ack names a message at or after the one before, and counts no less.
    let order = |id: &str| ids.iter().position(|i| i == id).unwrap_or(ids.len());
    for w in acks.windows(2) {
        assert!(
            order(&w[1].0) >= order(&w[0].0) && w[1].1 >= w[0].1,
            "an ack went back: {acks:?}"
        );
    }
    d.stop();
}

/// A message that repeats an event's `dedup` key under a new `id` changes nothing and is
/// acknowledged by its own id (not only by an older acknowledgement, which would leave it in the
/// phone's outbox); a resend of it under that id is recognised by its id and never moves the
/// acknowledgement back. Both paths: an event, and a dial (the link's one-pass path).
#[tokio::test]
async fn a_dedup_key_repeated_under_a_new_id_is_acknowledged_by_that_id() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = desk(
        dir.path(),
        DesktopIdentity::load_or_create(&MemoryStore::new()).unwrap(),
    )
    .await;
    let me = PhoneIdentity::generate("NewId");
    let mut phone = d.pair(&me).await;
    let mut acks = Vec::new();
    let first_event = event(&me, "msg_newid0000001", 0, 1);
    let first_dial = dial(&me, "msg_newid0000002", 1, 1);
    phone.send_value(&first_event).await.unwrap();
    phone.send_value(&first_dial).await.unwrap();
    assert_eq!(
        until(&mut phone, &mut acks, ack_of("msg_newid0000002")).await,
        2
    );
    let dials_before = d.hub.phone(me.device_id()).unwrap().dials;

    let mut again_event = first_event.clone();
    again_event["id"] = json!("msg_newid0000003");
    phone.send_value(&again_event).await.unwrap();
    let applied = until(&mut phone, &mut acks, |v| {
        if v["type"] == "error" {
            panic!("a repeated dedup key is not refused: {v}");
        }
        ack_of("msg_newid0000003")(v)
    })
    .await;
    assert_eq!(applied, 3, "a message of its own id counts once");
    let mut again_dial = first_dial.clone();
    again_dial["id"] = json!("msg_newid0000004");
    phone.send_value(&again_dial).await.unwrap();
    assert_eq!(
        until(&mut phone, &mut acks, ack_of("msg_newid0000004")).await,
        4
    );
    let view = d.hub.phone(me.device_id()).unwrap();
    assert_eq!(
        view.dials, dials_before,
        "the repeated dial is not held twice"
    );

    // Sent again under the same ids (the phone did not see the acks): recognised by id, the
    // newest acknowledgement is repeated, nothing is counted again.
    phone.send_value(&again_event).await.unwrap();
    phone.send_value(&again_dial).await.unwrap();
    phone.send_value(&first_event).await.unwrap();
    phone
        .send_value(&event(&me, "msg_newid0000005", 2, 1))
        .await
        .unwrap();
    assert_eq!(
        until(&mut phone, &mut acks, ack_of("msg_newid0000005")).await,
        5
    );
    let order = |id: &str| id.trim_start_matches("msg_newid").parse::<u64>().unwrap();
    for w in acks.windows(2) {
        assert!(
            order(&w[1].0) >= order(&w[0].0) && w[1].1 >= w[0].1,
            "an ack went back: {acks:?}"
        );
    }
    d.stop();
}

#[tokio::test]
async fn a_lower_generation_after_a_higher_one_is_stale_and_the_fence_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let store = MemoryStore::new();
    let mut d = desk(dir.path(), DesktopIdentity::load_or_create(&store).unwrap()).await;
    let me = PhoneIdentity::generate("Generations");
    let mut phone = d.pair(&me).await;
    let mut acks = Vec::new();
    phone
        .send_value(&event(&me, "msg_gen1000000001", 0, 1))
        .await
        .unwrap();
    phone
        .send_value(&dial(&me, "msg_gen3000000002", 1, 3))
        .await
        .unwrap();
    until(&mut phone, &mut acks, ack_of("msg_gen3000000002")).await;
    // Generation 2 after 3, on both paths: stale_generation with current_generation 3.
    for m in [
        event(&me, "msg_gen2000000003", 2, 2),
        dial(&me, "msg_gen2000000004", 3, 2),
    ] {
        phone.send_value(&m).await.unwrap();
        let err = until(&mut phone, &mut acks, |v| {
            (v["type"] == "error").then(|| v.clone())
        })
        .await;
        assert_eq!(err["parent"], m["id"], "{err}");
        assert_eq!(err["payload"]["class"], "stale_generation", "{err}");
        assert_eq!(err["payload"]["current_generation"], 3, "{err}");
    }
    // Refusals are acknowledged like the rest.
    until(&mut phone, &mut acks, ack_of("msg_gen2000000004")).await;
    // Generation 3 and 4 pass.
    phone
        .send_value(&event(&me, "msg_gen3000000005", 4, 3))
        .await
        .unwrap();
    until(&mut phone, &mut acks, ack_of("msg_gen3000000005")).await;
    let kept: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join(GENERATIONS_FILE)).unwrap()).unwrap();
    assert_eq!(kept["phones"][me.device_id()], 3, "{kept}");
    drop(phone);
    d.stop();

    // A restarted desktop (same data folder, same identity) still fences generation 2.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut d = desk(dir.path(), DesktopIdentity::load_or_create(&store).unwrap()).await;
    let mut phone = d.hello(&me).await;
    phone
        .send_value(&event(&me, "msg_gen2000000006", 5, 2))
        .await
        .unwrap();
    let err = until(&mut phone, &mut acks, |v| {
        (v["type"] == "error").then(|| v.clone())
    })
    .await;
    assert_eq!(
        (
            err["payload"]["class"].as_str(),
            err["payload"]["current_generation"].as_u64()
        ),
        (Some("stale_generation"), Some(3)),
        "{err}"
    );

    // Unpairing forgets it: paired again, the phone starts from generation 1.
    assert!(d.link.unpair(me.device_id()).unwrap());
    drop(phone);
    for _ in 0..100 {
        let kept: Value =
            serde_json::from_slice(&std::fs::read(dir.path().join(GENERATIONS_FILE)).unwrap())
                .unwrap();
        if kept["phones"].get(me.device_id()).is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let kept: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join(GENERATIONS_FILE)).unwrap()).unwrap();
    assert!(kept["phones"].get(me.device_id()).is_none(), "{kept}");
    let mut phone = d.pair(&me).await;
    phone
        .send_value(&event(&me, "msg_gen1000000007", 100, 1))
        .await
        .unwrap();
    until(&mut phone, &mut acks, ack_of("msg_gen1000000007")).await;
    d.stop();
}

/// Waits (bounded) until the mirror satisfies `done`.
async fn mirror_until(d: &Desk, done: impl Fn(&ConfirmationMirror) -> bool) {
    for _ in 0..200 {
        if done(&d.mirror.lock().unwrap()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "the mirror never got there: {:?}",
        d.mirror.lock().unwrap().snapshot().waiting
    );
}

#[tokio::test]
async fn waiting_proposals_end_at_expires_at_in_one_notice_without_notifications() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = desk(
        dir.path(),
        DesktopIdentity::load_or_create(&MemoryStore::new()).unwrap(),
    )
    .await;
    let me = PhoneIdentity::generate("Expiry");
    let mut phone = d.pair(&me).await;
    let mut acks = Vec::new();
    // Twenty proposals expiring at T0 + 60 s, one at T0 + 10 min, one approved (waits for its
    // result, which has no deadline).
    for i in 0..20 {
        phone
            .send_value(&propose(
                &me,
                &format!("msg_exp{i:012}"),
                &format!("act_exp{i:012}"),
                T0 + 60_000,
            ))
            .await
            .unwrap();
    }
    phone
        .send_value(&propose(
            &me,
            "msg_later0000001",
            "act_later0000001",
            T0 + 600_000,
        ))
        .await
        .unwrap();
    let p = propose(&me, "msg_apprv0000001", "act_apprv0000001", T0 + 60_000);
    phone.send_value(&p).await.unwrap();
    phone
        .send_value(&approve(&me, "msg_apprv0000002", &p, T0 + 1_000))
        .await
        .unwrap();
    until(&mut phone, &mut acks, ack_of("msg_apprv0000002")).await;
    assert_eq!(d.mirror.lock().unwrap().waiting_count(), 22);
    while d.notices.try_recv().is_ok() {}

    // Nothing lapses at expires_at itself; the hub's own loop ends them once it is past.
    d.clock.set(T0 + 60_000);
    assert_eq!(d.hub.expire_proposals(), 0);
    d.clock.set(T0 + 60_001);
    mirror_until(&d, |m| m.waiting_count() == 2).await;
    let snap = d.mirror.lock().unwrap().snapshot();
    let ids: Vec<&str> = snap.waiting.iter().map(|c| c.action_id.as_str()).collect();
    assert_eq!(ids, ["act_apprv0000001", "act_later0000001"]);
    let ended = d
        .mirror
        .lock()
        .unwrap()
        .get(me.device_id(), "act_exp000000000007")
        .cloned()
        .unwrap();
    assert_eq!(ended.state, ActionState::Expired);
    // No raw timestamp in what a person reads; the deadline is kept as a time for the view.
    let text = ended.ended_text.as_deref().unwrap();
    assert_eq!(text, EXPIRED_WORDS);
    assert!(!text.contains("2026") && !text.contains('Z'), "{text}");
    assert_eq!(ended.expires_at_ms, i64::try_from(T0).unwrap() + 60_000);
    assert_eq!(ended.ended_at_ms, Some(i64::try_from(T0).unwrap() + 60_001));
    // One notice for the twenty, and no desktop notification for any of them.
    let mut lapsed = Vec::new();
    while let Ok(n) = d.notices.try_recv() {
        match n {
            HubNotice::ProposalsLapsed { action_ids, .. } => lapsed.push(action_ids.len()),
            HubNotice::ConfirmationChanged { change, .. } => {
                panic!("a change per proposal: {change:?}")
            }
            _ => {}
        }
    }
    assert_eq!(lapsed, [20]);
    let settings = switchboard::settings::NotificationSettings::default();
    let change = switchboard::confirmations::MirrorChange {
        kind: ChangeKind::Lapsed,
        confirmation: Some(ended),
        anomaly: None,
    };
    assert_eq!(
        switchboard::confirmations::notify::notification_for(&change, &settings),
        None
    );
    // A sweep later changes nothing more.
    assert_eq!(d.hub.expire_proposals(), 0);

    // Unpairing ends the phone's remaining waiting proposals (the approved one included).
    assert!(d.link.unpair(me.device_id()).unwrap());
    mirror_until(&d, |m| m.waiting_count() == 0).await;
    let later = d
        .mirror
        .lock()
        .unwrap()
        .get(me.device_id(), "act_later0000001")
        .cloned()
        .unwrap();
    assert_eq!(later.state, ActionState::Expired);
    assert_eq!(
        later.ended_text.as_deref(),
        Some("ended: the phone was unpaired before it answered")
    );
    let approved = d
        .mirror
        .lock()
        .unwrap()
        .get(me.device_id(), "act_apprv0000001")
        .cloned()
        .unwrap();
    assert_eq!(
        approved.ended_text.as_deref(),
        Some("ended: the phone was unpaired before it answered")
    );
    drop(phone);
    d.stop();
}

/// An `action.*` follow-up of `me` (approve, result, ...) sent `at_ms`.
fn follow_up(me: &PhoneIdentity, id: &str, ty: &str, at_ms: u64, payload: Value) -> Value {
    json!({"ifp":"1","id":id,"ts":ts(at_ms),"type":ty,"entity":me.entity_id(),
        "session":"ses_runtime0000001","device":me.device_id(),"generation":1,"payload":payload})
}

/// The person's approval (`user_confirmed`) of `proposal`, as message `id` sent `at_ms`.
fn approve(me: &PhoneIdentity, id: &str, proposal: &Value, at_ms: u64) -> Value {
    follow_up(
        me,
        id,
        "action.approve",
        at_ms,
        json!({"action_id": proposal["payload"]["action_id"],
            "params_hash": proposal["payload"]["params_hash"],
            "confirmation": {"mode": "user_confirmed", "ref": "conf_1"}}),
    )
}

/// Reads frames until the acknowledgement of `id`; panics on any `error` frame on the way.
async fn acked_without_error(phone: &mut PhoneClient, id: &str) {
    let mut acks = Vec::new();
    until(phone, &mut acks, |v| {
        assert_ne!(v["type"], "error", "the desktop refused a message: {v}");
        (v["type"] == "control.ack" && v["payload"]["last_id"] == id).then_some(())
    })
    .await;
}

/// The desktop acknowledged two proposals (one approved on the phone, one not yet) and then
/// restarted. Nothing is acknowledged before the file holds it; the phone does not send what
/// was acknowledged again, so the restarted desktop must still show both waiting, accept the
/// approval and the results that come after, and end each proposal it knew, never as a stray
/// message about an action it never saw.
#[tokio::test]
async fn a_proposal_waiting_at_a_restart_is_still_waiting_after_it_and_its_end_is_matched() {
    use switchboard::app::confirmations::ConfirmationsState;
    use switchboard::confirmations::history::HISTORY_FILE;
    let dir = tempfile::tempdir().unwrap();
    let store = MemoryStore::new();
    let file = dir.path().join(HISTORY_FILE);
    let first = ConfirmationsState::with_history(
        ConfirmationMirror::with_bundled_catalogue(),
        file.clone(),
        &switchboard::clock::SystemClock,
    );
    let mut d = desk_with(
        dir.path(),
        DesktopIdentity::load_or_create(&store).unwrap(),
        first.mirror.clone(),
        first.saved_watch(),
    )
    .await;
    let me = PhoneIdentity::generate("Restart");
    let mut phone = d.pair(&me).await;
    let a = propose(&me, "msg_rsta00000001", "act_rsta00000001", T0 + 600_000);
    let b = propose(&me, "msg_rstb00000001", "act_rstb00000001", T0 + 600_000);
    phone.send_value(&a).await.unwrap();
    phone.send_value(&b).await.unwrap();
    let approve_b = approve(&me, "msg_rstb00000002", &b, T0 + 1_000);
    phone.send_value(&approve_b).await.unwrap();
    // Applied, but not written yet: nothing of it is acknowledged.
    mirror_until(&d, |m| {
        m.get(me.device_id(), "act_rstb00000001")
            .is_some_and(|c| c.state == ActionState::Approved)
    })
    .await;
    phone.idle(Duration::from_millis(400)).await.unwrap();
    let early: Vec<&Value> = phone
        .received
        .iter()
        .filter(|v| v["type"] == "control.ack" || v["type"] == "error")
        .collect();
    assert!(
        early.is_empty(),
        "acknowledged before the file held it: {early:?}"
    );
    assert!(
        first.save_history().unwrap(),
        "the waiting proposals are written"
    );
    acked_without_error(&mut phone, "msg_rstb00000002").await;
    let before = first.lock().snapshot().waiting;
    assert_eq!(before.len(), 2, "{before:?}");
    drop(phone);
    d.stop();

    // The next start: a new mirror from the same file, a new hub and receiver.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let second = Arc::new(ConfirmationsState::with_history(
        ConfirmationMirror::with_bundled_catalogue(),
        file,
        &switchboard::clock::SystemClock,
    ));
    let after = second.lock().snapshot().waiting;
    assert_eq!(
        after, before,
        "both still waiting, with their keys and states"
    );
    assert_eq!(
        after
            .iter()
            .map(|c| (c.action_id.as_str(), c.state))
            .collect::<Vec<_>>(),
        [
            ("act_rsta00000001", ActionState::Requested),
            ("act_rstb00000001", ActionState::Approved)
        ]
    );
    let mut d = desk_with(
        dir.path(),
        DesktopIdentity::load_or_create(&store).unwrap(),
        second.mirror.clone(),
        second.saved_watch(),
    )
    .await;
    // Written as the app does it, soon after each change (bounded: 10 s).
    let saver = {
        let s = Arc::clone(&second);
        tokio::spawn(async move {
            for _ in 0..500 {
                s.save_history().unwrap();
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let mut phone = d.hello(&me).await;
    // A's proposal sent again, as a phone does with a message it was not sure arrived: the
    // same proposal, so a duplicate, not refused as "already proposed".
    phone.send_value(&a).await.unwrap();
    acked_without_error(&mut phone, "msg_rsta00000001").await;
    assert_eq!(d.mirror.lock().unwrap().waiting_count(), 2);
    // The person approves A on the phone; B's result and then A's come in.
    let approve_a = approve(&me, "msg_rsta00000002", &a, T0 + 2_000);
    phone.send_value(&approve_a).await.unwrap();
    acked_without_error(&mut phone, "msg_rsta00000002").await;
    assert_eq!(
        d.mirror
            .lock()
            .unwrap()
            .get(me.device_id(), "act_rsta00000001")
            .map(|c| c.state),
        Some(ActionState::Approved)
    );
    for (id, action, at) in [
        ("msg_rstb00000003", "act_rstb00000001", T0 + 3_000),
        ("msg_rsta00000003", "act_rsta00000001", T0 + 4_000),
    ] {
        let result = follow_up(
            &me,
            id,
            "action.result",
            at,
            json!({"action_id": action, "status": "executed"}),
        );
        phone.send_value(&result).await.unwrap();
        acked_without_error(&mut phone, id).await;
    }
    let snap = d.mirror.lock().unwrap().snapshot();
    assert!(snap.waiting.is_empty(), "{:?}", snap.waiting);
    assert!(snap.stray.is_empty(), "no stray message: {:?}", snap.stray);
    let ended: Vec<(&str, ActionState)> = snap
        .ended
        .iter()
        .map(|c| (c.action_id.as_str(), c.state))
        .collect();
    assert_eq!(
        ended,
        [
            ("act_rsta00000001", ActionState::Executed),
            ("act_rstb00000001", ActionState::Executed)
        ],
        "both ended, newest first"
    );
    for c in &snap.ended {
        let keyed = after.iter().find(|w| w.action_id == c.action_id).unwrap();
        assert_eq!(c.key, keyed.key, "the same entry ended, not a new one");
    }
    saver.abort();
    drop(phone);
    d.stop();
}
