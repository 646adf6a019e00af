//! The pairing rule (phone-line.md, "Discovery and pairing"): which state a phone line is in,
//! given the registry of known lines, its pairing record and the outcome of its latest
//! `describe`.
//!
//! - A line not in the registry is **unknown**: LumiAgent never dials it.
//! - A record with `allowed: false` (the desktop's revoke) is **revoked**, until LumiAgent's next
//!   discovery: upstream LumiAgent rewrites every record that is not `allowed: true` with a
//!   matching hash as `allowed: true` once the line's describe succeeds
//!   (`upstream-behaviour.md`, "LumiAgent's registry and pairing records"), so a revoke lasts
//!   until then and the warning says so.
//! - A record LumiAgent does not read as a decision (not an object, no boolean `allowed`:
//!   [`PairingRecord::is_decision`]) counts as no record, with a warning saying LumiAgent
//!   rewrites it on its next discovery; other fields of the wrong shape are warned about.
//! - A `describe` that failed (or answered with something that is not a manifest) is
//!   **describe failed**.
//! - A `describe` whose `extension.name` differs from the registry's name is **skipped**, with a
//!   warning naming both.
//! - Otherwise a known line whose `describe` succeeds is **paired**, automatically.
//!
//! `extension.id` is replaced by the host-attested namespace (the id the line's endpoint lives
//! under); `name` and `version` are kept only as self-declared text.

use serde::Serialize;
use serde_json::Value;
use ts_rs::TS;

use super::manifest::SurfaceManifest;
use super::pairings::PairingRecord;
use super::registry::PhoneLineRegistry;

/// A phone line's state as the phone-line settings show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum PhoneLineState {
    /// Known, and its describe succeeded (or, with no describe at hand, its record allows it).
    Paired,
    /// Known, but its describe declared another `extension.name` than the registry's.
    SkippedNameMismatch,
    /// Not in the registry of known phone lines: never dialed.
    Unknown,
    /// Its pairing record has `allowed: false`.
    Revoked,
    /// Its describe failed, or did not answer with a manifest.
    DescribeFailed,
    /// Known, but neither dialed yet nor recorded.
    NotDialed,
}

/// What a line's `describe` gave.
#[derive(Debug, Clone, PartialEq)]
pub enum DescribeOutcome {
    /// The line answered with this JSON (normally a SurfaceManifest).
    Answered(Value),
    /// The dial failed; the error text (e.g. the host's permission error).
    Failed(String),
}

/// The result of applying the pairing rule to one line.
#[derive(Debug, Clone, PartialEq)]
pub struct PairingDecision {
    /// The state.
    pub state: PhoneLineState,
    /// The describe manifest with `extension.id` replaced by the host-attested namespace, when
    /// the describe answered with a manifest.
    pub manifest: Option<SurfaceManifest>,
    /// The `extension.id` the manifest declared before the replacement.
    pub declared_id: Option<String>,
    /// The record as it should now be stored: `Some` only when it is new or changed (new
    /// pairing, changed manifest hash or display name); the shell saves it.
    pub record_update: Option<PairingRecord>,
    /// Warnings in words (name mismatch naming both names, replaced id, failed describe, ...).
    pub warnings: Vec<String>,
}

