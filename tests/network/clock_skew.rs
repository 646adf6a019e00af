//! A phone with the wrong clock (`docs/faults.md`, "A phone with the wrong clock"): a real
//! [`App`] on loopback and two reference phones ([`PhoneClient`]) whose clocks are an hour
//! behind and a day ahead, every `ts`, `started_at` and `captured_at` they write on their own
//! clock.
//!
//! Checked: both pair and say hello (the protocol has no time window, so nothing is refused
//! for a clock); their dials, sent in turns, are listed in the order they arrived, not by their
//! start; each keeps its start as the phone sent it and its duration exactly; the time terms of
//! the filter line follow the dial's arrival by this computer's clock (`docs/dial-filter.md`),
//! not the phone's start; the skew is in each phone's
//! details (Phones view) and once per phone in Troubleshoot, and stays once after a reconnect.
//!
//! Every test binds 127.0.0.1:0 and every wait is bounded.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use switchboard::app::dials::HistoryRow;
use switchboard::app::{App, AppConfig, AppPaths, IdentityStore, RecordingHost};
use switchboard::clock::{Clock as _, SystemClock};
use switchboard::confirmations::ConfirmationMirror;
use switchboard::dials::HistoryQuery;
use switchboard::link::phone_client::{envelope, PhoneClient, PhoneIdentity};
use switchboard::link::rfc3339_ms;
use switchboard::link::troubleshoot::TroubleClass;

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const WAIT: Duration = Duration::from_secs(30);
const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 24 * HOUR_MS;
/// Dials each phone sends.
const DIALS: u64 = 12;
/// How far a measured skew may be from the phone's offset: the time a hello takes on
/// loopback, with a wide margin for a loaded machine.
const MEASURE_SLACK_MS: i64 = 5_000;

