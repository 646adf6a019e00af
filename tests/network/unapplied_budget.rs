//! A connection's budget of messages the app holds and has not applied: the link reads no
//! further once the app holds `MAX_UNAPPLIED_DIALS` dials (taken by the one-pass reader) or
//! `MAX_UNAPPLIED` other messages of one phone, hands over all it read before it stops, and
//! goes on, losing nothing, as soon as the app lets go of them.
//!
//! The real link on 127.0.0.1:0 and a paired phone; the test is the app: it keeps every event
//! (and so its credit) until it has counted them. Every wait is bounded.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::desk;
use crate::small_dial::small_dial;

use std::time::Duration;

use futures_util::SinkExt as _;
use serde_json::{json, Value};
use switchboard::link::phone_client::PhoneIdentity;
use switchboard::link::{LinkEvent, MAX_UNAPPLIED, MAX_UNAPPLIED_DIALS};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_tungstenite::tungstenite::Message;

const SESSION: &str = "ses_budget0000000001";

/// How long the link must stay silent before the count is taken: it has read all it may.
const STILL: Duration = Duration::from_millis(700);

/// Dial `seq` of `me`; with `ext`, an `ext` object the one-pass reader leaves to the general
/// path (so the link hands it over as a [`LinkEvent::Message`]).
fn dial(me: &PhoneIdentity, seq: u64, ext: bool) -> String {
    let mut v = small_dial(me, seq, SESSION);
    if ext {
        v["ext"] = json!({"x-test": true});
    }
    Value::to_string(&v)
}

/// What the app was handed: dials (in [`LinkEvent::Dials`]) and other messages.
#[derive(Default)]
struct Held {
    events: Vec<LinkEvent>,
    dials: usize,
    messages: usize,
}

/// Receives events, keeping them all, until at least `at_least` dials and messages together
/// were handed over and the link has then been silent for [`STILL`] (20 s at most in all); what
/// was handed over by then. Silence alone does not end the wait before `at_least`: on a loaded
/// machine (the core's tests under wine in CI) the phone's sender or the link can pause for
/// longer than [`STILL`] mid-stream, which is not the link stopping at its budget. What comes
/// in the [`STILL`] after `at_least` is kept, so a link that read past its budget still shows.
async fn hold_until_still(events: &mut UnboundedReceiver<LinkEvent>, at_least: usize) -> Held {
    let mut held = Held::default();
    let end = tokio::time::Instant::now() + Duration::from_secs(20);
    while tokio::time::Instant::now() < end {
        let wait = if held.dials + held.messages >= at_least {
            STILL
        } else {
            end.saturating_duration_since(tokio::time::Instant::now())
        };
        match tokio::time::timeout(wait, events.recv()).await {
            Ok(Some(e)) => {
                match &e {
                    LinkEvent::Dials { frames, .. } => held.dials += frames.len(),
                    LinkEvent::Message { .. } => held.messages += 1,
                    _ => {}
                }
                held.events.push(e);
            }
            Ok(None) => panic!("the link's events ended"),
            Err(_) if held.dials + held.messages >= at_least => return held,
            Err(_) => break,
        }
    }
    panic!(
        "the link did not hand over {at_least} dials and messages and then go quiet in 20 s \
         ({} dials, {} messages)",
        held.dials, held.messages
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_link_stops_reading_at_the_budget_of_dials_and_of_messages_and_loses_none() {
    let mut desk = desk::start().await;
    let me = desk.pair_phone("budget").await;
    let mut phone = desk.phone().await;
    phone.hello(&me, (1, 1)).await.unwrap();
    desk.drain();

    // More of each than the budget holds: dials first, then messages of the general path.
    let dials = MAX_UNAPPLIED_DIALS + 300;
    let messages = MAX_UNAPPLIED + 200;
    let mut frames: Vec<String> = (1..=dials as u64).map(|s| dial(&me, s, false)).collect();
    frames.extend((1..=messages as u64).map(|s| dial(&me, dials as u64 + s, true)));
    // Each under 1 KiB, so each costs its kind's share of the budget and no more.
    assert!(frames.iter().all(|f| f.len() < 1024));
    let mut ws = phone.into_ws();
    let sender = tokio::spawn(async move {
        for f in frames {
            ws.send(Message::text(f)).await.unwrap();
        }
        ws
    });

    // The app holds everything: the link stops at the dials' budget, every dial it read
    // handed over.
    let first = hold_until_still(&mut desk.events, MAX_UNAPPLIED_DIALS).await;
    assert_eq!(
        (first.dials, first.messages),
        (MAX_UNAPPLIED_DIALS, 0),
        "held dials and messages before the link stopped reading"
    );

    // Let go of them: the rest of the dials come, then messages until the budget is full
    // again. One budget holds both: a message takes the share of
    // MAX_UNAPPLIED_DIALS / MAX_UNAPPLIED dials, so the 300 dials held take 75 messages' room.
    drop(first.events);
    let extra = dials - MAX_UNAPPLIED_DIALS;
    let second_messages = MAX_UNAPPLIED - extra * MAX_UNAPPLIED / MAX_UNAPPLIED_DIALS;
    let second = hold_until_still(&mut desk.events, extra + second_messages).await;
    assert_eq!(
        (second.dials, second.messages),
        (extra, second_messages),
        "after the first were let go"
    );

    // And the rest, once those are let go too: nothing was lost or refused.
    drop(second.events);
    let third = hold_until_still(&mut desk.events, messages - second_messages).await;
    assert_eq!(
        (third.dials, third.messages),
        (0, messages - second.messages)
    );
    let failures: Vec<_> = third
        .events
        .iter()
        .filter(|e| matches!(e, LinkEvent::Failure(_) | LinkEvent::Refused { .. }))
        .collect();
    assert!(failures.is_empty(), "{failures:?}");
    let _ws = tokio::time::timeout(desk::WAIT, sender)
        .await
        .unwrap()
        .unwrap();
    desk.stop().await;
}
