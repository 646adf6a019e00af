//! What the macOS bundle carries, checked on any system (the bundle itself is built on macOS):
//! the Info.plist that tauri.conf.json merges says in words why Switchboard reaches the local
//! network and lists every mDNS service type the link uses (macOS 15 and later block the rest
//! and ask the person with that sentence), and icons/icon.icns is an icon family with the
//! sizes the Finder and the Dock use.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

fn repo(rel: &str) -> std::path::PathBuf {
    rel.split('/').fold(
        Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf(),
        |p, c| p.join(c),
    )
}

/// The text of the `<string>`s right after `<key>name</key>` (one, or an array's).
fn plist_strings(plist: &str, name: &str) -> Vec<String> {
    let key = format!("<key>{name}</key>");
    let after = &plist[plist.find(&key).unwrap_or_else(|| panic!("no {key}")) + key.len()..];
    let value = after.trim_start();
    let end = if value.starts_with("<array>") {
        value.find("</array>").unwrap()
    } else {
        value.find("</string>").unwrap() + "</string>".len()
    };
    value[..end]
        .split("<string>")
        .skip(1)
        .map(|s| s.split("</string>").next().unwrap().to_string())
        .collect()
}

#[test]
fn the_info_plist_asks_for_the_local_network_and_names_the_service() {
    let conf: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo("tauri.conf.json")).unwrap()).unwrap();
    let rel = conf["bundle"]["macOS"]["infoPlist"].as_str().unwrap();
    let plist = std::fs::read_to_string(repo(rel)).unwrap();

    let why = plist_strings(&plist, "NSLocalNetworkUsageDescription");
    assert_eq!(why.len(), 1, "{why:?}");
    let why = &why[0];
    assert!(
        why.len() > 40 && why.contains("phone") && why.ends_with('.'),
        "{why}"
    );

    let services = plist_strings(&plist, "NSBonjourServices");
    let ours = switchboard::link::SERVICE_TYPE
        .strip_suffix(".local.")
        .unwrap();
    assert_eq!(
        services,
        vec![ours.to_string()],
        "every type the link uses, and only those"
    );
}

#[test]
fn the_icns_has_the_finder_and_dock_sizes() {
    let conf: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo("tauri.conf.json")).unwrap()).unwrap();
    let icons: Vec<&str> = conf["bundle"]["icon"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(icons.contains(&"icons/icon.icns"), "{icons:?}");
    let icns = std::fs::read(repo("icons/icon.icns")).unwrap();
    assert_eq!(&icns[..4], b"icns");
    assert_eq!(
        u32::from_be_bytes(icns[4..8].try_into().unwrap()) as usize,
        icns.len(),
        "the family's length is the file's"
    );
    // Each element: a 4-byte type, a 4-byte big-endian length (with its header).
    let mut types = Vec::new();
    let mut at = 8;
    while at + 8 <= icns.len() {
        let len = u32::from_be_bytes(icns[at + 4..at + 8].try_into().unwrap()) as usize;
        assert!(len >= 8 && at + len <= icns.len(), "element at {at}");
        types.push(String::from_utf8_lossy(&icns[at..at + 4]).to_string());
        at += len;
    }
    for t in ["is32", "il32", "ic08", "ic09"] {
        assert!(types.iter().any(|x| x == t), "{t} missing: {types:?}");
    }
}
