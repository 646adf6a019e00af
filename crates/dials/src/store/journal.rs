//! The journal of committed batches: during a flood the writer commits each batch of dials as
//! one row of `dial_journal` (the batch's fields, length-prefixed, in one blob) instead of one
//! `dials` row and one `dial_keys` row a dial, and moves the rows into `dials` once the flood
//! has passed. A batch in the journal is as durable as one in `dials` (one transaction, the
//! same WAL, the same fsync policy), so acknowledgements still wait only for its commit; what
//! the move costs is paid between floods, like the history indexes.
//!
//! Every reader of the file sees the journal:
//! - [`super::open`] moves what a crash left in it before anything reads the file (start-up,
//!   support bundles, the CLI, repair's fresh file);
//! - the history's gap reader and [`dial_at`] read journaled dials in place (they are newer than
//!   every indexed row: the writer indexes only when the journal is empty);
//! - clearing empties it; pruning moves it first; repair salvages its rows.
//!
//! The rows' order is the file's invariant: every journaled dial's sequence number is above
//! every `dials` rowid (the writer journals a batch only when the journal is not empty or the
//! batch is large, [`JOURNAL_MIN_BATCH`], and inserts directly only when it is empty), and the
//! journal is moved oldest first.
//!
//! Body format (version 1), little-endian: the version byte `1`, then for each dial: `seq` u64,
//! `start_ms` i64, `duration_ms` u64, `arrived_ms` (flag byte, then i64 when 1), `spec` (flag
//! byte, then u32 when 1), and the texts `id`, `phone`, `call_id`, `caller`, `callee`,
//! `endpoint`, `op`, `request`, `session`, `outcome`, `retention` (each a u32 byte length then
//! UTF-8), then `response` and `error` (flag byte, then a text when 1).

use std::path::Path;
use std::sync::Arc;

use rusqlite::{params, Connection, OptionalExtension};

use super::storage;
use crate::record::{Arrival, Dial, DialOutcome, JsonText, Retention, Seq, SpecMark};
use crate::DialLogError;

/// The table, created with the others by [`super::open`].
pub(crate) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS dial_journal (
    first       INTEGER PRIMARY KEY,
    last        INTEGER NOT NULL,
    n           INTEGER NOT NULL,
    body        BLOB NOT NULL
);
";

/// A batch of at least this many dials goes to the journal even when it is empty: smaller ones
/// are written as rows at once, as they always were. The log hands the writer a batch every
/// 100 ms at most, so a phone streaming 1 000 dials/s makes batches of about 100, which stay
/// rows written once: with 32 here they were journaled and moved, and the latency bench's p99
/// at 1 000 dials/s rose from about 1.1 to 1.2-1.3 times the bare connection's. A flood's
/// batches are several hundred.
pub(crate) const JOURNAL_MIN_BATCH: usize = 256;

/// Dials the journal may hold before the writer moves its oldest batch after each batch it
/// journals: a stream that never pauses keeps the journal (what the gap reader decodes and
/// the next start moves) at about this size instead of growing it for as long as it lasts.
pub(crate) const JOURNAL_MAX_DIALS: u64 = 200_000;

const VERSION: u8 = 1;

/// Encodes the persisting dials of `dials` into one body; `None` when none persists.
/// Returns `(first seq, last seq, count, body)`.
pub(crate) fn encode(dials: &[Arc<Dial>]) -> Option<(u64, u64, u64, Vec<u8>)> {
    let mut body = Vec::with_capacity(1 + dials.len() * 1024);
    body.push(VERSION);
    let (mut first, mut last, mut n) = (None, 0u64, 0u64);
    for d in dials.iter().filter(|d| d.retention.persists()) {
        first.get_or_insert(d.seq.0);
        last = d.seq.0;
        n += 1;
        body.extend_from_slice(&d.seq.0.to_le_bytes());
        body.extend_from_slice(&d.start_ms.to_le_bytes());
        body.extend_from_slice(&d.duration_ms.to_le_bytes());
        match d.arrived.0 {
            Some(ms) => {
                body.push(1);
                body.extend_from_slice(&ms.to_le_bytes());
            }
            None => body.push(0),
        }
        match d.spec.get() {
            Some(s) => {
                body.push(1);
                body.extend_from_slice(&s.to_le_bytes());
            }
            None => body.push(0),
        }
        for text in [
            &*d.id,
            &*d.phone,
            &*d.call_id,
            &*d.caller,
            &*d.callee,
            &*d.endpoint,
            &*d.op,
            d.request.as_str(),
            &*d.session,
            d.outcome.as_str(),
            d.retention.as_str(),
        ] {
            put_text(&mut body, text);
        }
        for text in [
            d.response.as_ref().map(JsonText::as_str),
            d.error.as_deref(),
        ] {
            match text {
                Some(t) => {
                    body.push(1);
                    put_text(&mut body, t);
                }
                None => body.push(0),
            }
        }
    }
    first.map(|f| (f, last, n, body))
}

