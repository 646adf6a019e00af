//! Classifies the error text a Lumiverse host or a phone-line handler hands back from a failed
//! RPC call.
//!
//! Why it exists: the bridge banner (see [`crate::bridge`]) is driven by the actual outcome of a
//! call, and the only structured thing a failed call carries is its error text. This module turns
//! any text into a [`HostError`]: one of the three host permission forms, with the endpoint, the
//! extension missing the permissions, the owner and the permission list, or one of the other
//! host and phone-line errors, or [`HostErrorKind::Unknown`] with the text kept.
//!
//! Spec: `phone-line.md`, "Permissions (read this first)" and "Failure modes and the bridge
//! banner" (the three forms `requires requester "<R>" to inherit owner "<O>" permissions: ...`,
//! `requires requester "<R>" permissions: ...`, `requires owner "<O>" permissions: ...`, which
//! are recognised "including when another error wraps them"), and `upstream-behaviour.md`, "The
//! host's error texts" and "LumiRealm's handler errors", which list every other template
//! recognised here; the cases and their expected read-outs are in
//! `shared/corpus/lumiverse/host-errors.json`.
//!
//! Whitespace: texts arrive broken over lines, indented, with CR LF line ends or double spaces
//! (copied from a terminal, a log viewer or the spec itself), so before anything is matched
//! every run of whitespace (any Unicode white space: spaces, tabs, CR, LF, ...) becomes one
//! space and the ends are trimmed. A space in a template therefore matches any run of
//! whitespace at any place, in the host text and in its wrappers; the values read out (and the
//! wrappers) are those of the collapsed text, while [`HostError::text`] keeps the text as given.
//!
//! The parser is written by hand (no regex) and works in time and memory linear in the text:
//! layer starts are found in one pass; at a layer start a failing match stops at a fixed-length
//! phrase, at the next quote, or at the layer's own end (the next `": "`), and a quoted scan is
//! only tried where the endpoint phrase is followed by its own quote, so hostile texts with many
//! layers or unclosed quotes do not make it quadratic, and every
//! string in the result is a copy of a distinct part of the input (the result holds at most
//! about three times the input's bytes). It never panics: all slicing is at positions found by
//! `str` searches on ASCII bytes, so they are always char boundaries.

use serde::Serialize;
use ts_rs::TS;

use crate::phone_line::protocol::{OpOutcome, PhoneLineOp};

/// Which of the host's three permission-error forms a text used (spec: "Failure modes and the
/// bridge banner").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum PermissionForm {
    /// `requires requester "<R>" to inherit owner "<O>" permissions: ...`: no explicit endpoint
    /// policy, so the requester must hold every permission granted to the owner. `R` is missing
    /// them.
    Inherit,
    /// `requires requester "<R>" permissions: ...`: an explicit `requires` policy, requester side.
    /// `R` is missing them.
    Requester,
    /// `requires owner "<O>" permissions: ...`: an explicit `requires` policy, owner side. The
    /// named owner `O` is missing them.
    Owner,
}

/// A host permission failure read out of an error text (spec: "Failure modes and the bridge
/// banner"; field names as in `host-errors.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct PermissionFailure {
    /// Which of the three forms the host used.
    pub form: PermissionForm,
    /// The shared RPC endpoint whose check failed, e.g. `lumirealm.phoneline` (may contain more
    /// dots: `weather_ext.status.current`).
    pub endpoint: String,
    /// The extension id that lacks the permissions: the requester for the `inherit` and
    /// `requester` forms, the named owner for the `owner` form.
    pub missing_extension: String,
    /// The owner the text names; for the `requester` form, which names none, the endpoint's
    /// extension id (the part of the endpoint before its first dot).
    pub owner: String,
    /// The missing permissions in the order the text lists them, duplicates dropped. Names may
    /// contain dots (`mcp_servers.create`). May be empty if the host listed none.
    pub permissions: Vec<String>,
}

