// Coalescing a reload that events ask for faster than it is worth doing (unit-tested in
// coalesce.test.ts): a burst of banner notices (hundreds a second while a phone streams failing
// dials) becomes one reload now and at most one more every `gapMs`, each reading the state at
// its time, so the last state is always read and the window's IPC is not flooded.

/** A function that runs `run` at once when idle, and otherwise once more after the current run
 * and at least `gapMs` after it started, however often it was called meanwhile. */
export function coalesce(run: () => Promise<void>, gapMs: number): () => void {
  let busy = false;
  let again = false;
  const go = async () => {
    busy = true;
    const started = Date.now();
    try {
      await run();
    } catch {
      // The caller's `run` reports its own errors.
    }
    const wait = Math.max(0, gapMs - (Date.now() - started));
    setTimeout(() => {
      if (again) {
        again = false;
        void go();
      } else {
        busy = false;
      }
    }, wait);
  };
  return () => {
    if (busy) {
      again = true;
      return;
    }
    void go();
  };
}
