// Where the person is in the window: the view and each scroll place. The app keeps it, not the
// page (`window_place` / `save_window_place`): closed to the tray, the window and its page are
// destroyed, and the window made again opens where it was left. Scroll places go to the app
// 200 ms after the last scroll event of a burst (no timer runs while nothing moves).

import { api, inTauri } from "./api";
import type { WindowPlace } from "../bindings/WindowPlace";
import type { PaintMarks } from "../bindings/PaintMarks";

/** How long after the last change the place goes to the app. */
export const SAVE_DELAY_MS = 200;

/** The place as this page knows it (the app's, once `loadPlace` answered). */
const place: WindowPlace = { view: null, scroll: {} };
let timer: ReturnType<typeof setTimeout> | undefined;

function send() {
  timer = undefined;
  if (!inTauri()) return;
  api.saveWindowPlace({ view: place.view, scroll: { ...place.scroll } }).catch(() => {});
}

function later() {
  if (timer === undefined) timer = setTimeout(send, SAVE_DELAY_MS);
}

/** When the page's scripts began and the place arrived, in ms from the navigation's start. */
const marks = { script_ms: performance.now(), place_ms: 0 };

declare global {
  interface Window {
    /** The place the app kept, written into the page by the app when it made the window
     * (`window::place_script`), so the first render needs no round trip for it. */
    __SWITCHBOARD_PLACE__?: WindowPlace;
  }
}

/** The place the app wrote into this page when it made the window, once; `null` when there is
 * none or the page was reloaded (the app wrote the place of the window's making, which the
 * person may have left since: a reload asks the app instead). */
export function givenPlace(): WindowPlace | null {
  const given = window.__SWITCHBOARD_PLACE__;
  delete window.__SWITCHBOARD_PLACE__;
  const nav = performance.getEntriesByType?.("navigation")[0] as PerformanceNavigationTiming | undefined;
  if (!given || typeof given !== "object" || nav?.type === "reload") return null;
  place.view = typeof given.view === "string" ? given.view : null;
  place.scroll = {};
  for (const [k, v] of Object.entries(given.scroll ?? {})) {
    if (typeof v === "number" && Number.isFinite(v) && v >= 0) place.scroll[k] = v;
  }
  marks.place_ms = performance.now();
  return place;
}

/** Reads the place the app kept (an empty one outside the app or when it cannot answer). */
export async function loadPlace(): Promise<WindowPlace> {
  if (!inTauri()) return place;
  try {
    const p = await api.windowPlace();
    place.view = p.view;
    place.scroll = { ...p.scroll };
  } catch {
    // An empty place: the window opens on its first view at the top.
  }
  marks.place_ms = performance.now();
  return place;
}

/** The scroll offset kept for `key` (0 when none). */
export function recall(key: string): number {
  return place.scroll[key] ?? 0;
}

/** Keeps scroll offset `px` for `key` (sent to the app shortly). */
export function remember(key: string, px: number) {
  if (place.scroll[key] === px) return;
  place.scroll[key] = px;
  later();
}

/** Keeps `view` as the one shown (sent to the app at once). */
export function rememberView(view: string) {
  place.view = view;
  if (timer !== undefined) clearTimeout(timer);
  send();
}

/** Tells the app the page painted its first frame on `view`, its main area `scroll` px down,
 * with when the page reached each step (the app logs them: `docs/performance.md`). */
export function painted(view: string, scroll: number) {
  const m: PaintMarks = { ...marks, paint_ms: performance.now() };
  if (inTauri()) api.windowPainted(view, scroll, m).catch(() => {});
}

/** Puts `el`'s scroll at `px` as soon as its content is tall enough: at once, or on one of the
 * next frames while the view's data arrives (at most `frames` of them), unless the person
 * scrolled meanwhile. Resolves when it is there, the person scrolled, or the frames ran out. */
export function restoreScroll(el: HTMLElement, px: number, frames = 60): Promise<void> {
  return new Promise((done) => {
    if (px <= 0) return done();
    let left = frames;
    let set = -1;
    const step = () => {
      // The person moved it since: their place wins.
      if (set >= 0 && el.scrollTop !== set) return done();
      el.scrollTop = px;
      set = el.scrollTop;
      if (Math.abs(set - px) < 1 || --left <= 0) return done();
      requestAnimationFrame(step);
    };
    step();
  });
}
