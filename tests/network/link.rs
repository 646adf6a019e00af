//! Integration tests of the link over loopback: pairing, sessions, refusals, keepalive, unpair.
//!
//! Every test binds 127.0.0.1:0, every wait is bounded, and every desktop records each frame it
//! writes: [`Desk::stop`] asserts none of them is `action.approve`, `action.reject` or
//! `action.cancel` (the central promise), across all flows exercised here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use switchboard::ifp::outgoing::{DesktopRequest, DesktopRequestKind};
use switchboard::ifp::OutgoingMessage;
use switchboard::link::identity::key_fingerprint;
use switchboard::link::pairing::{HELLO_REFUSED, MAX_WRONG_TRIES, PAIRING_REFUSED};
use switchboard::link::phone_client::{envelope, PhoneClient, PhoneError, PhoneIdentity};
use switchboard::link::{
    bind, DesktopIdentity, FailureKind, FrameLog, Link, LinkConfig, LinkEvent, ManualClock,
    MdnsStatus, MemoryStore, FORBIDDEN_OUTGOING,
};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::confirm;
use confirm::pair_confirmed;

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const WAIT: Duration = Duration::from_secs(10);

struct Desk {
    link: Link,
    events: mpsc::UnboundedReceiver<LinkEvent>,
    addr: SocketAddr,
    fp: String,
    dir: tempfile::TempDir,
    log: FrameLog,
    clock: Arc<ManualClock>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

async fn start_with(tune: impl FnOnce(&mut LinkConfig)) -> Desk {
    let dir = tempfile::tempdir().unwrap();
    let store = MemoryStore::new();
    let identity = DesktopIdentity::load_or_create(&store).unwrap();
    let clock = Arc::new(ManualClock::new(1_780_000_000_000));
    let log: FrameLog = Arc::new(Mutex::new(Vec::new()));
    let mut cfg = LinkConfig::new(dir.path());
    cfg.mdns = false;
    cfg.clock = clock.clone();
    cfg.frame_log = Some(log.clone());
    tune(&mut cfg);
    let (link, events) = Link::new(identity, cfg).unwrap();
    let listener = bind(LOOPBACK, 0).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let serving = link.run(listener, async {
        let _ = stop_rx.await;
    });
    let task = tokio::spawn(async move { serving.await.unwrap() });
    let fp = link.identity().cert_fingerprint().to_string();
    Desk {
        link,
        events,
        addr,
        fp,
        dir,
        log,
        clock,
        stop: Some(stop_tx),
        task: Some(task),
    }
}

async fn start() -> Desk {
    start_with(|_| {}).await
}

impl Desk {
    fn trust_bytes(&self) -> Option<Vec<u8>> {
        std::fs::read(self.dir.path().join("paired-phones.json")).ok()
    }

    async fn phone(&self) -> PhoneClient {
        PhoneClient::connect(self.addr, &self.fp).await.unwrap()
    }

    /// Waits (bounded) for the first event that `pick` accepts; other events are skipped.
    async fn event<T>(&mut self, mut pick: impl FnMut(&LinkEvent) -> Option<T>) -> T {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let e = tokio::time::timeout_at(deadline, self.events.recv())
                .await
                .expect("timed out waiting for a link event")
                .expect("event channel closed");
            if let Some(t) = pick(&e) {
                return t;
            }
        }
    }

    async fn failure(&mut self, kind: FailureKind) -> String {
        self.event(|e| match e {
            LinkEvent::Failure(f) if f.kind == kind => Some(f.words.clone()),
            _ => None,
        })
        .await
    }

    /// Pairs a fresh phone (and says hello on that connection); returns it.
    async fn pair_phone(&mut self, label: &str) -> PhoneIdentity {
        let invite = self.link.open_pairing(LOOPBACK);
        let me = PhoneIdentity::generate(label);
        let mut phone = self.phone().await;
        let paired = pair_confirmed(
            &self.link,
            &mut phone,
            &me,
            &invite.code,
            vec![json!({"type": "tool:messages.send"})],
            (1, 1),
        )
        .await
        .unwrap();
        assert_eq!(paired.device_id, me.device_id());
        phone.close().await;
        me
    }

