//! A synthetic dial, deterministic from its number: for looking at the Live dials view without a
//! paired phone (the app's sample data) and for tests of every layer that holds dials.

use crate::dial::{Dial, DialOutcome, Retention};

/// Builds a synthetic dial number `i` (deterministic), for `SWITCHBOARD_SAMPLE_DIALS` and tests.
///
/// Dials start one every 50 ms back from `now_ms`; about one in 40 is slow, one in 200 times
/// out, one in 60 fails with the spec's permission error (`phone-line.md`, "Failure modes and
/// the bridge banner"), one in 50 is a `write_field` tool error. Retention is `transient`, so
/// sample dials are never written to the dial history file.
pub fn sample_dial(i: u64, count: u64, now_ms: i64) -> Dial {
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    const OPS: [&str; 8] = [
        "describe",
        "system_prompt",
        "check_write",
        "check_read",
        "list_items",
        "read_item",
        "write_field",
        "grep_items",
    ];
    const PHONES: [&str; 3] = ["dev_pixel8a", "dev_iphone15", "dev_tabs9"];
    let op = OPS
        .get((next() % 8) as usize)
        .copied()
        .unwrap_or("describe");
    let phone = PHONES
        .get((next() % 3) as usize)
        .copied()
        .unwrap_or("dev_pixel8a");
    let roll = next() % 1200;
    let item = format!("item_{:05}", next() % 5000);
    let call_id = format!("call_{i:08x}");
    let mut request = serde_json::json!({ "op": op, "callId": call_id });
    if op != "describe" {
        request["userId"] = "user_1".into();
        request["characterId"] = "char_aria".into();
    }
    if matches!(
        op,
        "list_items" | "read_item" | "write_field" | "grep_items"
    ) {
        request["surfaceId"] = "module_envelope".into();
    }
    if matches!(op, "read_item" | "write_field") {
        request["itemId"] = item.clone().into();
        request["field"] = "lumirealm.triggers".into();
    }
    if op == "write_field" {
        request["value"] = serde_json::json!({ "enabled": true, "order": i % 7 });
    }
    if op == "grep_items" {
        request["pattern"] = "setVar".into();
        request["ignoreCase"] = true.into();
    }
    let base = 20 + next() % 400;
    let (outcome, duration_ms, response, error) = if roll < 6 {
        (
            DialOutcome::TimedOut,
            15_000,
            None,
            Some("phoneline dial to 'lumirealm' timed out after 15000ms".to_string()),
        )
    } else if roll < 26 {
        (
            DialOutcome::Error,
            base / 4,
            None,
            Some(
                "Shared RPC endpoint \"lumirealm.phoneline\" requires requester \"lumiagent\" \
                 to inherit owner \"lumirealm\" permissions: push_notification"
                    .to_string(),
            ),
        )
    } else if roll < 30 {
        (
            DialOutcome::Error,
            base / 2,
            None,
            Some(format!("unknown op: {op}_v2")),
        )
    } else if op == "write_field" && roll < 54 {
        (
            DialOutcome::ToolError,
            base,
            Some(
                serde_json::json!({ "ok": false, "error": "lumirealm.triggers is regenerated; edit lumirealm.source instead" }),
            ),
            Some("lumirealm.triggers is regenerated; edit lumirealm.source instead".to_string()),
        )
    } else {
        let slow = roll > 1170;
        let d = if slow { 1_000 + next() % 4_000 } else { base };
        let response = match op {
            "describe" => {
                serde_json::json!({ "extension": { "id": "lumirealm", "name": "LumiRealm", "version": "0.1.0" }, "surfaces": [{ "id": "module_envelope", "label": "Risu modules", "scope": "per_character" }] })
            }
            "system_prompt" => serde_json::json!({ "text": "Aria keeps a journal of the realm." }),
            "check_write" | "check_read" => serde_json::json!({ "ok": true }),
            "list_items" => {
                serde_json::json!({ "items": [{ "id": item, "label": "Weather triggers" }], "total": 1 })
            }
            "read_item" => {
                serde_json::json!({ "value": { "enabled": true, "lua": "setVar('rain', 1)" } })
            }
            "write_field" => serde_json::json!({ "ok": true }),
            _ => {
                serde_json::json!({ "hits": [{ "itemId": item, "fieldPath": "lumirealm.source", "line": 12, "match": "setVar", "preview": "setVar('rain', 1)" }], "truncated": false })
            }
        };
        (DialOutcome::Ok, d, Some(response), None)
    };
    let back = i64::try_from(count.saturating_sub(i)).unwrap_or(0) * 50;
    Dial {
        id: format!("sample-{i:07}").into(),
        phone: phone.into(),
        call_id: call_id.into(),
        caller: "lumiagent".into(),
        callee: "lumirealm".into(),
        endpoint: "lumirealm.phoneline".into(),
        op: op.into(),
        request: crate::dial::JsonText::from_value(&request),
        start_ms: now_ms - back,
        duration_ms,
        outcome,
        response: response.map(|r| crate::dial::JsonText::from_value(&r)),
        error: error.map(Into::into),
        retention: Retention::Transient,
        slow: false,
        spec: Default::default(),
        session: "".into(),
        seq: Default::default(),
        arrived: Default::default(),
    }
}
