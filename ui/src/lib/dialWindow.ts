// The Live dials table's window over the core's history (unit-tested in dialWindow.test.ts):
// which rows to render for a scroll position, which page to read next, and a small cache of
// rows. The page holds only the rows in view plus `cacheRows` around them; everything else
// stays in the core (`dials_history`, read page by page with its cursors) and comes back as the
// person scrolls. Live rows arrive at the top; while the table is scrolled down, the rows in
// view keep their place (`keepInPlace`).
import type { DialRow } from "../bindings/DialRow";
import { ROW_HEIGHT, OVERSCAN } from "./dials";

/** Rows asked of the core in one page. */
export const PAGE = 200;
/** Most rows kept in the page (beyond the ones shown) before the farthest are dropped. */
export const CACHE_ROWS = 2000;
/** Tallest scroll area used; beyond it the scroll position maps to rows proportionally
 * (browsers cap element heights, WebKit at about 33 million px). */
export const MAX_SPACER_PX = 8_000_000;

/** Rows to render and where: display indexes `start` (inclusive) to `end` (exclusive), the
 * block `offset` px from the top of a scroll area `spacer` px high. */
export interface RowWindow {
  start: number;
  end: number;
  offset: number;
  spacer: number;
}

/** Geometry of a table of `total` rows in a body `height` px high. */
export class Geometry {
  readonly spacer: number;
  readonly scaled: boolean;
  /** Rows that fit in the body (the last partly). */
  readonly visible: number;

  constructor(
    readonly total: number,
    readonly height: number,
    readonly rowHeight = ROW_HEIGHT,
    readonly maxSpacer = MAX_SPACER_PX,
  ) {
    const full = Math.max(0, total) * rowHeight;
    this.scaled = full > maxSpacer;
    this.spacer = this.scaled ? maxSpacer : full;
    this.visible = Math.ceil(Math.max(0, height) / rowHeight) + 1;
  }

  private get maxScroll(): number {
    return Math.max(0, this.spacer - this.height);
  }

  private get lastFirst(): number {
    return Math.max(0, this.total - this.visible + 1);
  }

  /** The display index of the first row in view at `scrollTop`. */
  firstIndex(scrollTop: number): number {
    if (this.total <= 0) return 0;
    const top = Math.max(0, scrollTop);
    if (!this.scaled) return Math.min(this.total - 1, Math.floor(top / this.rowHeight));
    const m = this.maxScroll;
    return Math.min(this.total - 1, Math.floor(m > 0 ? (Math.min(top, m) / m) * this.lastFirst : 0));
  }

  /** The scrollTop that puts row `index` first in view. */
  indexTop(index: number): number {
    const i = Math.max(0, Math.min(index, Math.max(0, this.total - 1)));
    if (!this.scaled) return i * this.rowHeight;
    return this.lastFirst > 0 ? Math.round((Math.min(i, this.lastFirst) / this.lastFirst) * this.maxScroll) : 0;
  }

  /** Which rows to render at `scrollTop`, with `overscan` rows either side. */
  window(scrollTop: number, overscan = OVERSCAN): RowWindow {
    if (this.total <= 0) return { start: 0, end: 0, offset: 0, spacer: 0 };
    const first = this.firstIndex(scrollTop);
    const start = Math.max(0, first - overscan);
    const end = Math.min(this.total, first + this.visible + overscan);
    // Unscaled: rows sit at their own place. Scaled: the first row in view sits at the top of
    // the viewport and the overscan above it just before.
    const offset = this.scaled ? Math.max(0, scrollTop) - (first - start) * this.rowHeight : start * this.rowHeight;
    return { start, end, offset, spacer: this.spacer };
  }

  /** The scrollTop that brings row `index` fully into view (unchanged when it already is). */
  reveal(index: number, scrollTop: number): number {
    const first = this.firstIndex(scrollTop);
    const fits = Math.max(1, Math.floor(this.height / this.rowHeight));
    if (index < first) return this.indexTop(index);
    if (index >= first + fits) {
      if (!this.scaled) return Math.max(0, (index + 1) * this.rowHeight - this.height);
      return this.indexTop(index - fits + 1);
    }
    return scrollTop;
  }
}

