//! An event's `provenance` and `labels` (`ifp1-notes.md`, "Envelope"), read into their typed
//! [`Provenance`] and [`Labels`] or refused naming the field.
//!
//! Apart from the table of type rules ([`super`]) because they are nested objects with rules of
//! their own, checked whenever present, not only on events.

use serde_json::Value;

use super::fields::{expected, optional, timestamp_field};
use super::Rejection;
use crate::ifp::envelope::{ChainStage, Consent, Labels, Provenance, Retention};

pub(super) fn parse_provenance(v: &Value) -> Result<Provenance, Rejection> {
    let obj = v
        .as_object()
        .ok_or_else(|| expected("provenance", "an object {sensor, captured_at, chain?}", v))?;
    let sensor = match obj.get("sensor") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(other) => return Err(expected("provenance.sensor", "a non-empty string", other)),
        None => return Err(Rejection::invalid("provenance.sensor: required")),
    };
    let captured_at = match obj.get("captured_at") {
        Some(Value::String(s)) => timestamp_field("provenance.captured_at", s)?,
        Some(other) => {
            return Err(expected(
                "provenance.captured_at",
                "an RFC 3339 UTC time string",
                other,
            ))
        }
        None => return Err(Rejection::invalid("provenance.captured_at: required")),
    };
    let mut chain = Vec::new();
    if let Some(c) = optional(obj, "chain") {
        let items = c
            .as_array()
            .ok_or_else(|| expected("provenance.chain", "an array of {stage}", c))?;
        for (i, item) in items.iter().enumerate() {
            let at = format!("provenance.chain[{i}]");
            let entry = item
                .as_object()
                .ok_or_else(|| expected(&at, "an object {stage}", item))?;
            let stage = match entry.get("stage") {
                Some(Value::String(s)) if !s.is_empty() => s.clone(),
                Some(other) => {
                    return Err(expected(
                        &format!("{at}.stage"),
                        "a non-empty string",
                        other,
                    ))
                }
                None => return Err(Rejection::invalid(format!("{at}.stage: required"))),
            };
            let mut extra = entry.clone();
            extra.remove("stage");
            chain.push(ChainStage { stage, extra });
        }
    }
    Ok(Provenance {
        sensor,
        captured_at,
        chain,
    })
}

pub(super) fn parse_labels(v: &Value) -> Result<Labels, Rejection> {
    let obj = v
        .as_object()
        .ok_or_else(|| expected("labels", "an object {consent, retention}", v))?;
    let consent_names: Vec<&str> = Consent::ALL.iter().map(|c| c.as_str()).collect();
    let consent = match obj.get("consent") {
        Some(c) => c.as_str().and_then(Consent::from_wire).ok_or_else(|| {
            expected(
                "labels.consent",
                &format!("one of {}", consent_names.join(", ")),
                c,
            )
        })?,
        None => return Err(Rejection::invalid("labels.consent: required")),
    };
    let retention_names: Vec<&str> = Retention::ALL.iter().map(|c| c.as_str()).collect();
    let retention = match obj.get("retention") {
        Some(r) => r.as_str().and_then(Retention::from_wire).ok_or_else(|| {
            expected(
                "labels.retention",
                &format!("one of {}", retention_names.join(", ")),
                r,
            )
        })?,
        None => return Err(Rejection::invalid("labels.retention: required")),
    };
    Ok(Labels { consent, retention })
}
