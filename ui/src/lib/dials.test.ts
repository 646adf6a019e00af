import { describe, expect, it } from "vitest";
import type { DialRow } from "../bindings/DialRow";
import {
  atBottom,
  clearNotice,
  compactDuration,
  DialFeed,
  emptyForm,
  errorMessage,
  exportNotice,
  filterFromForm,
  formatCount,
  formatDuration,
  formatRate,
  formatTime,
  isFiltered,
  liveCapFor,
  MAX_VIEW_ROWS,
  moveSelection,
  noResponseWords,
  OUTCOME_CHOICES,
  outcomeLabel,
  pageRows,
  phoneName,
  phoneTitle,
  resumeLabel,
  rowMarks,
  specMark,
  scrollToReveal,
  shiftSelection,
  virtualWindow,
} from "./dials";

function row(i: number, over: Partial<DialRow> = {}): DialRow {
  return {
    seq: i,
    id: `d${i}`,
    session: "",
    phone: "dev_a",
    call_id: `c${i}`,
    caller: "lumiagent",
    callee: "lumirealm",
    endpoint: "lumirealm.phoneline",
    op: "read_item",
    start_ms: 1_760_000_000_000 + i,
    duration_ms: 10,
    outcome: "ok",
    slow: false,
    has_error: false,
    spec_findings: 0,
    ...over,
  };
}
const rows = (from: number, n: number) => Array.from({ length: n }, (_, k) => row(from + k));

describe("virtual window", () => {
  it("renders only the visible rows plus overscan at 100 000 rows", () => {
    // 560 px of 28 px rows = 20 visible (+1 partial), 8 overscan each side.
    const w = virtualWindow(28 * 50_000, 560, 100_000, 28, 8);
    expect(w).toEqual({ start: 49_992, end: 50_029, offset: 49_992 * 28 });
    expect(w.end - w.start).toBeLessThan(40);
  });
  it("clamps at the top, the bottom and on empty", () => {
    expect(virtualWindow(0, 560, 100_000, 28, 8)).toEqual({ start: 0, end: 29, offset: 0 });
    const end = virtualWindow(28 * 100_000, 560, 100_000, 28, 8);
    expect(end.end).toBe(100_000);
    expect(end.start).toBe(99_991);
    expect(virtualWindow(-50, 560, 5, 28, 8)).toEqual({ start: 0, end: 5, offset: 0 });
    expect(virtualWindow(0, 560, 0)).toEqual({ start: 0, end: 0, offset: 0 });
  });
  it("reveals a row by scrolling the least", () => {
    expect(scrollToReveal(10, 0, 280, 28)).toBe(28); // row 10 spans 280..308: scroll by one row
    expect(scrollToReveal(10, 0, 300, 28)).toBe(8);
    expect(scrollToReveal(3, 200, 280, 28)).toBe(84);
    expect(scrollToReveal(8, 100, 280, 28)).toBe(100);
  });
  it("knows when the view follows the newest rows", () => {
    expect(atBottom(28 * 100 - 560, 560, 100, 28)).toBe(true);
    expect(atBottom(28 * 100 - 560 - 20, 560, 100, 28)).toBe(true);
    expect(atBottom(0, 560, 100, 28)).toBe(false);
  });
});

describe("keyboard selection", () => {
  it("moves by one, by a page and to the ends, clamped", () => {
    expect(moveSelection(5, "ArrowDown", 10, 4)).toBe(6);
    expect(moveSelection(9, "ArrowDown", 10, 4)).toBe(9);
    expect(moveSelection(0, "ArrowUp", 10, 4)).toBe(0);
    expect(moveSelection(5, "PageDown", 10, 4)).toBe(9);
    expect(moveSelection(5, "PageUp", 10, 4)).toBe(1);
    expect(moveSelection(5, "Home", 10, 4)).toBe(0);
    expect(moveSelection(5, "End", 10, 4)).toBe(9);
    expect(moveSelection(5, "Enter", 10, 4)).toBeNull();
  });
  it("starts at the newest row going up and the oldest going down", () => {
    expect(moveSelection(null, "ArrowUp", 10, 4)).toBe(9);
    expect(moveSelection(null, "ArrowDown", 10, 4)).toBe(0);
    expect(moveSelection(null, "ArrowDown", 0, 4)).toBeNull();
  });
});

describe("paging and trimming", () => {
  it("pages by a screenful less one row, at least one", () => {
    expect(pageRows(560, 28)).toBe(19);
    expect(pageRows(28, 28)).toBe(1);
    expect(pageRows(0, 28)).toBe(1);
    expect(pageRows(10, 28)).toBe(1);
  });
  it("moves the selection up with its row as the oldest rows go", () => {
    expect(shiftSelection(50, 11)).toBe(39);
    expect(shiftSelection(11, 11)).toBe(0);
    expect(shiftSelection(10, 11)).toBeNull();
    expect(shiftSelection(5, 0)).toBe(5);
    expect(shiftSelection(null, 11)).toBeNull();
  });
  it("holds no more live rows than the log, within bounds", () => {
    expect(liveCapFor(50_000)).toBe(50_000);
    expect(liveCapFor(10)).toBe(1000);
    expect(liveCapFor(10_000_000)).toBe(MAX_VIEW_ROWS);
  });
});

