//! A query's SQL: which index drives the search (the full-text index, the field index
//! `dial_by`, or the `dials` table by rowid) and the columns' conditions as one flag per driver
//! row, so a scan reads every driver row, knows how far it got, and reads whole only the rows
//! flagged.

use rusqlite::types::Value as SqlValue;

use crate::filter::{CAtom, CompiledQuery, RowKind, SpecWant, TextField};
use crate::store::{by_key, tag};

/// The SQL side of a query: the driver, and the conditions as one flag per driver row.
///
/// The scan ([`Plan::scan_sql`]) returns every row of the driver below a sequence number,
/// newest first, as `(seq, flag)`: `flag` is the columns' conditions (1 when there are none).
/// Every row the driver gives reaches Rust, so a scan stopped at its deadline knows exactly how
/// far it got (the last `seq` read), and the next page goes on from there.
pub(super) struct Plan {
    /// `FROM ... WHERE ...` of the driver (no bounds), with `?` for `params`.
    pub(super) from: String,
    /// The column of the driver's rowid (the bound and the order).
    pub(super) seq_col: &'static str,
    /// Parameters of `from`.
    pub(super) params: Vec<SqlValue>,
    /// Conditions on `d` columns (ANDed), with their parameters.
    pub(super) conds: Vec<String>,
    pub(super) cond_params: Vec<SqlValue>,
    /// Whether rows must also pass the Rust check (free text, regex).
    pub(super) rust_check: bool,
    /// Whether every free-text term is positive and in the FTS driver (counts can trust SQL).
    pub(super) sql_exact: bool,
    /// Whether the driver is the full-text index.
    pub(super) fts: bool,
}

fn fts_phrase(words: &[String]) -> String {
    // Words hold only letters, digits and '_': no quote can appear in them.
    format!("\"{}\"*", words.join(" "))
}

fn text_col(f: TextField) -> &'static str {
    match f {
        TextField::Op => "d.op",
        TextField::Caller => "d.caller",
        TextField::Callee => "d.callee",
        TextField::Endpoint => "d.endpoint",
        TextField::Phone => "d.phone",
        TextField::Call => "d.call_id",
        TextField::Session => "d.session",
    }
}

fn field_tag(f: TextField) -> Option<char> {
    match f {
        TextField::Op => Some(tag::OP),
        TextField::Caller => Some(tag::CALLER),
        TextField::Callee => Some(tag::CALLEE),
        TextField::Phone => Some(tag::PHONE),
        TextField::Call => Some(tag::CALL),
        TextField::Session => Some(tag::SESSION),
        TextField::Endpoint => None,
    }
}

