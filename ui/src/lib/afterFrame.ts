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