/** Where to scroll after `added` rows arrived at the top, so the rows in view stay where they
 * are: at the very top the view follows the newest rows (stays at 0), otherwise it moves down
 * by the rows added. `before` and `after` are the geometry before and after. */
export function keepInPlace(scrollTop: number, added: number, before: Geometry, after: Geometry): number {
  if (added <= 0 || scrollTop <= 0) return scrollTop;
  if (!before.scaled && !after.scaled) return scrollTop + added * after.rowHeight;
  return after.indexTop(before.firstIndex(scrollTop) + added);
}

/** A page to ask the core for: `limit` rows of the history from history index `from + skip` on
 * (newest first), read with `cursor` (the `next` of the page that ended at `from`, or the top
 * cursor for 0) passing over `skip` matching rows first (a seek, done in the core; 0: none). Or
 * `restart`: live rows that were dropped from the page are wanted again, so read the history
 * from the top again. */
export type PageAsk = { from: number; cursor: string | undefined; limit: number; skip: number } | { restart: true };

/** Most rows asked in one page when the rows wanted are a little below the last page read
 * (farther down, the core seeks to them instead). */
export const WALK_PAGE = 2000;

/**
 * The rows of one view with the count of all matching rows. The history (what the core held
 * when the view's first page was read, newest first) is read page by page with the core's
 * cursors; rows are kept by their *history index* (0 = newest at the first page). Live rows
 * that arrived since are kept above it by their place among the live rows. Display index `i`
 * (0 = newest) is live row `live - 1 - i` while `i < live`, else history row `i - live`.
 */
export class DialWindow<Row = DialRow> {
  /** Live rows that arrived above the history since the first page. */
  live = 0;
  /** Rows of the history that match (the core's count; corrected when its last page is read). */
  history = 0;
  /** Whether `history` is exact (the core may estimate a count it could not finish). */
  exact = true;
  private rows = new Map<number, Row>();
  /** History index -> the cursor that reads from it (0 reads from the top, no cursor). */
  private cursors = new Map<number, string | undefined>([[0, undefined]]);
  /** Pages asked for, by the history index they were asked from (token -> ask). */
  private inflight = new Map<number, { from: number; skip: number }>();

  constructor(
    readonly cacheRows = CACHE_ROWS,
    readonly page = PAGE,
  ) {}

  /** All matching rows: live ones and the history's. */
  get total(): number {
    return this.live + this.history;
  }

  /** Rows held in the page now. */
  get cached(): number {
    return this.rows.size;
  }

  /** Pages asked for and not answered yet. */
  get loading(): number {
    return this.inflight.size;
  }

  private key(i: number): number {
    return i < this.live ? -(this.live - i) : i - this.live;
  }

  /** Starts over from the first page of the history: `rows` newest first, `next` the cursor of
   * the page after it (`null`: the history ends there), `matched` the count of all matching
   * rows of the history, `top` the cursor that reads the history from its top as it was then
   * (without it, reading from the top again would start at rows that arrived since). Pages in
   * flight are forgotten (their answers are dropped). */
  reset(matched: number, exact: boolean, rows: readonly Row[], next: string | null, top?: string): void {
    this.rows.clear();
    this.cursors = new Map([[0, top]]);
    this.inflight.clear();
    this.live = 0;
    this.history = Math.max(matched, rows.length);
    this.exact = exact;
    this.store(0, rows, next);
  }

  private store(from: number, rows: readonly Row[], next: string | null): void {
    rows.forEach((r, k) => this.rows.set(from + k, r));
    const end = from + rows.length;
    if (next === null) {
      // The history ends here: its count is now known.
      this.history = end;
      this.exact = true;
    } else {
      this.cursors.set(end, next);
      if (end > this.history) this.history = end;
    }
  }

  /** Live rows (oldest first) arrived at the top, after `skipped` more the channel dropped
   * before them (those come back when the view reads the history from the top again).
   * Returns how many rows were added at the top. */
  prepend(rows: readonly Row[], skipped = 0): number {
    // Live row l (0 = oldest live) is kept under key -(l + 1).
    rows.forEach((r, k) => this.rows.set(-(this.live + skipped + k + 1), r));
    this.live += rows.length + skipped;
    return rows.length + skipped;
  }

