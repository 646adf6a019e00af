//! Which lines' manifests the conformance check knows, and so where it can check the
//! `characterId` rule: that rule depends on a surface's scope, which only the line's describe
//! manifest gives. LumiRealm's published manifest is built in.

use std::collections::HashMap;

use crate::phone_line::manifest::{SurfaceManifest, SurfaceScope};

use super::LUMIREALM;

/// The surfaces' scopes of the lines whose manifest is known: callee extension id → surface id →
/// scope. The `characterId` rule is checked only for surfaces found here.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScopeBook {
    lines: HashMap<String, HashMap<String, SurfaceScope>>,
}

impl ScopeBook {
    /// An empty book: no line's manifest known.
    pub fn new() -> Self {
        Self::default()
    }

    /// A book knowing LumiRealm's published manifest (the corpus's
    /// `lumiverse/lumirealm.describe.json`, embedded): `module_envelope` is `per_character`.
    pub fn builtin() -> &'static ScopeBook {
        static BOOK: std::sync::OnceLock<ScopeBook> = std::sync::OnceLock::new();
        BOOK.get_or_init(|| {
            let mut book = ScopeBook::new();
            match SurfaceManifest::from_text(LUMIREALM_DESCRIBE) {
                Ok(m) => book.add_manifest(LUMIREALM, &m),
                Err(e) => tracing::error!("embedded LumiRealm manifest not used: {e}"),
            }
            book
        })
    }

    /// Records `manifest` as the manifest of line `callee` (replacing what was known).
    pub fn add_manifest(&mut self, callee: &str, manifest: &SurfaceManifest) {
        let surfaces = manifest
            .surfaces
            .iter()
            .map(|s| (s.id.clone(), s.scope))
            .collect();
        self.lines.insert(callee.to_string(), surfaces);
    }

    /// The scope of `surface` on line `callee`, when that line's manifest is known and has it.
    pub fn scope(&self, callee: &str, surface: &str) -> Option<SurfaceScope> {
        self.lines.get(callee)?.get(surface).copied()
    }
}

/// LumiRealm's describe answer as published (a copy of the corpus file, embedded).
pub(super) const LUMIREALM_DESCRIBE: &str =
    include_str!("../../../../../data/lumirealm.describe.json");
