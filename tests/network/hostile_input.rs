//! Hostile input against the real link and hub on loopback, and against the parsers:
//! JSON nested at and past the depth limit, numbers beyond f64, invalid UTF-8 in a text and in a
//! binary frame, frames of exactly 1 MiB and one byte more, objects with 100 000 keys, a phone
//! clock a day ahead or behind. Each gets a clear refusal or a correct result, never a panic,
//! and the link is never stuck: after each hostile frame a valid dial on the same connection (or,
//! where the protocol closes it, on a new one) is applied and acknowledged.
//!
//! A real [`App`] (hub, SQLite dial log) with a [`RecordingHost`]; binds 127.0.0.1:0; every wait
//! is bounded. Memory under a phone sending far faster than the desktop applies is a figure:
//! `benches/hostile_memory.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::confirm;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use serde_json::{json, Value};
use switchboard::app::{App, AppConfig, AppPaths, IdentityStore, RecordingHost};
use switchboard::confirmations::ConfirmationMirror;
use switchboard::dials::{Dial, DialFilter};
use switchboard::ifp::{validate_frame, MAX_FRAME_BYTES};
use switchboard::link::phone_client::{envelope, PhoneClient, PhoneError, PhoneIdentity};
use switchboard::link::rfc3339_ms;
use switchboard::link::FailureKind;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::Message;

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const WAIT: Duration = Duration::from_secs(30);
const SESSION: &str = "ses_hostile000000001";
const DAY_MS: u64 = 86_400_000;

struct Desk {
    app: Arc<App>,
    _home: tempfile::TempDir,
    addr: SocketAddr,
    fp: String,
}

async fn start() -> Desk {
    let home = tempfile::tempdir().unwrap();
    let mut config = AppConfig::new(AppPaths::under(home.path()), false);
    config.identity = IdentityStore::Memory;
    config.listen = (LOOPBACK, 0);
    config.mdns = false;
    let app = App::new(
        config,
        Arc::new(RecordingHost::new()),
        tokio::runtime::Handle::current(),
        ConfirmationMirror::with_bundled_catalogue(),
    );
    app.start_link();
    let deadline = tokio::time::Instant::now() + WAIT;
    while app.phones.link().is_none() || app.hub().is_none() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the link never listened"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let link = app.phones.link().unwrap();
    let addr = link.local_addr().unwrap();
    let fp = link.identity().cert_fingerprint().to_string();
    Desk {
        app,
        _home: home,
        addr,
        fp,
    }
}

/// A paired phone, connected, with its next `seq`.
struct Phone {
    me: PhoneIdentity,
    key: String,
    client: PhoneClient,
    seq: u64,
}

impl Phone {
    async fn pair(desk: &Desk) -> Phone {
        let link = desk.app.phones.link().unwrap();
        let invite = link.open_pairing(LOOPBACK);
        let _confirmer =
            confirm::confirm_when_pending(link.clone(), std::time::Duration::from_secs(30));
        let me = PhoneIdentity::generate("hostile");
        let mut client = PhoneClient::connect(desk.addr, &desk.fp).await.unwrap();
        let paired = client
            .pair(&me, &invite.code, vec![], (1, 1))
            .await
            .unwrap();
        Phone {
            me,
            key: paired.desktop_public_key,
            client,
            seq: 0,
        }
    }

    async fn reconnect(&mut self, desk: &Desk) {
        let mut client = PhoneClient::connect(desk.addr, &desk.fp).await.unwrap();
        client.set_desktop_public_key(&self.key).unwrap();
        client.hello(&self.me, (1, 1)).await.unwrap();
        self.client = client;
    }

    /// An `event.phoneline.dial` with the next `seq`, `request` as given, stamped `ts_ms`.
    fn dial_at(&mut self, request: Value, ts_ms: u64) -> Value {
        self.seq += 1;
        let ts = rfc3339_ms(ts_ms);
        let mut v = envelope(
            "event.phoneline.dial",
            Some(&self.me.entity_id()),
            json!({
                "seq": self.seq, "dedup": format!("dial-{}", self.seq),
                "call_id": format!("c{}", self.seq), "caller": "lumiagent",
                "callee": "lumirealm", "endpoint": "lumirealm.phoneline", "op": "describe",
                "request": request, "started_at": ts, "duration_ms": 3, "outcome": "ok",
                "response": {"name": "LumiRealm"}
            }),
        );
        v["ts"] = json!(ts);
        v["session"] = json!(SESSION);
        v["device"] = json!(self.me.device_id());
        v["generation"] = json!(1);
        v["provenance"] =
            json!({"sensor": format!("{}:phoneline", self.me.device_id()), "captured_at": ts});
        v["labels"] = json!({"consent": "product_operation", "retention": "standard"});
        v
    }