  /** The row at display index `i`, when held. */
  rowAt(i: number): Row | undefined {
    return this.rows.get(this.key(i));
  }

  /** A stable identity of display index `i` while the window is not reset (for selection). */
  keyAt(i: number): number {
    return this.key(i);
  }

  /** The display index of the row kept under `key` (from `keyAt`). */
  indexOfKey(key: number): number {
    return key < 0 ? this.live + key : key + this.live;
  }

  /** The page to read so rows `start..end` (display indexes) can be shown, or `null` when all
   * are held or on their way. */
  next(start: number, end: number): PageAsk | null {
    const s = Math.max(0, start);
    const e = Math.min(this.total, end);
    let want = -1;
    for (let i = s; i < e; i++) {
      const k = this.key(i);
      if (this.rows.has(k)) continue;
      if (k < 0) return { restart: true };
      want = k;
      break;
    }
    if (want < 0) return null;
    // Read from the last cursor at or above the wanted row; far below it, the core seeks.
    let from = 0;
    for (const c of this.cursors.keys()) if (c <= want && c > from) from = c;
    if (want - from > this.page) {
      // One seek at a time: the view asks again for where it is when the answer comes.
      for (const a of this.inflight.values()) if (a.skip > 0) return null;
      if (this.inflight.has(want)) return null;
      return { from, cursor: this.cursors.get(from), limit: this.page, skip: want - from };
    }
    if (this.inflight.has(from)) return null;
    const limit = Math.max(this.page, Math.min(WALK_PAGE, want - from + this.page));
    return { from, cursor: this.cursors.get(from), limit, skip: 0 };
  }

  /** Marks a page as asked for; pass the returned token to `fill` or `failed`. */
  begin(ask: { from: number; skip?: number }): number {
    const skip = ask.skip ?? 0;
    const token = ask.from + skip;
    this.inflight.set(token, { from: ask.from, skip });
    return token;
  }

  /** A page the core answered: `rows` newest first, `next` the cursor after them, `skipped` the
   * rows the core passed over before them (a seek: they start at history index `from +
   * skipped`, which is fewer than asked when the history ended first). Dropped when the window
   * was reset since it was asked. */
  fill(token: number, rows: readonly Row[], next: string | null, skipped?: number): void {
    const ask = this.inflight.get(token);
    if (!ask) return;
    this.inflight.delete(token);
    this.store(ask.from + Math.min(ask.skip, skipped ?? ask.skip), rows, next);
  }

  /** A page failed: it may be asked again. */
  failed(token: number): void {
    this.inflight.delete(token);
  }

  /** Drops the rows farthest from display rows `start..end` while more than `cacheRows` are
   * held (the rows in view and the cursors always stay). Returns how many were dropped. */
  trim(start: number, end: number): number {
    if (this.rows.size <= this.cacheRows) return 0;
    const lo = this.key(Math.max(0, start));
    const hi = this.key(Math.max(0, end - 1));
    const mid = (lo + hi) / 2;
    const keepHalf = Math.max((hi - lo) / 2, this.cacheRows / 2);
    let dropped = 0;
    for (const k of [...this.rows.keys()]) {
      if (Math.abs(k - mid) > keepHalf) {
        this.rows.delete(k);
        dropped++;
      }
    }
    return dropped;
  }
}

/** Puts a streamed batch above the history read up to `newestSeq`: its dials newer than that
 * (connection events come with the history pages), and as places to read later the rows the
 * core left out of the batch (`leftOut`, their sequence numbers, all older than `rows`) that
 * are newer too, plus `skipped` rows the channel dropped. Returns how many rows were added at
 * the top. */
export function prependNewer<Row extends { kind: string; seq: number }>(
  win: DialWindow<Row>,
  newestSeq: number,
  rows: readonly Row[],
  leftOut: readonly number[],
  skipped = 0,
): number {
  let newer = 0;
  for (const seq of leftOut) if (seq > newestSeq) newer++;
  return win.prepend(
    rows.filter((r) => r.kind === "dial" && r.seq > newestSeq),
    newer + skipped,
  );
}
