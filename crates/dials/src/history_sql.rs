//! The SQLite side of a history page: stored dials and connection events matching a
//! [`CompiledQuery`], newest first, below a cursor, within a time budget.
//!
//! A query with a term on the columns (fields, outcome, spec, kind, duration, time) is driven by
//! the column blocks ([`super::blocks`], [`Reader::scan_blocks`]): the blocks are read newest
//! first, a block a time term excludes is skipped unread, and only the rows passing every column
//! term are read whole. Positive `call:`/`session:` terms, free text whose column terms pass
//! many rows, and queries without column terms take the plans below (so does a version 3 file
//! until its blocks are written).
//!
//! Stored dials up to `indexed_upto` are searched with SQL: a *driver* gives candidate rowids
//! newest first (the full-text index `dial_fts` for a free-text term, the field index
//! `dial_by` for a `field:value`, `spec:broken` or `outcome:` term, else the `dials` table by
//! rowid), the columns' conditions (every field, outcome, spec, duration and time term,
//! negated or not) are SQL, and free-text and regex terms are checked in Rust on the rows read
//! ([`CompiledQuery::matches_dial`] — the same code as the ring's, so both agree). Stored rows
//! above `indexed_upto` that the ring no longer holds (a backlog not indexed yet) are read and
//! matched in Rust.
//!
//! The search is **one scan** of the driver, newest first ([`Plan::scan_sql`]): every driver
//! row reaches Rust as `(seq, flag)` (the columns' conditions as one SQL flag), and only the
//! flagged rows are read whole. It stops at [`PAGE_BUDGET`] (SQLite's progress handler
//! interrupts it, once it has read a thousand rows, so every page moves on; a small history is read whole): the page then says where it
//! stopped, and the next page goes on from there. There are no windows of rowids: a free-text
//! prefix query (`word*`) makes FTS5 merge the doclists of every word with that prefix, which
//! a window per query repeated for each window. A free-text query first probes the newest
//! [`PROBE_ROWS`] rows by rowid (its words checked in Rust): a common word fills its page there
//! and never pays that merge; a rare one goes on in the full-text index below the probe.
//!
//! Counting (the first page only): the same scan goes on past the page, counting the flagged
//! rows, to [`COUNT_BUDGET`] after the start; past it the count is an estimate (the matches
//! counted, scaled by the share of the rowid range read), labelled so (`exact: false`: the view
//! says "about N"). Terms checked in Rust (regex, negated free text) are counted by reading the
//! rows, within the same budget.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::types::Value as SqlValue;
use rusqlite::Connection;

use super::blocks::{self, ColFilter, BLOCK_SHIFT};
use super::filter::{CAtom, CompiledQuery, RowKind, SpecWant, TextField};
use super::history::{ConnectionEvent, ConnectionKind, HistoryEntry, MatchCount};
use super::store::{self, by_key, tag, DIAL_COLS};
use super::DialLogError;

/// Longest a page's search runs before it returns what it found and where it stopped.
pub(crate) const PAGE_BUDGET: Duration = Duration::from_millis(50);
/// Longest a page and its count run together (from the page's start) before the count is
/// given as an estimate.
pub(crate) const COUNT_BUDGET: Duration = Duration::from_millis(70);

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

/// Why a scan's read of one whole row gave no row.
enum Fetch {
    /// The scan's deadline interrupted it.
    Interrupted,
    /// SQLite failed, or the row cannot be read.
    Failed(DialLogError),
}

/// Reads stored row `seq` whole with `fetch` (`SELECT {DIAL_COLS} FROM dials d WHERE d.rowid =
/// ?1`): `Ok(None)` when it is gone since (retention, clear), [`Fetch::Interrupted`] when the
/// scan's deadline stopped the read; `st` words SQLite's errors.
fn fetch_dial(
    fetch: &mut rusqlite::CachedStatement<'_>,
    seq: u64,
    path: &std::path::Path,
    st: impl Fn(rusqlite::Error) -> DialLogError,
) -> Result<Option<crate::Dial>, Fetch> {
    let seq_i = i64::try_from(seq).unwrap_or(i64::MAX);
    match fetch.query([seq_i]) {
        Ok(mut one) => match one.next() {
            Ok(Some(row)) => store::dial_from_row(row, path)
                .map(Some)
                .map_err(Fetch::Failed),
            Ok(None) => Ok(None),
            Err(e) if interrupted(&e) => Err(Fetch::Interrupted),
            Err(e) => Err(Fetch::Failed(st(e))),
        },
        Err(e) if interrupted(&e) => Err(Fetch::Interrupted),
        Err(e) => Err(Fetch::Failed(st(e))),
    }
}