    async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.task.take() {
            tokio::time::timeout(WAIT, t).await.unwrap().unwrap();
        }
        let log = self.log.lock().unwrap();
        assert!(!log.is_empty(), "the desktop wrote no frame at all");
        for text in log.iter() {
            let v: Value = serde_json::from_str(text).unwrap();
            let t = v["type"].as_str().unwrap();
            assert!(!FORBIDDEN_OUTGOING.contains(&t), "desktop sent {t}: {text}");
            assert!(!t.starts_with("action."), "desktop sent {t}");
            // The desktop's hello and grant declare no capability at all.
            if t == "control.hello" || t == "pair.grant" {
                assert_eq!(v["payload"]["capabilities"], json!([]), "{text}");
            }
        }
    }
}

fn refused(r: Result<impl std::fmt::Debug, PhoneError>) -> (String, String) {
    match r {
        Err(PhoneError::Refused { class, detail }) => (class, detail),
        other => panic!("expected an ifp error, got {other:?}"),
    }
}

#[tokio::test]
async fn pairing_succeeds_and_next_connection_authenticates_with_hello_alone() {
    let mut desk = start().await;
    assert_eq!(desk.trust_bytes(), None);
    let invite = desk.link.open_pairing(LOOPBACK);
    assert!(invite.link.starts_with(&format!(
        "switchboard://pair?addr=127.0.0.1&port={}&code=",
        desk.addr.port()
    )));
    assert!(invite.link.ends_with(&format!("&fp={}", desk.fp)));
    assert!(invite.qr_svg.contains("<svg"));

    let me = PhoneIdentity::generate("Pixel 9");
    let mut phone = desk.phone().await;
    let paired = pair_confirmed(
        &desk.link,
        &mut phone,
        &me,
        &invite.code,
        vec![json!({"type": "tool:messages.send"})],
        (1, 1),
    )
    .await
    .unwrap();
    assert_eq!(paired.version, 1);
    assert_eq!(
        paired.desktop_public_key,
        desk.link.identity().public_key_b64()
    );
    let (dev, code) = desk
        .event(|e| match e {
            LinkEvent::Paired {
                device_id,
                verification_code,
                ..
            } => Some((device_id.clone(), verification_code.clone())),
            _ => None,
        })
        .await;
    assert_eq!(dev, me.device_id());
    assert_eq!(
        code, paired.verification_code,
        "both screens show the same code"
    );
    let phones = desk.link.paired_phones();
    assert_eq!(phones.len(), 1);
    assert_eq!(phones[0].public_key, me.public_key_b64());
    assert_eq!(phones[0].label, "Pixel 9");
    let on_disk = String::from_utf8(desk.trust_bytes().unwrap()).unwrap();
    assert!(on_disk.contains(&me.public_key_b64()));
    phone.close().await;

    // The code was single-use.
    let other = PhoneIdentity::generate("intruder");
    let mut p2 = desk.phone().await;
    let (class, _) = refused(p2.pair(&other, &invite.code, vec![], (1, 1)).await);
    assert_eq!(class, "pairing_failed");

    // Next connection: hello alone.
    let mut phone = desk.phone().await;
    phone
        .set_desktop_public_key(&paired.desktop_public_key)
        .unwrap();
    assert_eq!(phone.hello(&me, (1, 4)).await.unwrap(), 1);
    desk.event(|e| match e {
        LinkEvent::PhoneConnected { device_id, .. } if device_id == me.device_id() => Some(()),
        _ => None,
    })
    .await;
    assert_eq!(desk.link.connected(), vec![me.device_id().to_string()]);

    // Phone -> app, through the validator.
    let note = envelope(
        "note.text",
        Some(&me.entity_id()),
        json!({"text": "hello desktop"}),
    );
    phone.send_value(&note).await.unwrap();
    let env = desk
        .event(|e| match e {
            LinkEvent::Message {
                device_id,
                envelope,
                ..
            } if device_id == me.device_id() => Some(envelope.as_ref().clone()),
            _ => None,
        })
        .await;
    assert_eq!(env.r#type, "note.text");
    assert_eq!(env.payload["text"], "hello desktop");

    // App -> phone, only through ifp::OutgoingMessage.
    desk.link
        .send(
            me.device_id(),
            OutgoingMessage::DesktopRequest(DesktopRequest {
                kind: DesktopRequestKind::RequestSettingsSnapshot,
                target: None,
            }),
        )
        .unwrap();
    let got = phone.expect("desktop.request").await.unwrap();
    assert_eq!(got["payload"]["kind"], "request_settings_snapshot");
    phone.close().await;
    desk.event(|e| match e {
        LinkEvent::PhoneDisconnected { device_id, .. } if device_id == me.device_id() => Some(()),
        _ => None,
    })
    .await;
    desk.stop().await;
}

#[tokio::test]
async fn wrong_code_fails_and_leaves_trust_file_unchanged() {
    let mut desk = start().await;
    let _known = desk.pair_phone("first").await;
    let before = desk.trust_bytes().unwrap();
    let invite = desk.link.open_pairing(LOOPBACK);
    let wrong = if invite.code == "000-000" {
        "111-111"
    } else {
        "000-000"
    };
    let mut phone = desk.phone().await;
    let (class, detail) = refused(
        phone
            .pair(&PhoneIdentity::generate("x"), wrong, vec![], (1, 1))
            .await,
    );
    assert_eq!(class, "pairing_failed");
    assert_eq!(
        detail, PAIRING_REFUSED,
        "the peer is not told the code was wrong"
    );
    let words = desk.failure(FailureKind::WrongCode).await;
    assert!(words.contains("wrong pairing code"), "{words}");
    assert_eq!(desk.trust_bytes().unwrap(), before);
    desk.stop().await;
}

#[tokio::test]
async fn expired_code_fails() {
    let mut desk = start().await;
    let invite = desk.link.open_pairing(LOOPBACK);
    desk.clock.advance(120_000);
    let mut phone = desk.phone().await;
    let (class, detail) = refused(
        phone
            .pair(
                &PhoneIdentity::generate("late"),
                &invite.code,
                vec![],
                (1, 1),
            )
            .await,
    );
    assert_eq!(class, "pairing_failed");
    assert_eq!(
        detail, PAIRING_REFUSED,
        "the peer is not told the code expired"
    );
    let words = desk.failure(FailureKind::ExpiredCode).await;
    assert!(words.contains("expired"));
    assert_eq!(desk.trust_bytes(), None);
    desk.stop().await;
}

#[tokio::test]
async fn fifth_wrong_code_closes_the_window_and_the_right_code_then_fails() {
    let mut desk = start().await;
    let invite = desk.link.open_pairing(LOOPBACK);
    let wrong = if invite.code == "000-000" {
        "111-111"
    } else {
        "000-000"
    };
    let me = PhoneIdentity::generate("guesser");
    for _ in 0..MAX_WRONG_TRIES {
        // Past the source's backoff (at most 16 s after four failures), inside the window.
        desk.clock.advance(20_000);
        let mut phone = desk.phone().await;
        let (class, detail) = refused(phone.pair(&me, wrong, vec![], (1, 1)).await);
        assert_eq!(
            (class.as_str(), detail.as_str()),
            ("pairing_failed", PAIRING_REFUSED)
        );
    }
    desk.failure(FailureKind::RateLimited).await;
    let reason = desk
        .event(|e| match e {
            LinkEvent::PairingClosed { reason } => Some(reason.clone()),
            _ => None,
        })
        .await;
    assert!(reason.contains("window is closed"), "{reason}");
    assert_eq!(desk.link.pairing_invite(), None);
    // The right code, in time and past every backoff, no longer works: the window is gone.
    desk.clock.advance(16_000);
    let mut phone = desk.phone().await;
    let (class, detail) = refused(phone.pair(&me, &invite.code, vec![], (1, 1)).await);
    assert_eq!(
        (class.as_str(), detail.as_str()),
        ("pairing_failed", PAIRING_REFUSED)
    );
    assert_eq!(desk.trust_bytes(), None);
    // A window the person opens again works.
    desk.clock.advance(60_000);
    let again = desk.link.open_pairing(LOOPBACK);
    let mut phone = desk.phone().await;
    let paired = pair_confirmed(&desk.link, &mut phone, &me, &again.code, vec![], (1, 1))
        .await
        .unwrap();
    assert_eq!(paired.device_id, me.device_id());
    desk.stop().await;
}

#[tokio::test]
async fn replayed_hello_is_refused() {
    let mut desk = start().await;
    let me = desk.pair_phone("replay").await;
    let mut first = desk.phone().await;
    let first_nonce = first.nonce().to_string();
    let captured = first.hello_frame(&me, (1, 1));
    first.send_value(&captured).await.unwrap();
    first.expect("control.hello").await.unwrap();
    first.close().await;
    desk.event(|e| matches!(e, LinkEvent::PhoneDisconnected { .. }).then_some(()))
        .await;
    let before = desk.trust_bytes().unwrap();

    let mut second = desk.phone().await;
    assert_eq!(second.nonce().len(), 43);
    assert_ne!(second.nonce(), first_nonce);
    second.send_value(&captured).await.unwrap();
    let (class, detail) = refused(second.expect("control.hello").await);
    assert_eq!(class, "unauthorized_device");
    assert!(detail.contains("replayed"), "{detail}");
    desk.failure(FailureKind::BadProof).await;
    assert_eq!(desk.trust_bytes().unwrap(), before);
    assert!(desk.link.connected().is_empty());
    desk.stop().await;
}

#[tokio::test]
async fn unknown_device_is_refused() {
    let mut desk = start().await;
    let _known = desk.pair_phone("known").await;
    let before = desk.trust_bytes().unwrap();
    let stranger = PhoneIdentity::generate("stranger");
    let mut phone = desk.phone().await;
    let (class, detail) = refused(phone.hello(&stranger, (1, 1)).await);
    assert_eq!(class, "unauthorized_device");
    assert_eq!(detail, HELLO_REFUSED);
    desk.failure(FailureKind::UnknownDevice).await;
    assert_eq!(desk.trust_bytes().unwrap(), before);
    desk.stop().await;
}

#[tokio::test]
async fn changed_identity_is_refused_and_never_repaired_silently() {
    let mut desk = start().await;
    let me = desk.pair_phone("original").await;
    let before = desk.trust_bytes().unwrap();
    let impostor = PhoneIdentity::with_device_id(me.device_id(), "original");
    let fp = |k: &str| {
        use base64::Engine as _;
        key_fingerprint(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(k)
                .unwrap(),
        )
    };

    let mut phone = desk.phone().await;
    let (class, detail) = refused(phone.hello(&impostor, (1, 1)).await);
    assert_eq!(class, "unauthorized_device");
    // The peer gets the generic answer; the desktop's record names both keys (the impostor's
    // proof verifies under the key it presents: a real identity change).
    assert_eq!(detail, HELLO_REFUSED);
    let words = desk.failure(FailureKind::IdentityChanged).await;
    assert!(words.contains(&fp(&me.public_key_b64())), "{words}");
    assert!(words.contains(&fp(&impostor.public_key_b64())), "{words}");

    // Trying to pair again under the same device id with the new key is refused too.
    let invite = desk.link.open_pairing(LOOPBACK);
    let mut phone = desk.phone().await;
    let (class, detail) = refused(phone.pair(&impostor, &invite.code, vec![], (1, 1)).await);
    assert_eq!(class, "pairing_failed");
    assert!(detail.contains("identity changed"), "{detail}");
    assert_eq!(desk.trust_bytes().unwrap(), before);
    assert_eq!(desk.link.paired_phones()[0].public_key, me.public_key_b64());
    desk.stop().await;
}

#[tokio::test]
async fn no_common_version_names_both_ranges() {
    let mut desk = start().await;
    let me = desk.pair_phone("future").await;
    let before = desk.trust_bytes().unwrap();
    let mut phone = desk.phone().await;
    assert_eq!(phone.desktop_range(), (1, 1));
    let (class, detail) = refused(phone.hello(&me, (2, 3)).await);
    assert_eq!(class, "unsupported_version");
    assert!(
        detail.contains("2..3") && detail.contains("1..1"),
        "{detail}"
    );
    desk.failure(FailureKind::VersionMismatch).await;
    assert_eq!(desk.trust_bytes().unwrap(), before);
    desk.stop().await;
}

#[tokio::test]
async fn highest_common_version_is_chosen() {
    let mut desk = start_with(|c| c.protocol = (1, 3)).await;
    let me = desk.pair_phone("v").await;
    let mut phone = desk.phone().await;
    assert_eq!(phone.hello(&me, (2, 5)).await.unwrap(), 3);
    phone.close().await;
    desk.stop().await;
}

#[tokio::test]
async fn tls_peer_with_another_certificate_is_refused() {
    let mut desk = start().await;
    let before = desk.trust_bytes();
    let other = DesktopIdentity::generate().unwrap();
    let err = PhoneClient::connect(desk.addr, other.cert_fingerprint())
        .await
        .unwrap_err();
    match err {
        PhoneError::CertificateMismatch { expected, got } => {
            assert_eq!(expected, other.cert_fingerprint());
            assert_eq!(got.as_deref(), Some(desk.fp.as_str()));
        }
        e => panic!("expected a certificate mismatch, got {e:?}"),
    }
    desk.failure(FailureKind::CertificateMismatch).await;
    assert_eq!(desk.trust_bytes(), before);
    // A phone with the right pin still gets in.
    let _ = desk.phone().await;
    desk.stop().await;
}

#[tokio::test]
async fn invalid_json_and_oversize_frames_get_an_error_answer() {
    let mut desk = start().await;
    let mut phone = desk.phone().await;
    phone.send_text("{not json".into()).await.unwrap();
    let (class, detail) = refused(phone.expect("never").await);
    assert_eq!(class, "invalid_envelope");
    assert!(detail.contains("JSON"), "{detail}");
    desk.failure(FailureKind::InvalidFrame).await;

    // A well-formed envelope that breaks a rule gets the validator's verdict.
    phone
        .send_text(
            r#"{"ifp":"2","id":"msg_abcdef","ts":"2026-01-01T00:00:00Z","type":"x","payload":{}}"#
                .into(),
        )
        .await
        .unwrap();
    let (class, _) = refused(phone.expect("never").await);
    assert_eq!(class, "unsupported_version");

    // Over 1 MiB: answered with an error, then the connection is closed.
    let big = format!(
        r#"{{"ifp":"1","id":"msg_abcdef","ts":"2026-01-01T00:00:00Z","type":"x","entity":"ent_abcdef","payload":{{"blob":"{}"}}}}"#,
        "a".repeat(1024 * 1024)
    );
    phone.send_text(big).await.unwrap();
    let (class, detail) = refused(phone.expect("never").await);
    assert_eq!(class, "invalid_envelope");
    assert!(detail.contains("1 MiB"), "{detail}");
    // Three failures before hello from one source in a minute: one event, one coalesced entry.
    let tail = tokio::time::timeout(Duration::from_millis(300), desk.events.recv()).await;
    assert!(
        tail.is_err(),
        "a second failure event in the minute: {tail:?}"
    );
    let d = desk.link.diagnostics();
    assert_eq!(d.recent_failures.len(), 1, "{:?}", d.recent_failures);
    let f = &d.recent_failures[0];
    assert_eq!(f.kind, FailureKind::OversizeFrame);
    assert!(
        f.words
            .starts_with("3 failed attempts before hello from 127.0.0.1 in the last minute"),
        "{}",
        f.words
    );
    assert!(desk.link.connected().is_empty());
    desk.stop().await;
}

#[tokio::test]
async fn two_phones_connected_at_once() {
    let mut desk = start().await;
    let a = desk.pair_phone("A").await;
    let b = desk.pair_phone("B").await;
    let mut pa = desk.phone().await;
    let mut pb = desk.phone().await;
    pa.hello(&a, (1, 1)).await.unwrap();
    pb.hello(&b, (1, 1)).await.unwrap();
    let mut both = vec![a.device_id().to_string(), b.device_id().to_string()];
    both.sort();
    assert_eq!(desk.link.connected(), both);
    for (phone, me) in [(&mut pa, &a), (&mut pb, &b)] {
        let m = envelope(
            "note.text",
            Some(&me.entity_id()),
            json!({"from": me.device_id()}),
        );
        phone.send_value(&m).await.unwrap();
    }
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let (dev, from) = desk
            .event(|e| match e {
                LinkEvent::Message {
                    device_id,
                    envelope,
                    ..
                } => Some((device_id.clone(), envelope.payload["from"].clone())),
                _ => None,
            })
            .await;
        assert_eq!(json!(dev), from, "message attributed to its own phone");
        seen.push(dev);
    }
    seen.sort();
    assert_eq!(seen, both);
    desk.stop().await;
}

