//! Whether a JSON text is already exactly what [`super::stringify`] writes for it, proven in one
//! pass without parsing it into a value.
//!
//! Apart from the writer ([`super`]) because it is its inverse question, asked on the hot path of
//! dials so their request and response can be kept as received instead of re-written.

use smallvec::SmallVec;

use super::js_number_in;

/// Deepest nesting of arrays and objects serde_json parses (its recursion limit, 128, counts
/// one more); [`is_stringify_form`] proves nothing deeper.
const MAX_NESTING: usize = 127;

/// Whether `text`, already known to be one valid JSON value (a [`serde_json::value::RawValue`]),
/// is exactly what [`stringify`] writes for it: `stringify(parse(text)) == text`.
///
/// A conservative one-pass scan with no allocation for objects of up to 16 keys: `true` only when
/// there is no whitespace, every string uses `JSON.stringify`'s escapes (no `\/`, no `\u` except
/// the lowercase `\u00xx` of a control character without a short name), every number is written
/// as JavaScript writes it, no object repeats a key, no object has an array-index key (which
/// [`stringify`] would move first), and arrays and objects nest at most 127 levels (deeper text
/// serde_json refuses to parse). `false` means "not proven": the caller falls back to parsing and
/// [`stringify`]. Used to keep a dial's request and response as received without re-writing them
/// ([`switchboard_dials::JsonText`]).
pub fn is_stringify_form(text: &str) -> bool {
    is_stringify_form_within(text, MAX_NESTING)
}

/// [`is_stringify_form`] with at most `max_depth` levels of arrays and objects (capped at 127).
pub fn is_stringify_form_within(text: &str, max_depth: usize) -> bool {
    stringify_form_end(text, 0, max_depth) == Some(text.len())
}

/// Where the JSON value starting at byte `start` of `text` ends (the index after it), when that
/// value is exactly what [`stringify`](super::stringify) writes for it, with at most `max_depth`
/// levels of arrays and objects (capped at 127); what follows it is not looked at.
///
/// Unlike [`is_stringify_form`], `text` need not be known valid JSON: the scan proves the value
/// valid as it goes (its structure, its literals and numbers, and strings without raw control
/// characters), so a reader of a larger document (a dial frame) can find the end of a request
/// and prove it compact in the same pass. `None` means "not proven": the value may still be
/// valid JSON in another form, or not JSON at all; the caller parses it to know which.
pub fn stringify_form_end(text: &str, start: usize, max_depth: usize) -> Option<usize> {
    let max_depth = max_depth.min(MAX_NESTING);
    let b = text.as_bytes();
    let mut i = start;
    // The keys of the open objects (byte ranges in `text`), innermost last; `objects` holds
    // where each open object's keys start in `keys`.
    // On the call's stack for ordinary values (a dial's request is scanned once per dial, and
    // three heap vectors a scan were a tenth of the link's time per dial); the heap past that.
    let mut keys: Keys = SmallVec::new();
    let mut objects: SmallVec<[usize; 16]> = SmallVec::new();
    let mut depth_kinds: SmallVec<[u8; 32]> = SmallVec::new();
    loop {
        // A value starts at `i`.
        let &c = b.get(i)?;
        if matches!(c, b'{' | b'[') && depth_kinds.len() >= max_depth {
            return None;
        }
        match c {
            b'{' => {
                i += 1;
                depth_kinds.push(b'{');
                objects.push(keys.len());
                if b.get(i) == Some(&b'}') {
                    i += 1;
                    depth_kinds.pop();
                    objects.pop();
                } else {
                    i = object_key(b, i, &mut keys, &objects)?;
                    continue;
                }
            }
            b'[' => {
                i += 1;
                if b.get(i) == Some(&b']') {
                    i += 1;
                } else {
                    depth_kinds.push(b'[');
                    continue;
                }
            }
            b'"' => i = string_end(b, i)?,
            b't' if b[i..].starts_with(b"true") => i += 4,
            b'f' if b[i..].starts_with(b"false") => i += 5,
            b'n' if b[i..].starts_with(b"null") => i += 4,
            b'-' | b'0'..=b'9' => i = number_end(text, i)?,
            _ => return None,
        }
        // After a value: close containers or move to the next element.
        loop {
            match (depth_kinds.last(), b.get(i)) {
                (None, _) => return Some(i),
                (Some(b'['), Some(b',')) => {
                    i += 1;
                    break;
                }
                (Some(b'['), Some(b']')) | (Some(b'{'), Some(b'}')) => {
                    if depth_kinds.pop() == Some(b'{') {
                        if let Some(start) = objects.pop() {
                            keys.truncate(start);
                        }
                    }
                    i += 1;
                }
                (Some(b'{'), Some(b',')) => {
                    i = object_key(b, i + 1, &mut keys, &objects)?;
                    break;
                }
                _ => return None,
            }
        }
    }
}

