//! Pairing and hello as an attacker on the same network sees them, on loopback:
//! the attempt budget of a pairing window across many connections, a lifetime nothing extends,
//! one answer for every refusal, no forged "identity changed". (The flood of failed
//! connections is `tests/pairing_flood.rs`: it counts log lines, so it has a binary to itself.)
//!
//! Every test binds 127.0.0.1:0, every loop is bounded, and time is the link's ManualClock.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::confirm;
use crate::desk;

use std::time::Duration;

use desk::{refusal, start, wrong_codes, LOOPBACK};
use serde_json::{json, Value};
use switchboard::link::pairing::{HELLO_REFUSED, MAX_WRONG_TRIES, PAIRING_REFUSED, PAIRING_TTL_MS};
use switchboard::link::phone_client::{envelope, PhoneError, PhoneIdentity};
use switchboard::link::{FailureKind, LinkEvent, LinkFailure};

#[tokio::test]
async fn a_brute_force_across_many_connections_gets_at_most_the_budget_of_verdicts() {
    let mut desk = start().await;
    let invite = desk.link.open_pairing(LOOPBACK);
    let me = PhoneIdentity::generate("guesser");
    let guesses = wrong_codes(&invite.code, 60);
    let mut answers = Vec::new();
    for (i, code) in guesses.iter().enumerate() {
        // An attacker as fast as the window allows: some guesses land inside the backoff,
        // the rest wait it out; 60 guesses in 90 s, all inside the 2-minute window.
        desk.clock.advance(if i % 3 == 0 { 4_000 } else { 250 });
        answers.push(desk.try_code(&me, code).await);
    }
    // Then the right code, inside the window's lifetime and past every backoff.
    desk.clock.advance(25_000);
    assert!(desk.clock_ms() < invite.expires_at_ms);
    answers.push(desk.try_code(&me, &invite.code).await);
    let events = desk.drain();

    // Every answer is the same refusal: nothing tells a checked guess from an unchecked one.
    for a in &answers {
        assert_eq!(
            (a.0.as_str(), a.1.as_str()),
            ("pairing_failed", PAIRING_REFUSED)
        );
    }
    // The guesses that got a verdict: wrong codes, and the last one that closed the window.
    let verdict = |f: &LinkFailure| {
        f.kind == FailureKind::WrongCode
            || (f.kind == FailureKind::RateLimited && f.words.contains("window is closed"))
    };
    let verdicts = events
        .iter()
        .filter(|e| matches!(e, LinkEvent::Failure(f) if verdict(f)))
        .count();
    assert_eq!(verdicts, MAX_WRONG_TRIES as usize, "{events:?}");
    let closed = events
        .iter()
        .filter(|e| matches!(e, LinkEvent::PairingClosed { .. }))
        .count();
    assert_eq!(closed, 1);
    assert!(!events.iter().any(|e| matches!(e, LinkEvent::Paired { .. })));
    assert_eq!(desk.link.pairing_invite(), None);
    assert_eq!(desk.trust_bytes(), None);
    desk.stop().await;
}

#[tokio::test]
async fn a_second_pair_request_on_one_connection_is_refused_unchecked_and_closes_it() {
    let mut desk = start().await;
    let invite = desk.link.open_pairing(LOOPBACK);
    let me = PhoneIdentity::generate("twice");
    let wrong = &wrong_codes(&invite.code, 1)[0];
    let mut phone = desk.phone().await;
    let request = |code: &str| {
        let mut r = envelope(
            "pair.request",
            None,
            json!({"pairing_code": code, "public_key": me.public_key_b64(), "capabilities": [], "label": "twice"}),
        );
        r["device"] = json!(me.device_id());
        r
    };
    phone.send_value(&request(wrong)).await.unwrap();
    assert_eq!(refusal(phone.expect("pair.grant").await).1, PAIRING_REFUSED);
    desk.clock.advance(2_000);
    // The right code, second on this connection: refused without being checked.
    phone.send_value(&request(&invite.code)).await.unwrap();
    let (class, detail) = refusal(phone.expect("pair.grant").await);
    assert_eq!(class, "pairing_failed");
    assert!(
        detail.contains("one pair.request per connection"),
        "{detail}"
    );
    phone.wait = Duration::from_secs(5);
    assert!(matches!(
        phone.recv().await,
        Err(PhoneError::Closed) | Err(PhoneError::WebSocket(_))
    ));
    // The window is still open with its code, one wrong code spent.
    assert_eq!(desk.link.pairing_invite().unwrap().code, invite.code);
    let _ = desk.drain();
    desk.clock.advance(2_000);
    assert_eq!(desk.try_code(&me, &invite.code).await.0, "granted");
    desk.stop().await;
}

