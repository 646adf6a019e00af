// @vitest-environment jsdom
import { afterEach, describe, expect, it, vi } from "vitest";
import { RowPainter, probeArrival } from "./rowPainter";
import type { HistoryRow } from "../bindings/HistoryRow";

function dial(seq: number, extra: Partial<Record<string, unknown>> = {}): HistoryRow {
  return {
    kind: "dial", seq, id: `d${seq}`, phone: "dev_a", call_id: `c${seq}`, session: "ses_1",
    caller: "lumiagent", callee: "lumirealm", endpoint: "lumirealm.phoneline", op: "read_item",
    start_ms: Date.UTC(2026, 11, 2, 12, 0, 0, seq), duration_ms: 12, outcome: "ok", slow: false,
    has_error: false, spec_findings: 0, ...extra,
  } as HistoryRow;
}

const ctx = { start: 0, selected: null, phoneNames: { dev_a: "Demo phone" } };

describe("RowPainter", () => {
  it("gives each row the table's markup: role, id, aria, classes, cells and their titles", () => {
    const root = document.createElement("div");
    new RowPainter(root).paint([dial(2, { spec_findings: 2, duration_ms: 1500 }), undefined], { ...ctx, start: 10, selected: 10 });
    const [r, p] = Array.from(root.children) as HTMLElement[];
    expect(r.getAttribute("role")).toBe("row");
    expect(r.id).toBe("dial-row-10");
    expect(r.getAttribute("aria-rowindex")).toBe("12");
    expect(r.getAttribute("aria-selected")).toBe("true");
    expect(r.className).toBe("row selected");
    expect(r.getAttribute("tabindex")).toBe("-1");
    const cells = Array.from(r.children) as HTMLElement[];
    expect(cells.map((c) => c.getAttribute("role"))).toEqual(Array(6).fill("gridcell"));
    expect(cells[1].textContent).toBe("Demo phone");
    expect(cells[1].title).toBe("Demo phone (dev_a)");
    expect(cells[2].textContent).toBe("lumiagent → lumirealm");
    // Caller and callee apart, so a narrow column can cut the caller before the callee.
    expect(cells[2].querySelector(".caller")?.textContent).toBe("lumiagent");
    expect(cells[2].querySelector(".callee")?.textContent).toBe("lumirealm");
    expect(cells[2].title).toBe("lumiagent → lumirealm.phoneline");
    expect(cells[3].querySelector(".mark.spec")?.getAttribute("aria-label")).toMatch(/^2 problems with phone-line.md/);
    expect(cells[3].textContent).toBe("⚑read_item");
    expect(cells[4].textContent).toBe("1.50 s ◔ slow");
    expect(cells[5].className).toBe("outcome ok");
    expect(cells[5].textContent).toBe("✓ ok");
    expect(p.className).toBe("row placeholder");
    expect(p.getAttribute("aria-busy")).toBe("true");
    expect(p.textContent).toBe("…");
    expect(RowPainter.indexOf(cells[3].querySelector("span"))).toBe(10);
    expect(RowPainter.indexOf(p)).toBe(11);
  });

  it("keeps its elements and sets only what changed when rows move down a slot", () => {
    const root = document.createElement("div");
    const painter = new RowPainter(root);
    painter.paint([dial(3), dial(2), dial(1)], ctx);
    const before = Array.from(root.children);
    const phoneCell = (root.children[1] as HTMLElement).children[1];
    const phoneText = phoneCell.firstChild;
    painter.paint([dial(4, { outcome: "error" }), dial(3), dial(2)], ctx);
    expect(Array.from(root.children)).toEqual(before);
    // The same phone in the slot: its text node was not replaced.
    expect(phoneCell.firstChild).toBe(phoneText);
    expect((root.children[0] as HTMLElement).className).toBe("row bad");
    expect((root.children[0] as HTMLElement).children[5].textContent).toBe("✗ error");
    expect((root.children[1] as HTMLElement).children[0].textContent).toBe(
      (() => { const d = new Date(Date.UTC(2026, 11, 2, 12, 0, 0, 3)); return `${String(d.getHours()).padStart(2, "0")}:${String(d.getMinutes()).padStart(2, "0")}:00.003`; })(),
    );
    painter.paint([dial(4)], ctx);
    expect(root.children.length).toBe(1);
  });

  it("changes the characters of the cells' text nodes in place instead of replacing them", () => {
    const root = document.createElement("div");
    const painter = new RowPainter(root);
    painter.paint([dial(1)], ctx);
    const cells = () => Array.from((root.children[0] as HTMLElement).children);
    const nodes = cells().map((c) => Array.from(c.childNodes));
    painter.paint([dial(2, { op: "list_items", duration_ms: 40, caller: "lumirealm" })], ctx);
    const after = cells();
    // Time, caller → callee, op and duration changed; each cell still holds the same nodes.
    for (const k of [0, 2, 3, 4]) expect(Array.from(after[k].childNodes)).toEqual(nodes[k]);
    expect(after[2].textContent).toBe("lumirealm → lumirealm");
    expect(after[3].textContent).toBe("list_items");
    expect(after[4].textContent).toBe("40 ms");
    // A mark coming in rebuilds only its cell, and the text is right either way.
    painter.paint([dial(3, { spec_findings: 1, duration_ms: 2500 })], ctx);
    expect(cells()[3].textContent).toBe("⚑read_item");
    expect(cells()[4].textContent).toBe("2.50 s ◔ slow");
    painter.paint([dial(4, { op: "describe" })], ctx);
    expect(cells()[3].textContent).toBe("describe");
    expect(cells()[3].childNodes.length).toBe(1);
    expect(cells()[4].textContent).toBe("12 ms");
  });

  it("reshapes a slot whose row turns from a dial into a connection event", () => {
    const root = document.createElement("div");
    const painter = new RowPainter(root);
    painter.paint([dial(1)], ctx);
    const conn = { kind: "connection", seq: 2, phone: "dev_a", label: "", at_ms: 0, event: "disconnected", detail: "the phone closed the connection" } as HistoryRow;
    painter.paint([conn], { ...ctx, selected: 0 });
    const r = root.children[0] as HTMLElement;
    expect(r.className).toBe("row connection disconnected selected");
    expect(r.children.length).toBe(3);
    expect(r.children[1].textContent).toBe("Demo phone");
    expect(r.children[2].querySelector("strong")?.textContent).toBe("Disconnected");
    expect(r.children[2].textContent).toBe("⨯ Disconnected — the phone closed the connection");
  });

  it("does nothing for a row shown again in its place, and repaints it when anything it shows changed", () => {
    const root = document.createElement("div");
    const painter = new RowPainter(root);
    // Rows that count how often the painter reads them.
    let reads = 0;
    const spy = (r: HistoryRow) => new Proxy(r, { get: (t, k, rcv) => { reads++; return Reflect.get(t, k, rcv); } });
    const rows = [spy(dial(2)), spy(dial(1))];
    painter.paint(rows, ctx);
    expect(reads).toBeGreaterThan(0);
    const seen = new MutationObserver(() => {});
    seen.observe(root, { subtree: true, attributes: true, characterData: true, childList: true });
    const writes = () => seen.takeRecords().map((x) => `${x.type} ${x.attributeName ?? ""}`.trim()).sort();
    // The table scrolled down while live dials arrive: the same row objects in the same places
    // are not read again, and nothing is written.
    reads = 0;
    painter.paint(rows, ctx);
    expect(reads).toBe(0);
    expect(writes()).toEqual([]);
    // Selected now: the row is painted again; only its class and aria-selected change.
    painter.paint(rows, { ...ctx, selected: 1 });
    expect(reads).toBeGreaterThan(0);
    expect(writes()).toEqual(["attributes aria-selected", "attributes class"]);
    expect((root.children[1] as HTMLElement).className).toBe("row selected");
    // The phone got a name: a new names object repaints the phone cells.
    const named = { ...ctx, selected: 1, phoneNames: { dev_a: "Work phone" } };
    painter.paint(rows, named);
    expect((root.children[0] as HTMLElement).children[1].textContent).toBe("Work phone");
    expect(writes().length).toBeGreaterThan(0);
    // An equal row that is another object (a page read again) is read, and compared cell by
    // cell: nothing to write.
    reads = 0;
    painter.paint([spy(dial(2)), spy(dial(1))], named);
    expect(reads).toBeGreaterThan(0);
    expect(writes()).toEqual([]);
    // Moved to another display index: its id and indexes follow.
    painter.paint(rows, { ...ctx, start: 5, selected: null });
    expect(root.children[0].id).toBe("dial-row-5");
    expect(root.children[0].getAttribute("aria-rowindex")).toBe("7");
  });

  describe("the dial-to-pixel probe", () => {
    afterEach(() => {
      vi.unstubAllGlobals();
    });

    it("records each dial once, with the DOM time and the time after the next frame", async () => {
      const frames: FrameRequestCallback[] = [];
      vi.stubGlobal("requestAnimationFrame", (cb: FrameRequestCallback) => frames.push(cb));
      const probe = { seen: new Set<string>(), out: [] as number[][] };
      vi.stubGlobal("__dialToPixel", probe);
      const tasks = () => new Promise((r) => setTimeout(r, 20));
      const root = document.createElement("div");
      const painter = new RowPainter(root);
      const conn = { kind: "connection", seq: 9, phone: "dev_a", label: "", at_ms: 5, event: "connected", detail: "" } as HistoryRow;
      painter.paint([dial(2), conn, dial(1)], ctx);
      await tasks();
      expect(probe.out).toEqual([]); // not before the frame
      const before = Date.now();
      frames.shift()?.(0);
      await tasks();
      expect(probe.out.map((o) => o[0])).toEqual([dial(2), dial(1)].map((d) => (d as { start_ms: number }).start_ms));
      for (const [, dom, painted] of probe.out) {
        expect(dom).toBeLessThanOrEqual(before);
        expect(painted).toBeGreaterThanOrEqual(before);
      }
      // A newer dial pushes the others down: only it is new.
      painter.paint([dial(3), dial(2), dial(1)], ctx);
      frames.shift()?.(0);
      await tasks();
      expect(probe.out.length).toBe(3);
      expect(probe.out[2][0]).toBe((dial(3) as { start_ms: number }).start_ms);
      expect(frames.length).toBe(0);
    });

    it("stamps each dial with its batch's arrival in the page, and records each batch", async () => {
      const frames: FrameRequestCallback[] = [];
      vi.stubGlobal("requestAnimationFrame", (cb: FrameRequestCallback) => frames.push(cb));
      const probe = { seen: new Set<string>(), out: [] as number[][], arrived: new Map<string, number>(), batches: [] as number[][] };
      vi.stubGlobal("__dialToPixel", probe);
      const d1 = dial(1) as HistoryRow & { id: string; start_ms: number };
      const d2 = dial(2) as HistoryRow & { id: string; start_ms: number };
      const before = Date.now();
      probeArrival([d1, d2], 7, 1);
      const after = Date.now();
      expect(probe.batches.length).toBe(1);
      const [at, rows, leftOut, skipped, newest] = probe.batches[0];
      expect([rows, leftOut, skipped, newest]).toEqual([2, 7, 1, d2.start_ms]);
      expect(at).toBeGreaterThanOrEqual(before);
      expect(at).toBeLessThanOrEqual(after);
      // Painted later: the arrival rides with the dial's record, and is forgotten then.
      new RowPainter(document.createElement("div")).paint([d2, d1], ctx);
      frames.shift()?.(0);
      await new Promise((r) => setTimeout(r, 20));
      expect(probe.out.map((o) => [o[0], o[3]])).toEqual([[d2.start_ms, at], [d1.start_ms, at]]);
      expect(probe.arrived.size).toBe(0);
    });

    it("records no arrival without the harness, nor without its arrival fields", () => {
      const d = dial(1) as HistoryRow & { id: string; start_ms: number };
      expect(() => probeArrival([d], 0, 0)).not.toThrow();
      const probe = { seen: new Set<string>(), out: [] as number[][] };
      vi.stubGlobal("__dialToPixel", probe);
      probeArrival([d], 0, 0);
      expect(probe).toEqual({ seen: new Set<string>(), out: [] });
    });

    it("asks for no frame when the harness has not set it", () => {
      const raf = vi.fn();
      vi.stubGlobal("requestAnimationFrame", raf);
      new RowPainter(document.createElement("div")).paint([dial(1)], ctx);
      expect(raf).not.toHaveBeenCalled();
    });
  });
});
