//! What the phone-line settings UI shows per line (phone-line.md, "Discovery and pairing" and
//! "Manifest"): state, the pairing record's fields, whether the manifest changed since the
//! decision, the self-declared name and version, surfaces, exclusions and warnings in words.

use serde::Serialize;
use ts_rs::TS;

use super::check::check_manifest;
use super::manifest::SurfaceScope;
use super::pairing::{decide, DescribeOutcome, PhoneLineState};
use super::pairings::PairingsFile;
use super::registry::PhoneLineRegistry;

/// One surface of a line, for display.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct SurfaceSummary {
    /// The surface id.
    pub id: String,
    /// Display label.
    pub label: String,
    /// What it holds, when given.
    pub description: Option<String>,
    /// Global or per-character.
    pub scope: SurfaceScope,
}

/// One phone line as the settings UI shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct PhoneLineSummary {
    /// The host-attested extension id.
    pub identifier: String,
    /// The registry's name, else the record's `displayName`, else the identifier.
    pub display_name: String,
    /// The line's state.
    pub state: PhoneLineState,
    /// The record's `allowed`; `null` without a record.
    pub allowed: Option<bool>,
    /// The record's `decidedAt` (epoch milliseconds); `null` without a record.
    #[ts(type = "number | null")]
    pub decided_at: Option<u64>,
    /// The record's `manifestHash`; `null` without a record.
    pub manifest_hash: Option<String>,
    /// The `manifestHash` of the current describe; `null` when not dialed or it failed.
    pub current_manifest_hash: Option<String>,
    /// Whether the record's hash equals the current describe's: `false` means the manifest
    /// changed since the decision; `null` when either is missing.
    pub hash_matches_current: Option<bool>,
    /// `extension.name` as the line declares it: self-declared, not an identity claim.
    pub self_declared_name: Option<String>,
    /// `extension.version` as the line declares it: self-declared.
    pub self_declared_version: Option<String>,
    /// The current describe's surfaces.
    pub surfaces: Vec<SurfaceSummary>,
    /// The current describe's `excludeFromSearch` prefixes.
    pub exclusions: Vec<String>,
    /// What LumiAgent's normalisation of the current describe dropped or changed (unknown
    /// fields, the older scope form, unusable surfaces, ...), each naming the place; empty when
    /// nothing, or when there is no current describe.
    pub normalisation_notes: Vec<String>,
    /// Warnings in words.
    pub warnings: Vec<String>,
}

/// The words for a manifest whose hash differs from the one decided on: information, not a
/// task (upstream-behaviour.md: LumiAgent re-approves a changed manifest on its next discovery).
pub const MANIFEST_CHANGED_WORDS: &str = "the manifest changed since the pairing decision; LumiAgent re-approves it on its next discovery (nothing to do)";

/// The latest `describe` of one line.
#[derive(Debug, Clone, PartialEq)]
pub struct DialResult {
    /// The host-attested namespace dialed.
    pub namespace: String,
    /// What the describe gave.
    pub outcome: DescribeOutcome,
}

/// Summaries of every line the registry, the pairings file or the dials mention: registry
/// order first, then recorded lines, then other dialed lines. `pairings` is the host's
/// `phoneline-pairings.json` when at hand; `dials` the latest describe per line.
pub fn summarize(
    registry: &PhoneLineRegistry,
    pairings: Option<&PairingsFile>,
    dials: &[DialResult],
) -> Vec<PhoneLineSummary> {
    let mut ids: Vec<&str> = registry
        .lines()
        .iter()
        .map(|l| l.identifier.as_str())
        .collect();
    if let Some(p) = pairings {
        ids.extend(p.records().map(|(id, _)| id));
    }
    ids.extend(dials.iter().map(|d| d.namespace.as_str()));
    let mut seen = std::collections::HashSet::new();
    ids.retain(|id| seen.insert(*id));

    ids.into_iter()
        .map(|id| {
            let stored = pairings.and_then(|p| p.get(id));
            let outcome = dials.iter().find(|d| d.namespace == id).map(|d| &d.outcome);
            // The time is irrelevant: only the state, manifest and warnings are used.
            let d = decide(registry, id, outcome, stored, 0);
            // A record LumiAgent does not read as a decision shows no fields (its warning says
            // why).
            let record = stored.filter(|r| r.is_decision());
            let mut warnings = d.warnings;
            let current_hash = d.manifest.as_ref().map(|m| m.hash());
            let hash_matches_current = match (record, &current_hash) {
                (Some(r), Some(h)) => Some(!r.manifest_changed(h)),
                _ => None,
            };
            if hash_matches_current == Some(false) {
                warnings.push(MANIFEST_CHANGED_WORDS.to_string());
            }
            if let Some(m) = &d.manifest {
                warnings.extend(
                    check_manifest(&m.raw, Some(id))
                        .into_iter()
                        .map(|p| format!("manifest problem: {p}")),
                );
            }
            let display_name = registry
                .get(id)
                .map(|l| l.name.clone())
                .or_else(|| record.map(|r| r.display_name().to_string()))
                .unwrap_or_else(|| id.to_string());
            PhoneLineSummary {
                identifier: id.to_string(),
                display_name,
                state: d.state,
                allowed: record.map(|r| r.allowed()),
                decided_at: record.map(|r| r.decided_at()),
                manifest_hash: record.map(|r| r.manifest_hash().to_string()),
                current_manifest_hash: current_hash,
                hash_matches_current,
                self_declared_name: d.manifest.as_ref().map(|m| m.extension.name.clone()),
                self_declared_version: d
                    .manifest
                    .as_ref()
                    .and_then(|m| m.extension.version.clone()),
                surfaces: d
                    .manifest
                    .as_ref()
                    .map(|m| {
                        m.surfaces
                            .iter()
                            .map(|s| SurfaceSummary {
                                id: s.id.clone(),
                                label: s.label.clone(),
                                description: s.description.clone().filter(|d| !d.is_empty()),
                                scope: s.scope,
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
                exclusions: d
                    .manifest
                    .as_ref()
                    .map(|m| m.exclude_from_search.clone())
                    .unwrap_or_default(),
                normalisation_notes: d
                    .manifest
                    .as_ref()
                    .map(|m| m.notes.clone())
                    .unwrap_or_default(),
                warnings,
            }
        })
        .collect()
}
