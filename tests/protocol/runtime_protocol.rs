//! OpenPhone runtime protocol: the real manifests and tool list from the corpus, and altered
//! copies of them written to temporary directories.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;
use switchboard::runtime::manifest::{CAPABILITIES_FILE, COMMANDS_FILE, EVENTS_FILE};
use switchboard::runtime::tools::{load_catalogue_from_dir, TOOLS_FILE};
use switchboard::runtime::{
    autonomy_table, check_manifest, cross_check_catalogue, decide_tool, effective_autonomy,
    is_runtime_manifest, load_dir, parse_manifest, Access, Autonomy, Decision, Manifest, Risk,
    RuntimeError, ToolCatalogue, ToolLookup,
};

fn corpus() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus")).to_path_buf()
}
fn openphone_dir() -> PathBuf {
    corpus().join("openphone")
}
fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}
fn real_commands() -> Value {
    read(&openphone_dir().join(COMMANDS_FILE))
}
fn real_tools() -> ToolCatalogue {
    ToolCatalogue::load(&corpus().join("ifp1").join(TOOLS_FILE)).unwrap()
}
/// A temp dir holding the two real manifests, with the commands manifest replaced by `commands`.
fn dir_with(commands: &Value) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(COMMANDS_FILE),
        serde_json::to_string_pretty(commands).unwrap(),
    )
    .unwrap();
    std::fs::copy(
        openphone_dir().join(EVENTS_FILE),
        dir.path().join(EVENTS_FILE),
    )
    .unwrap();
    dir
}
fn problems_of(e: RuntimeError) -> Vec<String> {
    e.problems().iter().map(ToString::to_string).collect()
}

#[test]
fn real_manifests_load_with_aliases_resolved_and_a_missing_capabilities_warning() {
    let proto = load_dir(&openphone_dir()).unwrap();
    let raw = real_commands();
    let raw_cmds = raw["commands"].as_array().unwrap();
    assert_eq!(proto.commands.commands.len(), 37);
    assert_eq!(proto.commands.commands.len(), raw_cmds.len());
    assert_eq!(proto.commands.header.version, 1);
    assert!(proto.commands.header.deprecated);
    assert_eq!(
        proto.commands.header.superseded_by.as_deref(),
        Some("ifp1/")
    );
    assert_eq!(
        proto.events.events.len(),
        read(&openphone_dir().join(EVENTS_FILE))["events"]
            .as_array()
            .unwrap()
            .len()
    );
    assert_eq!(proto.events.transport_mappings.len(), 1);
    // Every alias in the file resolves to the command that lists it; every name to itself.
    let mut alias_total = 0;
    for raw_cmd in raw_cmds {
        let name = raw_cmd["name"].as_str().unwrap();
        assert_eq!(proto.commands.resolve(name).unwrap().name, name);
        for a in raw_cmd["aliases"].as_array().into_iter().flatten() {
            alias_total += 1;
            assert_eq!(
                proto.commands.resolve(a.as_str().unwrap()).unwrap().name,
                name
            );
        }
    }
    assert_eq!(proto.commands.alias_count(), alias_total);
    assert!(alias_total > 0);
    assert_eq!(
        proto.commands.resolve("sms.send").unwrap().name,
        "openphone.messages.send"
    );
    assert_eq!(
        proto
            .commands
            .resolve("openphone.local.screen_understanding")
            .unwrap()
            .name,
        "openphone.screen.understand_local"
    );
    assert!(proto.commands.resolve("sms.sned").is_none());
    // The capabilities manifest is not in the corpus: said clearly, not a failure.
    assert!(proto.capabilities.is_none());
    assert_eq!(proto.warnings.len(), 1);
    assert!(
        proto.warnings[0].contains(CAPABILITIES_FILE),
        "{:?}",
        proto.warnings
    );
    assert!(
        proto.warnings[0].contains("not found"),
        "{:?}",
        proto.warnings
    );
}

#[test]
fn every_command_maps_to_its_ifp1_tool_and_the_two_files_agree() {
    let proto = load_dir(&openphone_dir()).unwrap();
    let tools = real_tools();
    assert_eq!(tools.tools.len(), 37);
    let mut mapped = BTreeSet::new();
    for cmd in &proto.commands.commands {
        let tool_name = cmd.ifp1_tool().unwrap();
        let tool = tools
            .get(tool_name)
            .unwrap_or_else(|| panic!("{} -> {tool_name}", cmd.name));
        // The tool list names the same command back, by name and by every alias.
        assert_eq!(tools.tool_for_command(&cmd.name).unwrap().name, tool_name);
        for a in &cmd.aliases {
            assert_eq!(
                tools.tool_for_command(a).unwrap().name,
                tool_name,
                "alias {a}"
            );
        }
        assert_eq!(tool.risk, cmd.risk);
        mapped.insert(tool_name.to_string());
    }
    assert_eq!(mapped.len(), 37, "the mapping is one-to-one");
    assert_eq!(cross_check_catalogue(&proto.commands, &tools), vec![]);
    assert_eq!(
        proto
            .commands
            .resolve("openphone.calls.place")
            .unwrap()
            .ifp1_tool(),
        Some("calls.place")
    );
}