describe("live feed", () => {
  it("starts from the snapshot and appends batches in order", () => {
    const f = new DialFeed();
    expect(f.apply({ kind: "snapshot", id: 3, rows: rows(0, 3), total: 3 })).toEqual({ appended: 3, removed: 0 });
    expect(f.subscription).toBe(3);
    const before = f.rows;
    expect(f.apply({ kind: "batch", rows: rows(3, 2), merged: 0, skipped: 0 })).toEqual({ appended: 2, removed: 0 });
    expect(f.rows).toBe(before); // the same array, appended in place
    expect(f.rows.map((r) => r.id)).toEqual(["d0", "d1", "d2", "d3", "d4"]);
  });
  it("adds up merged and skipped counts from the host", () => {
    const f = new DialFeed();
    f.apply({ kind: "snapshot", id: 1, rows: [], total: 0 });
    f.apply({ kind: "batch", rows: rows(0, 5), merged: 3, skipped: 0 });
    f.apply({ kind: "batch", rows: rows(5, 5), merged: 4, skipped: 2 });
    expect([f.merged, f.skipped, f.batches, f.rows.length]).toEqual([7, 2, 2, 10]);
    // A new snapshot (new filter) starts the counts again.
    f.apply({ kind: "snapshot", id: 2, rows: rows(0, 1), total: 1 });
    expect([f.merged, f.skipped, f.batches, f.rows.length]).toEqual([0, 0, 0, 1]);
  });
  it("holds batches while paused and appends them on resume", () => {
    const f = new DialFeed();
    f.apply({ kind: "snapshot", id: 1, rows: rows(0, 2), total: 2 });
    f.pause();
    expect(f.apply({ kind: "batch", rows: rows(2, 3), merged: 0, skipped: 0 })).toEqual({ appended: 0, removed: 0 });
    f.apply({ kind: "batch", rows: rows(5, 1), merged: 0, skipped: 0 });
    expect(f.rows.length).toBe(2);
    expect(f.waiting.length).toBe(4);
    expect(f.resume()).toEqual({ appended: 4, removed: 0 });
    expect(f.rows.map((r) => r.id)).toEqual(["d0", "d1", "d2", "d3", "d4", "d5"]);
    expect(f.waiting.length).toBe(0);
    expect(f.paused).toBe(false);
  });
  it("bounds the waiting list and counts what it drops", () => {
    const f = new DialFeed(1000, 5);
    f.apply({ kind: "snapshot", id: 1, rows: [], total: 0 });
    f.pause();
    f.apply({ kind: "batch", rows: rows(0, 8), merged: 0, skipped: 0 });
    expect(f.waiting.map((r) => r.id)).toEqual(["d3", "d4", "d5", "d6", "d7"]);
    expect(f.droppedWhilePaused).toBe(3);
  });
  it("drops the oldest rows beyond the cap, in chunks", () => {
    const f = new DialFeed(1000, 10);
    f.apply({ kind: "snapshot", id: 1, rows: rows(0, 1500), total: 1500 });
    expect(f.rows.length).toBe(1000);
    expect(f.rows[0].id).toBe("d500");
    const c = f.apply({ kind: "batch", rows: rows(1500, 1), merged: 0, skipped: 0 });
    expect(c).toEqual({ appended: 1, removed: 11 });
    expect(f.rows.length).toBe(990);
    expect(f.rows[0].id).toBe("d511");
    expect(f.rows[f.rows.length - 1].id).toBe("d1500");
    // Under the cap again: the next batches just append.
    expect(f.apply({ kind: "batch", rows: rows(1501, 5), merged: 0, skipped: 0 })).toEqual({ appended: 5, removed: 0 });
  });
});

describe("filters", () => {
  it("leaves empty fields out and trims the rest", () => {
    expect(filterFromForm(emptyForm())).toEqual({});
    const names = { dev_a1b2c3d4: "Demo phone", dev_ffff0000: "Pixel" };
    expect(filterFromForm({ ...emptyForm(), phone: " demo PHONE " }, names)).toEqual({ phone: "dev_a1b2c3d4" });
    expect(filterFromForm({ ...emptyForm(), phone: "dev_ffff0000" }, names)).toEqual({ phone: "dev_ffff0000" });
    expect(filterFromForm({ ...emptyForm(), phone: "Pix" }, names)).toEqual({ phone: "Pix" });
    expect(isFiltered(filterFromForm(emptyForm()))).toBe(false);
    const f = filterFromForm({ ...emptyForm(), op: " read_item ", outcome: "error", slowOnly: true, timedOutOnly: true, text: "item_7" });
    expect(f).toEqual({ op: "read_item", outcome: "error", slow: true, timed_out: true, text: "item_7" });
    expect(filterFromForm({ ...emptyForm(), notToSpecOnly: true })).toEqual({ to_spec: false });
    expect(isFiltered(filterFromForm({ ...emptyForm(), notToSpecOnly: true }))).toBe(true);
    expect(isFiltered(f)).toBe(true);
  });
});