/// What one scan of a driver found ([`Reader::scan`]).
#[derive(Default)]
struct Scan {
    /// The page's matching dials, newest first.
    dials: Vec<HistoryEntry>,
    /// Whether more matching rows follow the page's.
    more: bool,
    /// Matching rows counted (when counting).
    counted: u64,
    /// Where the scan stopped at its deadline (rows below were not read); `None`: it read to
    /// the end, or the page was full and nothing was counted.
    reached: Option<u64>,
    /// A probe ([`PROBE_ROWS`]) that read its rows without filling the page: the lowest
    /// sequence number it read.
    probed_to: Option<u64>,
}

/// Read connections to the dial store, opened on demand and reused.
pub(crate) struct Reader {
    pub(crate) path: PathBuf,
    pub(crate) pool: Mutex<Vec<Connection>>,
    pub(crate) writer: Arc<store::WriterShared>,
}

/// The SQL side of a query: the driver, and the conditions as one flag per driver row.
///
/// The scan ([`Plan::scan_sql`]) returns every row of the driver below a sequence number,
/// newest first, as `(seq, flag)`: `flag` is the columns' conditions (1 when there are none).
/// Every row the driver gives reaches Rust, so a scan stopped at its deadline knows exactly how
/// far it got (the last `seq` read), and the next page goes on from there.
struct Plan {
    /// `FROM ... WHERE ...` of the driver (no bounds), with `?` for `params`.
    from: String,
    /// The column of the driver's rowid (the bound and the order).
    seq_col: &'static str,
    /// Parameters of `from`.
    params: Vec<SqlValue>,
    /// Conditions on `d` columns (ANDed), with their parameters.
    conds: Vec<String>,
    cond_params: Vec<SqlValue>,
    /// Whether rows must also pass the Rust check (free text, regex).
    rust_check: bool,
    /// Whether every free-text term is positive and in the FTS driver (counts can trust SQL).
    sql_exact: bool,
    /// Whether the driver is the full-text index.
    fts: bool,
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
    /// Rust (the probe of a full-text query, [`PROBE_ROWS`]).
    fn plain(&self) -> Plan {
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
    fn scan_sql(&self) -> String {
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
    fn scan_params(&self, hi: u64) -> Vec<SqlValue> {
        let mut p = self.cond_params.clone();
        p.extend(self.params.iter().cloned());
        p.push(SqlValue::Integer(i64::try_from(hi).unwrap_or(i64::MAX)));
        p
    }
}

/// Whether `e` is SQLite's "interrupted" (the scan's deadline, [`Deadline`]).
fn interrupted(e: &rusqlite::Error) -> bool {
    matches!(
        e,
        rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::OperationInterrupted
    )
}

/// A deadline on a connection's statements: SQLite's progress handler interrupts a statement
/// once the deadline has passed and at least `min_rows` rows have been read ([`PAGE_MIN_ROWS`]
/// for a page, so a page always moves on; one for a count; a small history,
/// [`SMALL_HISTORY_ROWS`], is always searched and counted whole). Removed when dropped.
struct Deadline<'c> {
    conn: &'c Connection,
    /// Nanoseconds after `origin` the statement may run to.
    at_ns: Arc<std::sync::atomic::AtomicU64>,
    /// Rows read so far.
    read: Arc<std::sync::atomic::AtomicU64>,
    /// Rows to read before the deadline may stop the statement.
    min_rows: Arc<std::sync::atomic::AtomicU64>,
    origin: Instant,
}

/// Newest rows a full-text query reads by rowid (checking its words in Rust) before it turns to
/// the full-text index: a common word fills its page from them, where FTS5 would first merge
/// the doclists of every word with that prefix (all of the history's rows, for a word in most
/// dials), a cost no deadline can cut short.
const PROBE_ROWS: u64 = 1024;

/// Rows a page's scan reads before its deadline may stop it (a busy machine's scheduling must
/// not cut a page of common rows short); a count stops at its deadline after one.
const PAGE_MIN_ROWS: u64 = 1024;

/// A free-text query is driven by the column blocks only when its column terms pass at most
/// one row in this many of the newest (else by the full-text index).
const DENSE_ONE_IN: u64 = 32;

/// A history of at most this many stored rowids is searched and counted whole (no deadline).
const SMALL_HISTORY_ROWS: u64 = 4096;

impl<'c> Deadline<'c> {
    fn set(conn: &'c Connection, origin: Instant, after: Duration, min_rows: u64) -> Self {
        let at_ns = Arc::new(std::sync::atomic::AtomicU64::new(
            u64::try_from(after.as_nanos()).unwrap_or(u64::MAX),
        ));
        let read = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let min_rows = Arc::new(std::sync::atomic::AtomicU64::new(min_rows));
        let (at, n, min) = (Arc::clone(&at_ns), Arc::clone(&read), Arc::clone(&min_rows));
        conn.progress_handler(
            2000,
            Some(move || {
                n.load(Ordering::Relaxed) >= min.load(Ordering::Relaxed)
                    && u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
                        > at.load(Ordering::Relaxed)
            }),
        );
        Self {
            conn,
            at_ns,
            read,
            min_rows,
            origin,
        }
    }

