//! The history's column blocks: the filterable columns of the stored dials (op, caller, callee,
//! endpoint, phone, outcome, spec mark, duration, arrival), packed 256 rows to a `dial_blocks` row
//! keyed by `rowid >> 8`, with the block's earliest and latest arrival (for a row stored before
//! arrivals were kept, its start: [`Dial::arrived_or_started_ms`]).
//!
//! Why: a filter made only of such terms (`op:grep_items -outcome:ok duration>1s phone:X`,
//! `-spec:broken`, `before:T`) matches rows spread over the whole history. Read from `dials`
//! (about 1.5 KB a row, no index on the columns) a sparse one reads every row; from the blocks
//! (about 10 bytes a row) it reads 1 000 000 rows' columns in a few tens of milliseconds, and a
//! time term skips every block whose time range it excludes without reading it. Only the rows
//! that match every column term are read whole (for the page, and for the terms only the text
//! has: free text, regex, `call:`, `session:`).
//!
//! Blocks are written by the writer thread with the history's other indexes, in the same chunks
//! behind ingest ([`super::store::index_some`]): nothing is added to the insert itself. Text
//! values are stored as ids of `dial_dict` (tag, value). Pruning rewrites the blocks of the rows
//! it deletes; clearing deletes them all.

use std::collections::HashMap;

use rusqlite::{params, Connection, OptionalExtension};

use super::filter::{CAtom, Cmp, CompiledQuery, RowKind, SpecWant, TextField};
use super::record::{Dial, DialOutcome};

/// Rows per block: a block holds the rowids `block << BLOCK_SHIFT ..` of one block number.
pub(crate) const BLOCK_SHIFT: u32 = 8;

/// Dictionary tags of the block columns (the `dial_by` tags where there is one).
mod dtag {
    pub(super) const OP: &str = "o";
    pub(super) const CALLER: &str = "c";
    pub(super) const CALLEE: &str = "e";
    pub(super) const ENDPOINT: &str = "n";
    pub(super) const PHONE: &str = "p";
}

/// Schema of the blocks (version 4).
pub(crate) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS dial_dict (
    id          INTEGER PRIMARY KEY,
    tag         TEXT NOT NULL,
    value       TEXT NOT NULL,
    UNIQUE (tag, value)
);
CREATE TABLE IF NOT EXISTS dial_blocks (
    block       INTEGER PRIMARY KEY,
    base_ms     INTEGER NOT NULL,
    min_ms      INTEGER NOT NULL,
    max_ms      INTEGER NOT NULL,
    rows        BLOB NOT NULL
);
INSERT OR IGNORE INTO dial_meta (k, v) VALUES ('cols_upto', 0);
";

/// The writer's cache of `dial_dict` ids (tag, value) -> id.
#[derive(Debug, Default)]
pub(crate) struct Dict {
    ids: HashMap<(&'static str, String), u64>,
}

impl Dict {
    /// Forgets every id (after a failed transaction, whose new ids were rolled back).
    pub(crate) fn forget(&mut self) {
        self.ids.clear();
    }

