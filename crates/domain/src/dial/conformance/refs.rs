//! The spec lines findings cite: one constant a rule, each the file, the 1-based line, the
//! section and the spec's own words there. A test reads every cited line from the spec files, so
//! a spec edit that moves or rewords a line fails loudly instead of leaving a finding citing the
//! wrong words.

use super::SpecRef;

macro_rules! spec {
    ($name:ident, $file:literal, $line:literal, $section:literal, $words:literal) => {
        #[doc = concat!("`", $file, "` line ", stringify!($line), " (\"", $section, "\"): `", $words, "`")]
        pub const $name: SpecRef = SpecRef {
            file: $file,
            line: $line,
            section: $section,
            words: $words,
        };
    };
}

spec!(
    REQ_SYSTEM_PROMPT,
    "phone-line.md",
    65,
    "Request and response shapes",
    "{ op: \"system_prompt\"; userId: string; characterId: string }"
);
spec!(
    REQ_CHECK_WRITE,
    "phone-line.md",
    66,
    "Request and response shapes",
    "{ op: \"check_write\";   userId: string; characterId: string; extPath: string }"
);
spec!(
    REQ_CHECK_READ,
    "phone-line.md",
    67,
    "Request and response shapes",
    "{ op: \"check_read\";    userId: string; characterId: string; extPath: string }"
);
spec!(
    REQ_LIST_ITEMS,
    "phone-line.md",
    68,
    "Request and response shapes",
    "{ op: \"list_items\";    userId: string; surfaceId: string; characterId?: string }"
);
spec!(
    REQ_READ_ITEM,
    "phone-line.md",
    69,
    "Request and response shapes",
    "{ op: \"read_item\";     userId: string; surfaceId: string; itemId: string; field?: string }"
);
spec!(REQ_WRITE_FIELD, "phone-line.md", 70, "Request and response shapes", "{ op: \"write_field\";   userId: string; surfaceId: string; itemId: string; field: string; value: unknown }");
spec!(REQ_GREP_ITEMS, "phone-line.md", 71, "Request and response shapes", "{ op: \"grep_items\";    userId: string; surfaceId: string; pattern: string; characterId?: string; ignoreCase?: boolean; fieldPrefix?: string; head?: number }");
spec!(
    REQ_DESCRIBE,
    "phone-line.md",
    64,
    "Request and response shapes",
    "{ op: \"describe\" }"
);
spec!(
    REQ_CALL_ID,
    "phone-line.md",
    72,
    "Request and response shapes",
    ") & { callId?: string };"
);
spec!(
    RES_DESCRIBE,
    "phone-line.md",
    74,
    "Request and response shapes",
    "// describe       -> SurfaceManifest"
);
spec!(
    RES_SYSTEM_PROMPT,
    "phone-line.md",
    75,
    "Request and response shapes",
    "// system_prompt  -> { text: string | null }"
);
spec!(
    RES_CHECK_WRITE,
    "phone-line.md",
    76,
    "Request and response shapes",
    "// check_write    -> { ok: boolean; message?: string }"
);
spec!(
    RES_CHECK_READ,
    "phone-line.md",
    77,
    "Request and response shapes",
    "// check_read     -> { ok: boolean; message?: string }"
);
spec!(
    RES_LIST_ITEMS,
    "phone-line.md",
    78,
    "Request and response shapes",
    "// list_items     -> { items: { id, label, brief? }[]; total }"
);
spec!(
    RES_READ_ITEM,
    "phone-line.md",
    79,
    "Request and response shapes",
    "// read_item      -> { value: unknown; meta?: object }"
);
spec!(
    RES_WRITE_FIELD,
    "phone-line.md",
    80,
    "Request and response shapes",
    "// write_field    -> { ok: boolean; error?: string }"
);
spec!(RES_GREP_ITEMS, "phone-line.md", 81, "Request and response shapes", "// grep_items     -> { hits: { itemId, itemLabel?, fieldPath, line, match, preview }[]; truncated }");
spec!(CHARACTER_SCOPE, "phone-line.md", 83, "Request and response shapes", "characterId on list_items / grep_items is present only when the surface is per_character-scoped.");
spec!(
    UNKNOWN_OP,
    "phone-line.md",
    29,
    "How it works",
    "default: throw new Error(`unknown op: ${(req as { op: string }).op}`);"
);
spec!(EXTENSION_OPS, "phone-line.md", 59, "Operations", "LumiRealm exposes additional WS-op mutation ops (asset_mutate, attach_module, detach_module, set_toggle, set_chat_variable, set_default_variables_text)");
spec!(
    MISSING_USER_ID,
    "upstream-behaviour.md",
    40,
    "LumiRealm's handler errors",
    "`request missing userId` (every op but `describe`)"
);
