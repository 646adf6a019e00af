//! The SQLite side of a history page: stored dials and connection events matching a
//! [`CompiledQuery`], newest first, below a cursor, within a time budget.
//!
//! Stored dials up to `indexed_upto` are searched with SQL: a *driver* gives candidate rowids
//! newest first (the full-text index `dial_fts` for a free-text term, the field index
//! `dial_by` for a `field:value`, `spec:broken` or `outcome:` term, else the `dials` table by
//! rowid), the columns' conditions (every field, outcome, spec, duration and time term,
//! negated or not) are SQL, and free-text and regex terms are checked in Rust on the rows read
//! ([`CompiledQuery::matches_dial`] — the same code as the ring's, so both agree). Stored rows
//! above `indexed_upto` that the ring no longer holds (a backlog not indexed yet) are read and
//! matched in Rust. The search goes down in windows of rowids, doubling, and stops at
//! [`PAGE_BUDGET`]: the page then says where it stopped, and the next page goes on from there.
//!
//! Counting: a count over the indexed rows with SQL, window by window, within
//! [`COUNT_BUDGET`]; past it the count is an estimate (the matches counted, scaled by the
//! share of the rowid range counted), labelled so. Terms checked in Rust (regex, negated free
//! text) are counted by reading the rows, within the same budget.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::types::Value as SqlValue;
use rusqlite::Connection;

use super::filter::{CAtom, CompiledQuery, RowKind, SpecWant, TextField};
use super::history::{ConnectionEvent, ConnectionKind, HistoryEntry, MatchCount};
use super::store::{self, by_key, tag, DIAL_COLS};
use super::DialLogError;

/// Longest a page's search runs before it returns what it found and where it stopped.
pub(crate) const PAGE_BUDGET: Duration = Duration::from_millis(250);
/// Longest a count runs before it gives an estimate.
pub(crate) const COUNT_BUDGET: Duration = Duration::from_millis(60);
/// First window of rowids searched (doubling after each).
const FIRST_WINDOW: u64 = 4096;

/// What SQLite answers for a page.
#[derive(Debug, Default)]
pub(crate) struct StoredPart {
    /// Matching stored rows, newest first, at most the page's limit.
    pub entries: Vec<HistoryEntry>,
    /// Whether more matching rows may follow below the last.
    pub more: bool,
    /// When the search stopped at its time budget: rows below this sequence number were not
    /// searched.
    pub stopped_at: Option<u64>,
    /// The stored rows matching (when asked).
    pub count: MatchCount,
    /// The oldest stored time.
    pub oldest_ms: Option<i64>,
}

impl Default for MatchCount {
    fn default() -> Self {
        Self {
            count: 0,
            exact: true,
        }
    }
}

/// Read connections to the dial store, opened on demand and reused.
pub(crate) struct Reader {
    pub(crate) path: PathBuf,
    pub(crate) pool: Mutex<Vec<Connection>>,
    pub(crate) writer: Arc<store::WriterShared>,
}

