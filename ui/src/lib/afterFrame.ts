// Applying a change to the page just after a frame rather than inside it (unit-tested in
// afterFrame.test.ts). A batch of live dials changes every row in view; applied in a
// `requestAnimationFrame` callback, its scripts (the table's effects and `RowPainter`, 4-6 ms in
// the interpreter) and WebKit's style, layout and paint of the new rows all fall in one frame,
// and that frame ran past 20 ms. Applied in a task posted from the frame's callback, the task
// runs once that frame is rendered, in the time left before the next, and the next frame only
// renders it (the measurements: docs/desktop-dials.md, "Session 16").

/** Runs `fn` once, in a task of its own after the next animation frame (a message posted from
 * that frame's callback, so it runs after the frame is rendered). Returns a function that
 * cancels it if it has not run yet. */
export function afterFrame(fn: () => void): () => void {
  let cancelled = false;
  let channel: MessageChannel | null = null;
  const id = requestAnimationFrame(() => {
    if (cancelled) return;
    channel = new MessageChannel();
    channel.port1.onmessage = () => {
      channel?.port1.close();
      channel = null;
      if (!cancelled) fn();
    };
    channel.port2.postMessage(0);
  });
  return () => {
    cancelled = true;
    cancelAnimationFrame(id);
    channel?.port1.close();
    channel = null;
  };
}

/**
 * Applies changes at most about once a frame, without waiting for a frame when none is due:
 * `request()` after a quiet spell (nothing applied for `quietMs`) applies at once, in the
 * caller's own task (a channel message's: the next frame shows it); a request within
 * `quietMs` of the last apply waits for a task after the next frame (`afterFrame`), where
 * every request made meanwhile is applied once.
 *
 * Why: a live batch that waited for the next frame before it was applied waited up to a
 * frame (16.7 ms) and then a second one to be painted; batches come a few times a second,
 * so the wait bought nothing but coalescing, which only bursts need.
 */
export class FrameGate {
  #pending: (() => void) | null = null;
  #last = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly apply: () => void,
    readonly quietMs = 17,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Asks for an apply: now, or after the next frame (see the class). */
  request(): void {
    if (this.#pending) return;
    if (this.now() - this.#last >= this.quietMs) {
      this.#run();
      return;
    }
    this.#pending = afterFrame(() => this.#run());
  }

  /** Drops an apply waiting for its frame. */
  cancel(): void {
    this.#pending?.();
    this.#pending = null;
  }

  #run() {
    this.#pending = null;
    this.#last = this.now();
    this.apply();
  }
}
