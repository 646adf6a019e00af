// Pure logic of the Live dials view (unit-tested in dials.test.ts): the virtual window of the
// table, the live feed (snapshot, batches, pause buffer, merged counts, row cap), keyboard
// selection, the filter form, the words the view and its parts (table, inspector, import and
// export) show, and formatting of times, durations and outcomes.
//
// Slow = over one second and a caller gives up after 15 s (phone-line.md, "Good neighbour
// notes"); the host mirrors dials, it never answers them.
import type { Dial } from "../bindings/Dial";
import type { DialBatchMsg } from "../bindings/DialBatchMsg";
import type { DialClearScope } from "../bindings/DialClearScope";
import type { DialFilter } from "../bindings/DialFilter";
import type { DialOutcome } from "../bindings/DialOutcome";
import type { DialRow } from "../bindings/DialRow";
import type { DialSource } from "../bindings/DialSource";
import type { ExportSummary } from "../bindings/ExportSummary";

/** Fixed height of one table row, px (the virtual window depends on it). */
export const ROW_HEIGHT = 28;
/** Rows rendered above and below the visible ones. */
export const OVERSCAN = 8;
/** Most rows the table holds; the oldest go first beyond it (browsers cap element heights). */
export const MAX_VIEW_ROWS = 200_000;
/** Most dials waiting while paused; beyond it the oldest waiting are dropped and counted. */
export const MAX_WAITING = 100_000;
/** A dial slower than this is slow (ms). */
export const SLOW_MS = 1000;

/** The slice of rows to render: `start` inclusive, `end` exclusive, `offset` px from the top. */
export interface VirtualWindow {
  start: number;
  end: number;
  offset: number;
}

/** Which rows to render for a viewport at `scrollTop` of `height` px over `total` rows. */
export function virtualWindow(
  scrollTop: number,
  height: number,
  total: number,
  rowHeight = ROW_HEIGHT,
  overscan = OVERSCAN,
): VirtualWindow {
  if (total <= 0 || rowHeight <= 0) return { start: 0, end: 0, offset: 0 };
  const top = Math.max(0, scrollTop);
  const first = Math.min(total - 1, Math.floor(top / rowHeight));
  const visible = Math.ceil(Math.max(0, height) / rowHeight) + 1;
  const start = Math.max(0, first - overscan);
  const end = Math.min(total, first + visible + overscan);
  return { start, end, offset: start * rowHeight };
}

/** The scrollTop that brings row `index` fully into view (unchanged when it already is). */
export function scrollToReveal(index: number, scrollTop: number, height: number, rowHeight = ROW_HEIGHT): number {
  const top = index * rowHeight;
  const bottom = top + rowHeight;
  if (top < scrollTop) return top;
  if (bottom > scrollTop + height) return Math.max(0, bottom - height);
  return scrollTop;
}

/** Whether a viewport is scrolled to (within one row of) the bottom: new rows then follow. */
export function atBottom(scrollTop: number, height: number, total: number, rowHeight = ROW_HEIGHT): boolean {
  return scrollTop + height >= total * rowHeight - rowHeight;
}

/**
 * The selection after a key press in the table: arrows move by one, PageUp/PageDown by `page`,
 * Home/End to the ends. `null` when the key does not move the selection. With no selection the
 * first key selects the last row (the newest) for ArrowUp/End/PageUp and the first otherwise.
 */
export function moveSelection(current: number | null, key: string, total: number, page: number): number | null {
  if (total <= 0) return null;
  const last = total - 1;
  const clamp = (i: number) => Math.max(0, Math.min(last, i));
  if (current === null) {
    if (key === "ArrowUp" || key === "End" || key === "PageUp") return last;
    if (key === "ArrowDown" || key === "Home" || key === "PageDown") return 0;
    return null;
  }
  switch (key) {
    case "ArrowUp":
      return clamp(current - 1);
    case "ArrowDown":
      return clamp(current + 1);
    case "PageUp":
      return clamp(current - Math.max(1, page));
    case "PageDown":
      return clamp(current + Math.max(1, page));
    case "Home":
      return 0;
    case "End":
      return last;
    default:
      return null;
  }
}

