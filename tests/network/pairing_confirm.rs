//! Pending pairing and the verification code, on loopback: a code that passes the
//! window only makes a *pending* pairing; nothing is in the trust file until the person on the
//! desktop and the phone both confirm that the verification codes match. "They differ", a
//! timeout or a phone that leaves write nothing. A host in the middle that relays a code-only
//! pairing (it answered mDNS first) gets a pending pairing on the desktop whose code differs
//! from the one the phone shows, and cannot steer the phone's code without being caught by the
//! commitment. A hello proof is bound to its TLS session.
//!
//! Every test binds 127.0.0.1:0 and every wait and loop is bounded.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::confirm;
use crate::desk;

use std::time::Duration;

use desk::{start, Desk, LOOPBACK, WAIT};
use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{json, Value};
use switchboard::link::pairing::{
    commitment_b64, desktop_intro_signed_bytes, random_nonce, verification_code, EXPORTER_LEN,
    HELLO_EXPORTER_LABEL, HELLO_REFUSED,
};
use switchboard::link::phone_client::{envelope, PhoneClient, PhoneError, PhoneIdentity};
use switchboard::link::{
    DesktopIdentity, FailureKind, LinkEvent, MemoryStore, PairingEnd, PendingPairing,
};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;

/// The next event matching `f`, waiting at most [`WAIT`].
async fn next_event<T>(desk: &mut Desk, mut f: impl FnMut(&LinkEvent) -> Option<T>) -> T {
    let end = tokio::time::Instant::now() + WAIT;
    loop {
        let e = tokio::time::timeout_at(end, desk.events.recv())
            .await
            .expect("the awaited link event did not come in time")
            .expect("the link's events ended");
        if let Some(t) = f(&e) {
            return t;
        }
    }
}

async fn pending_update(desk: &mut Desk) -> PendingPairing {
    next_event(desk, |e| match e {
        LinkEvent::PairingPending(p) => Some(p.clone()),
        _ => None,
    })
    .await
}

async fn ended(desk: &mut Desk) -> PairingEnd {
    next_event(desk, |e| match e {
        LinkEvent::PairingEnded { end, .. } => Some(*end),
        _ => None,
    })
    .await
}

fn refused(r: Result<impl std::fmt::Debug, PhoneError>) -> (String, String) {
    match r {
        Err(PhoneError::Refused { class, detail }) => (class, detail),
        other => panic!("expected an ifp error, got {other:?}"),
    }
}

#[tokio::test]
async fn nothing_is_trusted_while_pending_and_both_confirmations_write_it() {
    let mut desk = start().await;
    for phone_first in [true, false] {
        let invite = desk.link.open_pairing(LOOPBACK);
        let me = PhoneIdentity::generate(if phone_first { "A" } else { "B" });
        let mut phone = desk.phone().await;
        let shown = phone.pair_start(&me, &invite.code, vec![]).await.unwrap();
        let pending = pending_update(&mut desk).await;
        assert_eq!(pending, desk.link.pending_pairing().unwrap());
        assert_eq!(pending.device_id, me.device_id());
        assert_eq!(pending.verification_code, shown.verification_code);
        let code = &pending.verification_code;
        assert!(
            code.len() == 7 && code.as_bytes()[3] == b' ',
            "six digits with a space: {code}"
        );
        assert!(!pending.phone_confirmed && !pending.desktop_confirmed);
        // While it waits, the window's code checks nothing and the window is not shown.
        assert_eq!(desk.link.pairing_invite(), None);
        let trusted = |d: &Desk| {
            d.trust_bytes()
                .map(|b| String::from_utf8(b).unwrap().contains(&me.public_key_b64()))
                .unwrap_or(false)
        };
        assert!(!trusted(&desk), "nothing is written while pending");

        let paired = if phone_first {
            let confirm = envelope(
                "pair.confirm",
                Some(&me.entity_id()),
                json!({"codes_match": true}),
            );
            phone.send_value(&confirm).await.unwrap();
            let p = pending_update(&mut desk).await;
            assert!(p.phone_confirmed && !p.desktop_confirmed);
            assert!(!trusted(&desk), "the phone alone does not pair");
            desk.link.confirm_pairing(&p.id, true).unwrap();
            phone.expect("pair.done").await.unwrap();
            phone.hello(&me, (1, 1)).await.unwrap()
        } else {
            desk.link.confirm_pairing(&pending.id, true).unwrap();
            let p = pending_update(&mut desk).await;
            assert!(p.desktop_confirmed && !p.phone_confirmed);
            assert!(!trusted(&desk), "the person alone does not pair");
            phone
                .pair_confirm(&me, &shown, true, (1, 1))
                .await
                .unwrap()
                .version
        };
        assert_eq!(paired, 1);
        let (dev, vcode) = next_event(&mut desk, |e| match e {
            LinkEvent::Paired {
                device_id,
                verification_code,
                ..
            } => Some((device_id.clone(), verification_code.clone())),
            _ => None,
        })
        .await;
        assert_eq!((dev.as_str(), &vcode), (me.device_id(), code));
        assert!(trusted(&desk));
        assert!(desk.link.pending_pairing().is_none());
        assert_eq!(desk.link.pairing_invite(), None, "the window is used up");
        assert!(desk.link.confirm_pairing(&pending.id, true).is_err());
        phone.close().await;
    }
    assert_eq!(desk.link.paired_phones().len(), 2);
    desk.stop().await;
}