/// The keys of the open objects [`is_stringify_form_within`] holds (byte ranges).
type Keys = SmallVec<[(usize, usize); 64]>;

/// Reads `"key":` at `i` for the innermost open object; checks the key is canonical, not an
/// array index and not repeated. Returns where the value starts.
fn object_key(b: &[u8], i: usize, keys: &mut Keys, objects: &[usize]) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let end = string_end(b, i)?;
    let key = b.get(i + 1..end - 1)?;
    if !key.is_empty() && key.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let start = *objects.last()?;
    let seen = keys.get(start..)?;
    if seen.len() >= 16 {
        return None;
    }
    if seen
        .iter()
        .any(|&(s, e)| b.get(s..e).is_some_and(|k| k == key))
    {
        return None;
    }
    keys.push((i + 1, end - 1));
    if b.get(end) != Some(&b':') {
        return None;
    }
    Some(end + 1)
}

/// The index after the string literal starting at `i` (a `"`), when its escapes are the ones
/// [`write_string`] writes.
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        j = string_special(b, j)?;
        match b[j] {
            b'"' => return Some(j + 1),
            b'\\' => {}
            // A raw control character: not JSON (the text may not be known valid).
            _ => return None,
        }
        match b.get(j + 1)? {
            b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => j += 2,
            b'u' => {
                let hex = b.get(j + 2..j + 6)?;
                if hex[0] != b'0' || hex[1] != b'0' || !matches!(hex[2], b'0' | b'1') {
                    return None;
                }
                let low = match hex[3] {
                    d @ b'0'..=b'9' => d - b'0',
                    d @ b'a'..=b'f' => d - b'a' + 10,
                    _ => return None,
                };
                let code = (hex[2] - b'0') * 16 + low;
                if matches!(code, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d) {
                    return None;
                }
                j += 6;
            }
            _ => return None,
        }
    }
}

/// The index of the first byte at or after `from` that ends a run of plain string text: a `"`,
/// a `\` or a control character (below 0x20, which JSON never holds raw in a string); `None`
/// when there is none. Eight bytes at a time (a string's text is mostly plain, and most are
/// short, where a call into `memchr` costs more than it saves).
pub fn string_special(b: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // High bit of each byte that is zero (exact for the lowest such byte, which is all that
    // is used: a borrow only runs upwards from a true match).
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let mut j = from;
    while let Some(chunk) = b.get(j..j + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let v = u64::from_le_bytes(word);
        let hit = zero(v ^ (ONES * u64::from(b'"')))
            | zero(v ^ (ONES * u64::from(b'\\')))
            | (v.wrapping_sub(ONES * 0x20) & !v & HIGH);
        if hit != 0 {
            return Some(j + (hit.trailing_zeros() / 8) as usize);
        }
        j += 8;
    }
    while let Some(&c) = b.get(j) {
        if c == b'"' || c == b'\\' || c < 0x20 {
            return Some(j);
        }
        j += 1;
    }
    None
}