fn put_text(body: &mut Vec<u8>, text: &str) {
    // A dial's texts are bounded by the frame size (ifp/1 frames are at most a few MiB).
    let len = u32::try_from(text.len()).unwrap_or(u32::MAX);
    body.extend_from_slice(&len.to_le_bytes());
    body.extend_from_slice(text.as_bytes());
}

/// A cursor over a body; its errors name the byte offset and what was being read.
struct Cursor<'a> {
    body: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.body.len())
            .ok_or_else(|| {
                format!(
                    "{what} at byte {} runs past the end ({} bytes)",
                    self.at,
                    self.body.len()
                )
            })?;
        let s = &self.body[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn u8(&mut self, what: &str) -> Result<u8, String> {
        Ok(self.take(1, what)?[0])
    }

    fn u64(&mut self, what: &str) -> Result<u64, String> {
        let b = self.take(8, what)?;
        Ok(u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
    }

    fn i64(&mut self, what: &str) -> Result<i64, String> {
        let b = self.take(8, what)?;
        Ok(i64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
    }

    fn u32(&mut self, what: &str) -> Result<u32, String> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes(b.try_into().unwrap_or([0; 4])))
    }

    fn flag(&mut self, what: &str) -> Result<bool, String> {
        let at = self.at;
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(format!("{what} at byte {at}: flag {b}, expected 0 or 1")),
        }
    }

    /// A flag byte, then what `read` reads when it is 1.
    fn opt<T>(
        &mut self,
        what: &str,
        read: impl FnOnce(&mut Self) -> Result<T, String>,
    ) -> Result<Option<T>, String> {
        if self.flag(what)? {
            read(self).map(Some)
        } else {
            Ok(None)
        }
    }

    fn text(&mut self, what: &str) -> Result<&'a str, String> {
        let len = self.u32(what)? as usize;
        let at = self.at;
        let b = self.take(len, what)?;
        std::str::from_utf8(b).map_err(|e| format!("{what} at byte {at}: not UTF-8 ({e})"))
    }
}

/// Decodes one body into its dials, in order. Errors name the journal row (`first`), the
/// dial's place in it and the byte offset; nothing is returned for a body that does not decode
/// whole.
pub(crate) fn decode(first: u64, body: &[u8]) -> Result<Vec<Dial>, String> {
    let mut c = Cursor { body, at: 0 };
    let v = c
        .u8("the version")
        .map_err(|e| format!("journal row {first}: {e}"))?;
    if v != VERSION {
        return Err(format!(
            "journal row {first}: body version {v}, this build reads {VERSION}"
        ));
    }
    let mut out = Vec::new();
    while c.at < body.len() {
        let d = decode_one(&mut c)
            .map_err(|e| format!("journal row {first}, dial {}: {e}", out.len()))?;
        out.push(d);
    }
    Ok(out)
}

