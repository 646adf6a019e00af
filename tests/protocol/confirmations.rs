//! The confirmations mirror: the 10 corpus sequences driven through the receiver and the
//! mirror (states, anomalies, timelines), `phone_action` cards and ends, notification texts and
//! muting, bounds, and the bundled tool list.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{json, Map, Value};
use switchboard::confirmations::notify::{
    banner_notification, escape_markup, notification_for, plain_line, BannerNotices,
    NotificationKind, BANNER_NOTICES_REMEMBERED, BANNER_RENOTIFY_AFTER, ENDED_TITLE,
    MAX_PART_CHARS, WAITING_TITLE,
};
use switchboard::confirmations::{
    AnomalyKind, ChangeKind, ConfirmationMirror, ConfirmedBy, MirrorChange, RejectReason,
    BUNDLED_TOOLS_JSON, EXPIRED_WORDS, MAX_ENDED, MAX_STRAY,
};
use switchboard::ifp::{params_hash, validate, ActionState, Receiver, Verdict};
use switchboard::phone_action::{self, AnswerStatus, MESSAGE_MAX_CHARS};
use switchboard::runtime::{Autonomy, Decision};
use switchboard::settings::NotificationSettings;

const SEQUENCES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/corpus/ifp1/fixtures/sequences.json"
);
const TOOLS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/corpus/ifp1/openphone-tools.ifp1.json"
);

const PHONE: &str = "Ada's Pixel";

fn scenarios() -> Vec<Value> {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(SEQUENCES).unwrap()).unwrap();
    doc["scenarios"].as_array().unwrap().clone()
}

fn ms(ts: &str) -> i64 {
    let t: switchboard::ifp::Timestamp = ts.parse().unwrap();
    t.unix_seconds() * 1000 + i64::from(t.nanos() / 1_000_000)
}

/// Feeds one message through a receiver (now = its ts) and the mirror.
fn feed(rx: &mut Receiver, m: &mut ConfirmationMirror, msg: &Value) -> Vec<MirrorChange> {
    let env = validate(msg).unwrap_or_else(|r| panic!("invalid test message {msg}: {r}"));
    let outcome = rx.receive_at_ts(&env);
    m.apply(PHONE, &env, &outcome, ms(env.ts.as_str()))
}

/// Runs a corpus scenario; returns the mirror and every step's changes. Each step's verdict is
/// also checked against the corpus so the mirror sees exactly what the spec says it should.
fn run(name: &str) -> (ConfirmationMirror, Vec<Vec<MirrorChange>>) {
    let sc = scenarios()
        .into_iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no scenario {name}"));
    let mut rx = Receiver::new(3);
    let mut m = ConfirmationMirror::with_bundled_catalogue();
    let mut all = Vec::new();
    for step in sc["steps"].as_array().unwrap() {
        let env = validate(&step["give"]).unwrap();
        let outcome = rx.receive_at_ts(&env);
        assert_eq!(
            serde_json::to_value(outcome.verdict).unwrap(),
            step["expect"]["verdict"],
            "{name}"
        );
        all.push(m.apply(PHONE, &env, &outcome, ms(env.ts.as_str())));
    }
    (m, all)
}

fn kinds(changes: &[MirrorChange]) -> Vec<ChangeKind> {
    changes.iter().map(|c| c.kind).collect()
}

fn anomaly_kinds(m: &ConfirmationMirror, action_id: &str) -> Vec<AnomalyKind> {
    m.get(PHONE, action_id)
        .unwrap()
        .anomalies
        .iter()
        .map(|a| a.kind)
        .collect()
}

#[test]
fn the_corpus_has_ten_scenarios_and_event_ones_leave_the_mirror_empty() {
    let all = scenarios();
    assert_eq!(all.len(), 10);
    let event_only: Vec<&str> = all
        .iter()
        .filter(|s| {
            s["steps"]
                .as_array()
                .unwrap()
                .iter()
                .all(|st| st["give"]["type"].as_str().unwrap().starts_with("event."))
        })
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(event_only.len(), 4, "{event_only:?}");
    // The other six are each checked by a test below.
    let action_ones = [
        "action_lifecycle_approve_execute",
        "action_lifecycle_device_rejection_is_terminal",
        "action_binding_mismatch",
        "action_expiry",
        "action_cancel_before_execution",
        "duplicate_action_result_idempotent",
    ];
    for s in &all {
        let name = s["name"].as_str().unwrap();
        assert!(
            event_only.contains(&name) || action_ones.contains(&name),
            "scenario {name} is not covered"
        );
    }
    for name in event_only {
        let (m, changes) = run(name);
        assert!(changes.iter().all(Vec::is_empty), "{name}");
        let snap = m.snapshot();
        assert!(snap.waiting.is_empty() && snap.ended.is_empty() && snap.stray.is_empty());
    }
}

#[test]
fn approve_execute_ends_executed_user_confirmed_with_hash_and_risk_anomalies() {
    let (m, changes) = run("action_lifecycle_approve_execute");
    assert_eq!(
        kinds(&changes[0]),
        [
            ChangeKind::Waiting,
            ChangeKind::Anomaly,
            ChangeKind::Anomaly
        ]
    );
    assert_eq!(kinds(&changes[1]), [ChangeKind::Approved]);
    assert_eq!(kinds(&changes[2]), [ChangeKind::Ended]);
    let snap = m.snapshot();
    assert!(snap.waiting.is_empty());
    assert_eq!(snap.ended.len(), 1);
    let c = &snap.ended[0];
    assert_eq!(c.state, ActionState::Executed);
    assert_eq!(c.confirmed_by, Some(ConfirmedBy::UserConfirmed));
    assert_eq!(c.confirmation_ref.as_deref(), Some("aud_local_1"));
    assert_eq!(c.tool.name, "messages.send");
    assert!(c.tool.known);
    assert_eq!(c.tool.capability.as_deref(), Some("tool:messages.send"));
    assert_eq!(
        c.tool.description.as_deref(),
        Some("Send an SMS message to a phone number.")
    );
    assert_eq!(c.summary, "Send an SMS message to a phone number");
    assert_eq!(
        c.params,
        *json!({"to": "+15551234567", "body": "hi"})
            .as_object()
            .unwrap()
    );
    assert_eq!(c.idempotency_key, "act_life0001");
    assert_eq!(c.expires_at, "2026-07-21T01:08:00Z");
    assert_eq!(c.expires_at_ms, 1_784_596_080_000);
    // The corpus hashes are placeholders (sha256:1111...): an anomaly, not a verdict change.
    assert!(!c.hash.matches);
    assert_eq!(
        c.hash.computed,
        params_hash(&json!({"to": "+15551234567", "body": "hi"}))
    );
    assert_eq!(
        anomaly_kinds(&m, "act_life0001"),
        [AnomalyKind::ParamsHashMismatch, AnomalyKind::RiskDiffers]
    );
    assert!(
        c.anomalies[1].text.contains("risk medium"),
        "{}",
        c.anomalies[1].text
    );
    assert!(c.anomalies[1].text.contains("risk high"));
    let types: Vec<&str> = c.timeline.iter().map(|t| t.message_type.as_str()).collect();
    assert_eq!(types, ["action.propose", "action.approve", "action.result"]);
    // How long it may wait, in words; its deadline as a time is the view's to show.
    let proposed = &c.timeline[0].text;
    assert!(
        proposed.starts_with("Proposed: ") && proposed.ends_with(" for an answer."),
        "{proposed}"
    );
    assert!(!proposed.contains(&c.expires_at), "{proposed}");
    let states: Vec<ActionState> = c.timeline.iter().map(|t| t.state_after).collect();
    assert_eq!(
        states,
        [
            ActionState::Requested,
            ActionState::Approved,
            ActionState::Executed
        ]
    );
    assert_eq!(c.ended_text.as_deref(), Some("done on the phone"));
    assert_eq!(c.ended_at_ms, Some(ms("2026-07-21T01:03:07Z")));
}

