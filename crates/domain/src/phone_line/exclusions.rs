//! `excludeFromSearch` matching (phone-line.md, "Manifest").
//!
//! A phone line's describe manifest lists path prefixes under `character.extensions.*` that
//! LumiAgent's find tools (grep, survey_cjk, apply_glossary, audit_card_coverage) skip. Matching
//! is segment-aware: a prefix matches itself, `prefix.` followed by anything and `prefix[`
//! followed by anything, and nothing else, so `lumirealm.source` does not match
//! `lumirealm.sources` nor the parent `lumirealm`.

/// Whether the `excludeFromSearch` entry `prefix` covers `path` (both relative to
/// `character.extensions`, e.g. `lumirealm.payload.first_mes`): `path == prefix`, or `path`
/// starts with `prefix.` or `prefix[`.
pub fn prefix_matches(prefix: &str, path: &str) -> bool {
    match path.strip_prefix(prefix) {
        Some(rest) => rest.is_empty() || rest.starts_with('.') || rest.starts_with('['),
        None => false,
    }
}

/// The entry of `prefixes` that covers `path`, or `None` when no entry does. When several
/// cover it (`a` and `a.b` both cover `a.b.c`), the longest, most specific one is returned.
pub fn matching_prefix<'a, S: AsRef<str>>(prefixes: &'a [S], path: &str) -> Option<&'a str> {
    prefixes
        .iter()
        .map(AsRef::as_ref)
        .filter(|p| prefix_matches(p, path))
        .max_by_key(|p| p.len())
}

/// `path` with a leading `character.extensions.` removed, so users may give either the full
/// path or the part under `character.extensions` that `excludeFromSearch` entries are written in.
pub fn relative_to_extensions(path: &str) -> &str {
    path.strip_prefix("character.extensions.").unwrap_or(path)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn segment_aware() {
        assert!(prefix_matches("a.b", "a.b"));
        assert!(prefix_matches("a.b", "a.b.c"));
        assert!(prefix_matches("a.b", "a.b[3]"));
        assert!(prefix_matches("a.b", "a.b[3].x"));
        assert!(!prefix_matches("a.b", "a.bc"));
        assert!(!prefix_matches("a.b", "a.b_c"));
        assert!(!prefix_matches("a.b", "a"));
        assert!(!prefix_matches("a.b", "a."));
        assert!(!prefix_matches("a.b", "x.a.b"));
        assert!(!prefix_matches("a.b", ""));
    }

    #[test]
    fn longest_match_wins() {
        let prefixes = ["a", "a.b", "c"];
        assert_eq!(matching_prefix(&prefixes, "a.b.c"), Some("a.b"));
        assert_eq!(matching_prefix(&prefixes, "a.x"), Some("a"));
        assert_eq!(matching_prefix(&prefixes, "ab"), None);
    }

    #[test]
    fn strips_character_extensions() {
        assert_eq!(
            relative_to_extensions("character.extensions.lumirealm.source"),
            "lumirealm.source"
        );
        assert_eq!(
            relative_to_extensions("lumirealm.source"),
            "lumirealm.source"
        );
    }
}

#[cfg(test)]
mod props {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// `prefix + rest` matches exactly when `rest` is empty or starts a new segment.
        #[test]
        fn matches_iff_rest_starts_a_segment(prefix in "[a-z_]{1,8}(\\.[a-z_]{1,8}){0,3}", rest in "[a-z_.\\[\\]0-9]{0,6}") {
            let path = format!("{prefix}{rest}");
            let want = rest.is_empty() || rest.starts_with('.') || rest.starts_with('[');
            prop_assert_eq!(prefix_matches(&prefix, &path), want);
        }

        /// A path that does not start with the prefix never matches.
        #[test]
        fn other_paths_never_match(prefix in "[a-z]{1,6}\\.[a-z]{1,6}", path in "[a-z.\\[\\]]{0,14}") {
            prop_assume!(!path.starts_with(&prefix));
            prop_assert!(!prefix_matches(&prefix, &path));
        }
    }
}
