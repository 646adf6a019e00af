//! A [`DialQuery`] made ready to test dials and connection events in memory (the ring, an
//! imported log, a live subscription): phone names resolved to device ids, relative times fixed
//! at the moment the query runs, regexes compiled once, free text split into words the way the
//! SQLite full-text index splits them.

use super::ast::{words, Atom, Cmp, DialQuery, RowKind, SpecWant, TextField};
use super::parse::FilterError;
use crate::record::{Dial, DialOutcome};

/// A filter made ready to test dials and connection events in memory: phone names resolved,
/// relative times fixed, regexes compiled, free-text words split. The SQLite side compiles the
/// same [`DialQuery`] to SQL (`history_sql`); both follow the rules in the module docs.
#[derive(Debug, Clone)]
pub struct CompiledQuery {
    /// The terms, compiled.
    pub(crate) terms: Vec<CTerm>,
    /// Whether connection events may match at all.
    pub(crate) connections: bool,
    /// Whether dials may match at all.
    pub(crate) dials: bool,
    /// The canonical line.
    pub line: String,
}

#[derive(Debug, Clone)]
pub(crate) struct CTerm {
    pub negated: bool,
    pub atom: CAtom,
}

#[derive(Debug, Clone)]
pub(crate) enum CAtom {
    /// Any of these values (a phone's name resolves to several device ids).
    Field(TextField, Vec<String>),
    Outcome(DialOutcome),
    Spec(SpecWant),
    Kind(RowKind),
    Duration(Cmp, u64),
    After(i64),
    Before(i64),
    /// Words of a word or phrase: consecutive, the last a prefix.
    Text(Vec<String>),
    Regex(regex::Regex),
}

impl CompiledQuery {
    /// Compiles `q` for a query run at `now_ms`; `phone_ids` maps a `phone:` value to the device
    /// ids it means (a name to its phones' ids); a value it gives nothing for matches the device
    /// id itself.
    ///
    /// # Errors
    /// A regex that no longer compiles (it was checked when parsed), as a [`FilterError`] at 0.
    pub fn new(
        q: &DialQuery,
        now_ms: i64,
        phone_ids: &dyn Fn(&str) -> Vec<String>,
    ) -> Result<Self, FilterError> {
        let mut terms = Vec::with_capacity(q.terms.len());
        for t in &q.terms {
            let atom = match &t.atom {
                Atom::Field(TextField::Phone, v) => {
                    let mut ids = phone_ids(v);
                    if !ids.iter().any(|i| i == v) {
                        ids.push(v.clone());
                    }
                    CAtom::Field(TextField::Phone, ids)
                }
                Atom::Field(f, v) => CAtom::Field(*f, vec![v.clone()]),
                Atom::Outcome(o) => CAtom::Outcome(*o),
                Atom::Spec(s) => CAtom::Spec(*s),
                Atom::Kind(k) => CAtom::Kind(*k),
                Atom::Duration(c, ms) => CAtom::Duration(*c, *ms),
                Atom::After(t) => CAtom::After(t.resolve(now_ms)),
                Atom::Before(t) => CAtom::Before(t.resolve(now_ms)),
                Atom::Text(s) => CAtom::Text(words(s).collect()),
                Atom::Regex {
                    pattern,
                    ignore_case,
                } => CAtom::Regex(
                    regex::RegexBuilder::new(pattern)
                        .case_insensitive(*ignore_case)
                        .size_limit(1 << 20)
                        .build()
                        .map_err(|e| FilterError {
                            start: 0,
                            end: 0,
                            column: 1,
                            byte_start: 0,
                            byte_end: 0,
                            message: format!("not a valid regex: {e}"),
                            expected: Vec::new(),
                        })?,
                ),
            };
            terms.push(CTerm {
                negated: t.negated,
                atom,
            });
        }
        Ok(Self {
            terms,
            connections: q.admits_connections(),
            dials: q.admits_dials(),
            line: q.to_string(),
        })
    }

    /// Parses and compiles `line` with no phone names known and `now_ms` for relative times.
    ///
    /// # Errors
    /// As [`DialQuery::parse`].
    pub fn parse(line: &str, now_ms: i64) -> Result<Self, FilterError> {
        Self::new(&DialQuery::parse(line)?, now_ms, &|_| Vec::new())
    }

    /// Whether dial `d` matches.
    pub fn matches_dial(&self, d: &Dial) -> bool {
        if !self.dials {
            return false;
        }
        self.terms.iter().all(|t| t.matches_dial(d) != t.negated)
    }

    /// Whether a connection event of `phone` at `at_ms` matches.
    pub fn matches_connection(&self, phone: &str, at_ms: i64) -> bool {
        if !self.connections {
            return false;
        }
        self.terms.iter().all(|t| {
            let hit = match &t.atom {
                CAtom::Field(TextField::Phone, ids) => ids.iter().any(|i| i == phone),
                CAtom::After(a) => at_ms >= *a,
                CAtom::Before(b) => at_ms < *b,
                CAtom::Kind(k) => *k == RowKind::Connection,
                _ => false,
            };
            hit != t.negated
        })
    }

    /// Whether the query needs a dial's spec findings.
    pub fn needs_spec(&self) -> bool {
        self.terms.iter().any(|t| matches!(t.atom, CAtom::Spec(_)))
    }
}

impl CTerm {
    fn matches_dial(&self, d: &Dial) -> bool {
        match &self.atom {
            CAtom::Field(f, vals) => {
                let v = f.of(d);
                vals.iter().any(|x| x == v)
            }
            CAtom::Outcome(o) => d.outcome == *o,
            CAtom::Spec(SpecWant::Ok) => d.spec_findings() == 0,
            CAtom::Spec(SpecWant::Broken) => d.spec_findings() > 0,
            CAtom::Kind(k) => *k == RowKind::Dial,
            CAtom::Duration(c, ms) => c.holds(d.duration_ms, *ms),
            CAtom::After(a) => d.arrived_or_started_ms() >= *a,
            CAtom::Before(b) => d.arrived_or_started_ms() < *b,
            CAtom::Text(ws) => {
                text_has_phrase(d.request.as_str(), ws)
                    || d.response
                        .as_ref()
                        .is_some_and(|r| text_has_phrase(r.as_str(), ws))
                    || d.error.as_deref().is_some_and(|e| text_has_phrase(e, ws))
            }
            CAtom::Regex(re) => {
                re.is_match(d.request.as_str())
                    || d.response.as_ref().is_some_and(|r| re.is_match(r.as_str()))
                    || d.error.as_deref().is_some_and(|e| re.is_match(e))
            }
        }
    }
}

/// Whether the words of `text` contain `phrase` (consecutive words; the last matched as a prefix,
/// the others whole).
pub(crate) fn text_has_phrase(text: &str, phrase: &[String]) -> bool {
    let Some((last, init)) = phrase.split_last() else {
        return true;
    };
    // Quick refusal: every (lower-case ASCII) word must appear in the text at all.
    if phrase
        .iter()
        .any(|w| w.is_ascii() && !crate::query::contains_ascii_ci(text.as_bytes(), w.as_bytes()))
    {
        return false;
    }
    let ws: Vec<String> = words(text).collect();
    if ws.len() < phrase.len() {
        return false;
    }
    (0..=ws.len() - phrase.len()).any(|i| {
        init.iter()
            .enumerate()
            .all(|(k, w)| ws.get(i + k).is_some_and(|x| x == w))
            && ws
                .get(i + init.len())
                .is_some_and(|x| x.starts_with(last.as_str()))
    })
}