#[test]
fn rejection_is_terminal_and_a_late_approval_is_an_anomaly() {
    let (m, changes) = run("action_lifecycle_device_rejection_is_terminal");
    assert_eq!(kinds(&changes[1]), [ChangeKind::Ended]);
    assert_eq!(kinds(&changes[2]), [ChangeKind::Anomaly]);
    let c = m.get(PHONE, "act_rej00001").unwrap();
    assert_eq!(c.state, ActionState::Rejected);
    assert_eq!(c.reject_reason, Some(RejectReason::UserDenied));
    assert_eq!(c.ended_text.as_deref(), Some("declined on the phone"));
    assert_eq!(c.timeline.len(), 3);
    assert_eq!(c.timeline[2].verdict, Verdict::Rejected);
    let late = c
        .anomalies
        .iter()
        .find(|a| a.kind == AnomalyKind::MessageAfterEnd)
        .unwrap();
    assert!(
        late.text.contains("already ended (rejected)"),
        "{}",
        late.text
    );
    assert_eq!(late.message_id, "msg_b30000");
}

#[test]
fn binding_mismatch_keeps_it_waiting_and_names_both_hashes() {
    let (m, changes) = run("action_binding_mismatch");
    assert_eq!(kinds(&changes[1]), [ChangeKind::Anomaly]);
    let snap = m.snapshot();
    assert_eq!(snap.waiting.len(), 1);
    let c = &snap.waiting[0];
    assert_eq!(c.state, ActionState::Requested);
    let a = c
        .anomalies
        .iter()
        .find(|a| a.kind == AnomalyKind::BindingMismatch)
        .unwrap();
    assert!(
        a.text.contains(&format!("sha256:{}", "4".repeat(64))),
        "{}",
        a.text
    );
    assert!(a.text.contains(&format!("sha256:{}", "3".repeat(64))));
    assert!(a.text.contains("still waiting"));
}

#[test]
fn approval_after_expiry_ends_expired_with_an_anomaly() {
    let (m, changes) = run("action_expiry");
    assert_eq!(kinds(&changes[1]), [ChangeKind::Anomaly, ChangeKind::Ended]);
    let c = m.get(PHONE, "act_exp00001").unwrap();
    assert_eq!(c.state, ActionState::Expired);
    assert!(c.ended_text.as_deref().unwrap().starts_with("expired"));
    let a = c
        .anomalies
        .iter()
        .find(|a| a.kind == AnomalyKind::ApprovedAfterExpiry)
        .unwrap();
    assert!(a.text.contains("2026-07-21T01:06:30Z"), "{}", a.text);
    assert!(a.text.contains("2026-07-21T01:07:00Z"));
    assert_eq!(c.expires_at_ms, ms("2026-07-21T01:06:30Z"));
    // risk low in the proposal, high in the tool list
    assert!(anomaly_kinds(&m, "act_exp00001").contains(&AnomalyKind::RiskDiffers));
}

#[test]
fn cancel_ends_cancelled_and_a_later_result_is_an_anomaly() {
    let (m, changes) = run("action_cancel_before_execution");
    assert_eq!(kinds(&changes[1]), [ChangeKind::Ended]);
    assert_eq!(kinds(&changes[2]), [ChangeKind::Anomaly]);
    let c = m.get(PHONE, "act_can00001").unwrap();
    assert_eq!(c.state, ActionState::Cancelled);
    assert_eq!(
        c.ended_text.as_deref(),
        Some("cancelled by the runtime before it ran")
    );
    assert!(anomaly_kinds(&m, "act_can00001").contains(&AnomalyKind::MessageAfterEnd));
}

#[test]
fn a_repeated_identical_result_is_noted_not_an_anomaly() {
    let (m, changes) = run("duplicate_action_result_idempotent");
    assert_eq!(kinds(&changes[1]), [ChangeKind::Approved]);
    assert_eq!(kinds(&changes[3]), [ChangeKind::Noted]);
    let c = m.get(PHONE, "act_idem0001").unwrap();
    assert_eq!(c.state, ActionState::Executed);
    assert_eq!(c.confirmed_by, Some(ConfirmedBy::PolicyAuto));
    assert_eq!(c.timeline.len(), 4);
    assert_eq!(c.timeline[3].verdict, Verdict::AcknowledgedDuplicate);
    assert!(!anomaly_kinds(&m, "act_idem0001").contains(&AnomalyKind::MessageAfterEnd));
    assert_eq!(
        c.ended_text.as_deref(),
        Some("done on the phone (approved by the phone's own policy)")
    );
}

// ---- hand-built messages ----

fn propose(id: &str, action_id: &str, tool: &str, params: Value, hash: Option<&str>) -> Value {
    let hash = hash.map_or_else(|| params_hash(&params), str::to_string);
    json!({
        "ifp": "1", "id": id, "ts": "2026-07-21T02:00:00Z", "type": "action.propose",
        "entity": "ent_abc123", "session": "ses_pa0001", "device": "dev_d100",
        "payload": {"action_id": action_id, "tool": tool, "params": params, "params_hash": hash,
                    "risk": "medium", "idempotency_key": action_id,
                    "expires_at": "2026-07-21T02:05:00Z"}
    })
}

fn follow(id: &str, ts: &str, ty: &str, payload: Value) -> Value {
    json!({
        "ifp": "1", "id": id, "ts": ts, "type": ty, "entity": "ent_abc123",
        "session": "ses_pa0001", "device": "dev_d100", "generation": 3, "payload": payload
    })
}

fn approve(id: &str, action_id: &str, params: &Value, mode: &str) -> Value {
    follow(
        id,
        "2026-07-21T02:00:10Z",
        "action.approve",
        json!({"action_id": action_id, "params_hash": params_hash(params),
               "confirmation": {"mode": mode, "ref": null}}),
    )
}

#[test]
fn a_correct_params_hash_and_matching_risk_give_no_anomaly() {
    let mut rx = Receiver::new(3);
    let mut m = ConfirmationMirror::with_bundled_catalogue();
    let params = json!({"title": "Dentist", "start": "2026-07-22T09:00"});
    let ch = feed(
        &mut rx,
        &mut m,
        &propose("msg_ok0001", "act_ok0001", "calendar.add", params, None),
    );
    assert_eq!(kinds(&ch), [ChangeKind::Waiting]);
    let c = m.get(PHONE, "act_ok0001").unwrap();
    assert!(c.hash.matches);
    assert!(c.anomalies.is_empty());
    assert_eq!(c.tool.risk, Some(switchboard::runtime::Risk::Medium));
}

