//! `event.phoneline.settings`: the phone's phone-line registry, pairing records and each line's
//! last describe, typed from the payload (`docs/protocol.md`, "event.phoneline.settings"). The
//! pairings are read as LumiAgent reads them, since that is what the phone's host will do.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{field_err, typed, PhoneEventError, SETTINGS_EVENT};
use crate::phone_line::pairing::DescribeOutcome;
use crate::phone_line::pairings::{read_as_lumiagent, LumiAgentRead, PairingsFile};
use crate::phone_line::registry::PhoneLineRegistry;
use switchboard_wire::ifp::Timestamp;

/// One extension the phone knows: its declared permissions and, for a phone line, its last
/// describe (`docs/protocol.md`, "event.phoneline.settings").
#[derive(Debug, Clone, PartialEq)]
pub struct LineSettings {
    /// The host-attested extension id (`lumirealm`).
    pub identifier: String,
    /// The name its `spindle.json` declares (`LumiRealm`), when the phone knows it.
    pub name: Option<String>,
    /// The permissions its `spindle.json` declares (`permissions`), in manifest order; `None`
    /// when the phone does not know them. Used to judge which missing permissions a banner may
    /// ask for (unknown: all are treated as grantable, unchecked).
    pub permissions: Option<Vec<String>>,
    /// The outcome of its last `describe`, when it was dialed.
    pub last_describe: Option<LastDescribe>,
}

/// The last `describe` of a phone line.
#[derive(Debug, Clone, PartialEq)]
pub struct LastDescribe {
    /// When the describe ended.
    pub at: Timestamp,
    /// What it gave: the manifest JSON it answered, or the error text.
    pub outcome: DescribeOutcome,
}

/// `event.phoneline.settings` payload: the phone's phone-line settings.
#[derive(Debug, Clone, PartialEq)]
pub struct PhoneSettings {
    /// The registry of known phone lines (the settings file `{version: 1, phoneLines: [...]}`).
    pub registry: PhoneLineRegistry,
    /// The pairing records: the `phoneline-pairings.json` content read as LumiAgent reads it
    /// ([`read_as_lumiagent`]: records of the wrong shape kept with their problems, never
    /// refused); `None` when the phone has no such file yet; empty when LumiAgent treats the
    /// content as empty.
    pub pairings: Option<PairingsFile>,
    /// Why LumiAgent treats the phone's pairings content as empty (`its version is 2, not 1`);
    /// `None` when it reads its records (or there are none).
    pub pairings_treated_as_empty: Option<String>,
    /// Every extension the phone knows, phone lines and callers alike.
    pub lines: Vec<LineSettings>,
}

#[derive(Deserialize)]
struct WireSettings {
    registry: Value,
    #[serde(default)]
    pairings: Option<Value>,
    lines: Vec<WireLine>,
}

#[derive(Deserialize)]
struct WireLine {
    identifier: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    permissions: Option<Vec<String>>,
    #[serde(default)]
    describe: Option<WireDescribe>,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum DescribeStatus {
    Answered,
    Failed,
}

#[derive(Deserialize)]
struct WireDescribe {
    at: Timestamp,
    status: DescribeStatus,
    #[serde(default)]
    manifest: Option<Value>,
    #[serde(default)]
    error: Option<String>,
}

impl PhoneSettings {
    /// Types an `event.phoneline.settings` payload. Errors name the field
    /// (`payload.registry.phoneLines`, `payload.lines[0].describe.manifest`). The `pairings`
    /// content is never refused for its shape: it is read as LumiAgent reads its file.
    pub fn from_payload(payload: &Map<String, Value>) -> Result<Self, PhoneEventError> {
        let ev = SETTINGS_EVENT;
        let wire: WireSettings = typed(ev, payload)?;
        let registry = PhoneLineRegistry::parse(&wire.registry.to_string())
            .map_err(|e| field_err(ev, "payload.registry", e.to_string()))?;
        // Read as LumiAgent reads its file (upstream-behaviour.md): never refused for its shape.
        let (pairings, pairings_treated_as_empty) = match wire.pairings {
            None | Some(Value::Null) => (None, None),
            Some(v) => match read_as_lumiagent(&v.to_string())
                .map_err(|e| field_err(ev, "payload.pairings", e.to_string()))?
            {
                LumiAgentRead::Records(file) => (Some(file), None),
                LumiAgentRead::TreatedAsEmpty { reason } => {
                    (Some(PairingsFile::new()), Some(reason))
                }
            },
        };
        let mut lines = Vec::with_capacity(wire.lines.len());
        for (i, l) in wire.lines.into_iter().enumerate() {
            if l.identifier.trim().is_empty() {
                return Err(field_err(
                    ev,
                    format!("payload.lines[{i}].identifier"),
                    "empty: name the extension id",
                ));
            }
            let last_describe = match l.describe {
                None => None,
                Some(d) => {
                    let at = format!("payload.lines[{i}].describe");
                    let outcome = match d.status {
                        DescribeStatus::Answered => DescribeOutcome::Answered(d.manifest.ok_or_else(
                            || field_err(ev, format!("{at}.manifest"), "missing: an answered describe carries the manifest it answered"),
                        )?),
                        DescribeStatus::Failed => {
                            let text = d.error.filter(|t| !t.trim().is_empty()).ok_or_else(|| {
                                field_err(ev, format!("{at}.error"), "missing: a failed describe carries the error text")
                            })?;
                            DescribeOutcome::Failed(text)
                        }
                    };
                    Some(LastDescribe { at: d.at, outcome })
                }
            };
            lines.push(LineSettings {
                identifier: l.identifier,
                name: l.name,
                permissions: l.permissions,
                last_describe,
            });
        }
        Ok(PhoneSettings {
            registry,
            pairings,
            pairings_treated_as_empty,
            lines,
        })
    }

    /// The line with this extension id, if listed.
    pub fn line(&self, identifier: &str) -> Option<&LineSettings> {
        self.lines.iter().find(|l| l.identifier == identifier)
    }
}
