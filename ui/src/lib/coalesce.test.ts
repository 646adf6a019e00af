import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { coalesce } from "./coalesce";

describe("coalescing reloads", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });
  it("runs at once, then once more for a whole burst, and reads the last state", async () => {
    let state = 0;
    const seen: number[] = [];
    const reload = coalesce(async () => {
      seen.push(state);
    }, 250);
    state = 1;
    reload();
    await vi.advanceTimersByTimeAsync(0);
    expect(seen).toEqual([1]);
    for (let i = 2; i <= 500; i++) {
      state = i;
      reload();
    }
    await vi.advanceTimersByTimeAsync(100);
    expect(seen).toEqual([1]); // not before the gap
    await vi.advanceTimersByTimeAsync(200);
    expect(seen).toEqual([1, 500]);
    await vi.advanceTimersByTimeAsync(1000);
    expect(seen).toEqual([1, 500]); // nothing asked since
    state = 501;
    reload();
    await vi.advanceTimersByTimeAsync(0);
    expect(seen).toEqual([1, 500, 501]);
  });
  it("goes on after a failed run", async () => {
    let n = 0;
    const reload = coalesce(async () => {
      n++;
      if (n === 1) throw new Error("ipc down");
    }, 50);
    reload();
    reload();
    await vi.advanceTimersByTimeAsync(60);
    expect(n).toBe(2);
  });
});