#[test]
fn a_tool_not_in_the_list_is_shown_as_unknown() {
    let mut rx = Receiver::new(3);
    let mut m = ConfirmationMirror::with_bundled_catalogue();
    feed(
        &mut rx,
        &mut m,
        &propose(
            "msg_un0001",
            "act_un0001",
            "drone.launch",
            json!({"alt": 30}),
            None,
        ),
    );
    let c = m.get(PHONE, "act_un0001").unwrap();
    assert!(!c.tool.known);
    assert_eq!(c.tool.description, None);
    assert_eq!(c.summary, "drone.launch");
}

#[test]
fn a_message_about_an_unseen_action_is_stray() {
    let mut rx = Receiver::new(3);
    let mut m = ConfirmationMirror::with_bundled_catalogue();
    let ch = feed(
        &mut rx,
        &mut m,
        &follow(
            "msg_st0001",
            "2026-07-21T02:00:00Z",
            "action.cancel",
            json!({"action_id": "act_ghost01"}),
        ),
    );
    assert_eq!(kinds(&ch), [ChangeKind::Anomaly]);
    assert!(ch[0].confirmation.is_none());
    let snap = m.snapshot();
    assert_eq!(snap.stray.len(), 1);
    assert_eq!(snap.stray[0].kind, AnomalyKind::Stray);
    assert!(
        snap.stray[0].text.contains("never saw proposed"),
        "{}",
        snap.stray[0].text
    );
    for i in 0..(MAX_STRAY + 10) {
        feed(
            &mut rx,
            &mut m,
            &follow(
                &format!("msg_st{i:06}"),
                "2026-07-21T02:00:00Z",
                "action.cancel",
                json!({"action_id": format!("act_ghost{i:04}")}),
            ),
        );
    }
    assert_eq!(m.snapshot().stray.len(), MAX_STRAY);
}

// ---- phone_action ----

fn alarm() -> Value {
    json!({"action": "alarm", "time": " 07:00 ", "days": ["mon", "fri"],
           "summary": "Wake up at 7 on Mondays and Fridays", "colour": "red"})
}

fn phone_action_run(end: Value, ty: &str, approve_first: bool) -> ConfirmationMirror {
    let mut rx = Receiver::new(3);
    let mut m = ConfirmationMirror::with_bundled_catalogue();
    let params = alarm();
    let ch = feed(
        &mut rx,
        &mut m,
        &propose(
            "msg_pa0001",
            "act_pa0001",
            "phone_action",
            params.clone(),
            None,
        ),
    );
    assert_eq!(kinds(&ch), [ChangeKind::Waiting]);
    if approve_first {
        feed(
            &mut rx,
            &mut m,
            &approve("msg_pa0002", "act_pa0001", &params, "user_confirmed"),
        );
    }
    let ch = feed(
        &mut rx,
        &mut m,
        &follow("msg_pa0003", "2026-07-21T02:00:20Z", ty, end),
    );
    assert_eq!(kinds(&ch), [ChangeKind::Ended], "{ty}");
    m
}

#[test]
fn phone_action_shows_the_phones_card() {
    let m = phone_action_run(
        json!({"action_id": "act_pa0001", "status": "executed"}),
        "action.result",
        true,
    );
    let c = m.get(PHONE, "act_pa0001").unwrap();
    let pa = c.phone_action.as_ref().unwrap();
    let card = pa.card.as_ref().unwrap();
    assert_eq!(*card, phone_action::check_call(&alarm()).unwrap());
    assert_eq!(card.summary, "Wake up at 7 on Mondays and Fridays");
    assert_eq!(c.summary, card.summary);
    let names: Vec<&str> = card.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        ["time", "days"],
        "colour is dropped, as the phone drops it"
    );
    assert_eq!(card.fields[0].value, json!("07:00"));
    assert!(pa.server_would_refuse.is_none());
    let end = pa.end.as_ref().unwrap();
    assert_eq!(end.status, AnswerStatus::Done);
    assert_eq!(
        c.ended_text.as_deref(),
        Some(phone_action::result_text(Some(&json!({"status": "done"}))).as_str())
    );
}

#[test]
fn phone_action_declined_tells_the_model_not_to_retry() {
    let m = phone_action_run(
        json!({"action_id": "act_pa0001", "reason_class": "user_denied", "message": "not now"}),
        "action.reject",
        false,
    );
    let c = m.get(PHONE, "act_pa0001").unwrap();
    let end = c.phone_action.as_ref().unwrap().end.as_ref().unwrap();
    assert_eq!(end.status, AnswerStatus::Declined);
    assert!(end.do_not_retry);
    assert_eq!(end.message.as_deref(), Some("not now"));
    assert_eq!(
        c.ended_text.as_deref(),
        Some(
            phone_action::result_text(Some(&json!({"status": "declined", "message": "not now"})))
                .as_str()
        )
    );
    assert!(c
        .ended_text
        .as_deref()
        .unwrap()
        .contains("Do not try again"));
}

#[test]
fn phone_action_failed_carries_the_phones_message_cut() {
    let long = "x".repeat(MESSAGE_MAX_CHARS + 100);
    let m = phone_action_run(
        json!({"action_id": "act_pa0001", "status": "failed", "error_class": "internal",
               "message": long}),
        "action.result",
        true,
    );
    let c = m.get(PHONE, "act_pa0001").unwrap();
    let end = c.phone_action.as_ref().unwrap().end.as_ref().unwrap();
    assert_eq!(end.status, AnswerStatus::Failed);
    assert_eq!(
        end.message.as_ref().unwrap().chars().count(),
        MESSAGE_MAX_CHARS
    );
    assert!(end.message_cut);
    assert!(c.result_message_cut);
    assert_eq!(
        c.result_message.as_ref().unwrap().chars().count(),
        MESSAGE_MAX_CHARS
    );
    assert!(c
        .ended_text
        .as_deref()
        .unwrap()
        .starts_with(phone_action::PHONE.texts.failed));
}

#[test]
fn phone_action_cancelled_or_expired_is_no_answer_in_time() {
    let m = phone_action_run(json!({"action_id": "act_pa0001"}), "action.cancel", false);
    let c = m.get(PHONE, "act_pa0001").unwrap();
    let end = c.phone_action.as_ref().unwrap().end.as_ref().unwrap();
    assert_eq!(end.status, AnswerStatus::NoAnswer);
    assert_eq!(
        c.ended_text.as_deref(),
        Some(phone_action::PHONE.texts.no_answer)
    );
    let m = phone_action_run(
        json!({"action_id": "act_pa0001", "reason_class": "expired"}),
        "action.reject",
        false,
    );
    let end = m
        .get(PHONE, "act_pa0001")
        .unwrap()
        .phone_action
        .clone()
        .unwrap()
        .end
        .unwrap();
    assert_eq!(end.status, AnswerStatus::NoAnswer);
}

#[test]
fn a_phone_action_call_the_server_would_refuse_says_so() {
    let mut rx = Receiver::new(3);
    let mut m = ConfirmationMirror::with_bundled_catalogue();
    feed(
        &mut rx,
        &mut m,
        &propose(
            "msg_rf0001",
            "act_rf0001",
            "phone_action",
            json!({"action": "add_stop", "summary": "Coffee on the way"}),
            None,
        ),
    );
    let c = m.get(PHONE, "act_rf0001").unwrap();
    let pa = c.phone_action.as_ref().unwrap();
    assert!(pa.card.is_none());
    assert_eq!(
        pa.server_would_refuse.as_deref(),
        Some("the server would refuse this: add_stop needs stop and destination.")
    );
    assert_eq!(c.summary, "Coffee on the way");
}