#[test]
fn cross_check_reports_a_command_whose_risk_differs_from_its_tool() {
    let mut raw = real_commands();
    let i = raw["commands"]
        .as_array()
        .unwrap()
        .iter()
        .position(|c| c["name"] == "openphone.share.text")
        .unwrap();
    raw["commands"][i]["risk"] = "low".into();
    let Manifest::Commands(cmds) = parse_manifest(&raw, COMMANDS_FILE).unwrap() else {
        panic!()
    };
    let p = cross_check_catalogue(&cmds, &real_tools());
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].path, format!("commands[{i}].risk"));
    assert!(p[0].message.contains("share.text"), "{p:?}");
}

#[test]
fn version_2_is_rejected_with_the_supported_range() {
    let mut raw = real_commands();
    raw["version"] = 2.into();
    let dir = dir_with(&raw);
    let p = problems_of(load_dir(dir.path()).unwrap_err());
    assert_eq!(
        p,
        vec![format!("{COMMANDS_FILE}: version: unsupported runtime protocol version: 2 (supported range: 1..1)")]
    );
    // Version 0 and a string version are refused too; a missing version is named.
    raw["version"] = 0.into();
    assert!(check_manifest(&raw, "x.json")[0]
        .message
        .contains("unsupported runtime protocol version: 0 (supported range: 1..1)"));
    raw["version"] = "1".into();
    assert_eq!(check_manifest(&raw, "x.json")[0].path, "version");
    raw.as_object_mut().unwrap().remove("version");
    assert_eq!(check_manifest(&raw, "x.json")[0].path, "version");
}

#[test]
fn events_version_2_is_rejected_naming_the_events_file() {
    let mut ev = read(&openphone_dir().join(EVENTS_FILE));
    ev["version"] = 2.into();
    let p = check_manifest(&ev, EVENTS_FILE);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].to_string(), format!("{EVENTS_FILE}: version: unsupported runtime protocol version: 2 (supported range: 1..1)"));
}

fn index_of(raw: &Value, name: &str) -> usize {
    raw["commands"]
        .as_array()
        .unwrap()
        .iter()
        .position(|c| c["name"] == name)
        .unwrap()
}

#[test]
fn dangling_superseded_by_is_reported_with_its_path() {
    let mut raw = real_commands();
    let i = index_of(&raw, "openphone.messages.draft");
    raw["commands"][i]["deprecated"] = true.into();
    raw["commands"][i]["superseded_by"] = "openphone.messages.compose".into();
    let dir = dir_with(&raw);
    let p = problems_of(load_dir(dir.path()).unwrap_err());
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0].starts_with(&format!("{COMMANDS_FILE}: commands[{i}].superseded_by: ")),
        "{p:?}"
    );
    assert!(
        p[0].contains("\"openphone.messages.compose\" does not name an existing command"),
        "{p:?}"
    );
}

#[test]
fn superseded_by_without_deprecated_is_reported() {
    let mut raw = real_commands();
    let i = index_of(&raw, "openphone.messages.draft");
    raw["commands"][i]["superseded_by"] = "openphone.messages.send".into();
    let p = check_manifest(&raw, COMMANDS_FILE);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].path, format!("commands[{i}].superseded_by"));
    assert!(p[0].message.contains("without deprecated: true"), "{p:?}");
    // deprecated: false is no better than absent; deprecated: true makes it valid.
    raw["commands"][i]["deprecated"] = false.into();
    assert_eq!(check_manifest(&raw, COMMANDS_FILE).len(), 1);
    raw["commands"][i]["deprecated"] = true.into();
    assert_eq!(check_manifest(&raw, COMMANDS_FILE), vec![]);
}