#[tokio::test]
async fn the_window_expires_on_time_and_nothing_extends_it() {
    let desk = start().await;
    let opened = desk.clock_ms();
    let invite = desk.link.open_pairing(LOOPBACK);
    assert_eq!(invite.expires_at_ms, opened + PAIRING_TTL_MS);
    let me = PhoneIdentity::generate("patient");
    // Wrong codes, spread over the window: code and expiry stay as they were.
    for code in wrong_codes(&invite.code, MAX_WRONG_TRIES as usize - 1) {
        desk.clock.advance(20_000);
        assert_eq!(desk.try_code(&me, &code).await.1, PAIRING_REFUSED);
        let now = desk.link.pairing_invite().unwrap();
        assert_eq!(
            (now.code, now.expires_at_ms),
            (invite.code.clone(), invite.expires_at_ms)
        );
    }
    // One millisecond before the end the right code still works...
    desk.clock.set(invite.expires_at_ms - 1);
    assert_eq!(desk.try_code(&me, &invite.code).await.0, "granted");

    // ...and a window left alone is gone at its end: the right code fails.
    let other = PhoneIdentity::generate("late");
    let second = desk.link.open_pairing(LOOPBACK);
    desk.clock.set(second.expires_at_ms);
    assert_eq!(desk.link.pairing_invite(), None);
    let (class, detail) = desk.try_code(&other, &second.code).await;
    assert_eq!(
        (class.as_str(), detail.as_str()),
        ("pairing_failed", PAIRING_REFUSED)
    );
    // The code that passed made a pending pairing only; its connection closed unconfirmed.
    assert!(desk.link.paired_phones().is_empty());
    desk.stop().await;
}

#[tokio::test]
async fn a_correct_code_after_the_window_expired_fails_and_says_so_only_on_the_desktop() {
    let mut desk = start().await;
    let invite = desk.link.open_pairing(LOOPBACK);
    desk.clock.advance(PAIRING_TTL_MS);
    let me = PhoneIdentity::generate("late");
    // A phone that does not let go: the first try after expiry closes the window, so even
    // a try that also waits out the backoff finds nothing.
    assert_eq!(desk.try_code(&me, &invite.code).await.1, PAIRING_REFUSED);
    let f = desk.failures();
    assert!(
        f.iter().any(|f| f.kind == FailureKind::ExpiredCode),
        "{f:?}"
    );
    desk.clock.advance(60_000);
    assert_eq!(desk.try_code(&me, &invite.code).await.1, PAIRING_REFUSED);
    assert_eq!(desk.trust_bytes(), None);
    desk.stop().await;
}

#[tokio::test]
async fn no_window_wrong_code_expired_closed_and_backoff_get_one_and_the_same_answer() {
    let mut desk = start().await;
    let me = PhoneIdentity::generate("poller");
    let mut answers = Vec::new();
    // No window open.
    answers.push(("no window", desk.try_code(&me, "123-456").await));
    desk.clock.advance(5_000);
    // A wrong code.
    let invite = desk.link.open_pairing(LOOPBACK);
    let wrongs = wrong_codes(&invite.code, MAX_WRONG_TRIES as usize);
    answers.push(("wrong", desk.try_code(&me, &wrongs[0]).await));
    // Inside the backoff (the right code, unchecked).
    answers.push(("backoff", desk.try_code(&me, &invite.code).await));
    // The last allowed wrong code, then the window is closed.
    for code in &wrongs[1..] {
        desk.clock.advance(20_000);
        answers.push(("wrong or closing", desk.try_code(&me, code).await));
    }
    desk.clock.advance(20_000);
    answers.push(("closed", desk.try_code(&me, &invite.code).await));
    // Expired.
    let late = desk.link.open_pairing(LOOPBACK);
    desk.clock.advance(PAIRING_TTL_MS);
    answers.push(("expired", desk.try_code(&me, &late.code).await));
    let kinds: Vec<FailureKind> = desk.failures().iter().map(|f| f.kind).collect();
    for (what, a) in &answers {
        assert_eq!(
            (a.0.as_str(), a.1.as_str()),
            ("pairing_failed", PAIRING_REFUSED),
            "{what}"
        );
    }
    // The desktop itself knows what happened.
    for k in [
        FailureKind::WrongCode,
        FailureKind::RateLimited,
        FailureKind::ExpiredCode,
        FailureKind::NoPairingWindow,
    ] {
        assert!(kinds.contains(&k), "{k:?} not in {kinds:?}");
    }
    desk.stop().await;
}

