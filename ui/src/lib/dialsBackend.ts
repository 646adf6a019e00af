// What the Live dials view asks the core: check a filter line (the core's parser) and fetch a
// page of matching rows, newest first. The view talks only to these two functions, so the
// shape of the core's history API stays in one place.
import { api } from "./api";
import { rowOfDial, type LineError } from "./dials";
import { tokenizeLine } from "./filterLine";
import type { DialFilter } from "../bindings/DialFilter";
import type { DialOutcome } from "../bindings/DialOutcome";
import type { DialRow } from "../bindings/DialRow";
import type { DialSource } from "../bindings/DialSource";

/** A checked filter line: the filter to send, or where the line is wrong. */
export type LineCheck = { ok: true; filter: DialFilter } | { ok: false; error: LineError };

/** One page of rows: newest first from the asked offset, and how many dials matched. */
export interface RowPage {
  rows: DialRow[];
  total: number;
}

const OUTCOMES: readonly DialOutcome[] = ["ok", "tool_error", "error", "timed_out"];
const EXACT = ["phone", "caller", "callee", "op"] as const;

/**
 * The filter for a line in terms of the older core's `DialFilter` (exact fields, one outcome,
 * slow, spec, one free text). Used until the core's `parse_dial_filter` is available; anything
 * that filter cannot say is an error naming the term.
 */
export function lineToFilter(line: string, regex: boolean, phoneNames: Record<string, string> = {}): LineCheck {
  const out: DialFilter = {};
  const free: string[] = [];
  for (const t of tokenizeLine(line)) {
    const err = (message: string): LineCheck => ({ ok: false, error: { message, start: t.start, end: t.end } });
    if (t.neg) return err("negation (-term) needs the core's filter parser");
    if (t.key === null) {
      free.push(t.value);
      continue;
    }
    if ((EXACT as readonly string[]).includes(t.key) && t.op === ":") {
      let v = t.value;
      if (t.key === "phone") {
        const named = Object.entries(phoneNames).find(([, n]) => n.toLowerCase() === v.toLowerCase());
        if (named) v = named[0];
      }
      out[t.key as (typeof EXACT)[number]] = v;
    } else if (t.key === "outcome" && t.op === ":") {
      if (!(OUTCOMES as readonly string[]).includes(t.value)) return err(`unknown outcome "${t.value}": use ok, tool_error, error or timed_out`);
      out.outcome = t.value as DialOutcome;
    } else if (t.key === "spec" && t.op === ":") {
      if (t.value !== "broken" && t.value !== "ok") return err(`spec takes broken or ok, not "${t.value}"`);
      out.to_spec = t.value === "ok";
    } else if (t.key === "duration" && t.op === ">" && t.value === "1s") {
      out.slow = true;
    } else {
      return err(`"${line.slice(t.start, t.end)}" needs the core's filter parser`);
    }
  }
  if (regex && free.length > 0) return { ok: false, error: { message: "regex search needs the core's filter parser", start: 0, end: line.length } };
  if (free.length > 0) out.text = free.join(" ");
  return { ok: true, filter: out };
}

/** Checks a filter line with the core's parser. */
export async function checkLine(line: string, regex: boolean, phoneNames: Record<string, string>): Promise<LineCheck> {
  return lineToFilter(line, regex, phoneNames);
}

/** Rows `offset .. offset + limit` (newest first) of the dials matching `filter`. */
export async function fetchPage(filter: DialFilter, source: DialSource, offset: number, limit: number): Promise<RowPage> {
  const p = await api.dialsQuery({ ...filter, offset, limit }, source);
  return { rows: p.dials.map(rowOfDial), total: p.total };
}

/** When the oldest dial matching `filter` started (epoch ms), or null when none match. */
export async function oldestStart(filter: DialFilter, source: DialSource, total: number): Promise<number | null> {
  if (total <= 0) return null;
  const p = await fetchPage(filter, source, total - 1, 1);
  return p.rows[0]?.start_ms ?? null;
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
