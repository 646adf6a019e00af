// The Live dials table's rows in view, painted by hand: a fixed set of row elements (one per
// slot in view) whose text and attributes are set only where they changed. While dials stream
// at the top every row in view shows another dial at each render; with one Svelte effect per
// cell, attribute and mark, that render took 7-8 ms of the window's scripts (p50, interpreter,
// 21 rows), where setting the same text and attributes directly takes well under 1 ms
// (session 12). The rows keep the markup the Svelte template gave them: role, ids, aria
// attributes, classes and cell titles (the e2e journeys and screen readers read them).
import type { HistoryRow } from "../bindings/HistoryRow";
import {
  connectionLabel,
  formatDateTime,
  formatDuration,
  formatTime,
  outcomeLabel,
  phoneName,
  phoneTitle,
  slowMark,
  specMark,
} from "./dials";

type Kind = "dial" | "connection" | "placeholder";

/** One row element and what it shows now (the values last set, compared before setting). */
interface Slot {
  el: HTMLDivElement;
  kind: Kind | null;
  cells: HTMLDivElement[];
  last: Map<string, string>;
  /** What the slot was last painted with: the row object (rows are never changed in place),
   * its display index, whether it was selected and the phone names. The same again: nothing
   * to do (the table scrolled down while live dials arrive repaints the same rows each batch). */
  shown: { row: HistoryRow | undefined; i: number; selected: boolean; names: Record<string, string> } | null;
}

/** What a paint needs besides the rows. */
export interface PaintContext {
  /** Display index of the first row given. */
  start: number;
  /** The selected display index, or null. */
  selected: number | null;
  /** Device id -> the name the phone was paired under. */
  phoneNames: Record<string, string>;
}

/** Sets `el`'s attribute `name` to `value` (removes it for null) when it changed. `k` names
 * the place (`cell@attribute`): a constant, so looking it up builds no string. */
function attr(s: Slot, k: string, el: Element, name: string, value: string | null) {
  const v = value ?? "\u0000";
  if (s.last.get(k) === v) return;
  s.last.set(k, v);
  if (value === null) el.removeAttribute(name);
  else el.setAttribute(name, value);
}

/** Sets a cell's text when it changed. The cell's one text node keeps its place and only its
 * characters change: replacing the node (`textContent`) makes WebKit throw away the text's
 * layout object and build a new one, which took about as long again as the layout itself
 * (session 13, a test page in this WebKitGTK: 21 rows changed per frame, 8-9.6 ms of the web
 * process per frame against 4-5.2 ms with the characters set in place, rows hidden). */
function text(s: Slot, k: string, el: Node, value: string) {
  if (s.last.get(k) === value) return;
  s.last.set(k, value);
  setData(el, value);
}

/** `el`'s text becomes `value`: in place when `el` is a text node or holds one and only one. */
function setData(el: Node, value: string) {
  if (el.nodeType === Node.TEXT_NODE) {
    (el as Text).data = value;
    return;
  }
  const t = el.firstChild;
  if (t && t === el.lastChild && t.nodeType === Node.TEXT_NODE) (t as Text).data = value;
  else el.textContent = value;
}

/** Sets a cell's markup from trusted parts when its key changed (marks: spans with words). */
function parts(s: Slot, k: string, el: HTMLElement, sig: string, build: (el: HTMLElement) => void) {
  if (s.last.get(k) === sig) return;
  s.last.set(k, sig);
  el.textContent = "";
  build(el);
}

function span(cls: string | null, content: string, hidden = false, label: string | null = null): HTMLSpanElement {
  const e = document.createElement("span");
  if (cls) e.className = cls;
  if (hidden) e.setAttribute("aria-hidden", "true");
  if (label !== null) e.setAttribute("aria-label", label);
  e.textContent = content;
  return e;
}

function cell(cls: string): HTMLDivElement {
  const c = document.createElement("div");
  c.setAttribute("role", "gridcell");
  if (cls) c.className = cls;
  return c;
}

/** The dial-to-pixel probe's record (`dial_to_pixel_p99_ms`, docs/performance.md). A harness
 * that measures sets `window.__dialToPixel = { seen: new Set(), out: [] }` (with `arrived` and
 * `batches` to split the time at the page's door) and reads `out` and `batches`; nothing else
 * ever sets it, so a person's window only pays one property read per paint and per batch. */