#[tokio::test]
async fn keepalive_pings_and_a_silent_phone_is_dropped() {
    let mut desk = start_with(|c| {
        c.ping_interval = Duration::from_millis(100);
        c.dead_after = Duration::from_millis(600);
    })
    .await;
    let me = desk.pair_phone("sleepy").await;
    // An answering phone stays connected well past dead_after.
    let mut phone = desk.phone().await;
    phone.hello(&me, (1, 1)).await.unwrap();
    phone.idle(Duration::from_millis(1500)).await.unwrap();
    assert!(phone.received.iter().any(|f| f["type"] == "control.ping"));
    assert_eq!(desk.link.connected(), vec![me.device_id().to_string()]);
    // A silent one is dropped.
    phone.answer_pings = false;
    phone.wait = Duration::from_secs(5);
    let mut closed = false;
    for _ in 0..3 {
        match phone.recv().await {
            Err(PhoneError::Closed) | Err(PhoneError::WebSocket(_)) => {
                closed = true;
                break;
            }
            Err(e) => panic!("{e}"),
            Ok(_) => {}
        }
    }
    assert!(closed);
    let words = desk.failure(FailureKind::Timeout).await;
    assert!(words.contains(me.device_id()), "{words}");
    let reason = desk
        .event(|e| match e {
            LinkEvent::PhoneDisconnected { reason, .. } if !reason.contains("phone closed") => {
                Some(reason.clone())
            }
            _ => None,
        })
        .await;
    assert!(reason.contains("keepalive"), "{reason}");
    desk.stop().await;
}

