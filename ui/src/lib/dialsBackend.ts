// What the Live dials view asks the core: check a filter line (`parse_dial_filter`) and read a
// page of the matching timeline (`dials_history`, cursor pages, newest first). The view talks
// only to these functions, so the shape of the core's history API stays in one place; and the
// debounced checker of the line as it is typed.
import { api } from "./api";
import type { LineError } from "./dials";
import type { DialRow } from "../bindings/DialRow";
import type { DialSource } from "../bindings/DialSource";
import type { FilterCheck } from "../bindings/FilterCheck";
import type { HistoryRow } from "../bindings/HistoryRow";

/** A checked filter line: the canonical line to query with, or where the line is wrong. */
export type LineCheck = { ok: true; canonical: string } | { ok: false; error: LineError };

/** One page of the history: rows newest first, the cursor of the next (older) page, how many
 * rows match in all (`exact` false: the core's estimate), how far back the history goes, and
 * the newest `seq` when it was read (streamed rows at or below it are already in the history). */
export interface RowPage {
  rows: HistoryRow[];
  next: string | null;
  matched: number;
  exact: boolean;
  oldestMs: number | null;
  newestSeq: number;
  /** Matching rows a seek passed over before `rows` (0 without one). */
  skipped: number;
}

/** The core parser's answer as the view uses it. */
export function lineCheckOf(line: string, c: FilterCheck): LineCheck {
  if (c.error) return { ok: false, error: { message: c.error.message, start: c.error.start, end: Math.max(c.error.end, c.error.start + 1) } };
  return { ok: true, canonical: c.canonical ?? line.trim() };
}

/** Checks a filter line with the core's parser (`parse_dial_filter`). */
export async function checkLine(line: string): Promise<LineCheck> {
  return lineCheckOf(line, await api.parseDialFilter(line));
}

/** The cursor that reads the history from its top as it was when its newest row was `newestSeq`
 * (the core's cursor `s<seq>` reads the rows below `seq`; `docs/protocol.md`, history pages). */
export function topCursor(newestSeq: number): string {
  return `s${newestSeq + 1}`;
}

/** One page of the history matching `line` (`dials_history`): from the top, or from `cursor`,
 * after passing over `skip` matching rows (a seek the core does). */
export async function fetchPage(line: string, source: DialSource, cursor: string | undefined, limit: number, count: boolean, skip = 0): Promise<RowPage> {
  const p = await api.dialsHistory({ filter: line, cursor, limit, count, skip: skip > 0 ? skip : undefined }, source);
  return {
    rows: p.rows,
    next: p.next,
    matched: p.matched?.count ?? p.rows.length,
    exact: p.matched?.exact ?? true,
    oldestMs: p.oldest_ms,
    newestSeq: p.newest_seq,
    skipped: p.skipped,
  };
}

/** A streamed dial as a timeline row: tags `r` itself (`kind: "dial"`) and returns it. */
export function dialRow(r: DialRow): HistoryRow {
  // Tagged in place: a live batch's rows are the channel's own (1 000 a second when a phone
  // streams), and a copy of each would double the garbage the page makes.
  const row = r as DialRow & { kind: "dial" };
  row.kind = "dial";
  return row;
}

/**
 * Checks a filter line as it is typed: `edited` waits for a pause of `delayMs` in typing, `now`
 * checks at once (Enter, a check box); only the answer for the latest line is reported (an
 * older check still under way is dropped when it answers), and `checking` says whether one is
 * under way.
 */
export class LineChecker {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private seq = 0;
  /** A check is under way (waiting for the pause or for the core). */
  checking = false;

  constructor(
    private readonly check: (line: string) => Promise<LineCheck>,
    private readonly report: (line: string, result: LineCheck) => void,
    readonly delayMs = 250,
  ) {}

  /** The line changed: check it after a pause in typing. */
  edited(line: string): void {
    clearTimeout(this.timer);
    this.seq++;
    this.checking = true;
    this.timer = setTimeout(() => void this.now(line), this.delayMs);
  }

  /** Checks `line` now; resolves when reported (or dropped for a later line). */
  async now(line: string): Promise<void> {
    clearTimeout(this.timer);
    const seq = ++this.seq;
    this.checking = true;
    let r: LineCheck;
    try {
      r = await this.check(line);
    } catch (e) {
      r = { ok: false, error: { message: (e as { message?: string }).message ?? String(e), start: 0, end: line.length } };
    }
    if (seq !== this.seq) return;
    this.checking = false;
    this.report(line, r);
  }

  /** Stops a pending check (the view closed). */
  stop(): void {
    clearTimeout(this.timer);
    this.seq++;
    this.checking = false;
  }
}
