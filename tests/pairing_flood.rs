//! A flood of failed connections before hello: a real failure stays visible in the
//! diagnostics, and the failure events and log lines stay a few a minute, not one per attempt.
//!
//! A binary of its own: it installs a tracing subscriber for its thread and counts lines, which
//! other tests logging at the same time would make unreliable (tracing caches interest per
//! call site across threads). Binds 127.0.0.1:0; loops bounded; time is the ManualClock.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/confirm.rs"]
mod confirm;
#[path = "support/desk.rs"]
mod desk;

use std::sync::{Arc, Mutex};

use desk::{refusal, start};
use switchboard::link::diagnostics::{MAX_FAILURES_KEPT, MAX_PRE_HELLO_KEPT};
use switchboard::link::phone_client::PhoneIdentity;
use switchboard::link::FailureKind;

/// A writer counting the log lines the link writes.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Lines {
    fn matching(&self, needle: &str) -> usize {
        String::from_utf8_lossy(&self.0.lock().unwrap())
            .lines()
            .filter(|l| l.contains(needle))
            .count()
    }
}

#[tokio::test]
async fn a_flood_of_failed_connections_keeps_a_real_failure_visible_and_the_noise_bounded() {
    let lines = Lines::default();
    let sink = lines.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || sink.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    // The test's runtime is one thread: the link's tasks log through this subscriber.
    let _guard = tracing::subscriber::set_default(subscriber);

    let mut desk = start().await;
    let me = desk.pair_phone("real").await;
    // A real failure: a paired phone, after hello, sends a malformed frame.
    let mut live = desk.phone().await;
    live.hello(&me, (1, 1)).await.unwrap();
    live.send_text("{not json".into()).await.unwrap();
    let _ = refusal(live.expect("never").await);
    live.close().await;
    let real = desk.failures();
    assert_eq!(real.len(), 1, "{real:?}");
    assert_eq!(real[0].kind, FailureKind::InvalidFrame);
    let real_words = real[0].words.clone();

    // The flood: failures before hello, from one address, in one minute.
    const FLOOD: usize = 300;
    for i in 0..FLOOD {
        let mut phone = desk.phone().await;
        if i % 2 == 0 {
            let _ = phone.hello(&PhoneIdentity::generate("bot"), (1, 1)).await;
        } else {
            phone.send_text("{garbage".into()).await.unwrap();
            let _ = phone.expect("never").await;
        }
        phone.close().await;
    }
    let during = desk.failures();
    assert_eq!(
        during.len(),
        1,
        "one report for the source in its minute: {during:?}"
    );
    let d = desk.link.diagnostics();
    assert!(
        d.recent_failures
            .iter()
            .any(|f| f.kind == FailureKind::InvalidFrame && f.words == real_words),
        "the real failure was pushed out: {:?}",
        d.recent_failures
    );
    assert!(d.recent_failures.len() <= MAX_FAILURES_KEPT + MAX_PRE_HELLO_KEPT);
    let coalesced: Vec<_> = d
        .recent_failures
        .iter()
        .filter(|f| {
            f.address
                .as_deref()
                .is_some_and(|a| a.starts_with("127.0.0.1:"))
        })
        .filter(|f| f.words.contains("failed attempts before hello"))
        .collect();
    assert_eq!(coalesced.len(), 1, "{:?}", d.recent_failures);
    assert!(
        coalesced[0].words.starts_with(&format!(
            "{FLOOD} failed attempts before hello from 127.0.0.1 in the last minute"
        )),
        "{}",
        coalesced[0].words
    );

    // The next minute's first failure carries the count of the minute before.
    desk.clock.advance(60_000);
    let mut phone = desk.phone().await;
    let _ = phone.hello(&PhoneIdentity::generate("bot"), (1, 1)).await;
    phone.close().await;
    let next = desk.failures();
    assert_eq!(next.len(), 1, "{next:?}");
    assert!(
        next[0].words.starts_with(&format!(
            "{FLOOD} failed attempts before hello from 127.0.0.1 in the last minute"
        )),
        "{}",
        next[0].words
    );
    // Log lines: the real failure, one report per minute of the flood; nothing per attempt.
    let logged = lines.matching("link failure");
    assert!(
        (2..=4).contains(&logged),
        "{logged} log lines for {FLOOD} failures"
    );
    desk.stop().await;
}
