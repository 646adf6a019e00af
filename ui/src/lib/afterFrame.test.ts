import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FrameGate, afterFrame } from "./afterFrame";

// A hand-driven animation frame: `frame()` runs the callbacks asked for so far, as the browser
// does at a frame.
let callbacks = new Map<number, FrameRequestCallback>();
let nextId = 1;
function frame() {
  const now = callbacks;
  callbacks = new Map();
  for (const cb of now.values()) cb(0);
}
/** Lets the tasks queued so far run (a message is delivered in a task of its own). */
const tasks = () => new Promise((r) => setTimeout(r, 20));

describe("afterFrame", () => {
  beforeEach(() => {
    callbacks = new Map();
    vi.stubGlobal("requestAnimationFrame", (cb: FrameRequestCallback) => {
      callbacks.set(nextId, cb);
      return nextId++;
    });
    vi.stubGlobal("cancelAnimationFrame", (id: number) => callbacks.delete(id));
  });
  afterEach(() => {
    vi.unstubAllGlobals();
  });

  it("runs once, in a task after the frame, not before it nor inside its callback", async () => {
    const seen: string[] = [];
    afterFrame(() => seen.push("run"));
    await tasks();
    expect(seen).toEqual([]); // no frame yet
    frame();
    seen.push("frame done");
    expect(seen).toEqual(["frame done"]); // not inside the frame's callback
    await tasks();
    expect(seen).toEqual(["frame done", "run"]);
    frame();
    await tasks();
    expect(seen).toEqual(["frame done", "run"]); // once
  });

  it("cancelled before the frame or between the frame and the task, it does not run", async () => {
    let n = 0;
    const early = afterFrame(() => n++);
    early();
    expect(callbacks.size).toBe(0);
    const late = afterFrame(() => n++);
    frame();
    late();
    await tasks();
    frame();
    await tasks();
    expect(n).toBe(0);
    // Cancelling after it ran changes nothing.
    const ran = afterFrame(() => n++);
    frame();
    await tasks();
    ran();
    expect(n).toBe(1);
  });
});

describe("FrameGate", () => {
  beforeEach(() => {
    callbacks = new Map();
    vi.stubGlobal("requestAnimationFrame", (cb: FrameRequestCallback) => {
      callbacks.set(nextId, cb);
      return nextId++;
    });
    vi.stubGlobal("cancelAnimationFrame", (id: number) => callbacks.delete(id));
  });
  afterEach(() => {
    vi.unstubAllGlobals();
  });

  it("applies at once after a quiet spell, and once after the next frame for requests close behind", async () => {
    let clock = 1000;
    let n = 0;
    const gate = new FrameGate(() => n++, 17, () => clock);
    gate.request();
    expect(n).toBe(1); // quiet before: at once, no frame asked
    expect(callbacks.size).toBe(0);
    clock += 5;
    gate.request();
    gate.request();
    expect(n).toBe(1); // 5 ms after the last: waits for the frame
    frame();
    await tasks();
    expect(n).toBe(2); // both requests in one apply
    clock += 40;
    gate.request();
    expect(n).toBe(3); // quiet again: at once
  });

  it("cancelled, a waiting apply does not run", async () => {
    let clock = 0;
    let n = 0;
    const gate = new FrameGate(() => n++, 17, () => clock);
    gate.request();
    clock += 1;
    gate.request();
    gate.cancel();
    frame();
    await tasks();
    expect(n).toBe(1);
  });
});