fn decode_one(c: &mut Cursor<'_>) -> Result<Dial, String> {
    let seq = c.u64("seq")?;
    let start_ms = c.i64("start_ms")?;
    let duration_ms = c.u64("duration_ms")?;
    let arrived = c.opt("arrived_ms", |c| c.i64("arrived_ms"))?;
    let spec = c.opt("spec", |c| c.u32("spec"))?;
    let id = c.text("id")?;
    let phone = c.text("phone")?;
    let call_id = c.text("call_id")?;
    let caller = c.text("caller")?;
    let callee = c.text("callee")?;
    let endpoint = c.text("endpoint")?;
    let op = c.text("op")?;
    let request = c.text("request")?;
    let session = c.text("session")?;
    let outcome = c.text("outcome")?;
    let retention = c.text("retention")?;
    let response = c.opt("response", |c| c.text("response"))?;
    let error = c.opt("error", |c| c.text("error"))?;
    let outcome = DialOutcome::parse(outcome)
        .ok_or_else(|| format!("dial {id}: unknown outcome {outcome:?}"))?;
    let retention = Retention::parse(retention)
        .ok_or_else(|| format!("dial {id}: unknown retention {retention:?}"))?;
    let mut d = Dial {
        id: id.into(),
        phone: phone.into(),
        call_id: call_id.into(),
        caller: caller.into(),
        callee: callee.into(),
        endpoint: endpoint.into(),
        op: op.into(),
        request: JsonText::from_trusted(request.to_owned()),
        start_ms,
        duration_ms,
        outcome,
        response: response.map(|r| JsonText::from_trusted(r.to_owned())),
        error: error.map(Into::into),
        retention,
        slow: false,
        spec: spec.map_or_else(SpecMark::default, SpecMark::known),
        session: session.into(),
        seq: Seq(seq),
        arrived: Arrival(arrived),
    };
    d.normalise();
    Ok(d)
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Commits the persisting dials of `dials` as one journal row. Returns dials journaled.
pub(crate) fn journal_batch(conn: &mut Connection, dials: &[Arc<Dial>]) -> rusqlite::Result<usize> {
    let Some((first, last, n, body)) = encode(dials) else {
        return Ok(0);
    };
    conn.prepare_cached("INSERT INTO dial_journal (first, last, n, body) VALUES (?1, ?2, ?3, ?4)")?
        .execute(params![to_i64(first), to_i64(last), to_i64(n), body])?;
    Ok(usize::try_from(n).unwrap_or(usize::MAX))
}

/// Dials the journal holds now (0 when the table is empty).
pub(crate) fn held(conn: &Connection) -> rusqlite::Result<u64> {
    let n: i64 = conn.query_row("SELECT coalesce(sum(n), 0) FROM dial_journal", [], |r| {
        r.get(0)
    })?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// What went wrong moving the journal: SQLite's error, or a body that does not decode.
#[derive(Debug)]
pub(crate) enum MoveError {
    Sql(rusqlite::Error),
    Body(String),
}

impl From<rusqlite::Error> for MoveError {
    fn from(e: rusqlite::Error) -> Self {
        Self::Sql(e)
    }
}

impl MoveError {
    /// The error as the log reports it, naming the file.
    pub(crate) fn into_storage(self, path: &Path) -> DialLogError {
        match self {
            Self::Sql(e) => storage(path, "moving the dial journal of", e),
            Self::Body(e) => DialLogError::Storage(format!("{}: {e}", path.display())),
        }
    }
}

/// Moves the oldest journal row's dials into `dials` (and their keys into `dial_keys`) and
/// deletes the row, in one transaction. Returns dials moved, `None` when the journal is empty.
///
/// # Errors
/// SQLite's errors (nothing is moved), or [`MoveError::Body`] for a body that does not decode:
/// the row is left where it is for repair to salvage what it can.
pub(crate) fn move_oldest(conn: &mut Connection) -> Result<Option<usize>, MoveError> {
    let tx = conn.transaction()?;
    let row: Option<(i64, Vec<u8>)> = tx
        .query_row(
            "SELECT first, body FROM dial_journal ORDER BY first LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let Some((first, body)) = row else {
        return Ok(None);
    };
    let dials = decode(u64::try_from(first).unwrap_or(0), &body).map_err(MoveError::Body)?;
    let n = super::rows::insert_rows(&tx, dials.iter())?;
    tx.execute("DELETE FROM dial_journal WHERE first = ?1", [first])?;
    tx.commit()?;
    Ok(Some(n))
}

/// Moves the whole journal into `dials`, oldest first. Returns dials moved.
///
/// # Errors
/// As [`move_oldest`]; what was moved before the error stays moved.
pub(crate) fn move_all(conn: &mut Connection) -> Result<usize, MoveError> {
    let mut moved = 0;
    while let Some(n) = move_oldest(conn)? {
        moved += n;
    }
    Ok(moved)
}

/// Calls `each` with every journaled dial whose sequence number is in `(above, below)`, in
/// order. `path` names the file in errors.
///
/// # Errors
/// SQLite's errors reading the journal, or a body that does not decode.
pub(crate) fn each_between(
    conn: &Connection,
    path: &Path,
    above: u64,
    below: u64,
    mut each: impl FnMut(Dial),
) -> Result<(), DialLogError> {
    let st = |e: rusqlite::Error| storage(path, "reading the dial journal of", e);
    let mut stmt = conn
        .prepare_cached(
            "SELECT first, body FROM dial_journal WHERE last > ?1 AND first < ?2 ORDER BY first",
        )
        .map_err(st)?;
    let mut rows = stmt
        .query(params![to_i64(above), to_i64(below)])
        .map_err(st)?;
    while let Some(r) = rows.next().map_err(st)? {
        let first: i64 = r.get(0).map_err(st)?;
        let body: Vec<u8> = r.get(1).map_err(st)?;
        let dials = decode(u64::try_from(first).unwrap_or(0), &body)
            .map_err(|e| DialLogError::Storage(format!("{}: {e}", path.display())))?;
        for d in dials {
            if d.seq.0 > above && d.seq.0 < below {
                each(d);
            }
        }
    }
    Ok(())
}

/// The journaled dial with sequence number `seq`, if the journal holds it.
///
/// # Errors
/// As [`each_between`].
pub(crate) fn dial_at(
    conn: &Connection,
    path: &Path,
    seq: u64,
) -> Result<Option<Dial>, DialLogError> {
    let mut found = None;
    each_between(
        conn,
        path,
        seq.saturating_sub(1),
        seq.saturating_add(1),
        |d| {
            found = Some(d);
        },
    )?;
    Ok(found)
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::store::open;

    /// `n` sample dials with sequence numbers `from..from + n`, all persisting.
    pub(crate) fn samples(from: u64, n: u64) -> Vec<Arc<Dial>> {
        (0..n)
            .map(|i| {
                let mut d =
                    switchboard_domain::dial::sample::sample_dial(from + i, 2, 1_800_000_000_000);
                d.retention = Retention::Standard;
                d.seq = Seq(from + i);
                d.normalise();
                Arc::new(d)
            })
            .collect()
    }

    fn count(conn: &Connection, sql: &str) -> i64 {
        conn.query_row(sql, [], |r| r.get(0)).unwrap()
    }

    #[test]
    fn a_journal_a_crash_left_becomes_rows_in_order_when_the_file_opens() {
        let dir = tempfile::tempdir().unwrap();
        let (mut conn, _) = open(dir.path()).unwrap();
        let first = samples(1, 40);
        let second = samples(41, 40);
        journal_batch(&mut conn, &first).unwrap();
        journal_batch(&mut conn, &second).unwrap();
        assert_eq!(held(&conn).unwrap(), 80);
        assert_eq!(count(&conn, "SELECT count(*) FROM dials"), 0);
        // The process dies here: nothing moved the journal.
        drop(conn);
        let (conn, path) = open(dir.path()).unwrap();
        assert_eq!(held(&conn).unwrap(), 0, "open moved the journal");
        assert_eq!(count(&conn, "SELECT count(*) FROM dial_journal"), 0);
        assert_eq!(count(&conn, "SELECT count(*) FROM dial_keys"), 80);
        let mut stmt = conn
            .prepare(&format!(
                "SELECT {} FROM dials d ORDER BY d.rowid",
                super::super::DIAL_COLS
            ))
            .unwrap();
        let mut rows = stmt.query([]).unwrap();
        let mut back = Vec::new();
        while let Some(r) = rows.next().unwrap() {
            back.push(super::super::dial_from_row(r, &path).unwrap());
        }
        let want: Vec<&Dial> = first.iter().chain(&second).map(|d| &**d).collect();
        assert_eq!(back.len(), want.len());
        for (b, w) in back.iter().zip(want) {
            assert_eq!(b, w);
            assert_eq!(b.seq.0, w.seq.0, "the rowid is the dial's sequence number");
        }
        // The keys the dedup reads at start are there for every moved dial.
        let mut keys = Vec::new();
        super::super::for_each_key_newest_first(&conn, u64::MAX, |p, k| keys.push((p, k))).unwrap();
        assert_eq!(keys.len(), 80);
        assert_eq!(keys[0].1, super::super::id_key(&second[39].id));
    }

    #[test]
    fn history_reads_journaled_dials_before_they_are_moved() {
        let dir = tempfile::tempdir().unwrap();
        let (mut conn, path) = open(dir.path()).unwrap();
        // Rows first (moved or written at a trickle), then a flood's batch in the journal.
        super::super::insert_batch(&mut conn, &samples(1, 3)).unwrap();
        journal_batch(&mut conn, &samples(4, 40)).unwrap();
        let shared = Arc::new(crate::store::WriterShared::default());
        let reader = Arc::new(crate::history_sql::Reader {
            path: path.clone(),
            pool: std::sync::Mutex::new(Vec::new()),
            writer: Arc::clone(&shared),
        });
        // One dial from the journal, one from the rows.
        let d = reader.dial_at(20).unwrap().expect("dial 20 is journaled");
        assert_eq!(d.seq.0, 20);
        assert_eq!(d.id, samples(20, 1)[0].id);
        assert_eq!(reader.dial_at(2).unwrap().unwrap().seq.0, 2);
        assert!(reader.dial_at(44).unwrap().is_none());
        // A page with nothing indexed and nothing in the ring reads the gap: rows and journal.
        let all = crate::filter::CompiledQuery::parse("", 1_800_000_000_000).unwrap();
        let page = reader.page(&all, u64::MAX, 100, true, 0, u64::MAX).unwrap();
        let seqs: Vec<u64> = page
            .entries
            .iter()
            .filter_map(|e| match e {
                crate::history::HistoryEntry::Dial(d) => Some(d.seq.0),
                crate::history::HistoryEntry::Connection(_) => None,
            })
            .collect();
        assert_eq!(
            seqs,
            (1..=43).rev().collect::<Vec<_>>(),
            "newest first, none missing"
        );
        // Not every stored dial is a row yet, so not every one is indexed.
        shared
            .indexed_upto
            .store(3, std::sync::atomic::Ordering::Release);
        shared
            .cols_upto
            .store(3, std::sync::atomic::Ordering::Release);
        assert!(!reader.indexed_all().unwrap());
        // Clearing takes the journal's dials too, and counts them.
        assert_eq!(super::super::clear(&conn).unwrap(), 43);
        assert_eq!(held(&conn).unwrap(), 0);
    }

    fn dial(seq: u64, n: u32) -> Dial {
        let mut d = Dial {
            id: format!("d{seq}-\u{e9}\u{1f600}").into(),
            phone: "dev_1".into(),
            call_id: format!("c{seq}").into(),
            caller: "lumiagent".into(),
            callee: "lumirealm".into(),
            endpoint: "lumirealm.phoneline".into(),
            op: "describe".into(),
            request: JsonText::from_trusted(r#"{"callId":"c","op":"describe"}"#.into()),
            start_ms: 1_700_000_000_000 + i64::from(n),
            duration_ms: 1500,
            outcome: if n % 2 == 0 {
                DialOutcome::Ok
            } else {
                DialOutcome::Error
            },
            response: (n % 2 == 0).then(|| JsonText::from_trusted(r#"{"ok":true}"#.into())),
            error: (n % 2 == 1).then(|| "Extension \"x\" has no permission".into()),
            retention: if n % 3 == 0 {
                Retention::Permanent
            } else {
                Retention::Standard
            },
            slow: false,
            spec: if n % 2 == 0 {
                SpecMark::known(n)
            } else {
                SpecMark::default()
            },
            session: "ses_1".into(),
            seq: Seq(seq),
            arrived: Arrival((n % 2 == 0).then_some(1_700_000_000_500)),
        };
        d.normalise();
        d
    }

    #[test]
    fn a_body_gives_back_every_field_of_every_persisting_dial() {
        let mut dials: Vec<Arc<Dial>> = (0..5).map(|i| Arc::new(dial(10 + i, i as u32))).collect();
        let mut transient = dial(99, 7);
        transient.retention = Retention::Transient;
        dials.insert(2, Arc::new(transient));
        let (first, last, n, body) = encode(&dials).expect("persisting dials");
        assert_eq!((first, last, n), (10, 14, 5));
        let back = decode(first, &body).expect("decodes");
        let want: Vec<&Dial> = dials
            .iter()
            .map(|d| &**d)
            .filter(|d| d.retention.persists())
            .collect();
        assert_eq!(back.len(), want.len());
        for (b, w) in back.iter().zip(want) {
            // Equality ignores seq and arrival: compare them apart.
            assert_eq!(b, w);
            assert_eq!(b.seq.0, w.seq.0);
            assert_eq!(b.arrived.0, w.arrived.0);
            assert_eq!(b.spec.get(), w.spec.get());
            assert_eq!(b.slow, w.slow);
        }
    }

    #[test]
    fn only_transient_dials_make_no_body() {
        let mut d = dial(1, 1);
        d.retention = Retention::Transient;
        assert!(encode(&[Arc::new(d)]).is_none());
    }

    #[test]
    fn a_damaged_body_is_refused_naming_the_row_dial_and_byte() {
        let (first, _, _, body) =
            encode(&[Arc::new(dial(7, 0)), Arc::new(dial(8, 1))]).expect("body");
        // Cut inside the second dial.
        let cut = &body[..body.len() - 5];
        let e = decode(first, cut).expect_err("truncated");
        assert!(e.contains("journal row 7, dial 1"), "{e}");
        assert!(e.contains("runs past the end"), "{e}");
        let mut bad = body.clone();
        bad[0] = 9;
        let e = decode(first, &bad).expect_err("version");
        assert!(e.contains("body version 9"), "{e}");
        // A flag byte that is neither 0 nor 1 (the first dial's arrival flag, after 24 bytes).
        let mut bad = body;
        bad[1 + 24] = 5;
        let e = decode(first, &bad).expect_err("flag");
        assert!(e.contains("dial 0: arrived_ms at byte 25: flag 5"), "{e}");
    }
}
