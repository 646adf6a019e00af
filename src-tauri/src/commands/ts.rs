//! The generated TypeScript of the IPC surface (`ui/src/bindings/ipc.ts`, rendered by
//! [`switchboard::app::ipc_ts`]) from the command list ([`super::command_specs`]). Written by
//! the test `ipc_bindings_are_current`; the bindings drift check in the test command then
//! catches a stale file.

pub use switchboard::app::ipc_ts::{arg, optional, CommandSpec};

/// The TypeScript type of `T` as ts-rs names it, with 64-bit integers as `number` (they are
/// JSON numbers on the wire).
pub fn ty<T: ts_rs::TS + ?Sized>() -> String {
    T::name().replace("bigint", "number")
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

/// The text of `ui/src/bindings/ipc.ts`.
pub fn ipc_bindings() -> String {
    switchboard::app::ipc_ts::render(&super::command_specs())
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
        assert!(text.contains("dials_subscribe: { args: { filter?: DialFilter | null; source?: DialSource | null; line?: string | null; channel: { onmessage: (message: DialBatchMsg) => void } }; ret: number };"), "{text}");
        assert!(text.contains("  \"switchboard://notice\": HubNotice;"));
        assert!(text.contains("import type { HubNotice } from \"./HubNotice\";"));
    }

    #[test]
    fn every_command_is_listed_once() {
        let specs = super::super::command_specs();
        let names: std::collections::BTreeSet<_> = specs.iter().map(|c| c.name).collect();
        assert_eq!(names.len(), specs.len());
        assert_eq!(specs.len(), super::super::ALL_COMMANDS.len());
    }
}