pub(super) fn plan(q: &CompiledQuery) -> Plan {
    let mut conds = Vec::new();
    let mut cond_params = Vec::new();
    let mut rust_check = false;
    let mut fts: Vec<String> = Vec::new();
    let mut has_neg_text = false;
    let mut by: Option<String> = None;
    for t in &q.terms {
        let (cond, params): (Option<String>, Vec<SqlValue>) = match &t.atom {
            CAtom::Field(f, vals) => {
                if !t.negated && vals.len() == 1 && by.is_none() {
                    if let (Some(tg), Some(v)) = (field_tag(*f), vals.first()) {
                        if !v.is_empty() {
                            by = Some(by_key(tg, v));
                        }
                    }
                }
                let marks = vec!["?"; vals.len()].join(", ");
                (
                    Some(format!("{} IN ({marks})", text_col(*f))),
                    vals.iter().map(|v| SqlValue::Text(v.clone())).collect(),
                )
            }
            CAtom::Outcome(o) => {
                if !t.negated && by.is_none() && *o != crate::DialOutcome::Ok {
                    by = Some(by_key(tag::OUTCOME, o.as_str()));
                }
                (
                    Some("d.outcome = ?".into()),
                    vec![SqlValue::Text(o.as_str().into())],
                )
            }
            CAtom::Spec(SpecWant::Ok) => (Some("d.spec = 0".into()), vec![]),
            CAtom::Spec(SpecWant::Broken) => {
                if !t.negated && by.is_none() {
                    by = Some(by_key(tag::SPEC_BROKEN, ""));
                }
                (Some("d.spec > 0".into()), vec![])
            }
            CAtom::Kind(RowKind::Dial) => (Some("1".into()), vec![]),
            CAtom::Kind(RowKind::Connection) => (Some("0".into()), vec![]),
            CAtom::Duration(c, ms) => (
                Some(format!("d.duration_ms {} ?", c.as_str())),
                vec![SqlValue::Integer(i64::try_from(*ms).unwrap_or(i64::MAX))],
            ),
            CAtom::After(a) => (
                Some("coalesce(d.arrived_ms, d.start_ms) >= ?".into()),
                vec![SqlValue::Integer(*a)],
            ),
            CAtom::Before(b) => (
                Some("coalesce(d.arrived_ms, d.start_ms) < ?".into()),
                vec![SqlValue::Integer(*b)],
            ),
            CAtom::Text(words) => {
                rust_check = true;
                if t.negated {
                    has_neg_text = true;
                } else {
                    fts.push(fts_phrase(words));
                }
                (None, vec![])
            }
            CAtom::Regex(_) => {
                rust_check = true;
                has_neg_text = true;
                (None, vec![])
            }
        };
        if let Some(c) = cond {
            conds.push(if t.negated { format!("NOT ({c})") } else { c });
            cond_params.extend(params);
        }
    }
    let sql_exact = !has_neg_text;
    let join = !conds.is_empty();
    if !fts.is_empty() {
        return Plan {
            from: if join {
                "dial_fts f JOIN dials d ON d.rowid = f.rowid WHERE dial_fts MATCH ?".into()
            } else {
                "dial_fts f WHERE dial_fts MATCH ?".into()
            },
            seq_col: "f.rowid",
            params: vec![SqlValue::Text(fts.join(" AND "))],
            conds,
            cond_params,
            rust_check,
            sql_exact,
            fts: true,
        };
    }
    if let Some(key) = by {
        return Plan {
            from: if join {
                "dial_by b JOIN dials d ON d.rowid = b.seq WHERE b.key = ?".into()
            } else {
                "dial_by b WHERE b.key = ?".into()
            },
            seq_col: "b.seq",
            params: vec![SqlValue::Text(key)],
            conds,
            cond_params,
            rust_check,
            sql_exact,
            fts: false,
        };
    }
    Plan {
        from: "dials d WHERE 1".into(),
        seq_col: "d.rowid",
        params: vec![],
        conds,
        cond_params,
        rust_check,
        sql_exact,
        fts: false,
    }
}

impl Plan {
    /// The same conditions over the `dials` table by rowid, every free-text term checked in
    /// Rust (the probe of a full-text query, [`PROBE_ROWS`](super::scan::PROBE_ROWS)).
    pub(super) fn plain(&self) -> Plan {
        Plan {
            from: "dials d WHERE 1".into(),
            seq_col: "d.rowid",
            params: vec![],
            conds: self.conds.clone(),
            cond_params: self.cond_params.clone(),
            rust_check: true,
            sql_exact: false,
            fts: false,
        }
    }

    /// The scan: `(seq, flag)` of the driver's rows with `seq < ?`, newest first.
    pub(super) fn scan_sql(&self) -> String {
        let flag = if self.conds.is_empty() {
            "1".to_owned()
        } else {
            self.conds
                .iter()
                .map(|c| format!("({c})"))
                .collect::<Vec<_>>()
                .join(" AND ")
        };
        format!(
            "SELECT {0}, {flag} FROM {1} AND {0} < ? ORDER BY {0} DESC",
            self.seq_col, self.from
        )
    }

    /// The scan's parameters (the flag's come first: it is in the select list).
    pub(super) fn scan_params(&self, hi: u64) -> Vec<SqlValue> {
        let mut p = self.cond_params.clone();
        p.extend(self.params.iter().cloned());
        p.push(SqlValue::Integer(i64::try_from(hi).unwrap_or(i64::MAX)));
        p
    }
}