#[tokio::test]
async fn a_forged_identity_change_is_not_recorded_and_every_hello_refusal_reads_the_same() {
    let mut desk = start().await;
    let me = desk.pair_phone("original").await;
    let _ = desk.drain();
    let impostor = PhoneIdentity::with_device_id(me.device_id(), "original");
    let third = PhoneIdentity::with_device_id(me.device_id(), "original");

    // The paired device id, the impostor's key, a proof that verifies under no key presented.
    let mut phone = desk.phone().await;
    let mut forged = phone.hello_frame(&impostor, (1, 1));
    forged["payload"]["proof"] = phone.hello_frame(&third, (1, 1))["payload"]["proof"].clone();
    phone.send_value(&forged).await.unwrap();
    let (class, forged_detail) = refusal(phone.expect("control.hello").await);
    assert_eq!(class, "unauthorized_device");
    let after_forgery = desk.failures();
    assert!(
        !after_forgery
            .iter()
            .any(|f| f.kind == FailureKind::IdentityChanged),
        "{after_forgery:?}"
    );
    assert!(!desk
        .link
        .diagnostics()
        .recent_failures
        .iter()
        .any(|f| f.kind == FailureKind::IdentityChanged));

    // An unknown device id.
    let mut phone = desk.phone().await;
    let (_, unknown_detail) = refusal(
        phone
            .hello(&PhoneIdentity::generate("stranger"), (1, 1))
            .await
            .map(|_| Value::Null),
    );
    // The paired id and key, a proof for another connection (replayed).
    let first = desk.phone().await;
    let captured = first.hello_frame(&me, (1, 1));
    let mut phone = desk.phone().await;
    phone.send_value(&captured).await.unwrap();
    let (_, replay_detail) = refusal(phone.expect("control.hello").await);
    first.close().await;
    // A real identity change: the proof verifies under the key presented. Recorded, and the
    // peer still gets the same answer.
    let mut phone = desk.phone().await;
    let (_, changed_detail) = refusal(phone.hello(&impostor, (1, 1)).await.map(|_| Value::Null));
    for d in [
        &forged_detail,
        &unknown_detail,
        &replay_detail,
        &changed_detail,
    ] {
        assert_eq!(d, HELLO_REFUSED);
    }
    let later = desk.failures();
    assert!(
        later.iter().any(|f| f.kind == FailureKind::IdentityChanged),
        "{later:?}"
    );
    assert_eq!(desk.link.paired_phones()[0].public_key, me.public_key_b64());
    desk.stop().await;
}

/// A phone without a TLS exporter pairs and says hello in the pinned binding: the desktop keeps
/// the binding in its pairing record, its first hello carries the certificate whose SHA-256 is
/// the pinned fingerprint, and its proofs verify in that binding on every later connection.
#[tokio::test]
async fn a_phone_in_the_pinned_binding_pairs_and_says_hello_on_later_connections() {
    use switchboard::link::HelloBinding;
    let desk = start().await;
    let invite = desk.link.open_pairing(LOOPBACK);
    let me = PhoneIdentity::generate("tap");
    let mut phone = desk.phone().await;
    phone.binding = HelloBinding::Pinned;
    let der = phone
        .desktop_cert_der()
        .expect("the first hello carries the certificate");
    assert_eq!(
        switchboard::link::identity::cert_fingerprint(der),
        desk.fp,
        "x-ifp-cert is the pinned certificate"
    );
    confirm::pair_confirmed(&desk.link, &mut phone, &me, &invite.code, vec![], (1, 1))
        .await
        .unwrap();
    phone.close().await;
    let record = desk.link.paired_phones().remove(0);
    assert_eq!(record.binding, HelloBinding::Pinned);
    let on_disk: Value = serde_json::from_slice(&desk.trust_bytes().unwrap()).unwrap();
    assert_eq!(on_disk["phones"][0]["binding"], "pinned");
    for _ in 0..2 {
        let mut phone = desk.phone().await;
        phone.binding = HelloBinding::Pinned;
        phone
            .set_desktop_public_key(&desk.link.identity().public_key_b64())
            .unwrap();
        assert_eq!(phone.hello(&me, (1, 1)).await.unwrap(), 1);
        phone.close().await;
    }
    desk.stop().await;
}

