import { describe, expect, it } from "vitest";
import {
  clearNotice,
  compactDuration,
  errorMessage,
  exportNotice,
  formatCount,
  formatDuration,
  formatRate,
  formatTime,
  matchHeader,
  connectionLabel,
  timelineNoun,
  moveSelection,
  noResponseWords,
  OUTCOME_CHOICES,
  outcomeLabel,
  pageRows,
  phoneName,
  phoneTitle,
  resumeLabel,
  slowMark,
  specMark,
} from "./dials";


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

describe("paging", () => {
  it("pages by a screenful less one row, at least one", () => {
    expect(pageRows(560, 28)).toBe(19);
    expect(pageRows(28, 28)).toBe(1);
    expect(pageRows(0, 28)).toBe(1);
    expect(pageRows(10, 28)).toBe(1);
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
    expect(clearNotice("all", 12_345)).toBe("Cleared the view and deleted 12 345 stored dials and every stored connection event.");
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
    expect(slowMark({ duration_ms: 1001, outcome: "ok" })).toEqual({ icon: "◔", text: "slow" });
    expect(specMark({ spec_findings: 0 })).toBeNull();
    expect(specMark({ spec_findings: 1 })?.title).toBe("1 problem with phone-line.md: inspect the dial to see them");
    expect(specMark({ spec_findings: 4 })?.text).toBe("not to spec");
    expect(slowMark({ duration_ms: 1000, outcome: "ok" })).toBeNull();
    expect(slowMark({ duration_ms: 15_000, outcome: "timed_out" })).toBeNull();
  });
});

describe("header and connection rows", () => {
  it("says how many dials match and how far back history goes", () => {
    expect(matchHeader(0, false, null)).toBe("0 dials");
    expect(matchHeader(1, true, null)).toBe("1 dial matches");
    expect(matchHeader(100_000, true, null)).toBe("100 000 dials match");
    const t = new Date(2025, 9, 9, 14, 3, 7).getTime();
    expect(matchHeader(27, false, t)).toBe("27 dials · history back to 2025-10-09 14:03");
  });
  it("names connection events in words", () => {
    expect(connectionLabel("connected").text).toBe("Connected");
    expect(connectionLabel("disconnected").text).toBe("Disconnected");
    expect(connectionLabel("pairing_pending").text).toContain("Pairing");
  });
  it("names what the rows of a line are", () => {
    expect(timelineNoun("")).toBe("rows");
    expect(timelineNoun('phone:"Demo phone" after:-1h')).toBe("rows");
    expect(timelineNoun("kind:dial")).toBe("dials");
    expect(timelineNoun("-kind:connection")).toBe("dials");
    expect(timelineNoun("kind:connection")).toBe("connections");
    expect(timelineNoun("op:read_item")).toBe("dials");
    expect(timelineNoun("word")).toBe("dials");
    expect(matchHeader(31, false, null, true, "rows")).toBe("31 rows (dials and connection events)");
    expect(matchHeader(2, true, null, true, "connections")).toBe("2 connection events match");
  });
  it("says when the count is an estimate", () => {
    expect(matchHeader(5000, true, null, false)).toBe("about 5 000 dials match");
  });
});