/** Rows one PageUp/PageDown moves in a table body `bodyHeight` px high: a screenful less one
 * row (so one row stays in view), at least one. */
export function pageRows(bodyHeight: number, rowHeight = ROW_HEIGHT): number {
  return Math.max(1, Math.floor(bodyHeight / rowHeight) - 1);
}

/** The selection after `removed` rows left the front of the table: it moves up with its row,
 * and is gone (`null`) when its row was among those removed. */
export function shiftSelection(selected: number | null, removed: number): number | null {
  if (removed <= 0 || selected === null) return selected;
  return selected - removed >= 0 ? selected - removed : null;
}

/** Most rows the live table holds for a log of `capacity` dials: no more than the log does,
 * so every row can still be inspected (at least 1000, at most `MAX_VIEW_ROWS`). */
export function liveCapFor(capacity: number): number {
  return Math.max(1000, Math.min(MAX_VIEW_ROWS, capacity));
}

/** What applying a message changed: rows appended at the end, rows dropped from the front. */
export interface FeedChange {
  appended: number;
  removed: number;
}

/**
 * The rows of one view, oldest first, fed by a dials channel. Rows live in a plain array that
 * only grows at the end (and loses its oldest rows beyond `maxRows`), so the table re-renders
 * only its visible window. While paused, new rows wait (at most `maxWaiting`; older waiting rows
 * are dropped and counted) and `resume` appends them.
 */
export class DialFeed {
  rows: DialRow[] = [];
  waiting: DialRow[] = [];
  paused = false;
  /** Subscription id from the snapshot. */
  subscription: number | null = null;
  /** Dials the host merged into later batches because this view fell behind (since start). */
  merged = 0;
  /** Dials the host dropped for this view (since start): re-open the view to see them. */
  skipped = 0;
  /** Waiting dials dropped while paused because too many waited (since start). */
  droppedWhilePaused = 0;
  /** Batches received (after the snapshot). */
  batches = 0;

  constructor(
    /** Most rows held: set it to the log's ring capacity so the table shows what the log holds. */
    public maxRows = MAX_VIEW_ROWS,
    readonly maxWaiting = MAX_WAITING,
  ) {}

  /** Applies one channel message. A snapshot replaces everything (a new subscription). */
  apply(msg: DialBatchMsg): FeedChange {
    if (msg.kind === "snapshot") {
      const removed = this.rows.length;
      this.rows = msg.rows.length > this.maxRows ? msg.rows.slice(msg.rows.length - this.maxRows) : msg.rows.slice();
      this.waiting = [];
      this.subscription = msg.id;
      this.merged = 0;
      this.skipped = 0;
      this.droppedWhilePaused = 0;
      this.batches = 0;
      return { appended: this.rows.length, removed };
    }
    this.batches += 1;
    this.merged += msg.merged;
    this.skipped += msg.skipped;
    if (this.paused) {
      for (const r of msg.rows) this.waiting.push(r);
      const over = this.waiting.length - this.maxWaiting;
      if (over > 0) {
        this.waiting.splice(0, over);
        this.droppedWhilePaused += over;
      }
      return { appended: 0, removed: 0 };
    }
    return this.append(msg.rows);
  }

  /** Stops appending: new rows wait until `resume`. */
  pause(): void {
    this.paused = true;
  }

  /** Appends the waiting rows and goes live again. */
  resume(): FeedChange {
    this.paused = false;
    const w = this.waiting;
    this.waiting = [];
    return this.append(w);
  }

