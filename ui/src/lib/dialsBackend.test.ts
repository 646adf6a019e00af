import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { LineChecker, lineCheckOf, type LineCheck } from "./dialsBackend";

describe("checking the line as it is typed", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });
  it("waits for a pause in typing and checks only the last line", async () => {
    const asked: string[] = [];
    const seen: [string, LineCheck][] = [];
    const c = new LineChecker(
      async (l) => {
        asked.push(l);
        return { ok: true, canonical: l };
      },
      (l, r) => seen.push([l, r]),
      250,
    );
    for (const l of ["o", "op", "op:", "op:r"]) {
      c.edited(l);
      await vi.advanceTimersByTimeAsync(100);
    }
    expect(asked).toEqual([]);
    expect(c.checking).toBe(true);
    await vi.advanceTimersByTimeAsync(250);
    expect(asked).toEqual(["op:r"]);
    expect(seen).toEqual([["op:r", { ok: true, canonical: "op:r" }]]);
    expect(c.checking).toBe(false);
  });
  it("drops a slow answer for an older line", async () => {
    const seen: string[] = [];
    let release: (() => void) | null = null;
    const c = new LineChecker(
      (l) =>
        l === "slow"
          ? new Promise((res) => (release = () => res({ ok: true, canonical: "slow" })))
          : Promise.resolve({ ok: false, error: { message: "bad", start: 0, end: 1 } }),
      (l) => seen.push(l),
      250,
    );
    const first = c.now("slow");
    await c.now("fast");
    release!();
    await first;
    expect(seen).toEqual(["fast"]);
  });
  it("reports a failed check as an error over the whole line", async () => {
    const seen: LineCheck[] = [];
    const c = new LineChecker(() => Promise.reject({ message: "core gone" }), (_, r) => seen.push(r));
    await c.now("op:x");
    expect(seen).toEqual([{ ok: false, error: { message: "core gone", start: 0, end: 4 } }]);
  });
  it("stop cancels a pending check", async () => {
    const asked: string[] = [];
    const c = new LineChecker(async (l) => (asked.push(l), { ok: true, canonical: l }), () => {});
    c.edited("x");
    c.stop();
    await vi.advanceTimersByTimeAsync(1000);
    expect(asked).toEqual([]);
  });
});

describe("the core parser's answer", () => {
  it("gives the canonical line, or the error with a place at least one character wide", () => {
    expect(lineCheckOf(" op:x ", { canonical: "op:x", error: null, terms: 1 })).toEqual({ ok: true, canonical: "op:x" });
    const e = { start: 3, end: 3, column: 4, byte_start: 3, byte_end: 3, message: "expected a value", expected: [] };
    expect(lineCheckOf("op:", { canonical: null, error: e, terms: 0 })).toEqual({ ok: false, error: { message: "expected a value", start: 3, end: 4 } });
  });
});
