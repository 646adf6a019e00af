//! The 14 ifp/1 error classes.
//!
//! Why: every rejection the validator or the receiver gives, and every `error` message on the
//! wire, names exactly one of these classes (`ifp1-notes.md`, "Error classes (14)"). They are a
//! closed set: an `error` message with any other `class` is itself an `invalid_envelope`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// One of the 14 ifp/1 error classes (`ifp1-notes.md`, "Error classes (14)").
///
/// Serialised in snake_case exactly as on the wire (`"stale_generation"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum ErrorClass {
    /// The `ifp` field is not the string `"1"`.
    UnsupportedVersion,
    /// The message breaks an envelope or payload rule, or is not acceptable in the action's
    /// state (any message on a finished action).
    InvalidEnvelope,
    /// The sending device is not paired or its proof failed.
    UnauthorizedDevice,
    /// Pairing could not be completed (bad code, bad signature, expired).
    PairingFailed,
    /// The receiver cannot route this type where routing is required.
    UnknownType,
    /// The message's `generation` is below the receiver's current generation.
    StaleGeneration,
    /// An event's `seq` is below the last accepted `seq` of its session.
    OrderingViolation,
    /// An approval arrived after the proposal's `expires_at`.
    ActionExpired,
    /// An approval's `params_hash` differs from the proposal's.
    BindingMismatch,
    /// The surface lacks a capability the action needs.
    CapabilityMissing,
    /// The surface's own policy refused the action.
    PolicyDenied,
    /// The person refused the action on the surface.
    UserDenied,
    /// Too many messages; try later.
    RateLimited,
    /// A fault inside the receiver.
    Internal,
}

impl ErrorClass {
    /// All 14 classes, in the order the notes list them.
    pub const ALL: [ErrorClass; 14] = [
        ErrorClass::UnsupportedVersion,
        ErrorClass::InvalidEnvelope,
        ErrorClass::UnauthorizedDevice,
        ErrorClass::PairingFailed,
        ErrorClass::UnknownType,
        ErrorClass::StaleGeneration,
        ErrorClass::OrderingViolation,
        ErrorClass::ActionExpired,
        ErrorClass::BindingMismatch,
        ErrorClass::CapabilityMissing,
        ErrorClass::PolicyDenied,
        ErrorClass::UserDenied,
        ErrorClass::RateLimited,
        ErrorClass::Internal,
    ];

    /// The wire name (`"stale_generation"`).
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorClass::UnsupportedVersion => "unsupported_version",
            ErrorClass::InvalidEnvelope => "invalid_envelope",
            ErrorClass::UnauthorizedDevice => "unauthorized_device",
            ErrorClass::PairingFailed => "pairing_failed",
            ErrorClass::UnknownType => "unknown_type",
            ErrorClass::StaleGeneration => "stale_generation",
            ErrorClass::OrderingViolation => "ordering_violation",
            ErrorClass::ActionExpired => "action_expired",
            ErrorClass::BindingMismatch => "binding_mismatch",
            ErrorClass::CapabilityMissing => "capability_missing",
            ErrorClass::PolicyDenied => "policy_denied",
            ErrorClass::UserDenied => "user_denied",
            ErrorClass::RateLimited => "rate_limited",
            ErrorClass::Internal => "internal",
        }
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The text is not one of the 14 error class names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown ifp/1 error class {0:?}")]
pub struct UnknownErrorClass(pub String);

impl FromStr for ErrorClass {
    type Err = UnknownErrorClass;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ErrorClass::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| UnknownErrorClass(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn wire_names_round_trip_through_serde_and_from_str() {
        for class in ErrorClass::ALL {
            let json = serde_json::to_string(&class).unwrap();
            assert_eq!(json, format!("\"{}\"", class.as_str()));
            let back: ErrorClass = serde_json::from_str(&json).unwrap();
            assert_eq!(back, class);
            assert_eq!(class.as_str().parse::<ErrorClass>().unwrap(), class);
        }
        assert!("made_up_error".parse::<ErrorClass>().is_err());
    }

    #[test]
    fn the_notes_list_fourteen_distinct_classes() {
        let notes = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/specs/ifp1-notes.md"
        ));
        let section = notes
            .split("## Error classes (14)")
            .nth(1)
            .and_then(|s| s.split("An `error` message").next())
            .unwrap();
        let names: Vec<&str> = section
            .split(|c: char| !(c.is_ascii_lowercase() || c == '_'))
            .filter(|w| w.len() > 1)
            .collect();
        assert_eq!(names.len(), 14, "{names:?}");
        for (name, class) in names.iter().zip(ErrorClass::ALL) {
            assert_eq!(*name, class.as_str());
        }
    }
}