    fn id(&mut self, conn: &Connection, tag: &'static str, value: &str) -> rusqlite::Result<u64> {
        if let Some(id) = self.ids.get(&(tag, value.to_owned())) {
            return Ok(*id);
        }
        conn.prepare_cached("INSERT OR IGNORE INTO dial_dict (tag, value) VALUES (?1, ?2)")?
            .execute(params![tag, value])?;
        let id: i64 = conn
            .prepare_cached("SELECT id FROM dial_dict WHERE tag = ?1 AND value = ?2")?
            .query_row(params![tag, value], |r| r.get(0))?;
        let id = u64::try_from(id).unwrap_or(0);
        if self.ids.len() > 100_000 {
            self.ids.clear();
        }
        self.ids.insert((tag, value.to_owned()), id);
        Ok(id)
    }
}

fn outcome_code(o: DialOutcome) -> u8 {
    match o {
        DialOutcome::Ok => 0,
        DialOutcome::ToolError => 1,
        DialOutcome::Error => 2,
        DialOutcome::TimedOut => 3,
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    let mut shift = 0u32;
    loop {
        let byte = *b.get(*at)?;
        *at += 1;
        if shift > 63 {
            return None;
        }
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
        shift += 7;
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// One row's columns, as a block holds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ColRow {
    /// The rowid (sequence number).
    pub seq: u64,
    /// Dictionary ids: op, caller, callee, endpoint, phone.
    pub ids: [u64; 5],
    /// [`outcome_code`].
    pub outcome: u8,
    /// Whether the dial breaks the spec.
    pub broken: bool,
    pub duration_ms: u64,
    /// The time the filter's time terms judge: arrival, or the start for a row stored before
    /// arrivals were kept ([`Dial::arrived_or_started_ms`]).
    pub at_ms: i64,
}

/// Appends `r` (of the block whose first row's time is `base_ms`) to `out`.
fn encode(out: &mut Vec<u8>, r: &ColRow, base_ms: i64) {
    out.push((r.seq & 0xff) as u8);
    out.push(r.outcome | if r.broken { 4 } else { 0 });
    for id in r.ids {
        put_varint(out, id);
    }
    put_varint(out, r.duration_ms);
    put_varint(out, zigzag(r.at_ms.wrapping_sub(base_ms)));
}

/// The rows of a block (`None`: the blob is damaged; the caller reads those rows whole).
pub(crate) fn decode(block: u64, base_ms: i64, b: &[u8]) -> Option<Vec<ColRow>> {
    let mut out = Vec::with_capacity(256);
    let mut at = 0usize;
    while at < b.len() {
        let off = u64::from(*b.get(at)?);
        let flags = *b.get(at + 1)?;
        at += 2;
        let mut ids = [0u64; 5];
        for id in &mut ids {
            *id = get_varint(b, &mut at)?;
        }
        let duration_ms = get_varint(b, &mut at)?;
        let at_ms = base_ms.wrapping_add(unzigzag(get_varint(b, &mut at)?));
        out.push(ColRow {
            seq: (block << BLOCK_SHIFT) | off,
            ids,
            outcome: flags & 3,
            broken: flags & 4 != 0,
            duration_ms,
            at_ms,
        });
    }
    Some(out)
}

/// A dial's columns; new dictionary values are added.
fn col_row(conn: &Connection, dict: &mut Dict, d: &Dial, broken: bool) -> rusqlite::Result<ColRow> {
    Ok(ColRow {
        seq: d.seq.0,
        ids: [
            dict.id(conn, dtag::OP, &d.op)?,
            dict.id(conn, dtag::CALLER, &d.caller)?,
            dict.id(conn, dtag::CALLEE, &d.callee)?,
            dict.id(conn, dtag::ENDPOINT, &d.endpoint)?,
            dict.id(conn, dtag::PHONE, &d.phone)?,
        ],
        outcome: outcome_code(d.outcome),
        broken,
        duration_ms: d.duration_ms,
        at_ms: d.arrived_or_started_ms(),
    })
}

/// Rows waiting to be appended to their blocks ([`Appender::flush`]), in rowid order.
#[derive(Default)]
pub(crate) struct Appender {
    rows: Vec<ColRow>,
}

impl Appender {
    /// Adds dial `d` (its spec findings counted `broken > 0`).
    pub(crate) fn add(
        &mut self,
        conn: &Connection,
        dict: &mut Dict,
        d: &Dial,
        broken: bool,
    ) -> rusqlite::Result<()> {
        self.rows.push(col_row(conn, dict, d, broken)?);
        Ok(())
    }

    /// Appends the rows to their blocks (in the caller's transaction).
    pub(crate) fn flush(self, conn: &Connection) -> rusqlite::Result<()> {
        let mut i = 0;
        while i < self.rows.len() {
            let block = self.rows[i].seq >> BLOCK_SHIFT;
            let mut j = i;
            while j < self.rows.len() && self.rows[j].seq >> BLOCK_SHIFT == block {
                j += 1;
            }
            let part = &self.rows[i..j];
            let b = i64::try_from(block).unwrap_or(i64::MAX);
            let old: Option<(i64, i64, i64, Vec<u8>)> = conn
                .prepare_cached(
                    "SELECT base_ms, min_ms, max_ms, rows FROM dial_blocks WHERE block = ?1",
                )?
                .query_row([b], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .optional()?;
            let (base, mut lo, mut hi, mut blob) = old.unwrap_or_else(|| {
                let s = part.first().map_or(0, |r| r.at_ms);
                (s, s, s, Vec::new())
            });
            for r in part {
                encode(&mut blob, r, base);
                lo = lo.min(r.at_ms);
                hi = hi.max(r.at_ms);
            }
            conn.prepare_cached(
                "INSERT OR REPLACE INTO dial_blocks (block, base_ms, min_ms, max_ms, rows)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![b, base, lo, hi, blob])?;
            i = j;
        }
        Ok(())
    }
}

impl Appender {
    /// Adds the rows `lo..=hi` of `dials` (at most `limit`), read from their columns (the spec
    /// mark from `spec`, set when the row was indexed). Returns the last rowid read.
    pub(crate) fn read_columns(
        &mut self,
        conn: &Connection,
        dict: &mut Dict,
        lo: u64,
        hi: u64,
        limit: i64,
    ) -> rusqlite::Result<Option<u64>> {
        let mut stmt = conn.prepare_cached(
            "SELECT rowid, op, caller, callee, endpoint, phone, outcome, spec, duration_ms,
                coalesce(arrived_ms, start_ms) FROM dials WHERE rowid >= ?1 AND rowid <= ?2
                ORDER BY rowid LIMIT ?3",
        )?;
        let mut rows = stmt.query(params![
            i64::try_from(lo).unwrap_or(i64::MAX),
            i64::try_from(hi).unwrap_or(i64::MAX),
            limit
        ])?;
        let mut last = None;
        while let Some(r) = rows.next()? {
            let mut ids = [0u64; 5];
            for (k, tag) in [
                dtag::OP,
                dtag::CALLER,
                dtag::CALLEE,
                dtag::ENDPOINT,
                dtag::PHONE,
            ]
            .into_iter()
            .enumerate()
            {
                let v: String = r.get(k + 1)?;
                ids[k] = dict.id(conn, tag, &v)?;
            }
            let outcome: String = r.get(6)?;
            let seq = u64::try_from(r.get::<_, i64>(0)?).unwrap_or(0);
            self.rows.push(ColRow {
                seq,
                ids,
                outcome: DialOutcome::parse(&outcome).map_or(0, outcome_code),
                broken: r.get::<_, Option<i64>>(7)?.unwrap_or(0) > 0,
                duration_ms: u64::try_from(r.get::<_, i64>(8)?).unwrap_or(0),
                at_ms: r.get(9)?,
            });
            last = Some(seq);
        }
        Ok(last)
    }
}

/// Rows up to this rowid have their columns in blocks (`dial_meta.cols_upto`).
pub(crate) fn cols_upto(conn: &Connection) -> rusqlite::Result<u64> {
    let n: Option<i64> = conn
        .query_row("SELECT v FROM dial_meta WHERE k = 'cols_upto'", [], |r| {
            r.get(0)
        })
        .optional()?;
    Ok(n.and_then(|n| u64::try_from(n).ok()).unwrap_or(0))
}

/// Sets `dial_meta.cols_upto`.
pub(crate) fn set_cols_upto(conn: &Connection, upto: u64) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE dial_meta SET v = ?1 WHERE k = 'cols_upto'",
        params![i64::try_from(upto).unwrap_or(i64::MAX)],
    )?;
    Ok(())
}

/// Rewrites blocks `blocks` from the rows `dials` holds now (up to `upto`, the rows that had
/// their columns written), after rows were deleted; a block left empty is deleted. Reads the
/// columns only (the spec mark from `spec`, set when the row was indexed).
pub(crate) fn rebuild(conn: &Connection, blocks: &[u64], upto: u64) -> rusqlite::Result<()> {
    let mut dict = Dict::default();
    for &block in blocks {
        let b = i64::try_from(block).unwrap_or(i64::MAX);
        conn.execute("DELETE FROM dial_blocks WHERE block = ?1", [b])?;
        let lo = block << BLOCK_SHIFT;
        let hi = (lo | 0xff).min(upto);
        if hi < lo {
            continue;
        }
        let mut app = Appender::default();
        app.read_columns(conn, &mut dict, lo, hi, i64::MAX)?;
        app.flush(conn)?;
    }
    Ok(())
}

/// One column test of a query.
#[derive(Debug, Clone)]
enum Test {
    /// Column `i` (op, caller, callee, endpoint, phone) is one of these ids.
    Id(usize, Vec<u64>),
    Outcome(u8),
    Broken(bool),
    Const(bool),
    Duration(Cmp, u64),
    After(i64),
    Before(i64),
}

/// The terms of a query the blocks can check, compiled against the dictionary.
#[derive(Debug, Clone)]
pub(crate) struct ColFilter {
    tests: Vec<(bool, Test)>,
    /// Whether some term needs the whole row (free text, regex, `call:`, `session:`).
    pub needs_row: bool,
    /// The time range ([`ColRow::at_ms`]) every matching row is in: `[after, before)`.
    after: i64,
    before: i64,
}

fn col_index(f: TextField) -> Option<(usize, &'static str)> {
    match f {
        TextField::Op => Some((0, dtag::OP)),
        TextField::Caller => Some((1, dtag::CALLER)),
        TextField::Callee => Some((2, dtag::CALLEE)),
        TextField::Endpoint => Some((3, dtag::ENDPOINT)),
        TextField::Phone => Some((4, dtag::PHONE)),
        TextField::Call | TextField::Session => None,
    }
}

impl ColFilter {
    /// Compiles the column terms of `q` (a value the dictionary lacks is in no stored row).
    pub(crate) fn new(conn: &Connection, q: &CompiledQuery) -> rusqlite::Result<Self> {
        let mut tests = Vec::new();
        let mut needs_row = false;
        let (mut after, mut before) = (i64::MIN, i64::MAX);
        let mut lookup =
            conn.prepare_cached("SELECT id FROM dial_dict WHERE tag = ?1 AND value = ?2")?;
        for t in &q.terms {
            let test = match &t.atom {
                CAtom::Field(f, vals) => match col_index(*f) {
                    Some((i, tag)) => {
                        let mut ids = Vec::new();
                        for v in vals {
                            if let Some(id) = lookup
                                .query_row(params![tag, v], |r| r.get::<_, i64>(0))
                                .optional()?
                            {
                                ids.push(u64::try_from(id).unwrap_or(0));
                            }
                        }
                        Test::Id(i, ids)
                    }
                    None => {
                        needs_row = true;
                        continue;
                    }
                },
                CAtom::Outcome(o) => Test::Outcome(outcome_code(*o)),
                CAtom::Spec(SpecWant::Broken) => Test::Broken(true),
                CAtom::Spec(SpecWant::Ok) => Test::Broken(false),
                CAtom::Kind(k) => Test::Const(*k == RowKind::Dial),
                CAtom::Duration(c, ms) => Test::Duration(*c, *ms),
                CAtom::After(a) => {
                    if !t.negated {
                        after = after.max(*a);
                    }
                    Test::After(*a)
                }
                CAtom::Before(b) => {
                    if !t.negated {
                        before = before.min(*b);
                    }
                    Test::Before(*b)
                }
                CAtom::Text(_) | CAtom::Regex(_) => {
                    needs_row = true;
                    continue;
                }
            };
            tests.push((t.negated, test));
        }
        Ok(Self {
            tests,
            needs_row,
            after,
            before,
        })
    }

    /// Whether the query has a term the blocks check (else every row is a candidate).
    pub(crate) fn has_tests(&self) -> bool {
        !self.tests.is_empty()
    }

    /// Whether a block whose rows' times ([`ColRow::at_ms`]) are in `[min_ms, max_ms]` may hold a
    /// match.
    pub(crate) fn may_match_block(&self, min_ms: i64, max_ms: i64) -> bool {
        max_ms >= self.after && min_ms < self.before
    }

    /// Whether row `r` passes every column term.
    pub(crate) fn matches(&self, r: &ColRow) -> bool {
        self.tests.iter().all(|(neg, t)| {
            let hit = match t {
                Test::Id(i, ids) => ids.contains(&r.ids[*i]),
                Test::Outcome(o) => r.outcome == *o,
                Test::Broken(b) => r.broken == *b,
                Test::Const(c) => *c,
                Test::Duration(c, ms) => c.holds(r.duration_ms, *ms),
                Test::After(a) => r.at_ms >= *a,
                Test::Before(b) => r.at_ms < *b,
            };
            hit != *neg
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip_through_a_block() {
        let rows = [
            ColRow {
                seq: 0x300,
                ids: [1, 2, 3, 4, 5],
                outcome: 3,
                broken: true,
                duration_ms: 15_000,
                at_ms: 1_760_000_000_000,
            },
            ColRow {
                seq: 0x3ff,
                ids: [300, 0, 70_000, 1, u64::from(u32::MAX)],
                outcome: 0,
                broken: false,
                duration_ms: 0,
                // Earlier than the block's first row (a late dial).
                at_ms: 1_759_000_000_000,
            },
        ];
        let mut blob = Vec::new();
        for r in &rows {
            encode(&mut blob, r, rows[0].at_ms);
        }
        assert_eq!(decode(3, rows[0].at_ms, &blob).as_deref(), Some(&rows[..]));
        // A cut blob is refused, never read past its end.
        assert_eq!(decode(3, 0, &blob[..blob.len() - 1]), None);
        assert_eq!(decode(3, 0, &[0x01]), None);
    }
}
