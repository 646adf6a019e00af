//! Realistic dials for the dial-log bench and the memory example: the phone-line ops of
//! `phone-line.md` ("Request and response shapes") with requests and responses of about 600 bytes
//! of text per dial, from a fixed-seed generator (same set every run).

use serde_json::json;
use switchboard::dials::{Dial, DialOutcome, JsonText, Retention};

/// Epoch ms of the first sample dial.
pub(crate) const START_MS: i64 = 1_760_000_000_000;

struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
}

const WORDS: [&str; 16] = [
    "lantern", "harbour", "quiet", "meadow", "cipher", "amber", "river", "falcon", "velvet",
    "summit", "ember", "willow", "orbit", "thistle", "marble", "cobalt",
];

fn words(r: &mut Lcg, n: usize) -> String {
    (0..n)
        .map(|_| WORDS[(r.next() % 16) as usize])
        .collect::<Vec<_>>()
        .join(" ")
}

/// `n` dials with ids `{prefix}{i}`, one op mix, ~600 bytes of text each.
pub(crate) fn sample_dials(prefix: &str, n: usize) -> Vec<Dial> {
    let mut r = Lcg(0x5eed);
    let phones = ["dev_pixel8a_01", "dev_galaxys24_7"];
    let callees = ["lumirealm", "lorekeeper", "chatvault"];
    (0..n)
        .map(|i| {
            let callee = callees[(r.next() % 3) as usize];
            let item = format!("item_{:06}", r.next() % 50_000);
            let (op, request, response) = match r.next() % 6 {
                0 => (
                    "read_item",
                    json!({"op": "read_item", "userId": "user_01HZX3K9", "surfaceId": "module_envelope",
                           "itemId": item, "field": "payload.description", "callId": format!("c{i}")}),
                    json!({"value": words(&mut r, 50), "meta": {"updatedAt": 1_759_990_000_000_i64 + i as i64}}),
                ),
                1 => (
                    "list_items",
                    json!({"op": "list_items", "userId": "user_01HZX3K9", "surfaceId": "module_envelope",
                           "characterId": "char_7f3a", "callId": format!("c{i}")}),
                    json!({"items": (0..5).map(|k| json!({"id": format!("m{k}"), "label": words(&mut r, 4), "brief": words(&mut r, 3)})).collect::<Vec<_>>(), "total": 5}),
                ),
                2 => (
                    "grep_items",
                    json!({"op": "grep_items", "userId": "user_01HZX3K9", "surfaceId": "module_envelope",
                           "pattern": "ember|willow", "ignoreCase": true, "head": 20, "callId": format!("c{i}")}),
                    json!({"hits": (0..3).map(|k| json!({"itemId": format!("m{k}"), "fieldPath": "payload.lua_scripts[0]", "line": k + 1, "match": "ember", "preview": words(&mut r, 8)})).collect::<Vec<_>>(), "truncated": false}),
                ),
                3 => (
                    "write_field",
                    json!({"op": "write_field", "userId": "user_01HZX3K9", "surfaceId": "module_envelope",
                           "itemId": item, "field": "payload.scenario", "value": words(&mut r, 40), "callId": format!("c{i}")}),
                    json!({"ok": true}),
                ),
                4 => (
                    "system_prompt",
                    json!({"op": "system_prompt", "userId": "user_01HZX3K9", "characterId": "char_7f3a", "callId": format!("c{i}")}),
                    json!({"text": words(&mut r, 60)}),
                ),
                _ => (
                    "describe",
                    json!({"op": "describe", "callId": format!("c{i}")}),
                    json!({"extension": {"id": callee, "name": "LumiRealm", "version": "0.1.0"},
                           "surfaces": [{"id": "module_envelope", "label": "Risu modules", "scope": "per_character",
                                         "description": words(&mut r, 30)}],
                           "excludeFromSearch": ["lumirealm.source", "lumirealm.regex_scripts"]}),
                ),
            };
            let roll = r.next() % 100;
            let (outcome, duration_ms) = match roll {
                0..=84 => (DialOutcome::Ok, 5 + r.next() % 400),
                85..=91 => (DialOutcome::Ok, 1001 + r.next() % 3000),
                92..=95 => (DialOutcome::ToolError, 20 + r.next() % 200),
                96..=98 => (DialOutcome::Error, 10 + r.next() % 100),
                _ => (DialOutcome::TimedOut, 15_000),
            };
            let error = match outcome {
                DialOutcome::Ok => None,
                DialOutcome::ToolError => Some("field is derived; edit payload.source instead".into()),
                DialOutcome::Error => Some("Shared RPC endpoint \"lumirealm.phoneline\" requires requester \"lumiagent\" to inherit owner \"lumirealm\" permissions: push_notification".into()),
                DialOutcome::TimedOut => Some("no answer within 15 s".into()),
            };
            let retention = match r.next() % 10 {
                0 => Retention::Transient,
                1 => Retention::Extended,
                2 => Retention::Permanent,
                _ => Retention::Standard,
            };
            let mut d = Dial {
                id: format!("{prefix}{i:08}").into(),
                phone: phones[i % 2].into(),
                call_id: format!("c{i}").into(),
                caller: "lumiagent".into(),
                callee: callee.into(),
                endpoint: format!("{callee}.phoneline").into(),
                op: op.into(),
                request: JsonText::from_value(&request),
                start_ms: START_MS + i as i64 * 250,
                duration_ms,
                outcome,
                response: (outcome == DialOutcome::Ok || outcome == DialOutcome::ToolError)
                    .then(|| JsonText::from_value(&response)),
                error,
                retention,
                slow: false,
                spec: Default::default(),
                session: "".into(),
                seq: Default::default(),
                arrived: Default::default(),
            };
            d.normalise();
            d
        })
        .collect()
}

/// Bytes of text in a dial (ids, names, request, response, error).
#[allow(dead_code)]
pub(crate) fn text_bytes(d: &Dial) -> usize {
    d.id.len()
        + d.phone.len()
        + d.call_id.len()
        + d.caller.len()
        + d.callee.len()
        + d.endpoint.len()
        + d.op.len()
        + d.request.as_str().len()
        + d.response.as_ref().map_or(0, |r| r.as_str().len())
        + d.error.as_ref().map_or(0, |e| e.len())
}