interface DialToPixel {
  /** Ids of the dials already recorded (a row moved down by newer ones is not new). */
  seen: Set<string>;
  /** `[start_ms, dom_ms, paint_ms, arrived_ms]` per dial shown: the phone's stamp of the dial,
   * when its row was put in the DOM, when the frame that shows it was rendered and when the
   * batch that carried it reached the page (`NaN` without `arrived`; wall clock, epoch ms: the
   * phone runs on the same machine). */
  out: [number, number, number, number][];
  /** Dial id -> when its batch reached the page (epoch ms), kept until the dial is painted (at
   * most [`ARRIVED_KEPT`] ids: most dials of a fast stream are never painted). */
  arrived?: Map<string, number>;
  /** `[arrived_ms, rows, left_out, skipped, newest_start_ms]` per live batch that reached the
   * page: its rows, the matching dials the core left out of it and dropped for the view, and
   * the phone's stamp of its newest dial. */
  batches?: [number, number, number, number, number][];
}

/** Most dial ids the probe keeps waiting for their paint (then it forgets them all). */
const ARRIVED_KEPT = 20_000;

/** The probe, when a harness set it. */
function dialToPixel(): DialToPixel | undefined {
  return (globalThis as { __dialToPixel?: DialToPixel }).__dialToPixel;
}

/** Records a live batch reaching the page (`onMessage` of the Live dials view, before any
 * work on it): the arrival time of each of its dials, and the batch's size. Does nothing
 * unless a harness set `window.__dialToPixel` with `arrived` or `batches`. */
export function probeArrival(rows: readonly { id: string; start_ms: number }[], leftOut: number, skipped: number) {
  const probe = dialToPixel();
  if (!probe || (!probe.arrived && !probe.batches)) return;
  const at = Date.now();
  if (probe.arrived) {
    if (probe.arrived.size > ARRIVED_KEPT) probe.arrived.clear();
    for (const r of rows) probe.arrived.set(r.id, at);
  }
  probe.batches?.push([at, rows.length, leftOut, skipped, rows.length ? rows[rows.length - 1].start_ms : NaN]);
}

/** Records the dials of `rows` not shown before: the DOM time now, and the paint time in a
 * task posted from the next animation frame's callback (it runs once that frame, the first
 * with the rows, is rendered). */
function probePaint(probe: DialToPixel, rows: readonly (HistoryRow | undefined)[]) {
  const dom = Date.now();
  const fresh: [number, number][] = [];
  for (const r of rows) {
    if (!r || r.kind !== "dial" || probe.seen.has(r.id)) continue;
    probe.seen.add(r.id);
    fresh.push([r.start_ms, probe.arrived?.get(r.id) ?? NaN]);
    probe.arrived?.delete(r.id);
  }
  if (fresh.length === 0) return;
  requestAnimationFrame(() => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      channel.port1.close();
      const painted = Date.now();
      for (const [start, arrived] of fresh) probe.out.push([start, dom, painted, arrived]);
    };
    channel.port2.postMessage(0);
  });
}

/** Paints rows into `root` (the table's `.rows` element), reusing one element per slot. */
export class RowPainter {
  private slots: Slot[] = [];

  constructor(private readonly root: HTMLElement) {}

  /** The display index the element `target` (or one of its ancestors) is the row of, or null. */
  static indexOf(target: EventTarget | null): number | null {
    const row = target instanceof Element ? target.closest("[data-index]") : null;
    const i = row ? Number(row.getAttribute("data-index")) : NaN;
    return Number.isInteger(i) ? i : null;
  }

  /** Shows `rows` (`undefined`: not held yet, a placeholder) from display index `ctx.start`. */
  paint(rows: readonly (HistoryRow | undefined)[], ctx: PaintContext) {
    while (this.slots.length < rows.length) {
      const el = document.createElement("div");
      el.setAttribute("role", "row");
      this.root.appendChild(el);
      this.slots.push({ el, kind: null, cells: [], last: new Map(), shown: null });
    }
    while (this.slots.length > rows.length) {
      const s = this.slots.pop();
      s?.el.remove();
    }
    rows.forEach((r, k) => this.paintOne(this.slots[k], r, ctx.start + k, ctx));
    const probe = dialToPixel();
    if (probe) probePaint(probe, rows);
  }

  private reshape(s: Slot, kind: Kind) {
    if (s.kind === kind) return;
    s.kind = kind;
    s.last.clear();
    s.el.textContent = "";
    s.el.removeAttribute("tabindex");
    s.el.removeAttribute("aria-busy");
    s.el.removeAttribute("aria-selected");
    s.el.removeAttribute("title");
    const classes = kind === "dial" ? ["", "ellipsis", "route", "ellipsis mono", "num", ""] : kind === "connection" ? ["", "ellipsis", "ellipsis event"] : ["muted"];
    s.cells = classes.map(cell);
    for (const c of s.cells) s.el.appendChild(c);
    if (kind === "dial") {
      // Caller and callee each in a span of their own, so a narrow column cuts the caller
      // first and the callee, which tells the rows apart, last (the cell's title has both).
      const route = s.cells[2];
      route.appendChild(span("caller", ""));
      route.appendChild(span("arrow", " → "));
      route.appendChild(span("callee", ""));
    }
    if (kind === "placeholder") {
      s.el.setAttribute("aria-busy", "true");
      s.cells[0].textContent = "…";
    } else {
      s.el.setAttribute("tabindex", "-1");
    }
  }