// ---- notifications ----

fn changes_of(name: &str) -> Vec<MirrorChange> {
    run(name).1.into_iter().flatten().collect()
}

#[test]
fn waiting_and_ended_notifications_read_as_specified() {
    let on = NotificationSettings::default();
    let changes = changes_of("action_lifecycle_approve_execute");
    let shown: Vec<_> = changes
        .iter()
        .filter_map(|c| notification_for(c, &on))
        .collect();
    assert_eq!(shown.len(), 2, "{shown:?}");
    assert_eq!(shown[0].kind, NotificationKind::ConfirmationWaiting);
    assert_eq!(shown[0].title, WAITING_TITLE);
    assert_eq!(
        shown[0].body,
        "Ada's Pixel asks you to confirm: Send an SMS message to a phone number. Confirm on the phone."
    );
    assert_eq!(shown[1].kind, NotificationKind::ConfirmationEnded);
    assert_eq!(shown[1].title, ENDED_TITLE);
    assert_eq!(
        shown[1].body,
        "Send an SMS message to a phone number: done on the phone"
    );
    for n in &shown {
        let lower = n.body.to_lowercase();
        assert!(!lower.contains("click") && !lower.contains("approve here"));
    }
}

#[test]
fn each_kind_mutes_on_its_own() {
    let changes = changes_of("action_lifecycle_approve_execute");
    let count = |s: &NotificationSettings, k: NotificationKind| {
        changes
            .iter()
            .filter_map(|c| notification_for(c, s))
            .filter(|n| n.kind == k)
            .count()
    };
    let no_waiting = NotificationSettings {
        confirmation_waiting: false,
        ..Default::default()
    };
    assert_eq!(count(&no_waiting, NotificationKind::ConfirmationWaiting), 0);
    assert_eq!(count(&no_waiting, NotificationKind::ConfirmationEnded), 1);
    let no_ended = NotificationSettings {
        confirmation_ended: false,
        ..Default::default()
    };
    assert_eq!(count(&no_ended, NotificationKind::ConfirmationWaiting), 1);
    assert_eq!(count(&no_ended, NotificationKind::ConfirmationEnded), 0);
}

#[test]
fn policy_auto_approvals_notify_only_when_policy_auto_is_on() {
    let changes = changes_of("duplicate_action_result_idempotent");
    let default = NotificationSettings::default();
    assert!(!default.policy_auto);
    let kinds_shown = |s: &NotificationSettings| -> Vec<NotificationKind> {
        changes
            .iter()
            .filter_map(|c| notification_for(c, s))
            .map(|n| n.kind)
            .collect()
    };
    assert_eq!(
        kinds_shown(&default),
        [NotificationKind::ConfirmationWaiting]
    );
    let on = NotificationSettings {
        policy_auto: true,
        ..Default::default()
    };
    assert_eq!(
        kinds_shown(&on),
        [
            NotificationKind::ConfirmationWaiting,
            NotificationKind::PolicyAuto,
            NotificationKind::ConfirmationEnded
        ]
    );
    let n = changes
        .iter()
        .find_map(|c| notification_for(c, &on).filter(|n| n.kind == NotificationKind::PolicyAuto))
        .unwrap();
    assert_eq!(
        n.body,
        "Send an SMS message to a phone number: approved by Ada's Pixel's own policy, without asking you."
    );
    // A user_confirmed approval never notifies: the person just did it on the phone.
    let uc = changes_of("action_lifecycle_approve_execute");
    assert!(uc
        .iter()
        .filter(|c| c.kind == ChangeKind::Approved)
        .all(|c| notification_for(c, &on).is_none()));
}

#[test]
fn a_phone_action_end_notification_uses_the_spec_texts() {
    let m = phone_action_run(
        json!({"action_id": "act_pa0001", "reason_class": "user_denied"}),
        "action.reject",
        false,
    );
    let c = m.snapshot().ended[0].clone();
    let change = MirrorChange {
        kind: ChangeKind::Ended,
        confirmation: Some(c),
        anomaly: None,
    };
    let n = notification_for(&change, &NotificationSettings::default()).unwrap();
    assert_eq!(
        n.body,
        format!(
            "Wake up at 7 on Mondays and Fridays: {}",
            phone_action::PHONE.texts.declined
        )
    );
}

#[test]
fn banner_notifications_use_the_banner_text_and_mute() {
    let n = banner_notification(
        "LumiRealm is not answering",
        &NotificationSettings::default(),
    )
    .unwrap();
    assert_eq!(n.title, "Bridge status");
    assert_eq!(n.body, "LumiRealm is not answering");
    let off = NotificationSettings {
        banners: false,
        ..Default::default()
    };
    assert!(banner_notification("x", &off).is_none());
}

/// A banner that flaps (raised, cleared, raised, as a line's calls fail and succeed in turn)
/// notifies once per quiet period; a new text or another banner notifies at once.
#[test]
fn a_flapping_banner_notifies_once_per_quiet_period() {
    const TEXT: &str = "Shared RPC endpoint \"lumirealm.phoneline\" requires requester \"lumiagent\" to inherit owner \"lumirealm\" permissions: push_notification";
    let t0 = std::time::Instant::now();
    let mut gate = BannerNotices::default();
    let id = "lumiagent>lumirealm.phoneline";
    assert!(gate.due(id, TEXT, t0), "the first raise notifies");
    let ms = std::time::Duration::from_millis;
    let repeats = (1..1000)
        .filter(|i| gate.due(id, TEXT, t0 + ms(13 * i)))
        .count();
    assert_eq!(
        repeats, 0,
        "raised again 999 times within 13 s: no new notification"
    );
    assert!(gate.due(id, "another failure on the same path", t0 + ms(20)));
    assert!(gate.due("lumiagent>lumiweather.phoneline", TEXT, t0 + ms(30)));
    let later = t0 + ms(20) + BANNER_RENOTIFY_AFTER;
    assert!(!gate.due(id, "another failure on the same path", later - ms(1)));
    assert!(gate.due(id, "another failure on the same path", later));
    // Bounded: many banners, then the first one is forgotten (and notifies again).
    let mut gate = BannerNotices::default();
    assert!(gate.due("b0", "x", t0));
    for i in 1..=BANNER_NOTICES_REMEMBERED {
        assert!(gate.due(&format!("b{i}"), "x", t0 + ms(i as u64)));
    }
    assert!(
        gate.due("b0", "x", t0 + ms(5000)),
        "the oldest was forgotten"
    );
    assert!(
        !gate.due("b2", "x", t0 + ms(5001)),
        "a recent one is remembered"
    );
}

/// Labels and reasons a hostile phone might send.
const HOSTILE: [&str; 4] = [
    "<a href=\"https://evil.example\">Click</a>",
    "&amp; <b>bold</b> &lt;",
    "Pixel\nApproved on the desktop\r\n\u{2028}done\t",
    "",
];

/// Nothing a notification carries can be read as markup: every `<` and `>` is escaped, every
/// `&` starts an entity this module wrote, and it is one line.
fn assert_inert(text: &str) {
    assert!(!text.contains('<') && !text.contains('>'), "{text}");
    for (i, _) in text.match_indices('&') {
        let rest = &text[i..];
        assert!(
            ["&amp;", "&lt;", "&gt;"]
                .iter()
                .any(|e| rest.starts_with(e)),
            "{text}"
        );
    }
    assert!(
        !text.chars().any(|c| c.is_control() || c == '\u{2028}'),
        "{text:?}"
    );
}

