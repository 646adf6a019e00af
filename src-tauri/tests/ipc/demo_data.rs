//! `--demo` keeps the demo phone's dials out of the real dial history: the dial log of a demo
//! launch lives in `<data>/demo`, beside the demo's link data, and a normal launch's in `<data>`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use serde_json::json;
use std::sync::Arc;
use switchboard::app::App;
use switchboard::dials::{Dial, DialOutcome, JsonText, Retention};
use tauri::Manager;

fn dial(id: &str) -> Dial {
    Dial {
        id: id.into(),
        phone: "dev_demo01".into(),
        call_id: "call-1".into(),
        caller: "lumiagent".into(),
        callee: "lumirealm".into(),
        endpoint: "lumirealm.phoneline".into(),
        op: "describe".into(),
        request: JsonText::from_value(&json!({ "op": "describe" })),
        start_ms: 1_000,
        duration_ms: 12,
        outcome: DialOutcome::Ok,
        response: None,
        error: None,
        retention: Retention::Permanent,
        slow: false,
        spec: Default::default(),
        session: "".into(),
        seq: Default::default(),
        arrived: Default::default(),
    }
}

#[test]
fn a_demo_launch_keeps_its_dials_apart_from_the_real_history() {
    let home = tempfile::tempdir().unwrap();
    let app = common::app_in(home.path(), true);

    let core = app.state::<Arc<App>>();
    let state = core.dials().unwrap();
    let log = state.log.clone();
    tauri::async_runtime::block_on(async {
        log.ingest(dial("evt_demo_1")).await.unwrap();
        log.flush().await.unwrap();
    });
    let data = home.path().join("data");
    assert!(
        data.join("demo").join("dials.sqlite3").exists(),
        "the demo's dial history is in <data>/demo"
    );
    assert!(
        !data.join("dials.sqlite3").exists(),
        "a demo launch wrote the real dial history"
    );
    assert_eq!(state.export_dir, data.join("demo").join("exports"));
}