#[tokio::test]
async fn they_differ_on_the_desktop_writes_nothing_and_closes_the_window() {
    let mut desk = start().await;
    let invite = desk.link.open_pairing(LOOPBACK);
    let me = PhoneIdentity::generate("differs");
    let mut phone = desk.phone().await;
    let shown = phone.pair_start(&me, &invite.code, vec![]).await.unwrap();
    let pending = pending_update(&mut desk).await;
    desk.link.confirm_pairing(&pending.id, false).unwrap();
    assert_eq!(ended(&mut desk).await, PairingEnd::CodesDifferDesktop);
    let (class, detail) = refused(phone.pair_confirm(&me, &shown, true, (1, 1)).await);
    assert_eq!(class, "pairing_failed");
    assert!(detail.contains("codes differ"), "{detail}");
    assert_eq!(desk.trust_bytes(), None);
    assert!(desk.link.pending_pairing().is_none());
    assert_eq!(desk.link.pairing_invite(), None, "the person starts again");
    let words = desk
        .link
        .diagnostics()
        .recent_failures
        .into_iter()
        .find(|f| f.kind == FailureKind::PairingNotConfirmed)
        .unwrap()
        .words;
    assert!(words.contains("nothing was saved"), "{words}");
    desk.stop().await;
}

#[tokio::test]
async fn the_phone_saying_they_differ_or_leaving_writes_nothing_and_costs_one_try() {
    let mut desk = start().await;
    let invite = desk.link.open_pairing(LOOPBACK);
    let me = PhoneIdentity::generate("phone says no");
    let mut phone = desk.phone().await;
    let shown = phone.pair_start(&me, &invite.code, vec![]).await.unwrap();
    pending_update(&mut desk).await;
    let r = phone.pair_confirm(&me, &shown, false, (1, 1)).await;
    assert!(matches!(r, Err(PhoneError::NotConfirmed(_))), "{r:?}");
    assert_eq!(ended(&mut desk).await, PairingEnd::CodesDifferPhone);
    assert_eq!(desk.trust_bytes(), None);
    // The window is open again for the person's phone, with the same code and expiry.
    let again = desk.link.pairing_invite().unwrap();
    assert_eq!(
        (again.code.as_str(), again.expires_at_ms),
        (invite.code.as_str(), invite.expires_at_ms)
    );

    // A phone that goes away while pending: the same.
    desk.clock.advance(2_000);
    let mut phone = desk.phone().await;
    phone.pair_start(&me, &invite.code, vec![]).await.unwrap();
    pending_update(&mut desk).await;
    phone.close().await;
    assert_eq!(ended(&mut desk).await, PairingEnd::PhoneLeft);
    assert_eq!(desk.trust_bytes(), None);
    assert!(desk.link.pending_pairing().is_none());
    assert!(desk.link.pairing_invite().is_some());
    desk.stop().await;
}

#[tokio::test]
async fn an_unconfirmed_pairing_expires_and_writes_nothing() {
    let mut desk = desk::start_with(|c| c.pending_ttl = Duration::from_millis(300)).await;
    let invite = desk.link.open_pairing(LOOPBACK);
    let me = PhoneIdentity::generate("slow person");
    let mut phone = desk.phone().await;
    let shown = phone.pair_start(&me, &invite.code, vec![]).await.unwrap();
    let pending = pending_update(&mut desk).await;
    // The phone confirms; nobody does on the desktop.
    let (class, detail) = refused(phone.pair_confirm(&me, &shown, true, (1, 1)).await);
    assert_eq!(class, "pairing_failed");
    assert!(detail.contains("not confirmed"), "{detail}");
    assert_eq!(ended(&mut desk).await, PairingEnd::Expired);
    assert!(desk.link.confirm_pairing(&pending.id, true).is_err());
    assert_eq!(desk.trust_bytes(), None);
    desk.stop().await;
}