#[test]
fn every_violation_is_reported_together() {
    let mut raw = real_commands();
    let a = index_of(&raw, "openphone.messages.draft");
    let b = index_of(&raw, "openphone.calls.place");
    // One command breaks both rules at once; another breaks one; a third a different field.
    raw["commands"][a]["superseded_by"] = "openphone.nothing".into();
    raw["commands"][b]["superseded_by"] = "openphone.messages.send".into();
    let c = index_of(&raw, "openphone.share.text");
    raw["commands"][c]["risk"] = "extreme".into();
    let dir = dir_with(&raw);
    let err = load_dir(dir.path()).unwrap_err();
    let p = err.problems();
    let paths: Vec<_> = p.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(p.len(), 4, "{p:?}");
    assert_eq!(
        paths
            .iter()
            .filter(|x| **x == format!("commands[{a}].superseded_by"))
            .count(),
        2
    );
    assert!(paths.contains(&format!("commands[{b}].superseded_by").as_str()));
    assert!(paths.contains(&format!("commands[{c}].risk").as_str()));
    let text = err.to_string();
    assert!(
        text.contains("without deprecated: true")
            && text.contains("does not name an existing command"),
        "{text}"
    );
    assert!(p.iter().all(|p| p.file == COMMANDS_FILE));
}

#[test]
fn problems_in_both_manifests_are_reported_together() {
    let mut raw = real_commands();
    raw["commands"][0]["confirmation"] = "sometimes".into();
    let dir = dir_with(&raw);
    let mut ev = read(&dir.path().join(EVENTS_FILE));
    ev["events"][1]["direction"] = "sideways".into();
    std::fs::write(dir.path().join(EVENTS_FILE), ev.to_string()).unwrap();
    let p = load_dir(dir.path()).unwrap_err().problems();
    assert_eq!(p.len(), 2, "{p:?}");
    assert_eq!(
        (p[0].file.as_str(), p[0].path.as_str()),
        (COMMANDS_FILE, "commands[0].confirmation")
    );
    assert_eq!(
        (p[1].file.as_str(), p[1].path.as_str()),
        (EVENTS_FILE, "events[1].direction")
    );
}

#[test]
fn duplicate_alias_and_unknown_transport_event_are_caught() {
    let mut raw = real_commands();
    raw["commands"][1]["aliases"] = serde_json::json!(["device.status"]);
    let p = check_manifest(&raw, COMMANDS_FILE);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].path, "commands[1].aliases[0]");
    assert!(p[0].message.contains("commands[0].aliases[0]"), "{p:?}");
    let mut ev = read(&openphone_dir().join(EVENTS_FILE));
    ev["transport_mappings"][0]["events"][0]["protocol"] = "runtime.presence.sideways".into();
    let p = check_manifest(&ev, EVENTS_FILE);
    assert_eq!(p[0].path, "transport_mappings[0].events[0].protocol");
}

#[test]
fn missing_capabilities_does_not_fail_and_a_present_one_is_loaded_and_used() {
    let dir = dir_with(&real_commands());
    let proto = load_dir(dir.path()).unwrap();
    assert!(proto.capabilities.is_none());
    assert!(proto.warnings.iter().any(|w| w.contains(CAPABILITIES_FILE)));
    // A capabilities manifest declaring all but one of the commands' capabilities.
    let mut caps: BTreeSet<String> = proto
        .commands
        .commands
        .iter()
        .map(|c| c.capability.clone())
        .collect();
    assert!(caps.remove("share.content"));
    let entries: Vec<Value> = caps
        .iter()
        .map(|c| serde_json::json!({"name": c}))
        .collect();
    let doc = serde_json::json!({"version": 1, "capabilities": entries});
    std::fs::write(dir.path().join(CAPABILITIES_FILE), doc.to_string()).unwrap();
    let proto = load_dir(dir.path()).unwrap();
    assert_eq!(
        proto.capabilities.as_ref().unwrap().capabilities.len(),
        caps.len()
    );
    assert_eq!(proto.warnings.len(), 1, "{:?}", proto.warnings);
    assert!(proto.warnings[0].contains("share.content"));
    // A capabilities manifest at version 2 fails the load, naming its file.
    let doc = serde_json::json!({"version": 2, "capabilities": ["calls.read"]});
    std::fs::write(dir.path().join(CAPABILITIES_FILE), doc.to_string()).unwrap();
    let p = load_dir(dir.path()).unwrap_err().problems();
    assert_eq!(p[0].file, CAPABILITIES_FILE);
    assert!(p[0]
        .message
        .contains("unsupported runtime protocol version: 2 (supported range: 1..1)"));
}

