//! The generated TypeScript of the IPC surface: the command map and the event map
//! (`ui/src/bindings/ipc.ts`), both from Rust lists ([`super::command_specs`] and
//! [`switchboard::app::AppEvent::ALL`]), so the front end's calls and listeners are checked
//! against them by `tsc`. Written by the test `ipc_bindings_are_current`; the bindings drift
//! check in the test command then catches a stale file.

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

/// The TypeScript type of `T` as ts-rs names it, with 64-bit integers as `number` (they are
/// JSON numbers on the wire).
pub fn ty<T: ts_rs::TS + ?Sized>() -> String {
    T::name().replace("bigint", "number")
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

macro_rules! arg_ty {
    (@channel $ty:ty) => {
        (
            format!(
                "{{ onmessage: (message: {}) => void }}",
                $crate::commands::ts::ty::<$ty>()
            ),
            false,
        )
    };
    ($ty:ty) => {{
        let t = $crate::commands::ts::ty::<$ty>();
        let o = $crate::commands::ts::optional(&t);
        (t, o)
    }};
}
pub(crate) use arg_ty;

/// The names a TypeScript type refers to that live in their own binding file.
fn referenced(ty: &str, into: &mut BTreeSet<String>) {
    for word in ty.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        let builtin = matches!(word, "Array" | "Record" | "Partial");
        if !builtin && word.starts_with(|c: char| c.is_ascii_uppercase()) {
            into.insert(word.to_string());
        }
    }
}

/// The text of `ui/src/bindings/ipc.ts`.
pub fn ipc_bindings() -> String {
    let commands = super::command_specs();
    let mut names = BTreeSet::new();
    for c in &commands {
        referenced(&c.ret, &mut names);
        for (_, t, _) in &c.args {
            referenced(t, &mut names);
        }
    }
    for e in switchboard::app::AppEvent::ALL {
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
    for c in &commands {
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
    for e in switchboard::app::AppEvent::ALL {
        out.push_str(&format!("  \"{}\": {};\n", e.name, e.payload));
    }
    out.push_str("};\n\n/** An event's name. */\nexport type AppEventName = keyof AppEvents;\n");
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn ipc_bindings_are_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../ui/src/bindings/ipc.ts");
        let text = ipc_bindings();
        if std::fs::read_to_string(path).ok().as_deref() != Some(text.as_str()) {
            std::fs::write(path, &text).unwrap();
        }
        assert!(text.contains("  unpair_phone: { args: { deviceId: string }; ret: boolean };"));
        assert!(text.contains("dials_subscribe: { args: { filter?: DialFilter | null; source?: DialSource | null; channel: { onmessage: (message: DialBatchMsg) => void } }; ret: number };"), "{text}");
        assert!(text.contains("  \"switchboard://notice\": HubNotice;"));
        assert!(text.contains("import type { HubNotice } from \"./HubNotice\";"));
    }

    #[test]
    fn every_command_is_listed_once() {
        let specs = super::super::command_specs();
        let names: BTreeSet<_> = specs.iter().map(|c| c.name).collect();
        assert_eq!(names.len(), specs.len());
        assert_eq!(specs.len(), super::super::ALL_COMMANDS.len());
    }
}
