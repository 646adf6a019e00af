//! The events the shell sends to the window (`TauriHost::emit`) under tauri's mock runtime:
//! dial counts never reach it, banner notices at most one per `BANNER_NOTICE_GAP` with the
//! newest last, every other event at once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use switchboard::app::{AppEvent, Host};
use switchboard::hub::HubNotice;
use switchboard_desktop::host::{TauriHost, BANNER_NOTICE_GAP};
use switchboard_desktop::notify::Notifier;
use tauri::test::{mock_builder, mock_context, noop_assets};
use tauri::Listener;

fn raised(i: usize) -> AppEvent {
    AppEvent::Notice(HubNotice::BannerRaised {
        banner_id: "lumiagent>lumirealm.phoneline".into(),
        message: format!("failure {i}"),
    })
}

fn cleared() -> AppEvent {
    AppEvent::Notice(HubNotice::BannerCleared {
        banner_id: "lumiagent>lumirealm.phoneline".into(),
    })
}

#[test]
fn the_window_gets_no_dial_counts_and_spaced_banner_notices_with_the_newest_last() {
    let app = mock_builder()
        .build(mock_context(noop_assets()))
        .expect("the mock app builds");
    let got: Arc<Mutex<Vec<(Instant, Value)>>> = Arc::default();
    let sink = Arc::clone(&got);
    app.listen_any("switchboard://notice", move |e| {
        let v: Value = serde_json::from_str(e.payload()).unwrap_or(Value::Null);
        sink.lock().unwrap().push((Instant::now(), v));
    });
    let host = TauriHost::new(app.handle().clone(), Arc::new(Notifier::new()));
    let kinds = |got: &[(Instant, Value)]| -> Vec<String> {
        got.iter()
            .map(|(_, v)| v["kind"].as_str().unwrap_or("?").to_string())
            .collect()
    };

    tauri::async_runtime::block_on(async {
        // A dial count never goes to the window.
        host.emit(&AppEvent::Notice(HubNotice::DialCount {
            device_id: "dev_a".into(),
            total: 1,
        }));
        // A burst: 200 banner notices, raised and cleared in turn, the last one a raise.
        let started = Instant::now();
        for i in 0..199 {
            host.emit(&if i % 2 == 0 { raised(i) } else { cleared() });
        }
        host.emit(&raised(199));
        // Other notices are not held back by the banner gap.
        host.emit(&AppEvent::Notice(HubNotice::PhoneConnected {
            device_id: "dev_a".into(),
            label: "Demo phone".into(),
        }));
        let phone_at = got
            .lock()
            .unwrap()
            .iter()
            .position(|(_, v)| v["kind"] == "phone_connected");
        assert!(
            phone_at.is_some(),
            "the phone notice went at once: {:?}",
            kinds(&got.lock().unwrap())
        );
        let burst = started.elapsed();
        assert!(
            burst < BANNER_NOTICE_GAP,
            "the burst took {burst:?}: too slow to test the gap"
        );

        // The held notice follows within the gap (bounded wait).
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            let n = got
                .lock()
                .unwrap()
                .iter()
                .filter(|(_, v)| v["kind"] == "banner_raised" || v["kind"] == "banner_cleared")
                .count();
            if n >= 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Wait out one more gap: nothing else may come.
        tokio::time::sleep(BANNER_NOTICE_GAP * 2).await;
    });

    let seen = got.lock().unwrap().clone();
    let names = kinds(&seen);
    assert!(
        !names.iter().any(|k| k == "dial_count"),
        "a dial count reached the window: {names:?}"
    );
    let banners: Vec<&(Instant, Value)> = seen
        .iter()
        .filter(|(_, v)| v["kind"] == "banner_raised" || v["kind"] == "banner_cleared")
        .collect();
    assert_eq!(
        banners.len(),
        2,
        "the first at once, the newest after the gap: {names:?}"
    );
    assert_eq!(banners[0].1["message"], "failure 0");
    assert_eq!(banners[1].1["kind"], "banner_raised");
    assert_eq!(
        banners[1].1["message"], "failure 199",
        "the newest notice is the one sent"
    );
    let spacing = banners[1].0 - banners[0].0;
    assert!(
        spacing >= BANNER_NOTICE_GAP - Duration::from_millis(5),
        "two banner notices {spacing:?} apart"
    );
    assert_eq!(names.iter().filter(|k| *k == "phone_connected").count(), 1);

    // After a quiet gap, the next banner notice goes at once again.
    host.emit(&cleared());
    let last = got.lock().unwrap().last().map(|(_, v)| v["kind"].clone());
    assert_eq!(last, Some(Value::from("banner_cleared")));
}