#[test]
fn hostile_labels_and_reasons_cannot_inject_markup_or_lines() {
    let on = NotificationSettings {
        policy_auto: true,
        ..Default::default()
    };
    let long = "x".repeat(10_000);
    let mut base = changes_of("duplicate_action_result_idempotent");
    base.extend(changes_of("action_lifecycle_approve_execute"));
    let mut shown = 0;
    for hostile in HOSTILE.iter().copied().chain([long.as_str()]) {
        for change in &base {
            let mut change = change.clone();
            if let Some(c) = change.confirmation.as_mut() {
                c.phone = hostile.to_string();
                c.summary = hostile.to_string();
                if c.ended_text.is_some() {
                    c.ended_text = Some(hostile.to_string());
                }
            }
            if let Some(n) = notification_for(&change, &on) {
                shown += 1;
                assert_inert(&n.title);
                assert_inert(&n.body);
                assert!(
                    n.body.chars().count() < 3 * MAX_PART_CHARS + 80,
                    "{}",
                    n.body.len()
                );
            }
        }
        let n = banner_notification(hostile, &on).unwrap();
        assert_inert(&n.body);
        assert!(n.body.chars().count() <= MAX_PART_CHARS, "{}", n.body.len());
    }
    assert!(shown >= 5 * 4, "{shown}");

    // What the person reads is the phone's text, shown literally.
    let mut change = base
        .iter()
        .find(|c| c.kind == ChangeKind::Waiting)
        .unwrap()
        .clone();
    let c = change.confirmation.as_mut().unwrap();
    c.phone = HOSTILE[0].into();
    c.summary = HOSTILE[2].into();
    let n = notification_for(&change, &on).unwrap();
    assert_eq!(
        n.body,
        "&lt;a href=\"https://evil.example\"&gt;Click&lt;/a&gt; asks you to confirm: \
         Pixel Approved on the desktop done. Confirm on the phone."
    );
    assert_eq!(
        banner_notification(HOSTILE[1], &on).unwrap().body,
        "&amp;amp; &lt;b&gt;bold&lt;/b&gt; &amp;lt;"
    );
    let cut = banner_notification(&long, &on).unwrap().body;
    assert_eq!(cut.chars().count(), MAX_PART_CHARS);
    assert!(cut.ends_with('…'));
}

#[test]
fn markup_escaping_and_plain_lines() {
    assert_eq!(
        escape_markup("a & b <c> 'd' \"e\""),
        "a &amp; b &lt;c&gt; 'd' \"e\""
    );
    assert_eq!(plain_line("  one\ntwo\u{1b}[31m  "), "one two [31m");
    let t = "é".repeat(MAX_PART_CHARS);
    assert_eq!(plain_line(&t), t, "exactly the limit is kept whole");
    let over = format!("{t}é");
    let cut = plain_line(&over);
    assert_eq!(cut.chars().count(), MAX_PART_CHARS);
    assert!(cut.ends_with('…'));
}

// ---- bounds, autonomy, bundled list ----

#[test]
fn the_ended_history_is_capped_and_counts_what_it_dropped() {
    let mut rx = Receiver::new(3);
    let mut m = ConfirmationMirror::with_bundled_catalogue();
    let total = MAX_ENDED + 25;
    for i in 0..total {
        let aid = format!("act_cap{i:05}");
        feed(
            &mut rx,
            &mut m,
            &propose(
                &format!("msg_cp{i:05}"),
                &aid,
                "clipboard.set",
                json!({"text": i}),
                None,
            ),
        );
        feed(
            &mut rx,
            &mut m,
            &follow(
                &format!("msg_cq{i:05}"),
                "2026-07-21T02:00:01Z",
                "action.cancel",
                json!({"action_id": aid}),
            ),
        );
    }
    let snap = m.snapshot();
    assert_eq!(snap.ended.len(), MAX_ENDED);
    assert_eq!(snap.ended_dropped, 25);
    assert_eq!(
        snap.ended[0].action_id,
        format!("act_cap{:05}", total - 1),
        "newest first"
    );
    assert!(snap.waiting.is_empty());
}

/// Forgetting a phone's proposals (the demo phone's, before it replays its script) takes its
/// waiting, ended and stray ones and nothing of another phone's, and moves the revision so the
/// history file is written without them; forgetting a phone with nothing kept changes nothing.
#[test]
fn forgetting_a_phone_takes_only_its_proposals() {
    const OTHER: &str = "Ben's phone";
    let mut m = ConfirmationMirror::with_bundled_catalogue();
    let feed_as = |phone: &str, rx: &mut Receiver, m: &mut ConfirmationMirror, v: &Value| {
        let env = validate(v).unwrap();
        let outcome = rx.receive_at_ts(&env);
        m.apply(phone, &env, &outcome, ms(env.ts.as_str()))
    };
    let params = json!({"text": "hi"});
    for phone in [PHONE, OTHER] {
        let mut rx = Receiver::new(3);
        for (i, aid) in ["act_fgt00001", "act_fgt00002"].into_iter().enumerate() {
            feed_as(
                phone,
                &mut rx,
                &mut m,
                &propose(
                    &format!("msg_fgt0000{i}"),
                    aid,
                    "clipboard.set",
                    params.clone(),
                    None,
                ),
            );
        }
        feed_as(
            phone,
            &mut rx,
            &mut m,
            &follow(
                "msg_fgt00009",
                "2026-07-21T02:00:01Z",
                "action.cancel",
                json!({"action_id": "act_fgt00001"}),
            ),
        );
        feed_as(
            phone,
            &mut rx,
            &mut m,
            &follow(
                "msg_fgt00010",
                "2026-07-21T02:00:02Z",
                "action.cancel",
                json!({"action_id": "act_never0001"}),
            ),
        );
    }
    assert_eq!((m.waiting_count(), m.ended_count()), (2, 2));
    assert_eq!(m.snapshot().stray.len(), 2);
    let revision = m.kept_revision();

    assert_eq!(m.forget_phone(PHONE), 2);
    assert_ne!(
        m.kept_revision(),
        revision,
        "the history file is written again"
    );
    let snap = m.snapshot();
    assert!(snap
        .waiting
        .iter()
        .chain(&snap.ended)
        .all(|c| c.phone == OTHER));
    assert!(snap.stray.iter().all(|a| a.phone == OTHER));
    assert_eq!(
        (snap.waiting.len(), snap.ended.len(), snap.stray.len()),
        (1, 1, 1)
    );

    let revision = m.kept_revision();
    assert_eq!(m.forget_phone(PHONE), 0);
    assert_eq!(m.forget_phone("no such phone"), 0);
    assert_eq!(m.kept_revision(), revision, "nothing to write");
}

#[test]
fn the_autonomy_table_defaults_to_ask_before_action() {
    let mut m = ConfirmationMirror::with_bundled_catalogue();
    assert_eq!(m.autonomy_of(PHONE), (Autonomy::AskBeforeAction, false));
    let t = m.autonomy_table(PHONE).unwrap();
    assert_eq!(t.autonomy, Autonomy::AskBeforeAction);
    assert_eq!(t.rows.len(), 37);
    let send = t.rows.iter().find(|r| r.tool == "messages.send").unwrap();
    assert_eq!(send.decision, Decision::Ask);
    m.set_autonomy(PHONE, Autonomy::TrustedActions);
    let t = m.autonomy_table(PHONE).unwrap();
    let clip = t.rows.iter().find(|r| r.tool == "clipboard.set").unwrap();
    assert_eq!(clip.decision, Decision::Run);
    assert!(ConfirmationMirror::new(None)
        .autonomy_table(PHONE)
        .is_none());
}

