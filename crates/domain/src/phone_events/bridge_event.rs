//! `event.bridge.status`: a bridge result seen outside a dial (the caller's probe, a pending
//! request read), typed from the payload (`docs/protocol.md`, "event.bridge.status"), so
//! banners follow failures the phone sees between dials too.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{field_err, typed, PhoneEventError, BRIDGE_EVENT};

/// Where a bridge result outside a dial came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BridgeSource {
    /// The caller's probe read (`lumiagent.phoneline_probe`, `lumiagent.phoneline_request`).
    Probe,
    /// The person changed an extension's permissions.
    PermissionChange,
}

/// Whether the bridge call worked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BridgeOutcome {
    /// It worked: clears the path's banner.
    Ok,
    /// It failed with `error`: may raise a banner.
    Error,
}

/// `event.bridge.status` payload.
#[derive(Debug, Clone, PartialEq)]
pub struct BridgeEvent {
    /// The event's `dedup` key.
    pub dedup: String,
    /// What produced it.
    pub source: BridgeSource,
    /// The calling extension id (e.g. `lumirealm` reading LumiAgent's probe).
    pub caller: String,
    /// The endpoint called (e.g. `lumiagent.phoneline_probe`).
    pub endpoint: String,
    /// How it went.
    pub outcome: BridgeOutcome,
    /// The error text (required when `outcome` is `error`).
    pub error: Option<String>,
}

#[derive(Deserialize)]
struct WireBridge {
    #[allow(dead_code)]
    seq: u64,
    dedup: String,
    source: BridgeSource,
    caller: String,
    endpoint: String,
    outcome: BridgeOutcome,
    #[serde(default)]
    error: Option<String>,
}

impl BridgeEvent {
    /// Types an `event.bridge.status` payload. Errors: a missing or mistyped field (named), an
    /// empty `endpoint`, `outcome: error` without an `error` text.
    pub fn from_payload(payload: &Map<String, Value>) -> Result<Self, PhoneEventError> {
        let ev = BRIDGE_EVENT;
        let w: WireBridge = typed(ev, payload)?;
        if w.endpoint.trim().is_empty() {
            return Err(field_err(ev, "payload.endpoint", "empty"));
        }
        let error = w.error.filter(|e| !e.is_empty());
        if w.outcome == BridgeOutcome::Error && error.is_none() {
            return Err(field_err(
                ev,
                "payload.error",
                "missing: outcome error carries the error text",
            ));
        }
        Ok(BridgeEvent {
            dedup: w.dedup,
            source: w.source,
            caller: w.caller,
            endpoint: w.endpoint,
            outcome: w.outcome,
            error,
        })
    }
}
