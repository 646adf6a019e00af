//! The core's layers (docs/ARCHITECTURE.md, "Layers"): each Switchboard crate depends only on
//! the crates below it, read from `cargo metadata`, so a new dependency that points up (or
//! sideways, between the dial store and the link) fails here with the crate and the arrow named.
//! Cargo already refuses circles between crates; this holds the direction.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

/// Each crate and the Switchboard crates it may depend on (normal, dev or build).
const ALLOWED: &[(&str, &[&str])] = &[
    ("switchboard-wire", &[]),
    ("switchboard-domain", &["switchboard-wire"]),
    (
        "switchboard-dials",
        &["switchboard-wire", "switchboard-domain"],
    ),
    (
        "switchboard-link",
        &["switchboard-wire", "switchboard-domain"],
    ),
    (
        "switchboard-app",
        &[
            "switchboard-wire",
            "switchboard-domain",
            "switchboard-dials",
            "switchboard-link",
        ],
    ),
    (
        "switchboard-control",
        &[
            "switchboard-wire",
            "switchboard-domain",
            "switchboard-dials",
            "switchboard-link",
            "switchboard-app",
        ],
    ),
    (
        "switchboard",
        &[
            "switchboard-wire",
            "switchboard-domain",
            "switchboard-dials",
            "switchboard-link",
            "switchboard-app",
            "switchboard-control",
        ],
    ),
    ("switchboard-desktop", &["switchboard"]),
];

/// Each workspace crate and the Switchboard crates it names as dependencies.
fn workspace_edges() -> BTreeMap<String, Vec<String>> {
    let meta = crate::version::metadata();
    meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|d| d["name"].as_str())
                .filter(|n| n.starts_with("switchboard"))
                .map(str::to_string)
                .collect();
            (p["name"].as_str().unwrap().to_string(), deps)
        })
        .collect()
}

#[test]
fn every_crate_depends_only_on_the_layers_below_it() {
    let edges = workspace_edges();
    let known: Vec<&str> = ALLOWED.iter().map(|(c, _)| *c).collect();
    assert_eq!(
        edges.keys().map(String::as_str).collect::<Vec<_>>().len(),
        known.len(),
        "a crate was added or removed: give it its place in ALLOWED and in docs/ARCHITECTURE.md: {:?}",
        edges.keys()
    );
    for (krate, allowed) in ALLOWED {
        let deps = edges
            .get(*krate)
            .unwrap_or_else(|| panic!("{krate} is not in the workspace"));
        for d in deps {
            assert!(
                allowed.contains(&d.as_str()),
                "{krate} depends on {d}, which is not below it (allowed: {allowed:?})"
            );
        }
    }
    // The bottom layer stands alone, and the app never reaches up to the control channel.
    assert!(edges["switchboard-wire"].is_empty());
    assert!(!edges["switchboard-app"]
        .iter()
        .any(|d| d == "switchboard-control"));
}