#[test]
fn the_bundled_tool_list_is_the_corpus_file() {
    assert_eq!(BUNDLED_TOOLS_JSON, std::fs::read_to_string(TOOLS).unwrap());
    let m = ConfirmationMirror::with_bundled_catalogue();
    assert_eq!(m.catalogue().unwrap().tools.len(), 37);
}

#[test]
fn non_action_messages_change_nothing_and_odd_payloads_do_not_panic() {
    let mut m = ConfirmationMirror::with_bundled_catalogue();
    let mut rx = Receiver::new(3);
    let ping = json!({"ifp": "1", "id": "msg_pi0001", "ts": "2026-07-21T02:00:00Z",
                      "type": "control.ping", "entity": "ent_abc123", "payload": {}});
    assert!(feed(&mut rx, &mut m, &ping).is_empty());
    // An action message whose payload does not type (as the shape allows): a stray anomaly.
    let mut odd = Map::new();
    odd.insert("action_id".into(), json!(7));
    let v = follow(
        "msg_od0001",
        "2026-07-21T02:00:00Z",
        "action.cancel",
        Value::Object(odd),
    );
    if let Ok(env) = validate(&v) {
        let o = rx.receive_at_ts(&env);
        let ch = m.apply(PHONE, &env, &o, 0);
        assert!(ch.iter().all(|c| c.kind == ChangeKind::Anomaly));
    }
}

#[test]
fn policy_auto_on_a_phone_action_or_a_high_risk_tool_under_trusted_actions_is_an_anomaly() {
    // phone_action: the person confirms on the phone every time.
    let mut rx = Receiver::new(3);
    let mut m = ConfirmationMirror::with_bundled_catalogue();
    let params = alarm();
    feed(
        &mut rx,
        &mut m,
        &propose(
            "msg_pq0001",
            "act_pq0001",
            "phone_action",
            params.clone(),
            None,
        ),
    );
    let ch = feed(
        &mut rx,
        &mut m,
        &approve("msg_pq0002", "act_pq0001", &params, "policy_auto"),
    );
    assert_eq!(kinds(&ch)[0], ChangeKind::Anomaly, "{:?}", kinds(&ch));
    assert_eq!(
        anomaly_kinds(&m, "act_pq0001"),
        [AnomalyKind::PolicyAutoPhoneAction]
    );
    let words = &m.get(PHONE, "act_pq0001").unwrap().anomalies[0].text;
    assert!(words.contains("every time"), "{words}");

    // A high-risk tool approved by policy under trusted_actions; the same under
    // ask_before_action with the person's confirmation is fine.
    for (autonomy, mode, odd) in [
        (Autonomy::TrustedActions, "policy_auto", true),
        (Autonomy::TrustedActions, "user_confirmed", false),
    ] {
        let mut rx = Receiver::new(3);
        let mut m = ConfirmationMirror::with_bundled_catalogue();
        m.set_session_autonomy(PHONE, "ses_pa0001", autonomy, 0);
        let params = json!({"event_id": "ev_1"});
        let mut p = propose(
            "msg_hr0001",
            "act_hr0001",
            "calendar.delete",
            params.clone(),
            None,
        );
        p["payload"]["risk"] = json!("high");
        feed(&mut rx, &mut m, &p);
        feed(
            &mut rx,
            &mut m,
            &approve("msg_hr0002", "act_hr0001", &params, mode),
        );
        let found = anomaly_kinds(&m, "act_hr0001");
        assert_eq!(
            found.contains(&AnomalyKind::PolicyAutoHighRisk),
            odd,
            "{mode}: {found:?}"
        );
    }
    // policy_auto of a medium-risk tool under trusted_actions is what that level allows.
    let mut rx = Receiver::new(3);
    let mut m = ConfirmationMirror::with_bundled_catalogue();
    m.set_session_autonomy(PHONE, "ses_pa0001", Autonomy::TrustedActions, 0);
    let params = json!({"title": "Dentist", "start": "2026-07-22T09:00"});
    feed(
        &mut rx,
        &mut m,
        &propose(
            "msg_md0001",
            "act_md0001",
            "calendar.add",
            params.clone(),
            None,
        ),
    );
    feed(
        &mut rx,
        &mut m,
        &approve("msg_md0002", "act_md0001", &params, "policy_auto"),
    );
    assert!(anomaly_kinds(&m, "act_md0001").is_empty());
}

/// A proposal still `requested` after its `expires_at` lapses as expired with "no answer from
/// the phone" (once, never notified); an approved one keeps waiting; a phone's waiting
/// proposals end when it is unpaired; a phone_action one ends as "no answer in time".
#[test]
fn unanswered_proposals_lapse_at_expires_at_and_on_unpair_without_notifications() {
    let mut rx = Receiver::new(3);
    let mut m = ConfirmationMirror::with_bundled_catalogue();
    let params = json!({"to": "+1 555 0100", "body": "on my way 🚗"});
    feed(
        &mut rx,
        &mut m,
        &propose(
            "msg_lapse00001",
            "act_lapse00001",
            "messages.send",
            params.clone(),
            None,
        ),
    );
    feed(
        &mut rx,
        &mut m,
        &propose(
            "msg_lapse00002",
            "act_lapse00002",
            "messages.send",
            params.clone(),
            None,
        ),
    );
    feed(
        &mut rx,
        &mut m,
        &approve(
            "msg_lapse00003",
            "act_lapse00002",
            &params,
            "user_confirmed",
        ),
    );
    feed(
        &mut rx,
        &mut m,
        &propose(
            "msg_lapse00004",
            "act_lapse00004",
            "phone_action",
            alarm(),
            None,
        ),
    );
    let expires = ms("2026-07-21T02:05:00Z");
    assert_eq!(m.next_expiry_ms(), Some(expires));
    assert!(
        m.expire_due(expires).is_empty(),
        "at expires_at itself it can still be approved"
    );
    let changes = m.expire_due(expires + 1);
    assert_eq!(kinds(&changes), [ChangeKind::Lapsed, ChangeKind::Lapsed]);
    let ended = m.get(PHONE, "act_lapse00001").unwrap();
    assert_eq!(ended.state, ActionState::Expired);
    // What a person reads has no raw timestamp (a view shows the deadline in local time, as
    // its other times); the deadline stays in the proposal as a time.
    let text = ended.ended_text.as_deref().unwrap();
    assert_eq!(text, EXPIRED_WORDS);
    assert!(text.contains("deadline"), "{text}");
    assert!(!text.chars().any(|c| c.is_ascii_digit()), "{text}");
    assert_eq!(ended.expires_at_ms, expires);
    assert_eq!(ended.expires_at, "2026-07-21T02:05:00Z", "as sent");
    let card = m.get(PHONE, "act_lapse00004").unwrap();
    assert_eq!(
        card.phone_action
            .as_ref()
            .unwrap()
            .end
            .as_ref()
            .unwrap()
            .status,
        AnswerStatus::NoAnswer
    );
    let on = NotificationSettings::default();
    assert!(
        changes.iter().all(|c| notification_for(c, &on).is_none()),
        "no notification storm"
    );
    assert!(
        m.expire_due(expires + 60_000).is_empty(),
        "each lapses once"
    );
    assert_eq!(
        m.waiting_count(),
        1,
        "the approved one waits for its result"
    );
    assert!(m.end_for_phone("another phone", expires).is_empty());
    let changes = m.end_for_phone(PHONE, expires + 2);
    assert_eq!(kinds(&changes), [ChangeKind::Lapsed]);
    assert_eq!(m.waiting_count(), 0);
    let approved = m.get(PHONE, "act_lapse00002").unwrap();
    assert_eq!(
        approved.ended_text.as_deref(),
        Some("ended: the phone was unpaired before it answered")
    );
    assert_eq!(approved.ended_at_ms, Some(expires + 2));
}