#[tokio::test]
async fn unpair_forgets_the_key_and_tells_the_phone() {
    let mut desk = start().await;
    let me = desk.pair_phone("gone").await;
    let mut phone = desk.phone().await;
    phone.hello(&me, (1, 1)).await.unwrap();
    assert!(desk.link.unpair(me.device_id()).unwrap());
    let req = phone.expect("desktop.request").await.unwrap();
    assert_eq!(req["payload"]["kind"], "unpair");
    assert_eq!(req["payload"]["target"], me.device_id());
    assert!(matches!(phone.recv().await, Err(PhoneError::Closed)));
    let on_disk = String::from_utf8(desk.trust_bytes().unwrap()).unwrap();
    assert!(!on_disk.contains(me.device_id()));
    assert!(!desk.link.unpair(me.device_id()).unwrap());
    let mut again = desk.phone().await;
    let (class, _) = refused(again.hello(&me, (1, 1)).await);
    assert_eq!(class, "unauthorized_device");
    desk.stop().await;
}

#[tokio::test]
async fn diagnostics_report_port_addresses_and_failures_in_words() {
    let mut desk = start().await;
    let stranger = PhoneIdentity::generate("stranger");
    let mut phone = desk.phone().await;
    let _ = phone.hello(&stranger, (1, 1)).await;
    desk.failure(FailureKind::UnknownDevice).await;
    let d = desk.link.diagnostics();
    assert_eq!(d.port, Some(desk.addr.port()));
    assert!(d.addresses.iter().any(|a| a.address == "127.0.0.1"));
    assert_eq!(d.mdns, MdnsStatus::Disabled);
    assert_eq!(d.cert_fingerprint, desk.fp);
    let f = d
        .recent_failures
        .iter()
        .find(|f| f.kind == FailureKind::UnknownDevice)
        .unwrap();
    assert!(f.words.contains(stranger.device_id()));
    assert!(f.what_to_do.contains("Pair"));
    desk.stop().await;
}

