//! A small, valid `event.phoneline.dial` as a phone sends it (about 600 bytes, every field the
//! one-pass reader takes), for tests and benches that need many of them.
#![allow(dead_code)]

use serde_json::{json, Value};
use switchboard::link::phone_client::{envelope, PhoneIdentity};
use switchboard::link::rfc3339_ms;

/// Dial `seq` of `me` in `session` (`ses_...`): `dedup` `dial-<seq>`, stamped
/// 1 790 000 000 000 + `seq` ms, a `describe` of LumiRealm whose request carries an empty
/// `pad` (a caller may fill it in the text to make the frame larger).
pub(crate) fn small_dial(me: &PhoneIdentity, seq: u64, session: &str) -> Value {
    let ts = rfc3339_ms(1_790_000_000_000 + seq);
    let mut v = envelope(
        "event.phoneline.dial",
        Some(&me.entity_id()),
        json!({
            "seq": seq, "dedup": format!("dial-{seq}"), "call_id": format!("c{seq}"),
            "caller": "lumiagent", "callee": "lumirealm", "endpoint": "lumirealm.phoneline",
            "op": "describe", "request": {"op": "describe", "pad": ""},
            "started_at": ts, "duration_ms": 3, "outcome": "ok", "response": {"name": "LumiRealm"}
        }),
    );
    v["ts"] = json!(ts);
    v["session"] = json!(session);
    v["device"] = json!(me.device_id());
    v["generation"] = json!(1);
    v["provenance"] = json!({"sensor": format!("{}:phoneline", me.device_id()), "captured_at": ts});
    v["labels"] = json!({"consent": "product_operation", "retention": "standard"});
    v
}