/// What kind of error a text is, with the values read out of it. Serialised with a `kind` tag
/// named as in `host-errors.json` (`permission`, `not_registered`, ...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[ts(export)]
pub enum HostErrorKind {
    /// One of the three host permission forms.
    Permission(PermissionFailure),
    /// `Shared RPC endpoint "<endpoint>" is not registered`: nobody handles that endpoint (the
    /// extension is not installed or not running).
    NotRegistered {
        /// The endpoint named.
        endpoint: String,
    },
    /// `Shared RPC endpoint "<endpoint>" is not registered for on-request reads`: the owner
    /// extension is running but has no on-request handler for that endpoint
    /// (`upstream-behaviour.md`, "The host's error texts").
    NotRegisteredForReads {
        /// The endpoint named.
        endpoint: String,
    },
    /// `Shared RPC endpoint "<endpoint>" timed out`: the handler did not answer in time.
    EndpointTimedOut {
        /// The endpoint named.
        endpoint: String,
    },
    /// `phoneline dial to '<extension>' timed out after <N>ms`: LumiAgent's dial gave up.
    DialTimedOut {
        /// The extension id that was dialled.
        extension: String,
        /// How long the dial waited, in milliseconds.
        #[ts(type = "number")]
        timeout_ms: u64,
    },
    /// `Invalid shared RPC endpoint "<endpoint>". ...` or `Shared RPC endpoint cannot be empty`
    /// (then `endpoint` is empty).
    InvalidEndpoint {
        /// The endpoint named, empty for the "cannot be empty" text.
        endpoint: String,
    },
    /// `Invalid shared RPC owner identifier "<owner>"`: the owner id is not a valid extension id.
    InvalidOwner {
        /// The owner identifier named.
        owner: String,
    },
    /// `not authorised` (the handler's caller-id check, spec "Caller authorisation") or
    /// `requester extension id missing`.
    NotAuthorised,
    /// `malformed request` or `request missing <field>`: the request envelope was unusable.
    MalformedRequest,
    /// `unknown op: <op>`: the line does not support that op. What follows is the spec's rule
    /// (`phone-line.md`, "Operations"; `upstream-behaviour.md`, "LumiRealm's handler errors").
    UnknownOp {
        /// The op named (the rest of the text).
        op: String,
        /// The protocol op it is, if it is one of the eight (`None` for an op outside the core
        /// protocol, such as LumiRealm's own mutation ops or a mistyped name).
        protocol_op: Option<PhoneLineOp>,
        /// What follows from the line not supporting it: `describe` fails the pairing,
        /// `system_prompt` contributes nothing, `check_read` / `check_write` allow, data and
        /// mutation ops are tool errors. An op outside the core protocol is only ever dialled by
        /// an agent tool, so it is a tool error too.
        follows: OpOutcome,
    },
    /// `unknown surface: <surface>`: the handler has no such surface.
    UnknownSurface {
        /// The surface id named (the rest of the text).
        surface: String,
    },
    /// `invalid pattern: <detail>`: a `grep_items` pattern the line could not compile.
    InvalidPattern {
        /// What the line said about the pattern (the rest of the text), possibly empty.
        detail: String,
    },
    /// `module <module> not found`: the item a request named does not exist on the line.
    ModuleNotFound {
        /// The module id named.
        module: String,
    },
    /// `[REFUSED_BY_EXTENSION] <reason>`: the line refused the request on purpose (e.g. a
    /// `check_write` or `check_read` veto).
    RefusedByExtension {
        /// The line's reason (the rest of the text), possibly empty.
        reason: String,
    },
    /// `Connection closed`: the host's connection went away mid-call.
    ConnectionClosed,
    /// `Extension worker stopped`: the called extension's process stopped while the call was
    /// pending (a handler threw synchronously, or the process crashed); the host does not
    /// restart it, so its endpoints answer "is not registered" until it is restarted
    /// (`lumiverse-host.md`, "The extension runtime's lifecycle").
    WorkerStopped,
    /// `Extension "<id>" uses blocked backend capabilities: <label>, <label>`: the host's install
    /// scanner refused the extension's backend bundle on install, update or start
    /// (`lumiverse-host.md`, "What the scanner blocks").
    BlockedCapabilities {
        /// The extension id named.
        extension: String,
        /// The scanner's labels, in its order (`filesystem module access`, ...).
        capabilities: Vec<String>,
    },
    /// Anything else; the text is kept in [`HostError::text`].
    Unknown,
}

/// A classified error text: what kind it is, the messages wrapped around it, and the text itself.
///
/// Serialises flat: `{ "kind": ..., <the kind's fields>, "wrapped_by": [...], "text": "..." }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct HostError {
    /// The kind and its values.
    #[serde(flatten)]
    pub kind: HostErrorKind,
    /// The messages wrapped around the recognised error, outermost first, without their
    /// trailing `": "` (e.g. `could not read pending request from lumiagent`). A JavaScript
    /// error name standing alone as a layer (`Error: `, `TypeError: `) is dropped. Empty for
    /// [`HostErrorKind::Unknown`].
    pub wrapped_by: Vec<String>,
    /// The whole text as given.
    pub text: String,
}

