//! The embedded demo scenario is made from the real corpora and still matches them
//! (`scripts/gen-demo-scenario.py` writes it; this test fails if the corpus or the file drift).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use switchboard::phone::demo::DEMO_SCENARIO;

fn corpus(path: &str) -> Value {
    let p = format!("{}/../shared/corpus/{path}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn messages() -> Vec<Value> {
    DEMO_SCENARIO
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["msg"].clone())
        .collect()
}

#[test]
fn demo_uses_the_real_describe_manifest_error_texts_and_tools() {
    let msgs = messages();
    let describe = corpus("lumiverse/lumirealm.describe.json");
    let dials: Vec<&Value> = msgs
        .iter()
        .filter(|m| m["type"] == "event.phoneline.dial")
        .collect();
    let realm_describe = dials
        .iter()
        .find(|d| d["payload"]["op"] == "describe" && d["payload"]["callee"] == "lumirealm")
        .unwrap();
    assert_eq!(realm_describe["payload"]["response"], describe);
    for op in ["list_items", "read_item", "grep_items"] {
        assert!(dials.iter().any(|d| d["payload"]["op"] == op), "{op}");
    }
    // The failing dial carries a host error text of the corpus, word for word.
    let host: Vec<String> = corpus("lumiverse/host-errors.json")["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["input"].as_str().unwrap().to_string())
        .collect();
    let failed = dials
        .iter()
        .find(|d| d["payload"]["outcome"] == "error")
        .unwrap();
    assert!(host.contains(&failed["payload"]["error"].as_str().unwrap().to_string()));
    let probe = msgs
        .iter()
        .find(|m| m["type"] == "event.bridge.status")
        .unwrap();
    assert!(host.contains(&probe["payload"]["error"].as_str().unwrap().to_string()));
    // Declared permissions are the spindle.json ones.
    let settings = msgs
        .iter()
        .find(|m| m["type"] == "event.phoneline.settings")
        .unwrap();
    for (id, file) in [
        ("lumiagent", "lumiverse/lumiagent.spindle.json"),
        ("lumirealm", "lumiverse/lumirealm.spindle.json"),
    ] {
        let line = settings["payload"]["lines"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["identifier"] == id)
            .unwrap();
        assert_eq!(line["permissions"], corpus(file)["permissions"], "{id}");
    }
    // OpenPhone tools with their real risk.
    let tools = corpus("ifp1/openphone-tools.ifp1.json");
    let risk_of = |t: &str| {
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["tool"] == t)
            .unwrap()["risk"]
            .clone()
    };
    let proposals: Vec<&Value> = msgs
        .iter()
        .filter(|m| m["type"] == "action.propose")
        .collect();
    for t in ["messages.send", "calendar.add"] {
        let p: Vec<&&Value> = proposals
            .iter()
            .filter(|p| p["payload"]["tool"] == t)
            .collect();
        assert!(!p.is_empty(), "{t}");
        for x in p {
            assert_eq!(x["payload"]["risk"], risk_of(t), "{t}");
        }
    }
    let actions: Vec<&str> = proposals
        .iter()
        .filter(|p| p["payload"]["tool"] == "phone_action")
        .map(|p| p["payload"]["params"]["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["alarm", "navigate", "add_stop", "sms_draft"]);
}

/// The demo's dials follow phone-line.md, except the three marked NOT TO SPEC in the generator
/// (so the Live dials view shows its marks on first launch); LumiRealm's extension op is named
/// as one, not an error.
#[test]
fn demo_dials_follow_the_spec_but_three() {
    use switchboard::dial::conformance::{check_parts, DialParts, OpClass, ScopeBook};
    use switchboard::dials::DialOutcome;
    let mut broken = Vec::new();
    let mut extension_ops = 0;
    for m in messages()
        .iter()
        .filter(|m| m["type"] == "event.phoneline.dial")
    {
        let p = &m["payload"];
        let parts = DialParts {
            op: p["op"].as_str().unwrap(),
            callee: p["callee"].as_str().unwrap(),
            call_id: p["call_id"].as_str().unwrap_or(""),
            outcome: DialOutcome::parse(p["outcome"].as_str().unwrap()).unwrap(),
        };
        let c = check_parts(
            &parts,
            &p["request"],
            p.get("response"),
            ScopeBook::builtin(),
        );
        if c.op_class == OpClass::LumiRealmExtension {
            extension_ops += 1;
        }
        if !c.to_spec() {
            broken.push((p["dedup"].as_str().unwrap().to_string(), c.findings));
        }
    }
    let names: Vec<&str> = broken.iter().map(|b| b.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "{{id:dial:read_old_shape}}",
            "{{id:dial:grep_old_shape}}",
            "{{id:dial:list_no_total}}"
        ],
        "{broken:#?}"
    );
    assert_eq!(extension_ops, 1);
    let paths: Vec<&str> = broken[0].1.iter().map(|f| f.path.as_str()).collect();
    assert!(
        paths.contains(&"request.surfaceId") && paths.contains(&"response.value"),
        "{paths:?}"
    );
}
