// The Live dials filter line as text (unit-tested in filterLine.test.ts): splitting it into
// tokens to find where each term is, and rewriting one term when a shortcut box changes. The
// line is the one source of truth: the boxes show what the line says (`fieldOf`) and write into
// it (`withField`, `withFlag`); the core's parser (`parse_dial_filter`) decides what the line
// means and whether it is valid. This module never judges a line, it only locates terms, so a
// line the core rejects still round-trips through the boxes unchanged.

/** A comparison in a term: `op:read_item` (`:`), `duration>1s` (`>`), ... */
export type TermOp = ":" | "=" | ">" | "<" | ">=" | "<=";

/** One term of the line, with where it is (`start` inclusive, `end` exclusive, in UTF-16 code
 * units as JavaScript indexes strings). */
export interface FilterToken {
  start: number;
  end: number;
  /** Written with a leading `-` (negated). */
  neg: boolean;
  /** The field (`op`, `duration`, ...), lowercased; `null` for free text. */
  key: string | null;
  /** The comparison; `null` for free text. */
  op: TermOp | null;
  /** The value with quotes and escapes removed. */
  value: string;
  /** Whether the value was written in double quotes. */
  quoted: boolean;
  /** A `/regex/` term (free text as a regular expression; `value` is the pattern). */
  regex?: boolean;
  /** For a regex term: written `/.../i` (ignoring case). */
  ignoreCase?: boolean;
}

const KEY = /^[A-Za-z_][A-Za-z0-9_.]*/;

/** Reads a value at `i`: a double-quoted string (`\"` and `\\` escaped; an unclosed quote runs
 * to the end) or everything up to the next white space. */
function readValue(line: string, i: number): { value: string; quoted: boolean; end: number } {
  if (line[i] === '"') {
    let v = "";
    let j = i + 1;
    while (j < line.length && line[j] !== '"') {
      if (line[j] === "\\" && j + 1 < line.length) j++;
      v += line[j];
      j++;
    }
    return { value: v, quoted: true, end: Math.min(line.length, j + 1) };
  }
  let j = i;
  while (j < line.length && !/\s/.test(line[j])) j++;
  return { value: line.slice(i, j), quoted: false, end: j };
}

/** Splits a filter line into terms. Never fails: anything that is not `key<op>value` is a free
 * text term (the core's parser says whether the whole line is valid). */
export function tokenizeLine(line: string): FilterToken[] {
  const out: FilterToken[] = [];
  let i = 0;
  while (i < line.length) {
    if (/\s/.test(line[i])) {
      i++;
      continue;
    }
    const start = i;
    let neg = false;
    if (line[i] === "-" && i + 1 < line.length && !/\s/.test(line[i + 1])) {
      neg = true;
      i++;
    }
    if (line[i] === "/") {
      // `/pattern/` or `/pattern/i`; `\/` inside; an unclosed one runs to the end.
      let j = i + 1;
      let v = "";
      while (j < line.length && line[j] !== "/") {
        if (line[j] === "\\" && line[j + 1] === "/") j++;
        else if (line[j] === "\\" && j + 1 < line.length) {
          v += line[j];
          j++;
        }
        v += line[j];
        j++;
      }
      let end = Math.min(line.length, j + 1);
      const ignoreCase = line[end] === "i";
      if (ignoreCase) end++;
      out.push({ start, end, neg, key: null, op: null, value: v, quoted: false, regex: true, ignoreCase });
      i = end;
      continue;
    }
    const key = KEY.exec(line.slice(i));
    if (key) {
      const after = i + key[0].length;
      const two = line.slice(after, after + 2);
      const op: TermOp | null =
        two === ">=" || two === "<=" ? two : [":", "=", ">", "<"].includes(line[after]) ? (line[after] as TermOp) : null;
      if (op) {
        const v = readValue(line, after + op.length);
        out.push({ start, end: v.end, neg, key: key[0].toLowerCase(), op, value: v.value, quoted: v.quoted });
        i = v.end;
        continue;
      }
    }
    const v = readValue(line, i);
    out.push({ start, end: v.end, neg, key: null, op: null, value: v.value, quoted: v.quoted });
    i = Math.max(v.end, i + 1);
  }
  return out;
}

/** A value as the line writes it: bare when it has no white space, quote or leading `-`,
 * else in double quotes with `"` and `\` escaped. */