#[tokio::test]
async fn a_stranger_who_knows_a_paired_device_id_cannot_close_the_window() {
    let mut desk = start().await;
    let known = desk.pair_phone("known").await;
    let before = desk.trust_bytes().unwrap();
    let invite = desk.link.open_pairing(LOOPBACK);
    let stranger = PhoneIdentity::with_device_id(known.device_id(), "known");
    // Even with the right code, the other key is refused ("identity changed") and it costs the
    // window one try, not the window.
    let mut phone = desk.phone().await;
    let (class, detail) = refused(phone.pair_start(&stranger, &invite.code, vec![]).await);
    assert_eq!(class, "pairing_failed");
    assert!(detail.contains("identity changed"), "{detail}");
    assert!(desk.link.pending_pairing().is_none());
    let still = desk.link.pairing_invite().expect("the window stays open");
    assert_eq!(still.code, invite.code);
    assert_eq!(desk.trust_bytes().unwrap(), before);
    // The person's new phone pairs with that same window.
    desk.clock.advance(2_000);
    let fresh = PhoneIdentity::generate("new phone");
    let mut phone = desk.phone().await;
    confirm::pair_confirmed(&desk.link, &mut phone, &fresh, &invite.code, vec![], (1, 1))
        .await
        .unwrap();
    assert_eq!(desk.link.paired_phones().len(), 2);
    desk.stop().await;
}

type ServerWs =
    tokio_tungstenite::WebSocketStream<tokio_rustls::server::TlsStream<tokio::net::TcpStream>>;

async fn read_json(ws: &mut ServerWs) -> Value {
    for _ in 0..100 {
        let m = tokio::time::timeout(WAIT, ws.next())
            .await
            .expect("the phone said nothing in time")
            .expect("the phone left")
            .unwrap();
        if let Message::Text(t) = m {
            return serde_json::from_str(t.as_str()).unwrap();
        }
    }
    panic!("no text frame from the phone");
}

async fn send_json(ws: &mut ServerWs, v: Value) {
    ws.send(Message::text(v.to_string())).await.unwrap();
}