#[test]
fn missing_commands_manifest_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        openphone_dir().join(EVENTS_FILE),
        dir.path().join(EVENTS_FILE),
    )
    .unwrap();
    let e = load_dir(dir.path()).unwrap_err();
    assert!(matches!(e, RuntimeError::Invalid { .. }));
    let p = e.problems();
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].file, COMMANDS_FILE);
    assert!(p[0].message.contains("not found"), "{p:?}");
    // A broken events manifest beside the missing commands one is reported too.
    let mut ev = read(&dir.path().join(EVENTS_FILE));
    ev["version"] = 2.into();
    std::fs::write(dir.path().join(EVENTS_FILE), ev.to_string()).unwrap();
    let p = load_dir(dir.path()).unwrap_err().problems();
    assert_eq!(p.len(), 2, "{p:?}");
    assert_eq!(p[1].file, EVENTS_FILE);
    // An events file that is not JSON is one problem naming it, beside the missing commands.
    std::fs::write(dir.path().join(EVENTS_FILE), "{\"version\": 1,").unwrap();
    let p = load_dir(dir.path()).unwrap_err().problems();
    assert_eq!(p.len(), 2, "{p:?}");
    assert!(
        p[1].file.ends_with(EVENTS_FILE) && p[1].message.contains("not valid JSON"),
        "{p:?}"
    );
}

#[test]
fn runtime_manifests_are_recognised_and_others_are_not() {
    assert!(is_runtime_manifest(&real_commands()));
    assert!(is_runtime_manifest(&read(
        &openphone_dir().join(EVENTS_FILE)
    )));
    assert!(is_runtime_manifest(
        &serde_json::json!({"version": 1, "capabilities": []})
    ));
    assert!(!is_runtime_manifest(&read(
        &corpus().join("ifp1").join(TOOLS_FILE)
    )));
    assert!(!is_runtime_manifest(&read(
        &openphone_dir().join("openphone-runtime.schema.json")
    )));
    assert!(!is_runtime_manifest(
        &serde_json::json!({"version": 1, "commands": [], "events": []})
    ));
    assert!(!is_runtime_manifest(&serde_json::json!([1])));
}

#[test]
fn tool_catalogue_lookup_and_metadata() {
    let tools = real_tools();
    let ToolLookup::Known(t) = tools.lookup("calls.place") else {
        panic!()
    };
    assert_eq!(t.risk, Risk::High);
    assert_eq!(t.capability, "tool:calls.place");
    assert_eq!(t.surface_capability.as_deref(), Some("calls.place"));
    assert_eq!(t.access, Access::Mutating);
    assert!(t.description.contains("call"));
    assert_eq!(tools.lookup("calls.teleport"), ToolLookup::Unknown);
    let ToolLookup::Known(t) = tools.lookup("contacts.search") else {
        panic!()
    };
    assert_eq!(t.access, Access::ReadOnly);
    // The notes: high risk is exactly the old `confirmation: always`.
    for t in &tools.tools {
        assert_eq!(
            t.risk == Risk::High,
            t.old_confirmation == Some(switchboard::runtime::ConfirmationPolicy::Always),
            "{}",
            t.name
        );
    }
    // Derived from the commands manifest, the catalogue is the same.
    let Manifest::Commands(cmds) = parse_manifest(&real_commands(), COMMANDS_FILE).unwrap() else {
        panic!()
    };
    let derived = ToolCatalogue::from_commands(&cmds);
    assert_eq!(derived.tools.len(), tools.tools.len());
    for (a, b) in derived.tools.iter().zip(&tools.tools) {
        assert_eq!(
            (&a.name, a.risk, a.access, &a.description),
            (&b.name, b.risk, b.access, &b.description)
        );
    }
    let (found, path) = load_catalogue_from_dir(&openphone_dir()).unwrap();
    assert!(path.ends_with(Path::new("ifp1").join(TOOLS_FILE)));
    assert_eq!(found.tools.len(), 37);
}

#[test]
fn tool_list_contradicting_exposure_is_a_problem() {
    let mut raw = read(&corpus().join("ifp1").join(TOOLS_FILE));
    raw["tools"][0]["x-openphone"]["confirmation"] = "always".into();
    raw["tools"][2]["capability"] = "tool:other".into();
    let p = ToolCatalogue::parse(&raw, TOOLS_FILE)
        .unwrap_err()
        .problems();
    assert_eq!(p.len(), 2, "{p:?}");
    assert_eq!(p[0].path, "tools[0].x-openphone.default_exposure");
    assert_eq!(p[1].path, "tools[2].capability");
}

/// The read-only and mutating tools, and the high-risk ones, counted from the data itself.
fn counts_from_data() -> (usize, usize, usize) {
    let raw = read(&corpus().join("ifp1").join(TOOLS_FILE));
    let tools = raw["tools"].as_array().unwrap();
    let read_only = tools
        .iter()
        .filter(|t| {
            t["x-openphone"]["default_exposure"]
                .as_str()
                .unwrap()
                .ends_with("_read")
        })
        .count();
    let high = tools.iter().filter(|t| t["risk"] == "high").count();
    (read_only, tools.len() - read_only, high)
}