async fn until(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !ok() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn app_in(home: &std::path::Path) -> Arc<App> {
    let mut config = AppConfig::new(AppPaths::under(home), false);
    config.identity = IdentityStore::Memory;
    config.listen = (LOOPBACK, 0);
    config.mdns = false;
    App::new(
        config,
        Arc::new(RecordingHost::new()),
        tokio::runtime::Handle::current(),
        ConfirmationMirror::with_bundled_catalogue(),
    )
}

/// Now on a clock `offset_ms` off, epoch ms.
fn clock_at(offset_ms: i64) -> u64 {
    u64::try_from(SystemClock.now_ms_i64() + offset_ms).unwrap()
}

/// A phone whose clock is `offset_ms` off, paired through the pairing window as the person
/// does it (the Phones view's "Codes match"); still connected.
async fn pair(app: &App, label: &str, offset_ms: i64) -> (PhoneIdentity, PhoneClient) {
    let link = app.phones.link().unwrap();
    let invite = link.open_pairing(LOOPBACK);
    let me = PhoneIdentity::generate(label);
    let mut phone = PhoneClient::connect(
        link.local_addr().unwrap(),
        link.identity().cert_fingerprint(),
    )
    .await
    .unwrap();
    phone.clock_offset_ms = offset_ms;
    let shown = phone
        .pair_start(&me, &invite.code, vec![])
        .await
        .unwrap_or_else(|e| panic!("{label}: pairing refused: {e}"));
    let pending = app.phones.snapshot().pending.expect("the pending pairing");
    app.change()
        .unwrap()
        .confirm_pairing(&pending.id, true)
        .unwrap();
    phone
        .pair_confirm(&me, &shown, true, (1, 1))
        .await
        .unwrap_or_else(|e| panic!("{label}: pairing refused: {e}"));
    (me, phone)
}

/// Dial `i` of `me`, written on a clock `offset_ms` off: its `ts`, `captured_at` and
/// `started_at` are that clock's; it took `7 + i` ms.
fn dial(me: &PhoneIdentity, offset_ms: i64, i: u64) -> Value {
    let now = clock_at(offset_ms);
    let payload = json!({
        "seq": i + 1, "dedup": format!("{}-{i}", me.device_id()),
        "call_id": format!("c{i}"), "caller": "lumiagent", "callee": "lumirealm",
        "endpoint": "lumirealm.phoneline", "op": "describe",
        "request": {"op": "describe", "callId": format!("c{i}")},
        "started_at": rfc3339_ms(now - 7 - i), "duration_ms": 7 + i, "outcome": "ok",
        "response": {"name": "LumiRealm"}
    });
    let mut v = envelope("event.phoneline.dial", Some(&me.entity_id()), payload);
    v["ts"] = json!(rfc3339_ms(now));
    v["session"] = json!("ses_clockskew00001");
    v["device"] = json!(me.device_id());
    v["generation"] = json!(1);
    v["provenance"] =
        json!({"sensor": format!("{}:phoneline", me.device_id()), "captured_at": v["ts"]});
    v["labels"] = json!({"consent": "product_operation", "retention": "standard"});
    v
}

/// The dials a filter line gives, newest first: (phone, call id, start ms, duration ms).
async fn dials(app: &App, filter: &str) -> Vec<(String, String, i64, u64)> {
    let q = HistoryQuery {
        filter: filter.into(),
        ..HistoryQuery::default()
    };
    let page = app.dials_history(q, None).await.unwrap();
    page.rows
        .iter()
        .filter_map(|r| match r {
            HistoryRow::Dial(d) => Some((
                d.phone.to_string(),
                d.call_id.to_string(),
                d.start_ms,
                d.duration_ms,
            )),
            HistoryRow::Connection(_) => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_phone_an_hour_behind_and_one_a_day_ahead_pair_stream_and_show_their_skew() {
    let home = tempfile::tempdir().unwrap();
    let app = app_in(home.path());
    app.start_link();
    until("the link to listen", || {
        app.phones.link().is_some() && app.hub().is_some()
    })
    .await;
    // Both pair and say hello: nothing is refused for a clock.
    let (behind, mut behind_phone) = pair(&app, "Behind phone", -HOUR_MS).await;
    let (ahead, mut ahead_phone) = pair(&app, "Ahead phone", DAY_MS).await;
    let hub = app.hub().unwrap();

    // In turns, each dial held before the next is sent: the arrival order is known.
    let mut sent: Vec<(String, String)> = Vec::new();
    for i in 0..DIALS {
        for (me, phone, offset) in [
            (&behind, &mut behind_phone, -HOUR_MS),
            (&ahead, &mut ahead_phone, DAY_MS),
        ] {
            phone.send_value(&dial(me, offset, i)).await.unwrap();
            until("the dial to be held", || {
                hub.phone(me.device_id()).is_some_and(|p| p.dials == i + 1)
            })
            .await;
            sent.push((me.device_id().to_string(), format!("c{i}")));
        }
    }
    let now = SystemClock.now_ms_i64();

    // Listed in the order they arrived (newest first), whatever their start says: sorted by
    // start, every dial of the phone a day ahead would come first.
    let all = dials(&app, "kind:dial").await;
    let order: Vec<(String, String)> = all.iter().map(|d| (d.0.clone(), d.1.clone())).collect();
    let mut newest_first = sent.clone();
    newest_first.reverse();
    assert_eq!(order, newest_first);
    // Each start is the phone's, as sent; each duration exactly as sent.
    for (phone, call, start, duration) in &all {
        let i: u64 = call[1..].parse().unwrap();
        assert_eq!(*duration, 7 + i, "{phone} {call}");
        let offset = if phone == behind.device_id() {
            -HOUR_MS
        } else {
            DAY_MS
        };
        let off_by = start - now - offset;
        assert!(
            (-MEASURE_SLACK_MS - 60_000..=MEASURE_SLACK_MS).contains(&off_by),
            "{phone} {call}: start {start} is not the phone's clock ({off_by} ms from it)"
        );
    }
    // The time terms follow when each dial arrived, by this computer's clock
    // (docs/dial-filter.md): the last half hour holds every dial of both phones, in arrival
    // order (by their starts, the phone an hour behind would have none and the phone a day
    // ahead would be "after" the next hour); nothing arrived after the next hour or before the
    // last half hour.
    let recent = dials(&app, "after:-30m").await;
    assert_eq!(
        recent
            .iter()
            .map(|d| (d.0.clone(), d.1.clone()))
            .collect::<Vec<_>>(),
        newest_first
    );
    let future = dials(&app, &format!("after:{}", rfc3339_ms(clock_at(HOUR_MS)))).await;
    assert_eq!(future, Vec::new(), "nothing arrived in the next hour");
    let earlier = dials(&app, "before:-30m").await;
    assert_eq!(
        earlier,
        Vec::new(),
        "nothing arrived before the last half hour"
    );
    // Durations stay right in the duration terms whatever the clocks.
    assert_eq!(dials(&app, "duration>=15ms").await.len(), 2 * 4);

    // The skew: in each phone's details, and once per phone in Troubleshoot.
    let check_shown = |app: &App| {
        let snap = app.phones.snapshot();
        for (me, offset, words) in [
            (&behind, -HOUR_MS, "1 h 0 min behind"),
            (&ahead, DAY_MS, "1 d 0 h ahead"),
        ] {
            let p = snap
                .phones
                .iter()
                .find(|p| p.record.device_id == me.device_id())
                .unwrap();
            let skew = p.clock_skew_ms.expect("measured at hello");
            assert!(
                (skew - offset).abs() <= MEASURE_SLACK_MS,
                "{}: measured {skew} ms, the phone is {offset} ms off",
                p.record.label
            );
            assert_eq!(p.clock_skew.as_deref(), Some(words), "{}", p.record.label);
        }
        let t = snap.troubleshoot.expect("the link runs");
        let seen: Vec<_> = t
            .seen
            .iter()
            .filter(|s| s.class == TroubleClass::ClockSkew)
            .collect();
        assert_eq!(seen.len(), 1, "{:?}", t.seen);
        let words = seen[0].seen.as_deref().unwrap();
        assert_eq!(words.matches("Behind phone").count(), 1, "{words}");
        assert_eq!(words.matches("Ahead phone").count(), 1, "{words}");
        assert!(
            words.contains("1 h 0 min behind this computer's"),
            "{words}"
        );
        assert!(words.contains("1 d 0 h ahead this computer's"), "{words}");
        assert!(!t.guide.iter().any(|g| g.class == TroubleClass::ClockSkew));
    };
    check_shown(&app);

    // The phone an hour behind connects again: a new hello, a new measure, still shown once.
    let link = app.phones.link().unwrap();
    behind_phone.close().await;
    until("the phone to be gone", || {
        !app.phones
            .snapshot()
            .phones
            .iter()
            .any(|p| p.record.device_id == behind.device_id() && p.connected)
    })
    .await;
    let mut again = PhoneClient::connect(
        link.local_addr().unwrap(),
        link.identity().cert_fingerprint(),
    )
    .await
    .unwrap();
    again.clock_offset_ms = -HOUR_MS;
    again
        .hello(&behind, (1, 1))
        .await
        .expect("a hello an hour behind is not refused");
    until("the phone to be back", || {
        app.phones
            .snapshot()
            .phones
            .iter()
            .any(|p| p.record.device_id == behind.device_id() && p.connected)
    })
    .await;
    check_shown(&app);
    assert!(
        !link
            .diagnostics()
            .recent_failures
            .iter()
            .any(|f| f.words.contains("clock")),
        "no failure is recorded for a clock"
    );
    app.shutdown().await;
}