    fn dial(&mut self, request: Value) -> Value {
        self.dial_at(request, now_ms())
    }

    /// Sends a valid dial and waits for the acknowledgement naming it (errors before it are
    /// returned, for the caller to judge).
    async fn valid_dial_is_acknowledged(&mut self, what: &str) -> Vec<Value> {
        let d = self.dial(json!({"op": "describe", "after": what}));
        let id = d["id"].as_str().unwrap().to_string();
        self.client.send_value(&d).await.unwrap();
        self.ack_of(&id, what).await
    }

    /// Reads until the `control.ack` whose `last_id` is `id`; returns the `error`s read first.
    async fn ack_of(&mut self, id: &str, what: &str) -> Vec<Value> {
        let mut errors = Vec::new();
        for _ in 0..10_000 {
            let v = match self.client.recv().await {
                Ok(v) => v,
                Err(e) => panic!("after {what}: no acknowledgement of the next valid dial: {e}"),
            };
            if v["type"] == "error" {
                errors.push(v);
            } else if v["type"] == "control.ack" && v["payload"]["last_id"] == id {
                return errors;
            }
        }
        panic!("after {what}: no acknowledgement within 10 000 frames");
    }

    /// The next `error` the desktop sends (class, detail); acks are skipped.
    async fn error(&mut self, what: &str) -> (String, String) {
        for _ in 0..1000 {
            match self.client.recv().await {
                Ok(v) if v["type"] == "error" => {
                    return (
                        v["payload"]["class"].as_str().unwrap_or("").to_string(),
                        v["payload"]["detail"].as_str().unwrap_or("").to_string(),
                    )
                }
                Ok(_) => continue,
                Err(e) => panic!("{what}: no error answer: {e}"),
            }
        }
        panic!("{what}: no error answer within 1000 frames");
    }
}

