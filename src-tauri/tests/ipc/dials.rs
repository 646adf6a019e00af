//! The "Live dials" commands through IPC under tauri's mock runtime, on dials ingested into the
//! app's own dial log; and the channel forwarding of a live view (snapshot, batches, merged
//! count, end on a failed send).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use common::request;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use switchboard::app::dials::{forward, DialBatchMsg, ForwardEnd};
use switchboard::app::App;
use switchboard::dials::{
    Dial, DialFilter, DialLog, DialLogConfig, DialOutcome, JsonText, Retention, SubscribeOptions,
};
use tauri::ipc::{Channel, InvokeResponseBody};
use tauri::test::get_ipc_response;
use tauri::{Manager, WebviewWindowBuilder};

const PERMISSION_TEXT: &str = "Shared RPC endpoint \"lumirealm.phoneline\" requires requester \"lumiagent\" to inherit owner \"lumirealm\" permissions: push_notification";

#[allow(clippy::too_many_arguments)]
fn dial(
    id: &str,
    op: &str,
    start_ms: i64,
    duration_ms: u64,
    outcome: DialOutcome,
    error: Option<&str>,
) -> Dial {
    Dial {
        id: id.into(),
        phone: "dev_test".into(),
        call_id: format!("call-{id}").into(),
        caller: "lumiagent".into(),
        callee: "lumirealm".into(),
        endpoint: "lumirealm.phoneline".into(),
        op: op.into(),
        request: JsonText::from_value(
            &json!({ "op": op, "callId": format!("call-{id}"), "userId": "u1" }),
        ),
        start_ms,
        duration_ms,
        outcome,
        response: (outcome == DialOutcome::Ok)
            .then(|| JsonText::from_value(&json!({ "ok": true }))),
        error: error.map(Into::into),
        retention: Retention::Permanent,
        slow: false,
        spec: Default::default(),
        session: "".into(),
        seq: Default::default(),
        arrived: Default::default(),
    }
}

/// Six dials with known answers: 3 read_item (durations 100, 300, 2000 — the last slow and
/// failed on permissions), 2 describe (ok 50; timed out 15000), 1 write_field tool error.
fn known_dials() -> Vec<Dial> {
    vec![
        dial("d1", "read_item", 1_000, 100, DialOutcome::Ok, None),
        dial("d2", "describe", 2_000, 50, DialOutcome::Ok, None),
        dial("d3", "read_item", 3_000, 300, DialOutcome::Ok, None),
        dial(
            "d4",
            "read_item",
            4_000,
            2_000,
            DialOutcome::Error,
            Some(PERMISSION_TEXT),
        ),
        dial(
            "d5",
            "describe",
            5_000,
            15_000,
            DialOutcome::TimedOut,
            Some("phoneline dial to 'lumirealm' timed out after 15000ms"),
        ),
        dial(
            "d6",
            "write_field",
            6_000,
            80,
            DialOutcome::ToolError,
            Some("unknown op: nope"),
        ),
    ]
}

