import { describe, expect, it } from "vitest";
import type { DialRow } from "../bindings/DialRow";
import { CACHE_ROWS, DialWindow, Geometry, keepInPlace, PAGE } from "./dialWindow";

function row(i: number): DialRow {
  return {
    id: `d${i}`, phone: "dev_a", call_id: `c${i}`, caller: "lumiagent", callee: "lumirealm", endpoint: "lumirealm.phoneline",
    op: "read_item", start_ms: 1_760_000_000_000 + i, duration_ms: 10, outcome: "ok", slow: false, has_error: false, spec_findings: 0,
  };
}
/** Rows `from .. from+n` (oldest first, as the channel sends them). */
const rows = (from: number, n: number) => Array.from({ length: n }, (_, k) => row(from + k));
/** The core's answer for display rows `offset .. offset+limit` of `total` dials `d0..d{total-1}`. */
const page = (total: number, offset: number, limit: number) =>
  Array.from({ length: Math.max(0, Math.min(limit, total - offset)) }, (_, j) => row(total - 1 - (offset + j)));

describe("geometry of the virtual window", () => {
  it("renders only the rows in view plus overscan at 100 000 rows", () => {
    const g = new Geometry(100_000, 560, 28);
    const w = g.window(28 * 50_000, 8);
    expect(w).toEqual({ start: 49_992, end: 50_029, offset: 49_992 * 28, spacer: 2_800_000 });
    expect(w.end - w.start).toBeLessThan(40);
  });
  it("clamps at the top, the bottom and on empty", () => {
    const g = new Geometry(100_000, 560, 28);
    expect(g.window(0, 8)).toMatchObject({ start: 0, end: 29, offset: 0 });
    expect(g.window(28 * 100_000, 8).end).toBe(100_000);
    expect(new Geometry(5, 560, 28).window(-50, 8)).toMatchObject({ start: 0, end: 5, offset: 0 });
    expect(new Geometry(0, 560).window(0)).toEqual({ start: 0, end: 0, offset: 0, spacer: 0 });
  });
  it("scales a history too tall for the browser and still reaches both ends", () => {
    const g = new Geometry(1_000_000, 560, 28, 8_000_000);
    expect(g.scaled).toBe(true);
    expect(g.spacer).toBe(8_000_000);
    expect(g.firstIndex(0)).toBe(0);
    const bottom = g.window(8_000_000 - 560, 8);
    expect(bottom.end).toBe(1_000_000);
    // The block sits where the viewport is, the first row in view at its top.
    const mid = g.window(4_000_000, 8);
    expect(mid.offset).toBe(4_000_000 - 8 * 28);
    expect(Math.abs(g.firstIndex(g.indexTop(654_321)) - 654_321)).toBeLessThanOrEqual(1);
  });
  it("reveals a row by scrolling the least", () => {
    const g = new Geometry(1000, 280, 28);
    expect(g.reveal(10, 0)).toBe(28); // row 10 spans 280..308: scroll by one row
    expect(g.reveal(3, 200)).toBe(84);
    expect(g.reveal(8, 100)).toBe(100);
  });
  it("keeps the rows in view in place when dials arrive at the top, and follows at the top", () => {
    const before = new Geometry(1000, 560, 28);
    const after = new Geometry(1030, 560, 28);
    expect(keepInPlace(2800, 30, before, after)).toBe(2800 + 30 * 28);
    expect(keepInPlace(0, 30, before, after)).toBe(0);
    const big = new Geometry(1_000_000, 560, 28, 8_000_000);
    const bigger = new Geometry(1_000_500, 560, 28, 8_000_000);
    const top = keepInPlace(big.indexTop(400_000), 500, big, bigger);
    expect(Math.abs(bigger.firstIndex(top) - 400_500)).toBeLessThanOrEqual(1);
  });
});

describe("the window of rows", () => {
  it("starts from the snapshot's newest rows, newest first", () => {
    const w = new DialWindow();
    w.reset(1000, rows(800, 200));
    expect(w.total).toBe(1000);
    expect(w.rowAt(0)?.id).toBe("d999");
    expect(w.rowAt(199)?.id).toBe("d800");
    expect(w.rowAt(200)).toBeUndefined();
    expect(w.next(0, 40)).toBeNull();
  });
  it("asks for the rows scrolled to, a page at a time, and not twice", () => {
    const w = new DialWindow();
    w.reset(100_000, rows(99_800, 200));
    const ask = w.next(50_000, 50_037);
    expect(ask).not.toBeNull();
    expect(ask!.limit).toBe(PAGE);
    expect(ask!.offset).toBeLessThanOrEqual(50_000);
    expect(ask!.offset + ask!.limit).toBeGreaterThanOrEqual(50_037);
    const token = w.begin(ask!);
    expect(w.next(50_000, 50_037)).toBeNull(); // in flight
    expect(w.loading).toBe(1);
    w.fill(token, ask!.offset, 100_000, page(100_000, ask!.offset, ask!.limit));
    expect(w.loading).toBe(0);
    for (let i = 50_000; i < 50_037; i++) expect(w.rowAt(i)?.id).toBe(`d${100_000 - 1 - i}`);
  });
  it("prepends live dials without moving the rows already held", () => {
    const w = new DialWindow();
    w.reset(1000, rows(800, 200));
    const ask = w.next(500, 520)!;
    const token = w.begin(ask);
    // 30 live dials arrive while the page is on its way; the page was answered before them.
    expect(w.prepend(rows(1000, 30))).toBe(30);
    w.fill(token, ask.offset, 1000, page(1000, ask.offset, ask.limit));
    expect(w.total).toBe(1030);
    expect(w.rowAt(0)?.id).toBe("d1029");
    expect(w.rowAt(30)?.id).toBe("d999");
    expect(w.rowAt(530)?.id).toBe(`d${999 - 500}`);
    // Skipped dials count and are fetched when scrolled to.
    w.prepend(rows(1030, 2), 5);
    expect(w.total).toBe(1037);
    expect(w.rowAt(0)?.id).toBe("d1031");
    expect(w.rowAt(2)).toBeUndefined();
    expect(w.next(0, 10)).toMatchObject({ offset: 2 });
  });
  it("drops the answer of a page asked before a reset", () => {
    const w = new DialWindow();
    w.reset(1000, []);
    const ask = w.next(0, 10)!;
    const token = w.begin(ask);
    w.reset(5, rows(0, 5));
    w.fill(token, ask.offset, 1000, page(1000, ask.offset, ask.limit));
    expect(w.cached).toBe(5);
    expect(w.rowAt(0)?.id).toBe("d4");
  });
  it("a failed page can be asked again", () => {
    const w = new DialWindow();
    w.reset(1000, []);
    const t = w.begin(w.next(0, 10)!);
    expect(w.next(0, 10)).toBeNull();
    w.failed(t);
    expect(w.next(0, 10)).not.toBeNull();
  });
  it("holds a small cache, however far the person scrolls", () => {
    const w = new DialWindow();
    const total = 100_000;
    w.reset(total, rows(total - 200, 200));
    for (let start = 0; start < total; start += 997) {
      let ask;
      while ((ask = w.next(start, start + 37))) {
        const t = w.begin(ask);
        w.fill(t, ask.offset, total, page(total, ask.offset, ask.limit));
      }
      w.trim(start, start + 37);
      expect(w.cached).toBeLessThanOrEqual(CACHE_ROWS + 2 * PAGE);
      for (let i = start; i < Math.min(total, start + 37); i++) expect(w.rowAt(i)?.id).toBe(`d${total - 1 - i}`);
    }
  });
});
