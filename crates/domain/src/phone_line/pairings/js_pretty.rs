//! Writing JSON as `JSON.stringify(value, null, 2)` does, so that a pairings file Switchboard
//! wrote is byte for byte the file LumiAgent would write, and reads back and writes again the same.

use serde_json::Value;

/// `JSON.stringify(value, null, 2)`: two-space indentation, `"key": value`, empty objects and
/// arrays as `{}` / `[]`, keys in JavaScript's order, strings and numbers as JavaScript writes
/// them.
pub fn js_pretty(value: &Value) -> String {
    let mut out = String::new();
    write_pretty(&mut out, value, 0);
    out
}

fn write_pretty(out: &mut String, value: &Value, depth: usize) {
    let indent = |out: &mut String, d: usize| {
        for _ in 0..d {
            out.push_str("  ");
        }
    };
    match value {
        Value::Object(map) if !map.is_empty() => {
            out.push('{');
            for (i, (k, v)) in switchboard_wire::js_json::js_key_order(map)
                .into_iter()
                .enumerate()
            {
                out.push_str(if i == 0 { "\n" } else { ",\n" });
                indent(out, depth + 1);
                switchboard_wire::js_json::write_string(out, k);
                out.push_str(": ");
                write_pretty(out, v, depth + 1);
            }
            out.push('\n');
            indent(out, depth);
            out.push('}');
        }
        Value::Array(items) if !items.is_empty() => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                out.push_str(if i == 0 { "\n" } else { ",\n" });
                indent(out, depth + 1);
                write_pretty(out, v, depth + 1);
            }
            out.push('\n');
            indent(out, depth);
            out.push(']');
        }
        other => out.push_str(&switchboard_wire::js_json::stringify(other)),
    }
}