/// The index after the number starting at `i`, when JavaScript writes that number the same way.
fn number_end(text: &str, i: usize) -> Option<usize> {
    let b = text.as_bytes();
    let mut j = i;
    while let Some(c) = b.get(j) {
        if matches!(c, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
            j += 1;
        } else {
            break;
        }
    }
    let token = text.get(i..j)?;
    let digits = token.strip_prefix('-').unwrap_or(token);
    let plain_integer = !digits.is_empty()
        && digits.bytes().all(|c| c.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && digits.len() <= 15;
    if plain_integer {
        // Exact in f64 and written as is, except "-0" (written "0").
        return (token != "-0").then_some(j);
    }
    let value: f64 = token.parse().ok()?;
    (js_number_in(&mut ryu_js::Buffer::new(), value) == token).then_some(j)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Value;

    use crate::js_json::stringify;

    /// Whether `t` is proven compact and, if so, that it is exactly what `stringify` writes.
    fn holds(t: &str) -> bool {
        if !is_stringify_form(t) {
            return false;
        }
        let v: Value = match serde_json::from_str(t) {
            Ok(v) => v,
            Err(e) => panic!("is_stringify_form({t:?}) but serde_json refuses it: {e}"),
        };
        assert_eq!(stringify(&v), t, "is_stringify_form({t:?})");
        true
    }

    #[test]
    fn stringify_form_examples() {
        let sixteen: Vec<String> = (0..16).map(|i| format!("\"k{i}\":{i}")).collect();
        let sixteen = format!("{{{}}}", sixteen.join(","));
        let yes = [
            "0",
            "-1",
            "null",
            "true",
            "false",
            "\"\"",
            "[]",
            "{}",
            "{\"\":0}",
            "\"\\u0000\\u001f\\u000b\\b\\f\\n\\r\\t\\\"\\\\/\u{7f}é😀\u{2028}\"",
            r#"{"a":[1,"x",null,true,false,-5,0.5,1e+21,1.5e-7,{},[]],"b":{"a":{"a":0}}}"#,
            "9007199254740992",
            "-9007199254740992",
            "12345678901234567000",
            "100000000000000000000",
            "0.000001",
            "1e-7",
            "5e-324",
            "1.7976931348623157e+308",
            "0.30000000000000004",
            r#"{"a01":1,"0a":2,"-1":3,"1.5":4}"#,
            &sixteen,
        ];
        for t in yes {
            assert!(holds(t), "{t:?} is compact");
        }
        let seventeen = format!("{}{}", &sixteen[..sixteen.len() - 1], ",\"k16\":16}");
        let no = [
            " 0",
            "0 ",
            "[1, 2]",
            "{\"a\" :1}",
            "{\"a\":\n1}",
            "1.0",
            "-0",
            "-0.0",
            "1e3",
            "1E+21",
            "1e21",
            "1.50",
            "0.1e1",
            "12345678901234567890",
            "9007199254740993",
            "1e400",
            "\"\\/\"",
            "\"\\u0041\"",
            "\"\\u001F\"",
            "\"\\u000a\"",
            "\"\\u0008\"",
            "\"\\ud83d\\ude00\"",
            "\"\\ud800\"",
            r#"{"a":1,"a":2}"#,
            r#"{"a":{"b":1},"a":2}"#,
            r#"{"b":1,"12":1}"#,
            r#"{"b":1,"4294967294":1}"#,
        ];
        for t in no {
            assert!(!holds(t), "{t:?} is not proven compact");
        }
        // Compact, but beyond what the scan proves today (all-digit keys, more than 16 keys):
        // either answer is allowed, `true` only if right.
        for t in [
            r#"{"0":1}"#,
            r#"{"01":1}"#,
            r#"{"4294967295":1}"#,
            &seventeen,
        ] {
            holds(t);
        }
        // Repeated keys in different objects are fine.
        assert!(holds(r#"{"a":{"a":1},"b":{"a":2}}"#));
    }

    /// serde_json reads at most 127 levels of nesting; deeper text is valid JSON it refuses, so
    /// it is never "proven" compact.
    #[test]
    fn stringify_form_stops_where_serde_json_does() {
        let nested =
            |open: &str, close: &str, n: usize| format!("{}{}", open.repeat(n), close.repeat(n));
        for (open, close) in [("[", "]"), ("{\"a\":", "}"), ("[{\"a\":", "}]")] {
            for n in [1, 60, 63, 64, 120, 126, 127, 128, 129, 500] {
                let t = nested(open, close, n);
                let t = if open == "{\"a\":" {
                    t.replacen(":}", ":{}}", 1)
                } else if open == "[{\"a\":" {
                    t.replacen(":}", ":[]}", 1)
                } else {
                    t
                };
                // `holds` fails when serde_json refuses a text proven compact.
                let proven = holds(&t);
                let levels = t.bytes().filter(|c| matches!(c, b'[' | b'{')).count();
                assert!(
                    proven || levels > 64,
                    "{levels} levels ({open}): not proven"
                );
            }
        }
    }

    fn arb_string() -> impl Strategy<Value = String> + Clone {
        let c = prop_oneof![
            4 => prop::char::range('a', 'e'),
            2 => prop::char::range('\u{0}', '\u{1f}'),
            2 => prop::sample::select(vec![
                '"', '\\', '/', '\u{7f}', 'é', '😀', '\u{2028}', '\u{fffd}', ' ', '0', '9', 'u',
            ]),
            1 => any::<char>(),
        ];
        prop::collection::vec(c, 0..8).prop_map(|cs| cs.into_iter().collect())
    }

    fn arb_number() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-1000i64..1000).prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
            (-1e-3f64..1e-3).prop_map(Value::from),
            prop::sample::select(vec![
                0.0,
                -0.0,
                0.1,
                0.5,
                1.0,
                1e20,
                1e21,
                1e-6,
                1e-7,
                1.5e-7,
                5e-324,
                f64::MAX,
                f64::MIN_POSITIVE,
                9007199254740992.0,
                9007199254740994.0,
                -9007199254740994.0,
                123456789.125,
                -2.5e300,
            ])
            .prop_map(Value::from),
            prop::sample::select(vec![
                (1u64 << 53) - 1,
                1 << 53,
                (1 << 53) + 1,
                u64::MAX,
                12345678901234567890,
            ])
            .prop_map(Value::from),
            prop::sample::select(vec![i64::MIN, -(1i64 << 53), -(1i64 << 53) - 1])
                .prop_map(Value::from),
        ]
    }

    /// Values whose objects have no all-digit key and at most 16 keys (a `Map` never repeats
    /// one).
    fn arb_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            arb_number(),
            arb_string().prop_map(Value::String),
        ];
        let key = arb_string().prop_filter("no array-index-like key", |k| {
            k.is_empty() || !k.bytes().all(|b| b.is_ascii_digit())
        });
        leaf.prop_recursive(5, 96, 8, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                prop::collection::vec((key.clone(), inner), 0..=16)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    /// Any value, all-digit and many keys included.
    fn arb_any_value() -> impl Strategy<Value = Value> {
        let key = prop_oneof![
            3 => arb_string(),
            1 => prop::sample::select(vec!["0", "12", "01", "4294967294", "4294967295", "-1"])
                .prop_map(String::from),
            1 => (0..24u8).prop_map(|n| format!("k{n}")),
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            arb_number(),
            arb_string().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 96, 24, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((key.clone(), inner), 0..24)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    /// JSON text made by hand: odd number spellings, escapes, repeated and all-digit keys,
    /// whitespace; mostly compact pieces, so that one oddity in otherwise compact text is common.
    fn arb_text() -> impl Strategy<Value = String> {
        let compact = prop::sample::select(vec![
            "0",
            "1",
            "-1",
            "1.5",
            "1e+21",
            "1e-7",
            "0.000001",
            "100000000000000000000",
            "9007199254740992",
            "12345678901234567000",
            "5e-324",
            "-2.5e+300",
            "true",
            "false",
            "null",
            r#""""#,
            r#""a""#,
            r#""\u001f""#,
            r#""\n""#,
            r#""\b""#,
            r#""\\""#,
            r#""\"""#,
            "\"é😀\"",
            "\"\u{7f}\"",
            "[]",
            "{}",
        ]);
        let odd = prop::sample::select(vec![
            "-0",
            "1.0",
            "1.50",
            "1e3",
            "1E3",
            "1e21",
            "1e-6",
            "9007199254740993",
            "12345678901234567890",
            "0.1e1",
            r#""\/""#,
            r#""\u0041""#,
            r#""\u001F""#,
            r#""\u000a""#,
            r#""\u0008""#,
            r#""\ud83d\ude00""#,
            "[ ]",
            "{ }",
        ]);
        let leaf = prop_oneof![4 => compact, 1 => odd].prop_map(String::from);
        let key = prop_oneof![
            4 => prop::sample::select(vec![r#""a""#, r#""b""#, r#""""#, r#""é""#, r#""a/""#])
                .prop_map(String::from),
            1 => prop::sample::select(vec![
                r#""\u0061""#,
                r#""0""#,
                r#""12""#,
                r#""01""#,
                r#""4294967295""#,
                r#""a\/""#,
                r#""\n""#,
                r#""\u000a""#,
            ])
            .prop_map(String::from),
            2 => (0..20u8).prop_map(|n| format!("\"k{n}\"")),
        ];
        let sep = prop::sample::select(vec![",", ",", ",", ",", ", ", " ,\n"]);
        let colon = prop::sample::select(vec![":", ":", ":", ":", ": ", " :"]);
        leaf.prop_recursive(4, 64, 20, move |inner| {
            prop_oneof![
                (prop::collection::vec(inner.clone(), 0..6), sep.clone())
                    .prop_map(|(items, sep)| format!("[{}]", items.join(sep))),
                (
                    prop::collection::vec((key.clone(), inner), 0..18),
                    sep.clone(),
                    colon.clone(),
                )
                    .prop_map(|(kv, sep, colon)| {
                        let kv: Vec<String> = kv
                            .into_iter()
                            .map(|(k, v)| format!("{k}{colon}{v}"))
                            .collect();
                        format!("{{{}}}", kv.join(sep))
                    }),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]


        #[test]
        fn stringify_output_is_proven_compact(v in arb_value()) {
            let t = stringify(&v);
            prop_assert!(is_stringify_form(&t), "not proven: {t}");
            prop_assert!(holds(&t));
        }

        #[test]
        fn proven_compact_text_is_what_stringify_writes(
            v in arb_any_value(),
            pretty in any::<bool>(),
        ) {
            let t = if pretty {
                serde_json::to_string_pretty(&v)
            } else {
                serde_json::to_string(&v)
            };
            if let Ok(t) = t {
                holds(&t);
                holds(&stringify(&v));
            }
        }


        /// The prefix scan reads text not known to be JSON (the rest of a frame after the
        /// value, or anything at all): whatever it proves is one valid JSON value, exactly what
        /// `stringify` writes, and it agrees with the whole-text answer.
        #[test]
        fn prefix_scan_proves_only_valid_compact_values(
            t in arb_text(),
            cut in any::<prop::sample::Index>(),
            tail in prop::sample::select(vec!["", ",", "}", "]", " x", "\u{1}", "\"", ",\"a\":1}"]),
            control in any::<prop::sample::Index>(),
        ) {
            let mut bytes = t.clone().into_bytes();
            // Sometimes a raw control character put into the text.
            if control.index(3) == 0 && !bytes.is_empty() {
                let at = control.index(bytes.len());
                bytes[at] = 0x0a;
            }
            let Ok(mangled) = String::from_utf8(bytes) else { return Ok(()) };
            let at = cut.index(mangled.len() + 1);
            let at = (0..=at).rev().find(|&i| mangled.is_char_boundary(i)).unwrap_or(0);
            for text in [format!("{mangled}{tail}"), format!("{}{tail}", &mangled[..at])] {
                if let Some(end) = stringify_form_end(&text, 0, MAX_NESTING) {
                    let value = &text[..end];
                    prop_assert!(holds(value), "proven but not compact: {value:?}");
                }
                prop_assert_eq!(
                    is_stringify_form(&text),
                    stringify_form_end(&text, 0, MAX_NESTING) == Some(text.len())
                );
            }
        }

        #[test]
        fn proven_compact_hand_made_text_is_what_stringify_writes(t in arb_text()) {
            prop_assume!(serde_json::from_str::<Value>(&t).is_ok());
            holds(&t);
        }

    }
}