/// A host in the middle: it answered mDNS first, so a phone that took
/// the fingerprint from mDNS pins the middle's certificate and sends it the code the person
/// typed. The middle pairs itself with the real desktop using that code (as a phone, with its
/// own key) and plays the desktop towards the phone, forwarding the phone's confirmation.
/// With `steer`, it reveals another nonce to the phone than it committed to (the only way to
/// pick the phone's code once it has seen the phone's nonce).
///
/// Returns (the code the phone shows or its error, the middle's own identity).
async fn relayed_pairing(
    desk: &Desk,
    code: &str,
    steer: bool,
) -> (Result<String, PhoneError>, PhoneIdentity) {
    let middle = DesktopIdentity::load_or_create(&MemoryStore::new()).unwrap();
    let m_fp = middle.cert_fingerprint().to_string();
    let acceptor =
        tokio_rustls::TlsAcceptor::from(switchboard::link::tls::server_config(&middle).unwrap());
    let listener = TcpListener::bind((LOOPBACK, 0)).await.unwrap();
    let m_addr = listener.local_addr().unwrap();
    let victim = PhoneIdentity::generate("Victim phone");
    let typed = code.to_string();
    let victim_task = tokio::spawn({
        let m_fp = m_fp.clone();
        async move {
            let mut phone = PhoneClient::connect(m_addr, &m_fp).await?;
            let pending = phone.pair_start(&victim, &typed, vec![]).await?;
            // The phone's person glances at its code and says it matches.
            let confirm = envelope(
                "pair.confirm",
                Some(&victim.entity_id()),
                json!({"codes_match": true}),
            );
            phone.send_value(&confirm).await?;
            Ok::<_, PhoneError>(pending.verification_code)
        }
    });
    let (tcp, _) = tokio::time::timeout(WAIT, listener.accept())
        .await
        .unwrap()
        .unwrap();
    let tls = acceptor.accept(tcp).await.unwrap();
    let exporter = {
        use base64::Engine as _;
        let b = tls
            .get_ref()
            .1
            .export_keying_material([0u8; EXPORTER_LEN], HELLO_EXPORTER_LABEL, None)
            .unwrap();
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
    };
    let mut ws = tokio_tungstenite::accept_async(tls).await.unwrap();
    // Towards the phone: the middle's own desktop hello.
    let nonce = random_nonce();
    let mut hello = envelope(
        "control.hello",
        Some(&middle.entity_id()),
        json!({"device_id": middle.device_id(),
               "proof": middle.sign_b64(&desktop_intro_signed_bytes(&nonce, &m_fp, &exporter)),
               "capabilities": [], "protocol": {"min": 1, "max": 1}}),
    );
    hello["ext"] = json!({"x-ifp-nonce": nonce});
    send_json(&mut ws, hello).await;
    let request = read_json(&mut ws).await;
    assert_eq!(request["type"], "pair.request");
    let victim_key = request["payload"]["public_key"]
        .as_str()
        .unwrap()
        .to_string();
    let relayed_code = request["payload"]["pairing_code"]
        .as_str()
        .unwrap()
        .to_string();

    // Towards the real desktop: the relayed code, under the middle's own key. The middle
    // sends its nonce before the desktop reveals its own, so it cannot pick the desktop's code.
    let me = PhoneIdentity::generate("Victim phone");
    let mut to_desk = desk.phone().await;
    let desk_side = to_desk
        .pair_start(&me, &relayed_code, vec![])
        .await
        .unwrap();

    // Towards the phone: a commitment to a nonce fixed now, before the phone's nonce comes.
    let committed = random_nonce();
    let grant = envelope(
        "pair.grant",
        Some(&middle.entity_id()),
        json!({"device_id": request["device"], "public_key": middle.public_key_b64(),
               "challenge": random_nonce(),
               "commitment": commitment_b64(&committed, &m_fp, &victim_key).unwrap(),
               "capabilities": [], "label": "Switchboard"}),
    );
    send_json(&mut ws, grant).await;
    let complete = read_json(&mut ws).await;
    assert_eq!(complete["type"], "pair.complete");
    let phone_nonce = complete["payload"]["nonce"].as_str().unwrap().to_string();
    let revealed = if steer {
        // Look for a nonce that gives the phone the desktop's code (bounded: a few thousand
        // tries find one only with luck; any other nonce than the committed one will do to
        // show the phone catches it).
        let mut pick = random_nonce();
        for _ in 0..2_000 {
            let n = random_nonce();
            if verification_code(&n, &phone_nonce, &m_fp, &victim_key).unwrap()
                == desk_side.verification_code
            {
                pick = n;
                break;
            }
        }
        pick
    } else {
        committed
    };
    let reveal = envelope(
        "pair.reveal",
        Some(&middle.entity_id()),
        json!({"nonce": revealed}),
    );
    send_json(&mut ws, reveal).await;
    let shown = tokio::time::timeout(WAIT, victim_task)
        .await
        .unwrap()
        .unwrap();
    if shown.is_ok() {
        let confirm = read_json(&mut ws).await;
        assert_eq!(confirm["type"], "pair.confirm");
        // Forwarded: the desktop now has the "phone's" confirmation.
        let fwd = envelope(
            "pair.confirm",
            Some(&me.entity_id()),
            json!({"codes_match": confirm["payload"]["codes_match"]}),
        );
        to_desk.send_value(&fwd).await.unwrap();
    }
    // Keep the middle's desktop connection open while the test looks at the desktop.
    tokio::spawn(async move {
        let _ = to_desk.idle(Duration::from_secs(5)).await;
    });
    (shown, me)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relayed_code_only_pairing_is_not_trusted_without_the_person_and_the_codes_differ() {
    let mut desk = start().await;
    let invite = desk.link.open_pairing(LOOPBACK);
    let (shown, middle) = relayed_pairing(&desk, &invite.code, false).await;
    let on_phone = shown.expect("an honest-looking relay: the phone shows a code");
    // The desktop has a pending pairing of the middle's key, confirmed by "the phone" (the
    // middle forwarded it) but not by the person, and nothing in the trust file.
    let mut p = pending_update(&mut desk).await;
    while !p.phone_confirmed {
        p = pending_update(&mut desk).await;
    }
    assert_eq!(p.device_id, middle.device_id());
    assert!(!p.desktop_confirmed);
    assert_eq!(desk.trust_bytes(), None);
    // The two screens the person compares disagree (they agree by chance once in a million:
    // the middle had to fix its nonce on each side before seeing the other side's).
    assert_ne!(
        p.verification_code, on_phone,
        "the desktop and the relayed phone show different codes"
    );
    // The person sees the codes differ: nothing is written, the window closes.
    desk.link.confirm_pairing(&p.id, false).unwrap();
    assert_eq!(ended(&mut desk).await, PairingEnd::CodesDifferDesktop);
    assert_eq!(desk.trust_bytes(), None);
    assert!(desk.link.paired_phones().is_empty());
    assert_eq!(desk.link.pairing_invite(), None);
    desk.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_that_steers_the_phones_code_is_caught_by_the_commitment() {
    let mut desk = desk::start_with(|c| c.pending_ttl = Duration::from_millis(800)).await;
    let invite = desk.link.open_pairing(LOOPBACK);
    let (shown, _middle) = relayed_pairing(&desk, &invite.code, true).await;
    match shown {
        Err(PhoneError::NotConfirmed(why)) => assert!(why.contains("commitment"), "{why}"),
        other => panic!("the phone should refuse a reveal that breaks the commitment: {other:?}"),
    }
    // Nobody confirms on the desktop: the pending pairing expires, nothing is written.
    assert_eq!(ended(&mut desk).await, PairingEnd::Expired);
    assert_eq!(desk.trust_bytes(), None);
    desk.stop().await;
}

#[tokio::test]
async fn a_hello_proof_made_for_one_tls_session_is_refused_on_another() {
    let mut desk = start().await;
    let me = desk.pair_phone("bound").await;
    // Session 1 is the desktop's connection; session 2 stands in for the phone's TLS session
    // with a host in the middle that forwarded session 1's nonce to the phone (a phone that
    // forgot to pin would sign it).
    let mut one = desk.phone().await;
    let two = desk.phone().await;
    assert_ne!(one.exporter(), two.exporter());
    assert_eq!(one.exporter().len(), 43);
    let relayed = two.hello_frame_for(&me, (1, 1), one.nonce(), two.exporter());
    one.send_value(&relayed).await.unwrap();
    let (class, detail) = refused(one.expect("control.hello").await);
    assert_eq!(
        (class.as_str(), detail.as_str()),
        ("unauthorized_device", HELLO_REFUSED)
    );
    let words = next_event(&mut desk, |e| match e {
        LinkEvent::Failure(f) if f.kind == FailureKind::BadProof => Some(f.words.clone()),
        _ => None,
    })
    .await;
    assert!(words.contains("TLS session"), "{words}");
    assert!(desk.link.connected().is_empty());
    two.close().await;
    // The same proof signed with the session's own exporter is accepted (so the refusal above
    // is the exporter's doing).
    let mut three = desk.phone().await;
    let own = three.hello_frame_for(&me, (1, 1), three.nonce(), three.exporter());
    three.send_value(&own).await.unwrap();
    three.expect("control.hello").await.unwrap();
    three.close().await;
    desk.stop().await;
}

#[tokio::test]
async fn an_unauthenticated_device_id_is_escaped_and_cut_in_the_failure_words() {
    let mut desk = start().await;
    let mut phone = desk.phone().await;
    // Control characters that would forge a log line or colour a terminal, and a long tail.
    let forged = format!(
        "dev_x\n2026-12-01 INFO paired \u{1b}[31m{}",
        "A".repeat(500)
    );
    let mut hello = envelope(
        "control.hello",
        None,
        json!({"device_id": forged, "proof": "AAAA", "capabilities": [],
               "protocol": {"min": 1, "max": 1}}),
    );
    hello["ext"] = json!({"x-ifp-public-key": PhoneIdentity::generate("x").public_key_b64()});
    phone.send_value(&hello).await.unwrap();
    let (class, detail) = refused(phone.expect("control.hello").await);
    assert_eq!(class, "invalid_envelope");
    let f = next_event(&mut desk, |e| match e {
        LinkEvent::Failure(f) if f.kind == FailureKind::InvalidFrame => Some(f.clone()),
        _ => None,
    })
    .await;
    for text in [&f.words, &detail] {
        assert!(!text.contains('\n') && !text.contains('\u{1b}'), "{text}");
        assert!(
            text.contains("payload.device_id"),
            "names the field: {text}"
        );
        assert!(!text.contains(&"A".repeat(50)), "the id is cut: {text}");
    }
    assert!(
        f.device_id.is_none(),
        "an id that failed its pattern is not kept"
    );
    // An id that passes the pattern but is not paired is named as it is, within its cap.
    let long = format!("dev_{}", "B".repeat(64));
    let me = PhoneIdentity::with_device_id(&long, "long");
    let mut phone = desk.phone().await;
    let (class, _) = refused(phone.hello(&me, (1, 1)).await);
    assert_eq!(class, "unauthorized_device");
    // Coalesced with the first failure of this source: read from the diagnostics' pre-hello slot.
    let f = desk
        .link
        .diagnostics()
        .recent_failures
        .into_iter()
        .find(|f| f.kind == FailureKind::UnknownDevice)
        .expect("the refused hello is in the diagnostics");
    assert!(
        f.words.contains(&format!("{}…", &long[..64])),
        "{}",
        f.words
    );
    desk.stop().await;
}