/// Applies the pairing rule to the line whose host-attested namespace is `namespace`.
/// `outcome` is its latest describe (`None`: not dialed in this session), `existing` its
/// pairing record, `now_ms` the time for a new decision (epoch milliseconds).
pub fn decide(
    registry: &PhoneLineRegistry,
    namespace: &str,
    outcome: Option<&DescribeOutcome>,
    existing: Option<&PairingRecord>,
    now_ms: u64,
) -> PairingDecision {
    let mut warnings = Vec::new();
    // A record of the wrong shape is read as LumiAgent reads it (upstream-behaviour.md): only
    // `allowed` true with the current hash is kept; anything else is rewritten on the next
    // discovery whose describe succeeds.
    if let Some(r) = existing {
        if !r.is_decision() {
            warnings.push(format!(
                "the pairing record is not a decision LumiAgent keeps ({}): its allowed is not true, so LumiAgent rewrites it with allowed: true, the current manifest hash and decidedAt = now on its next discovery whose describe succeeds (nothing to do)",
                r.problems().join("; ")
            ));
        } else if !r.problems().is_empty() {
            warnings.push(format!(
                "the pairing record has fields of the wrong shape ({}); LumiAgent only compares allowed and manifestHash, so it keeps the record while allowed is true and the hash matches, and rewrites it otherwise",
                r.problems().join("; ")
            ));
        }
    }
    let existing = existing.filter(|r| r.is_decision());
    let mut manifest = None;
    let mut declared_id = None;
    let mut describe_error = None;
    match outcome {
        Some(DescribeOutcome::Answered(value)) => {
            match SurfaceManifest::from_value(value.clone()) {
                Ok(mut m) => {
                    if m.extension.id != namespace {
                        warnings.push(format!(
                        "describe declared extension.id {:?}; replaced by the host-attested namespace {namespace:?}",
                        m.extension.id
                    ));
                    }
                    declared_id = Some(std::mem::replace(
                        &mut m.extension.id,
                        namespace.to_string(),
                    ));
                    manifest = Some(m);
                }
                Err(e) => describe_error = Some(format!("describe answered, but {e}")),
            }
        }
        Some(DescribeOutcome::Failed(e)) => describe_error = Some(format!("describe failed: {e}")),
        None => {}
    }

    let decision = |state, record_update, warnings| PairingDecision {
        state,
        manifest: manifest.clone(),
        declared_id: declared_id.clone(),
        record_update,
        warnings,
    };

    let Some(known) = registry.get(namespace) else {
        warnings.push(format!(
            "{namespace:?} is not in the registry of known phone lines; it is never dialed"
        ));
        return decision(PhoneLineState::Unknown, None, warnings);
    };
    if let Some(record) = existing.filter(|r| !r.allowed()) {
        warnings.push(format!(
            "pairing revoked (decidedAt {}); LumiAgent re-approves it on its next discovery if its describe succeeds",
            record.decided_at()
        ));
        if let Some(e) = describe_error {
            warnings.push(e);
        }
        return decision(PhoneLineState::Revoked, None, warnings);
    }
    if let Some(e) = describe_error {
        warnings.push(e);
        return decision(PhoneLineState::DescribeFailed, None, warnings);
    }
    let Some(m) = &manifest else {
        let state = if existing.is_some() {
            PhoneLineState::Paired
        } else {
            PhoneLineState::NotDialed
        };
        return decision(state, None, warnings);
    };
    if m.extension.name != known.name {
        warnings.push(format!(
            "skipped: describe of {namespace:?} declares extension.name {:?}, but the registry knows it as {:?}",
            m.extension.name, known.name
        ));
        return decision(PhoneLineState::SkippedNameMismatch, None, warnings);
    }
    let hash = m.hash();
    let update = match existing {
        None => Some(PairingRecord::new(
            namespace,
            &known.name,
            true,
            &hash,
            now_ms,
        )),
        Some(r) if r.manifest_hash() != hash || r.display_name() != known.name => {
            let mut r = r.clone();
            r.set_display_name(&known.name);
            r.set_manifest_hash(&hash);
            r.set_allowed(true);
            r.set_decided_at(now_ms);
            Some(r)
        }
        Some(_) => None,
    };
    decision(PhoneLineState::Paired, update, warnings)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use serde_json::json;

    fn lumirealm() -> Value {
        serde_json::from_str(
            &std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../../shared/corpus/lumiverse/lumirealm.describe.json"
            ))
            .unwrap(),
        )
        .unwrap()
    }

    #[test]
    fn known_line_pairs_automatically() {
        let r = PhoneLineRegistry::builtin();
        let out = DescribeOutcome::Answered(lumirealm());
        let d = decide(&r, "lumirealm", Some(&out), None, 1_726_000_000_000);
        assert_eq!(d.state, PhoneLineState::Paired);
        let rec = d.record_update.unwrap();
        assert_eq!(rec.identifier(), "lumirealm");
        assert_eq!(rec.display_name(), "LumiRealm");
        assert!(rec.allowed());
        assert_eq!(rec.decided_at(), 1_726_000_000_000);
        assert_eq!(
            rec.manifest_hash(),
            super::super::manifest::manifest_hash(&lumirealm()).unwrap()
        );
        assert!(d.warnings.is_empty(), "{:?}", d.warnings);
        // Same manifest again: nothing to write.
        let again = decide(&r, "lumirealm", Some(&out), Some(&rec), 2);
        assert_eq!(again.state, PhoneLineState::Paired);
        assert_eq!(again.record_update, None);
        // Changed manifest: re-approved with the new hash and time.
        let mut changed = lumirealm();
        changed["extension"]["version"] = json!("0.2.0");
        let d = decide(
            &r,
            "lumirealm",
            Some(&DescribeOutcome::Answered(changed)),
            Some(&rec),
            3,
        );
        let up = d.record_update.unwrap();
        assert_ne!(up.manifest_hash(), rec.manifest_hash());
        assert_eq!(up.decided_at(), 3);
    }

    #[test]
    fn name_mismatch_is_skipped_with_both_names() {
        let mut m = lumirealm();
        m["extension"]["name"] = json!("LumiRealm Pro");
        let d = decide(
            &PhoneLineRegistry::builtin(),
            "lumirealm",
            Some(&DescribeOutcome::Answered(m)),
            None,
            1,
        );
        assert_eq!(d.state, PhoneLineState::SkippedNameMismatch);
        assert_eq!(d.record_update, None);
        let w = d.warnings.join("\n");
        assert!(
            w.contains("\"LumiRealm Pro\"") && w.contains("\"LumiRealm\""),
            "{w}"
        );
    }

    #[test]
    fn id_is_replaced_by_the_attested_namespace() {
        let mut m = lumirealm();
        m["extension"]["id"] = json!("lumiagent");
        let d = decide(
            &PhoneLineRegistry::builtin(),
            "lumirealm",
            Some(&DescribeOutcome::Answered(m)),
            None,
            1,
        );
        assert_eq!(d.state, PhoneLineState::Paired);
        assert_eq!(d.manifest.unwrap().extension.id, "lumirealm");
        assert_eq!(d.declared_id.as_deref(), Some("lumiagent"));
        assert!(d.warnings[0].contains("\"lumiagent\""));
        assert_eq!(d.record_update.unwrap().identifier(), "lumirealm");
    }

    #[test]
    fn other_states() {
        let r = PhoneLineRegistry::builtin();
        let ok = DescribeOutcome::Answered(lumirealm());
        let d = decide(&r, "stranger", Some(&ok), None, 1);
        assert_eq!(d.state, PhoneLineState::Unknown);
        assert_eq!(d.record_update, None);

        let failed = DescribeOutcome::Failed(
            "Shared RPC endpoint \"lumirealm.phoneline\" requires requester \"lumiagent\" to inherit owner \"lumirealm\" permissions: push_notification".into(),
        );
        let d = decide(&r, "lumirealm", Some(&failed), None, 1);
        assert_eq!(d.state, PhoneLineState::DescribeFailed);
        assert!(d.warnings[0].contains("push_notification"));

        let d = decide(
            &r,
            "lumirealm",
            Some(&DescribeOutcome::Answered(json!({"text": null}))),
            None,
            1,
        );
        assert_eq!(d.state, PhoneLineState::DescribeFailed);

        let mut rec = PairingRecord::new("lumirealm", "LumiRealm", true, "00", 1);
        rec.set_allowed(false);
        let d = decide(&r, "lumirealm", Some(&ok), Some(&rec), 5);
        assert_eq!(d.state, PhoneLineState::Revoked);
        assert_eq!(d.record_update, None);

        assert_eq!(
            decide(&r, "lumirealm", None, None, 1).state,
            PhoneLineState::NotDialed
        );
        let rec = PairingRecord::new("lumirealm", "LumiRealm", true, "00", 1);
        assert_eq!(
            decide(&r, "lumirealm", None, Some(&rec), 1).state,
            PhoneLineState::Paired
        );
    }
}