impl HostError {
    /// The permission failure, if this is one.
    pub fn permission(&self) -> Option<&PermissionFailure> {
        match &self.kind {
            HostErrorKind::Permission(p) => Some(p),
            _ => None,
        }
    }

    /// The stable snake_case name of the kind, as `host-errors.json` names it (`permission`,
    /// `not_registered`, `not_registered_for_reads`, `endpoint_timed_out`, `dial_timed_out`,
    /// `invalid_endpoint`, `invalid_owner`, `not_authorised`, `malformed_request`, `unknown_op`,
    /// `unknown_surface`, `invalid_pattern`, `module_not_found`, `refused_by_extension`,
    /// `connection_closed`, `worker_stopped`, `blocked_capabilities`, `unknown`); the same names
    /// as the serialised `kind` tag.
    pub fn kind_name(&self) -> &'static str {
        match &self.kind {
            HostErrorKind::Permission(_) => "permission",
            HostErrorKind::NotRegistered { .. } => "not_registered",
            HostErrorKind::NotRegisteredForReads { .. } => "not_registered_for_reads",
            HostErrorKind::EndpointTimedOut { .. } => "endpoint_timed_out",
            HostErrorKind::DialTimedOut { .. } => "dial_timed_out",
            HostErrorKind::InvalidEndpoint { .. } => "invalid_endpoint",
            HostErrorKind::InvalidOwner { .. } => "invalid_owner",
            HostErrorKind::NotAuthorised => "not_authorised",
            HostErrorKind::MalformedRequest => "malformed_request",
            HostErrorKind::UnknownOp { .. } => "unknown_op",
            HostErrorKind::UnknownSurface { .. } => "unknown_surface",
            HostErrorKind::InvalidPattern { .. } => "invalid_pattern",
            HostErrorKind::ModuleNotFound { .. } => "module_not_found",
            HostErrorKind::RefusedByExtension { .. } => "refused_by_extension",
            HostErrorKind::ConnectionClosed => "connection_closed",
            HostErrorKind::WorkerStopped => "worker_stopped",
            HostErrorKind::BlockedCapabilities { .. } => "blocked_capabilities",
            HostErrorKind::Unknown => "unknown",
        }
    }
}

/// The host's phrase that opens every endpoint error.
const ENDPOINT_PHRASE: &str = "Shared RPC endpoint ";
/// The separator between a wrapping message and what it wraps.
const LAYER_SEP: &str = ": ";

/// Classifies any error text. Never fails and never panics: a text it does not recognise is
/// [`HostErrorKind::Unknown`] with the text kept.
///
/// Recognition order: a permission form wins wherever it stands (it is the actionable one), then
/// the other kinds, outermost layer first. A layer starts at the beginning of the text, after
/// each `": "`, and at each `Shared RPC endpoint ` phrase; everything in front of the recognised
/// layer, split at `": "`, becomes [`HostError::wrapped_by`]. All of this is done on the text
/// with its whitespace collapsed (see the module docs), so a text broken over lines classifies
/// as the same text on one line.
pub fn parse(text: &str) -> HostError {
    let collapsed = collapse_whitespace(text);
    let flat = collapsed.as_str();
    let starts = layer_starts(flat);
    let found = starts
        .iter()
        .find_map(|&s| parse_permission(flat.get(s..)?).map(|k| (s, k)))
        .or_else(|| {
            starts
                .iter()
                .find_map(|&s| parse_other(flat.get(s..)?).map(|k| (s, k)))
        });
    match found {
        Some((start, kind)) => HostError {
            kind,
            wrapped_by: wrappers(flat.get(..start).unwrap_or("")),
            text: text.to_string(),
        },
        None => HostError {
            kind: HostErrorKind::Unknown,
            wrapped_by: Vec::new(),
            text: text.to_string(),
        },
    }
}

/// The text with every run of white space (`char::is_whitespace`: spaces, tabs, CR, LF, no-break
/// spaces, ...) replaced by one space and the ends trimmed. Never longer than the text.
fn collapse_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut pending_space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            pending_space = !out.is_empty();
        } else {
            if pending_space {
                out.push(' ');
                pending_space = false;
            }
            out.push(c);
        }
    }
    out
}