/// The SQL side of a query: the driver and the conditions.
struct Plan {
    /// `FROM ... WHERE` prefix selecting `DIAL_COLS`, with `?` for `lo`, `hi` at the end.
    from: String,
    /// The column of the driver's rowid (for the window bounds and the order).
    seq_col: &'static str,
    /// Parameters before the window bounds.
    params: Vec<SqlValue>,
    /// Conditions on `d` columns (ANDed), with their parameters.
    conds: Vec<String>,
    cond_params: Vec<SqlValue>,
    /// Whether rows must also pass the Rust check (free text, regex).
    rust_check: bool,
    /// Whether every free-text term is positive and in the FTS driver (counts can trust SQL).
    sql_exact: bool,
    /// Whether the window bounds also go right after the first parameter (the FTS driver's
    /// subquery: FTS5 answers a rowid range itself, and the join never sorts its matches).
    window_in_from: bool,
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

fn plan(q: &CompiledQuery) -> Plan {
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
                if !t.negated && by.is_none() && *o != super::DialOutcome::Ok {
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
            CAtom::After(a) => (Some("d.start_ms >= ?".into()), vec![SqlValue::Integer(*a)]),
            CAtom::Before(b) => (Some("d.start_ms < ?".into()), vec![SqlValue::Integer(*b)]),
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
    if !fts.is_empty() {
        return Plan {
            from: format!(
                "SELECT {DIAL_COLS} FROM dials d WHERE d.rowid IN (SELECT rowid FROM dial_fts \
                 WHERE dial_fts MATCH ? AND rowid >= ? AND rowid < ?)"
            ),
            seq_col: "d.rowid",
            params: vec![SqlValue::Text(fts.join(" AND "))],
            conds,
            cond_params,
            rust_check,
            sql_exact,
            window_in_from: true,
        };
    }
    if let Some(key) = by {
        return Plan {
            from: format!(
                "SELECT {DIAL_COLS} FROM dial_by b JOIN dials d ON d.rowid = b.seq WHERE b.key = ?"
            ),
            seq_col: "b.seq",
            params: vec![SqlValue::Text(key)],
            conds,
            cond_params,
            rust_check,
            sql_exact,
            window_in_from: false,
        };
    }
    Plan {
        from: format!("SELECT {DIAL_COLS} FROM dials d WHERE 1"),
        seq_col: "d.rowid",
        params: vec![],
        conds,
        cond_params,
        rust_check,
        sql_exact,
        window_in_from: false,
    }
}

impl Plan {
    /// The windowed select: rows with `lo <= seq < hi`, newest first.
    fn select(&self) -> String {
        let mut s = self.from.clone();
        for c in &self.conds {
            s.push_str(" AND ");
            s.push_str(c);
        }
        s.push_str(&format!(
            " AND {0} >= ? AND {0} < ? ORDER BY {0} DESC",
            self.seq_col
        ));
        s
    }

    /// The windowed count.
    fn count(&self) -> String {
        let sel = self.select();
        let from = sel.find(" FROM ").unwrap_or(0);
        let order = sel.rfind(" ORDER BY ").unwrap_or(sel.len());
        format!("SELECT count(*){}", sel.get(from..order).unwrap_or(""))
    }

    fn params(&self, lo: u64, hi: u64) -> Vec<SqlValue> {
        let lo = SqlValue::Integer(i64::try_from(lo).unwrap_or(i64::MAX));
        let hi = SqlValue::Integer(i64::try_from(hi).unwrap_or(i64::MAX));
        let mut p = self.params.clone();
        if self.window_in_from {
            p.push(lo.clone());
            p.push(hi.clone());
        }
        p.extend(self.cond_params.iter().cloned());
        p.push(lo);
        p.push(hi);
        p
    }
}

impl Reader {
    fn conn(&self) -> Result<Connection, DialLogError> {
        if let Some(c) = crate::sync::lock(&self.pool).pop() {
            return Ok(c);
        }
        let st = |e: rusqlite::Error| {
            DialLogError::Storage(format!("opening {} to read: {e}", self.path.display()))
        };
        let c = Connection::open_with_flags(
            &self.path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(st)?;
        c.pragma_update(None, "cache_size", -16 * 1024)
            .map_err(st)?;
        c.busy_timeout(Duration::from_secs(2)).map_err(st)?;
        Ok(c)
    }

    fn give_back(&self, c: Connection) {
        let mut pool = crate::sync::lock(&self.pool);
        if pool.len() < 4 {
            pool.push(c);
        }
    }

    /// The stored part of a page (see [`StoredPart`]): rows below `before`; SQL for rows up to
    /// `sql_upto`, Rust for those in `(sql_upto, gap_below)`.
    pub(crate) fn page(
        self: &Arc<Self>,
        q: &CompiledQuery,
        before: u64,
        limit: usize,
        count: bool,
        sql_upto: u64,
        gap_below: u64,
    ) -> Result<StoredPart, DialLogError> {
        let conn = self.conn()?;
        let r = self.page_on(&conn, q, before, limit, count, sql_upto, gap_below);
        self.give_back(conn);
        r
    }

    #[allow(clippy::too_many_arguments)]
    fn page_on(
        &self,
        conn: &Connection,
        q: &CompiledQuery,
        before: u64,
        limit: usize,
        count: bool,
        sql_upto: u64,
        gap_below: u64,
    ) -> Result<StoredPart, DialLogError> {
        let st = |e: rusqlite::Error| {
            DialLogError::Storage(format!("searching {}: {e}", self.path.display()))
        };
        let started = Instant::now();
        let mut out = StoredPart::default();
        let mut dials: Vec<HistoryEntry> = Vec::new();
        let mut more = false;
        if q.dials {
            // 1. Stored rows not indexed yet and not in the ring: matched in Rust.
            let gap_hi = gap_below.min(before);
            if gap_hi > sql_upto + 1 {
                let mut stmt = conn
                    .prepare_cached(&format!(
                        "SELECT {DIAL_COLS} FROM dials d WHERE d.rowid > ?1 AND d.rowid < ?2 \
                         ORDER BY d.rowid DESC"
                    ))
                    .map_err(st)?;
                let mut rows = stmt
                    .query(rusqlite::params![
                        i64::try_from(sql_upto).unwrap_or(i64::MAX),
                        i64::try_from(gap_hi).unwrap_or(i64::MAX)
                    ])
                    .map_err(st)?;
                while let Some(r) = rows.next().map_err(st)? {
                    let d = store::dial_from_row(r, &self.path)?;
                    if q.matches_dial(&d) {
                        if dials.len() == limit {
                            more = true;
                            break;
                        }
                        dials.push(HistoryEntry::Dial(Arc::new(d)));
                    }
                }
            }
            // 2. Indexed rows: SQL, window by window, newest first.
            let p = plan(q);
            let mut hi = before.min(sql_upto + 1);
            let mut window = FIRST_WINDOW;
            if dials.len() < limit && !more {
                let sql = p.select();
                let mut stmt = conn.prepare_cached(&sql).map_err(st)?;
                while hi > 1 {
                    let lo = hi.saturating_sub(window).max(1);
                    let params = p.params(lo, hi);
                    let mut rows = stmt
                        .query(rusqlite::params_from_iter(params.iter()))
                        .map_err(st)?;
                    while let Some(r) = rows.next().map_err(st)? {
                        let d = store::dial_from_row(r, &self.path)?;
                        if p.rust_check && !q.matches_dial(&d) {
                            continue;
                        }
                        if dials.len() == limit {
                            more = true;
                            break;
                        }
                        dials.push(HistoryEntry::Dial(Arc::new(d)));
                    }
                    if more || dials.len() == limit {
                        break;
                    }
                    hi = lo;
                    window = window.saturating_mul(2);
                    if hi > 1 && started.elapsed() > PAGE_BUDGET {
                        out.stopped_at = Some(hi);
                        break;
                    }
                }
            }
            if count {
                out.count = self.count(conn, q, &p, sql_upto, gap_below)?;
            }
        }
        // 3. Connection events (few: 7 days of them), matched in Rust.
        let mut conns: Vec<HistoryEntry> = Vec::new();
        if q.connections {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT seq, phone, label, at_ms, event, detail FROM conn_events \
                     WHERE seq < ?1 ORDER BY seq DESC",
                )
                .map_err(st)?;
            let mut rows = stmt
                .query(rusqlite::params![i64::try_from(before).unwrap_or(i64::MAX)])
                .map_err(st)?;
            let mut n = 0u64;
            while let Some(r) = rows.next().map_err(st)? {
                let ev = conn_from_row(r).map_err(st)?;
                if !q.matches_connection(&ev.phone, ev.at_ms) {
                    continue;
                }
                n += 1;
                if conns.len() < limit {
                    conns.push(HistoryEntry::Connection(ev));
                } else {
                    more = true;
                    if !count {
                        break;
                    }
                }
            }
            if count && before == u64::MAX {
                out.count.count += n;
            } else if count {
                out.count.count += self.count_connections(conn, q).map_err(st)?;
            }
        }
        let mut entries = super::history::merge_newest_first(dials, conns);
        if entries.len() > limit {
            entries.truncate(limit);
            more = true;
        }
        out.entries = entries;
        out.more = more;
        out.oldest_ms = oldest(conn).map_err(st)?;
        Ok(out)
    }

    fn count_connections(&self, conn: &Connection, q: &CompiledQuery) -> rusqlite::Result<u64> {
        let mut stmt =
            conn.prepare_cached("SELECT seq, phone, label, at_ms, event, detail FROM conn_events")?;
        let mut rows = stmt.query([])?;
        let mut n = 0;
        while let Some(r) = rows.next()? {
            let ev = conn_from_row(r)?;
            if q.matches_connection(&ev.phone, ev.at_ms) {
                n += 1;
            }
        }
        Ok(n)
    }

    /// Counts the stored dials matching (all of them, not only below a cursor).
    fn count(
        &self,
        conn: &Connection,
        q: &CompiledQuery,
        p: &Plan,
        sql_upto: u64,
        gap_below: u64,
    ) -> Result<MatchCount, DialLogError> {
        let st = |e: rusqlite::Error| {
            DialLogError::Storage(format!("counting in {}: {e}", self.path.display()))
        };
        let started = Instant::now();
        let mut n = 0u64;
        // The gap (not indexed, not held): read and matched.
        if gap_below > sql_upto + 1 {
            let mut stmt = conn
                .prepare_cached(&format!(
                    "SELECT {DIAL_COLS} FROM dials d WHERE d.rowid > ?1 AND d.rowid < ?2"
                ))
                .map_err(st)?;
            let mut rows = stmt
                .query(rusqlite::params![
                    i64::try_from(sql_upto).unwrap_or(i64::MAX),
                    i64::try_from(gap_below).unwrap_or(i64::MAX)
                ])
                .map_err(st)?;
            while let Some(r) = rows.next().map_err(st)? {
                if q.matches_dial(&store::dial_from_row(r, &self.path)?) {
                    n += 1;
                }
            }
        }
        let floor: u64 = conn
            .query_row("SELECT coalesce(min(rowid), 1) FROM dials", [], |r| {
                r.get::<_, i64>(0)
            })
            .map_err(st)?
            .try_into()
            .unwrap_or(1);
        let top = sql_upto + 1;
        let mut hi = top;
        let mut window = FIRST_WINDOW * 4;
        let mut counted = 0u64;
        let exact_sql = !p.rust_check || p.sql_exact;
        let count_sql = p.count();
        let select_sql = p.select();
        while hi > floor {
            let lo = hi.saturating_sub(window).max(floor);
            let params = p.params(lo, hi);
            if exact_sql {
                let c: i64 = conn
                    .prepare_cached(&count_sql)
                    .and_then(|mut s| {
                        s.query_row(rusqlite::params_from_iter(params.iter()), |r| r.get(0))
                    })
                    .map_err(st)?;
                counted += u64::try_from(c).unwrap_or(0);
            } else {
                let mut stmt = conn.prepare_cached(&select_sql).map_err(st)?;
                let mut rows = stmt
                    .query(rusqlite::params_from_iter(params.iter()))
                    .map_err(st)?;
                while let Some(r) = rows.next().map_err(st)? {
                    if q.matches_dial(&store::dial_from_row(r, &self.path)?) {
                        counted += 1;
                    }
                }
            }
            hi = lo;
            window = window.saturating_mul(2);
            if hi > floor && started.elapsed() > COUNT_BUDGET {
                // Scale by the share of the rowid range counted.
                let span = top.saturating_sub(floor).max(1);
                let done = top.saturating_sub(hi).max(1);
                let est = (counted as f64 * span as f64 / done as f64).round() as u64;
                return Ok(MatchCount {
                    count: n + est,
                    exact: false,
                });
            }
        }
        Ok(MatchCount {
            count: n + counted,
            exact: true,
        })
    }

    /// Whether every stored row is indexed (for benches and tests that wait for it).
    pub(crate) fn indexed_all(&self) -> Result<bool, DialLogError> {
        let conn = self.conn()?;
        let r = conn
            .query_row("SELECT coalesce(max(rowid), 0) FROM dials", [], |r| {
                r.get::<_, i64>(0)
            })
            .map(|m| {
                u64::try_from(m).unwrap_or(0) <= self.writer.indexed_upto.load(Ordering::Acquire)
            })
            .map_err(|e| DialLogError::Storage(e.to_string()));
        self.give_back(conn);
        r
    }
}

fn conn_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ConnectionEvent> {
    let event: String = r.get(4)?;
    Ok(ConnectionEvent {
        seq: u64::try_from(r.get::<_, i64>(0)?).unwrap_or(0),
        phone: r.get(1)?,
        label: r.get(2)?,
        at_ms: r.get(3)?,
        event: ConnectionKind::parse(&event).unwrap_or(ConnectionKind::Disconnected),
        detail: r.get(5)?,
    })
}

/// The oldest stored time: the start of the first stored dials (by arrival; the first 1000
/// looked at, as dials arrive about in start order) and the first connection event.
fn oldest(conn: &Connection) -> rusqlite::Result<Option<i64>> {
    conn.query_row(
        "SELECT min(t) FROM (
            SELECT min(start_ms) AS t FROM (SELECT start_ms FROM dials ORDER BY rowid LIMIT 1000)
            UNION ALL SELECT min(at_ms) FROM conn_events)",
        [],
        |r| r.get(0),
    )
}
