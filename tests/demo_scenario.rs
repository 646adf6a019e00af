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
