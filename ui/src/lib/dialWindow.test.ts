import { describe, expect, it } from "vitest";
import { CACHE_ROWS, DialWindow, Geometry, keepInPlace, PAGE, prependNewer, WALK_PAGE, type PageAsk } from "./dialWindow";

/** A history of `n` rows `h0` (newest) .. `h{n-1}`, answered the way the core pages it: a cursor
 * is the index the next page starts at. */
function core(n: number, maxSkip = Number.POSITIVE_INFINITY) {
  return (ask: Exclude<PageAsk, { restart: true }>) => {
    const below = ask.cursor === undefined ? 0 : Number(ask.cursor);
    // A seek passes over at most `maxSkip` rows (the core's time budget), never past the end.
    const skipped = Math.max(0, Math.min(ask.skip, maxSkip, n - below));
    const start = below + skipped;
    const rows = Array.from({ length: Math.max(0, Math.min(ask.limit, n - start)) }, (_, k) => `h${start + k}`);
    const end = start + rows.length;
    return { rows, next: end < n ? String(end) : null, skipped };
  };
}

/** Reads pages until rows `start..end` are held; returns how many pages it took. */
function settle(w: DialWindow<string>, answer: ReturnType<typeof core>, start: number, end: number): number {
  let pages = 0;
  for (let ask = w.next(start, end); ask; ask = w.next(start, end)) {
    if ("restart" in ask) throw new Error("restart asked");
    const t = w.begin(ask);
    const p = answer(ask);
    w.fill(t, p.rows, p.next, p.skipped);
    w.trim(start, end);
    pages++;
    if (pages > 1000) throw new Error("no end");
  }
  return pages;
}

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
    expect(g.window(8_000_000 - 560, 8).end).toBe(1_000_000);
    const mid = g.window(4_000_000, 8);
    expect(mid.offset).toBe(4_000_000 - 8 * 28);
    expect(Math.abs(g.firstIndex(g.indexTop(654_321)) - 654_321)).toBeLessThanOrEqual(1);
  });
  it("reveals a row by scrolling the least", () => {
    const g = new Geometry(1000, 280, 28);
    expect(g.reveal(10, 0)).toBe(28);
    expect(g.reveal(3, 200)).toBe(84);
    expect(g.reveal(8, 100)).toBe(100);
  });
  it("keeps the rows in view in place when rows arrive at the top, and follows at the top", () => {
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

describe("the window of rows over cursor pages", () => {
  it("starts from the first page, newest first", () => {
    const w = new DialWindow<string>();
    const p = core(1000)({ from: 0, cursor: undefined, limit: PAGE, skip: 0 });
    w.reset(1000, true, p.rows, p.next);
    expect(w.total).toBe(1000);
    expect(w.rowAt(0)).toBe("h0");
    expect(w.rowAt(199)).toBe("h199");
    expect(w.rowAt(200)).toBeUndefined();
    expect(w.next(0, 40)).toBeNull();
    expect(w.next(190, 230)).toEqual({ from: 200, cursor: "200", limit: PAGE, skip: 0 });
  });
  it("seeks to rows far below in one page, and holds a small cache", () => {
    const w = new DialWindow<string>();
    const answer = core(100_000);
    const p = answer({ from: 0, cursor: undefined, limit: PAGE, skip: 0 });
    w.reset(100_000, true, p.rows, p.next);
    const ask = w.next(50_000, 50_037);
    expect(ask).toEqual({ from: 200, cursor: "200", limit: PAGE, skip: 49_800 });
    expect(settle(w, answer, 50_000, 50_037)).toBe(1);
    for (let i = 50_000; i < 50_037; i++) expect(w.rowAt(i)).toBe(`h${i}`);
    expect(w.cached).toBeLessThanOrEqual(CACHE_ROWS + PAGE);
    // Just below a page read: read on from its cursor, no seek.
    expect(w.next(50_210, 50_247)).toEqual({ from: 50_200, cursor: "50200", limit: PAGE + 10, skip: 0 });
    // Back up: the cursors were kept, so one page reads the rows again.
    expect(settle(w, answer, 10_000, 10_037)).toBe(1);
    for (let i = 10_000; i < 10_037; i++) expect(w.rowAt(i)).toBe(`h${i}`);
  });
  it("places a seek's rows where the core says it got to", () => {
    // The core passes over at most 30 000 rows per seek: the first answer lands short, and the
    // window seeks on from there.
    const w = new DialWindow<string>();
    const answer = core(100_000, 30_000);
    const p = answer({ from: 0, cursor: undefined, limit: PAGE, skip: 0 });
    w.reset(100_000, true, p.rows, p.next);
    expect(settle(w, answer, 70_000, 70_037)).toBe(3);
    for (let i = 70_000; i < 70_037; i++) expect(w.rowAt(i)).toBe(`h${i}`);
    expect(w.rowAt(30_200)).toBe("h30200");
    // A seek past the end: the history ends where the core says, and the count is corrected.
    const short = new DialWindow<string>();
    const five = core(5_000);
    const q = five({ from: 0, cursor: undefined, limit: PAGE, skip: 0 });
    short.reset(9_000, false, q.rows, q.next);
    expect(settle(short, five, 8_000, 8_037)).toBe(1);
    expect(short.history).toBe(5_000);
    expect(short.exact).toBe(true);
  });
  it("asks one seek at a time", () => {
    const w = new DialWindow<string>();
    w.reset(100_000, true, ["h0"], "1");
    const a = w.next(40_000, 40_037)!;
    expect(a).toMatchObject({ from: 1, skip: 39_999 });
    const t = w.begin(a as { from: number; skip: number });
    expect(t).toBe(40_000);
    expect(w.next(60_000, 60_037)).toBeNull();
    w.failed(t);
    expect(w.next(60_000, 60_037)).toMatchObject({ from: 1, skip: 59_999 });
  });
  it("reads the top again with the top cursor, not from the newest rows", () => {
    const w = new DialWindow<string>(10, 5);
    w.reset(100, true, Array.from({ length: 20 }, (_, k) => `h${k}`), "20", "s901");
    w.trim(50, 60);
    expect(w.rowAt(0)).toBeUndefined();
    expect(w.next(0, 5)).toEqual({ from: 0, cursor: "s901", limit: 5, skip: 0 });
  });
  it("prepends live rows without moving the history rows", () => {
    const w = new DialWindow<string>();
    const answer = core(1000);
    const p = answer({ from: 0, cursor: undefined, limit: PAGE, skip: 0 });
    w.reset(1000, true, p.rows, p.next);
    expect(w.prepend(["l0", "l1", "l2"])).toBe(3);
    expect(w.total).toBe(1003);
    expect([w.rowAt(0), w.rowAt(1), w.rowAt(2), w.rowAt(3)]).toEqual(["l2", "l1", "l0", "h0"]);
    // A page read after they arrived still lands on its history rows.
    settle(w, answer, 503, 540);
    expect(w.rowAt(503)).toBe("h500");
    // A selection kept by key follows its row.
    const k = w.keyAt(503);
    w.prepend(["l3"], 2);
    expect(w.indexOfKey(k)).toBe(506);
    expect(w.rowAt(0)).toBe("l3");
    expect(w.rowAt(1)).toBeUndefined(); // skipped by the channel
  });
  it("asks to read from the top again when dropped live rows are wanted", () => {
    const w = new DialWindow<string>(10, 5);
    w.reset(100, true, ["h0", "h1", "h2", "h3", "h4"], "5");
    w.prepend(Array.from({ length: 30 }, (_, k) => `l${k}`));
    w.trim(25, 35); // around the history's top: the newest live rows go
    expect(w.rowAt(0)).toBeUndefined();
    expect(w.next(0, 5)).toEqual({ restart: true });
  });
  it("learns the history's true end from its last page", () => {
    const w = new DialWindow<string>();
    w.reset(5000, false, ["h0", "h1"], "2");
    expect(w.exact).toBe(false);
    const t = w.begin({ from: 2 });
    w.fill(t, ["h2", "h3"], null);
    expect(w.history).toBe(4);
    expect(w.exact).toBe(true);
  });
  it("drops the answer of a page asked before a reset; a failed page can be asked again", () => {
    const w = new DialWindow<string>();
    w.reset(1000, true, [], "0");
    const ask = w.next(0, 10)!;
    expect(ask).toEqual({ from: 0, cursor: "0", limit: PAGE, skip: 0 });
    const t = w.begin(ask as { from: number });
    expect(w.next(0, 10)).toBeNull(); // in flight
    w.reset(3, true, ["a", "b", "c"], null);
    w.fill(t, ["x"], "1");
    expect(w.rowAt(0)).toBe("a");
    const w2 = new DialWindow<string>();
    w2.reset(10, true, [], "0");
    const t2 = w2.begin(w2.next(0, 5) as { from: number });
    w2.failed(t2);
    expect(w2.next(0, 5)).not.toBeNull();
  });
});

describe("streamed batches above the history read", () => {
  type R = { kind: string; seq: number; id: string };
  const row = (seq: number, kind = "dial"): R => ({ kind, seq, id: `s${seq}` });

  it("counts only the left-out rows newer than the history read, below the rows sent", () => {
    const w = new DialWindow<R>();
    // The history read holds seq 1..100 (newest first); a batch straddles it: 91..130 matched,
    // the core sent 121..130 and left out 91..120.
    w.reset(100, true, Array.from({ length: 100 }, (_, k) => row(100 - k)), null);
    const leftOut = Array.from({ length: 30 }, (_, k) => 91 + k);
    const rows = Array.from({ length: 10 }, (_, k) => row(121 + k));
    const added = prependNewer(w, 100, rows, leftOut);
    // 20 left out (101..120) and 10 sent are new; 91..100 were in the history already.
    expect(added).toBe(30);
    expect(w.total).toBe(130);
    // Newest first: the 10 rows sent, then 20 places to read later, then the history.
    expect(w.rowAt(0)?.seq).toBe(130);
    expect(w.rowAt(9)?.seq).toBe(121);
    expect(w.rowAt(10)).toBeUndefined();
    expect(w.rowAt(29)).toBeUndefined();
    expect(w.rowAt(30)?.seq).toBe(100);
    // The places left out are read from the history's top again when they come into view.
    expect(w.next(0, 20)).toEqual({ restart: true });
  });

  it("drops rows and connection events already read, and adds the channel's own drops", () => {
    const w = new DialWindow<R>();
    w.reset(5, true, [row(5), row(4), row(3), row(2), row(1)], null);
    expect(prependNewer(w, 5, [row(4), row(6, "connection"), row(7)], [], 2)).toBe(3);
    expect(w.total).toBe(8);
    expect(w.rowAt(0)?.seq).toBe(7);
    // Everything of a batch at or below the history read counts nothing.
    expect(prependNewer(w, 5, [row(3)], [1, 2])).toBe(0);
    expect(w.total).toBe(8);
  });
});
