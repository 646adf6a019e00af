//! The ifp/1 tool catalogue: the phone tools a paired phone declares, with what each one risks.
//!
//! Spec: `ifp1-notes.md` "Corpus" (`openphone-tools.ifp1.json`: the 37 OpenPhone tools as ifp/1
//! capabilities `tool:<name>`, with `risk` — high = the old `confirmation: always` — and the old
//! metadata under `x-openphone`), and `openphone-runtime-protocol.md` "Autonomy" (read-only
//! tools versus mutating tools).
//!
//! Read-only or mutating comes from the data: `x-openphone.default_exposure` `safe_read` or
//! `private_read` is read-only, `dangerous` is mutating; when a tool carries no exposure, the old
//! `confirmation` decides (`none` is read-only, anything else mutating); when it carries neither,
//! the tool is treated as mutating so it is never run unasked. An exposure and a confirmation
//! that contradict each other (a `*_read` tool with a confirmation other than `none`) is a
//! problem at load.
//!
//! This module is the tool list itself; [`super::tools`] adds where a catalogue comes from
//! (derived from the old commands manifest, or found in a directory).

use std::collections::HashMap;
use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};
use ts_rs::TS;

use super::policy::{Access, ConfirmationPolicy, Risk};
use super::problem::{kind_of, read_json, Checker, RuntimeError};

/// File name of the ifp/1 tool list.
pub const TOOLS_FILE: &str = "openphone-tools.ifp1.json";

/// One phone tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct Tool {
    /// ifp/1 tool name (`calls.place`), as `action.propose` `payload.tool` carries it.
    pub name: String,
    /// The ifp/1 capability declared at pairing (`tool:calls.place`).
    pub capability: String,
    /// `low`, `medium` or `high`.
    pub risk: Risk,
    /// What the tool does, in words.
    pub description: String,
    /// Read-only or mutating (see the module doc for where it comes from).
    pub access: Access,
    /// The old OpenPhone confirmation policy (`x-openphone.confirmation`).
    pub old_confirmation: Option<ConfirmationPolicy>,
    /// The old exposure class (`safe_read`, `private_read`, `dangerous`).
    pub default_exposure: Option<String>,
    /// The old phone capability (`x-openphone.surface_capability`, `calls.place`).
    pub surface_capability: Option<String>,
    /// The Android tool that runs it (`calls_place`).
    pub android_tool: Option<String>,
    /// The old runtime command this tool supersedes (`openphone.calls.place`).
    pub superseded_command: Option<String>,
    /// The old command's aliases.
    pub superseded_aliases: Vec<String>,
}

/// The result of looking a tool up by name: known (with its entry) or `unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolLookup<'a> {
    /// The phone declares this tool.
    Known(&'a Tool),
    /// Not in the tool list.
    Unknown,
}

/// The phone's tool list, in file order, with a name index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolCatalogue {
    /// Where it was read from (file name, or `openphone-commands.json` when derived from it).
    pub source: String,
    /// The tool list's own `version` string (`1.0.0-draft`), when given.
    pub version: Option<String>,
    /// The tools in file order.
    pub tools: Vec<Tool>,
    #[serde(skip)]
    index: HashMap<String, usize>,
}

impl ToolCatalogue {
    pub(super) fn new(source: String, version: Option<String>, tools: Vec<Tool>) -> Self {
        let mut index = HashMap::new();
        for (i, t) in tools.iter().enumerate() {
            index.entry(t.name.clone()).or_insert(i);
        }
        Self {
            source,
            version,
            tools,
            index,
        }
    }