#[test]
fn autonomy_observe_only_runs_reads_and_refuses_every_change() {
    let (read_only, mutating, _) = counts_from_data();
    let table = autonomy_table(&real_tools(), Autonomy::ObserveOnly);
    assert_eq!(table.rows.len(), 37);
    assert_eq!(table.run_count as usize, read_only);
    assert_eq!(table.refuse_count as usize, mutating);
    assert_eq!(table.ask_count, 0);
    for r in &table.rows {
        let want = if r.access == Access::ReadOnly {
            Decision::Run
        } else {
            Decision::Refuse
        };
        assert_eq!(r.decision, want, "{}", r.tool);
        assert!(!r.reason.is_empty() && !r.description.is_empty());
    }
    let calls = table.rows.iter().find(|r| r.tool == "calls.place").unwrap();
    assert!(calls.reason.contains("only observes"), "{}", calls.reason);
}

#[test]
fn autonomy_ask_before_action_asks_for_every_change() {
    let (read_only, mutating, _) = counts_from_data();
    let table = autonomy_table(&real_tools(), Autonomy::AskBeforeAction);
    assert_eq!(
        (
            table.run_count as usize,
            table.ask_count as usize,
            table.refuse_count
        ),
        (read_only, mutating, 0)
    );
    let paste = table
        .rows
        .iter()
        .find(|r| r.tool == "clipboard.paste")
        .unwrap();
    assert_eq!(
        paste.decision,
        Decision::Ask,
        "the data marks clipboard.paste dangerous"
    );
    let search = table
        .rows
        .iter()
        .find(|r| r.tool == "messages.search")
        .unwrap();
    assert_eq!(search.decision, Decision::Run);
}

#[test]
fn autonomy_trusted_actions_still_asks_for_the_high_risk_tools() {
    let (read_only, mutating, high) = counts_from_data();
    assert_eq!(high, 4);
    let table = autonomy_table(&real_tools(), Autonomy::TrustedActions);
    assert_eq!(table.ask_count as usize, high);
    assert_eq!(table.run_count as usize, read_only + mutating - high);
    assert_eq!(table.refuse_count, 0);
    let asked: BTreeSet<_> = table
        .rows
        .iter()
        .filter(|r| r.decision == Decision::Ask)
        .map(|r| r.tool.as_str())
        .collect();
    let high_risk: BTreeSet<_> = table
        .rows
        .iter()
        .filter(|r| r.risk == Risk::High)
        .map(|r| r.tool.as_str())
        .collect();
    assert_eq!(asked, high_risk);
    assert!(asked.contains("messages.send") && asked.contains("share.text"));
    for r in table.rows.iter().filter(|r| r.decision == Decision::Ask) {
        assert!(r.reason.contains("High risk"), "{}", r.reason);
    }
}

#[test]
fn omitted_autonomy_inherits_the_session_else_asks() {
    assert_eq!(effective_autonomy(None, None), Autonomy::AskBeforeAction);
    assert_eq!(
        effective_autonomy(None, Some(Autonomy::ObserveOnly)),
        Autonomy::ObserveOnly
    );
    assert_eq!(
        effective_autonomy(Some(Autonomy::TrustedActions), Some(Autonomy::ObserveOnly)),
        Autonomy::TrustedActions
    );
    let tools = real_tools();
    let d = decide_tool(&tools, "calendar.add", effective_autonomy(None, None));
    assert_eq!(d.decision, Decision::Ask);
    let d = decide_tool(&tools, "calendar.teleport", Autonomy::TrustedActions);
    assert_eq!(d.decision, Decision::Refuse);
    assert!(d.reason.contains("Unknown tool"));
    assert!("observe".parse::<Autonomy>().is_err());
    assert_eq!(
        "trusted_actions".parse::<Autonomy>().unwrap(),
        Autonomy::TrustedActions
    );
}

#[test]
fn autonomy_table_serialises_with_stable_names() {
    let table = autonomy_table(&real_tools(), Autonomy::TrustedActions);
    let v = serde_json::to_value(&table).unwrap();
    assert_eq!(v["autonomy"], "trusted_actions");
    let row = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["tool"] == "calls.place")
        .unwrap();
    assert_eq!(row["decision"], "ask");
    assert_eq!(row["risk"], "high");
    assert_eq!(row["access"], "mutating");
}