export function quoteValue(v: string): string {
  if (v !== "" && /^[^\s"\\]+$/.test(v) && !v.startsWith("-")) return v;
  return `"${v.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

/** One term as text: `-key:value`, `duration>1s`, `"free text"`. */
export function termText(t: Pick<FilterToken, "neg" | "key" | "op" | "value">): string {
  return `${t.neg ? "-" : ""}${t.key ?? ""}${t.op ?? ""}${quoteValue(t.value)}`;
}

/** Replaces the terms `drop` with `insert` (at the first dropped term's place, else at the end),
 * keeping the rest of the line as typed and single spaces where terms were removed. */
function splice(line: string, drop: FilterToken[], insert: string | null): string {
  if (drop.length === 0) {
    if (insert === null) return line;
    const base = line.replace(/\s+$/, "");
    return base ? `${base} ${insert}` : insert;
  }
  let out = "";
  let at = 0;
  drop.forEach((t, k) => {
    out += line.slice(at, t.start);
    if (k === 0 && insert !== null) out += insert;
    at = t.end;
  });
  out += line.slice(at);
  return out.replace(/\s{2,}/g, " ").trim();
}

/** The value of the first plain (not negated) `key:value` term, or `""` when there is none:
 * what a shortcut box shows. */
export function fieldOf(line: string, key: string): string {
  const t = tokenizeLine(line).find((t) => !t.neg && t.key === key && t.op === ":");
  return t ? t.value : "";
}

/** The line with its plain `key:` terms replaced by `key:value` (the first one's place is kept),
 * or removed when `value` is only white space: what a shortcut box writes. The value is kept
 * as typed (a space being typed stays, quoted). Negated terms
 * (`-key:x`) and other comparisons are left alone. */
export function withField(line: string, key: string, value: string): string {
  const drop = tokenizeLine(line).filter((t) => !t.neg && t.key === key && t.op === ":");
  return splice(line, drop, value.trim() ? termText({ neg: false, key, op: ":", value }) : null);
}

/** A fixed term a check box stands for (`duration>1s`, `spec:broken`). */
export interface FlagTerm {
  key: string;
  op: TermOp;
  value: string;
}

/** Whether the line holds the flag's term (plain, value compared ignoring case). */
export function hasFlag(line: string, f: FlagTerm): boolean {
  return tokenizeLine(line).some((t) => !t.neg && t.key === f.key && t.op === f.op && t.value.toLowerCase() === f.value.toLowerCase());
}

/** The line with the flag's term added (`on`, once) or every copy of it removed. */
export function withFlag(line: string, f: FlagTerm, on: boolean): string {
  const drop = tokenizeLine(line).filter((t) => !t.neg && t.key === f.key && t.op === f.op && t.value.toLowerCase() === f.value.toLowerCase());
  if (on) return drop.length > 0 ? line : splice(line, [], termText({ neg: false, ...f }));
  return splice(line, drop, null);
}

/** The free-text terms of the line, joined by spaces (what the regex toggle applies to). */
export function freeText(line: string): string {
  return tokenizeLine(line)
    .filter((t) => t.key === null)
    .map((t) => (t.neg ? "-" : "") + t.value)
    .join(" ");
}

/** Whether the line's free text is a regular expression (it has a plain `/.../` term). */
export function hasRegex(line: string): boolean {
  return tokenizeLine(line).some((t) => t.regex && !t.neg);
}

/** A regex term for `pattern`: `/pattern/i`, with `/` escaped. */
export function regexTerm(pattern: string): string {
  return `/${pattern.replace(/\//g, "\\/")}/i`;
}

/** Replaces each of `tokens` (in line order) with `f(token)` in place, keeping the rest of the
 * line as typed. */
function replaceEach(line: string, tokens: FilterToken[], f: (t: FilterToken) => string): string {
  let out = "";
  let at = 0;
  for (const t of tokens) {
    out += line.slice(at, t.start) + f(t);
    at = t.end;
  }
  return out + line.slice(at);
}

/** The regex toggle: with `on`, each plain free-text term of the line (a word or a quoted
 * phrase) becomes its own `/.../i` term in its place (its text, regex characters kept, so
 * `item_[0-9]+` becomes a pattern); with `on` false, each plain regex term becomes free text
 * again (a quoted phrase when it holds spaces). Terms are ANDed, so the line keeps asking for
 * every word, and toggling twice gives the line back. Negated terms and field terms stay as
 * they are. */
export function withRegex(line: string, on: boolean): string {
  const tokens = tokenizeLine(line);
  if (on) {
    const words = tokens.filter((t) => t.key === null && !t.neg && !t.regex);
    return replaceEach(line, words, (w) => regexTerm(w.value));
  }
  const rx = tokens.filter((t) => t.regex && !t.neg);
  return replaceEach(line, rx, (t) => termText({ neg: false, key: null, op: null, value: t.value }));
}

/** A line split around an error's place (`start`..`end`, UTF-16 indexes as the core's
 * `LineError` gives them, clamped to the line) to mark it, and the place as the `character`
 * (code points, from 1) people and the CLI's `column` count: an emoji before it is one. */
export function markError(line: string, start: number, end: number): { before: string; at: string; after: string; character: number } {
  const s = Math.max(0, Math.min(start, line.length));
  const e = Math.max(s, Math.min(end, line.length));
  const before = line.slice(0, s);
  return { before, at: line.slice(s, e) || " ", after: line.slice(e), character: [...before].length + 1 };
}

/** The check boxes of the view and the terms they write. */
export const FLAGS = {
  slow: { key: "duration", op: ">", value: "1s" },
  notToSpec: { key: "spec", op: ":", value: "broken" },
} as const satisfies Record<string, FlagTerm>;

/** One row of the grammar help: what to type, what it does. */
export interface GrammarRow {
  example: string;
  meaning: string;
}

/** The grammar the help popover shows (the core's parser, `parse_dial_filter`, is the judge). */
export const GRAMMAR: readonly GrammarRow[] = [
  { example: "word", meaning: "free text: a word of the request, response or error starts with it (ignoring case)" },
  { example: '"two words"', meaning: "a phrase: its words in a row" },
  { example: "/item_[0-9]+/i", meaning: "a regular expression over the request, response and error JSON (the .* button writes it)" },
  { example: "op:read_item", meaning: "a field is exactly the value: op, caller, callee, endpoint, phone, call, session" },
  { example: 'phone:"Demo phone"', meaning: "a phone by the name it was paired under (or its dev_ id); quote values with spaces" },
  { example: "-outcome:ok", meaning: "a leading - negates any term" },
  { example: "outcome:timed_out", meaning: "outcomes: ok, tool_error, error, timed_out" },
  { example: "spec:broken", meaning: "dials that break phone-line.md (spec:ok for those that follow it)" },
  { example: "duration>1s", meaning: "compare durations: > >= < <= =, in ms or s" },
  { example: "after:-1h", meaning: "reached this desktop in the last hour (s, m, h, d); after:/before: also take 2026-12-01 or RFC 3339 times" },
  { example: "kind:connection", meaning: "connection events only (connected, pairing, disconnected with why); kind:dial for dials" },
];