  private paintOne(s: Slot, r: HistoryRow | undefined, i: number, ctx: PaintContext) {
    const selected = ctx.selected === i;
    const was = s.shown;
    if (was && r && was.row === r && was.i === i && was.selected === selected && was.names === ctx.phoneNames) return;
    s.shown = { row: r, i, selected, names: ctx.phoneNames };
    const kind: Kind = !r ? "placeholder" : r.kind === "connection" ? "connection" : "dial";
    this.reshape(s, kind);
    const el = s.el;
    attr(s, "row@id", el, "id", `dial-row-${i}`);
    attr(s, "row@aria-rowindex", el, "aria-rowindex", String(i + 2));
    attr(s, "row@data-index", el, "data-index", String(i));
    if (!r) {
      attr(s, "row@class", el, "class", "row placeholder");
      return;
    }
    attr(s, "row@aria-selected", el, "aria-selected", String(selected));
    const [c0, c1, c2, c3, c4, c5] = s.cells;
    if (r.kind === "connection") {
      attr(s, "row@class", el, "class", `row connection ${r.event}${selected ? " selected" : ""}`);
      const c = connectionLabel(r.event);
      attr(s, "c0@title", c0, "title", formatDateTime(r.at_ms));
      text(s, "c0#text", c0, formatTime(r.at_ms));
      attr(s, "c1@title", c1, "title", phoneTitle(ctx.phoneNames, r.phone));
      text(s, "c1#text", c1, r.label || phoneName(ctx.phoneNames, r.phone));
      attr(s, "c2@title", c2, "title", `${c.text}: ${r.detail}`);
      parts(s, "c2#parts", c2, `${c.icon}\u0000${c.text}\u0000${r.detail}`, (e) => {
        e.appendChild(span(null, c.icon, true));
        e.appendChild(document.createTextNode(" "));
        const strong = document.createElement("strong");
        strong.textContent = c.text;
        e.appendChild(strong);
        if (r.detail) e.appendChild(document.createTextNode(` — ${r.detail}`));
      });
      return;
    }
    const bad = r.outcome === "error" || r.outcome === "timed_out";
    attr(s, "row@class", el, "class", `row${selected ? " selected" : ""}${bad ? " bad" : ""}`);
    const o = outcomeLabel(r.outcome);
    const spec = specMark(r);
    const slow = slowMark(r);
    attr(s, "c0@title", c0, "title", formatDateTime(r.start_ms));
    text(s, "c0#text", c0, formatTime(r.start_ms));
    attr(s, "c1@title", c1, "title", phoneTitle(ctx.phoneNames, r.phone));
    text(s, "c1#text", c1, phoneName(ctx.phoneNames, r.phone));
    attr(s, "c2@title", c2, "title", `${r.caller} → ${r.endpoint}`);
    text(s, "c2a#text", c2.firstChild as Node, r.caller);
    text(s, "c2b#text", c2.lastChild as Node, r.callee);
    attr(s, "c3@title", c3, "title", spec ? `${r.op}: ${spec.title}` : r.op);
    // The marks come and go with their rows; the op's and the duration's text nodes stay and
    // only their characters change (`text`).
    parts(s, "c3#parts", c3, spec ? spec.title : "", (e) => {
      if (spec) {
        e.appendChild(span("mark spec", "", false, spec.title)).appendChild(span(null, spec.icon, true));
      }
      e.appendChild(document.createTextNode(""));
      s.last.delete("c3op#text");
    });
    text(s, "c3op#text", c3.lastChild as Node, r.op);
    parts(s, "c4#parts", c4, slow ? "slow" : "", (e) => {
      e.appendChild(document.createTextNode(""));
      s.last.delete("c4d#text");
      if (slow) {
        e.appendChild(document.createTextNode(" "));
        const m = span("mark slow", "");
        m.appendChild(span(null, slow.icon, true));
        m.appendChild(document.createTextNode(` ${slow.text}`));
        e.appendChild(m);
      }
    });
    text(s, "c4d#text", c4.firstChild as Node, formatDuration(r.duration_ms));
    attr(s, "c5@class", c5, "class", `outcome ${r.outcome}`);
    parts(s, "c5#parts", c5, r.outcome, (e) => {
      e.appendChild(span(null, o.icon, true));
      e.appendChild(document.createTextNode(` ${o.text}`));
    });
  }
}
