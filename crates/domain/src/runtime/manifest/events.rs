//! The events and capabilities manifests: their rule checks (unique names, known directions,
//! transport mappings that name events of the same manifest; capabilities as names or
//! `{ name, description }` objects).
//!
//! Spec: `openphone-runtime-protocol.md` "Single Sources Of Truth" (events manifest); the
//! capabilities manifest's shape is not in the public corpus (see [`super::types::Capability`]).

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value};

use super::types::{
    CapabilitiesManifest, Capability, Event, EventsManifest, ManifestHeader, TransportMapping,
    EVENT_DIRECTIONS,
};
use crate::runtime::problem::{claim, kind_of, list, Checker};

/// Walks the `events` list and `transport_mappings`: every problem goes to `c`.
pub(super) fn parse_events(
    c: &mut Checker,
    obj: &Map<String, Value>,
    header: ManifestHeader,
) -> EventsManifest {
    let items = list(c, obj, "events");
    let mut events = Vec::new();
    let mut seen = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        let path = format!("events[{i}]");
        let Some(ev) = item.as_object() else {
            c.push(path, format!("must be an object, found {}", kind_of(item)));
            continue;
        };
        let name = c.req_str(ev, "name", &path);
        let direction = c.req_str(ev, "direction", &path);
        if let Some(d) = &direction {
            if !EVENT_DIRECTIONS.contains(&d.as_str()) {
                c.push(
                    format!("{path}.direction"),
                    format!("{d:?} is not one of {}", EVENT_DIRECTIONS.join(", ")),
                );
            }
        }
        if let Some(n) = &name {
            claim(c, &mut seen, n, &format!("{path}.name"), "event name");
        }
        if let (Some(name), Some(direction)) = (name, direction) {
            events.push(Event { name, direction });
        }
    }
    let known: BTreeSet<&str> = events.iter().map(|e| e.name.as_str()).collect();
    let mut transport_mappings = Vec::new();
    match obj.get("transport_mappings") {
        None | Some(Value::Null) => {}
        Some(Value::Array(maps)) => {
            for (i, m) in maps.iter().enumerate() {
                let path = format!("transport_mappings[{i}]");
                let Some(m) = m.as_object() else {
                    c.push(path, format!("must be an object, found {}", kind_of(m)));
                    continue;
                };
                let runtime = c.req_str(m, "runtime", &path);
                let transport = c.req_str(m, "transport", &path);
                let mut pairs = Vec::new();
                let epath = format!("{path}.events");
                match m.get("events") {
                    Some(Value::Array(es)) => {
                        for (j, e) in es.iter().enumerate() {
                            let p = format!("{epath}[{j}]");
                            let Some(e) = e.as_object() else {
                                c.push(p, format!("must be an object, found {}", kind_of(e)));
                                continue;
                            };
                            let protocol = c.req_str(e, "protocol", &p);
                            let wire = c.req_str(e, "wire", &p);
                            if let Some(pr) = &protocol {
                                if !known.contains(pr.as_str()) {
                                    c.push(
                                        format!("{p}.protocol"),
                                        format!("{pr:?} is not an event of this manifest"),
                                    );
                                }
                            }
                            if let (Some(pr), Some(w)) = (protocol, wire) {
                                pairs.push((pr, w));
                            }
                        }
                    }
                    Some(other) => {
                        c.push(epath, format!("must be a list, found {}", kind_of(other)))
                    }
                    None => c.push(epath, "missing (a list is required)"),
                }
                if let (Some(runtime), Some(transport)) = (runtime, transport) {
                    transport_mappings.push(TransportMapping {
                        runtime,
                        transport,
                        events: pairs,
                    });
                }
            }
        }
        Some(other) => c.push(
            "transport_mappings",
            format!("must be a list, found {}", kind_of(other)),
        ),
    }
    EventsManifest {
        header,
        events,
        transport_mappings,
    }
}

/// Walks the `capabilities` list: every problem goes to `c`.
pub(super) fn parse_capabilities(
    c: &mut Checker,
    obj: &Map<String, Value>,
    header: ManifestHeader,
) -> CapabilitiesManifest {
    let items = list(c, obj, "capabilities");
    let mut capabilities = Vec::new();
    let mut seen = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        let path = format!("capabilities[{i}]");
        let cap = match item {
            Value::String(s) if !s.trim().is_empty() => Some(Capability {
                name: s.clone(),
                description: None,
            }),
            Value::Object(o) => {
                let name = c.req_str(o, "name", &path);
                let description = c.opt_str(o, "description", &path);
                name.map(|name| Capability { name, description })
            }
            other => {
                c.push(
                    path.clone(),
                    format!(
                        "must be a capability name or an object with a name, found {}",
                        kind_of(other)
                    ),
                );
                None
            }
        };
        if let Some(cap) = cap {
            claim(c, &mut seen, &cap.name, &path, "capability");
            capabilities.push(cap);
        }
    }
    CapabilitiesManifest {
        header,
        capabilities,
    }
}