/// A history written before kept an expiry's deadline in its words as a raw UTC timestamp; put
/// back, it reads as an expiry written now, and the deadline is still the proposal's time. Words
/// that only look alike (another timestamp) are left as they are.
#[test]
fn an_older_historys_expiry_words_lose_their_raw_timestamp() {
    let mut rx = Receiver::new(3);
    let mut m = ConfirmationMirror::with_bundled_catalogue();
    let params = json!({"to": "+1 555 0100", "body": "hi"});
    for aid in ["act_old000001", "act_old000002"] {
        feed(
            &mut rx,
            &mut m,
            &propose(
                &aid.replace("act_", "msg_"),
                aid,
                "messages.send",
                params.clone(),
                None,
            ),
        );
    }
    let expires = ms("2026-07-21T02:05:00Z");
    m.expire_due(expires + 1);
    let (mut ended, dropped) = m.ended_history();
    assert_eq!(ended.len(), 2);
    ended[0].ended_text = Some(format!(
        "expired: no answer from the phone by {}",
        ended[0].expires_at
    ));
    ended[1].ended_text =
        Some("expired: no answer from the phone by 2020-01-01T00:00:00Z".to_string());

    let mut again = ConfirmationMirror::with_bundled_catalogue();
    assert_eq!(again.restore_ended(ended, dropped), 2);
    let first = again.get(PHONE, "act_old000001").unwrap();
    assert_eq!(first.ended_text.as_deref(), Some(EXPIRED_WORDS));
    assert_eq!(first.expires_at_ms, expires);
    assert_eq!(
        again
            .get(PHONE, "act_old000002")
            .unwrap()
            .ended_text
            .as_deref(),
        Some("expired: no answer from the phone by 2020-01-01T00:00:00Z"),
        "not the proposal's own deadline: not rewritten"
    );
}

/// The autonomy a `policy_auto` approval is judged under is the proposal's session's, not the
/// phone's latest (`openphone-runtime-protocol.md`, "Autonomy"): trusted_actions reported for
/// another session does not make a high-risk policy approval odd-under-trusted in this one, and
/// the view says where the level came from.
#[test]
fn a_proposal_is_judged_under_its_own_sessions_autonomy() {
    use switchboard::confirmations::AutonomySource;
    let mut rx = Receiver::new(3);
    let mut m = ConfirmationMirror::with_bundled_catalogue();
    m.set_session_autonomy(PHONE, "ses_other0001", Autonomy::TrustedActions, 7);
    assert_eq!(m.autonomy_of(PHONE), (Autonomy::TrustedActions, true));
    let params = json!({"event_id": "ev_1"});
    let mut p = propose(
        "msg_os0001",
        "act_os0001",
        "calendar.delete",
        params.clone(),
        None,
    );
    p["payload"]["risk"] = json!("high");
    feed(&mut rx, &mut m, &p);
    let view = m.get(PHONE, "act_os0001").unwrap();
    assert_eq!(view.autonomy.autonomy, Autonomy::AskBeforeAction);
    assert_eq!(view.autonomy.source, AutonomySource::SessionNotReported);
    assert!(
        view.autonomy.words.contains("ses_pa0001"),
        "{}",
        view.autonomy.words
    );
    feed(
        &mut rx,
        &mut m,
        &approve("msg_os0002", "act_os0001", &params, "policy_auto"),
    );
    assert!(!anomaly_kinds(&m, "act_os0001").contains(&AnomalyKind::PolicyAutoHighRisk));

    // Its own session trusted: the level shows as the session's, and the approval is odd.
    let mut rx = Receiver::new(3);
    let mut m = ConfirmationMirror::with_bundled_catalogue();
    feed(&mut rx, &mut m, &p);
    let changed = m.set_session_autonomy(PHONE, "ses_pa0001", Autonomy::TrustedActions, 9);
    assert_eq!(
        changed.len(),
        1,
        "the waiting proposal follows its session's level"
    );
    let view = m.get(PHONE, "act_os0001").unwrap();
    assert_eq!(view.autonomy.source, AutonomySource::Session);
    assert_eq!(view.autonomy.reported_at_ms, Some(9));
    feed(
        &mut rx,
        &mut m,
        &approve("msg_os0002", "act_os0001", &params, "policy_auto"),
    );
    assert!(anomaly_kinds(&m, "act_os0001").contains(&AnomalyKind::PolicyAutoHighRisk));
    // A proposal without a session: the spec's fallback.
    assert_eq!(
        m.proposal_autonomy(PHONE, None).source,
        AutonomySource::NoSession
    );
}