fn now_ms() -> u64 {
    u64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

fn nested(depth: usize, spaced: bool) -> String {
    let (open, close) = if spaced { ("[ ", " ]") } else { ("[", "]") };
    format!("{}0{}", open.repeat(depth), close.repeat(depth))
}

/// `dial` with its request replaced by the raw JSON text `request`.
fn with_raw_request(dial: &Value, request: &str) -> String {
    let marker = "\"__REQUEST__\"";
    let mut d = dial.clone();
    d["payload"]["request"] = json!("__REQUEST__");
    d.to_string().replacen(marker, request, 1)
}

/// The held dial with `dedup`, if any.
async fn stored(desk: &Desk, dedup: &str) -> Option<Arc<Dial>> {
    let log = &desk.app.dials().unwrap().log;
    let page = log.query(DialFilter::default()).await.unwrap();
    page.dials.into_iter().find(|d| &*d.id == dedup)
}

/// The request of the dial with `dedup` as the dial log keeps it (waits until it is held).
async fn stored_request(desk: &Desk, dedup: &str) -> Option<String> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(d) = stored(desk, dedup).await {
            return Some(d.request.as_str().to_string());
        }
        if tokio::time::Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_nested_at_and_past_the_depth_limit() {
    let desk = start().await;
    let mut phone = Phone::pair(&desk).await;
    // The frame nests at most 127 levels (serde_json's limit); the request sits two down.
    for spaced in [false, true] {
        let d = phone.dial(json!(null));
        let dedup = d["payload"]["dedup"].as_str().unwrap().to_string();
        let id = d["id"].as_str().unwrap().to_string();
        let text = with_raw_request(&d, &nested(125, spaced));
        phone.client.send_text(text).await.unwrap();
        let errors = phone.ack_of(&id, "a request nested 125 deep").await;
        assert!(errors.is_empty(), "{errors:?}");
        let req = stored_request(&desk, &dedup).await.unwrap();
        assert_eq!(
            req,
            nested(125, false),
            "stored as JSON.stringify writes it"
        );

        let d = phone.dial(json!(null));
        let text = with_raw_request(&d, &nested(126, spaced));
        phone.client.send_text(text).await.unwrap();
        let (class, detail) = phone.error("a request nested 126 deep").await;
        assert_eq!(class, "invalid_envelope");
        assert!(detail.contains("recursion limit"), "{detail}");
        // The refused dial's seq is skipped; the next dial still applies.
        let errors = phone
            .valid_dial_is_acknowledged("a request nested 126 deep")
            .await;
        assert!(errors.is_empty(), "{errors:?}");
    }
    // Far past it: 100 000 levels (200 kB) is refused without a stack overflow.
    let d = phone.dial(json!(null));
    phone
        .client
        .send_text(with_raw_request(&d, &nested(100_000, false)))
        .await
        .unwrap();
    let (class, _) = phone.error("a request nested 100 000 deep").await;
    assert_eq!(class, "invalid_envelope");
    phone.valid_dial_is_acknowledged("100 000 levels").await;
    // The parsers alone say the same.
    let deep = format!("{{\"ifp\":\"1\",\"x\":{}}}", nested(200_000, false));
    let r = validate_frame(deep.as_bytes()).unwrap_err();
    assert!(r.reason.contains("invalid JSON"), "{}", r.reason);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn numbers_beyond_f64() {
    let desk = start().await;
    let mut phone = Phone::pair(&desk).await;
    // 1e400 is no f64: refused as invalid JSON, naming where.
    let d = phone.dial(json!(null));
    phone
        .client
        .send_text(with_raw_request(&d, "{\"n\":1e400}"))
        .await
        .unwrap();
    let (class, detail) = phone.error("1e400").await;
    assert_eq!(class, "invalid_envelope");
    assert!(detail.contains("number out of range"), "{detail}");
    phone.valid_dial_is_acknowledged("1e400").await;
    // A huge integer is a double, as in JavaScript: kept as JSON.stringify writes it.
    let d = phone.dial(json!(null));
    let dedup = d["payload"]["dedup"].as_str().unwrap().to_string();
    let id = d["id"].as_str().unwrap().to_string();
    phone
        .client
        .send_text(with_raw_request(
            &d,
            "{\"n\":123456789012345678901234567890123456789012345678901234567890}",
        ))
        .await
        .unwrap();
    let errors = phone.ack_of(&id, "a 60-digit integer").await;
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        stored_request(&desk, &dedup).await.unwrap(),
        // What node 20 prints for JSON.stringify of the same text.
        "{\"n\":1.2345678901234567e+59}"
    );
    // A generation beyond f64 is invalid JSON too, not a wrapped or clamped number.
    let d = phone.dial(json!({}));
    let text = d
        .to_string()
        .replacen("\"generation\":1", "\"generation\":1e400", 1);
    assert!(text.contains("1e400"));
    phone.client.send_text(text).await.unwrap();
    let (class, _) = phone.error("generation = 1e400").await;
    assert_eq!(class, "invalid_envelope");
    phone.valid_dial_is_acknowledged("generation = 1e400").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_utf8_in_a_text_frame_and_in_a_binary_frame() {
    let desk = start().await;
    let mut phone = Phone::pair(&desk).await;
    // Binary: refused (ifp/1 is text), the connection stays.
    let d = phone.dial(json!({}));
    let mut bytes = d.to_string().into_bytes();
    bytes.extend_from_slice(&[0xff, 0xfe, 0xc3]);
    phone
        .client
        .send_message(Message::binary(bytes))
        .await
        .unwrap();
    let (class, detail) = phone.error("a binary frame").await;
    assert_eq!(class, "invalid_envelope");
    assert!(detail.contains("binary"), "{detail}");
    phone.valid_dial_is_acknowledged("a binary frame").await;

    // Text with invalid UTF-8: the WebSocket protocol says fail the connection (1007); the
    // desktop first says why in an ifp/1 error. The phone reconnects and goes on.
    let d = phone.dial(json!({}));
    let mut bytes = d.to_string().into_bytes();
    let at = bytes.len() - 2;
    bytes.insert(at, 0xff);
    let frame = Frame::message(bytes, OpCode::Data(Data::Text), true);
    phone
        .client
        .send_message(Message::Frame(frame))
        .await
        .unwrap();
    let mut ws = std::mem::replace(
        &mut phone.client,
        PhoneClient::connect(desk.addr, &desk.fp).await.unwrap(),
    )
    .into_ws();
    let mut said = None;
    let mut closed = None;
    for _ in 0..100 {
        match tokio::time::timeout(WAIT, ws.next()).await.unwrap() {
            Some(Ok(Message::Text(t))) => {
                let v: Value = serde_json::from_str(t.as_str()).unwrap();
                if v["type"] == "error" {
                    said = Some(v["payload"]["detail"].as_str().unwrap_or("").to_string());
                }
            }
            Some(Ok(Message::Close(c))) => {
                closed = c.map(|c| u16::from(c.code));
                break;
            }
            Some(Ok(_)) => {}
            None | Some(Err(_)) => break,
        }
    }
    let said = said.expect("an ifp/1 error before the close");
    assert!(said.contains("UTF-8"), "{said}");
    assert_eq!(closed, Some(1007));
    phone.reconnect(&desk).await;
    phone.valid_dial_is_acknowledged("invalid UTF-8 text").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_of_exactly_one_mib_and_one_byte_more() {
    let desk = start().await;
    let mut phone = Phone::pair(&desk).await;
    let sized = |phone: &mut Phone, len: usize| -> (Value, String) {
        let d = phone.dial(json!({"pad": ""}));
        let text = d.to_string();
        let pad = "x".repeat(len - text.len());
        let text = text.replacen("\"pad\":\"\"", &format!("\"pad\":\"{pad}\""), 1);
        assert_eq!(text.len(), len);
        (d, text)
    };
    let (d, text) = sized(&mut phone, MAX_FRAME_BYTES);
    let id = d["id"].as_str().unwrap().to_string();
    let dedup = d["payload"]["dedup"].as_str().unwrap().to_string();
    phone.client.send_text(text).await.unwrap();
    let errors = phone.ack_of(&id, "a frame of exactly 1 MiB").await;
    assert!(errors.is_empty(), "{errors:?}");
    let req = stored_request(&desk, &dedup).await.unwrap();
    assert!(req.len() > MAX_FRAME_BYTES - 1000, "{}", req.len());

    let (_, text) = sized(&mut phone, MAX_FRAME_BYTES + 1);
    // The desktop refuses it from the frame header, before the body: it answers, closes (1009)
    // and reads what is still arriving before it closes TCP, so the whole frame is written and
    // the answer is read (the loop below does the same while reading, 100 times).
    phone.client.send_text(text).await.unwrap();
    let v = phone.client.recv().await.unwrap();
    assert_eq!(v["type"], "error", "{v}");
    assert_eq!(v["payload"]["class"], "invalid_envelope");
    let detail = v["payload"]["detail"].as_str().unwrap();
    assert!(detail.contains("1 MiB"), "{detail}");
    assert!(matches!(phone.client.recv().await, Err(PhoneError::Closed)));
    // The desktop's record says what happened.
    let link = desk.app.phones.link().unwrap();
    let d = link.diagnostics();
    assert!(
        d.recent_failures
            .iter()
            .any(|f| f.kind == FailureKind::OversizeFrame
                && f.words.contains("over the 1 MiB limit")),
        "{:?}",
        d.recent_failures
    );
    // Refused before it was read whole: the phone reconnects and goes on.
    phone.reconnect(&desk).await;
    phone.valid_dial_is_acknowledged("1 MiB + 1 byte").await;
    // The parser alone: at the limit it judges the JSON, past it the size.
    let at = format!("{{\"x\":\"{}\"}}", "y".repeat(MAX_FRAME_BYTES - 8));
    assert_eq!(at.len(), MAX_FRAME_BYTES);
    assert!(!validate_frame(at.as_bytes())
        .unwrap_err()
        .reason
        .contains("limit"));
    let past = format!("{{\"x\":\"{}\"}}", "y".repeat(MAX_FRAME_BYTES - 7));
    assert!(validate_frame(past.as_bytes())
        .unwrap_err()
        .reason
        .contains("over the 1048576-byte (1 MiB) limit"));
}

/// What a phone reads after writing a frame over 1 MiB whole while reading: the `error` and
/// the close frame's code, until the desktop's close (or a read error, or 10 s).
async fn write_oversize_while_reading(
    phone: &mut Phone,
    desk: &Desk,
) -> (Vec<Value>, Option<u16>, Result<(), String>) {
    use futures_util::SinkExt as _;
    let mut client = PhoneClient::connect(desk.addr, &desk.fp).await.unwrap();
    client.set_desktop_public_key(&phone.key).unwrap();
    client.hello(&phone.me, (1, 1)).await.unwrap();
    let big = phone
        .dial(json!({"pad": "x".repeat(MAX_FRAME_BYTES)}))
        .to_string();
    assert!(big.len() > MAX_FRAME_BYTES);
    let (mut sink, mut stream) = client.into_ws().split();
    let writer = tokio::spawn(async move {
        let r = sink
            .send(Message::text(big))
            .await
            .map_err(|e| e.to_string());
        (r, sink)
    });
    let mut errors = Vec::new();
    let mut code = None;
    let end = tokio::time::Instant::now() + Duration::from_secs(10);
    while let Ok(Some(msg)) = tokio::time::timeout_at(end, stream.next()).await {
        match msg {
            Ok(Message::Text(t)) => {
                let v: Value = serde_json::from_str(t.as_str()).unwrap();
                if v["type"] == "error" {
                    errors.push(v);
                }
            }
            Ok(Message::Close(f)) => {
                code = f.map(|f| u16::from(f.code));
                break;
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    let (written, _sink) = tokio::time::timeout(Duration::from_secs(10), writer)
        .await
        .expect("the write of the frame ends")
        .unwrap();
    (errors, code, written)
}

/// A phone writing a frame over 1 MiB whole, while reading as any WebSocket client does, reads
/// the desktop's `error` and its 1009 close every time: the desktop does not close TCP while
/// the rest of the frame is still arriving (a reset would destroy its own answer).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_over_one_mib_written_whole_while_reading_gets_the_error_and_1009_every_time() {
    let desk = start().await;
    let mut phone = Phone::pair(&desk).await;
    const ROUNDS: usize = 100;
    let mut both = 0;
    let mut lost = Vec::new();
    for round in 0..ROUNDS {
        let (errors, code, written) = write_oversize_while_reading(&mut phone, &desk).await;
        let answered = errors.len() == 1
            && errors[0]["payload"]["class"] == "invalid_envelope"
            && errors[0]["payload"]["detail"]
                .as_str()
                .is_some_and(|d| d.contains("over the 1 MiB limit"));
        if answered && code == Some(1009) && written.is_ok() {
            both += 1;
        } else {
            lost.push(format!(
                "round {round}: errors {errors:?}, close {code:?}, write {written:?}"
            ));
        }
    }
    assert_eq!(both, ROUNDS, "{lost:#?}");
    // The connection after them works.
    phone.reconnect(&desk).await;
    phone
        .valid_dial_is_acknowledged("100 oversize frames")
        .await;
}

/// `{"k0":0,"k1":0,...}` with `n` keys (base-36 names, so 100 000 keys fit in a frame).
fn many_keys(n: usize) -> String {
    let mut s = String::from("{");
    for i in 0..n {
        if i > 0 {
            s.push(',');
        }
        let mut name = String::new();
        let mut k = i;
        loop {
            name.insert(0, char::from_digit((k % 36) as u32, 36).unwrap());
            k /= 36;
            if k == 0 {
                break;
            }
        }
        s.push_str(&format!("\"k{name}\":0"));
    }
    s.push('}');
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_with_100_000_keys() {
    let desk = start().await;
    let mut phone = Phone::pair(&desk).await;
    let keys = many_keys(100_000);
    // In a dial's request: kept as sent.
    let d = phone.dial(json!(null));
    let id = d["id"].as_str().unwrap().to_string();
    let dedup = d["payload"]["dedup"].as_str().unwrap().to_string();
    let text = with_raw_request(&d, &keys);
    assert!(text.len() <= MAX_FRAME_BYTES, "{}", text.len());
    phone.client.send_text(text).await.unwrap();
    let errors = phone.ack_of(&id, "a request of 100 000 keys").await;
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(stored_request(&desk, &dedup).await.unwrap(), keys);
    // As the envelope itself: refused at its first field that is not an envelope field.
    let d = phone.dial(json!({}));
    let text = d.to_string();
    let envelope_keys = format!("{},{}", &text[..text.len() - 1], &keys[1..]);
    assert!(envelope_keys.len() <= MAX_FRAME_BYTES);
    phone.client.send_text(envelope_keys).await.unwrap();
    let (class, detail) = phone.error("an envelope of 100 000 keys").await;
    assert_eq!(class, "invalid_envelope");
    assert!(detail.contains("not an ifp/1 envelope field"), "{detail}");
    // In a dial's payload: a refusal or a correct dial, then the link goes on.
    let d = phone.dial(json!({}));
    let text = d.to_string();
    let payload_at = text.find("\"payload\":{").unwrap() + "\"payload\":{".len();
    let with_keys = format!(
        "{}{},{}",
        &text[..payload_at],
        &keys[1..keys.len() - 1],
        &text[payload_at..]
    );
    phone.client.send_text(with_keys).await.unwrap();
    phone
        .valid_dial_is_acknowledged("a payload of 100 000 extra keys")
        .await;
    // Before hello, on a new connection: refused, and the phone's hello still works after it.
    let mut stranger = PhoneClient::connect(desk.addr, &desk.fp).await.unwrap();
    stranger.send_text(keys.clone()).await.unwrap();
    assert!(matches!(
        stranger.expect("never").await,
        Err(PhoneError::Refused { .. })
    ));
    stranger.set_desktop_public_key(&phone.key).unwrap();
    stranger.hello(&phone.me, (1, 1)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_phone_clock_a_day_ahead_or_behind() {
    let desk = start().await;
    let mut phone = Phone::pair(&desk).await;
    let now = now_ms();
    // Dials keep the phone's times as sent (the desktop does not guess a correction) and are
    // applied and acknowledged like any other.
    for (what, at) in [
        ("a day ahead", now + DAY_MS),
        ("a day behind", now - DAY_MS),
    ] {
        let d = phone.dial_at(json!({"op": "describe"}), at);
        let id = d["id"].as_str().unwrap().to_string();
        let dedup = d["payload"]["dedup"].as_str().unwrap().to_string();
        phone.client.send_value(&d).await.unwrap();
        let errors = phone.ack_of(&id, what).await;
        assert!(errors.is_empty(), "{what}: {errors:?}");
        let dial = stored(&desk, &dedup).await.unwrap();
        assert_eq!(dial.start_ms, at as i64, "{what}");
    }
    // A proposal stamped by a clock a day behind, living 60 s by that clock, counts down 60 s
    // on the desktop's clock: not "past its expiry" on arrival, not a day long ahead.
    for (what, skew) in [
        ("a day behind", -(DAY_MS as i64)),
        ("a day ahead", DAY_MS as i64),
    ] {
        let ts = (now as i64 + skew) as u64;
        let action = format!("act_skew{:08x}", ts % 0xffff_ffff);
        let params = json!({"to": "+1 555 0100", "body": "Running late.", "reason": "asked"});
        let hash = switchboard::ifp::params_hash(&params);
        let mut p = envelope(
            "action.propose",
            Some(&phone.me.entity_id()),
            json!({"action_id": action, "tool": "messages.send", "params": params,
                   "params_hash": hash, "risk": "high", "idempotency_key": format!("idem_{action}"),
                   "expires_at": rfc3339_ms(ts + 60_000), "reason": "Tell Sam"}),
        );
        p["ts"] = json!(rfc3339_ms(ts));
        p["session"] = json!("ses_skew000000000001");
        p["device"] = json!(phone.me.device_id());
        let id = p["id"].as_str().unwrap().to_string();
        let received_after = now_ms() as i64;
        phone.client.send_value(&p).await.unwrap();
        let errors = phone.ack_of(&id, what).await;
        assert!(errors.is_empty(), "{what}: {errors:?}");
        let expires_at_ms = desk
            .app
            .confirmations
            .lock()
            .get(phone.me.device_id(), &action)
            .map(|v| v.expires_at_ms)
            .unwrap();
        let left = expires_at_ms - received_after;
        assert!(
            (50_000..=61_000).contains(&left),
            "{what}: expires {left} ms after arrival (expected about 60 000)"
        );
    }
}