describe("outcome menu", () => {
  it("offers any outcome first, then each outcome in words", () => {
    expect(OUTCOME_CHOICES.map(([v]) => v)).toEqual(["", "ok", "tool_error", "error", "timed_out"]);
    expect(OUTCOME_CHOICES[0][1]).toBe("Any outcome");
    for (const [v, label] of OUTCOME_CHOICES) if (v) expect(label).toBe(outcomeLabel(v).text);
  });
});

describe("words", () => {
  it("says why a dial has no response", () => {
    expect(noResponseWords({ outcome: "timed_out" })).toBe("No response: the caller gave up waiting after 15 s.");
    expect(noResponseWords({ outcome: "timed_out", error: "deadline" })).toBe("No response: the caller gave up waiting after 15 s (the error is above).");
    expect(noResponseWords({ outcome: "error", error: "boom" })).toBe("No response: the dial failed (the error is above).");
    expect(noResponseWords({ outcome: "tool_error" })).toBe("No response body: the handler answered with a tool error.");
    expect(noResponseWords({ outcome: "ok" })).toBe("No response recorded.");
  });
  it("names phones by the name they were paired under, else by device id", () => {
    const names = { dev_a1b2c3d4: "Demo phone" };
    expect(phoneName(names, "dev_a1b2c3d4")).toBe("Demo phone");
    expect(phoneName(names, "dev_ffff0000")).toBe("dev_ffff0000");
    expect(phoneTitle(names, "dev_a1b2c3d4")).toBe("Demo phone (dev_a1b2c3d4)");
    expect(phoneTitle(names, "dev_ffff0000")).toBe("dev_ffff0000");
    expect(phoneName({ dev_x: "" }, "dev_x")).toBe("dev_x");
  });
  it("words the pause button, the export and the clear", () => {
    expect(resumeLabel(0)).toBe("Resume");
    expect(resumeLabel(1200)).toBe("Resume (1 200 waiting)");
    expect(exportNotice({ path: "/tmp/export/dials.jsonl", lines: 1200 })).toBe("Wrote 1 200 dials to /tmp/export/dials.jsonl");
    expect(clearNotice("all", 12_345)).toBe("Cleared the view and deleted 12 345 stored dials.");
    expect(clearNotice("memory", 0)).toBe("Cleared the view. Stored history is kept and comes back at the next start.");
  });
  it("reads the host's error message", () => {
    expect(errorMessage({ kind: "io", message: "no such file" })).toBe("no such file");
  });
});

describe("formatting", () => {
  it("formats durations for people", () => {
    expect(formatDuration(0)).toBe("0 ms");
    expect(formatDuration(840)).toBe("840 ms");
    expect(formatDuration(1240)).toBe("1.24 s");
    expect(formatDuration(15_000)).toBe("15.0 s");
    expect(formatDuration(125_000)).toBe("2 min 05 s");
    expect(formatDuration(-1)).toBe("—");
    expect([compactDuration(226), compactDuration(4224), compactDuration(15_000), compactDuration(125_000)]).toEqual(["226ms", "4.22s", "15.0s", "125s"]);
  });
  it("formats times with milliseconds in the local zone", () => {
    const t = new Date(2025, 9, 9, 14, 3, 7, 42).getTime();
    expect(formatTime(t)).toBe("14:03:07.042");
    expect(formatTime(NaN)).toBe("—");
  });
  it("formats rates and counts", () => {
    expect(formatRate(0)).toBe("0 %");
    expect(formatRate(1 / 3)).toBe("33.3 %");
    expect(formatRate(1)).toBe("100 %");
    expect(formatCount(100_000)).toBe("100 000");
    expect(formatCount(999)).toBe("999");
  });
  it("marks slow and timed-out dials with words, not colour alone", () => {
    expect(outcomeLabel("timed_out").text).toBe("timed out");
    expect(rowMarks({ duration_ms: 1001, outcome: "ok" })).toEqual([{ icon: "◔", text: "slow" }]);
    expect(specMark({ spec_findings: 0 })).toBeNull();
    expect(specMark({ spec_findings: 1 })?.title).toBe("1 problem with phone-line.md: inspect the dial to see them");
    expect(specMark({ spec_findings: 4 })?.text).toBe("not to spec");
    expect(rowMarks({ duration_ms: 1000, outcome: "ok" })).toEqual([]);
    expect(rowMarks({ duration_ms: 15_000, outcome: "timed_out" })).toEqual([]);
  });
});