/// Byte offsets where a layer may start: 0, after every `": "`, and at every endpoint phrase,
/// ascending and distinct. At most `text.len() + 1` entries.
fn layer_starts(text: &str) -> Vec<usize> {
    let mut starts = vec![0];
    let mut seps = text
        .match_indices(LAYER_SEP)
        .map(|(i, _)| i + LAYER_SEP.len());
    let mut phrases = text.match_indices(ENDPOINT_PHRASE).map(|(i, _)| i);
    let mut next_sep = seps.next();
    let mut next_phrase = phrases.next();
    loop {
        let next = match (next_sep, next_phrase) {
            (None, None) => break,
            (Some(a), Some(b)) if a <= b => {
                next_sep = seps.next();
                a
            }
            (Some(a), None) => {
                next_sep = seps.next();
                a
            }
            (_, Some(b)) => {
                next_phrase = phrases.next();
                b
            }
        };
        if starts.last().is_some_and(|&l| l < next) {
            starts.push(next);
        }
    }
    starts
}

/// Splits the text in front of the recognised layer into wrapping messages, outermost first,
/// trimmed, dropping empty ones and lone JavaScript error names (`Error`, `TypeError`).
fn wrappers(prefix: &str) -> Vec<String> {
    prefix
        .split(LAYER_SEP)
        .map(str::trim)
        .filter(|w| !w.is_empty() && !is_js_error_name(w))
        .map(str::to_string)
        .collect()
}

/// `Error`, `TypeError`, `RangeError`, ...: a JavaScript error's name as its text form prints
/// it before `": "`.
fn is_js_error_name(s: &str) -> bool {
    s.strip_suffix("Error")
        .is_some_and(|head| head.bytes().all(|b| b.is_ascii_alphabetic()))
}

/// Strips an ASCII-case-insensitive `prefix` from `s`.
fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    if head.eq_ignore_ascii_case(prefix) {
        s.get(prefix.len()..)
    } else {
        None
    }
}

/// Reads `<quote><value><quote>` at the start of `s`, returning the value and the rest after
/// the closing quote. The value stops at the first closing quote; it fails at a line break or
/// the end of the text, and if the value holds a layer break (`": "`), which no id or endpoint
/// does. Each scan ends at the next quote, so the parser stays linear (see the module docs).
fn quoted(s: &str, quote: char) -> Option<(&str, &str)> {
    let body = s.strip_prefix(quote)?;
    let end = body.find([quote, '\n', '\r'])?;
    let (value, rest) = body.split_at(end);
    let rest = rest.strip_prefix(quote)?;
    if value.contains(LAYER_SEP) {
        return None;
    }
    Some((value, rest))
}

/// The endpoint's extension id: the part before its first dot (the whole endpoint if none).
fn endpoint_extension(endpoint: &str) -> &str {
    endpoint.split('.').next().unwrap_or(endpoint)
}

/// Tries the three permission forms at the start of a layer.
fn parse_permission(layer: &str) -> Option<HostErrorKind> {
    let rest = strip_prefix_ci(layer, ENDPOINT_PHRASE)?;
    let (endpoint, rest) = quoted(rest, '"')?;
    let rest = rest.strip_prefix(" requires ")?;
    let (form, missing, owner, rest) = if let Some(r) = rest.strip_prefix("requester ") {
        let (requester, r) = quoted(r, '"')?;
        if let Some(r) = r.strip_prefix(" to inherit owner ") {
            let (owner, r) = quoted(r, '"')?;
            (PermissionForm::Inherit, requester, owner, r)
        } else {
            (
                PermissionForm::Requester,
                requester,
                endpoint_extension(endpoint),
                r,
            )
        }
    } else {
        let r = rest.strip_prefix("owner ")?;
        let (owner, r) = quoted(r, '"')?;
        (PermissionForm::Owner, owner, owner, r)
    };
    let list = rest.strip_prefix(" permissions:")?;
    Some(HostErrorKind::Permission(PermissionFailure {
        form,
        endpoint: endpoint.to_string(),
        missing_extension: missing.to_string(),
        owner: owner.to_string(),
        permissions: permission_list(list),
    }))
}

/// A byte allowed in a permission name: ASCII letters, digits, `_`, `-`, `.`.
fn is_permission_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')
}

