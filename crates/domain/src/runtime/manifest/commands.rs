//! The commands manifest: its rule checks (names and aliases each resolve to one command;
//! `superseded_by` names an existing command and only with `deprecated: true`) and the check of
//! the command-to-ifp/1-tool mapping against a loaded tool list ([`cross_check_catalogue`]).
//!
//! Spec: `openphone-runtime-protocol.md` "Single Sources Of Truth", "Version-bump policy";
//! `ifp1-notes.md` "Corpus" (`x-openphone.superseded_command`).

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value};

use super::types::{Command, CommandsManifest, ManifestHeader, COMMANDS_FILE, COMMAND_PREFIX};
use crate::runtime::catalogue::ToolCatalogue;
use crate::runtime::policy::{ConfirmationPolicy, Risk};
use crate::runtime::problem::{claim, join_path, kind_of, list, Checker, Problem};

/// Walks the `commands` list: every problem goes to `c`; the commands without problems are kept.
pub(super) fn parse_commands(
    c: &mut Checker,
    obj: &Map<String, Value>,
    header: ManifestHeader,
) -> CommandsManifest {
    let items = list(c, obj, "commands");
    let mut commands: Vec<Command> = Vec::new();
    // Positions in `items` of each kept command, for field paths in later checks.
    let mut positions: Vec<usize> = Vec::new();
    let mut first_seen: HashMap<String, String> = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        let path = format!("commands[{i}]");
        let Some(cmd) = item.as_object() else {
            c.push(path, format!("must be an object, found {}", kind_of(item)));
            continue;
        };
        let name = c.req_str(cmd, "name", &path);
        let aliases = c.opt_str_list(cmd, "aliases", &path);
        let android_tool = c.req_str(cmd, "android_tool", &path);
        let description = c.req_str(cmd, "description", &path);
        let category = c.opt_str(cmd, "category", &path).unwrap_or_default();
        let risk = enum_field(c, cmd, "risk", &path, Risk::parse, "low, medium or high");
        let capability = c.req_str(cmd, "capability", &path);
        let confirmation = enum_field(
            c,
            cmd,
            "confirmation",
            &path,
            ConfirmationPolicy::parse,
            "none, ask_before_action or always",
        );
        let default_exposure = c.opt_str(cmd, "default_exposure", &path);
        let _ = c.opt_bool(cmd, "mcp", &path);
        let _ = c.opt_bool(cmd, "remote_runtime", &path);
        let deprecated = c.opt_bool(cmd, "deprecated", &path);
        let superseded_by = c.opt_str(cmd, "superseded_by", &path);

        // Names and aliases must each resolve to exactly one command.
        if let Some(n) = &name {
            claim(
                c,
                &mut first_seen,
                n,
                &format!("{path}.name"),
                "command name",
            );
        }
        for (j, a) in aliases.iter().enumerate() {
            claim(
                c,
                &mut first_seen,
                a,
                &format!("{path}.aliases[{j}]"),
                "alias",
            );
        }
        // superseded_by only alongside deprecated: true (checked here; the reference is
        // checked once every name is known).
        if let Some(s) = &superseded_by {
            if deprecated != Some(true) {
                c.push(
                    format!("{path}.superseded_by"),
                    format!(
                        "superseded_by {s:?} is set without deprecated: true (it may only appear on a deprecated command)"
                    ),
                );
            }
        }
        if let (
            Some(name),
            Some(android_tool),
            Some(description),
            Some(risk),
            Some(capability),
            Some(confirmation),
        ) = (
            name,
            android_tool,
            description,
            risk,
            capability,
            confirmation,
        ) {
            commands.push(Command {
                name,
                aliases,
                android_tool,
                description,
                category,
                risk,
                capability,
                confirmation,
                default_exposure,
                deprecated: deprecated.unwrap_or(false),
                superseded_by,
            });
            positions.push(i);
        } else if let Some(s) = superseded_by {
            // Still check the reference of an otherwise broken command.
            let names = command_names(items);
            check_reference(c, &names, &path, None, &s);
        }
    }
    let names = command_names(items);
    for (cmd, i) in commands.iter().zip(&positions) {
        if let Some(s) = &cmd.superseded_by {
            check_reference(c, &names, &format!("commands[{i}]"), Some(&cmd.name), s);
        }
    }
    let mut index = HashMap::new();
    for (i, cmd) in commands.iter().enumerate() {
        index.entry(cmd.name.clone()).or_insert(i);
    }
    for (i, cmd) in commands.iter().enumerate() {
        for a in &cmd.aliases {
            index.entry(a.clone()).or_insert(i);
        }
    }
    CommandsManifest {
        header,
        commands,
        index,
    }
}