/// A phone paired with the TLS exporter can never be talked down to the pinned binding, and a
/// pinned one cannot switch either: the one hello refusal, recorded as `binding_changed`, even
/// with a proof that verifies in the binding presented.
#[tokio::test]
async fn a_hello_in_another_binding_than_the_pairing_is_refused_as_binding_changed() {
    use switchboard::link::HelloBinding;
    let mut desk = start().await;
    let exporter_phone = desk.pair_phone("exporter").await;
    let _ = desk.drain();
    let mut phone = desk.phone().await;
    phone.binding = HelloBinding::Pinned;
    let (class, detail) = refusal(
        phone
            .hello(&exporter_phone, (1, 1))
            .await
            .map(|_| Value::Null),
    );
    assert_eq!(
        (class.as_str(), detail.as_str()),
        ("unauthorized_device", HELLO_REFUSED)
    );
    let kinds: Vec<FailureKind> = desk.failures().iter().map(|f| f.kind).collect();
    assert!(kinds.contains(&FailureKind::BindingChanged), "{kinds:?}");

    let invite = desk.link.open_pairing(LOOPBACK);
    let pinned_phone = PhoneIdentity::generate("pinned");
    let mut phone = desk.phone().await;
    phone.binding = HelloBinding::Pinned;
    confirm::pair_confirmed(
        &desk.link,
        &mut phone,
        &pinned_phone,
        &invite.code,
        vec![],
        (1, 1),
    )
    .await
    .unwrap();
    phone.close().await;
    let _ = desk.drain();
    // Failures before hello reach the app once per source a minute (a flood cannot hide a
    // real one): the next minute's report names this one.
    desk.clock.advance(61_000);
    let mut phone = desk.phone().await;
    let (class, detail) = refusal(
        phone
            .hello(&pinned_phone, (1, 1))
            .await
            .map(|_| Value::Null),
    );
    assert_eq!(
        (class.as_str(), detail.as_str()),
        ("unauthorized_device", HELLO_REFUSED)
    );
    let failures = desk.failures();
    let changed = failures
        .iter()
        .find(|f| f.kind == FailureKind::BindingChanged)
        .unwrap_or_else(|| panic!("{failures:?}"));
    assert!(
        changed
            .words
            .contains("paired with the pinned binding but said hello with the exporter binding"),
        "{}",
        changed.words
    );
    desk.stop().await;
}

/// A binding name the desktop does not know is refused by name, on `pair.request` (the window
/// loses no try) and on `control.hello`.
#[tokio::test]
async fn an_unknown_binding_name_is_refused_naming_the_field() {
    let desk = start().await;
    let invite = desk.link.open_pairing(LOOPBACK);
    let me = PhoneIdentity::generate("odd");
    let mut phone = desk.phone().await;
    let mut req = envelope(
        "pair.request",
        None,
        json!({"pairing_code": invite.code, "public_key": me.public_key_b64(), "capabilities": []}),
    );
    req["ext"] = json!({"x-ifp-binding": "none"});
    phone.send_value(&req).await.unwrap();
    let (class, detail) = refusal(phone.expect("pair.grant").await);
    assert_eq!(class, "invalid_envelope");
    assert_eq!(
        detail,
        r#"ext.x-ifp-binding: expected "exporter" or "pinned", got "none""#
    );
    phone.close().await;
    let mut phone = desk.phone().await;
    let mut hello = phone.hello_frame(&me, (1, 1));
    hello["ext"]["x-ifp-binding"] = json!(7);
    phone.send_value(&hello).await.unwrap();
    let (class, detail) = refusal(phone.expect("control.hello").await);
    assert_eq!(class, "invalid_envelope");
    assert_eq!(
        detail,
        r#"ext.x-ifp-binding: expected "exporter" or "pinned", got 7"#
    );
    // The window lost no try: the right code still pairs.
    let mut phone = desk.phone().await;
    confirm::pair_confirmed(&desk.link, &mut phone, &me, &invite.code, vec![], (1, 1))
        .await
        .unwrap();
    desk.stop().await;
}