/// Reads the comma-separated permission list that ends a permission text. Items are trimmed;
/// a trailing sentence dot is not part of a name; the list ends at the first item holding
/// anything but a name (e.g. a closing bracket of a wrapper), keeping that item's leading name.
/// Duplicates are dropped, first order kept.
fn permission_list(list: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for item in list.split(',') {
        let item = item.trim();
        let name_len = item.bytes().take_while(|&b| is_permission_byte(b)).count();
        let name = item.get(..name_len).unwrap_or("").trim_end_matches('.');
        if !name.is_empty() && seen.insert(name) {
            out.push(name.to_string());
        }
        if name_len < item.len() {
            break;
        }
    }
    out
}

/// The layer's own message: up to the next `": "`, trimmed, without a trailing sentence dot.
fn segment(layer: &str) -> &str {
    let end = layer.find(LAYER_SEP).unwrap_or(layer.len());
    layer
        .get(..end)
        .unwrap_or(layer)
        .trim()
        .trim_end_matches('.')
        .trim_end()
}

/// Tries every non-permission kind at the start of a layer.
fn parse_other(layer: &str) -> Option<HostErrorKind> {
    if let Some(rest) = strip_prefix_ci(layer, ENDPOINT_PHRASE) {
        if strip_prefix_ci(rest, "cannot be empty").is_some() {
            return Some(HostErrorKind::InvalidEndpoint {
                endpoint: String::new(),
            });
        }
        let (endpoint, rest) = quoted(rest, '"')?;
        let endpoint = endpoint.to_string();
        if strip_prefix_ci(rest, " is not registered for on-request reads").is_some() {
            return Some(HostErrorKind::NotRegisteredForReads { endpoint });
        }
        if strip_prefix_ci(rest, " is not registered").is_some() {
            return Some(HostErrorKind::NotRegistered { endpoint });
        }
        if strip_prefix_ci(rest, " timed out").is_some() {
            return Some(HostErrorKind::EndpointTimedOut { endpoint });
        }
        return None;
    }
    if let Some(rest) = strip_prefix_ci(layer, "Extension ") {
        if let Some((extension, rest)) = quoted(rest, '"') {
            if let Some(labels) = strip_prefix_ci(rest, " uses blocked backend capabilities:") {
                return Some(HostErrorKind::BlockedCapabilities {
                    extension: extension.to_string(),
                    capabilities: labels
                        .split(',')
                        .map(str::trim)
                        .filter(|l| !l.is_empty())
                        .map(str::to_string)
                        .collect(),
                });
            }
        }
    }
    if let Some(rest) = strip_prefix_ci(layer, "Invalid shared RPC endpoint ") {
        let (endpoint, _) = quoted(rest, '"')?;
        return Some(HostErrorKind::InvalidEndpoint {
            endpoint: endpoint.to_string(),
        });
    }
    if let Some(rest) = strip_prefix_ci(layer, "Invalid shared RPC owner identifier ") {
        let (owner, _) = quoted(rest, '"')?;
        return Some(HostErrorKind::InvalidOwner {
            owner: owner.to_string(),
        });
    }
    if let Some(rest) = strip_prefix_ci(layer, "phoneline dial to ") {
        return parse_dial_timeout(rest);
    }
    if let Some(op) = strip_prefix_ci(layer, "unknown op: ") {
        return Some(unknown_op(op.trim()));
    }
    if let Some(surface) = strip_prefix_ci(layer, "unknown surface: ") {
        return Some(HostErrorKind::UnknownSurface {
            surface: surface.trim().to_string(),
        });
    }
    if let Some(detail) = strip_prefix_ci(layer, "invalid pattern:") {
        return Some(HostErrorKind::InvalidPattern {
            detail: detail.trim().to_string(),
        });
    }
    if let Some(reason) = strip_prefix_ci(layer, "[REFUSED_BY_EXTENSION]") {
        return Some(HostErrorKind::RefusedByExtension {
            reason: reason.trim().to_string(),
        });
    }
    let seg = segment(layer);
    if let Some(module) = strip_prefix_ci(seg, "module ")
        .and_then(|r| r.strip_suffix(" not found"))
        .filter(|m| !m.is_empty() && !m.contains(' '))
    {
        return Some(HostErrorKind::ModuleNotFound {
            module: module.to_string(),
        });
    }
    let is = |p: &str| seg.eq_ignore_ascii_case(p);
    if is("not authorised") || is("not authorized") || is("requester extension id missing") {
        return Some(HostErrorKind::NotAuthorised);
    }
    if is("malformed request")
        || strip_prefix_ci(seg, "request missing ").is_some_and(|f| !f.trim().is_empty())
    {
        return Some(HostErrorKind::MalformedRequest);
    }
    if is("connection closed") {
        return Some(HostErrorKind::ConnectionClosed);
    }
    if is("extension worker stopped") {
        return Some(HostErrorKind::WorkerStopped);
    }
    None
}

