//! ifp/1 canonical JSON of an action's `params` and its `params_hash`.
//!
//! Why: an approval is bound to exactly the parameters the person saw through `params_hash`
//! (`ifp1-notes.md`, "params_hash"; vectors in `corpus/ifp1/fixtures/params-hash-vectors.json`).
//! `params_hash = "sha256:" + lowercase hex SHA-256` of the canonical JSON of `params`: UTF-8,
//! object keys sorted by UTF-16 code unit at every depth, no whitespace, non-ASCII raw, numbers
//! as JavaScript writes them. The text is [`crate::js_json::canonical`], byte-equal to the
//! JavaScript reference.
//!
//! A proposal whose `params_hash` does not match its `params` is an anomaly worth showing, not a
//! verdict change: the binding that matters is approve-vs-propose (`binding_mismatch`).

use serde_json::Value;

use super::payload::ActionPropose;

/// The prefix of every `params_hash`.
pub const PARAMS_HASH_PREFIX: &str = "sha256:";

/// ifp/1 canonical JSON of `params` (any JSON value; normally an object).
pub fn canonical_params(params: &Value) -> String {
    crate::js_json::canonical(params)
}

/// `"sha256:" + 64 lowercase hex` of [`canonical_params`].
pub fn params_hash(params: &Value) -> String {
    format!(
        "{PARAMS_HASH_PREFIX}{}",
        crate::js_json::sha256_hex(&canonical_params(params))
    )
}

/// True when the proposal's `params_hash` is the hash of its `params`. `false` is an anomaly to
/// surface (the proposer computed the binding wrongly), not a reason to refuse the message.
pub fn params_hash_matches(proposal: &ActionPropose) -> bool {
    params_hash(&Value::Object(proposal.params.clone())) == proposal.params_hash
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn large_and_fractional_numbers_follow_javascript() {
        assert_eq!(
            canonical_params(&json!({"b": 1.0, "a": 1e21, "c": 0.1})),
            r#"{"a":1e+21,"b":1,"c":0.1}"#
        );
        assert!(params_hash(&json!({})).starts_with("sha256:"));
        assert_eq!(params_hash(&json!({})).len(), 7 + 64);
    }
}