  private append(rows: readonly DialRow[]): FeedChange {
    for (const r of rows) this.rows.push(r);
    let removed = 0;
    // Trim in chunks (a hundredth of the cap) so the front splice is not paid on every batch.
    if (this.rows.length > this.maxRows) {
      removed = this.rows.length - this.maxRows + Math.floor(this.maxRows / 100);
      removed = Math.min(removed, this.rows.length);
      this.rows.splice(0, removed);
    }
    return { appended: rows.length, removed };
  }
}

/** One request to open a dial in the inspector: the table row and the source it came from. A
 * new object for every request, so asking again for the same row fetches it again. */
export interface InspectRequest {
  row: DialRow;
  source: DialSource;
}

/** The filter form of the view (text fields as typed; empty means any). */
export interface FilterForm {
  phone: string;
  caller: string;
  callee: string;
  op: string;
  outcome: "" | DialOutcome;
  slowOnly: boolean;
  timedOutOnly: boolean;
  /** Only dials that break phone-line.md. */
  notToSpecOnly: boolean;
  text: string;
}

/** A form with every field empty: no filter. */
export function emptyForm(): FilterForm {
  return { phone: "", caller: "", callee: "", op: "", outcome: "", slowOnly: false, timedOutOnly: false, notToSpecOnly: false, text: "" };
}

/** The host filter for a form: trimmed, empty fields left out. The phone may be typed as the
 * name it was paired under (`phoneNames`: device id -> name, matched ignoring case) or as its
 * device id. */
export function filterFromForm(f: FilterForm, phoneNames: Record<string, string> = {}): DialFilter {
  const out: DialFilter = {};
  const typed = f.phone.trim();
  const named = Object.entries(phoneNames).find(([, name]) => name.toLowerCase() === typed.toLowerCase());
  const phone = typed && named ? named[0] : typed;
  const caller = f.caller.trim();
  const callee = f.callee.trim();
  const op = f.op.trim();
  const text = f.text.trim();
  if (phone) out.phone = phone;
  if (caller) out.caller = caller;
  if (callee) out.callee = callee;
  if (op) out.op = op;
  if (f.outcome) out.outcome = f.outcome;
  if (f.slowOnly) out.slow = true;
  if (f.timedOutOnly) out.timed_out = true;
  if (f.notToSpecOnly) out.to_spec = false;
  if (text) out.text = text;
  return out;
}

/** The choices of the form's outcome menu: value (empty = any) and words. */
export const OUTCOME_CHOICES = [
  ["", "Any outcome"],
  ["ok", "ok"],
  ["tool_error", "tool error"],
  ["error", "error"],
  ["timed_out", "timed out"],
] as const;

/** Whether a filter narrows anything. */
export function isFiltered(f: DialFilter): boolean {
  return Object.keys(f).length > 0;
}

/** A duration for people: `840 ms`, `1.24 s`, `15.0 s`, `2 min 05 s`. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return "—";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 10_000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const totalS = Math.round(ms / 1000);
  const m = Math.floor(totalS / 60);
  const s = totalS % 60;
  return `${m} min ${String(s).padStart(2, "0")} s`;
}

/** A short duration for narrow tables: `226ms`, `4.22s`, `15.0s`, `125s`. */
export function compactDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return "—";
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 10_000) return `${(ms / 1000).toFixed(2)}s`;
  if (ms < 100_000) return `${(ms / 1000).toFixed(1)}s`;
  return `${Math.round(ms / 1000)}s`;
}

const pad = (n: number, w = 2) => String(n).padStart(w, "0");

