//! Following a call or a session from one dial (`dials_follow`): every dial with its `callId`,
//! or of its ifp/1 session, oldest first, as one page, in the live history, the imported
//! capture or an opened support bundle ([`follow_in`]).
//!
//! Why apart: the inspector's "follow" is a query of its own (a filter line built from the dial,
//! paged to the end, cut at [`MAX_FOLLOW`]), shared by the live app and the bundle view.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use switchboard_dials::filter::{Atom, Term, TextField};
use switchboard_dials::{
    CompiledQuery, Dial, DialQuery, HistoryPage, HistoryQuery, ImportedLog, MatchCount,
};
use switchboard_wire::error::IpcError;

use super::{DialHistoryPage, DialRow, DialSource, HistoryRow};
use crate::App;

/// What `dials_follow` follows from a dial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum FollowBy {
    /// Every dial with the same `callId` (`call:<id>`).
    Call,
    /// Every dial of the same ifp/1 session (`session:<id>`).
    Session,
}

/// Dials a followed call or session shows at most.
pub const MAX_FOLLOW: usize = 10_000;

/// Follows a call or a session from dial `d` within a read-only set of dials (an opened support
/// bundle): as [`App::dials_follow`], oldest first, at most [`MAX_FOLLOW`].
///
/// # Errors
/// `internal` if the follow query cannot be compiled; `invalid_input` from the set's history.
pub fn follow_in(log: &ImportedLog, d: &Dial, by: FollowBy) -> Result<DialHistoryPage, IpcError> {
    let Some((q, compiled)) = follow_query(d, by)? else {
        return Ok(single_row_page(d));
    };
    let mut rows: Vec<HistoryRow> = Vec::new();
    let mut cursor: Option<String> = None;
    let mut last = HistoryPage::default();
    for _ in 0..64 {
        last = log
            .history(&compiled, cursor.as_deref(), Some(2000), false)
            .map_err(IpcError::invalid_input)?;
        rows.extend(last.entries.iter().map(HistoryRow::from));
        cursor = last.next.clone();
        if cursor.is_none() || rows.len() >= MAX_FOLLOW {
            break;
        }
    }
    Ok(followed_page(rows, cursor.is_none(), last.newest_seq, &q))
}

/// The query that follows `d`'s call (`by: call`) or ifp/1 session (`by: session`), or `None`
/// when the dial has no call id (or no session): it then follows to itself alone.
fn follow_query(d: &Dial, by: FollowBy) -> Result<Option<(DialQuery, CompiledQuery)>, IpcError> {
    let (field, value) = match by {
        FollowBy::Call => (TextField::Call, d.call_id.to_string()),
        FollowBy::Session => (TextField::Session, d.session.to_string()),
    };
    if value.is_empty() {
        return Ok(None);
    }
    let q = DialQuery::of(Term {
        negated: false,
        atom: Atom::Field(field, value),
    });
    let compiled = CompiledQuery::new(&q, 0, &|_| Vec::new())
        .map_err(|e| IpcError::internal(e.to_string()))?;
    Ok(Some((q, compiled)))
}

/// The page of a dial that follows to itself alone (no call id or session; empty `filter`).
fn single_row_page(d: &Dial) -> DialHistoryPage {
    DialHistoryPage {
        rows: vec![HistoryRow::Dial(DialRow::from(d))],
        next: None,
        matched: Some(MatchCount {
            count: 1,
            exact: true,
        }),
        oldest_ms: Some(d.start_ms),
        newest_seq: d.seq.0,
        filter: String::new(),
        skipped: 0,
    }
}

/// A followed call or session as one page, oldest first: `rows` as paged (newest first), cut at
/// [`MAX_FOLLOW`]; `complete` when the paging reached the end (the count is then exact).
fn followed_page(
    mut rows: Vec<HistoryRow>,
    complete: bool,
    newest_seq: u64,
    q: &DialQuery,
) -> DialHistoryPage {
    rows.truncate(MAX_FOLLOW);
    rows.reverse();
    let n = rows.len() as u64;
    DialHistoryPage {
        oldest_ms: rows.first().map(|r| match r {
            HistoryRow::Dial(d) => d.start_ms,
            HistoryRow::Connection(c) => c.at_ms,
        }),
        rows,
        next: None,
        matched: Some(MatchCount {
            count: n,
            exact: complete,
        }),
        newest_seq,
        filter: q.to_string(),
        skipped: 0,
    }
}

impl App {
    /// Follows a call or a session from dial `id`: every dial with its `callId` (`by: call`) or
    /// of its ifp/1 session (`by: session`), **oldest first**, at most [`MAX_FOLLOW`]. The
    /// page's `filter` is the filter line that shows the same (`call:<id>`, `session:<id>`).
    /// A dial with no `callId` (or no session) follows to itself alone (`filter` empty).
    ///
    /// # Errors
    /// `not_found` when the dial is no longer held or stored; as [`App::dials_history`].
    pub async fn dials_follow(
        &self,
        id: &str,
        start_ms: Option<i64>,
        by: FollowBy,
        source: Option<DialSource>,
    ) -> Result<DialHistoryPage, IpcError> {
        let source = source.unwrap_or_default();
        let dials = self.dials()?;
        let Some(d) = dials.find(id, start_ms, None, source).await? else {
            return Err(IpcError::not_found(format!(
                "dial {id} is no longer held or stored"
            )));
        };
        let Some((q, compiled)) = follow_query(&d, by)? else {
            return Ok(single_row_page(&d));
        };
        let mut rows: Vec<HistoryRow> = Vec::new();
        let mut cursor: Option<String> = None;
        let mut last = HistoryPage::default();
        for _ in 0..64 {
            let hq = HistoryQuery {
                filter: String::new(),
                cursor: cursor.clone(),
                limit: Some(2000),
                count: Some(false),
                skip: None,
            };
            last = dials.history(compiled.clone(), &hq, source).await?;
            rows.extend(last.entries.iter().map(HistoryRow::from));
            cursor = last.next.clone();
            if cursor.is_none() || rows.len() >= MAX_FOLLOW {
                break;
            }
        }
        Ok(followed_page(rows, cursor.is_none(), last.newest_seq, &q))
    }
}