fn command_names(items: &[Value]) -> BTreeSet<String> {
    items
        .iter()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .map(str::to_string)
        .collect()
}

fn check_reference(
    c: &mut Checker,
    names: &BTreeSet<String>,
    path: &str,
    own: Option<&str>,
    target: &str,
) {
    if own == Some(target) {
        c.push(
            format!("{path}.superseded_by"),
            format!("superseded_by {target:?} names the command itself"),
        );
    } else if !names.contains(target) {
        c.push(
            format!("{path}.superseded_by"),
            format!("superseded_by {target:?} does not name an existing command"),
        );
    }
}

fn enum_field<T>(
    c: &mut Checker,
    obj: &Map<String, Value>,
    key: &str,
    path: &str,
    parse: fn(&str) -> Option<T>,
    expected: &str,
) -> Option<T> {
    let p = join_path(path, key);
    match obj.get(key) {
        None | Some(Value::Null) => {
            c.push(p, format!("missing (one of {expected})"));
            None
        }
        Some(Value::String(s)) => {
            let parsed = parse(s);
            if parsed.is_none() {
                c.push(p, format!("{s:?} is not one of {expected}"));
            }
            parsed
        }
        Some(other) => {
            c.push(
                p,
                format!("must be one of {expected}, found {}", kind_of(other)),
            );
            None
        }
    }
}

/// Checks the commands manifest against the ifp/1 tool list: every command maps (by
/// [`Command::ifp1_tool`]) to a tool whose `x-openphone.superseded_command` names it back, with
/// the same aliases, risk, capability (`x-openphone.surface_capability`), confirmation and
/// Android tool; and every tool's old command exists. Returns every mismatch (empty when the two
/// agree, as they do in the corpus).
pub fn cross_check_catalogue(
    commands: &CommandsManifest,
    catalogue: &ToolCatalogue,
) -> Vec<Problem> {
    let mut c = Checker::new(COMMANDS_FILE);
    for (i, cmd) in commands.commands.iter().enumerate() {
        let path = format!("commands[{i}]");
        let Some(tool_name) = cmd.ifp1_tool() else {
            c.push(
                format!("{path}.name"),
                format!(
                    "{:?} does not start with {COMMAND_PREFIX:?}, so it has no ifp/1 tool name",
                    cmd.name
                ),
            );
            continue;
        };
        let Some(tool) = catalogue.get(tool_name) else {
            c.push(
                format!("{path}.name"),
                format!(
                    "{} maps to ifp/1 tool {tool_name:?}, which the tool list does not declare",
                    cmd.name
                ),
            );
            continue;
        };
        let mut differ = |field: &str, ours: String, theirs: String| {
            if ours != theirs {
                c.push(
                    format!("{path}.{field}"),
                    format!("{ours:?} here, but ifp/1 tool {tool_name} says {theirs:?}"),
                );
            }
        };
        differ(
            "name",
            cmd.name.clone(),
            tool.superseded_command.clone().unwrap_or_default(),
        );
        differ(
            "aliases",
            cmd.aliases.join(", "),
            tool.superseded_aliases.join(", "),
        );
        differ("risk", cmd.risk.to_string(), tool.risk.to_string());
        differ(
            "capability",
            cmd.capability.clone(),
            tool.surface_capability.clone().unwrap_or_default(),
        );
        differ(
            "confirmation",
            cmd.confirmation.as_str().to_string(),
            tool.old_confirmation
                .map(|p| p.as_str().to_string())
                .unwrap_or_default(),
        );
        differ(
            "android_tool",
            cmd.android_tool.clone(),
            tool.android_tool.clone().unwrap_or_default(),
        );
    }
    for tool in &catalogue.tools {
        if let Some(old) = &tool.superseded_command {
            if commands.resolve(old).map(|c| c.name.as_str()) != Some(old.as_str()) {
                c.push(
                    String::new(),
                    format!("ifp/1 tool {} supersedes command {old:?}, which this manifest does not have", tool.name),
                );
            }
        }
    }
    c.into_problems()
}
