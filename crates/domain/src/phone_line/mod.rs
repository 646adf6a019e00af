//! Phone lines (phone-line.md): the typed protocol, describe manifests and their hash, the
//! registry of known lines, the pairing rule, `phoneline-pairings.json` records,
//! `excludeFromSearch` matching, manifest checking and the settings UI's summary.
//!
//! Entry points:
//! - [`protocol`] — [`protocol::PhoneLineRequest`], [`protocol::PhoneLineResponse`],
//!   [`protocol::PhoneLineOp::outcome`] (what an unsupported op amounts to).
//! - [`manifest`] — [`manifest::SurfaceManifest`], [`manifest::normalise`] (LumiAgent's
//!   normalisation), [`manifest::manifest_hash`].
//! - [`check`] — [`check::check_manifest_text`] lists a describe manifest's problems.
//! - A dial's request and response against its op: [`crate::dial::conformance::check_dial`],
//!   with the dial record it checks.
//! - [`exclusions`] — [`exclusions::matching_prefix`].
//! - [`registry`] — [`registry::PhoneLineRegistry`] (known lines; settings file load/save).
//! - [`pairing`] — [`pairing::decide`] (the pairing rule and line states).
//! - [`pairings`] — [`pairings::PairingsFile`] (`phoneline-pairings.json`: parse, save with
//!   backup, revoke), [`pairings::read_as_lumiagent`] (what LumiAgent treats as empty).
//! - [`summary`] — [`summary::summarize`] → [`summary::PhoneLineSummary`] for the UI.

pub mod check;
pub mod exclusions;
pub mod json_path;
pub mod manifest;
pub mod pairing;
pub mod pairings;
pub mod protocol;
pub mod registry;
pub mod summary;