#[tokio::test]
async fn mdns_problems_never_stop_the_listener() {
    let desk = start_with(|c| c.mdns = true).await;
    let _phone = desk.phone().await;
    match desk.link.diagnostics().mdns {
        MdnsStatus::Advertising { fullname } => {
            assert!(
                fullname.ends_with("._switchboard._tcp.local."),
                "{fullname}"
            )
        }
        MdnsStatus::Unavailable { reason } => assert!(!reason.is_empty()),
        other => panic!("mDNS state after start: {other:?}"),
    }
    desk.stop().await;
}

#[tokio::test]
async fn bind_falls_back_to_the_next_free_port() {
    let taken = bind(LOOPBACK, 0).await.unwrap();
    let port = taken.local_addr().unwrap().port();
    if port > u16::MAX - 10 {
        return; // no room above an ephemeral port this high
    }
    let next = bind(LOOPBACK, port).await.unwrap();
    let got = next.local_addr().unwrap().port();
    assert!(got > port && got < port + 10, "{port} -> {got}");
}

#[tokio::test]
async fn a_connection_without_hello_is_dropped_and_send_needs_a_connected_phone() {
    let desk = start_with(|c| c.hello_timeout = Duration::from_millis(300)).await;
    let mut phone = desk.phone().await;
    phone.wait = Duration::from_secs(5);
    assert!(matches!(phone.recv().await, Err(PhoneError::Closed)));
    let err = desk
        .link
        .send(
            "dev_nobody00",
            OutgoingMessage::DesktopRequest(DesktopRequest {
                kind: DesktopRequestKind::RequestSettingsSnapshot,
                target: None,
            }),
        )
        .unwrap_err();
    assert!(err.to_string().contains("dev_nobody00"), "{err}");
    desk.stop().await;
}

