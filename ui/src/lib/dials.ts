// Pure logic of the Live dials view (unit-tested in dials.test.ts): keyboard selection, the
// words the view and its parts (table, inspector, import and
// export) show, and formatting of times, durations and outcomes.
//
// Slow = over one second and a caller gives up after 15 s (phone-line.md, "Good neighbour
// notes"); the host mirrors dials, it never answers them.
import { tokenizeLine } from "./filterLine";
import type { ConnectionKind } from "../bindings/ConnectionKind";
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
/** A dial slower than this is slow (ms). */
export const SLOW_MS = 1000;


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


/** One request to open a dial in the inspector: the table row and the source it came from. A
 * new object for every request, so asking again for the same row fetches it again. */
export interface InspectRequest {
  row: DialRow;
  source: DialSource;
}


/** The choices of the form's outcome menu: value (empty = any) and words. */
export const OUTCOME_CHOICES = [
  ["", "Any outcome"],
  ["ok", "ok"],
  ["tool_error", "tool error"],
  ["error", "error"],
  ["timed_out", "timed out"],
] as const;


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

const OUTCOME_LABELS: Record<DialOutcome, { readonly icon: string; readonly text: string }> = {
  ok: { icon: "✓", text: "ok" },
  tool_error: { icon: "!", text: "tool error" },
  error: { icon: "✗", text: "error" },
  timed_out: { icon: "⌛", text: "timed out" },
};

/** An outcome's icon and words (never colour alone); the same object each time (the live table
 * asks for it per row per render). */
export function outcomeLabel(o: DialOutcome): { readonly icon: string; readonly text: string } {
  return OUTCOME_LABELS[o];
}

const SLOW_MARK = { icon: "◔", text: "slow" } as const;

/** The mark a row carries beyond its outcome, if any: slow (over 1 s). Timed out is its
 * outcome. The same object each time. */
export function slowMark(r: Pick<DialRow, "duration_ms" | "outcome">): { readonly icon: string; readonly text: string } | null {
  return r.duration_ms > SLOW_MS && r.outcome !== "timed_out" ? SLOW_MARK : null;
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
    ? `Cleared the view and deleted ${formatCount(rows)} stored dials and every stored connection event.`
    : "Cleared the view. Stored history is kept and comes back at the next start.";
}

/** The message of an error the host rejected a call with (an `IpcError`: `{ message }`). */
export function errorMessage(e: unknown): string {
  return (e as { message: string }).message;
}

/** What the core's filter parser said is wrong with a filter line: the message and the place
 * (`start` inclusive, `end` exclusive, indexes into the line). */
export interface LineError {
  message: string;
  start: number;
  end: number;
}

/** The header over the table: `1 200 dials match · history back to 2025-10-09 14:03`, or
 * `1 200 dials` with no filter; `about 1 200 …` when the core estimated the count. (Rows of
 * the timeline: connection events count with the dials.) */
export function matchHeader(total: number, filtered: boolean, oldestMs: number | null, exact = true, noun: TimelineNoun = "dials"): string {
  const words = noun === "dials" ? ["dial", "dials"] : noun === "connections" ? ["connection event", "connection events"] : ["row", "rows"];
  const n = `${exact ? "" : "about "}${formatCount(total)} ${total === 1 ? words[0] : words[1]}${filtered ? (total === 1 ? " matches" : " match") : ""}${noun === "rows" ? " (dials and connection events)" : ""}`;
  if (oldestMs === null || !Number.isFinite(oldestMs)) return n;
  return `${n} · history back to ${formatDateTime(oldestMs).slice(0, 16)}`;
}

/** A connection event's words for the timeline: `Connected`, `Disconnected`, ... with an icon. */
export function connectionLabel(kind: ConnectionKind): { icon: string; text: string } {
  switch (kind) {
    case "connected":
      return { icon: "⇄", text: "Connected" };
    case "disconnected":
      return { icon: "⨯", text: "Disconnected" };
    case "pairing_pending":
      return { icon: "⋯", text: "Pairing (waiting for the codes)" };
    case "paired":
      return { icon: "✓", text: "Paired" };
    case "pairing_ended":
      return { icon: "⨯", text: "Pairing ended" };
    case "unpaired":
      return { icon: "⨯", text: "Unpaired" };
  }
}

/** What the rows of a filter line are: dials only, connection events only, or both. */
export type TimelineNoun = "dials" | "connections" | "rows";

/** Which rows a filter line's answer holds, by the core's rule (`crate::dials::filter`):
 * connection events are in it when every term is a `phone:`, `after:`, `before:` or `kind:`
 * term (or the line is empty); `kind:dial` keeps dials only, `kind:connection` events only. */
export function timelineNoun(line: string): TimelineNoun {
  const terms = tokenizeLine(line);
  const kind = terms.find((t) => t.key === "kind" && t.op === ":");
  if (kind) {
    const v = kind.value.toLowerCase();
    if ((v === "dial") !== kind.neg) return "dials";
    return "connections";
  }
  const timeline = terms.every((t) => t.key !== null && t.op === ":" && ["phone", "after", "before"].includes(t.key));
  return timeline ? "rows" : "dials";
}