fn ids(page: &Value) -> Vec<String> {
    page["dials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn dials_commands_answer_through_ipc() {
    let home = tempfile::tempdir().unwrap();
    let app = common::app_in(home.path(), false);
    let window = WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .unwrap();
    let call = |cmd: &str, body: Value| -> Result<Value, Value> {
        get_ipc_response(&window, request(cmd, body)).map(|r| r.deserialize::<Value>().unwrap())
    };

    // The app's own log: ingest known dials through the handle the hub will get.
    let log = app.state::<Arc<App>>().dials().unwrap().log.clone();
    let verdicts = tauri::async_runtime::block_on(log.ingest_batch(known_dials())).unwrap();
    assert_eq!(verdicts.len(), 6);

    // Query: newest first; filters by op, slow, timed out and text.
    let all = call("dials_query", json!({})).unwrap();
    assert_eq!(all["total"], 6);
    assert_eq!(ids(&all), ["d6", "d5", "d4", "d3", "d2", "d1"]);
    let read = call("dials_query", json!({ "filter": { "op": "read_item" } })).unwrap();
    assert_eq!(ids(&read), ["d4", "d3", "d1"]);
    let slow = call("dials_query", json!({ "filter": { "slow": true } })).unwrap();
    assert_eq!(ids(&slow), ["d5", "d4"]);
    let timed = call("dials_query", json!({ "filter": { "timed_out": true } })).unwrap();
    assert_eq!(ids(&timed), ["d5"]);
    let text = call(
        "dials_query",
        json!({ "filter": { "text": "PUSH_notification" } }),
    )
    .unwrap();
    assert_eq!(ids(&text), ["d4"]);
    let paged = call(
        "dials_query",
        json!({ "filter": { "limit": 2, "offset": 1 } }),
    )
    .unwrap();
    assert_eq!(
        (ids(&paged), paged["total"].clone()),
        (vec!["d5".to_string(), "d4".to_string()], json!(6))
    );
    // The request crosses as real JSON, not a string.
    assert_eq!(all["dials"][5]["request"]["callId"], "call-d1");

    // Stats per op, sorted by op, nearest-rank percentiles.
    let stats = call("dials_stats", json!({})).unwrap();
    let ops: Vec<&str> = stats
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["op"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["describe", "read_item", "write_field"]);
    let ri = &stats[1];
    assert_eq!(ri["count"], 3);
    assert_eq!(ri["errors"], 1);
    assert!((ri["error_rate"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-9);
    assert_eq!(
        (
            ri["p50_ms"].clone(),
            ri["p95_ms"].clone(),
            ri["p99_ms"].clone()
        ),
        (json!(300), json!(2000), json!(2000))
    );
    assert_eq!(stats[0]["timed_out"], 1);
    assert_eq!(stats[2]["tool_errors"], 1);

    // One whole dial, found by id (with and without the start hint).
    let d = call("dials_get", json!({ "id": "d3", "startMs": 3000 })).unwrap();
    assert_eq!(d["request"]["op"], "read_item");
    assert_eq!(
        call("dials_get", json!({ "id": "d3" })).unwrap()["id"],
        "d3"
    );
    assert_eq!(
        call("dials_get", json!({ "id": "d3", "startMs": 1 })).unwrap(),
        Value::Null
    );

    // The banner of the dial that failed on permissions; none for the others. These dials went
    // straight into the log, not through a phone's hub: the banner is derived, and says so.
    let b = call("dial_banner", json!({ "dialId": "d4" })).unwrap();
    assert_eq!(b["origin"], "derived");
    assert_eq!(b["standing"], Value::Null);
    let b = &b["banner"];
    assert_eq!(
        b["message"],
        "LumiAgent is missing push_notification, required for LumiRealm communication."
    );
    assert_eq!(b["missing_extension"], "lumiagent");
    assert_eq!(b["grantable"], json!(["push_notification"]));
    for other in ["d1", "d5", "d6", "missing"] {
        assert_eq!(
            call("dial_banner", json!({ "dialId": other })).unwrap(),
            Value::Null,
            "{other}"
        );
    }

    // Export: a relative path lands in <data>/exports; one dial per line, newest first.
    let ex = call(
        "dials_export",
        json!({ "request": { "filter": {}, "path": "capture.jsonl" } }),
    )
    .unwrap();
    let written = home.path().join("data/exports/capture.jsonl");
    assert_eq!(ex["path"], written.display().to_string());
    assert_eq!(ex["lines"], 6);
    let text = std::fs::read_to_string(&written).unwrap();
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(
        (text.lines().count(), first["id"].clone()),
        (6, json!("d6"))
    );
    let ex2 = call(
        "dials_export",
        json!({ "request": { "filter": { "op": "describe" }, "path": "describe.jsonl" } }),
    )
    .unwrap();
    assert_eq!(ex2["lines"], 2);
    // The same name again is refused (the window asks first), and replaced when asked to.
    let again = |replace: bool| {
        call(
            "dials_export",
            json!({ "request": { "filter": { "op": "read_item" }, "path": "describe.jsonl", "replace": replace } }),
        )
    };
    let described = home.path().join("data/exports/describe.jsonl");
    let before = std::fs::read_to_string(&described).unwrap();
    let err = again(false).unwrap_err();
    assert_eq!(err["kind"], "conflict", "{err}");
    assert_eq!(std::fs::read_to_string(&described).unwrap(), before);
    let ex3 = again(true).unwrap();
    assert_ne!(std::fs::read_to_string(&described).unwrap(), before);
    assert_eq!(
        std::fs::read_to_string(&described).unwrap().lines().count() as u64,
        ex3["lines"].as_u64().unwrap()
    );
    let err = call("dials_export", json!({ "request": { "path": "  " } })).unwrap_err();
    assert_eq!(err["kind"], "invalid_input");
    let err = call(
        "dials_export",
        json!({ "request": { "path": home.path().join("no/such/dir/x.jsonl") } }),
    )
    .unwrap_err();
    assert_eq!(err["kind"], "io");
    assert!(
        err["message"].as_str().unwrap().contains("x.jsonl"),
        "{err}"
    );

    // Import into the read-only view: same answers as live, separate query space.
    let err = call("dials_query", json!({ "source": "imported" })).unwrap_err();
    assert_eq!(err["kind"], "not_found");
    let im = call("dials_import", json!({ "path": written })).unwrap();
    assert_eq!(im["dials"], 6);
    let imported = call("dials_query", json!({ "source": "imported" })).unwrap();
    assert_eq!(ids(&imported), ids(&all));
    assert_eq!(
        call("dials_stats", json!({ "source": "imported" })).unwrap(),
        stats
    );
    assert_eq!(
        call(
            "dial_banner",
            json!({ "dialId": "d4", "source": "imported" })
        )
        .unwrap()["banner"]["missing_extension"],
        "lumiagent"
    );
    let status = call("dials_status", json!({})).unwrap();
    assert_eq!(status["imported"]["dials"], 6);
    assert_eq!(status["live"]["held"], 6);

    // A bad file imports nothing and keeps the earlier capture; the error names the line.
    let bad = home.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        format!("{}\n{{\"id\":\"x\"}}\n", text.lines().next().unwrap()),
    )
    .unwrap();
    let err = call("dials_import", json!({ "path": bad })).unwrap_err();
    assert_eq!(err["kind"], "invalid_input");
    assert!(err["message"].as_str().unwrap().contains("line 2"), "{err}");
    assert_eq!(
        call("dials_query", json!({ "source": "imported" })).unwrap()["total"],
        6
    );

    // Clearing the live log leaves the imported capture alone.
    assert_eq!(
        call("dials_clear", json!({ "scope": "memory" })).unwrap(),
        0
    );
    // The view's history is empty after it; the ring a support bundle reads keeps its dials.
    let cleared = call("dials_history", json!({ "query": { "filter": "" } })).unwrap();
    assert_eq!(cleared["rows"], json!([]), "{cleared}");
    assert_eq!(call("dials_query", json!({})).unwrap()["total"], 6);
    assert_eq!(
        call("dials_query", json!({ "source": "imported" })).unwrap()["total"],
        6
    );
    // Nothing was deleted: the history still knows the dials (replays are dropped).
    let again = tauri::async_runtime::block_on(log.ingest(known_dials().remove(0))).unwrap();
    assert_eq!(again, switchboard::dials::IngestVerdict::Duplicate);
    call("dials_close_import", json!({})).unwrap();
    assert_eq!(
        call("dials_query", json!({ "source": "imported" })).unwrap_err()["kind"],
        "not_found"
    );

    // A live view over a real tauri Channel: snapshot first, then the new dial; unsubscribe ends it.
    let got: Arc<Mutex<Vec<Value>>> = Arc::default();
    let sink = Arc::clone(&got);
    let channel = Channel::<DialBatchMsg>::new(move |body| {
        if let InvokeResponseBody::Json(s) = body {
            sink.lock().unwrap().push(serde_json::from_str(&s).unwrap());
        }
        Ok(())
    });
    let core = app.state::<Arc<App>>();
    let state = core.dials().unwrap();
    let sub = tauri::async_runtime::block_on(
        log.subscribe(DialFilter::default(), SubscribeOptions::default()),
    )
    .unwrap();
    let id = state.start_forwarding(sub, move |m| channel.send(m));
    tauri::async_runtime::block_on(log.ingest(dial(
        "n1",
        "describe",
        9_000,
        20,
        DialOutcome::Ok,
        None,
    )))
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while got.lock().unwrap().len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let msgs = got.lock().unwrap().clone();
    assert_eq!(msgs[0]["kind"], "snapshot");
    assert_eq!(msgs[0]["id"], id);
    // The ring's snapshot: Clear view above hid its dials from the view's history only.
    assert_eq!(msgs[0]["total"], 6);
    assert_eq!(msgs[1]["kind"], "batch");
    assert_eq!(msgs[1]["rows"][0]["id"], "n1");
    assert_eq!(state.subscriptions(), 1);
    assert_eq!(
        call("dials_unsubscribe", json!({ "id": id })).unwrap(),
        true
    );
    assert_eq!(
        call("dials_unsubscribe", json!({ "id": id })).unwrap(),
        false
    );
    assert_eq!(state.subscriptions(), 0);
}

/// The forwarder with a plain closure sink: the snapshot comes first (oldest first), every new
/// dial arrives exactly once in order, a slow sink makes the log merge batches and the merged
/// count reaches the sink, and a failed send ends the forwarding (and the subscription).
#[test]
fn forwarding_reports_merged_batches_and_stops_on_failed_send() {
    tauri::async_runtime::block_on(async {
        let log = DialLog::spawn(DialLogConfig::default()).unwrap();
        log.ingest_batch(vec![
            dial("old1", "describe", 10, 5, DialOutcome::Ok, None),
            dial("old2", "describe", 20, 5, DialOutcome::Ok, None),
        ])
        .await
        .unwrap();
        let sub = log
            .subscribe(
                DialFilter::default(),
                SubscribeOptions {
                    interval: Some(Duration::from_millis(5)),
                    queue: Some(1),
                    max_pending: Some(100_000),
                },
            )
            .await
            .unwrap();
        let got: Arc<Mutex<Vec<DialBatchMsg>>> = Arc::default();
        let sink_got = Arc::clone(&got);
        let mut calls = 0;
        let task = tauri::async_runtime::spawn(forward(7, sub, move |m: DialBatchMsg| {
            calls += 1;
            sink_got.lock().unwrap().push(m);
            if calls == 2 {
                // A slow window: the log must keep going and merge what waits.
                std::thread::sleep(Duration::from_millis(400));
            }
            Ok::<(), ()>(())
        }));
        let mut next = 0;
        for _ in 0..15 {
            let chunk: Vec<Dial> = (next..next + 10)
                .map(|i| {
                    dial(
                        &format!("n{i:03}"),
                        "read_item",
                        100 + i,
                        10,
                        DialOutcome::Ok,
                        None,
                    )
                })
                .collect();
            next += 10;
            log.ingest_batch(chunk).await.unwrap();
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let n: usize = got
                .lock()
                .unwrap()
                .iter()
                .map(|m| match m {
                    DialBatchMsg::Batch { rows, .. } => rows.len(),
                    DialBatchMsg::Snapshot { .. } => 0,
                })
                .sum();
            if n >= 150 || Instant::now() > deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let msgs = got.lock().unwrap().clone();
        match &msgs[0] {
            DialBatchMsg::Snapshot { id, rows, total } => {
                assert_eq!((*id, *total), (7, 2));
                let r: Vec<&str> = rows.iter().map(|r| &*r.id).collect();
                assert_eq!(r, ["old1", "old2"], "snapshot is oldest first");
            }
            other => panic!("first message is not the snapshot: {other:?}"),
        }
        let mut seen = Vec::new();
        let mut merged = 0;
        for m in &msgs[1..] {
            match m {
                DialBatchMsg::Batch {
                    rows,
                    merged: mg,
                    skipped,
                    left_out,
                } => {
                    assert_eq!(*skipped, 0);
                    assert!(left_out.is_empty(), "forward sends every row");
                    merged += mg;
                    seen.extend(rows.iter().map(|r| r.id.to_string()));
                }
                other => panic!("second snapshot: {other:?}"),
            }
        }
        let expected: Vec<String> = (0..150).map(|i| format!("n{i:03}")).collect();
        assert_eq!(seen, expected, "every dial once, in arrival order");
        assert!(
            merged > 0,
            "a slow sink made the log merge batches: {msgs:?}"
        );
        assert!(
            msgs.len() < 2 + 15,
            "merging means fewer batches than ingests"
        );

        // A sink that fails ends the forwarding; the log drops the subscriber.
        let sub = log
            .subscribe(DialFilter::default(), SubscribeOptions::default())
            .await
            .unwrap();
        let failing = tauri::async_runtime::spawn(forward(8, sub, |m: DialBatchMsg| match m {
            DialBatchMsg::Snapshot { .. } => Ok(()),
            DialBatchMsg::Batch { .. } => Err("window closed"),
        }));
        log.ingest(dial("late", "describe", 999, 1, DialOutcome::Ok, None))
            .await
            .unwrap();
        assert_eq!(failing.await.unwrap(), ForwardEnd::SinkClosed);
        log.ingest(dial("later", "describe", 1000, 1, DialOutcome::Ok, None))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(
            log.status().await.unwrap().subscribers,
            1,
            "only the first view is left"
        );
        log.shutdown().await.unwrap();
        assert_eq!(task.await.unwrap(), ForwardEnd::LogClosed);
    });
}

/// The window's line view gets at most `max_rows` of each batch's newest dials; the older ones
/// are named by sequence number in `left_out` (never lost from the count), and a batch within
/// the bound is whole.
#[test]
fn forwarding_newest_sends_the_newest_rows_and_names_the_rest() {
    use switchboard::app::dials::{forward_newest, WINDOW_BATCH_ROWS};
    tauri::async_runtime::block_on(async {
        let log = DialLog::spawn(DialLogConfig::default()).unwrap();
        let sub = log
            .subscribe(
                DialFilter::default(),
                SubscribeOptions {
                    // Long enough that one ingest of 50 arrives as one batch.
                    interval: Some(Duration::from_millis(300)),
                    ..SubscribeOptions::default()
                },
            )
            .await
            .unwrap();
        let got: Arc<Mutex<Vec<DialBatchMsg>>> = Arc::default();
        let sink_got = Arc::clone(&got);
        let task = tauri::async_runtime::spawn(forward_newest(
            3,
            sub,
            Some(20),
            move |m: DialBatchMsg| {
                sink_got.lock().unwrap().push(m);
                Ok::<(), ()>(())
            },
        ));
        let batch = |from: usize, n: usize| -> Vec<Dial> {
            (from..from + n)
                .map(|i| {
                    let id = format!("d{i:03}");
                    dial(&id, "read_item", 100 + i as i64, 5, DialOutcome::Ok, None)
                })
                .collect()
        };
        log.ingest_batch(batch(0, 50)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(700)).await;
        log.ingest_batch(batch(50, 7)).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let counted = |msgs: &[DialBatchMsg]| -> usize {
            msgs.iter()
                .map(|m| match m {
                    DialBatchMsg::Batch {
                        rows,
                        skipped,
                        left_out,
                        ..
                    } => rows.len() + left_out.len() + *skipped as usize,
                    DialBatchMsg::Snapshot { .. } => 0,
                })
                .sum()
        };
        while counted(&got.lock().unwrap()) < 57 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let msgs = got.lock().unwrap().clone();
        assert_eq!(counted(&msgs), 57, "every dial is sent or named: {msgs:?}");
        let mut sent = Vec::new();
        let mut named = Vec::new();
        for m in &msgs[1..] {
            let DialBatchMsg::Batch {
                rows,
                skipped,
                left_out,
                ..
            } = m
            else {
                panic!("second snapshot: {m:?}");
            };
            assert_eq!(*skipped, 0, "the log dropped nothing");
            assert!(rows.len() <= 20, "a batch of {} rows", rows.len());
            if !left_out.is_empty() {
                assert_eq!(rows.len(), 20, "rows are left out only past the bound");
                assert!(
                    left_out.windows(2).all(|w| w[0] < w[1])
                        && left_out.last() < rows.first().map(|r| &r.seq),
                    "left out: older than the rows sent, oldest first: {left_out:?}"
                );
            }
            sent.extend(rows.iter().map(|r| r.id.to_string()));
            named.extend(left_out.iter().copied());
        }
        // The first batch's 30 oldest are named, its 20 newest sent; the second batch whole.
        let want: Vec<String> = (30..57).map(|i| format!("d{i:03}")).collect();
        assert_eq!(sent, want, "the newest of each batch, oldest first");
        assert_eq!(named.len(), 30);
        // The names are the dials' own sequence numbers: the log's page holds them.
        let page = log.query(DialFilter::default()).await.unwrap();
        let mut old: Vec<u64> = page
            .dials
            .iter()
            .filter(|d| d.id.as_ref() < "d030")
            .map(|d| d.seq.0)
            .collect();
        old.sort_unstable();
        assert_eq!(named, old);
        log.shutdown().await.unwrap();
        assert_eq!(task.await.unwrap(), ForwardEnd::LogClosed);
    });
    // The window's bound covers a tall window's rows with room to scroll.
    assert!((80..=200).contains(&WINDOW_BATCH_ROWS));
}

/// Streams `per_tick` new dials into `log` every `every`, `ticks` times, through
/// [`forward_paced`] with `pace`, then waits `linger` before the log ends; returns each message
/// with the moment the sink got it, and the moment each tick's dials were ingested.
fn paced_stream(
    pace: switchboard::app::dials::WindowPace,
    ticks: usize,
    per_tick: usize,
    every: Duration,
    linger: Duration,
) -> (Vec<(Instant, DialBatchMsg)>, Vec<Instant>) {
    use switchboard::app::dials::forward_paced;
    tauri::async_runtime::block_on(async {
        let log = DialLog::spawn(DialLogConfig::default()).unwrap();
        let sub = log
            .subscribe(
                DialFilter::default(),
                SubscribeOptions {
                    interval: Some(pace.handover),
                    ..SubscribeOptions::default()
                },
            )
            .await
            .unwrap();
        let mut ingested = Vec::with_capacity(ticks);
        let got: Arc<Mutex<Vec<(Instant, DialBatchMsg)>>> = Arc::default();
        let sink_got = Arc::clone(&got);
        let task = tauri::async_runtime::spawn(forward_paced(
            4,
            sub,
            Some(120),
            pace,
            move |m: DialBatchMsg| {
                sink_got.lock().unwrap().push((Instant::now(), m));
                Ok::<(), ()>(())
            },
        ));
        for t in 0..ticks {
            let batch: Vec<Dial> = (0..per_tick)
                .map(|k| {
                    let i = t * per_tick + k;
                    dial(
                        &format!("d{i:06}"),
                        "read_item",
                        100 + i as i64,
                        5,
                        DialOutcome::Ok,
                        None,
                    )
                })
                .collect();
            log.ingest_batch(batch).await.unwrap();
            ingested.push(Instant::now());
            tokio::time::sleep(every).await;
        }
        tokio::time::sleep(linger).await;
        // The log's end sends what the forwarder still holds.
        log.shutdown().await.unwrap();
        assert_eq!(task.await.unwrap(), ForwardEnd::LogClosed);
        let out = got.lock().unwrap().clone();
        (out, ingested)
    })
}

/// The ids sent (in order) and the sequence numbers named in `left_out`, over all batches.
fn paced_rows(msgs: &[(Instant, DialBatchMsg)]) -> (Vec<String>, usize) {
    let mut ids = Vec::new();
    let mut named = 0;
    for (_, m) in msgs {
        if let DialBatchMsg::Batch {
            rows,
            left_out,
            skipped,
            ..
        } = m
        {
            assert_eq!(*skipped, 0, "the log dropped nothing");
            ids.extend(rows.iter().map(|r| r.id.to_string()));
            named += left_out.len();
        }
    }
    (ids, named)
}

/// The window's pace: a light stream goes to the window dial by dial, each batch as soon as it
/// comes (spaced by the quick pace, not the busy one); every dial is sent once, in order.
#[test]
fn paced_forwarding_sends_a_light_stream_at_once() {
    use switchboard::app::dials::WindowPace;
    let pace = WindowPace::WINDOW;
    assert!(
        pace.quick * 4 <= pace.busy,
        "the quick pace is the short one: {pace:?}"
    );
    let (msgs, _) = paced_stream(pace, 10, 1, Duration::from_millis(100), Duration::ZERO);
    let (ids, named) = paced_rows(&msgs);
    let want: Vec<String> = (0..10).map(|i| format!("d{i:06}")).collect();
    assert_eq!(ids, want, "every dial once, oldest first");
    assert_eq!(named, 0, "no batch over the bound");
    // 10 dials 100 ms apart: spaced by the busy pace they would come in about 5 batches.
    let batches = msgs.len() - 1;
    assert!(
        batches >= 8,
        "a light stream was held back: {batches} batches for 10 dials 100 ms apart"
    );
}

/// The window's pace under load: batches come at most one a `busy` (the forwarder holds and
/// merges what the log hands it meanwhile) unless the stream paused for `quiet` before one, and
/// never closer than `quick`; no dial is lost: each is sent or named in `left_out`.
#[test]
fn paced_forwarding_spaces_a_heavy_stream() {
    use switchboard::app::dials::WindowPace;
    let pace = WindowPace::WINDOW;
    // 8 dials every 2 ms: about 4 000 a second (at most; fewer on a busy machine, still far
    // above the pace's threshold) for a second and a half.
    assert!(pace.busy_rows_per_s < 2000, "{pace:?}");
    assert!(
        pace.handover * 2 <= pace.quiet && pace.quiet < pace.quick,
        "a pause is two missed handovers, shorter than the quick pace: {pace:?}"
    );
    let (msgs, ingested) = paced_stream(pace, 750, 8, Duration::from_millis(2), Duration::ZERO);
    let (ids, named) = paced_rows(&msgs);
    assert_eq!(ids.len() + named, 6000, "every dial sent or named");
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "rows oldest first, none twice"
    );
    let batches: Vec<Instant> = msgs[1..].iter().map(|(t, _)| *t).collect();
    // Once the rate is known (after its first 200 ms), two batches are at least `busy` apart,
    // but for a batch after the stream paused (no handover for `quiet`, so no dial for
    // `quiet - handover` at least: the machine stalled the stream); the last one may come
    // early (the log's end sends what is held).
    let first = batches[0];
    let steady: Vec<Instant> = batches[..batches.len() - 1]
        .iter()
        .copied()
        .filter(|t| *t >= first + Duration::from_millis(200))
        .collect();
    let settled: Vec<&[Instant]> = steady.windows(2).collect();
    assert!(
        settled.len() >= 3,
        "too few batches under load: {}",
        batches.len()
    );
    let paused_between = |a: Instant, b: Instant| {
        ingested
            .windows(2)
            .any(|g| g[1] > a && g[0] < b && g[1] - g[0] >= pace.quiet - pace.handover)
    };
    let mut spaced = 0;
    for w in &settled {
        let apart = w[1] - w[0];
        if apart + Duration::from_millis(5) >= pace.busy {
            spaced += 1;
        } else {
            assert!(
                paused_between(w[0], w[1]),
                "two batches {apart:?} apart under load with no pause in the stream between them (busy pace {:?})",
                pace.busy
            );
            assert!(
                apart >= pace.quick,
                "two batches {apart:?} apart: closer than the quick pace {:?}",
                pace.quick
            );
        }
    }
    // Every early batch followed a pause; a loaded machine pauses the stream often, so how
    // many are early says nothing, but some a busy pace apart show the pace took hold (a
    // forwarder that ignored it would send every handover or every quick pace).
    assert!(
        spaced >= 2,
        "under load batches are a busy pace apart: {spaced} of {}",
        settled.len()
    );
}

/// A heavy stream that stops: its last dials go to the window once the stream is quiet, not a
/// busy pace after the batch before (the rows the table then shows would be ~200 ms late).
#[test]
fn paced_forwarding_sends_a_stopped_streams_last_dials_at_once() {
    use switchboard::app::dials::WindowPace;
    let pace = WindowPace::WINDOW;
    let (msgs, ingested) = paced_stream(
        pace,
        400,
        8,
        Duration::from_millis(2),
        Duration::from_millis(600),
    );
    let (ids, named) = paced_rows(&msgs);
    assert_eq!(ids.len() + named, 3200, "every dial sent or named");
    assert_eq!(ids.last().map(String::as_str), Some("d003199"));
    let last_in = *ingested.last().unwrap();
    let (last_out, last_msg) = msgs.last().unwrap();
    let DialBatchMsg::Batch { rows, .. } = last_msg else {
        panic!("the last message is a batch: {last_msg:?}")
    };
    assert_eq!(rows.last().unwrap().id.to_string(), "d003199");
    let late = *last_out - last_in;
    // The stream's end is seen `quiet` after the last handover; the busy pace would be `busy`
    // after the batch before. Half of `busy` leaves a loaded machine's timers room.
    assert!(
        late < pace.busy / 2,
        "the stream's last dials reached the window {late:?} after they were ingested (quiet {:?}, busy {:?})",
        pace.quiet,
        pace.busy
    );
}