/// The ended history kept across restarts (`confirmations::history`): written and read back
/// as it was, put back before this run's ends, and a proposal of the same phone and action after
/// a restart (its receiver forgot it) gets a key of its own, so the view never shows two
/// entries with one key.
#[test]
fn the_ended_history_comes_back_from_its_file_with_keys_of_its_own() {
    use switchboard::confirmations::history;
    let params = json!({"title": "Dentist", "start": "2026-07-22T09:00"});
    let mut rx = Receiver::new(3);
    let mut m = ConfirmationMirror::with_bundled_catalogue();
    let revision = m.kept_revision();
    feed(
        &mut rx,
        &mut m,
        &propose(
            "msg_hist0001",
            "act_hist0001",
            "calendar.add",
            params.clone(),
            None,
        ),
    );
    let proposed = m.kept_revision();
    assert_ne!(proposed, revision, "a waiting proposal is kept too");
    feed(
        &mut rx,
        &mut m,
        &follow(
            "msg_hist0002",
            "2026-07-21T02:00:05Z",
            "action.reject",
            json!({"action_id": "act_hist0001", "reason_class": "user_denied"}),
        ),
    );
    assert_ne!(m.kept_revision(), proposed, "an end moves the revision");
    let (ended, dropped) = m.ended_history();
    assert_eq!(ended.len(), 1);

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(history::HISTORY_FILE);
    assert_eq!(history::load(&file).unwrap(), None, "no file yet");
    let kept = history::Kept {
        ended: ended.clone(),
        ended_dropped: dropped,
        waiting: m.waiting_history(),
    };
    assert!(kept.waiting.is_empty());
    history::save(&file, kept.clone()).unwrap();
    let back_kept = history::load(&file).unwrap().unwrap();
    assert_eq!(back_kept, kept);
    let (back, back_dropped) = (back_kept.ended, back_kept.ended_dropped);

    // The next start: a new mirror and receiver.
    let mut rx = Receiver::new(3);
    let mut next = ConfirmationMirror::with_bundled_catalogue();
    assert_eq!(next.restore_ended(back, back_dropped), 1);
    assert_eq!(next.snapshot().ended, ended);
    feed(
        &mut rx,
        &mut next,
        &propose("msg_hist0003", "act_hist0001", "calendar.add", params, None),
    );
    let snap = next.snapshot();
    assert_eq!(snap.waiting.len(), 1);
    assert_ne!(snap.waiting[0].key, snap.ended[0].key, "{snap:?}");
    // Putting the same history back twice adds nothing.
    assert_eq!(next.restore_ended(ended.clone(), 0), 0);
    assert_eq!(next.ended_count(), 1);

    // A version 1 file (before waiting proposals were kept) reads as having none; a later
    // version is named, not guessed at.
    let v1 = serde_json::json!({"version": 1, "ended_dropped": dropped, "ended": &ended});
    std::fs::write(&file, v1.to_string()).unwrap();
    let old = history::load(&file).unwrap().unwrap();
    assert_eq!((old.ended.len(), old.waiting.len()), (1, 0));
    std::fs::write(&file, r#"{"version": 3, "ended": []}"#).unwrap();
    let e = history::load(&file).unwrap_err();
    assert!(
        matches!(e, history::HistoryError::Version { version: 3, .. }),
        "{e}"
    );
    let e = e.to_string();
    assert!(e.contains("version: 3 is not 1 or 2"), "{e}");

    std::fs::write(&file, r#"{"version": 1, "ended": [{"key": 3}]}"#).unwrap();
    let e = history::load(&file).unwrap_err().to_string();
    assert!(
        e.contains(history::HISTORY_FILE) && e.contains("ended[0]"),
        "names the file and the place: {e}"
    );
}

/// A history file that cannot be read is moved aside, not overwritten: its bytes stay in
/// `<file>.unreadable-<ms>` and this run's history starts a new file beside it.
#[test]
fn an_unreadable_history_file_is_moved_aside_and_kept() {
    use switchboard::app::confirmations::ConfirmationsState;
    use switchboard::confirmations::history;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(history::HISTORY_FILE);
    let damaged = br#"{"version": 1, "ended": [{"key": "cut off by a crash"#;
    std::fs::write(&file, damaged).unwrap();

    let state = ConfirmationsState::with_history(
        ConfirmationMirror::with_bundled_catalogue(),
        file.clone(),
        &switchboard::clock::SystemClock,
    );
    assert!(state.lock().snapshot().ended.is_empty());
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let aside: Vec<&String> = names
        .iter()
        .filter(|n| n.starts_with(&format!("{}.unreadable-", history::HISTORY_FILE)))
        .collect();
    assert_eq!(aside.len(), 1, "moved aside once: {names:?}");
    assert!(
        !file.exists(),
        "the damaged file is no longer in the history's place"
    );
    let aside = dir.path().join(aside[0]);
    assert_eq!(
        std::fs::read(&aside).unwrap(),
        damaged,
        "its bytes are kept"
    );

    // This run's first end writes a new history; the damaged one stays as it was.
    {
        let mut rx = Receiver::new(3);
        let mut m = state.lock();
        let params = json!({"title": "Dentist", "start": "2026-07-22T09:00"});
        feed(
            &mut rx,
            &mut m,
            &propose("msg_aside001", "act_aside001", "calendar.add", params, None),
        );
        feed(
            &mut rx,
            &mut m,
            &follow(
                "msg_aside002",
                "2026-07-21T02:00:05Z",
                "action.reject",
                json!({"action_id": "act_aside001", "reason_class": "user_denied"}),
            ),
        );
    }
    assert!(state.save_history().unwrap());
    let kept = history::load(&file).unwrap().unwrap();
    assert_eq!(kept.ended.len(), 1);
    assert_eq!(std::fs::read(&aside).unwrap(), damaged);
}

/// The restored history stays within [`MAX_ENDED`]: the oldest go first and are counted.
#[test]
fn a_restored_history_keeps_within_the_bound() {
    let mut m = ConfirmationMirror::with_bundled_catalogue();
    let mut rx = Receiver::new(3);
    let params = json!({"title": "Dentist", "start": "2026-07-22T09:00"});
    for i in 0..3 {
        feed(
            &mut rx,
            &mut m,
            &propose(
                &format!("msg_bound{i:04}"),
                &format!("act_bound{i:04}"),
                "calendar.add",
                params.clone(),
                None,
            ),
        );
        feed(
            &mut rx,
            &mut m,
            &follow(
                &format!("msg_bndrj{i:04}"),
                "2026-07-21T02:00:05Z",
                "action.reject",
                json!({"action_id": format!("act_bound{i:04}"), "reason_class": "user_denied"}),
            ),
        );
    }
    let (one, _) = m.ended_history();
    // Many copies with distinct keys, as many runs would leave.
    let many: Vec<_> = (0..MAX_ENDED + 5)
        .map(|i| {
            let mut c = one[i % one.len()].clone();
            c.key = format!("{}/{}#{i}", c.phone, c.action_id);
            c
        })
        .collect();
    let mut next = ConfirmationMirror::with_bundled_catalogue();
    next.restore_ended(many, 7);
    assert_eq!(next.ended_count(), MAX_ENDED);
    assert_eq!(next.snapshot().ended_dropped, 7 + 5);
}

/// Waiting proposals put back from an earlier run (`restore_waiting`): only those not ended and
/// not already here; a new proposal after them gets a key of its own.
#[test]
fn restored_waiting_proposals_are_put_back_once() {
    let params = json!({"title": "Dentist", "start": "2026-07-22T09:00"});
    let mut rx = Receiver::new(3);
    let mut m = ConfirmationMirror::with_bundled_catalogue();
    for (id, action) in [
        ("msg_rw000001", "act_rw000001"),
        ("msg_rw000002", "act_rw000002"),
    ] {
        feed(
            &mut rx,
            &mut m,
            &propose(id, action, "calendar.add", params.clone(), None),
        );
    }
    feed(
        &mut rx,
        &mut m,
        &follow(
            "msg_rw000003",
            "2026-07-21T02:00:05Z",
            "action.reject",
            json!({"action_id": "act_rw000002", "reason_class": "user_denied"}),
        ),
    );
    let waiting = m.waiting_history();
    assert_eq!(waiting.len(), 1);
    let (ended, _) = m.ended_history();

    let mut next = ConfirmationMirror::with_bundled_catalogue();
    let revision = next.kept_revision();
    // An ended proposal in the waiting list (a hand-edited file) is not put back as waiting.
    let mut both = waiting.clone();
    both.extend(ended);
    assert_eq!(next.restore_waiting(both), 1);
    assert_eq!(next.restore_waiting(waiting.clone()), 0, "already here");
    assert_eq!(next.waiting_history(), waiting);
    assert_eq!(next.kept_revision(), revision, "nothing new to write");
    let mut rx = Receiver::new(3);
    feed(
        &mut rx,
        &mut next,
        &propose("msg_rw000004", "act_rw000004", "calendar.add", params, None),
    );
    let keys: Vec<String> = next.waiting_history().into_iter().map(|c| c.key).collect();
    assert_eq!(keys.len(), 2);
    assert_ne!(keys[0], keys[1], "{keys:?}");
}