/// A phone's report of its failed tries (`ext.x-ifp-link-attempts` of its hello) reaches the
/// desktop's diagnostics; one that does not read is recorded as a failure naming the entry and
/// field, and the hello stands.
#[tokio::test]
async fn link_attempt_reports_are_checked_and_kept() {
    let mut desk = start().await;
    let me = desk.pair_phone("Attempts").await;

    let mut phone = desk.phone().await;
    let mut hello = phone.hello_frame(&me, (1, 1));
    hello["ext"]["x-ifp-link-attempts"] =
        json!([{"addr": "nowhere", "outcome": "failed", "error": "x", "at_ms": 1, "after_ms": 0}]);
    phone.send_value(&hello).await.unwrap();
    phone.expect("control.hello").await.unwrap();
    let words = desk.failure(FailureKind::InvalidFrame).await;
    assert!(
        words.contains("x-ifp-link-attempts: [0].addr: expected ip:port"),
        "{words}"
    );
    assert!(desk.link.diagnostics().phone_attempts.is_empty());
    phone.close().await;

    let mut phone = desk.phone().await;
    let mut hello = phone.hello_frame(&me, (1, 1));
    hello["ext"]["x-ifp-link-attempts"] = json!([{"addr": "203.0.113.1:47470", "outcome": "failed",
        "error": "connect: Network is unreachable (os error 101)", "at_ms": 1_780_000_000_000u64, "after_ms": 0}]);
    phone.send_value(&hello).await.unwrap();
    phone.expect("control.hello").await.unwrap();
    let d = desk.link.diagnostics();
    assert_eq!(d.phone_attempts.len(), 1);
    let r = &d.phone_attempts[0];
    assert_eq!(r.device_id, me.device_id());
    assert_eq!(r.connected_to, desk.addr.to_string());
    assert_eq!(r.attempts[0].addr, "203.0.113.1:47470");
    assert!(r.attempts[0].error.contains("unreachable"));
    phone.close().await;
    desk.stop().await;
}

