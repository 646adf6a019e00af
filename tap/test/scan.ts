// A checker for the Lumiverse host's install-scanner rules, written from their description in
// ../shared/specs/lumiverse-host.md section 2 (what is blocked, and that strings, comments,
// template text and regex literals are skipped, and that the Bun-transpiled form is scanned too).
// It is this repository's own code: it does not reuse the host's. Each finding names the host's
// label and the offending text, so a failing test says what crept into the bundle and where.

/** One thing the host would refuse. */
export interface Finding {
  /** The host's label (`filesystem module access`, …). */
  label: string;
  /** The offending text, with a little context. */
  text: string;
  /** Offset in the scanned text. */
  at: number;
}

const MODULES: Record<string, string> = {};
for (const [label, names] of [
  ["filesystem module access", ["fs", "fs/promises"]],
  ["subprocess module access", ["child_process"]],
  ["direct socket module access", ["net", "tls", "dgram", "http", "https"]],
  ["worker or cluster module access", ["worker_threads", "cluster"]],
] as const) {
  for (const n of names) {
    MODULES[n] = label;
    MODULES[`node:${n}`] = label;
  }
}
MODULES["bun:sqlite"] = "direct SQLite module access";
MODULES["node:sqlite"] = "direct SQLite module access";

const BUN_BLOCKED = new Set(["file", "write", "spawn", "spawnSync", "serve", "connect", "listen"]);
const PROCESS_BLOCKED = new Set(["env", "exit", "kill", "chdir", "dlopen"]);
const BUN_LABEL = "dangerous Bun system API usage";
const PROCESS_LABEL = "dangerous process API usage";

/** Spans of `src` that are not code: string literals, template text (the `${…}` parts are
 * code), comments and regex literals. Sorted, not overlapping. */
export function nonCodeSpans(src: string): Array<[number, number]> {
  const spans: Array<[number, number]> = [];
  const n = src.length;
  // A `/` starts a regex (not a division) after one of these, or at the start.
  const beforeRegex = new Set("(,=!&|?:;{[}+-*%~^<>".split(""));
  const regexKeywords = new Set(["return", "typeof", "delete", "void", "throw", "new", "in", "of", "instanceof", "case", "do", "else", "yield", "await"]);
  const regexAllowed = (pos: number): boolean => {
    let j = pos - 1;
    while (j >= 0 && /\s/.test(src[j]!)) j--;
    if (j < 0) return true;
    const c = src[j]!;
    if (beforeRegex.has(c)) return true;
    if (/[A-Za-z_$]/.test(c)) {
      let k = j;
      while (k >= 0 && /[\w$]/.test(src[k]!)) k--;
      return regexKeywords.has(src.slice(k + 1, j + 1));
    }
    return false;
  };
  const quoted = (i: number): number => {
    const q = src[i];
    let j = i + 1;
    while (j < n && src[j] !== q) j += src[j] === "\\" ? 2 : 1;
    const end = Math.min(n, j + 1);
    spans.push([i, end]);
    return end;
  };
  const regex = (i: number): number => {
    let j = i + 1;
    let cls = false;
    for (; j < n; j++) {
      const c = src[j];
      if (c === "\\") {
        j++;
        continue;
      }
      if (c === "\n") return i + 1; // not a regex after all: leave it scannable
      if (c === "[") cls = true;
      else if (c === "]") cls = false;
      else if (c === "/" && !cls) break;
    }
    j++;
    while (j < n && /[dgimsuvy]/.test(src[j]!)) j++;
    spans.push([i, Math.min(n, j)]);
    return j;
  };
  // Code from `i` until the end, or until the `}` closing a template's `${` when `inTemplate`.
  const code = (i: number, inTemplate: boolean): number => {
    let depth = 0;
    while (i < n) {
      const c = src[i]!;
      const d = src[i + 1];
      if (inTemplate) {
        if (c === "{") depth++;
        else if (c === "}") {
          if (depth === 0) return i;
          depth--;
        }
      }
      if (c === "/" && d === "/") {
        const e = src.indexOf("\n", i);
        const end = e < 0 ? n : e;
        spans.push([i, end]);
        i = end;
      } else if (c === "/" && d === "*") {
        const e = src.indexOf("*/", i + 2);
        const end = e < 0 ? n : e + 2;
        spans.push([i, end]);
        i = end;
      } else if (c === "/" && regexAllowed(i)) i = regex(i);
      else if (c === '"' || c === "'") i = quoted(i);
      else if (c === "`") i = template(i);
      else i++;
    }
    return i;
  };
  const template = (i: number): number => {
    let start = i;
    let j = i + 1;
    while (j < n) {
      if (src[j] === "\\") {
        j += 2;
        continue;
      }
      if (src[j] === "`") {
        spans.push([start, j + 1]);
        return j + 1;
      }
      if (src[j] === "$" && src[j + 1] === "{") {
        spans.push([start, j + 2]);
        j = code(j + 2, true);
        start = j; // the closing `}` starts the next text part
        j++;
        continue;
      }
      j++;
    }
    spans.push([start, n]);
    return n;
  };
  code(0, false);
  return spans.sort((a, b) => a[0] - b[0]);
}