/** A time of day in the local zone with milliseconds: `14:03:07.042`. */
export function formatTime(epochMs: number): string {
  const d = new Date(epochMs);
  if (Number.isNaN(d.getTime())) return "—";
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

/** A full local date and time: `2025-10-09 14:03:07.042`. */
export function formatDateTime(epochMs: number): string {
  const d = new Date(epochMs);
  if (Number.isNaN(d.getTime())) return "—";
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${formatTime(epochMs)}`;
}

/** An error rate 0..1 as a percentage: `0 %`, `12.5 %`, `100 %`. */
export function formatRate(rate: number): string {
  if (!Number.isFinite(rate)) return "—";
  const p = rate * 100;
  return `${p === 0 || p === 100 ? p.toFixed(0) : p.toFixed(1)} %`;
}

/** A count with thin grouping: `100 000`. */
export function formatCount(n: number): string {
  return String(Math.trunc(n)).replace(/\B(?=(\d{3})+(?!\d))/g, " ");
}

/** An outcome's icon and words (never colour alone). */
export function outcomeLabel(o: DialOutcome): { icon: string; text: string } {
  switch (o) {
    case "ok":
      return { icon: "✓", text: "ok" };
    case "tool_error":
      return { icon: "!", text: "tool error" };
    case "error":
      return { icon: "✗", text: "error" };
    case "timed_out":
      return { icon: "⌛", text: "timed out" };
  }
}

/** The marks a row carries beyond its outcome: slow (over 1 s). Timed out is its outcome. */
export function rowMarks(r: Pick<DialRow, "duration_ms" | "outcome">): { icon: string; text: string }[] {
  const marks: { icon: string; text: string }[] = [];
  if (r.duration_ms > SLOW_MS && r.outcome !== "timed_out") marks.push({ icon: "◔", text: "slow" });
  return marks;
}

/** The row's spec mark: `null` when the dial follows phone-line.md, else the words for it
 * ("not to spec", with how many problems in `title`). */
export function specMark(r: Pick<DialRow, "spec_findings">): { icon: string; text: string; title: string } | null {
  const n = r.spec_findings;
  if (!n) return null;
  return { icon: "⚑", text: "not to spec", title: `${n} ${n === 1 ? "problem" : "problems"} with phone-line.md: inspect the dial to see them` };
}

/** JSON for the inspector: two-space indented; `undefined` shows as a dash. */
export function prettyJson(v: unknown): string {
  if (v === undefined) return "—";
  return JSON.stringify(v, null, 2);
}

/** Why a dial has no response, in words (the caller gives up after 15 s). */
export function noResponseWords(d: Pick<Dial, "error" | "outcome">): string {
  const see = d.error ? " (the error is above)" : "";
  switch (d.outcome) {
    case "timed_out":
      return `No response: the caller gave up waiting after 15 s${see}.`;
    case "error":
      return `No response: the dial failed${see}.`;
    case "tool_error":
      return `No response body: the handler answered with a tool error${see}.`;
    default:
      return "No response recorded.";
  }
}

/** The name a phone was paired under (`names`: device id -> name), else its device id. */
export function phoneName(names: Record<string, string>, id: string): string {
  return names[id] || id;
}

/** A phone cell's tooltip: `Name (dev_...)` when the phone has a name, else its device id. */
export function phoneTitle(names: Record<string, string>, id: string): string {
  return names[id] ? `${names[id]} (${id})` : id;
}

/** The Pause button's words while paused: `Resume`, or `Resume (1 200 waiting)`. */
export function resumeLabel(waiting: number): string {
  return waiting > 0 ? `Resume (${formatCount(waiting)} waiting)` : "Resume";
}

/** What an export wrote, in words: `Wrote 1 200 dials to /path/dials.jsonl`. */
export function exportNotice(r: ExportSummary): string {
  return `Wrote ${formatCount(r.lines)} dials to ${r.path}`;
}

/** What a clear did, in words; `rows` is the stored dials deleted (scope `all`). */
export function clearNotice(scope: DialClearScope, rows: number): string {
  return scope === "all"
    ? `Cleared the view and deleted ${formatCount(rows)} stored dials.`
    : "Cleared the view. Stored history is kept and comes back at the next start.";
}

/** The message of an error the host rejected a call with (an `IpcError`: `{ message }`). */
export function errorMessage(e: unknown): string {
  return (e as { message: string }).message;
}