/// The dual-stack listener takes IPv4 and IPv6 phones on one port (loopback here; other
/// networks in `tests/netns.rs`), and an IPv4 phone shows as a.b.c.d, not ::ffff:a.b.c.d.
#[tokio::test]
async fn dual_stack_listener_serves_both_families() {
    let dir = tempfile::tempdir().unwrap();
    let identity = DesktopIdentity::load_or_create(&MemoryStore::new()).unwrap();
    let mut cfg = LinkConfig::new(dir.path());
    cfg.mdns = false;
    let (link, mut events) = Link::new(identity, cfg).unwrap();
    let listener = switchboard::link::bind_dual_stack(0).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let serving = link.run(listener, async {
        let _ = stop_rx.await;
    });
    let task = tokio::spawn(serving);
    let fp = link.identity().cert_fingerprint().to_string();
    let v4 = SocketAddr::new(LOOPBACK, port);
    let v6 = SocketAddr::new(IpAddr::V6(std::net::Ipv6Addr::LOCALHOST), port);
    // Both families complete TLS with the pinned certificate; the phone tries both at once.
    PhoneClient::connect(v4, &fp).await.unwrap().close().await;
    PhoneClient::connect(v6, &fp).await.unwrap().close().await;
    let c = PhoneClient::connect_any(&[v6, v4], &fp).await.unwrap();
    assert_eq!(c.connected_to, v6, "the first address answers and is kept");
    // No try failed. The IPv4 try starts only if the IPv6 one is still connecting after
    // ATTEMPT_STAGGER (250 ms: a loaded machine under wine takes that long), and is then
    // abandoned, never failed.
    assert!(
        c.link_attempts.iter().all(|a| a.addr == v4.to_string()
            && a.outcome == switchboard::link::diagnostics::AttemptOutcome::Abandoned),
        "{:?}",
        c.link_attempts
    );
    c.close().await;
    // A wrong code from the IPv4 phone is recorded under its IPv4 address.
    let _ = link.open_pairing(LOOPBACK);
    let mut p = PhoneClient::connect(v4, &fp).await.unwrap();
    let me = PhoneIdentity::generate("v4");
    let _ = p.pair_start(&me, "000000", vec![]).await;
    let deadline = tokio::time::Instant::now() + WAIT;
    let words = loop {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Some(LinkEvent::Failure(f))) => break f.address.unwrap_or_default(),
            Ok(Some(_)) => continue,
            other => panic!("no failure event: {other:?}"),
        }
    };
    assert!(words.starts_with("127.0.0.1:"), "{words}");
    let _ = stop_tx.send(());
    let _ = task.await;
}