    /// Moves the deadline to `after` the origin, to be kept once `min_rows` rows were read (a
    /// small history's scan keeps no deadline).
    fn extend(&self, after: Duration, min_rows: u64) {
        let _ = self
            .min_rows
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |m| {
                (m != u64::MAX).then_some(min_rows)
            });
        self.at_ns.store(
            u64::try_from(after.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    /// Counts one row read.
    fn read_one(&self) {
        self.read.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether the scan should stop now (as the progress handler judges).
    fn passed(&self) -> bool {
        self.read.load(Ordering::Relaxed) >= self.min_rows.load(Ordering::Relaxed)
            && u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
                > self.at_ns.load(Ordering::Relaxed)
    }
}

impl Drop for Deadline<'_> {
    fn drop(&mut self) {
        self.conn.progress_handler(0, None::<fn() -> bool>);
    }
}

impl Reader {
    fn conn(&self) -> Result<Connection, DialLogError> {
        if let Some(c) = switchboard_wire::sync::lock(&self.pool).pop() {
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
        let mut pool = switchboard_wire::sync::lock(&self.pool);
        if pool.len() < 4 {
            pool.push(c);
        }
    }

    /// The stored dial with sequence number `seq` (its rowid), if the file holds it.
    pub(crate) fn dial_at(&self, seq: u64) -> Result<Option<crate::Dial>, DialLogError> {
        let conn = self.conn()?;
        let r = (|| {
            let st = |e: rusqlite::Error| {
                DialLogError::Storage(format!(
                    "reading dial {seq} of {}: {e}",
                    self.path.display()
                ))
            };
            let mut stmt = conn
                .prepare_cached(&format!(
                    "SELECT {DIAL_COLS} FROM dials d WHERE d.rowid = ?1"
                ))
                .map_err(st)?;
            let mut rows = stmt
                .query([i64::try_from(seq).unwrap_or(i64::MAX)])
                .map_err(st)?;
            match rows.next().map_err(st)? {
                Some(r) => Ok(Some(store::dial_from_row(r, &self.path)?)),
                None => Ok(None),
            }
        })();
        self.give_back(conn);
        r
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
            // 2. Indexed rows: one scan of the driver, newest first, to the page's deadline;
            //    counting from the top, on past the page to the count's deadline.
            let p = plan(q);
            let top = sql_upto + 1;
            let hi = before.min(top);
            let room = if dials.len() < limit && !more {
                limit - dials.len()
            } else {
                0
            };
            let counting = count && hi == top;
            let cols = self.block_filter(conn, q, &p, hi, sql_upto)?;
            let mut scan = if let Some(cf) = &cols {
                self.scan_blocks(conn, q, cf, hi, room, counting, started)?
            } else if p.fts && room > 0 {
                // A common word fills the page from the newest rows; a rare one goes on in the
                // full-text index below them.
                let mut a = self.scan(conn, q, &p.plain(), hi, room, counting, started, true)?;
                match a.probed_to {
                    Some(below) => {
                        let left = room - a.dials.len();
                        let mut b =
                            self.scan(conn, q, &p, below, left, counting, started, false)?;
                        a.dials.append(&mut b.dials);
                        Scan {
                            dials: a.dials,
                            more: b.more,
                            counted: a.counted + b.counted,
                            reached: b.reached,
                            probed_to: None,
                        }
                    }
                    None => a,
                }
            } else {
                self.scan(conn, q, &p, hi, room, counting, started, false)?
            };
            more |= scan.more;
            let found = scan.dials.len();
            dials.append(&mut scan.dials);
            if let Some(r) = scan.reached {
                if found < room {
                    out.stopped_at = Some(r);
                }
            }
            if count {
                let gap = self.count_gap(conn, q, sql_upto, gap_below)?;
                let whole = if counting {
                    scan
                } else if let Some(cf) = &cols {
                    self.scan_blocks(conn, q, cf, top, 0, true, started)?
                } else {
                    self.scan(conn, q, &p, top, 0, true, started, false)?
                };
                out.count = self.estimate(conn, whole.counted, whole.reached, top, gap)?;
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

    /// Scans the driver's rows below `hi`, newest first: takes up to `room` matching dials for
    /// the page (one more tells `more`) and, when `counting`, counts the matching rows on to the
    /// end. Stops at [`PAGE_BUDGET`] while the page has room and at [`COUNT_BUDGET`] after
    /// (both from `started`), once [`PAGE_MIN_ROWS`] rows (a page) or one (a count) have been
    /// read (never in a small history, [`SMALL_HISTORY_ROWS`]); `reached` is then the lowest sequence
    /// number read (rows below it were not looked at). A `probe` stops after [`PROBE_ROWS`]
    /// rows while the page still has room (`probed_to`).
    /// The deadline of a scan started at `started`: [`PAGE_BUDGET`] while the page has room
    /// (`filling`, at least [`PAGE_MIN_ROWS`] rows read), else [`COUNT_BUDGET`]; none for a
    /// small store.
    fn scan_deadline<'c>(
        &self,
        conn: &'c Connection,
        started: Instant,
        filling: bool,
    ) -> Result<Deadline<'c>, DialLogError> {
        Ok(Deadline::set(
            conn,
            started,
            if filling { PAGE_BUDGET } else { COUNT_BUDGET },
            if self.small(conn)? {
                u64::MAX
            } else if filling {
                PAGE_MIN_ROWS
            } else {
                1
            },
        ))
    }

    #[allow(clippy::too_many_arguments)]
    fn scan(
        &self,
        conn: &Connection,
        q: &CompiledQuery,
        p: &Plan,
        hi: u64,
        room: usize,
        counting: bool,
        started: Instant,
        probe: bool,
    ) -> Result<Scan, DialLogError> {
        let st = |e: rusqlite::Error| {
            DialLogError::Storage(format!("searching {}: {e}", self.path.display()))
        };
        let mut out = Scan::default();
        if hi <= 1 || (room == 0 && !counting) {
            return Ok(out);
        }
        let mut filling = room > 0;
        let deadline = self.scan_deadline(conn, started, filling)?;
        let mut stmt = conn.prepare_cached(&p.scan_sql()).map_err(st)?;
        let mut fetch = conn
            .prepare_cached(&format!(
                "SELECT {DIAL_COLS} FROM dials d WHERE d.rowid = ?1"
            ))
            .map_err(st)?;
        let params = p.scan_params(hi);
        let mut rows = stmt
            .query(rusqlite::params_from_iter(params.iter()))
            .map_err(st)?;
        // Counted by the flag alone, or only after the Rust check too.
        let check_to_count = p.rust_check && !p.sql_exact;
        let mut last = hi;
        let mut read = 0u64;
        loop {
            let r = match rows.next() {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(e) if interrupted(&e) => {
                    out.reached = Some(last);
                    break;
                }
                Err(e) => return Err(st(e)),
            };
            deadline.read_one();
            let seq = u64::try_from(r.get::<_, i64>(0).map_err(st)?).unwrap_or(0);
            let flag = r.get::<_, Option<i64>>(1).map_err(st)?.unwrap_or(0) != 0;
            if flag {
                let dial = if filling || (counting && check_to_count) {
                    // The deadline interrupts this statement too: `seq` is then not looked at
                    // (the scan stops above it).
                    match fetch_dial(&mut fetch, seq, &self.path, st) {
                        Ok(Some(d)) => Some(d),
                        // Deleted since (retention, clear): not a match any more.
                        Ok(None) => {
                            last = seq;
                            continue;
                        }
                        Err(Fetch::Interrupted) => {
                            out.reached = Some(last);
                            break;
                        }
                        Err(Fetch::Failed(e)) => return Err(e),
                    }
                } else {
                    None
                };
                let matches = match &dial {
                    Some(d) => !p.rust_check || q.matches_dial(d),
                    None => true,
                };
                if counting && (matches || !check_to_count) {
                    out.counted += 1;
                }
                if filling && matches {
                    if out.dials.len() == room {
                        out.more = true;
                        filling = false;
                        if !counting {
                            break;
                        }
                        deadline.extend(COUNT_BUDGET, 1);
                    } else if let Some(d) = dial {
                        out.dials.push(HistoryEntry::Dial(Arc::new(d)));
                    }
                }
            }
            last = seq;
            read += 1;
            if probe && filling && read >= PROBE_ROWS {
                out.probed_to = Some(last);
                break;
            }
            if deadline.passed() {
                out.reached = Some(last);
                break;
            }
        }
        if out.reached.is_some() && out.dials.len() == room {
            // Stopped looking for one more: there may be.
            out.more = true;
        }
        Ok(out)
    }

    /// The column blocks' filter of `q` when the blocks should drive its search below `hi`
    /// (`None`: the version 3 plan, [`plan`]): every stored row up to `sql_upto` has its
    /// block, no positive `call:`/`session:` term (`dial_by` finds those few rows at once), the
    /// query has a column term, and, with a positive free-text term, the column terms pass at
    /// most one row in [`DENSE_ONE_IN`] of the newest (else the full-text index, which reads
    /// only the rows with the words, is the better driver).
    fn block_filter(
        &self,
        conn: &Connection,
        q: &CompiledQuery,
        p: &Plan,
        hi: u64,
        sql_upto: u64,
    ) -> Result<Option<ColFilter>, DialLogError> {
        if self.writer.cols_upto.load(Ordering::Acquire) < sql_upto {
            return Ok(None);
        }
        let follows = q.terms.iter().any(|t| {
            !t.negated
                && matches!(
                    t.atom,
                    CAtom::Field(TextField::Call | TextField::Session, _)
                )
        });
        if follows {
            return Ok(None);
        }
        let st = |e: rusqlite::Error| {
            DialLogError::Storage(format!("searching {}: {e}", self.path.display()))
        };
        let cf = ColFilter::new(conn, q).map_err(st)?;
        if !cf.has_tests() {
            return Ok(None);
        }
        if p.fts {
            // The newest blocks below `hi`: how many of their rows pass the column terms.
            let mut stmt = conn
                .prepare_cached(
                    "SELECT block, base_ms, rows FROM dial_blocks WHERE block <= ?1 \
                     ORDER BY block DESC LIMIT 8",
                )
                .map_err(st)?;
            let top_block = i64::try_from(hi.saturating_sub(1) >> BLOCK_SHIFT).unwrap_or(i64::MAX);
            let mut rows = stmt.query([top_block]).map_err(st)?;
            let (mut seen, mut pass) = (0u64, 0u64);
            while let Some(r) = rows.next().map_err(st)? {
                let block = u64::try_from(r.get::<_, i64>(0).map_err(st)?).unwrap_or(0);
                let base: i64 = r.get(1).map_err(st)?;
                let blob = r.get_ref(2).map_err(st)?.as_blob().unwrap_or(&[]);
                for c in blocks::decode(block, base, blob).unwrap_or_default() {
                    if c.seq < hi {
                        seen += 1;
                        pass += u64::from(cf.matches(&c));
                    }
                }
                if seen >= 1024 {
                    break;
                }
            }
            if pass.saturating_mul(DENSE_ONE_IN) > seen {
                return Ok(None);
            }
        }
        Ok(Some(cf))
    }

    /// [`Reader::scan`] driven by the column blocks: reads the blocks below `hi`, newest first
    /// (a block whose start range the time terms exclude is skipped unread), and reads whole
    /// only the rows that pass every column term (for the page, and to check the terms the
    /// blocks cannot: free text, regex, `call:`, `session:`). With no such term, a count
    /// counts from the blocks alone. Same budgets and answer as [`Reader::scan`].
    #[allow(clippy::too_many_arguments)]
    fn scan_blocks(
        &self,
        conn: &Connection,
        q: &CompiledQuery,
        cf: &ColFilter,
        hi: u64,
        room: usize,
        counting: bool,
        started: Instant,
    ) -> Result<Scan, DialLogError> {
        let st = |e: rusqlite::Error| {
            DialLogError::Storage(format!("searching {}: {e}", self.path.display()))
        };
        let mut out = Scan::default();
        if hi <= 1 || (room == 0 && !counting) {
            return Ok(out);
        }
        let mut filling = room > 0;
        let deadline = self.scan_deadline(conn, started, filling)?;
        let mut stmt = conn
            .prepare_cached(
                "SELECT block, base_ms, min_ms, max_ms, rows FROM dial_blocks WHERE block <= ?1 \
                 ORDER BY block DESC",
            )
            .map_err(st)?;
        let mut fetch = conn
            .prepare_cached(&format!(
                "SELECT {DIAL_COLS} FROM dials d WHERE d.rowid = ?1"
            ))
            .map_err(st)?;
        let mut range = conn
            .prepare_cached(&format!(
                "SELECT {DIAL_COLS} FROM dials d WHERE d.rowid >= ?1 AND d.rowid < ?2 \
                 ORDER BY d.rowid DESC"
            ))
            .map_err(st)?;
        let top_block = i64::try_from((hi - 1) >> BLOCK_SHIFT).unwrap_or(i64::MAX);
        let mut blocks = stmt.query([top_block]).map_err(st)?;
        // Rows from `last` up to `hi` have been looked at.
        let mut last = hi;
        'blocks: loop {
            let r = match blocks.next() {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(e) if interrupted(&e) => {
                    out.reached = Some(last);
                    break;
                }
                Err(e) => return Err(st(e)),
            };
            let block = u64::try_from(r.get::<_, i64>(0).map_err(st)?).unwrap_or(0);
            let block_lo = (block << BLOCK_SHIFT).max(1);
            let (min_ms, max_ms): (i64, i64) = (r.get(2).map_err(st)?, r.get(3).map_err(st)?);
            if cf.may_match_block(min_ms, max_ms) {
                let base: i64 = r.get(1).map_err(st)?;
                let blob = r.get_ref(4).map_err(st)?.as_blob().unwrap_or(&[]);
                // Candidates, newest first: `(seq, whole row when already read)`.
                let cands: Vec<(u64, Option<crate::Dial>)> = match blocks::decode(block, base, blob)
                {
                    Some(rows) => rows
                        .iter()
                        .rev()
                        .filter(|c| c.seq < last)
                        .inspect(|_| deadline.read_one())
                        .filter(|c| cf.matches(c))
                        .map(|c| (c.seq, None))
                        .collect(),
                    None => {
                        // A damaged block: its rows are read whole and checked in Rust.
                        let lo = i64::try_from(block_lo).unwrap_or(i64::MAX);
                        let hi_i = i64::try_from(last).unwrap_or(i64::MAX);
                        let mut rows = range.query([lo, hi_i]).map_err(st)?;
                        let mut v = Vec::new();
                        while let Some(row) = rows.next().map_err(st)? {
                            let d = store::dial_from_row(row, &self.path)?;
                            deadline.read_one();
                            v.push((d.seq.0, Some(d)));
                        }
                        v
                    }
                };
                for (seq, held) in cands {
                    let fetched = filling || (counting && cf.needs_row) || held.is_some();
                    let matches = if fetched {
                        let d = match held {
                            Some(d) => d,
                            None => {
                                match fetch_dial(&mut fetch, seq, &self.path, st) {
                                    Ok(Some(d)) => d,
                                    // Deleted since (retention, clear): not a match any more.
                                    Ok(None) => {
                                        last = seq;
                                        continue;
                                    }
                                    Err(Fetch::Interrupted) => {
                                        out.reached = Some(last);
                                        break 'blocks;
                                    }
                                    Err(Fetch::Failed(e)) => return Err(e),
                                }
                            }
                        };
                        if q.matches_dial(&d) {
                            Some(d)
                        } else {
                            None
                        }
                    } else {
                        // Counted from the block alone: no term needs the row.
                        None
                    };
                    let hit = matches.is_some() || !fetched;
                    if counting && hit {
                        out.counted += 1;
                    }
                    if filling && hit {
                        if out.dials.len() == room {
                            out.more = true;
                            filling = false;
                            if !counting {
                                return Ok(out);
                            }
                            deadline.extend(COUNT_BUDGET, 1);
                        } else if let Some(d) = matches {
                            out.dials.push(HistoryEntry::Dial(Arc::new(d)));
                        }
                    }
                    last = seq;
                    if deadline.passed() {
                        out.reached = Some(last);
                        break 'blocks;
                    }
                }
            }
            last = last.min(block_lo);
            if deadline.passed() {
                out.reached = Some(last);
                break;
            }
        }
        if out.reached.is_some() && out.dials.len() == room {
            out.more = true;
        }
        Ok(out)
    }

    /// Whether the stored rowids span at most [`SMALL_HISTORY_ROWS`].
    fn small(&self, conn: &Connection) -> Result<bool, DialLogError> {
        // One min() or max() a statement: SQLite reads it off the b-tree's edge then (both in
        // one statement scan the table).
        let edge = |sql: &str| {
            conn.query_row(sql, [], |r| r.get::<_, Option<i64>>(0))
                .map(|v| v.unwrap_or(0))
                .map_err(|e| {
                    DialLogError::Storage(format!("searching {}: {e}", self.path.display()))
                })
        };
        let span = edge("SELECT max(rowid) FROM dials")? - edge("SELECT min(rowid) FROM dials")?;
        Ok(u64::try_from(span).unwrap_or(0) < SMALL_HISTORY_ROWS)
    }

    /// The count of a scan from `top`: exact when it reached the end, else scaled by the share
    /// of the stored rowids it covered. `gap` (rows not indexed, counted in Rust) is added.
    fn estimate(
        &self,
        conn: &Connection,
        counted: u64,
        reached: Option<u64>,
        top: u64,
        gap: u64,
    ) -> Result<MatchCount, DialLogError> {
        let Some(reached) = reached else {
            return Ok(MatchCount {
                count: gap + counted,
                exact: true,
            });
        };
        let floor: u64 = conn
            .query_row("SELECT min(rowid) FROM dials", [], |r| {
                r.get::<_, Option<i64>>(0)
            })
            .map_err(|e| {
                DialLogError::Storage(format!("counting in {}: {e}", self.path.display()))
            })?
            .unwrap_or(1)
            .try_into()
            .unwrap_or(1);
        let span = top.saturating_sub(floor).max(1);
        let done = top.saturating_sub(reached).max(1).min(span);
        let est = (counted as f64 * span as f64 / done as f64).round() as u64;
        Ok(MatchCount {
            count: gap + est,
            exact: false,
        })
    }

    /// Counts the stored rows in `(sql_upto, gap_below)` (not indexed, not held) matching `q`,
    /// read and matched in Rust.
    fn count_gap(
        &self,
        conn: &Connection,
        q: &CompiledQuery,
        sql_upto: u64,
        gap_below: u64,
    ) -> Result<u64, DialLogError> {
        let mut n = 0u64;
        self.each_gap_match(conn, q, sql_upto, gap_below, "counting in", |_| n += 1)?;
        Ok(n)
    }

    /// Per-op stats of the stored dials matching `q` (SQL for rows up to `sql_upto`, Rust for
    /// those in `(sql_upto, gap_below)`), newest first, into `tally`, for at most `budget`.
    /// Reads only the stats' columns (op, outcome, duration, spec mark) unless the query has
    /// free text or a regex (then the flagged rows are read whole and checked). Returns whether
    /// every stored row was looked at (`false`: the budget ran out; the tally holds the newest
    /// ones).
    ///
    /// # Errors
    /// [`DialLogError::Storage`] when SQLite fails.
    pub(crate) fn stats(
        &self,
        q: &CompiledQuery,
        sql_upto: u64,
        gap_below: u64,
        budget: Duration,
        tally: &mut crate::StatsTally,
    ) -> Result<bool, DialLogError> {
        if !q.dials {
            return Ok(true);
        }
        let conn = self.conn()?;
        let r = self.stats_on(&conn, q, sql_upto, gap_below, budget, tally);
        self.give_back(conn);
        r
    }

    fn stats_on(
        &self,
        conn: &Connection,
        q: &CompiledQuery,
        sql_upto: u64,
        gap_below: u64,
        budget: Duration,
        tally: &mut crate::StatsTally,
    ) -> Result<bool, DialLogError> {
        let st = |e: rusqlite::Error| {
            DialLogError::Storage(format!("stats over {}: {e}", self.path.display()))
        };
        let started = Instant::now();
        // 1. Stored rows not indexed yet and not in the ring: matched in Rust (few: the writer
        //    indexes as soon as it is idle).
        self.each_gap_match(conn, q, sql_upto, gap_below, "stats over", |d| {
            tally.add_dial(d)
        })?;
        // 2. Indexed rows: the driver joined to the stats' columns, the flag for the SQL terms.
        let p = plan(q);
        let from = match p.seq_col {
            "f.rowid" => "dial_fts f JOIN dials d ON d.rowid = f.rowid WHERE dial_fts MATCH ?",
            "b.seq" => "dial_by b JOIN dials d ON d.rowid = b.seq WHERE b.key = ?",
            _ => "dials d WHERE 1",
        };
        let flag = if p.conds.is_empty() {
            "1".to_owned()
        } else {
            p.conds
                .iter()
                .map(|c| format!("({c})"))
                .collect::<Vec<_>>()
                .join(" AND ")
        };
        let sql = format!(
            "SELECT {0}, d.op, d.outcome, d.duration_ms, d.spec, {flag} FROM {from} AND {0} < ? \
             ORDER BY {0} DESC",
            p.seq_col
        );
        let deadline = Deadline::set(conn, started, budget, 1);
        let mut stmt = conn.prepare_cached(&sql).map_err(st)?;
        let mut fetch = conn
            .prepare_cached(&format!(
                "SELECT {DIAL_COLS} FROM dials d WHERE d.rowid = ?1"
            ))
            .map_err(st)?;
        let params = p.scan_params(sql_upto.saturating_add(1));
        let mut rows = stmt
            .query(rusqlite::params_from_iter(params.iter()))
            .map_err(st)?;
        loop {
            let r = match rows.next() {
                Ok(Some(r)) => r,
                Ok(None) => return Ok(true),
                Err(e) if interrupted(&e) => return Ok(false),
                Err(e) => return Err(st(e)),
            };
            deadline.read_one();
            if r.get::<_, Option<i64>>(5).map_err(st)?.unwrap_or(0) == 0 {
                continue;
            }
            if p.rust_check {
                let seq = r.get::<_, i64>(0).map_err(st)?;
                let mut one = match fetch.query([seq]) {
                    Ok(one) => one,
                    Err(e) if interrupted(&e) => return Ok(false),
                    Err(e) => return Err(st(e)),
                };
                match one.next() {
                    Ok(Some(row)) => {
                        let d = store::dial_from_row(row, &self.path)?;
                        if q.matches_dial(&d) {
                            tally.add_dial(&d);
                        }
                    }
                    Ok(None) => {}
                    Err(e) if interrupted(&e) => return Ok(false),
                    Err(e) => return Err(st(e)),
                }
            } else {
                let op: String = r.get(1).map_err(st)?;
                let outcome: String = r.get(2).map_err(st)?;
                let outcome = super::DialOutcome::parse(&outcome).ok_or_else(|| {
                    DialLogError::Storage(format!(
                        "{}: unknown outcome {outcome:?}",
                        self.path.display()
                    ))
                })?;
                let duration = u64::try_from(r.get::<_, i64>(3).map_err(st)?).unwrap_or(0);
                let spec = r.get::<_, Option<i64>>(4).map_err(st)?.unwrap_or(0) > 0;
                tally.add(&op, outcome, duration, spec);
            }
            if deadline.passed() {
                return Ok(false);
            }
        }
    }

    /// Calls `f` with each stored dial in `(sql_upto, gap_below)` (written, not indexed yet,
    /// not in the ring) that matches `q`, checked in Rust. `doing` names the work in errors.
    fn each_gap_match(
        &self,
        conn: &Connection,
        q: &CompiledQuery,
        sql_upto: u64,
        gap_below: u64,
        doing: &str,
        mut f: impl FnMut(&crate::Dial),
    ) -> Result<(), DialLogError> {
        if gap_below <= sql_upto + 1 {
            return Ok(());
        }
        let st = |e: rusqlite::Error| {
            DialLogError::Storage(format!("{doing} {}: {e}", self.path.display()))
        };
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
            let d = store::dial_from_row(r, &self.path)?;
            if q.matches_dial(&d) {
                f(&d);
            }
        }
        Ok(())
    }

    /// Whether every stored row is indexed (for benches and tests that wait for it).
    pub(crate) fn indexed_all(&self) -> Result<bool, DialLogError> {
        let conn = self.conn()?;
        let r = conn
            .query_row("SELECT coalesce(max(rowid), 0) FROM dials", [], |r| {
                r.get::<_, i64>(0)
            })
            .map(|m| {
                let m = u64::try_from(m).unwrap_or(0);
                m <= self.writer.indexed_upto.load(Ordering::Acquire)
                    && m <= self.writer.cols_upto.load(Ordering::Acquire)
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