    /// Reads `openphone-tools.ifp1.json` (or any file of that shape).
    pub fn load(path: &Path) -> Result<Self, RuntimeError> {
        let value = read_json(path)?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string());
        Self::parse(&value, &name)
    }

    /// Parses an ifp/1 tool list: `{ ifp: "1", tools: [{tool, capability, risk, description,
    /// x-openphone: {...}}] }`. Every problem is reported (file and field path each).
    pub fn parse(value: &Value, file: &str) -> Result<Self, RuntimeError> {
        let mut c = Checker::new(file);
        let Some(obj) = value.as_object() else {
            c.push(
                "",
                format!("must be a JSON object, found {}", kind_of(value)),
            );
            return Err(RuntimeError::Invalid {
                problems: c.into_problems(),
            });
        };
        match obj.get("ifp") {
            Some(Value::String(s)) if s == "1" => {}
            Some(other) => c.push("ifp", format!("must be \"1\", found {}", kind_of(other))),
            None => c.push("ifp", "missing (an ifp/1 tool list has ifp: \"1\")"),
        }
        let version = c.opt_str(obj, "version", "");
        let items: &[Value] = match obj.get("tools") {
            Some(Value::Array(a)) => a,
            Some(other) => {
                c.push("tools", format!("must be a list, found {}", kind_of(other)));
                &[]
            }
            None => {
                c.push("tools", "missing (a list is required)");
                &[]
            }
        };
        let mut tools = Vec::new();
        let mut seen: HashMap<String, usize> = HashMap::new();
        for (i, item) in items.iter().enumerate() {
            let path = format!("tools[{i}]");
            let Some(t) = item.as_object() else {
                c.push(path, format!("must be an object, found {}", kind_of(item)));
                continue;
            };
            if let Some(tool) = parse_tool(&mut c, t, &path) {
                if let Some(first) = seen.get(&tool.name) {
                    c.push(
                        format!("{path}.tool"),
                        format!("tool {:?} is already declared at tools[{first}]", tool.name),
                    );
                } else {
                    seen.insert(tool.name.clone(), i);
                    tools.push(tool);
                }
            }
        }
        if c.is_clean() {
            Ok(Self::new(file.to_string(), version, tools))
        } else {
            Err(RuntimeError::Invalid {
                problems: c.into_problems(),
            })
        }
    }

    /// The tool named `name` (ifp/1 name, `calls.place`), or `None`.
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.index.get(name).and_then(|&i| self.tools.get(i))
    }

    /// Looks a tool up by name: [`ToolLookup::Known`] or [`ToolLookup::Unknown`].
    pub fn lookup(&self, name: &str) -> ToolLookup<'_> {
        match self.get(name) {
            Some(t) => ToolLookup::Known(t),
            None => ToolLookup::Unknown,
        }
    }

    /// The tool that supersedes the old command `command` (by full name or alias, through
    /// `x-openphone.superseded_command` / `superseded_aliases`).
    pub fn tool_for_command(&self, command: &str) -> Option<&Tool> {
        self.tools
            .iter()
            .find(|t| t.superseded_command.as_deref() == Some(command))
            .or_else(|| {
                self.tools
                    .iter()
                    .find(|t| t.superseded_aliases.iter().any(|a| a == command))
            })
    }
}

/// Read-only or mutating from the data (module doc).
pub(super) fn access_from(
    exposure: Option<&str>,
    confirmation: Option<ConfirmationPolicy>,
) -> Access {
    match exposure {
        Some(e) if e.ends_with("_read") => Access::ReadOnly,
        Some(_) => Access::Mutating,
        None => match confirmation {
            Some(ConfirmationPolicy::None) => Access::ReadOnly,
            _ => Access::Mutating,
        },
    }
}

fn parse_tool(c: &mut Checker, t: &Map<String, Value>, path: &str) -> Option<Tool> {
    let name = c.req_str(t, "tool", path);
    let capability = c.req_str(t, "capability", path);
    let description = c.req_str(t, "description", path);
    let risk = match t.get("risk") {
        Some(Value::String(s)) => {
            let r = Risk::parse(s);
            if r.is_none() {
                c.push(
                    format!("{path}.risk"),
                    format!("{s:?} is not one of low, medium, high"),
                );
            }
            r
        }
        Some(other) => {
            c.push(
                format!("{path}.risk"),
                format!("must be low, medium or high, found {}", kind_of(other)),
            );
            None
        }
        None => {
            c.push(format!("{path}.risk"), "missing (low, medium or high)");
            None
        }
    };
    if let (Some(n), Some(cap)) = (&name, &capability) {
        if cap != &format!("tool:{n}") {
            c.push(
                format!("{path}.capability"),
                format!("{cap:?} should be \"tool:{n}\" (ifp/1 declares a tool as tool:<name>)"),
            );
        }
    }
    let xpath = format!("{path}.x-openphone");
    let empty = Map::new();
    let x = match t.get("x-openphone") {
        Some(Value::Object(x)) => x,
        None | Some(Value::Null) => &empty,
        Some(other) => {
            c.push(
                xpath.clone(),
                format!("must be an object, found {}", kind_of(other)),
            );
            &empty
        }
    };
    let old_confirmation = match c.opt_str(x, "confirmation", &xpath) {
        Some(s) => {
            let p = ConfirmationPolicy::parse(&s);
            if p.is_none() {
                c.push(
                    format!("{xpath}.confirmation"),
                    format!("{s:?} is not one of none, ask_before_action, always"),
                );
            }
            p
        }
        None => None,
    };
    let default_exposure = c.opt_str(x, "default_exposure", &xpath);
    if let (Some(e), Some(p)) = (&default_exposure, old_confirmation) {
        let read = e.ends_with("_read");
        if read != (p == ConfirmationPolicy::None) {
            c.push(
                format!("{xpath}.default_exposure"),
                format!(
                    "exposure {e:?} contradicts confirmation {:?} (a read is never confirmed; a change always is, unless trusted)",
                    p.as_str()
                ),
            );
        }
    }
    let surface_capability = c.opt_str(x, "surface_capability", &xpath);
    let android_tool = c.opt_str(x, "android_tool", &xpath);
    let superseded_command = c.opt_str(x, "superseded_command", &xpath);
    let superseded_aliases = c.opt_str_list(x, "superseded_aliases", &xpath);
    Some(Tool {
        access: access_from(default_exposure.as_deref(), old_confirmation),
        name: name?,
        capability: capability?,
        risk: risk?,
        description: description?,
        old_confirmation,
        default_exposure,
        surface_capability,
        android_tool,
        superseded_command,
        superseded_aliases,
    })
}