/// The [`HostErrorKind::UnknownOp`] for the op a line said it does not support, with what the
/// spec says follows for it. The protocol op is read from the op's leading name (letters,
/// digits, `_`), so `grep_items (lumirealm)` or `grep_items.` is still `grep_items`.
fn unknown_op(op: &str) -> HostErrorKind {
    let name_len = op
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
        .count();
    let protocol_op = op
        .get(..name_len)
        .and_then(|n| n.parse::<PhoneLineOp>().ok());
    let follows = protocol_op.map_or(OpOutcome::ToolError, |o| o.outcome(false));
    HostErrorKind::UnknownOp {
        op: op.to_string(),
        protocol_op,
        follows,
    }
}

/// Reads `'<extension>' timed out after <N>ms` (the `ms` is optional).
fn parse_dial_timeout(rest: &str) -> Option<HostErrorKind> {
    let (extension, rest) = quoted(rest, '\'')?;
    let rest = strip_prefix_ci(rest, " timed out after ")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let timeout_ms = rest.get(..digits)?.parse::<u64>().ok()?;
    Some(HostErrorKind::DialTimedOut {
        extension: extension.to_string(),
        timeout_ms,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn spec_example_is_the_inherit_form() {
        let e = parse("Shared RPC endpoint \"lumirealm.phoneline\" requires requester \"lumiagent\" to inherit owner \"lumirealm\" permissions: push_notification");
        let p = e.permission().unwrap();
        assert_eq!(p.form, PermissionForm::Inherit);
        assert_eq!(p.missing_extension, "lumiagent");
        assert_eq!(p.owner, "lumirealm");
        assert_eq!(p.permissions, vec!["push_notification"]);
    }

    #[test]
    fn permission_form_wins_over_an_outer_known_phrase_and_brackets_end_the_list() {
        let e = parse("Connection closed: dial failed (Shared RPC endpoint \"a.b\" requires owner \"a\" permissions: x.y, z)");
        let p = e.permission().unwrap();
        assert_eq!(p.permissions, vec!["x.y", "z"]);
        assert_eq!(e.wrapped_by, vec!["Connection closed", "dial failed ("]);
    }

    #[test]
    fn js_error_names_are_dropped_at_any_layer() {
        let e = parse("TypeError: outer: Error: Shared RPC endpoint \"a.b\" is not registered");
        assert_eq!(e.kind_name(), "not_registered");
        assert_eq!(e.wrapped_by, vec!["outer"]);
    }

    #[test]
    fn lone_colon_inside_quotes_is_kept_but_a_layer_break_is_not() {
        let e = parse("Shared RPC endpoint \"a:b.c\" timed out");
        assert_eq!(
            e.kind,
            HostErrorKind::EndpointTimedOut {
                endpoint: "a:b.c".into()
            }
        );
        let e = parse("Shared RPC endpoint \"a: b.c\" timed out");
        assert_eq!(e.kind, HostErrorKind::Unknown);
    }

    #[test]
    fn dial_timeout_overflow_is_unknown_not_a_panic() {
        let e = parse("phoneline dial to 'x' timed out after 99999999999999999999999ms");
        assert_eq!(e.kind, HostErrorKind::Unknown);
    }

    #[test]
    fn empty_permission_list_is_still_a_permission_failure() {
        let e = parse("Shared RPC endpoint \"a.b\" requires requester \"c\" permissions: ");
        let p = e.permission().unwrap();
        assert_eq!(p.form, PermissionForm::Requester);
        assert_eq!(p.owner, "a");
        assert!(p.permissions.is_empty());
    }

    #[test]
    fn unknown_keeps_text_and_no_wrappers() {
        let e = parse("x: y: z");
        assert_eq!(e.kind, HostErrorKind::Unknown);
        assert!(e.wrapped_by.is_empty());
        assert_eq!(e.text, "x: y: z");
    }
}
