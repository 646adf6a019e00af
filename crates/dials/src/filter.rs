//! The dial filter line: a small query language over dials and connection events, like the
//! Chrome network panel's filter box and Wireshark's display filters.
//!
//! ```text
//! op:read_item caller:lumiagent -outcome:ok duration>1s phone:"Demo phone" spec:broken word
//! ```
//!
//! The grammar (also in `docs/dial-filter.md`, which the view's help text is written from,
//! [`FILTER_HELP`]):
//!
//! ```text
//! line     = ws* [ term *( ws+ term ) ] ws*
//! term     = [ "-" ] atom                  ; "-" negates the term
//! atom     = field ":" value               ; op caller callee endpoint phone call session
//!                                          ; outcome spec kind after before
//!          | "duration" cmp duration       ; cmp is > >= < <= =
//!          | "/" regex "/" [ "i" ]         ; regex over request, response and error text
//!          | value                         ; free text (a word or a "quoted phrase")
//! value    = bare | quoted
//! bare     = 1*( any character but whitespace and '"' )
//! quoted   = '"' *( any character but '"' and '\' | '\"' | '\\' ) '"'
//! duration = number ( "ms" | "s" )         ; 250ms, 1s, 1.5s (whole milliseconds)
//! time     = RFC 3339 (2026-12-01T10:00:00Z, 2026-12-01T10:00:00.250+01:00), a UTC date
//!            (2026-12-01), or relative to now: "-" number ( "s" | "m" | "h" | "d" ) (-1h)
//! ```
//!
//! Terms are ANDed. Field values match exactly (`phone:` also matches a phone's name, which the
//! app resolves to its device ids, case-insensitive); `outcome:` takes `ok`, `tool_error`,
//! `error`, `timed_out`; `spec:` takes `ok` (follows `phone-line.md`) or `broken`; `kind:` takes
//! `dial` or `connection`; `after:` is inclusive, `before:` exclusive, both on when the dial
//! reached this desktop (its start, by the phone's clock, only for dials stored before arrival
//! times were kept), so a phone with a wrong clock does not hide its dials from a time term.
//! Free text matches **words**: the text is split into words (runs of letters, digits and `_`,
//! case folded) and each word of the query must start a word of the request, response or error
//! text, a quoted phrase's words in a row (the last one as a prefix). `/regex/` searches the
//! compact JSON text of the request, response and error instead (Rust `regex` syntax, `/.../i`
//! ignores case; a `/` inside is written `\/`).
//!
//! **Connection events** (connected, hello, pairing, disconnected) have a phone and a time only:
//! they are part of the answer when every term is a `phone:`, `after:`, `before:` or `kind:`
//! term (or the line is empty). Any other term (negated or not) asks about dials, so
//! connection events do not match it. `kind:dial` (or `-kind:connection`) keeps dials only,
//! `kind:connection` connection events only.
//!
//! Printing a [`DialQuery`] ([`std::fmt::Display`]) gives its canonical line: terms in the order
//! given, one space apart, values quoted only when they must be, durations in `s` when whole
//! seconds else `ms`, relative times in the largest whole unit. Parsing the printed line gives the
//! same query back (a property test holds it to that).
//!
//! The parts, one concept a file: `ast` what a parsed line is, `parse` reading a line (with
//! its errors), `print` writing one back, `compiled` testing it against dials in memory.

mod ast;
mod compiled;
mod parse;
mod print;

pub use ast::words;
pub use ast::{Atom, Cmp, DialQuery, RowKind, SpecWant, Term, TextField, TimeSpec};
pub(crate) use compiled::CAtom;
pub use compiled::CompiledQuery;
pub use parse::{FilterCheck, FilterError, MAX_FILTER_LEN};

/// The help text the Dials view shows under its filter line (from `docs/dial-filter.md`).
pub const FILTER_HELP: &str = "\
Terms are ANDed; put - before a term to negate it.
  op:read_item  caller:lumiagent  callee:lumirealm  endpoint:lumirealm.phoneline
  phone:dev_...  phone:\"Demo phone\"  call:<callId>  session:ses_...
  outcome:ok|tool_error|error|timed_out   spec:ok|broken   kind:dial|connection
  duration>1s  duration<=250ms  (> >= < <= =, units ms or s)
  after:-1h  before:2026-12-01T10:00:00Z  after:2026-12-01  (when the dial arrived here;
    after inclusive, before exclusive)
  word  \"a phrase\"   free text: words of the request, response and error (prefix of a word)
  /regex/  /regex/i    a regex over the compact JSON text instead
Connection events show when every term is phone:, after:, before: or kind:.";

#[cfg(test)]
mod tests;
