//! The real LumiRealm describe manifest (shared/corpus/lumiverse) loads, checks clean, and its
//! 19 excludeFromSearch prefixes match exactly the paths the spec says (phone-line.md,
//! "Manifest": a prefix matches itself, `prefix.` and `prefix[`, nothing else).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use switchboard::phone_line::check::check_manifest_text;
use switchboard::phone_line::exclusions::prefix_matches;
use switchboard::phone_line::manifest::{SurfaceManifest, SurfaceScope};
use switchboard::phone_line::pairing::{DescribeOutcome, PhoneLineState};
use switchboard::phone_line::pairings::PairingsFile;
use switchboard::phone_line::registry::PhoneLineRegistry;
use switchboard::phone_line::summary::{summarize, DialResult};

const DESCRIBE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/corpus/lumiverse/lumirealm.describe.json"
);

fn lumirealm() -> (String, SurfaceManifest) {
    let text = std::fs::read_to_string(DESCRIBE).unwrap();
    let m = SurfaceManifest::from_text(&text).unwrap();
    (text, m)
}

#[test]
fn lumirealm_manifest_loads() {
    let (text, m) = lumirealm();
    assert_eq!(m.extension.id, "lumirealm");
    assert_eq!(m.extension.name, "LumiRealm");
    assert_eq!(m.extension.version.as_deref(), Some("0.1.0"));
    assert_eq!(m.surfaces.len(), 1);
    let s = m.surface("module_envelope").unwrap();
    assert_eq!(s.label, "Risu modules");
    assert_eq!(s.scope, SurfaceScope::PerCharacter);
    assert!(s
        .description
        .as_deref()
        .unwrap()
        .starts_with("Pre-translate Risu module"));
    assert_eq!(m.exclude_from_search.len(), 19);
    assert!(m.notes.is_empty(), "{:?}", m.notes);
    assert_eq!(
        check_manifest_text(&text, Some("lumirealm")).unwrap(),
        vec![]
    );
}

#[test]
fn every_lumirealm_exclusion_matches_what_it_should_and_nothing_else() {
    let (_, m) = lumirealm();
    let all = &m.exclude_from_search;
    for prefix in all {
        // Matches: itself, a child member, an element, deeper paths.
        for path in [
            prefix.clone(),
            format!("{prefix}.x"),
            format!("{prefix}[0]"),
            format!("{prefix}[12].name"),
            format!("{prefix}.a.b"),
        ] {
            assert!(
                prefix_matches(prefix, &path),
                "{prefix} should match {path}"
            );
            assert_eq!(m.excluded_by(&path), Some(prefix.as_str()), "{path}");
        }
        // Near misses: longer names, the parent, a sibling in another extension.
        let parent = prefix.rsplit_once('.').unwrap().0;
        for path in [
            format!("{prefix}_s"),
            format!("{prefix}s"),
            format!("{prefix}-x"),
            parent.to_string(),
            format!("{parent}."),
            prefix[..prefix.len() - 1].to_string(),
            format!("other{prefix}"),
            prefix.replacen("lumirealm", "lumiagent", 1),
        ] {
            assert!(
                !prefix_matches(prefix, &path),
                "{prefix} must not match {path}"
            );
            assert_eq!(m.excluded_by(&path), None, "{path}");
        }
    }
    // The spec's own example.
    assert_eq!(m.excluded_by("lumirealm.source"), Some("lumirealm.source"));
    assert_eq!(m.excluded_by("lumirealm.sources"), None);
    // Authoring layers next to excluded ones stay searchable.
    assert_eq!(m.excluded_by("lumirealm.payload"), None);
    assert_eq!(m.excluded_by("lumirealm.payload.name"), None);
    assert_eq!(m.excluded_by("lumirealm.modules[0].lua"), None);
}

#[test]
fn summary_of_a_lumirealm_pairing() {
    let (text, m) = lumirealm();
    let pairings = PairingsFile::parse(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/phoneline-pairings.sample.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let dial = DialResult {
        namespace: "lumirealm".into(),
        outcome: DescribeOutcome::Answered(serde_json::from_str(&text).unwrap()),
    };
    let s = summarize(&PhoneLineRegistry::builtin(), Some(&pairings), &[dial]);
    assert_eq!(s.len(), 2);
    let lr = &s[0];
    assert_eq!(lr.identifier, "lumirealm");
    assert_eq!(lr.state, PhoneLineState::Paired);
    assert_eq!(lr.allowed, Some(true));
    assert_eq!(lr.decided_at, Some(1_726_000_000_000));
    assert_eq!(lr.hash_matches_current, Some(true));
    assert_eq!(lr.current_manifest_hash.as_deref(), Some(m.hash().as_str()));
    assert_eq!(lr.self_declared_name.as_deref(), Some("LumiRealm"));
    assert_eq!(lr.self_declared_version.as_deref(), Some("0.1.0"));
    assert_eq!(lr.surfaces[0].scope, SurfaceScope::PerCharacter);
    assert_eq!(lr.exclusions.len(), 19);
    assert!(lr.warnings.is_empty(), "{:?}", lr.warnings);
    // The other record is not in the registry.
    assert_eq!(s[1].identifier, "risu-notes");
    assert_eq!(s[1].state, PhoneLineState::Unknown);
    assert_eq!(s[1].allowed, Some(false));

    // A changed manifest is flagged against the record.
    let mut changed: serde_json::Value = serde_json::from_str(&text).unwrap();
    changed["excludeFromSearch"].as_array_mut().unwrap().pop();
    let dial = DialResult {
        namespace: "lumirealm".into(),
        outcome: DescribeOutcome::Answered(changed),
    };
    let s = summarize(&PhoneLineRegistry::builtin(), Some(&pairings), &[dial]);
    assert_eq!(s[0].hash_matches_current, Some(false));
    assert_eq!(s[0].exclusions.len(), 18);
    assert!(s[0].warnings.iter().any(|w| w.contains("changed since")));

    // Serialised for the UI with stable snake_case names.
    let v = serde_json::to_value(&s[0]).unwrap();
    assert_eq!(v["state"], "paired");
    assert_eq!(v["surfaces"][0]["scope"], "per_character");
}
