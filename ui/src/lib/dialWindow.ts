// The Live dials table's window over the core's history (unit-tested in dialWindow.test.ts):
// which rows to render for a scroll position, which page to fetch next, and a small cache of
// rows. The page holds only the rows in view plus `cacheRows` around them; everything else
// stays in the core and comes back page by page as the person scrolls.
//
// Rows are shown newest first: display index 0 is the newest matching dial. Live dials arrive
// at the top, so display indexes move; rows are therefore kept by their *age*, the number of
// matching dials older than them (`age = total - 1 - index`), which does not change when newer
// dials arrive. A page the core answers carries its own `total`, so the ages of its rows are
// right whatever arrived on the live channel meanwhile.
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

/** A page to ask the core for: `limit` rows from display index `offset` (newest first). */
export interface PageAsk {
  offset: number;
  limit: number;
}

/** Age range `[lo, hi]` of a page in flight. */
interface InFlight {
  lo: number;
  hi: number;
}

/** The rows of one view, kept by age, with the count of all matching dials. */
export class DialWindow {
  /** All dials matching the filter (the core's count, plus live dials since). */
  total = 0;
  private byAge = new Map<number, DialRow>();
  private inflight: InFlight[] = [];

  constructor(
    readonly cacheRows = CACHE_ROWS,
    readonly page = PAGE,
  ) {}

  /** Rows held in the page now. */
  get cached(): number {
    return this.byAge.size;
  }

  /** Pages asked for and not answered yet. */
  get loading(): number {
    return this.inflight.length;
  }

  /** Starts over: `total` matching dials, of which `newest` (oldest first, as the snapshot
   * sends them) are the newest. Pages in flight are forgotten (their answers are dropped). */
  reset(total: number, newest: readonly DialRow[]): void {
    this.total = Math.max(total, newest.length);
    this.byAge.clear();
    this.inflight = [];
    const base = this.total - newest.length;
    newest.forEach((r, k) => this.byAge.set(base + k, r));
  }

  /** Live dials (oldest first) arrived at the top, after `skipped` more the channel dropped
   * before them (those come from the core when scrolled to). Returns how many rows were added
   * at the top. */
  prepend(rows: readonly DialRow[], skipped = 0): number {
    rows.forEach((r, k) => this.byAge.set(this.total + skipped + k, r));
    this.total += rows.length + skipped;
    return rows.length + skipped;
  }

  /** The row at display index `i`, when held. */
  rowAt(i: number): DialRow | undefined {
    return this.byAge.get(this.total - 1 - i);
  }

  /** The display index of the row of age `age`. */
  indexOfAge(age: number): number {
    return this.total - 1 - age;
  }

  /** The age of display index `i`. */
  ageOf(i: number): number {
    return this.total - 1 - i;
  }

  private held(age: number): boolean {
    return this.byAge.has(age) || this.inflight.some((f) => age >= f.lo && age <= f.hi);
  }

  /** The page to fetch so rows `start..end` (display indexes) can be shown: the first run of
   * rows neither held nor in flight, grown to a whole page around it; `null` when all are. */
  next(start: number, end: number): PageAsk | null {
    const s = Math.max(0, start);
    const e = Math.min(this.total, end);
    let first = -1;
    for (let i = s; i < e; i++) {
      if (!this.held(this.ageOf(i))) {
        first = i;
        break;
      }
    }
    if (first < 0) return null;
    let last = first;
    while (last + 1 < Math.min(this.total, first + this.page) && !this.held(this.ageOf(last + 1))) last++;
    // Grow to a page: upwards (newer) first when the run is at the bottom of the window.
    let offset = first;
    let limit = last - first + 1;
    while (limit < this.page && offset > 0 && !this.held(this.ageOf(offset - 1))) {
      offset--;
      limit++;
    }
    return { offset, limit };
  }

  /** Marks a page as asked for; pass the returned token to `fill` or `failed`. */
  begin(ask: PageAsk): InFlight {
    const f = { hi: this.ageOf(ask.offset), lo: this.ageOf(ask.offset + ask.limit - 1) };
    this.inflight.push(f);
    return f;
  }

  /** A page the core answered: `rows` newest first from display index `offset` when it held
   * `total` matching dials. Dropped when the window was reset since it was asked. */
  fill(token: InFlight, offset: number, total: number, rows: readonly DialRow[]): void {
    const k = this.inflight.indexOf(token);
    if (k < 0) return;
    this.inflight.splice(k, 1);
    rows.forEach((r, j) => {
      const age = total - 1 - (offset + j);
      if (age >= 0) this.byAge.set(age, r);
    });
  }

  /** A page failed: it may be asked again. */
  failed(token: InFlight): void {
    const k = this.inflight.indexOf(token);
    if (k >= 0) this.inflight.splice(k, 1);
  }

  /** Drops the rows farthest from display rows `start..end` while more than `cacheRows` are
   * held (the rows in view always stay). Returns how many were dropped. */
  trim(start: number, end: number): number {
    if (this.byAge.size <= this.cacheRows) return 0;
    const hiAge = this.ageOf(Math.max(0, start));
    const loAge = this.ageOf(Math.max(0, end - 1));
    const mid = (hiAge + loAge) / 2;
    const keepHalf = Math.max((hiAge - loAge) / 2, this.cacheRows / 2);
    let dropped = 0;
    for (const age of [...this.byAge.keys()]) {
      if (Math.abs(age - mid) > keepHalf) {
        this.byAge.delete(age);
        dropped++;
      }
    }
    return dropped;
  }
}
