//! The TypeScript of the IPC surface (`ui/src/bindings/ipc.ts`): the map of every command
//! (what the window sends, what it gets back) and of every event ([`super::AppEvent::ALL`]),
//! rendered from lists kept in Rust, so the front end's calls and listeners are checked against
//! them by `tsc`. The shell's command list builds the [`CommandSpec`]s; its test writes the
//! file and the bindings drift check in the test command catches a stale one.

use std::collections::BTreeSet;

/// One command as the front end sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    /// The command's name (`invoke` takes it).
    pub name: &'static str,
    /// `(camelCase name, TypeScript type, optional)` of each argument the window sends.
    pub args: Vec<(String, String, bool)>,
    /// The TypeScript type of the answer.
    pub ret: String,
}

/// An argument: Tauri's camelCase key for `name`; `Option` arguments may be left out.
pub fn arg(name: &str, (ty, optional): (String, bool)) -> (String, String, bool) {
    let mut out = String::new();
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    (out, ty, optional)
}

/// Whether a TypeScript type names an optional argument (`T | null`).
pub fn optional(ty: &str) -> bool {
    ty.ends_with(" | null")
}

/// The names a TypeScript type refers to that live in their own binding file.
fn referenced(ty: &str, into: &mut BTreeSet<String>) {
    for word in ty.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        let builtin = matches!(word, "Array" | "Record" | "Partial");
        if !builtin && word.starts_with(|c: char| c.is_ascii_uppercase()) {
            into.insert(word.to_string());
        }
    }
}

/// The text of `ui/src/bindings/ipc.ts` for `commands` and the app's events.
pub fn render(commands: &[CommandSpec]) -> String {
    let mut names = BTreeSet::new();
    for c in commands {
        referenced(&c.ret, &mut names);
        for (_, t, _) in &c.args {
            referenced(t, &mut names);
        }
    }
    for e in super::AppEvent::ALL {
        referenced(e.payload, &mut names);
    }
    let mut out = String::from(
        "// Generated from the command list in src-tauri/src/commands/mod.rs and\n\
         // switchboard::app::AppEvent::ALL by `cargo test`; do not edit.\n",
    );
    for n in &names {
        out.push_str(&format!("import type {{ {n} }} from \"./{n}\";\n"));
    }
    out.push_str("\n/** Every command: what the window sends and what it gets back. */\nexport type Commands = {\n");
    for c in commands {
        let args = if c.args.is_empty() {
            "Record<string, never>".to_string()
        } else {
            let fields: Vec<String> = c
                .args
                .iter()
                .map(|(n, t, o)| format!("{n}{}: {t}", if *o { "?" } else { "" }))
                .collect();
            format!("{{ {} }}", fields.join("; "))
        };
        let ret = if c.ret == "null" { "void" } else { &c.ret };
        out.push_str(&format!("  {}: {{ args: {args}; ret: {ret} }};\n", c.name));
    }
    out.push_str("};\n\n/** A command's name. */\nexport type CommandName = keyof Commands;\n");
    out.push_str("\n/** Every event the window listens to, with its payload. */\nexport type AppEvents = {\n");
    for e in super::AppEvent::ALL {
        out.push_str(&format!("  \"{}\": {};\n", e.name, e.payload));
    }
    out.push_str("};\n\n/** An event's name. */\nexport type AppEventName = keyof AppEvents;\n");
    out
}
