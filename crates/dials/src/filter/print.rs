//! Writing a [`DialQuery`] back as its canonical line: terms in the order given, values quoted
//! only when they must be, durations and relative times in their largest whole unit. Parsing
//! the printed line gives the same query back, which is what lets the window show the line the
//! core understood.

use std::fmt;

use super::ast::{Atom, DialQuery, RowKind, SpecWant, Term, TimeSpec, UNITS};

fn print_duration(ms: u64) -> String {
    if ms != 0 && ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

fn print_time(t: TimeSpec) -> String {
    match t {
        TimeSpec::Ago(ms) => {
            for (u, scale) in UNITS {
                if ms % scale == 0 {
                    return format!("-{}{u}", ms / scale);
                }
            }
            // Not whole seconds (only possible when built in code): round up to seconds.
            format!("-{}s", ms.div_euclid(1000) + 1)
        }
        TimeSpec::At(ms) => match jiff::Timestamp::from_millisecond(ms) {
            Ok(ts) => {
                if ms % 1000 == 0 {
                    ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
                } else {
                    ts.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
                }
            }
            Err(_) => "1970-01-01T00:00:00Z".into(),
        },
    }
}

/// Whether a value can be written without quotes in a field (`op:x`).
fn bare_ok_field(v: &str) -> bool {
    !v.is_empty() && !v.starts_with('"') && v.chars().all(|c| !c.is_whitespace() && c != '"')
}

/// Whether free text can be written without quotes: it must read back as the same word.
fn bare_ok_text(v: &str) -> bool {
    if !bare_ok_field(v) || v.starts_with('-') || v.starts_with('/') {
        return false;
    }
    // A key followed by ':' or a comparison would read as a field.
    let key_len = v
        .bytes()
        .take_while(|b| b.is_ascii_alphabetic() || *b == b'_')
        .count();
    !(key_len > 0 && matches!(v.as_bytes().get(key_len), Some(b':' | b'>' | b'<' | b'=')))
}

fn quote(v: &str) -> String {
    let mut s = String::with_capacity(v.len() + 2);
    s.push('"');
    for c in v.chars() {
        if c == '"' || c == '\\' {
            s.push('\\');
        }
        s.push(c);
    }
    s.push('"');
    s
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.negated {
            f.write_str("-")?;
        }
        match &self.atom {
            Atom::Field(field, v) => {
                let v = if bare_ok_field(v) {
                    v.clone()
                } else {
                    quote(v)
                };
                write!(f, "{}:{v}", field.key())
            }
            Atom::Outcome(o) => write!(f, "outcome:{}", o.as_str()),
            Atom::Spec(SpecWant::Ok) => f.write_str("spec:ok"),
            Atom::Spec(SpecWant::Broken) => f.write_str("spec:broken"),
            Atom::Kind(RowKind::Dial) => f.write_str("kind:dial"),
            Atom::Kind(RowKind::Connection) => f.write_str("kind:connection"),
            Atom::Duration(c, ms) => write!(f, "duration{}{}", c.as_str(), print_duration(*ms)),
            Atom::After(t) => write!(f, "after:{}", print_time(*t)),
            Atom::Before(t) => write!(f, "before:{}", print_time(*t)),
            Atom::Text(t) => {
                if bare_ok_text(t) {
                    f.write_str(t)
                } else {
                    f.write_str(&quote(t))
                }
            }
            Atom::Regex {
                pattern,
                ignore_case,
            } => {
                f.write_str("/")?;
                f.write_str(&pattern.replace('/', "\\/"))?;
                f.write_str(if *ignore_case { "/i" } else { "/" })
            }
        }
    }
}

impl fmt::Display for DialQuery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{t}")?;
        }
        Ok(())
    }
}