/** The host's check on one text: every finding whose match starts in code. */
function scanOne(src: string): Finding[] {
  const spans = nonCodeSpans(src);
  const inCode = (at: number) => {
    // binary search for the span starting at or before `at`
    let lo = 0;
    let hi = spans.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const [s, e] = spans[mid]!;
      if (at < s) hi = mid - 1;
      else if (at >= e) lo = mid + 1;
      else return false;
    }
    return true;
  };
  const out: Finding[] = [];
  const add = (label: string, at: number, len: number) => out.push({ label, at, text: src.slice(Math.max(0, at - 30), at + len + 30).replace(/\s+/g, " ") });
  const each = (re: RegExp, f: (m: RegExpExecArray) => void) => {
    const g = new RegExp(re.source, re.flags.includes("g") ? re.flags : re.flags + "g");
    for (let m = g.exec(src); m; m = g.exec(src)) {
      if (inCode(m.index)) f(m);
      if (m[0].length === 0) g.lastIndex++;
    }
  };
  const q = `["'\`]`;
  // Static imports of a blocked module.
  each(new RegExp(`from\\s*${q}([^"'\`]+)${q}|(?:require|import)\\s*\\(\\s*${q}([^"'\`]+)${q}\\s*\\)`), (m) => {
    const label = MODULES[m[1] ?? m[2] ?? ""];
    if (label) add(label, m.index, m[0].length);
  });
  // import(x) / require(x) whose specifier is not a provable constant (or a constant naming a
  // blocked module). Member calls (`x.require(`) and method definitions are not module loads.
  each(/(?<![.\w$])(require|import)\s*\(([^;\n]{1,300})\)/, (m) => {
    const after = src.slice(m.index + m[0].length);
    if (/^\s*\{/.test(after)) return;
    const spec = constantString(m[2]!);
    if (spec === null) add("dynamic module access", m.index, m[0].length);
    else if (MODULES[spec]) add(MODULES[spec]!, m.index, m[0].length);
  });
  // Bun.* / process.* (dotted or computed), through an alias, or destructured.
  const props = (obj: string, blocked: Set<string>, label: string) => {
    each(new RegExp(`\\b${obj}\\s*\\.\\s*([A-Za-z_$][\\w$]*)`), (m) => {
      if (blocked.has(m[1]!)) add(label, m.index, m[0].length);
    });
    each(new RegExp(`\\b${obj}\\s*\\[([^\\]]{1,300})\\]`), (m) => {
      const p = constantString(m[1]!, true);
      if (p !== null && blocked.has(p)) add(label, m.index, m[0].length);
    });
  };
  props("Bun", BUN_BLOCKED, BUN_LABEL);
  props("process", PROCESS_BLOCKED, PROCESS_LABEL);
  each(/\b(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=\s*(Bun|process)\b/, (m) => {
    if (m[2] === "Bun") props(m[1]!.replace(/\$/g, "\\$"), BUN_BLOCKED, BUN_LABEL);
    else props(m[1]!.replace(/\$/g, "\\$"), PROCESS_BLOCKED, PROCESS_LABEL);
  });
  each(/\b(?:const|let|var)\s*\{([^}]+)\}\s*=\s*(Bun|process)\b/, (m) => {
    const names = m[1]!.split(",").map((p) => p.trim().split(/\s*:/)[0]!.trim());
    const blocked = m[2] === "Bun" ? BUN_BLOCKED : PROCESS_BLOCKED;
    if (names.some((x) => blocked.has(x))) add(m[2] === "Bun" ? BUN_LABEL : PROCESS_LABEL, m.index, m[0].length);
  });
  each(/\bObject\.getOwnPropertyDescriptor\s*\(\s*process\s*,\s*["'`]env["'`]/, (m) => add(PROCESS_LABEL, m.index, m[0].length));
  // eval( / Function( — but not the empty `Function("")` feature probe.
  each(/\beval\s*\(|\bFunction\s*\(/, (m) => {
    if (m[0].startsWith("Function") && /^Function\s*\(\s*(""|''|``)?\s*\)/.test(src.slice(m.index))) return;
    add("dynamic code execution", m.index, m[0].length);
  });
  each(/\bBuffer\.from\s*\([^)]*["'`]base64["'`]/, (m) => add("base64 decoding", m.index, m[0].length));
  return out;
}

/** The string a specifier expression certainly is: string literals (templates without `${`)
 * joined by `+`, or `String.fromCharCode(<integers>)`; `null` when anything is not constant.
 * `lenient` (computed property names) also takes the literal parts of anything else, as the
 * host does there. */
export function constantString(expr: string, lenient = false): string | null {
  const t = expr.trim();
  const cc = /^String\.fromCharCode\s*\(([^)]*)\)$/.exec(t);
  if (cc) {
    const parts = cc[1]!.split(",").map((p) => p.trim());
    if (!parts.every((p) => /^\d+$/.test(p))) return lenient ? null : null;
    return String.fromCodePoint(...parts.map(Number));
  }
  const lit = /^(?:"((?:\\.|[^"\\])*)"|'((?:\\.|[^'\\])*)'|`((?:[^`\\$]|\\.|\$(?!\{))*)`)/;
  let rest = t;
  let out = "";
  let any = false;
  while (rest) {
    const m = lit.exec(rest);
    if (!m) break;
    out += m[1] !== undefined ? safeJson(`"${m[1]}"`) : (m[2] ?? m[3] ?? "");
    any = true;
    rest = rest.slice(m[0].length).trimStart();
    if (!rest || rest[0] === ",") return out;
    if (rest[0] !== "+") break;
    rest = rest.slice(1).trimStart();
    if (!rest) return null;
  }
  if (!rest && any) return out;
  if (!lenient) return null;
  const parts = [...t.matchAll(/"((?:\\.|[^"\\])*)"|'((?:\\.|[^'\\])*)'|`((?:\\.|[^`\\])*)`/g)].map((m) => m[1] ?? m[2] ?? (m[3] ?? "").replace(/\$\{[^}]*\}/g, ""));
  return parts.length ? parts.join("") : null;
}

function safeJson(s: string): string {
  try {
    return JSON.parse(s) as string;
  } catch {
    return s.slice(1, -1);
  }
}

/** Scans `bundle` and, when given, its transpiled form (the host scans both); findings are
 * deduplicated by label and text. */
export function scanBundle(bundle: string, transpiled?: string): Finding[] {
  const all = [...scanOne(bundle), ...(transpiled !== undefined && transpiled !== bundle ? scanOne(transpiled) : [])];
  const seen = new Set<string>();
  return all.filter((f) => {
    const k = `${f.label}|${f.text}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
